// SPDX-License-Identifier: BSD-2-Clause
/*
 * ry_manager_reload() end to end: two managers over the loop rail (label
 * unit) or the soft rail (label soft).  Rails added carry traffic; rails
 * removed with 1 MiB operations in flight lose none of them (every byte
 * verified); changed timeouts apply; peers added and removed; a config
 * that cannot be applied changes nothing and says why with file and line.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "src/util/log.h"
#include "tests/loop/loop.h"
#include "tests/manager/fixture.h"
#include "tests/manager/mgr_common.h"

/* The fixture, and one write: connections are made on first use. */
static void setup_connected(const struct fx_opts *o)
{
	struct fx_done d = {0};

	setup_opts(o);
	ck_assert_int_eq(ry_write(F.ab, F.ra, 0, F.desc_b, (size_t)F.desc_b_len,
				  0, 4096, fx_cb, &d),
			 0);
	ck_assert(fx_until_done(&F, &d, 1, 10000));
	ck_assert_uint_eq(d.ok, 1);
}

/* What a reload reported. */
struct problems {
	int n;
	char text[2048];
};

static void collect(const struct ry_config_error *e, void *arg)
{
	struct problems *p = arg;
	size_t used = strlen(p->text);

	p->n++;
	snprintf(p->text + used, sizeof(p->text) - used, "%s:%d: %s\n", e->file,
		 e->line, e->message);
}

/* Reload side a or b with the fixture's config for n rails. */
static int reload_n(bool is_b, unsigned n, struct problems *pr)
{
	struct fx_opts o = F.o;
	struct ry_config c;

	if (is_b)
		o.nrails_b = n;
	else
		o.nrails_a = n;
	fx_config(&c, &o, is_b);
	return ry_manager_reload(is_b ? F.b : F.a, &c, collect, pr);
}

/* Stream for ms, let every op complete: none may fail. */
static void stream_clean(struct stream *s, unsigned ms)
{
	stream_run(s, ms);
	stream_finish_clean(s);
}

static bool rails_active(void *arg)
{
	unsigned n = *(unsigned *)arg;
	char name[16];

	for (unsigned i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "r%u", i);
		if (fx_active(F.a, name) != 1 || fx_active(F.b, name) != 1)
			return false;
	}
	return true;
}

static void wait_active(unsigned n)
{
	ck_assert_msg(fx_until(&F, rails_active, &n, 10000),
		      "not every one of %u rails came up", n);
}

/* ---- rails ---- */

START_TEST(add_rail)
{
	struct problems pr = {0};
	struct stream s = {.slots = 4};
	struct ry_counters c2;
	unsigned conn_up;

	setup_connected(&(struct fx_opts){.nrails_a = 2});
	wait_active(2);
	conn_up = F.ev_a.n_conn_up;
	ck_assert_int_eq(reload_n(false, 3, &pr), 0);
	ck_assert_int_eq(reload_n(true, 3, &pr), 0);
	ck_assert_msg(pr.n == 0, "%s", pr.text);
	ck_assert_int_eq(ry_rail_count(F.a), 3);
	ck_assert_str_eq(ry_rail_name(F.a, 2), "r2");
	wait_active(3);
	/* the rails that stayed were not touched */
	ck_assert_uint_eq(F.ev_a.n_conn_down, 0);
	ck_assert_uint_eq(F.ev_b.n_conn_down, 0);
	ck_assert_uint_eq(F.ev_a.n_conn_up, conn_up + 1);
	/* b's old descriptor has no key for r2: packed again, r2 is used */
	F.desc_b_len = ry_mr_pack(F.rb, F.desc_b, sizeof(F.desc_b));
	ck_assert_int_gt(F.desc_b_len, 0);
	stream_clean(&s, 500);
	ck_assert_int_eq(ry_rail_counters(F.a, "r2", &c2), 0);
	ck_assert_uint_gt(c2.fragments, 0);
	fx_fini(&F);
}
END_TEST

static bool a_r2_open(void *arg)
{
	(void)arg;
	return ry_rail_count(F.a) == 3;
}

/*
 * A reload adds a rail whose device is not there yet (a NIC not cabled):
 * the reload succeeds, the rail is missing with its reason, the others go
 * on untouched, and it opens and carries work as soon as it appears, with
 * no second reload.  Loop rails only (ry_loop_absent).
 */
START_TEST(add_absent_rail)
{
	struct problems pr = {0};
	struct stream s = {.slots = 4};
	struct ry_counters c2;
	char name[32], why[128];

	if (!fx_is_loop())
		return;
	setup_connected(&(struct fx_opts){.nrails_a = 2});
	wait_active(2);
	ry_loop_absent("a-r2", true);
	ck_assert_int_eq(reload_n(false, 3, &pr), 0);
	ck_assert_int_eq(reload_n(true, 3, &pr), 0);
	ck_assert_msg(pr.n == 0, "%s", pr.text);
	ck_assert_int_eq(ry_rail_count(F.a), 2);
	ck_assert_int_eq(
	    ry_rail_missing(F.a, 0, name, sizeof(name), why, sizeof(why)), 0);
	ck_assert_str_eq(name, "r2");
	stream_clean(&s, 300);
	ck_assert_uint_eq(F.ev_a.n_conn_down, 0);
	ck_assert_uint_eq(F.ev_b.n_conn_down, 0);
	ry_loop_absent("a-r2", false);
	ck_assert(fx_until(&F, a_r2_open, NULL, 3000));
	wait_active(3);
	F.desc_b_len = ry_mr_pack(F.rb, F.desc_b, sizeof(F.desc_b));
	ck_assert_int_gt(F.desc_b_len, 0);
	s.slots = 4;
	stream_clean(&s, 500);
	ck_assert_int_eq(ry_rail_counters(F.a, "r2", &c2), 0);
	ck_assert_uint_gt(c2.fragments, 0);
	fx_fini(&F);
}
END_TEST

/*
 * a drops r1 while 1 MiB writes stream over r0..r2: its work is replayed
 * on r0 and r2, nothing fails, every byte arrives; b learns at once (the
 * fence and the new rail list), so it neither waits for a timeout nor
 * keeps dialing the removed rail.
 */
static void remove_mid_stream(bool both)
{
	struct problems pr = {0};
	struct stream s = {.slots = 4};
	struct ry_counters pc;

	setup_connected(&(struct fx_opts){.nrails_a = 3});
	wait_active(3);
	ck_assert_msg(rail_busy(&s, "r2", 5000, false),
		      "r2 never carried fragments");
	ck_assert_int_eq(reload_n(false, 2, &pr), 0);
	ck_assert_msg(pr.n == 0, "%s", pr.text);
	ck_assert_int_eq(ry_rail_count(F.a), 2);
	ck_assert_int_eq(ry_rail_counters(F.a, "r2", &pc), -ENOENT);
	/* traffic goes on after the removal: 8 ops done however slow the
	 * machine is (8 in 600 ms under ASan at load 5 was not enough) */
	for (uint64_t end = fx_now_ns() + 30000000000ull; s.done_ok <= 8;) {
		ck_assert_msg(fx_now_ns() < end, "only %u ops in 30 s",
			      s.done_ok);
		stream_run(&s, 300);
	}
	if (both) {
		ck_assert_int_eq(reload_n(true, 2, &pr), 0);
		ck_assert_msg(pr.n == 0, "%s", pr.text);
	}
	stream_clean(&s, 300);
	ck_assert_uint_gt(s.done_ok, 8);
	wait_active(2);
	/* b's connection on the removed rail went down, and stays down */
	ck_assert_uint_eq(fx_active(F.b, "r2"), 0);
	fx_sleep_progress(&F, 300);
	ck_assert_uint_eq(fx_active(F.b, "r2"), 0);
	ck_assert_uint_eq(F.ev_a.n_conn_down, 1);
	ck_assert_int_eq(ry_peer_counters(F.ab, &pc), 0);
	ck_assert_uint_ge(pc.failovers, 1);
	/* soft: r2 had work on the wire; the loop rail completes at post, so
	 * its WRs are done (in the CQ) by the time the reload runs */
	if (!fx_is_loop())
		ck_assert_uint_gt(pc.replayed_fragments, 0);
	/* the remaining rails go on */
	s.slots = 4;
	stream_clean(&s, 200);
	fx_fini(&F);
}

START_TEST(remove_rail_in_flight)
{
	remove_mid_stream(false);
}
END_TEST

START_TEST(remove_rail_both_sides)
{
	remove_mid_stream(true);
}
END_TEST

/* Removed and added again: a new slot, so old descriptors never name it. */
START_TEST(remove_then_add_back)
{
	struct problems pr = {0};
	struct stream s = {.slots = 4};

	setup_connected(&(struct fx_opts){.nrails_a = 2});
	wait_active(2);
	ck_assert_int_eq(reload_n(false, 1, &pr), 0);
	ck_assert_int_eq(ry_rail_count(F.a), 1);
	ck_assert_int_eq(reload_n(false, 2, &pr), 0);
	ck_assert_msg(pr.n == 0, "%s", pr.text);
	ck_assert_int_eq(ry_rail_count(F.a), 2);
	wait_active(2);
	stream_clean(&s, 300);
	fx_fini(&F);
}
END_TEST

/*
 * With key_file the handshake is once per session: a change of rails
 * closes the control sessions, a dials again and the new handshake
 * carries the new rail list.  Data connections and operations go on.
 */
START_TEST(rails_with_key_file)
{
	char dir[] = "/tmp/ry-reload-key-XXXXXX", key[64];
	unsigned char k[32];
	struct problems pr = {0};
	struct stream s = {.slots = 4};
	struct ry_counters c2;
	int fd;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(key, sizeof(key), "%s/key", dir);
	fd = open(key, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	ck_assert_int_ge(fd, 0);
	memset(k, 0x5a, sizeof(k));
	ck_assert_int_eq(write(fd, k, sizeof(k)), (ssize_t)sizeof(k));
	close(fd);
	setup_connected(
	    &(struct fx_opts){.nrails_a = 2, .key_a = key, .key_b = key});
	wait_active(2);
	stream_run(&s, 100);
	ck_assert_int_eq(reload_n(true, 3, &pr), 0);
	ck_assert_int_eq(reload_n(false, 3, &pr), 0);
	ck_assert_msg(pr.n == 0, "%s", pr.text);
	stream_run(&s, 200);
	wait_active(3);
	ck_assert_uint_eq(F.ev_a.n_conn_down, 0);
	F.desc_b_len = ry_mr_pack(F.rb, F.desc_b, sizeof(F.desc_b));
	stream_run(&s, 300);
	ck_assert_int_eq(reload_n(false, 2, &pr), 0);
	ck_assert_msg(pr.n == 0, "%s", pr.text);
	stream_clean(&s, 300);
	ck_assert_uint_gt(s.done_ok, 8);
	ck_assert_int_eq(ry_rail_counters(F.b, "r2", &c2), 0);
	ck_assert_uint_eq(fx_active(F.b, "r2"), 0);
	fx_fini(&F);
	unlink(key);
	rmdir(dir);
}
END_TEST

/* ---- timeouts ---- */

/*
 * op_timeout_ms from 10 s to 300 ms: with every rail pulled, a write
 * fails within about that, not 10 s.  The reload itself disturbs nothing.
 */
START_TEST(timeouts_apply)
{
	struct problems pr = {0};
	struct fx_done d = {0};
	struct ry_config c;
	struct fx_opts o;
	uint64_t t0;

	setup_connected(&(struct fx_opts){.nrails_a = 2});
	wait_active(2);
	o = F.o;
	o.op_timeout_ms = 300;
	o.heartbeat_ms = 20;
	o.timeout_ms = 200;
	fx_config(&c, &o, false);
	ck_assert_int_eq(ry_manager_reload(F.a, &c, collect, &pr), 0);
	ck_assert_msg(pr.n == 0, "%s", pr.text);
	fx_sleep_progress(&F, 300);
	ck_assert_uint_eq(F.ev_a.n_conn_down, 0);
	ck_assert_uint_eq(fx_active(F.a, "r0") + fx_active(F.a, "r1"), 2);
	ck_assert_int_eq(ry_rail_link(F.a, "r0", false), 0);
	ck_assert_int_eq(ry_rail_link(F.a, "r1", false), 0);
	fx_sleep_progress(&F, 50);
	t0 = fx_now_ns();
	ck_assert_int_eq(ry_write(F.ab, F.ra, 0, F.desc_b, (size_t)F.desc_b_len,
				  0, MiB, fx_cb, &d),
			 0);
	ck_assert(fx_until_done(&F, &d, 1, 5000));
	ck_assert_uint_eq(d.err, 1);
	ck_assert_int_eq(d.last_err, RY_ETIMEDOUT);
	ck_assert_msg(fx_now_ns() - t0 < 2000000000ull,
		      "failed after %llu ms, op_timeout_ms is 300",
		      (unsigned long long)((fx_now_ns() - t0) / 1000000));
	fx_fini(&F);
}
END_TEST

/* ---- peers ---- */

static bool peer_ready(void *arg)
{
	struct ry_peer_info pi;

	return !ry_peer_info(arg, &pi) && pi.rails_active > 0;
}

/*
 * b admits only the peers its config names.  A reload that removes a
 * closes a's sessions and refuses it; one that names it again lets a
 * back in and its writes go through.
 */
START_TEST(peer_removed_and_added)
{
	struct ry_peer_config pa = {.name = "a"};
	struct problems pr = {0};
	struct stream s = {.slots = 2};
	struct ry_peer *p;
	struct ry_config c;

	setup_connected(&(struct fx_opts){.nrails_a = 2,
					  .b_strict = true,
					  .b_names_a = true,
					  .reconnect_min_ms = 50,
					  .reconnect_max_ms = 200});
	wait_active(2);
	ck_assert_int_eq(ry_peer_get(F.b, "a", &p), 0);
	fx_config(&c, &F.o, true); /* b's, without peer a */
	ck_assert_int_eq(ry_manager_reload(F.b, &c, collect, &pr), 0);
	ck_assert_msg(pr.n == 0, "%s", pr.text);
	ck_assert_int_eq(ry_peer_get(F.b, "a", &p), -ENOENT);
	fx_sleep_progress(&F, 500);
	ck_assert(!peer_ready(F.ab));
	ck_assert_uint_ge(F.ev_a.n_peer_down, 1);
	/* named again */
	ry_manager_control_addr(F.a, pa.address, sizeof(pa.address));
	c.peers = &pa;
	c.n_peers = 1;
	ck_assert_int_eq(ry_manager_reload(F.b, &c, collect, &pr), 0);
	ck_assert_msg(pr.n == 0, "%s", pr.text);
	ck_assert_msg(fx_until(&F, peer_ready, F.ab, 10000),
		      "a did not come back after b named it again");
	ck_assert_int_eq(ry_peer_get(F.b, "a", &p), 0);
	stream_clean(&s, 300);
	fx_fini(&F);
}
END_TEST

/* A peer section added by a reload is found by name. */
START_TEST(peer_added_by_name)
{
	struct ry_peer_config pb = {.name = "bee"};
	struct problems pr = {0};
	struct ry_peer *p;
	struct ry_config c;

	setup_connected(NULL);
	ck_assert_int_eq(ry_peer_get(F.a, "bee", &p), -ENOENT);
	snprintf(pb.address, sizeof(pb.address), "%s", F.b_addr);
	fx_config(&c, &F.o, false);
	c.peers = &pb;
	c.n_peers = 1;
	ck_assert_int_eq(ry_manager_reload(F.a, &c, collect, &pr), 0);
	ck_assert_msg(pr.n == 0, "%s", pr.text);
	ck_assert_int_eq(ry_peer_get(F.a, "bee", &p), 0);
	ck_assert_ptr_eq(p, F.ab); /* the record for that address */
	fx_fini(&F);
}
END_TEST

/* ---- what is refused ---- */

/*
 * Restart-only options, a bad file and a rail that cannot open are each
 * refused as a whole: nothing changes, connections stay up, traffic goes
 * on, and the report names file and line.
 */
START_TEST(bad_config_changes_nothing)
{
	struct problems pr = {0};
	struct stream s = {.slots = 4};
	char path[] = "/tmp/ry-reload-XXXXXX";
	struct ry_config c;
	struct fx_opts o;
	FILE *f;
	int fd;

	setup_connected(&(struct fx_opts){.nrails_a = 2});
	wait_active(2);
	stream_run(&s, 100);

	/* restart-only options, together with a change that would apply */
	o = F.o;
	o.nrails_a = 3;
	o.op_timeout_ms = 300;
	fx_config(&c, &o, false);
	c.fragment_size = 8192;
	c.wr_per_qp = 128;
	ck_assert_int_eq(ry_manager_reload(F.a, &c, collect, &pr), -EINVAL);
	ck_assert_int_eq(pr.n, 2);
	ck_assert_msg(strstr(pr.text, "fragment_size cannot change") &&
			  strstr(pr.text, "wr_per_qp cannot change"),
		      "%s", pr.text);
	ck_assert_int_eq(ry_rail_count(F.a), 2);

	/* not valid at all */
	memset(&pr, 0, sizeof(pr));
	fx_config(&c, &F.o, false);
	c.failover.retry_count = 7;
	ck_assert_int_eq(ry_manager_reload(F.a, &c, collect, &pr), -EINVAL);
	ck_assert_int_ge(pr.n, 1);

	/* a file with a problem on line 3 */
	memset(&pr, 0, sizeof(pr));
	fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	f = fdopen(fd, "w");
	fprintf(f, "node = \"a\"\n"
		   "rail r0 { provider = soft  address = \"127.0.0.1:0\" }\n"
		   "no_such_option = 1\n");
	fclose(f);
	ck_assert_int_eq(ry_manager_reload_file(F.a, path, collect, &pr),
			 -EINVAL);
	unlink(path);
	ck_assert_msg(strstr(pr.text, ":3: "), "%s", pr.text);
	ck_assert_msg(strstr(pr.text, path), "%s", pr.text);

	/* a rail that cannot be opened, with require_all_rails: the one
	 * added with it goes too */
	memset(&pr, 0, sizeof(pr));
	o = F.o;
	o.nrails_a = 4;
	fx_config(&c, &o, false);
	c.require_all_rails = true;
	c.rails[3].provider = RY_PROVIDER_VERBS;
	snprintf(c.rails[3].device, sizeof(c.rails[3].device),
		 "no-such-device");
	c.rails[3].address[0] = 0;
	c.rails[3].port = 1;
	c.rails[3].line = 42;
	ck_assert_int_lt(ry_manager_reload(F.a, &c, collect, &pr), 0);
	ck_assert_msg(strstr(pr.text, ":42: rail r3"), "%s", pr.text);
	ck_assert_int_eq(ry_rail_count(F.a), 2);

	/* nothing moved: the same connections, and traffic goes on */
	stream_clean(&s, 300);
	ck_assert_uint_eq(F.ev_a.n_conn_down, 0);
	ck_assert_uint_eq(F.ev_b.n_conn_down, 0);
	ck_assert_int_eq(ry_rail_count(F.a), 2);
	/* and a good reload still works afterwards */
	ck_assert_int_eq(reload_n(false, 3, &pr), 0);
	ck_assert_int_eq(ry_rail_count(F.a), 3);
	fx_fini(&F);
}
END_TEST

/* With the progress threads running, from the application's thread:
 * completions arrive on a library thread (tdone_cb). */
START_TEST(with_progress_threads)
{
	struct problems pr = {0};
	static struct tdone d[16];
	struct ry_counters c;
	unsigned i, ok = 0;
	uint64_t end;

	setup_connected(&(struct fx_opts){.nrails_a = 2});
	wait_active(2);
	ck_assert_int_eq(ry_progress_thread_start(F.a), 0);
	ck_assert_int_eq(ry_progress_thread_start(F.b), 0);
	fx_fill(F.bufa, 16 * 256 * 1024, 9);
	for (i = 0; i < 16; i++) {
		ck_assert_int_eq(ry_write(F.ab, F.ra, i * 256 * 1024, F.desc_b,
					  (size_t)F.desc_b_len, i * 256 * 1024,
					  256 * 1024, tdone_cb, &d[i]),
				 0);
		if (i == 4) {
			ck_assert_int_eq(reload_n(true, 3, &pr), 0);
			ck_assert_int_eq(reload_n(false, 3, &pr), 0);
		}
		if (i == 10)
			ck_assert_int_eq(reload_n(false, 1, &pr), 0);
	}
	ck_assert_msg(pr.n == 0, "%s", pr.text);
	end = fx_now_ns() + 20000000000ull;
	for (i = 0; i < 16; i++) {
		while (
		    !atomic_load_explicit(&d[i].done, memory_order_acquire) &&
		    fx_now_ns() < end)
			usleep(1000);
		ok += d[i].d.ok;
	}
	ck_assert_uint_eq(ok, 16);
	ck_assert(!memcmp(F.bufa, F.bufb, 16 * 256 * 1024));
	ck_assert_int_eq(ry_rail_count(F.a), 1);
	ck_assert_int_eq(ry_rail_counters(F.a, "r0", &c), 0);
	ry_progress_thread_stop(F.a);
	ry_progress_thread_stop(F.b);
	fx_fini(&F);
}
END_TEST

/* Reload side a or b with the fixture's config and lanes l. */
static int reload_lanes(bool is_b, unsigned l, struct problems *pr)
{
	struct fx_opts o = F.o;
	struct ry_config c;

	o.lanes = l;
	fx_config(&c, &o, is_b);
	return ry_manager_reload(is_b ? F.b : F.a, &c, collect, pr);
}

static bool lanes_up(void *arg)
{
	(void)arg;
	return fx_active(F.a, "r0.2") == 1 && fx_active(F.a, "r1.2") == 1 &&
	       fx_active(F.b, "r0.2") == 1 && fx_active(F.b, "r1.2") == 1;
}

/*
 * lanes changed by a reload: 1 -> 2 adds a lane to each soft or tcp rail
 * (the rails that stay are not touched, the new lanes connect and carry
 * work), 2 -> 1 removes them with nothing lost.  While only one end has
 * the new lanes they carry nothing, and that end says so, once a rail.
 * The loop rail is not split: there the same reloads change nothing.
 */
START_TEST(lanes_added_and_removed)
{
	struct problems pr = {0};
	struct stream s = {.slots = 4};
	struct ry_counters c;
	int want = fx_is_loop() ? 2 : 4;

	enum ry_log_level was = (enum ry_log_level)atomic_load(&ry__log_level);
	struct log_match said = {.level = RY_LOG_WARN,
				 .has1 = "has no rail on network",
				 .has2 = "lanes must be the same on both ends"};

	setup_connected(&(struct fx_opts){0});
	wait_active(2);
	/* a has two lanes a rail, b one: a's second lanes are idle, and a
	 * says so once each */
	ry_log_set_level(RY_LOG_WARN);
	ry_log_set_sink(count_lines, &said);
	ck_assert_int_eq(reload_lanes(false, 2, &pr), 0);
	ry_progress(F.a);
	ry_progress(F.b);
	ck_assert_int_eq(reload_lanes(true, 2, &pr), 0);
	ry_log_set_sink(NULL, NULL);
	ry_log_set_level(was);
	ck_assert_msg(pr.n == 0, "%s", pr.text);
	ck_assert_uint_eq(atomic_load(&said.n), (fx_is_loop() ? 0 : 2));
	ck_assert_int_eq(ry_rail_count(F.a), want);
	ck_assert_int_eq(ry_rail_count(F.b), want);
	ck_assert_uint_eq(F.ev_a.n_conn_down, 0);
	ck_assert_uint_eq(F.ev_b.n_conn_down, 0);
	if (!fx_is_loop()) {
		ck_assert_str_eq(ry_rail_name(F.a, 2), "r0.2");
		ck_assert_str_eq(ry_rail_name(F.a, 3), "r1.2");
		ck_assert_msg(fx_until(&F, lanes_up, NULL, 10000),
			      "the lanes did not come up");
		F.desc_b_len = ry_mr_pack(F.rb, F.desc_b, sizeof(F.desc_b));
		ck_assert_int_gt(F.desc_b_len, 0);
	}
	stream_clean(&s, 500);
	if (!fx_is_loop()) {
		ck_assert_int_eq(ry_rail_counters(F.a, "r0.2", &c), 0);
		ck_assert_uint_gt(c.fragments, 0);
	}
	ck_assert_int_eq(reload_lanes(false, 1, &pr), 0);
	ck_assert_int_eq(reload_lanes(true, 1, &pr), 0);
	ck_assert_msg(pr.n == 0, "%s", pr.text);
	ck_assert_int_eq(ry_rail_count(F.a), 2);
	ck_assert_int_eq(ry_rail_count(F.b), 2);
	s = (struct stream){.slots = 4};
	stream_clean(&s, 300);
	ck_assert_uint_gt(s.done_ok, 0);
	fx_fini(&F);
}
END_TEST

int main(void)
{
	const TTest *const tests[] = {
	    add_rail,
	    add_absent_rail,
	    remove_rail_in_flight,
	    remove_rail_both_sides,
	    remove_then_add_back,
	    rails_with_key_file,
	    timeouts_apply,
	    peer_removed_and_added,
	    peer_added_by_name,
	    bad_config_changes_nothing,
	    with_progress_threads,
	    lanes_added_and_removed,
	};

	return fx_run_suite("reload", 60, tests,
			    sizeof(tests) / sizeof(tests[0]), true);
}
