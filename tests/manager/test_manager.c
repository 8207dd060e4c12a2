// SPDX-License-Identifier: BSD-2-Clause
/*
 * The rail manager, end to end: two managers in one process over the loop
 * rail (label unit) or the soft rail (label soft), with fault injection.
 * Every transfer is verified byte for byte.
 */
#include <check.h>
#include <stdatomic.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/loop/loop.h"
#include "src/manager.h"
#include "tests/manager/fixture.h"

#define MiB (1u << 20)

static struct fx F;

static void setup_opts(const struct fx_opts *o)
{
	int ret = fx_init(&F, o);

	ck_assert_msg(ret == 0, "fixture: %s", strerror(-ret));
}

static void teardown(void)
{
	fx_fini(&F);
}

/* Write len bytes at off from a to b, wait, verify; returns status. */
static enum ry_status write_verify(size_t off, size_t len, uint32_t seed)
{
	struct fx_done d = {0};
	int ret;

	fx_fill(F.bufa + off, len, seed);
	ret = ry_write(F.ab, F.ra, off, F.desc_b, (size_t)F.desc_b_len, off,
		       len, fx_cb, &d);
	ck_assert_int_eq(ret, 0);
	ck_assert_msg(fx_until_done(&F, &d, 1, 20000), "write %zu timed out",
		      len);
	ck_assert_uint_eq(d.total, 1);
	if (d.ok)
		ck_assert_msg(!memcmp(F.bufa + off, F.bufb + off, len),
			      "data mismatch, len %zu", len);
	else
		fprintf(stderr, "write of %zu failed: %s\n", len, d.reason);
	return d.ok ? RY_OK : d.last_err;
}

static enum ry_status read_verify(size_t off, size_t len, uint32_t seed)
{
	struct fx_done d = {0};
	int ret;

	fx_fill(F.bufb + off, len, seed);
	memset(F.bufa + off, 0, len);
	ret = ry_read(F.ab, F.ra, off, F.desc_b, (size_t)F.desc_b_len, off, len,
		      fx_cb, &d);
	ck_assert_int_eq(ret, 0);
	ck_assert_msg(fx_until_done(&F, &d, 1, 20000), "read %zu timed out",
		      len);
	if (d.ok)
		ck_assert_msg(!memcmp(F.bufa + off, F.bufb + off, len),
			      "read data mismatch, len %zu", len);
	return d.ok ? RY_OK : d.last_err;
}

/* ---- descriptors ---- */

static uint32_t fnv(const unsigned char *p, size_t n)
{
	uint32_t h = 2166136261u;

	while (n--)
		h = (h ^ *p++) * 16777619u;
	return h;
}

START_TEST(desc_validation)
{
	unsigned char d[RY_DESC_MAX];
	int len, i;

	setup_opts(NULL);
	len = F.desc_b_len;
	ck_assert_int_gt(len, 32);
	ck_assert_int_le(len, RY_DESC_MAX);
	ck_assert_int_eq(ry_desc_check(F.desc_b, (size_t)len), 0);
	ck_assert_int_eq(ry_mr_pack(F.rb, d, 8), -ENOSPC);
	/* every truncation is caught */
	for (i = 0; i < len; i++)
		ck_assert_int_eq(ry_desc_check(F.desc_b, (size_t)i), -EBADMSG);
	/* every single-bit flip is caught */
	for (i = 0; i < len * 8; i++) {
		memcpy(d, F.desc_b, (size_t)len);
		d[i / 8] ^= (unsigned char)(1u << (i % 8));
		ck_assert_int_ne(ry_desc_check(d, (size_t)len), 0);
	}
	memcpy(d, F.desc_b, (size_t)len);
	d[4] = 9; /* a future version */
	ck_assert_int_eq(ry_desc_check(d, (size_t)len), -EPROTONOSUPPORT);
	/* the API refuses them too */
	ck_assert_int_eq(ry_write(F.ab, F.ra, 0, F.desc_b, (size_t)len - 1, 0,
				  10, fx_cb, NULL),
			 -EBADMSG);
	ck_assert_int_eq(ry_write(F.ab, F.ra, 0, F.desc_b, (size_t)len,
				  F.buflen - 5, 10, fx_cb, NULL),
			 -EINVAL);
	ck_assert_int_eq(
	    ry_write(F.ab, F.ra, 0, F.desc_b, (size_t)len, 0, 0, fx_cb, NULL),
	    -EINVAL);
	ck_assert_int_eq(ry_write(F.ab, F.ra, 0, F.desc_b, (size_t)len, 0,
				  (8u << 20) + 1, fx_cb, NULL),
			 -EMSGSIZE);
	ck_assert_int_eq(ry_mr_dereg(NULL), 0);
	teardown();
}
END_TEST

/* A well-formed descriptor with a forged rkey fails at the owner. */
START_TEST(forged_rkey)
{
	unsigned char d[RY_DESC_MAX];
	int len, i;

	setup_opts(NULL);
	len = F.desc_b_len;
	memcpy(d, F.desc_b, (size_t)len);
	for (i = 0; i < (len - 36) / 8; i++)
		d[32 + 8 * i + 4] ^= 0x5a;
	{
		uint32_t h = fnv(d, (size_t)len - 4);

		memcpy(d + len - 4, &h, 4);
	}
	ck_assert_int_eq(ry_desc_check(d, (size_t)len), 0);
	{
		struct fx_done dn = {0};

		fx_fill(F.bufa, 3 * 4096, 7);
		memset(F.bufb, 0, 3 * 4096);
		ck_assert_int_eq(ry_write(F.ab, F.ra, 0, d, (size_t)len, 0,
					  3 * 4096, fx_cb, &dn),
				 0);
		ck_assert(fx_until_done(&F, &dn, 1, 10000));
		ck_assert_uint_eq(dn.err, 1);
		ck_assert_int_eq(dn.last_err, RY_EREMOTE_ACCESS);
		ck_assert_msg(strstr(dn.reason, "remote access"), "%s",
			      dn.reason);
		for (i = 0; i < 3 * 4096; i++)
			ck_assert_int_eq(F.bufb[i], 0);
	}
	/* the connection recovers and the real descriptor works */
	ck_assert_int_eq(write_verify(0, MiB, 8), RY_OK);
	teardown();
}
END_TEST

/* ---- sizes ---- */

START_TEST(all_sizes)
{
	static const size_t fixed[] = {
	    1,		 2,	  3,	   7,	  511,		 512,
	    513,	 4095,	  4096,	   4097,  8191,		 8192,
	    8193,	 65535,	  65536,   65537, 16 * 4096 - 1, 16 * 4096 + 1,
	    17 * 4096,	 1000000, MiB - 1, MiB,	  MiB + 1,	 3 * MiB + 7,
	    8 * MiB - 1, 8 * MiB,
	};
	unsigned i, seed = 1;
	size_t len;

	setup_opts(&(struct fx_opts){.nrails_a = 3});
	for (i = 0; i < sizeof(fixed) / sizeof(fixed[0]); i++) {
		ck_assert_int_eq(write_verify(0, fixed[i], seed++), RY_OK);
		ck_assert_int_eq(read_verify(0, fixed[i], seed++), RY_OK);
	}
	/* every length 1..4200 at an odd offset, and a sweep to 8 MiB */
	for (len = 1; len <= 4200; len += (len < 300 ? 1 : 37))
		ck_assert_int_eq(write_verify(13, len, seed++), RY_OK);
	for (len = 4096; len <= 8 * MiB; len = len * 3 / 2 + 1)
		ck_assert_int_eq(read_verify(len & 4095, len, seed++), RY_OK);
	teardown();
}
END_TEST

/* ---- striping ---- */

/*
 * Weights 1:3 reach the rails as 1:3, exactly.  With 1 MiB ops the split
 * hung on the clock: until a rail has drained for a whole window
 * (RY__OUT_HORIZON_NS) it is backlogged at RY__OUT_MIN, so the first ops
 * went 1:1, and more of them the slower the run (0.682 under ASan on a
 * loaded machine).  Here no rail ever holds RY__OUT_MIN: each 128 KiB op,
 * 8 WRs of 16 KiB, is striped in one pass with both rails idle (the loop
 * rail completes at post, and the previous op is done), so it goes 2:6.
 * Large transfers against the backlog: tests/unit/test_stripe.c.
 */
static bool both_rails_active(void *arg);

START_TEST(unequal_rates)
{
	const unsigned op = 128 << 10, nops = 256;
	struct ry_counters c0, c1, b0, b1;
	unsigned i;
	double share;

	_Static_assert(3 * (128 << 10) / 4 < RY__OUT_MIN,
		       "the weight-3 rail's part of an op must not backlog it");
	setup_opts(&(struct fx_opts){.weight_a = {1, 3}, .frags_per_wr = 4});
	/* both rails up first (the first op connects them): an op striped
	 * while one still connects goes all to the other, as can happen
	 * when a tcp rail's connection takes a round more */
	ck_assert_int_eq(write_verify(0, op, 0), RY_OK);
	ck_assert(fx_until(&F, both_rails_active, NULL, 5000));
	ck_assert_int_eq(ry_rail_counters(F.a, "r0", &b0), 0);
	ck_assert_int_eq(ry_rail_counters(F.a, "r1", &b1), 0);
	for (i = 0; i < nops; i++)
		ck_assert_int_eq(write_verify((i % 64) * op, op, i), RY_OK);
	ck_assert_int_eq(ry_rail_counters(F.a, "r0", &c0), 0);
	ck_assert_int_eq(ry_rail_counters(F.a, "r1", &c1), 0);
	c0.bytes -= b0.bytes;
	c1.bytes -= b1.bytes;
	c0.fragments -= b0.fragments;
	c1.fragments -= b1.fragments;
	share = (double)c1.bytes / (double)(c0.bytes + c1.bytes);
	ck_assert_msg(share > 0.70 && share < 0.80,
		      "rail with weight 3 of 4 carried %.3f", share);
	ck_assert_uint_eq(c0.fragments + c1.fragments, 32 * 256);
	ck_assert_uint_eq(c0.fragments, 32 * 256 / 4);
	ck_assert_uint_eq(c1.fragments, 32 * 256 * 3 / 4);
	teardown();
}
END_TEST

START_TEST(ops_in_flight_limit)
{
	struct fx_done d = {0};
	unsigned i;

	setup_opts(&(struct fx_opts){.ops_in_flight = 3});
	fx_fill(F.bufa, 8 * MiB, 3);
	for (i = 0; i < 40; i++)
		ck_assert_int_eq(ry_write(F.ab, F.ra, (i % 8) * MiB, F.desc_b,
					  (size_t)F.desc_b_len, (i % 8) * MiB,
					  MiB, fx_cb, &d),
				 0);
	ck_assert(fx_until_done(&F, &d, 40, 20000));
	ck_assert_uint_eq(d.ok, 40);
	ck_assert(!memcmp(F.bufa, F.bufb, 8 * MiB));
	teardown();
}
END_TEST

/* ---- failover ---- */

struct stream {
	unsigned slots, posted, done_ok, done_err;
	bool is_read;
	struct fx_done d[8];
	bool busy[8];
	uint32_t seed;
	char reason[192];
};

/* Keep `slots` 1 MiB ops going; verify each as it completes. */
static void stream_pump(struct stream *s)
{
	unsigned i;
	int ret;

	for (i = 0; i < s->slots; i++) {
		size_t off = (size_t)i * MiB;

		if (s->busy[i] && s->d[i].total) {
			s->busy[i] = false;
			if (s->d[i].ok) {
				s->done_ok++;
				ck_assert_msg(
				    !memcmp(F.bufa + off, F.bufb + off, MiB),
				    "data mismatch after failover");
			} else {
				s->done_err++;
				snprintf(s->reason, sizeof(s->reason), "%s",
					 s->d[i].reason);
			}
		}
		if (s->busy[i])
			continue;
		memset(&s->d[i], 0, sizeof(s->d[i]));
		if (s->is_read) {
			fx_fill(F.bufb + off, MiB, ++s->seed);
			ret = ry_read(F.ab, F.ra, off, F.desc_b,
				      (size_t)F.desc_b_len, off, MiB, fx_cb,
				      &s->d[i]);
		} else {
			fx_fill(F.bufa + off, MiB, ++s->seed);
			ret = ry_write(F.ab, F.ra, off, F.desc_b,
				       (size_t)F.desc_b_len, off, MiB, fx_cb,
				       &s->d[i]);
		}
		ck_assert_int_eq(ret, 0);
		s->busy[i] = true;
		s->posted++;
	}
}

static void stream_run(struct stream *s, unsigned ms)
{
	uint64_t end = fx_now_ns() + (uint64_t)ms * 1000000;

	while (fx_now_ns() < end) {
		stream_pump(s);
		fx_progress(&F);
	}
}

static void stream_finish(struct stream *s)
{
	unsigned i;

	for (i = 0; i < s->slots; i++)
		if (s->busy[i])
			ck_assert_msg(fx_until_done(&F, &s->d[i], 1, 20000),
				      "op hung");
	s->slots = 0;
	stream_pump(s); /* account the last ones, post nothing */
	for (i = 0; i < 8; i++)
		if (s->busy[i] && s->d[i].total) {
			s->busy[i] = false;
			if (s->d[i].ok)
				s->done_ok++;
			else
				s->done_err++;
		}
}

/* Stream until a's rail has completed fragments within the last 50 ms. */
static bool rail_busy(struct stream *s, const char *rail, unsigned ms)
{
	uint64_t end = fx_now_ns() + (uint64_t)ms * 1000000;
	struct ry_counters c;
	uint64_t before;

	ck_assert_int_eq(ry_rail_counters(F.a, rail, &c), 0);
	do {
		before = c.fragments;
		stream_run(s, 50);
		ck_assert_int_eq(ry_rail_counters(F.a, rail, &c), 0);
		if (c.fragments > before && fx_active(F.a, rail) == 1)
			return true;
	} while (fx_now_ns() < end);
	return false;
}

/* WRs posted on peer p's connection over rail whose completions p's
 * manager has not taken yet: what a cut of that rail must replay. */
static unsigned out_wrs(struct ry_peer *p, const char *rail)
{
	struct ry_manager *m = p->pr_mgr;
	unsigned n = 0;

	ry__lock(m);
	for (unsigned i = 0; i < m->m_nrails; i++)
		if (!strcmp(m->m_rails[i].lr_rail->name, rail))
			n = p->pr_conn[i]->cn_out_wrs;
	ry__unlock(m);
	return n;
}

static bool slot_done(const struct stream *s)
{
	for (unsigned i = 0; i < s->slots; i++)
		if (s->busy[i] && s->d[i].total)
			return true;
	return false;
}

/*
 * One cut of r1 while a stream runs; true when it replayed, as it must when
 * work was posted on r1 after the cut.  Every run must lose nothing either
 * way.
 */
static bool kill_mid_stream_once(bool is_read, bool local_link)
{
	struct stream s = {.slots = 4, .is_read = is_read};
	struct ry_counters pc;
	struct ry_fault_spec cut = {.drop_all = true};
	bool posted_into_cut;
	unsigned before;

	setup_opts(&(struct fx_opts){.nrails_a = 3});
	stream_run(&s, 300);
	/*
	 * The point is a cut while r1 carries fragments.  Nothing waits for
	 * the rails to connect, so on a loaded machine r1 may not be carrying
	 * yet after 300 ms (seen under stress-ng on main's build as well as
	 * with ACTIVE-after-our-own-probe: replayed_fragments 0).  So cut
	 * only once r1 has completed fragments in the last slice.
	 */
	ck_assert_msg(rail_busy(&s, "r1", 5000), "r1 never carried fragments");
	/* an op done and not yet replaced: the pump right after the cut
	 * posts a new one, striped over r1 too while r1 still looks up */
	for (uint64_t end = fx_now_ns() + 5000000000ull; !slot_done(&s);) {
		ck_assert_msg(fx_now_ns() < end, "no op completed");
		fx_progress(&F);
	}
	before = out_wrs(F.ab, "r1");
	if (local_link)
		ck_assert_int_eq(ry_rail_link(F.a, "r1", false), 0);
	else
		ck_assert_int_eq(ry_rail_fault(F.a, "r1", &cut), 0);
	stream_pump(&s);
	posted_into_cut = out_wrs(F.ab, "r1") > before;
	/* traffic goes on after the cut: 700 ms, and 8 more ops done however
	 * slow the machine is (6 in 700 ms under ASan at load 15) */
	before = s.done_ok;
	for (uint64_t end = fx_now_ns() + 30000000000ull;;) {
		stream_run(&s, 700);
		if (s.done_ok >= before + 8)
			break;
		ck_assert_msg(fx_now_ns() < end,
			      "only %u ops done in 30 s after the cut",
			      s.done_ok - before);
	}
	stream_finish(&s);
	ck_assert_msg(s.done_err == 0, "%u failed: %s", s.done_err, s.reason);
	ck_assert_int_eq(ry_peer_counters(F.ab, &pc), 0);
	ck_assert_uint_ge(pc.failovers, 1);
	ck_assert_uint_ge(pc.detect_count, 1);
	if (posted_into_cut)
		ck_assert_uint_gt(pc.replayed_fragments, 0);
	if (pc.replayed_fragments && fx_is_loop())
		ck_assert_uint_ge(pc.fences, 1);
	teardown();
	return pc.replayed_fragments > 0;
}

/*
 * The point is replay, so work must be on r1 unfinished when it is cut; a
 * cut that found nothing there proves only that nothing was lost: cut
 * again, up to five times.  The loop rail completes a WR as it is posted,
 * so a local link-down finds unfinished only what is posted between the
 * cut and its handling, which depends on where the stripe stands (under
 * ASan at load 15 five cuts in a row found nothing).  There replay is
 * not required: the soft build of this suite (work really in flight) and
 * the unplugged-cable cases (posts pend into the cut) require it.
 */
static void kill_mid_stream(bool is_read, bool local_link)
{
	int i;

	if (fx_is_loop() && local_link) {
		kill_mid_stream_once(is_read, local_link);
		return;
	}
	for (i = 0; i < 5 && !kill_mid_stream_once(is_read, local_link); i++)
		fprintf(stderr, "%s: the cut found nothing on r1, again\n",
			is_read ? "kill_mid_read" : "kill_mid_write");
	ck_assert_msg(i < 5, "five cuts of r1 found nothing to replay");
}

START_TEST(kill_rail_mid_write)
{
	kill_mid_stream(false, true);
}
END_TEST

START_TEST(kill_rail_mid_read)
{
	kill_mid_stream(true, true);
}
END_TEST

START_TEST(unplug_rail_mid_write)
{
	kill_mid_stream(false, false);
}
END_TEST

START_TEST(two_rails_killed)
{
	struct stream s = {.slots = 4};
	struct ry_fault_spec cut = {.drop_all = true};

	setup_opts(&(struct fx_opts){.nrails_a = 4});
	stream_run(&s, 200);
	ck_assert_int_eq(ry_rail_link(F.a, "r0", false), 0);
	stream_run(&s, 200);
	ck_assert_int_eq(ry_rail_fault(F.b, "r2", &cut), 0);
	stream_run(&s, 800);
	stream_finish(&s);
	ck_assert_msg(s.done_err == 0, "%u failed: %s", s.done_err, s.reason);
	ck_assert_uint_eq(fx_active(F.a, "r0"), 0);
	ck_assert_uint_eq(fx_active(F.a, "r2"), 0);
	ck_assert_uint_eq(fx_active(F.a, "r1"), 1);
	teardown();
}
END_TEST

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/*
 * A down event's own times against when the fault was injected: a link
 * event is its own start, silence starts at the last sign of life, which
 * with a stream running is right before the cut.
 */
static void down_times(bool link)
{
	struct stream s = {.slots = 4};
	struct ry_fault_spec cut = {.drop_all = true};
	uint64_t t0, t1;
	const struct fx_events *e;

	setup_opts(&(struct fx_opts){.nrails_a = 2});
	stream_run(&s, 200);
	/* cut an ACTIVE r0: a cut while it still connects is an attempt that
	 * failed, with no event (seen under load: n_conn_down 0) */
	ck_assert_msg(rail_busy(&s, "r0", 5000), "r0 never carried fragments");
	t0 = mono_ns();
	if (link)
		ck_assert_int_eq(ry_rail_link(F.a, "r0", false), 0);
	else
		ck_assert_int_eq(ry_rail_fault(F.a, "r0", &cut), 0);
	t1 = mono_ns();
	stream_run(&s, 1000);
	stream_finish(&s);
	e = &F.ev_a;
	ck_assert_msg(s.done_err == 0, "%u failed: %s", s.done_err, s.reason);
	ck_assert_uint_ge(e->n_conn_down, 1);
	ck_assert_uint_eq(e->first_detect_ns, e->first_conn_down_ns);
	ck_assert_uint_le(e->first_fail_ns, e->first_detect_ns);
	/* the failure began at the injection, give or take a loaded machine */
	ck_assert_msg(e->first_fail_ns + 100000000ull >= t0 &&
			  e->first_fail_ns <= t1 + 100000000ull,
		      "fail_ns %llu outside the injection %llu..%llu",
		      (unsigned long long)e->first_fail_ns,
		      (unsigned long long)t0, (unsigned long long)t1);
	/* and the detection time is what the outside clock saw */
	ck_assert_uint_le(e->first_detect_ns - e->first_fail_ns,
			  e->first_detect_ns - t0 + 100000000ull);
	if (link)
		ck_assert_uint_ge(e->first_fail_ns, t0);
	teardown();
}

/*
 * Both processes stop for three timeouts with a stream in flight (a
 * starved machine, an application busy elsewhere) and carry on: nothing
 * was cut, so nothing may be declared down: the first progress after the
 * stall must read what arrived before it judges silence.
 */
START_TEST(own_stall_is_not_silence)
{
	struct stream s = {.slots = 4};

	setup_opts(&(struct fx_opts){.nrails_a = 2});
	stream_run(&s, 200);
	ck_assert_msg(rail_busy(&s, "r0", 5000), "r0 never carried fragments");
	ck_assert_msg(rail_busy(&s, "r1", 5000), "r1 never carried fragments");
	/* the stall under test is one: the last rounds before it were not
	 * themselves back from another (a starved machine).  Two in a row
	 * are judged, so that an application that calls ry_progress()
	 * rarely still finds a dead peer (progress.c). */
	do
		fx_progress(&F);
	while (F.a->m_hb_deferred || F.b->m_hb_deferred);
	usleep(300000); /* timeout_ms is 100 */
	stream_run(&s, 500);
	stream_finish(&s);
	ck_assert_msg(s.done_err == 0, "%u failed: %s", s.done_err, s.reason);
	ck_assert_msg(F.ev_a.n_conn_down == 0 && F.ev_b.n_conn_down == 0,
		      "a stall of our own declared down: a %u, b %u (%s%s)",
		      F.ev_a.n_conn_down, F.ev_b.n_conn_down,
		      F.ev_a.last_reason, F.ev_b.last_reason);
	teardown();
}
END_TEST

START_TEST(down_times_link)
{
	down_times(true);
}
END_TEST

START_TEST(down_times_silent)
{
	down_times(false);
}
END_TEST

struct active_wait {
	const char *rail;
	unsigned n;
};

static bool all_active(void *arg)
{
	unsigned i;

	(void)arg;
	for (i = 0; i < F.o.nrails_a; i++) {
		char name[16];

		snprintf(name, sizeof(name), "r%u", i);
		if (fx_active(F.a, name) != 1)
			return false;
	}
	return true;
}

START_TEST(all_rails_killed_then_restored)
{
	struct fx_done d = {0};
	uint64_t t0;
	double ms;

	setup_opts(&(struct fx_opts){.op_timeout_ms = 600});
	ck_assert_int_eq(write_verify(0, MiB, 1), RY_OK);
	ck_assert_int_eq(ry_rail_link(F.a, "r0", false), 0);
	ck_assert_int_eq(ry_rail_link(F.a, "r1", false), 0);
	fx_fill(F.bufa, MiB, 2);
	t0 = fx_now_ns();
	ck_assert_int_eq(ry_write(F.ab, F.ra, 0, F.desc_b, (size_t)F.desc_b_len,
				  0, MiB, fx_cb, &d),
			 0);
	ck_assert_int_eq(ry_read(F.ab, F.ra, MiB, F.desc_b,
				 (size_t)F.desc_b_len, MiB, MiB, fx_cb, &d),
			 0);
	ck_assert(fx_until_done(&F, &d, 2, 5000));
	ms = (double)(fx_now_ns() - t0) / 1e6;
	ck_assert_uint_eq(d.err, 2);
	ck_assert_int_eq(d.last_err, RY_ETIMEDOUT);
	ck_assert_msg(ms >= 550 && ms < 2000, "timed out after %.0f ms", ms);
	ck_assert_msg(strstr(d.reason, "peer 127.0.0.1") &&
			  strstr(d.reason, "r0") && strstr(d.reason, "r1") &&
			  strstr(d.reason, "link-down"),
		      "reason: %s", d.reason);
	/* restore: new operations succeed */
	ck_assert_int_eq(ry_rail_link(F.a, "r0", true), 0);
	ck_assert_int_eq(ry_rail_link(F.a, "r1", true), 0);
	ck_assert(fx_until(&F, all_active, NULL, 5000));
	ck_assert_int_eq(write_verify(0, MiB, 3), RY_OK);
	ck_assert_int_eq(read_verify(MiB, MiB, 4), RY_OK);
	ck_assert_uint_ge(F.ev_a.n_rail_down, 2);
	ck_assert_uint_ge(F.ev_a.n_rail_up, 2);
	teardown();
}
END_TEST

/*
 * A standby rail (r2) carries nothing while a primary is up; with both
 * primaries pulled the operations go on over it alone, none failed; with
 * them back it idles again.
 */
START_TEST(standby_rail)
{
	struct ry_counters c, d;
	int i;

	setup_opts(&(struct fx_opts){
	    .nrails_a = 3, .nrails_b = 3, .standby = {false, false, true}});
	/* the first operation connects the rails; whichever came up first
	 * took it (a standby too, while no primary was up yet) */
	ck_assert_int_eq(write_verify(0, MiB, 1), RY_OK);
	ck_assert(fx_until(&F, all_active, NULL, 5000));
	ck_assert_int_eq(ry_rail_counters(F.a, "r2", &d), 0);
	for (i = 0; i < 8; i++)
		ck_assert_int_eq(write_verify(0, MiB, 10 + i), RY_OK);
	ck_assert_int_eq(ry_rail_counters(F.a, "r2", &c), 0);
	ck_assert_uint_eq(c.bytes, d.bytes);
	ck_assert_int_eq(ry_rail_link(F.a, "r0", false), 0);
	ck_assert_int_eq(ry_rail_link(F.a, "r1", false), 0);
	for (i = 0; i < 8; i++) {
		ck_assert_int_eq(write_verify(0, MiB, 20 + i), RY_OK);
		ck_assert_int_eq(read_verify(0, MiB, 20 + i), RY_OK);
	}
	ck_assert_int_eq(ry_rail_counters(F.a, "r2", &c), 0);
	ck_assert_uint_ge(c.bytes, d.bytes + 16 * MiB);
	ck_assert_int_eq(ry_rail_link(F.a, "r0", true), 0);
	ck_assert_int_eq(ry_rail_link(F.a, "r1", true), 0);
	ck_assert(fx_until(&F, all_active, NULL, 5000));
	for (i = 0; i < 8; i++)
		ck_assert_int_eq(write_verify(0, MiB, 30 + i), RY_OK);
	ck_assert_int_eq(ry_rail_counters(F.a, "r2", &d), 0);
	ck_assert_uint_eq(d.bytes, c.bytes);
	teardown();
}
END_TEST

static bool a_r1_active(void *arg)
{
	(void)arg;
	return fx_active(F.a, "r1") == 1;
}

static bool a_r1_down(void *arg)
{
	return !a_r1_active(arg);
}

/* a's connection to b on its rail named rail */
static struct ry__conn *a_conn(const char *rail)
{
	for (unsigned i = 0; i < F.a->m_nrails; i++)
		if (!strcmp(F.a->m_rails[i].lr_cfg.name, rail))
			return F.ab->pr_conn[i];
	return NULL;
}

/*
 * The far end's link is down: it says so (-ENETDOWN) and connects itself
 * when the link is back, so this end does not ask every reconnect_min_ms
 * meanwhile (10,000 clients would flood a server whose cable is out),
 * and the rail is still back as soon as the far link is.
 */
START_TEST(far_link_down_waits_for_peer)
{
	struct ry__conn *c;
	uint32_t n0;

	setup_opts(&(struct fx_opts){.reconnect_min_ms = 20,
				     .reconnect_max_ms = 5000});
	ck_assert_int_eq(write_verify(0, MiB, 1), RY_OK);
	c = a_conn("r1");
	ck_assert_ptr_nonnull(c);
	ck_assert_int_eq(ry_rail_link(F.b, "r1", false), 0);
	ck_assert(fx_until(&F, a_r1_down, NULL, 3000));
	n0 = c->cn_attempt;
	/* at 20 ms, about 75 attempts in 1.5 s without the rule */
	fx_sleep_progress(&F, 1500);
	ck_assert_msg(c->cn_attempt - n0 <= 2, "%u attempts while down",
		      c->cn_attempt - n0);
	ck_assert_str_eq(c->cn_reason, "the peer's link is down");
	/* b connects when its link is back, long before a asks again */
	ck_assert_int_eq(ry_rail_link(F.b, "r1", true), 0);
	ck_assert(fx_until(&F, a_r1_active, NULL, 2400));
	ck_assert_int_eq(write_verify(0, MiB, 2), RY_OK);
	teardown();
}
END_TEST

static bool a_r1_refused_down(void *arg)
{
	const struct ry__conn *c = arg;

	return c->cn_state == CONN_BACKOFF &&
	       !strcmp(c->cn_reason, "the peer's link is down");
}

/*
 * The same when the far link is down before the rail was ever connected:
 * the far end had no connection of its own there to start again at its
 * link-up, so the refusal itself must leave it one to start, or this end
 * waits about reconnect_max_ms (here 2.5 to 7.5 s) for a rail whose
 * cable has long been back.
 */
START_TEST(far_link_down_first_connect)
{
	struct ry__conn *c;

	setup_opts(&(struct fx_opts){.reconnect_min_ms = 20,
				     .reconnect_max_ms = 5000});
	ck_assert_int_eq(ry_rail_link(F.b, "r1", false), 0);
	c = a_conn("r1");
	ck_assert_ptr_nonnull(c);
	ck_assert_int_eq(write_verify(0, MiB, 1), RY_OK);
	ck_assert(fx_until(&F, a_r1_refused_down, c, 3000));
	ck_assert_int_eq(ry_rail_link(F.b, "r1", true), 0);
	ck_assert(fx_until(&F, a_r1_active, NULL, 2400));
	ck_assert_int_eq(write_verify(0, MiB, 2), RY_OK);
	teardown();
}
END_TEST

/* ---- records b made from a's HELLO, after a has gone ---- */

static struct ry_peer *g_from; /* the sender b's callback saw */
static bool g_hold;	       /* ... and ry_peer_hold()s */
static unsigned g_got;

static void recv_from(struct ry_peer *from, const struct ry_message *m,
		      void *arg)
{
	(void)m;
	(void)arg;
	if (!g_got++ && g_hold)
		ry_peer_hold(from);
	g_from = from;
}

/* b's records that a's HELLO named "a": 0 or 1 */
static unsigned b_knows_a(void)
{
	unsigned n = 0;

	ry__lock(F.b);
	for (struct ry_peer *p = F.b->m_peers; p; p = p->pr_next)
		n += !strcmp(p->pr_node_name, "a");
	ry__unlock(F.b);
	return n;
}

static bool b_forgot_a(void *arg)
{
	(void)arg;
	return b_knows_a() == 0;
}

/* b's record of a has no session and no connection beyond BACKOFF: all
 * that could still keep it is the application's hold */
static bool b_done_with_a(void *arg)
{
	bool done = false;

	(void)arg;
	ry__lock(F.b);
	for (struct ry_peer *p = F.b->m_peers; p; p = p->pr_next) {
		if (strcmp(p->pr_node_name, "a"))
			continue;
		done = !p->pr_nctl;
		for (unsigned i = 0; done && i < F.b->m_nrails; i++)
			done = p->pr_conn[i]->cn_state == CONN_IDLE ||
			       p->pr_conn[i]->cn_state == CONN_BACKOFF ||
			       p->pr_conn[i]->cn_state == CONN_UNPAIRED;
	}
	ry__unlock(F.b);
	return done;
}

/* a sends b a message and goes away for good */
static void a_says_hello_and_dies(bool hold)
{
	struct fx_done d = {0};

	g_from = NULL;
	g_got = 0;
	g_hold = hold;
	ry_set_recv_cb(F.b, recv_from, NULL);
	ck_assert_int_eq(ry_send(F.ab, "hi", 2, fx_cb, &d), 0);
	ck_assert(fx_until_done(&F, &d, 1, 10000));
	ck_assert_int_eq(d.ok, 1);
	for (unsigned i = 0; i < 2000 && !g_got; i++)
		fx_sleep_progress(&F, 5);
	ck_assert_uint_eq(g_got, 1);
	ck_assert_uint_eq(b_knows_a(), 1);
	ry_manager_destroy(F.a);
	F.a = NULL;
	F.ab = NULL;
	F.ra = NULL;
}

/*
 * A server hears from thousands of clients that come and go: the record
 * of one that only sent messages (made from its HELLO, never named by
 * the application) is freed once the client has gone, as the records of
 * clients that never sent one are (test_admission: hello_records_freed).
 */
START_TEST(sender_forgotten_after_leaving)
{
	setup_opts(NULL);
	a_says_hello_and_dies(false);
	ck_assert_msg(fx_until(&F, b_forgot_a, NULL, 10000),
		      "b still holds the record of a, gone 10 s ago");
	teardown();
}
END_TEST

/* ... unless the application holds it (ry_peer_hold in the callback):
 * then it stays, usable, until ry_peer_release(). */
START_TEST(held_sender_kept_until_released)
{
	struct ry_peer_info pi;

	setup_opts(NULL);
	a_says_hello_and_dies(true);
	ck_assert(fx_until(&F, b_done_with_a, NULL, 10000));
	/* three reaper periods (100 ms) with nothing else keeping it */
	fx_sleep_progress(&F, 400);
	ck_assert_uint_eq(b_knows_a(), 1);
	ck_assert_int_eq(ry_peer_info(g_from, &pi), 0);
	ck_assert_uint_ne(pi.incarnation, 0);
	ry_peer_release(g_from);
	ck_assert_msg(fx_until(&F, b_forgot_a, NULL, 10000),
		      "b still holds the record of a, released 10 s ago");
	teardown();
}
END_TEST

static bool health_full(void *arg)
{
	struct ry_rail_info ri;

	(void)arg;
	return !ry_rail_info(F.a, "r1", &ri) && ri.health_min == 1000 &&
	       ri.peers_active == 1;
}

START_TEST(flapping_rail)
{
	struct stream s = {.slots = 4};
	struct ry_rail_info ri;
	uint64_t end, next;
	bool up = true;
	struct ry_counters c1;

	/*
	 * Down for 100 ms, up until r1 is ACTIVE again plus 100 ms, for 10 s
	 * and until r1 has failed over 5 times and 50 ops are done.  A fixed
	 * period would count failovers by luck: flap damping stretches the
	 * reconnect backoff, and on a loaded machine the rail came back inside
	 * few up-windows (3 failovers in 10 s under ASan with both cores busy).
	 */
	setup_opts(&(struct fx_opts){
	    .nrails_a = 2, .reconnect_min_ms = 20, .reconnect_max_ms = 1000});
	end = fx_now_ns() + 10000000000ull;
	next = fx_now_ns() + 100000000ull;
	for (uint64_t cap = end + 30000000000ull;;) {
		uint64_t now;

		stream_pump(&s);
		fx_progress(&F);
		now = fx_now_ns();
		ck_assert_int_eq(ry_rail_counters(F.a, "r1", &c1), 0);
		if (now >= end && c1.failovers >= 5 && s.done_ok > 50)
			break;
		ck_assert_msg(now < cap,
			      "r1 failed over %llu times, %u ops done",
			      (unsigned long long)c1.failovers, s.done_ok);
		if (up && !fx_active(F.a, "r1")) {
			next = now + 100000000ull; /* not back yet */
		} else if (now >= next) {
			up = !up;
			ck_assert_int_eq(ry_rail_link(F.a, "r1", up), 0);
			next = now + 100000000ull;
		}
	}
	ck_assert_int_eq(ry_rail_link(F.a, "r1", true), 0);
	stream_finish(&s);
	ck_assert_msg(s.done_err == 0, "%u failed: %s", s.done_err, s.reason);
	ck_assert_uint_gt(s.done_ok, 50);
	ck_assert_int_eq(ry_rail_counters(F.a, "r1", &c1), 0);
	ck_assert_uint_ge(c1.failovers, 5);
	ck_assert_int_eq(ry_rail_info(F.a, "r1", &ri), 0);
	ck_assert_msg(ri.health_min < 1000, "health %u", ri.health_min);
	/* a rail that stays up earns its share back */
	ck_assert(fx_until(&F, health_full, NULL, 6000));
	teardown();
}
END_TEST

/* ---- detection times ---- */

static bool a_conn_down(void *arg)
{
	return F.ev_a.n_conn_down > 0;
}

START_TEST(detect_local_link_down)
{
	uint64_t t0;
	double ms;

	setup_opts(NULL); /* failover defaults */
	ck_assert_int_eq(write_verify(0, 4096, 1), RY_OK);
	fx_sleep_progress(&F, 100);
	t0 = fx_now_ns();
	ck_assert_int_eq(ry_rail_link(F.a, "r1", false), 0);
	ck_assert(fx_until(&F, a_conn_down, NULL, 2000));
	ms = (double)(fx_now_ns() - t0) / 1e6;
	fprintf(stderr, "local link down detected after %.1f ms\n", ms);
	ck_assert_msg(ms < 50, "local link down detected after %.1f ms", ms);
	teardown();
}
END_TEST

START_TEST(detect_far_unplug_idle)
{
	struct ry_fault_spec cut = {.drop_all = true};
	uint64_t t0;
	double ms;

	setup_opts(NULL); /* failover defaults */
	ck_assert_int_eq(write_verify(0, 4096, 1), RY_OK);
	/* r0 ACTIVE before the cut: one still probing fails without an
	 * event (a loaded machine, or a tcp rail's round more to connect) */
	ck_assert(fx_until(&F, all_active, NULL, 5000));
	fx_sleep_progress(&F, 150);
	t0 = fx_now_ns();
	ck_assert_int_eq(ry_rail_fault(F.b, "r0", &cut), 0);
	ck_assert(fx_until(&F, a_conn_down, NULL, 3000));
	ms = (double)(fx_now_ns() - t0) / 1e6;
	fprintf(stderr, "silent far-side unplug detected after %.1f ms\n", ms);
	ck_assert_msg(ms < 300, "silent far-side unplug detected after %.1f ms",
		      ms);
	teardown();
}
END_TEST

/*
 * A connection idle for longer than a second heartbeats every
 * idle_heartbeat_ms, from the lower incarnation of its two ends only: what
 * lets one server hold 10,000 idle client nodes (src/heartbeat.c).  Both
 * ends are otherwise at heartbeat_ms = 10, and the old rule was once a
 * second, so either shows as too many heartbeats in the window; a starved
 * machine can only make fewer.
 */
static uint64_t rail_heartbeats(struct ry_manager *m, const char *rail)
{
	struct ry_counters c;

	ck_assert_int_eq(ry_rail_counters(m, rail, &c), 0);
	return c.heartbeats;
}

START_TEST(idle_heartbeat_one_end)
{
	struct ry_manager *lo, *hi;
	uint64_t lo0, hi0, n, t0;
	double s;

	setup_opts(
	    &(struct fx_opts){.heartbeat_ms = 10, .idle_heartbeat_ms = 2000});
	ck_assert_int_eq(write_verify(0, 4096, 1), RY_OK);
	/* past the second in which used connections keep heartbeat_ms */
	fx_sleep_progress(&F, 1200);
	lo = F.a->m_node < F.b->m_node ? F.a : F.b;
	hi = lo == F.a ? F.b : F.a;
	lo0 = rail_heartbeats(lo, "r0");
	hi0 = rail_heartbeats(hi, "r0");
	t0 = fx_now_ns();
	fx_sleep_progress(&F, 6000);
	s = (double)(fx_now_ns() - t0) / 1e9;
	n = rail_heartbeats(lo, "r0") - lo0;
	/* one connection on r0: a heartbeat at most every 2 s, and some */
	ck_assert_msg(n >= 1 && n <= (uint64_t)(s / 2.0) + 1,
		      "%llu idle heartbeats in %.1f s", (unsigned long long)n,
		      s);
	ck_assert_uint_eq(rail_heartbeats(hi, "r0"), hi0);
	ck_assert_uint_eq(F.ev_a.n_conn_down + F.ev_b.n_conn_down, 0);
	teardown();
}
END_TEST

/* ---- fencing ---- */

static void fence_case(bool fence)
{
	struct ry_fault_spec cut = {.drop_all = true};
	struct fx_done d = {0};
	struct ry_rail *r1 = NULL;
	int landed;
	size_t i;

	/* b is slow to notice on its own, so only the fence protects it */
	setup_opts(&(struct fx_opts){
	    .fence_off = !fence, .heartbeat_ms = 2000, .timeout_ms = 4000});
	ck_assert_int_eq(write_verify(0, MiB, 1), RY_OK);
	r1 = ry__mgr_rail(F.a, "r1");
	ck_assert_ptr_nonnull(r1);
	ry_loop_hold(r1, true);
	ck_assert_int_eq(ry_rail_fault(F.a, "r1", &cut), 0);
	fx_fill(F.bufa, MiB, 2);
	ck_assert_int_eq(ry_write(F.ab, F.ra, 0, F.desc_b, (size_t)F.desc_b_len,
				  0, MiB, fx_cb, &d),
			 0);
	ck_assert(fx_until_done(&F, &d, 1, 10000));
	ck_assert_uint_eq(d.ok, 1);
	ck_assert(!memcmp(F.bufa, F.bufb, MiB));
	/* the application reuses the memory; then the stale packets arrive */
	memset(F.bufb, 0xee, MiB);
	landed = ry_loop_release_held(r1);
	if (fence) {
		ck_assert_int_eq(landed, 0);
		for (i = 0; i < MiB; i++)
			ck_assert_int_eq(F.bufb[i], 0xee);
	} else {
		/* the control: without the fence a stale write does land */
		ck_assert_int_gt(landed, 0);
	}
	teardown();
}

START_TEST(fence_stale_packet_dropped)
{
	fence_case(true);
}
END_TEST

START_TEST(no_fence_stale_packet_lands)
{
	fence_case(false);
}
END_TEST

/*
 * The same over a rail that delays instead of holding (the soft rail):
 * packets on r1 take 1.5 s, so the sender gives r1 up and replays on r0;
 * the delayed originals reach b after the op completed.  (At 300 ms the
 * op completed after them under ASan at load 10: the control case then
 * saw nothing.  b's old QP still takes them: its side fails only by
 * heartbeat silence, 4 s, or a reconnect, 3 s.)
 */
static void fence_delayed_case(bool fence)
{
	struct ry_fault_spec slow = {.delay_us = 1500000};
	struct fx_done d = {0};
	const size_t len = 256 * 1024;
	bool all_ee = true;
	size_t i;

	/* no reconnect inside the window either: it too would replace b's
	 * QP and hide the stale packets */
	setup_opts(&(struct fx_opts){.fence_off = !fence,
				     .heartbeat_ms = 2000,
				     .timeout_ms = 4000,
				     .reconnect_min_ms = 3000,
				     .reconnect_max_ms = 3000});
	ck_assert_int_eq(write_verify(0, len, 1), RY_OK);
	ck_assert_int_eq(ry_rail_fault(F.a, "r1", &slow), 0);
	fx_fill(F.bufa, len, 2);
	ck_assert_int_eq(ry_write(F.ab, F.ra, 0, F.desc_b, (size_t)F.desc_b_len,
				  0, len, fx_cb, &d),
			 0);
	ck_assert(fx_until_done(&F, &d, 1, 10000));
	ck_assert_uint_eq(d.ok, 1);
	ck_assert(!memcmp(F.bufa, F.bufb, len));
	memset(F.bufb, 0xee, len);
	fx_sleep_progress(&F, 2500);
	for (i = 0; i < len; i++)
		if (F.bufb[i] != 0xee)
			all_ee = false;
	if (fence)
		ck_assert_msg(all_ee, "a stale packet landed after the fence");
	else
		ck_assert_msg(!all_ee, "the control case saw no stale packet");
	teardown();
}

START_TEST(fence_delayed_packet_dropped)
{
	fence_delayed_case(true);
}
END_TEST

START_TEST(no_fence_delayed_packet_lands)
{
	fence_delayed_case(false);
}
END_TEST

/* ---- messages ---- */

struct rx {
	unsigned n, dup, notify;
	unsigned char seen[4096];
	uint64_t last_notify;
	bool notify_data_ok;
};

static struct rx RX;

static void on_recv(struct ry_peer *from, const struct ry_message *m, void *arg)
{
	struct rx *r = arg;
	unsigned id;

	if (m->type == RY_MSG_NOTIFY) {
		r->notify++;
		r->last_notify = m->notify;
		/* all bytes have landed before the notification */
		r->notify_data_ok = !memcmp(F.bufa, F.bufb, MiB);
		return;
	}
	ck_assert_uint_ge(m->len, sizeof(id));
	memcpy(&id, m->data, sizeof(id));
	ck_assert_uint_lt(id, 4096);
	if (r->seen[id]++)
		r->dup++;
	r->n++;
}

static bool rx_all(void *arg)
{
	return RX.n >= *(unsigned *)arg;
}

START_TEST(messages_exactly_once_across_failover)
{
	struct fx_done d = {0};
	unsigned char buf[600];
	unsigned i, sent = 0, total = 3000;
	int ret;

	memset(&RX, 0, sizeof(RX));
	setup_opts(&(struct fx_opts){.nrails_a = 3});
	ry_set_recv_cb(F.b, on_recv, &RX);
	while (sent < total) {
		for (i = 0; i < 64 && sent < total; i++) {
			memcpy(buf, &sent, sizeof(sent));
			memset(buf + 4, (int)sent, sizeof(buf) - 4);
			ret = ry_send(F.ab, buf, 4 + sent % 590, fx_cb, &d);
			if (ret == -EAGAIN)
				break;
			ck_assert_int_eq(ret, 0);
			sent++;
		}
		fx_progress(&F);
		if (sent == 1000)
			ck_assert_int_eq(ry_rail_link(F.a, "r2", false), 0);
		if (sent == 2000) {
			struct ry_fault_spec cut = {.drop_all = true};

			ck_assert_int_eq(ry_rail_fault(F.b, "r0", &cut), 0);
		}
	}
	ck_assert(fx_until_done(&F, &d, total, 20000));
	if (!fx_until(&F, rx_all, &total, 5000)) {
		for (i = 0; i < total; i++)
			if (RX.seen[i] != 1)
				fprintf(stderr, "msg %u seen %u times\n", i,
					RX.seen[i]);
		ck_abort_msg("received %u of %u", RX.n, total);
	}
	fx_sleep_progress(&F, 200);
	ck_assert_uint_eq(d.ok, total);
	ck_assert_uint_eq(RX.n, total);
	ck_assert_uint_eq(RX.dup, 0);
	for (i = 0; i < total; i++)
		ck_assert_uint_eq(RX.seen[i], 1);
	teardown();
}
END_TEST

/* b's connection-down events, every reason kept: under load a heartbeat
 * miss may follow the refusal, so the last reason alone proves nothing */
static struct {
	unsigned down, window;
} BEV;

static void b_event(const struct ry_event *ev, void *arg)
{
	(void)arg;
	if (ev->type != RY_EV_CONN_DOWN)
		return;
	BEV.down++;
	if (strstr(ev->reason, "outside the receive window"))
		BEV.window++;
}

static bool b_refused(void *arg)
{
	return BEV.window > *(unsigned *)arg;
}

static bool both_rails_active(void *arg)
{
	(void)arg;
	return fx_active(F.a, "r0") && fx_active(F.a, "r1") &&
	       fx_active(F.b, "r0") && fx_active(F.b, "r1");
}

/*
 * A post_send that fails (a provider out of send queue memory, say) fails
 * its connection as a broken link would: the op completes RY_OK on the
 * other rail, every byte in place, the failure is counted, and the rail
 * comes back.  In the _ctx runs (two progress contexts) the post fails
 * under the context's lock alone and the cold round fails the connection
 * (src/progress.c, unposted); the loop rail only: the soft rail has no
 * way to make a post fail.
 */
START_TEST(post_send_fails)
{
	struct ry_counters c0;

	if (!fx_is_loop())
		return;
	setup_opts(NULL);
	ck_assert_int_eq(write_verify(0, 1 << 20, 1), RY_OK);
	ck_assert(fx_until(&F, both_rails_active, NULL, 20000));
	ck_assert_int_eq(ry_rail_counters(F.a, "r0", &c0), 0);
	ck_assert_uint_eq(c0.failovers, 0);
	ry_loop_fail_posts(F.a->m_rails[0].lr_rail, 1);
	ck_assert_int_eq(write_verify(0, 1 << 20, 2), RY_OK);
	ck_assert_int_eq(ry_rail_counters(F.a, "r0", &c0), 0);
	ck_assert_uint_eq(c0.failovers, 1);
	ck_assert(fx_until(&F, both_rails_active, NULL, 20000));
	ck_assert_int_eq(write_verify(0, 1 << 20, 3), RY_OK);
	teardown();
}
END_TEST

/*
 * A message whose sequence lies far past the receive window (a peer that
 * breaks the protocol, or a hostile one) is dropped and fails the
 * connection it came on, at once; it used to slide the window one step at
 * a time up to the sequence (2^62: forever).  Well-formed messages after
 * it are still delivered exactly once.
 */
START_TEST(message_far_sequence)
{
	static const uint64_t far[] = {1ull << 33, 1ull << 62,
				       (1ull << 63) + 12345};
	struct fx_done d = {0}, d2 = {0};
	uint64_t seq, low, t0;
	unsigned i, want, refused;

	memset(&RX, 0, sizeof(RX));
	memset(&BEV, 0, sizeof(BEV));
	/* the forged message fails every connection it reaches (soft: b may
	 * fail its QP before the ACK leaves, so a replays it on the next
	 * rail) until its operation times out: keep that short */
	setup_opts(&(struct fx_opts){.op_timeout_ms = 2000});
	ry_set_recv_cb(F.b, on_recv, &RX);
	ry_set_event_cb(F.b, b_event, NULL);
	i = 0;
	ck_assert_int_eq(ry_send(F.ab, &i, sizeof(i), fx_cb, &d), 0);
	want = 1;
	ck_assert(fx_until(&F, rx_all, &want, 10000));
	ck_assert(fx_until_done(&F, &d, 1, 10000));
	seq = F.ab->pr_tx_seq;
	low = F.ab->pr_tx_low;
	for (i = 0; i < sizeof(far) / sizeof(far[0]); i++) {
		unsigned id = 100 + i;

		/* the previous round failed connections: let them return so
		 * that this message reaches b */
		ck_assert(fx_until(&F, both_rails_active, NULL, 20000));
		refused = BEV.window;
		F.ab->pr_tx_seq = far[i] - 1;
		F.ab->pr_tx_low = far[i];
		ck_assert_int_eq(ry_send(F.ab, &id, sizeof(id), fx_cb, &d), 0);
		t0 = fx_now_ns();
		ck_assert_msg(fx_until(&F, b_refused, &refused, 10000),
			      "sequence 0x%llx: b did not refuse it",
			      (unsigned long long)far[i]);
		/* generous: the old code took 22 s for 2^33, forever for
		 * 2^62; the refusal itself is one comparison */
		ck_assert_msg(fx_now_ns() - t0 < 5000000000ull,
			      "sequence 0x%llx took %.1f s",
			      (unsigned long long)far[i],
			      (double)(fx_now_ns() - t0) / 1e9);
		/* its op ends (ok: ACKed before b looked; or timed out) */
		ck_assert(fx_until_done(&F, &d, 2 + i, 20000));
		ck_assert_uint_eq(F.ab->pr_tx_seq, far[i]);
		F.ab->pr_tx_seq = seq;
		F.ab->pr_tx_low = low;
		memset(F.ab->pr_tx_bits, 0, sizeof(F.ab->pr_tx_bits));
	}
	ck_assert_uint_eq(RX.n, 1);
	for (i = 0; i < 3; i++)
		ck_assert_uint_eq(RX.seen[100 + i], 0);
	/* the window is where it was: the next messages arrive, once each */
	ck_assert(fx_until(&F, both_rails_active, NULL, 20000));
	for (i = 1; i <= 50; i++)
		ck_assert_int_eq(ry_send(F.ab, &i, sizeof(i), fx_cb, &d2), 0);
	ck_assert(fx_until_done(&F, &d2, 50, 20000));
	ck_assert_msg(d2.ok == 50, "%u of 50 failed: %s", d2.err, d2.reason);
	want = 51;
	ck_assert(fx_until(&F, rx_all, &want, 20000));
	fx_sleep_progress(&F, 200);
	ck_assert_uint_eq(RX.n, 51);
	ck_assert_uint_eq(RX.dup, 0);
	teardown();
}
END_TEST

static bool notified(void *arg)
{
	return RX.notify >= *(unsigned *)arg;
}

START_TEST(write_notify_once_after_data)
{
	struct fx_done d = {0};
	unsigned one = 1, two = 2;

	memset(&RX, 0, sizeof(RX));
	setup_opts(NULL);
	ry_set_recv_cb(F.b, on_recv, &RX);
	fx_fill(F.bufa, MiB, 5);
	ck_assert_int_eq(ry_write_notify(F.ab, F.ra, 0, F.desc_b,
					 (size_t)F.desc_b_len, 0, MiB, 0xabcdef,
					 fx_cb, &d),
			 0);
	ck_assert(fx_until_done(&F, &d, 1, 10000));
	ck_assert_uint_eq(d.ok, 1);
	ck_assert(fx_until(&F, notified, &one, 5000));
	ck_assert_uint_eq(RX.last_notify, 0xabcdef);
	ck_assert(RX.notify_data_ok);
	/* again, with a rail dying under it */
	fx_fill(F.bufa, MiB, 6);
	ck_assert_int_eq(ry_write_notify(F.ab, F.ra, 0, F.desc_b,
					 (size_t)F.desc_b_len, 0, MiB, 42,
					 fx_cb, &d),
			 0);
	ck_assert_int_eq(ry_rail_link(F.a, "r0", false), 0);
	ck_assert(fx_until_done(&F, &d, 2, 10000));
	ck_assert_uint_eq(d.ok, 2);
	ck_assert(fx_until(&F, notified, &two, 5000));
	fx_sleep_progress(&F, 300);
	ck_assert_uint_eq(RX.notify, 2);
	ck_assert_uint_eq(RX.last_notify, 42);
	ck_assert(RX.notify_data_ok);
	teardown();
}
END_TEST

/* ---- peers ---- */

START_TEST(partial_rail_pairing)
{
	struct ry_peer_info pi;
	struct ry_counters c;

	setup_opts(&(struct fx_opts){.nrails_a = 3,
				     .nrails_b = 2,
				     .net_a = {"eth", "ib", "roce"},
				     .net_b = {"roce", "eth"}});
	ck_assert_int_eq(write_verify(0, 4 * MiB, 1), RY_OK);
	ck_assert_int_eq(read_verify(0, 4 * MiB, 2), RY_OK);
	ck_assert_int_eq(ry_rail_counters(F.a, "r1", &c), 0);
	ck_assert_uint_eq(c.bytes, 0);
	ck_assert_int_eq(ry_rail_counters(F.a, "r0", &c), 0);
	ck_assert_uint_gt(c.bytes, 0);
	ck_assert_int_eq(ry_rail_counters(F.a, "r2", &c), 0);
	ck_assert_uint_gt(c.bytes, 0);
	ck_assert_int_eq(ry_rail_counters(F.a, "nope", &c), -ENOENT);
	/* two of a's three rails are paired with b, both carrying traffic;
	 * a link taken down stays paired but is no longer usable */
	ck_assert_int_eq(ry_peer_info(F.ab, &pi), 0);
	ck_assert(pi.ready);
	ck_assert_uint_ne(pi.incarnation, 0);
	ck_assert_uint_eq(pi.rails_paired, 2);
	ck_assert_uint_eq(pi.rails_usable, 2);
	ck_assert_uint_eq(pi.rails_active, 2);
	ck_assert_int_eq(ry_rail_link(F.a, "r2", false), 0);
	fx_progress(&F);
	ck_assert_int_eq(ry_peer_info(F.ab, &pi), 0);
	ck_assert_uint_eq(pi.rails_paired, 2);
	ck_assert_uint_eq(pi.rails_usable, 1);
	ck_assert_uint_le(pi.rails_active, 1);
	ck_assert_int_eq(ry_peer_info(NULL, &pi), -EINVAL);
	teardown();
}
END_TEST

START_TEST(peer_crash)
{
	struct stream s = {.slots = 4};
	char addr[128];
	struct ry_peer *again;

	setup_opts(&(struct fx_opts){.op_timeout_ms = 1000});
	stream_run(&s, 200);
	/* b dies without a word, mid-transfer */
	snprintf(F.o.b_control, sizeof(F.o.b_control), "%s", F.b_addr);
	fx_destroy_b(&F);
	s.slots = 0;
	{
		unsigned i;

		for (i = 0; i < 4; i++)
			if (s.busy[i])
				ck_assert_msg(
				    fx_until_done(&F, &s.d[i], 1, 5000),
				    "op hung after peer crash");
		for (i = 0; i < 4; i++)
			if (s.busy[i] && s.d[i].err) {
				ck_assert_int_eq(s.d[i].last_err, RY_ETIMEDOUT);
				ck_assert_msg(strstr(s.d[i].reason, "peer"),
					      "%s", s.d[i].reason);
			}
	}
	/* a new b on the same address: new incarnation, old descriptor
	 * refused, new one works */
	ck_assert_int_eq(fx_create_b(&F), 0);
	snprintf(addr, sizeof(addr), "%s", F.b_addr);
	ck_assert_int_eq(ry_peer_get(F.a, addr, &again), 0);
	ck_assert_ptr_eq(again, F.ab);
	ck_assert_int_eq(write_verify(0, MiB, 77), RY_OK);
	ck_assert_int_eq(read_verify(MiB, MiB, 78), RY_OK);
	teardown();
}
END_TEST

static bool restart_seen(void *arg)
{
	return F.ev_a.n_peer_restarted > 0;
}

static bool all_zero(const unsigned char *p, size_t n)
{
	while (n--)
		if (*p++)
			return false;
	return true;
}

/*
 * b crashes mid-stream and a new b comes up on the same address at once.
 * a learns it from the new HELLO: one RY_EV_PEER_RESTARTED with both
 * incarnations; every op aimed at the old b (in flight, and one posted
 * while b was down) completes with RY_ESTALE long before op_timeout
 * (30 s); nothing lands in the new b's memory; the old descriptor is
 * refused at post (-ESTALE, also from ry_desc_live) and a new one works.
 */
START_TEST(peer_restart)
{
	struct stream s = {.slots = 4};
	unsigned char old_desc[RY_DESC_MAX];
	size_t old_len = (size_t)0;
	struct ry_peer_info before, after;
	struct ry_peer_entry pe[4];
	struct fx_done late = {0}, d = {0};
	struct ry_peer *nobody;
	unsigned i;

	setup_opts(&(struct fx_opts){.op_timeout_ms = 30000});
	/* streaming until the HELLOs are exchanged: a loaded machine may take
	 * longer than the 200 ms that are usually plenty */
	stream_run(&s, 200);
	for (uint64_t end = fx_now_ns() + 10000000000ull;;) {
		ck_assert_int_eq(ry_peer_info(F.ab, &before), 0);
		if (before.ready || fx_now_ns() >= end)
			break;
		stream_run(&s, 50);
	}
	ck_assert(before.ready);
	ck_assert_uint_eq(before.restarts, 0);
	ck_assert_int_eq(ry_desc_live(F.ab, F.desc_b, (size_t)F.desc_b_len), 0);
	/* a's own descriptor is another node's as far as b is concerned */
	ck_assert_int_eq(ry_desc_live(F.ab, F.desc_a, (size_t)F.desc_a_len),
			 -ENXIO);
	ck_assert_int_eq(ry_desc_live(F.ab, F.desc_b, 7), -EBADMSG);
	ck_assert_int_eq(ry_desc_live(NULL, F.desc_b, (size_t)F.desc_b_len),
			 -EINVAL);
	ck_assert_int_eq(ry_peer_get(F.a, "127.0.0.1:1", &nobody), 0);
	ck_assert_int_eq(ry_desc_live(nobody, F.desc_b, (size_t)F.desc_b_len),
			 -EAGAIN);
	memcpy(old_desc, F.desc_b, (size_t)F.desc_b_len);
	old_len = (size_t)F.desc_b_len;

	/* b dies without a word, mid-transfer; a write is posted while it
	 * is down; a new b is on the same address a moment later */
	snprintf(F.o.b_control, sizeof(F.o.b_control), "%s", F.b_addr);
	fx_destroy_b(&F);
	ck_assert_int_eq(ry_write(F.ab, F.ra, 5 * MiB, old_desc, old_len,
				  5 * MiB, MiB, fx_cb, &late),
			 0);
	fx_sleep_progress(&F, 200);
	ck_assert_int_eq(fx_create_b(&F), 0);
	ck_assert_msg(fx_until(&F, restart_seen, NULL, 10000),
		      "no RY_EV_PEER_RESTARTED");
	ck_assert_int_eq(ry_peer_info(F.ab, &after), 0);
	ck_assert_uint_eq(F.ev_a.n_peer_restarted, 1);
	ck_assert_uint_eq(F.ev_a.restart_old, before.incarnation);
	ck_assert_uint_ne(F.ev_a.restart_new, before.incarnation);
	ck_assert_uint_eq(F.ev_a.restart_new, after.incarnation);
	ck_assert_str_eq(F.ev_a.restart_peer, ry_peer_name(F.ab));
	ck_assert_uint_ge(F.ev_a.n_peer_down, 1);
	ck_assert_uint_ge(F.ev_a.n_peer_up, 2);
	ck_assert_uint_eq(after.restarts, 1);

	/* everything aimed at the old b fails with RY_ESTALE, promptly */
	ck_assert(fx_until_done(&F, &late, 1, 5000));
	ck_assert_uint_eq(late.err, 1);
	ck_assert_int_eq(late.last_err, RY_ESTALE);
	ck_assert_msg(strstr(late.reason, "restarted"), "%s", late.reason);
	ck_assert_str_eq(ry_status_str(RY_ESTALE),
			 "peer restarted: the target memory is gone");
	for (i = 0; i < 4; i++) {
		if (!s.busy[i])
			continue;
		ck_assert_msg(fx_until_done(&F, &s.d[i], 1, 5000),
			      "op to the old incarnation hung");
		if (s.d[i].err)
			ck_assert_int_eq(s.d[i].last_err, RY_ESTALE);
		s.busy[i] = false;
	}
	fx_sleep_progress(&F, 100);
	ck_assert_msg(all_zero(F.bufb, F.buflen),
		      "a write meant for the old b landed in the new one");

	/* the old descriptor is refused; the new one works */
	ck_assert_int_eq(ry_desc_live(F.ab, old_desc, old_len), -ESTALE);
	ck_assert_int_eq(
	    ry_write(F.ab, F.ra, 0, old_desc, old_len, 0, MiB, fx_cb, &d),
	    -ESTALE);
	ck_assert_int_eq(
	    ry_read(F.ab, F.ra, 0, old_desc, old_len, 0, MiB, fx_cb, &d),
	    -ESTALE);
	ck_assert_int_eq(ry_desc_live(F.ab, F.desc_b, (size_t)F.desc_b_len), 0);
	ck_assert_int_eq(write_verify(0, MiB, 77), RY_OK);
	ck_assert_int_eq(read_verify(MiB, MiB, 78), RY_OK);
	ck_assert_uint_eq(d.total, 0);

	/* both peers a knows are listed, with their state */
	ck_assert_int_eq(ry_peer_list(F.a, NULL, 0), 2);
	ck_assert_int_eq(ry_peer_list(F.a, pe, 4), 2);
	for (i = 0; i < 2 && strcmp(pe[i].name, ry_peer_name(F.ab)); i++)
		;
	ck_assert_uint_lt(i, 2);
	ck_assert_str_eq(pe[i].state, "ready");
	ck_assert(pe[i].dialed && !pe[i].from_hello);
	ck_assert_uint_eq(pe[i].info.restarts, 1);
	ck_assert_uint_eq(pe[i].info.incarnation, after.incarnation);
	ck_assert_uint_gt(pe[i].counters.bytes, 0);
	ck_assert_str_eq(pe[1 - i].name, "127.0.0.1:1");
	ck_assert(!pe[1 - i].info.ready);
	ck_assert_int_eq(ry_peer_list(F.a, pe, 1), 2);
	ck_assert_int_eq(ry_peer_list(NULL, pe, 1), -EINVAL);
	ck_assert_int_eq(ry_peer_list(F.a, NULL, 1), -EINVAL);
	/* the new b knows a from its HELLO only */
	ck_assert_int_eq(ry_peer_list(F.b, pe, 4), 1);
	ck_assert(pe[0].from_hello && !pe[0].dialed);
	ck_assert_str_eq(pe[0].state, "ready");
	ck_assert_uint_eq(F.ev_b.n_peer_restarted, 0);
	ck_assert_uint_ge(F.ev_b.n_peer_up, 1);
	teardown();
}
END_TEST

static bool all_three_up(void *arg)
{
	(void)arg;
	return fx_active(F.a, "r0") && fx_active(F.a, "r1") &&
	       fx_active(F.a, "r2") && fx_active(F.b, "r0") &&
	       fx_active(F.b, "r1") && fx_active(F.b, "r2");
}

/* Both sides dial each other at once and connect the same rail pairs. */
START_TEST(both_sides_connect_at_once)
{
	struct fx_done da = {0}, db = {0};
	char a_addr[100];
	struct ry_peer *ba;
	unsigned i;

	setup_opts(&(struct fx_opts){.nrails_a = 3});
	ck_assert_int_eq(ry_manager_control_addr(F.a, a_addr, sizeof(a_addr)),
			 0);
	ck_assert_int_eq(ry_peer_get(F.b, a_addr, &ba), 0);
	fx_fill(F.bufa, 2 * MiB, 21);
	fx_fill(F.bufb + 4 * MiB, 2 * MiB, 22);
	for (i = 0; i < 2; i++) {
		ck_assert_int_eq(ry_write(F.ab, F.ra, i * MiB, F.desc_b,
					  (size_t)F.desc_b_len, i * MiB, MiB,
					  fx_cb, &da),
				 0);
		ck_assert_int_eq(ry_write(ba, F.rb, (4 + i) * MiB, F.desc_a,
					  (size_t)F.desc_a_len, (4 + i) * MiB,
					  MiB, fx_cb, &db),
				 0);
	}
	ck_assert(fx_until_done(&F, &da, 2, 10000));
	ck_assert(fx_until_done(&F, &db, 2, 10000));
	ck_assert_uint_eq(da.ok + db.ok, 4);
	ck_assert(!memcmp(F.bufa, F.bufb, 2 * MiB));
	ck_assert(!memcmp(F.bufa + 4 * MiB, F.bufb + 4 * MiB, 2 * MiB));
	/* the ops may have needed fewer rails than will come up */
	ck_assert_msg(fx_until(&F, all_three_up, NULL, 10000),
		      "not every rail pair connected once");
	for (i = 0; i < 3; i++) {
		char name[16];

		snprintf(name, sizeof(name), "r%u", i);
		ck_assert_uint_eq(fx_active(F.a, name), 1);
		ck_assert_uint_eq(fx_active(F.b, name), 1);
	}
	teardown();
}
END_TEST

/* A peer named in the config is found by name; unknown names are not. */
START_TEST(peer_by_config_name)
{
	struct ry_config c;
	struct ry_peer_config pc = {.name = "bee"};
	struct ry_peer_entry pe[2];
	struct ry_manager *m;
	struct ry_region *rg;
	struct ry_peer *p, *q;
	struct fx_done d = {0};
	unsigned char *buf = malloc(MiB);
	uint64_t end;

	setup_opts(NULL);
	ck_assert_ptr_nonnull(buf);
	fx_config(&c, &F.o, false);
	snprintf(c.node, sizeof(c.node), "c");
	snprintf(pc.address, sizeof(pc.address), "%s", F.b_addr);
	c.peers = &pc;
	c.n_peers = 1;
	ck_assert_int_eq(ry_manager_create(&c, &m), 0);
	/* listed before first use, as new */
	ck_assert_int_eq(ry_peer_list(m, pe, 2), 1);
	ck_assert_str_eq(pe[0].name, "bee");
	ck_assert_str_eq(pe[0].state, "new");
	ck_assert_str_eq(pe[0].address, F.b_addr);
	ck_assert_int_eq(ry_peer_get(m, "nosuch", &p), -ENOENT);
	ck_assert_int_eq(ry_peer_get(m, "bee", &p), 0);
	ck_assert_int_eq(ry_peer_list(m, pe, 2), 1); /* the record now */
	ck_assert_str_eq(ry_peer_name(p), "bee");
	ck_assert_int_eq(ry_peer_get(m, F.b_addr, &q), 0);
	ck_assert_ptr_eq(p, q);
	ck_assert_int_eq(ry_mr_reg(m, buf, MiB, 0, &rg), 0);
	fx_fill(buf, MiB, 31);
	ck_assert_int_eq(ry_write(p, rg, 0, F.desc_b, (size_t)F.desc_b_len, 0,
				  MiB, fx_cb, &d),
			 0);
	end = fx_now_ns() + 10000000000ull;
	while (!d.total && fx_now_ns() < end) {
		ry_progress(m);
		fx_progress(&F);
	}
	ck_assert_uint_eq(d.ok, 1);
	ck_assert(!memcmp(buf, F.bufb, MiB));
	ck_assert_int_eq(ry_mr_dereg(rg), 0);
	ry_manager_destroy(m);
	free(buf);
	teardown();
}
END_TEST

/* Garbage on the control port closes that socket and nothing else. */
/*
 * A config file's log section is how an operator turns on debugging of a
 * server that links the library: ry_manager_create_from_file applies it.
 */
/*
 * A log sink for tests that look for a line: counts the lines of a level
 * (-1: any) that hold both strings (NULL: any), from whichever thread
 * logs them.
 */
struct log_match {
	int level;
	const char *has1, *has2;
	atomic_uint n;
};

static void count_lines(enum ry_log_level level, const char *comp,
			const char *msg, void *arg)
{
	struct log_match *lm = arg;

	(void)comp;
	if ((lm->level < 0 || (int)level == lm->level) &&
	    (!lm->has1 || strstr(msg, lm->has1)) &&
	    (!lm->has2 || strstr(msg, lm->has2)))
		atomic_fetch_add(&lm->n, 1);
}

static struct log_match debug_lines = {.level = RY_LOG_DEBUG};

static int create_with_log(const char *level)
{
	char path[] = "/tmp/ry-logcfg-XXXXXX";
	struct ry_manager *m = NULL;
	int fd = mkstemp(path);
	FILE *f;

	ck_assert_int_ge(fd, 0);
	f = fdopen(fd, "w");
	ck_assert_ptr_nonnull(f);
	fprintf(f,
		"control = \"127.0.0.1:0\"\n"
		"rail r0 { provider = soft\n address = \"127.0.0.1:0\" }\n"
		"log { level = %s }\n",
		level);
	fclose(f);
	atomic_store(&debug_lines.n, 0);
	ry_log_set_sink(count_lines, &debug_lines);
	ck_assert_int_eq(ry_manager_create_from_file(path, &m), 0);
	ry_manager_destroy(m);
	ry_log_set_sink(NULL, NULL);
	unlink(path);
	ry_log_set_level(RY_LOG_WARN);
	return (int)atomic_load(&debug_lines.n);
}

START_TEST(log_section_of_a_file)
{
	ck_assert_int_gt(create_with_log("debug"), 0);
	ck_assert_int_eq(create_with_log("warn"), 0);
}
END_TEST

START_TEST(control_garbage)
{
	static const unsigned char bad_version[8] = {4, 0, 0, 0, 1, 0, 9, 0};
	static const unsigned char huge[8] = {0xff, 0xff, 0xff, 0x7f,
					      1,    0,	  1,	0};
	static const unsigned char short_hello[12] = {4, 0, 0, 0, 1, 0,
						      1, 0, 1, 2, 3, 4};
	const unsigned char *frames[] = {bad_version, huge, short_hello};
	const size_t lens[] = {8, 8, 12};
	unsigned char junk[4096];
	struct sockaddr_in sa = {.sin_family = AF_INET};
	unsigned i;

	setup_opts(NULL);
	ck_assert_int_eq(write_verify(0, MiB, 1), RY_OK);
	fx_fill(junk, sizeof(junk), 3);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sa.sin_port = htons((uint16_t)atoi(strrchr(F.b_addr, ':') + 1));
	for (i = 0; i < 4; i++) {
		int fd = socket(AF_INET, SOCK_STREAM, 0);

		ck_assert_int_ge(fd, 0);
		ck_assert_int_eq(
		    connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
		if (i < 3)
			ck_assert(write(fd, frames[i], lens[i]) > 0);
		else
			ck_assert(write(fd, junk, sizeof(junk)) > 0);
		fx_sleep_progress(&F, 20);
		close(fd);
	}
	fx_sleep_progress(&F, 50);
	ck_assert_int_eq(write_verify(0, MiB, 2), RY_OK);
	ck_assert_int_eq(read_verify(MiB, MiB, 3), RY_OK);
	teardown();
}
END_TEST

static struct fx_done CANCEL;

START_TEST(destroy_cancels_in_flight)
{
	struct ry_fault_spec cut = {.drop_all = true};
	unsigned i;

	memset(&CANCEL, 0, sizeof(CANCEL));
	setup_opts(NULL);
	ck_assert_int_eq(write_verify(0, 4096, 1), RY_OK);
	ck_assert_int_eq(ry_rail_fault(F.a, "r0", &cut), 0);
	ck_assert_int_eq(ry_rail_fault(F.a, "r1", &cut), 0);
	for (i = 0; i < 20; i++)
		ck_assert_int_eq(ry_write(F.ab, F.ra, 0, F.desc_b,
					  (size_t)F.desc_b_len, 0, MiB, fx_cb,
					  &CANCEL),
				 0);
	ck_assert_int_eq(ry_send(F.ab, "x", 1, fx_cb, &CANCEL), 0);
	fx_sleep_progress(&F, 20);
	ry_manager_destroy(F.a);
	F.a = NULL;
	ck_assert_uint_eq(CANCEL.total, 21);
	ck_assert_uint_eq(CANCEL.err, 21);
	ck_assert_int_eq(CANCEL.last_err, RY_ECANCELED);
	teardown();
}
END_TEST

/* ---- completion styles and threads ---- */

START_TEST(poll_mode_and_event_fd)
{
	struct ry_completion cpl[8];
	struct epoll_event ev = {.events = EPOLLIN};
	int ep, fd, n = 0, got;
	unsigned i;
	uint64_t end;

	setup_opts(NULL);
	fd = ry_event_fd(F.a);
	ck_assert_int_ge(fd, 0);
	ep = epoll_create1(0);
	ck_assert_int_ge(ep, 0);
	ck_assert_int_eq(epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev), 0);
	fx_fill(F.bufa, 4 * MiB, 9);
	for (i = 0; i < 4; i++)
		ck_assert_int_eq(ry_write(F.ab, F.ra, i * MiB, F.desc_b,
					  (size_t)F.desc_b_len, i * MiB, MiB,
					  NULL, (void *)(uintptr_t)(i + 1)),
				 0);
	end = fx_now_ns() + 10000000000ull;
	while (n < 4 && fx_now_ns() < end) {
		epoll_wait(ep, &ev, 1, 5); /* a sleeps here; b is driven */
		ry_progress(F.b);
		ry_progress(F.a);
		got = ry_poll_completions(F.a, cpl, 8);
		ck_assert_int_ge(got, 0);
		for (i = 0; i < (unsigned)got; i++) {
			ck_assert_int_eq(cpl[i].status, RY_OK);
			ck_assert_uint_eq(cpl[i].length, MiB);
			ck_assert_uint_ge((uintptr_t)cpl[i].context, 1);
		}
		n += got;
	}
	ck_assert_int_eq(n, 4);
	ck_assert(!memcmp(F.bufa, F.bufb, 4 * MiB));
	close(ep);
	teardown();
}
END_TEST

struct poster {
	unsigned id;
	struct fx_done d;
	pthread_mutex_t *lock;
};

static void locked_cb(const struct ry_completion *c, void *arg)
{
	struct poster *p = arg;

	pthread_mutex_lock(p->lock);
	fx_cb(c, &p->d);
	pthread_mutex_unlock(p->lock);
}

static void *post_thread(void *arg)
{
	struct poster *p = arg;
	size_t off = (size_t)p->id * MiB;
	unsigned i;

	for (i = 0; i < 25; i++) {
		int ret;

		do {
			ret = ry_write(F.ab, F.ra, off, F.desc_b,
				       (size_t)F.desc_b_len, off, MiB,
				       locked_cb, p);
		} while (ret == -EAGAIN);
		ck_assert_int_eq(ret, 0);
		while (1) {
			unsigned t;

			pthread_mutex_lock(p->lock);
			t = p->d.total;
			pthread_mutex_unlock(p->lock);
			if (t > i)
				break;
			usleep(200);
		}
	}
	return NULL;
}

static struct log_match g_rt_stall_lines = {
    .level = -1, .has1 = "rail thread", .has2 = "was not run for"};

/*
 * A rail thread kept from running past half of timeout_ms says so itself
 * when it runs again, whether or not the control thread was there to see
 * it: a peer's silence verdict on its rails must not go unexplained (the
 * drill tests tell such a failover from a broken path by this line).
 * Kept from running here by holding its rail's lock, as a starved
 * machine would keep it.
 */
START_TEST(rail_thread_stall_logged)
{
	enum ry_log_level was = (enum ry_log_level)atomic_load(&ry__log_level);
	struct ry__lrail *lr;
	uint64_t hold_us;

	setup_opts(NULL);
	ck_assert_int_eq(write_verify(0, MiB, 1), RY_OK);
	atomic_store(&g_rt_stall_lines.n, 0);
	ry_log_set_level(RY_LOG_WARN);
	ry_log_set_sink(count_lines, &g_rt_stall_lines);
	ck_assert_int_eq(ry_progress_thread_start(F.b), 0);
	ck_assert_uint_gt(F.b->m_nrt, 0);
	lr = F.b->m_rt[0].rt_rails[0];
	hold_us = (F.b->m_timeout_ns + 2 * F.b->m_tick_ns) / 1000 + 50000;
	usleep(50000); /* the thread has had rounds: it has a previous one */
	pthread_mutex_lock(&lr->lr_lock);
	usleep((useconds_t)hold_us);
	pthread_mutex_unlock(&lr->lr_lock);
	for (int i = 0; i < 100 && !atomic_load(&g_rt_stall_lines.n); i++)
		usleep(10000);
	ry_progress_thread_stop(F.b);
	ry_log_set_sink(NULL, NULL);
	ry_log_set_level(was);
	ck_assert_msg(atomic_load(&g_rt_stall_lines.n) >= 1,
		      "no \"was not run for\" warning after rail thread 0 "
		      "was held for %llu ms",
		      (unsigned long long)hold_us / 1000);
	teardown();
}
END_TEST

/* A rail of a's posted to and not run since (LOCKING: Kick). */
static int a_kick_left(void)
{
	for (unsigned i = 0; i < F.a->m_nrails; i++)
		if (atomic_load(&F.a->m_rails[i].lr_kick))
			return (int)i;
	return -1;
}

struct repost {
	int posted;	     /* the second write's ry_write(), once */
	struct fx_done done; /* the second write */
};

/* The first write's callback posts the next, as applications do. */
static void repost_cb(const struct ry_completion *c, void *arg)
{
	struct repost *r = arg;

	ck_assert_int_eq(c->status, RY_OK);
	r->posted = ry_write(F.ab, F.ra, 4096, F.desc_b, (size_t)F.desc_b_len,
			     4096, 4096, fx_cb, &r->done) == 0
			? 1
			: -1;
}

static bool reposted(void *arg)
{
	return ((struct repost *)arg)->posted != 0;
}

/*
 * A small write posted from a completion callback has its kick left to
 * the end of the callback batch (progress.c, ry__kick_post), so that the
 * batch's reposts share a send: but it is run before the progress call
 * that ran the callback returns, not one call or a tick later.
 */
START_TEST(post_from_callback_sent_by_progress_end)
{
	struct repost r = {0};
	int left;

	setup_opts(NULL);
	ck_assert_int_eq(write_verify(0, 4096, 5), RY_OK);
	fx_fill(F.bufa, 8192, 6);
	ck_assert_int_eq(ry_write(F.ab, F.ra, 0, F.desc_b, (size_t)F.desc_b_len,
				  0, 4096, repost_cb, &r),
			 0);
	/* fx_until stops after the progress pair in which a's ran the
	 * callback; b's progress does not touch a's rails */
	ck_assert(fx_until(&F, reposted, &r, 20000));
	ck_assert_int_eq(r.posted, 1);
	left = a_kick_left();
	ck_assert_msg(left < 0,
		      "rail %d still waits for the kick of a write posted "
		      "from a callback after the progress call returned",
		      left);
	ck_assert(fx_until_done(&F, &r.done, 1, 20000));
	ck_assert_uint_eq(r.done.ok, 1);
	ck_assert(!memcmp(F.bufa, F.bufb, 8192));
	teardown();
}
END_TEST

static bool wait_threads(bool (*f)(void), unsigned ms);
static atomic_uint g_alone_ok, g_alone_bad;

static void alone_cb(const struct ry_completion *c, void *arg)
{
	(void)arg;
	atomic_fetch_add(c->status == RY_OK ? &g_alone_ok : &g_alone_bad, 1);
}

static bool alone_all_done(void)
{
	return atomic_load(&g_alone_ok) + atomic_load(&g_alone_bad) == 20;
}

/* a's rails' progress() calls so far */
static uint64_t a_rail_progress_calls(void)
{
	uint64_t n = 0;

	for (unsigned i = 0; i < F.a->m_nrails; i++)
		n += ry_loop_progress_calls(F.a->m_rails[i].lr_rail);
	return n;
}

/* Post one 4 KiB write from the application and say whether a rail was
 * kicked: without rail threads ry__kick runs the kicked rail's progress
 * inside ry_write, and clears lr_kick with it; the write is then seen
 * through. */
static bool post_kicks(void)
{
	struct fx_done d = {0};
	uint64_t n0 = a_rail_progress_calls();
	bool kick;

	fx_fill(F.bufa, 4096, 9);
	ck_assert_int_eq(ry_write(F.ab, F.ra, 0, F.desc_b, (size_t)F.desc_b_len,
				  0, 4096, fx_cb, &d),
			 0);
	kick = a_rail_progress_calls() != n0;
	ck_assert(fx_until_done(&F, &d, 1, 20000));
	ck_assert_uint_eq(d.ok, 1);
	ck_assert(!memcmp(F.bufa, F.bufb, 4096));
	return kick;
}

/*
 * A rail that sends alone (rails/rail.h: verbs, the null rail) is not
 * kicked after a post: its thread would wake only to find nothing to do.
 * Writes still complete, self-driven and with progress threads (its fd
 * brings the completions).  A rail that needs progress after a post is
 * kicked, so the first assertion can fail.
 */
START_TEST(sends_alone_not_kicked)
{
	setup_opts(NULL);
	ck_assert_int_eq(write_verify(0, 4096, 5), RY_OK);
	ck_assert(post_kicks());
	teardown();

	ry_loop_sends_alone(true);
	setup_opts(NULL);
	ck_assert_int_eq(write_verify(0, 4096, 5), RY_OK);
	ck_assert(!post_kicks());
	/* the threads alone see these through: nobody calls ry_progress */
	ck_assert_int_eq(ry_progress_thread_start(F.a), 0);
	ck_assert_int_eq(ry_progress_thread_start(F.b), 0);
	atomic_store(&g_alone_ok, 0);
	atomic_store(&g_alone_bad, 0);
	fx_fill(F.bufa, 20 * 65536, 12);
	for (unsigned i = 0; i < 20; i++)
		ck_assert_int_eq(ry_write(F.ab, F.ra, i * 65536, F.desc_b,
					  (size_t)F.desc_b_len, i * 65536,
					  65536, alone_cb, NULL),
				 0);
	ck_assert_msg(wait_threads(alone_all_done, 20000),
		      "%u of 20 writes done by the progress threads",
		      atomic_load(&g_alone_ok) + atomic_load(&g_alone_bad));
	ry_progress_thread_stop(F.a);
	ry_progress_thread_stop(F.b);
	ck_assert_uint_eq(atomic_load(&g_alone_ok), 20);
	ck_assert(!memcmp(F.bufa, F.bufb, 20 * 65536));
	teardown();
	ry_loop_sends_alone(false);
}
END_TEST

static struct log_match g_fail_warns = {
    .level = RY_LOG_WARN, .has1 = "connection qp", .has2 = "failed"};

/* a's r1 failovers so far (ry_rail_counters: safe beside the threads) */
static uint64_t a_r1_failovers(void)
{
	struct ry_counters c;

	ck_assert_int_eq(ry_rail_counters(F.a, "r1", &c), 0);
	return c.failovers;
}

/* Poll (threads run the managers) until f holds or ms pass. */
static bool wait_threads(bool (*f)(void), unsigned ms)
{
	for (unsigned i = 0; i < ms / 10; i++) {
		if (f())
			return true;
		usleep(10000);
	}
	return f();
}

static uint64_t g_fo0;

static bool r1_failed_again(void)
{
	return a_r1_failovers() > g_fo0;
}

static bool r1_back(void)
{
	struct ry_rail_info ri;

	ck_assert_int_eq(ry_rail_info(F.a, "r1", &ri), 0);
	return ri.peers_active > 0;
}

static bool fail_warned(void)
{
	return atomic_load(&g_fail_warns.n) > 0;
}

/*
 * An operator turns the log level down and up while the progress threads
 * run (serve's reload does): it takes effect in those threads, and under
 * TSan setting it is no data race (it was a plain global).
 */
START_TEST(log_level_set_while_threads_run)
{
	enum ry_log_level was = (enum ry_log_level)atomic_load(&ry__log_level);

	setup_opts(NULL);
	ck_assert_int_eq(write_verify(0, MiB, 1), RY_OK);
	atomic_store(&g_fail_warns.n, 0);
	ry_log_set_sink(count_lines, &g_fail_warns);
	ck_assert_int_eq(ry_progress_thread_start(F.a), 0);
	ck_assert_int_eq(ry_progress_thread_start(F.b), 0);
	ry_log_set_level(RY_LOG_ERROR);
	g_fo0 = a_r1_failovers();
	ck_assert_int_eq(ry_rail_link(F.a, "r1", false), 0);
	ck_assert(wait_threads(r1_failed_again, 5000));
	ck_assert_uint_eq(atomic_load(&g_fail_warns.n), 0);
	ck_assert_int_eq(ry_rail_link(F.a, "r1", true), 0);
	ck_assert_msg(wait_threads(r1_back, 10000), "r1 not back");
	ry_log_set_level(RY_LOG_WARN);
	g_fo0 = a_r1_failovers();
	ck_assert_int_eq(ry_rail_link(F.a, "r1", false), 0);
	ck_assert(wait_threads(r1_failed_again, 5000));
	ck_assert_msg(wait_threads(fail_warned, 2000),
		      "no failover warning at level warn");
	ry_progress_thread_stop(F.a);
	ry_progress_thread_stop(F.b);
	ry_log_set_sink(NULL, NULL);
	ry_log_set_level(was);
	teardown();
}
END_TEST

START_TEST(progress_threads)
{
	pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	struct poster ps[4];
	pthread_t th[4];
	unsigned i;

	setup_opts(&(struct fx_opts){.nrails_a = 3});
	ck_assert_int_eq(ry_progress_thread_start(F.a), 0);
	ck_assert_int_eq(ry_progress_thread_start(F.a), -EALREADY);
	ck_assert_int_eq(ry_progress_thread_start(F.b), 0);
	fx_fill(F.bufa, 4 * MiB, 11);
	for (i = 0; i < 4; i++) {
		memset(&ps[i], 0, sizeof(ps[i]));
		ps[i].id = i;
		ps[i].lock = &lock;
		ck_assert_int_eq(
		    pthread_create(&th[i], NULL, post_thread, &ps[i]), 0);
	}
	usleep(100000);
	ck_assert_int_eq(ry_rail_link(F.a, "r1", false), 0);
	for (i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	for (i = 0; i < 4; i++)
		ck_assert_uint_eq(ps[i].d.ok, 25);
	ry_progress_thread_stop(F.a);
	ry_progress_thread_stop(F.b);
	ck_assert(!memcmp(F.bufa, F.bufb, 4 * MiB));
	teardown();
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create(FX_PROVIDER == RY_PROVIDER_SOFT ? "manager-soft"
				: FX_PROVIDER == RY_PROVIDER_TCP ? "manager-tcp"
								 : "manager");
	TCase *tc = tcase_create("manager");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, desc_validation);
	tcase_add_test(tc, forged_rkey);
	tcase_add_test(tc, post_from_callback_sent_by_progress_end);
	tcase_add_test(tc, all_sizes);
	tcase_add_test(tc, unequal_rates);
	tcase_add_test(tc, post_send_fails);
	tcase_add_test(tc, ops_in_flight_limit);
	tcase_add_test(tc, kill_rail_mid_write);
	tcase_add_test(tc, kill_rail_mid_read);
	tcase_add_test(tc, unplug_rail_mid_write);
	tcase_add_test(tc, two_rails_killed);
	tcase_add_test(tc, down_times_link);
	tcase_add_test(tc, own_stall_is_not_silence);
	tcase_add_test(tc, down_times_silent);
	tcase_add_test(tc, all_rails_killed_then_restored);
	tcase_add_test(tc, standby_rail);
	tcase_add_test(tc, flapping_rail);
	tcase_add_test(tc, detect_local_link_down);
	tcase_add_test(tc, detect_far_unplug_idle);
	if (fx_is_loop()) {
		tcase_add_test(tc, sends_alone_not_kicked);
		/* needs the loop rail's held-packet release */
		tcase_add_test(tc, fence_stale_packet_dropped);
		tcase_add_test(tc, no_fence_stale_packet_lands);
	} else if (FX_PROVIDER != RY_PROVIDER_TCP) {
		/* needs a rail that can delay packets (a tcp rail cannot: a
		 * reset connection delivers nothing more) */
		tcase_add_test(tc, fence_delayed_packet_dropped);
		tcase_add_test(tc, no_fence_delayed_packet_lands);
	}
	tcase_add_test(tc, messages_exactly_once_across_failover);
	tcase_add_test(tc, write_notify_once_after_data);
	tcase_add_test(tc, message_far_sequence);
	tcase_add_test(tc, partial_rail_pairing);
	tcase_add_test(tc, peer_crash);
	tcase_add_test(tc, peer_restart);
	tcase_add_test(tc, both_sides_connect_at_once);
	tcase_add_test(tc, peer_by_config_name);
	tcase_add_test(tc, control_garbage);
	if (!fx_is_loop())
		tcase_add_test(tc, log_section_of_a_file);
	tcase_add_test(tc, destroy_cancels_in_flight);
	suite_add_tcase(s, tc);
	/* the cases with threads of their own (the TSan build runs these) */
	tc = tcase_create("threads");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, poll_mode_and_event_fd);
	tcase_add_test(tc, progress_threads);
	tcase_add_test(tc, rail_thread_stall_logged);
	tcase_add_test(tc, log_level_set_while_threads_run);
	suite_add_tcase(s, tc);
	/* what keeps a server with many peers calm: idle connections cost
	 * little, a server's outage does not bring a flood of reconnects
	 * (CK_RUN_CASE=many_peers runs these alone) */
	tc = tcase_create("many_peers");
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, idle_heartbeat_one_end);
	tcase_add_test(tc, far_link_down_waits_for_peer);
	tcase_add_test(tc, far_link_down_first_connect);
	tcase_add_test(tc, sender_forgotten_after_leaving);
	tcase_add_test(tc, held_sender_kept_until_released);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr;
	int failed;

	/* failovers are the point here; RY_TEST_LOG=1 shows them */
	if (!getenv("RY_TEST_LOG"))
		ry_log_set_level(RY_LOG_ERROR);
	fx_skip_if_unavailable();
	sr = srunner_create(suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
