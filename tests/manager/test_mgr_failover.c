// SPDX-License-Identifier: BSD-2-Clause
/*
 * The rail manager end to end, two managers in one process over the loop
 * rail (label unit) or the soft rail (label soft), every transfer
 * verified byte for byte (mgr_common.h).
 *
 * Failover: rails killed, unplugged and flapping under verified streams of
 * writes and reads; what each failure is timed at; a peer whose link is
 * down waits for it instead of flooding it with reconnects.
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
#include "tests/manager/mgr_common.h"

/* ---- failover ---- */

/* WRs posted on peer p's connection over rail whose completions p's
 * manager has not taken yet: what a cut of that rail must replay. */
static unsigned out_wrs(struct ry_peer *p, const char *rail)
{
	struct ry_manager *m = p->pr_mgr;
	unsigned n = 0;

	ry__lock_and_run_leftovers(m);
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
	ck_assert_msg(rail_busy(&s, "r1", 5000, true),
		      "r1 never carried fragments");
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
	ck_assert_msg(rail_busy(&s, "r0", 5000, true),
		      "r0 never carried fragments");
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
	ck_assert_msg(rail_busy(&s, "r0", 5000, true),
		      "r0 never carried fragments");
	ck_assert_msg(rail_busy(&s, "r1", 5000, true),
		      "r1 never carried fragments");
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
/* a's bytes on rail so far */
static uint64_t a_rail_bytes(const char *rail)
{
	struct ry_counters c;

	ck_assert_int_eq(ry_rail_counters(F.a, rail, &c), 0);
	return c.bytes;
}

/* eight verified 1 MiB writes, patterns tag.. tag + 7 */
static void write8(int tag)
{
	for (int i = 0; i < 8; i++)
		ck_assert_int_eq(write_verify(0, MiB, tag + i), RY_OK);
}

START_TEST(standby_rail)
{
	uint64_t c, d;
	int i;

	setup_opts(&(struct fx_opts){
	    .nrails_a = 3, .nrails_b = 3, .standby = {false, false, true}});
	/* the first operation connects the rails; whichever came up first
	 * took it (a standby too, while no primary was up yet) */
	ck_assert_int_eq(write_verify(0, MiB, 1), RY_OK);
	ck_assert(fx_until(&F, all_active, NULL, 5000));
	d = a_rail_bytes("r2");
	write8(10);
	c = a_rail_bytes("r2");
	ck_assert_uint_eq(c, d);
	ck_assert_int_eq(ry_rail_link(F.a, "r0", false), 0);
	ck_assert_int_eq(ry_rail_link(F.a, "r1", false), 0);
	for (i = 0; i < 8; i++) {
		ck_assert_int_eq(write_verify(0, MiB, 20 + i), RY_OK);
		ck_assert_int_eq(read_verify(0, MiB, 20 + i), RY_OK);
	}
	c = a_rail_bytes("r2");
	ck_assert_uint_ge(c, d + 16 * MiB);
	ck_assert_int_eq(ry_rail_link(F.a, "r0", true), 0);
	ck_assert_int_eq(ry_rail_link(F.a, "r1", true), 0);
	ck_assert(fx_until(&F, all_active, NULL, 5000));
	write8(30);
	ck_assert_uint_eq(a_rail_bytes("r2"), c);
	teardown();
}
END_TEST

/*
 * standby_below = 50: the standby (r3) idles while two of the three equal
 * primaries are up (67 %), and carries work beside the last one (33 %);
 * with the primaries back it idles again.
 */
START_TEST(standby_below_share)
{
	uint64_t c, d;

	setup_opts(&(struct fx_opts){.nrails_a = 4,
				     .nrails_b = 4,
				     .standby = {false, false, false, true},
				     .standby_below = 50});
	ck_assert_int_eq(write_verify(0, MiB, 1), RY_OK);
	ck_assert(fx_until(&F, all_active, NULL, 5000));
	ck_assert_int_eq(ry_rail_link(F.a, "r0", false), 0);
	d = a_rail_bytes("r3");
	write8(10);
	ck_assert_uint_eq(a_rail_bytes("r3"), d);
	ck_assert_int_eq(ry_rail_link(F.a, "r1", false), 0);
	write8(20);
	c = a_rail_bytes("r3");
	/* striped over r2 and r3, by their measured rates: r3 took some */
	ck_assert_uint_gt(c, d);
	ck_assert_int_eq(ry_rail_link(F.a, "r0", true), 0);
	ck_assert_int_eq(ry_rail_link(F.a, "r1", true), 0);
	ck_assert(fx_until(&F, all_active, NULL, 5000));
	write8(30);
	ck_assert_uint_eq(a_rail_bytes("r3"), c);
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
 * A stall of our own while a connection attempt is out (a starved
 * machine): the peer could not answer what it had not read, nor we read
 * its answer, so the attempt is not timed out for it; its clock starts
 * again when we run, and that same attempt connects.  Only a runs until
 * its r1 is CONNECTING, so b cannot have answered before the stall.
 */
START_TEST(own_stall_is_not_a_connect_timeout)
{
	struct ry__conn *c;
	uint64_t end;
	uint32_t attempt;

	setup_opts(NULL);
	ck_assert_int_eq(write_verify(0, MiB, 1), RY_OK);
	ck_assert(fx_until(&F, all_active, NULL, 5000));
	c = a_conn("r1");
	ck_assert_ptr_nonnull(c);
	ck_assert_int_eq(ry_rail_link(F.a, "r1", false), 0);
	ck_assert(fx_until(&F, a_r1_down, NULL, 3000));
	ck_assert_int_eq(ry_rail_link(F.a, "r1", true), 0);
	end = fx_now_ns() + 5000000000ull;
	while (c->cn_state != CONN_CONNECTING) {
		ck_assert_msg(fx_now_ns() < end, "r1 never connecting (%d)",
			      c->cn_state);
		ry_progress(F.a);
	}
	attempt = c->cn_attempt;
	/* longer than the attempt's time (timeout_ms 100: 500 ms) */
	usleep((useconds_t)(F.a->m_connect_ns / 1000 + 300000));
	ry_progress(F.a);
	ck_assert_msg(c->cn_state == CONN_CONNECTING,
		      "r1 %d after the stall: %s", c->cn_state, c->cn_reason);
	ck_assert(fx_until(&F, a_r1_active, NULL, 3000));
	ck_assert_uint_eq(c->cn_attempt, attempt);
	ck_assert_int_eq(write_verify(0, MiB, 2), RY_OK);
	teardown();
}
END_TEST

static bool a_no_path(void *arg)
{
	(void)arg;
	return F.ab->pr_nactive == 0;
}

/*
 * A stall of our own while an operation waits for a path (every rail of a
 * down): no path could come back while we did not run, so the wait is not
 * timed out for it (op_timeout_ms counts again from the stall's end), and
 * the rails back just after the stall carry the operation.
 */
START_TEST(own_stall_is_not_a_path_timeout)
{
	struct fx_done d = {0};
	char name[16];
	unsigned i;

	setup_opts(&(struct fx_opts){.op_timeout_ms = 1000});
	ck_assert_int_eq(write_verify(0, MiB, 1), RY_OK);
	for (i = 0; i < F.o.nrails_a; i++) {
		snprintf(name, sizeof(name), "r%u", i);
		ck_assert_int_eq(ry_rail_link(F.a, name, false), 0);
	}
	ck_assert(fx_until(&F, a_no_path, NULL, 3000));
	fx_fill(F.bufa, MiB, 2);
	ck_assert_int_eq(ry_write(F.ab, F.ra, 0, F.desc_b, (size_t)F.desc_b_len,
				  0, MiB, fx_cb, &d),
			 0);
	ry_progress(F.a);
	ck_assert_msg(!d.total, "the write ended with no path: %s", d.reason);
	usleep(2000000); /* twice op_timeout_ms */
	for (i = 0; i < F.o.nrails_a; i++) {
		snprintf(name, sizeof(name), "r%u", i);
		ck_assert_int_eq(ry_rail_link(F.a, name, true), 0);
	}
	ry_progress(F.a);
	ck_assert_msg(!d.err, "failed right after the stall: %s", d.reason);
	ck_assert(fx_until_done(&F, &d, 1, 5000));
	ck_assert_msg(d.ok == 1, "write failed: %s", d.reason);
	ck_assert_int_eq(memcmp(F.bufa, F.bufb, MiB), 0);
	teardown();
}
END_TEST

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

int main(void)
{
	const struct mgr_case cases[] = {
	    {"manager", kill_rail_mid_write, MGR_ANY},
	    {"manager", kill_rail_mid_read, MGR_ANY},
	    {"manager", unplug_rail_mid_write, MGR_ANY},
	    {"manager", two_rails_killed, MGR_ANY},
	    {"manager", down_times_link, MGR_ANY},
	    {"manager", own_stall_is_not_silence, MGR_ANY},
	    {"manager", down_times_silent, MGR_ANY},
	    {"manager", all_rails_killed_then_restored, MGR_ANY},
	    {"manager", standby_rail, MGR_ANY},
	    {"manager", standby_below_share, MGR_ANY},
	    {"manager", own_stall_is_not_a_connect_timeout, MGR_ANY},
	    {"manager", own_stall_is_not_a_path_timeout, MGR_ANY},
	    {"manager", flapping_rail, MGR_ANY},
	    {"manager", far_link_down_waits_for_peer, MGR_ANY},
	    {"manager", far_link_down_first_connect, MGR_ANY},
	};

	return mgr_main("failover", cases, sizeof(cases) / sizeof(cases[0]));
}
