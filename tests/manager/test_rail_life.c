// SPDX-License-Identifier: BSD-2-Clause
/*
 * A rail's life in the manager (src/rail_life.c), over the loop rail:
 * a rail that cannot open at create does not stop the manager, is listed
 * missing with its cause, and opens by itself when it appears;
 * require_all_rails makes it an error; a manager with no rail at all
 * starts and waits; a rail whose device goes away (DEVICE_FATAL) is
 * closed, its work replayed with nothing lost, and opened again when the
 * device returns, on either end of a stream of verified 1 MiB writes.
 */
#include <check.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/loop/loop.h"
#include "src/manager.h"
#include "tests/manager/fixture.h"
#include "tests/manager/mgr_common.h"

static void teardown_rail_life(void)
{
	teardown();
	for (unsigned i = 0; i < 2; i++) {
		char a[16];

		snprintf(a, sizeof(a), "a-r%u", i);
		ry_loop_absent(a, false);
		snprintf(a, sizeof(a), "b-r%u", i);
		ry_loop_absent(a, false);
	}
}

struct count_arg {
	struct ry_manager *m;
	int n;
};

static bool count_is(void *arg)
{
	struct count_arg *c = arg;

	return ry_rail_count(c->m) == c->n;
}

static bool both_active(void *arg)
{
	const char *rail = arg;

	return fx_active(F.a, rail) == 1 && fx_active(F.b, rail) == 1;
}

/* Rails come back within RY_RAIL_RETRY_MS of their return; the bound
 * here is the loaded machine's, the drills measure the second. */
#define BACK_MS 5000

/* ---- absent at create ---- */

START_TEST(absent_at_create_opens_when_it_appears)
{
	struct stream s = {.slots = 4};
	char name[32], why[256];

	ry_loop_absent("a-r1", true);
	setup_opts(&(struct fx_opts){.nrails_a = 2});
	ck_assert_int_eq(ry_rail_count(F.a), 1);
	ck_assert_str_eq(ry_rail_name(F.a, 0), "r0");
	ck_assert_int_eq(
	    ry_rail_missing(F.a, 0, name, sizeof(name), why, sizeof(why)), 0);
	ck_assert_str_eq(name, "r1");
	ck_assert_msg(strstr(why, "a-r1") && strstr(why, "not found"),
		      "reason: %s", why);
	ck_assert_int_eq(ry_rail_missing(F.a, 1, name, sizeof(name), NULL, 0),
			 -ENOENT);
	{
		static char text[1 << 18];

		ck_assert_int_gt(ry_metrics_render(F.a, text, sizeof(text)), 0);
		ck_assert_msg(
		    strstr(text, "railyard_rail_up{rail=\"r0\"} 1\n") &&
			strstr(text, "railyard_rail_up{rail=\"r1\","
				     "reason=\"loop device a-r1 not "
				     "found\"} 0\n"),
		    "%s", text);
	}
	/* the rail it has works, and nothing fails for the missing one
	 * (ThreadSanitizer on a loaded machine has completed nothing in the
	 * first 300 ms, which includes connecting: a bound, not a pace) */
	stream_run(&s, 300);
	for (int i = 0; i < 30 && !s.done_ok; i++)
		stream_run(&s, 300);
	ck_assert_uint_gt(s.done_ok, 0);
	ck_assert_uint_eq(s.done_err, 0);
	ck_assert_uint_eq(F.ev_a.n_rail_back, 0);

	ry_loop_absent("a-r1", false);
	ck_assert_msg(
	    fx_until(&F, count_is, &(struct count_arg){F.a, 2}, BACK_MS),
	    "r1 did not open");
	ck_assert_int_eq(ry_rail_missing(F.a, 0, name, sizeof(name), NULL, 0),
			 -ENOENT);
	ck_assert_uint_eq(F.ev_a.n_rail_back, 1);
	ck_assert_msg(fx_until(&F, both_active, "r1", 10000),
		      "r1 never connected");
	ck_assert_msg(rail_busy(&s, "r1", 5000, false), "r1 carries nothing");
	stream_finish_clean(&s);
}
END_TEST

START_TEST(require_all_rails_refuses)
{
	struct fx_opts o = {.nrails_a = 2};
	struct ry_manager *m = NULL;
	struct ry_config c;

	ry_loop_absent("a-r1", true);
	fx_config(&c, &o, false);
	c.require_all_rails = true;
	ck_assert_int_eq(ry_manager_create(&c, &m), -ENODEV);
	ck_assert_ptr_null(m);
	/* a config error is not an absent rail: it stops the start */
	ry_loop_absent("a-r1", false);
	c.require_all_rails = false;
	c.rails[1].provider = (enum ry_provider)(RY__PROVIDER_MAX - 1);
	ck_assert_int_lt(ry_manager_create(&c, &m), 0);
	ck_assert_ptr_null(m);
}
END_TEST

/* No rail at all: the manager starts, an operation waits for a path. */
START_TEST(no_rail_starts_and_waits)
{
	struct fx_done d = {0};
	struct stream s = {.slots = 2};

	ry_loop_absent("a-r0", true);
	ry_loop_absent("a-r1", true);
	setup_opts(&(struct fx_opts){.nrails_a = 2, .op_timeout_ms = 20000});
	ck_assert_int_eq(ry_rail_count(F.a), 0);
	fx_fill(F.bufa, 4096, 7);
	ck_assert_int_eq(ry_write(F.ab, F.ra, 0, F.desc_b, (size_t)F.desc_b_len,
				  0, 4096, fx_cb, &d),
			 0);
	fx_sleep_progress(&F, 300);
	ck_assert_uint_eq(d.total, 0);
	ry_loop_absent("a-r0", false);
	ck_assert(fx_until_done(&F, &d, 1, 10000));
	ck_assert_uint_eq(d.ok, 1);
	ck_assert(!memcmp(F.bufa, F.bufb, 4096));
	ck_assert_int_eq(ry_rail_count(F.a), 1);
	ry_loop_absent("a-r1", false);
	ck_assert(fx_until(&F, count_is, &(struct count_arg){F.a, 2}, BACK_MS));
	stream_run(&s, 200);
	stream_finish_clean(&s);
}
END_TEST

/* A reload of the same file keeps a missing rail missing (and retried),
 * one without it stops trying it. */
START_TEST(reload_keeps_missing_rail)
{
	struct fx_opts o = {.nrails_a = 2};
	struct ry_config c;
	char name[32];

	ry_loop_absent("a-r1", true);
	setup_opts(&o);
	fx_config(&c, &F.o, false);
	ck_assert_int_eq(ry_manager_reload(F.a, &c, NULL, NULL), 0);
	ck_assert_int_eq(ry_rail_missing(F.a, 0, name, sizeof(name), NULL, 0),
			 0);
	ck_assert_str_eq(name, "r1");
	ry_loop_absent("a-r1", false);
	ck_assert(fx_until(&F, count_is, &(struct count_arg){F.a, 2}, BACK_MS));
	fx_sleep_progress(&F, 500);
	ck_assert_int_eq(ry_rail_count(F.a), 2); /* opened once */

	fx_fini(&F);
	ry_loop_absent("a-r1", true);
	setup_opts(&o);
	o.nrails_a = 1;
	fx_config(&c, &o, false);
	ck_assert_int_eq(ry_manager_reload(F.a, &c, NULL, NULL), 0);
	ck_assert_int_eq(ry_rail_missing(F.a, 0, name, sizeof(name), NULL, 0),
			 -ENOENT);
	ry_loop_absent("a-r1", false);
	fx_sleep_progress(&F, 600);
	ck_assert_int_eq(ry_rail_count(F.a), 1);
}
END_TEST

/* ---- gone and back ---- */

/*
 * side's r1 device goes away in the middle of the stream and stays away
 * for a while: its work is replayed on r0, nothing fails, the rail is
 * listed missing; when the device returns it opens again, reconnects and
 * carries fragments.  On b (the target's side) the rail's keys are new:
 * a's old descriptor does not use it (no remote access error), a packed
 * one does.
 */
static void gone_and_back(bool on_b)
{
	struct ry_manager *m;
	struct fx_events *ev;
	struct stream s = {.slots = 4};
	struct ry_counters pc;
	const char *addr = on_b ? "b-r1" : "a-r1";
	char name[32], why[256];

	setup_opts(&(struct fx_opts){.nrails_a = 2});
	m = on_b ? F.b : F.a;
	ev = on_b ? &F.ev_b : &F.ev_a;
	ck_assert_msg(rail_busy(&s, "r1", 5000, false), "r1 never carried");
	ry_loop_absent(addr, true);
	ry__lock_and_run_leftovers(m);
	ry_loop_device_gone(ry__mgr_rail(m, "r1"));
	ry__unlock(m);
	ck_assert(fx_until(&F, count_is, &(struct count_arg){m, 1}, BACK_MS));
	ck_assert_uint_eq(ev->n_rail_gone, 1);
	ck_assert_int_eq(
	    ry_rail_missing(m, 0, name, sizeof(name), why, sizeof(why)), 0);
	ck_assert_str_eq(name, "r1");
	ck_assert_msg(strstr(why, "fatal") || strstr(why, "not found"),
		      "reason: %s", why);
	/* the stream goes on over r0 */
	stream_run(&s, 500);
	ck_assert_uint_eq(fx_active(F.a, "r1"), 0);

	ry_loop_absent(addr, false);
	ck_assert_msg(
	    fx_until(&F, count_is, &(struct count_arg){m, 2}, BACK_MS),
	    "r1 not back");
	ck_assert_uint_eq(ev->n_rail_back, 1);
	ck_assert_msg(fx_until(&F, both_active, "r1", 10000),
		      "r1 never reconnected");
	if (on_b) {
		/* the old descriptor's key for r1 is of the closed rail */
		stream_run(&s, 300);
		ck_assert_uint_eq(s.done_err, 0);
		F.desc_b_len = ry_mr_pack(F.rb, F.desc_b, sizeof(F.desc_b));
		ck_assert_int_gt(F.desc_b_len, 0);
	}
	ck_assert_msg(rail_busy(&s, "r1", 5000, false), "r1 carries nothing");
	stream_finish_clean(&s);
	ck_assert_int_eq(ry_peer_counters(F.ab, &pc), 0);
	ck_assert_uint_ge(pc.failovers, 1);
}

START_TEST(device_gone_and_back_initiator)
{
	gone_and_back(false);
}
END_TEST

START_TEST(device_gone_and_back_target)
{
	gone_and_back(true);
}
END_TEST

/* The same with the progress threads running the rails. */
START_TEST(device_gone_and_back_threads)
{
	static struct tdone d[8];
	struct stream s = {.slots = 4};
	struct ry_rail *r;
	uint64_t end;

	setup_opts(&(struct fx_opts){.nrails_a = 2});
	ck_assert_msg(rail_busy(&s, "r1", 5000, false), "r1 never carried");
	stream_finish_clean(&s);
	ck_assert_int_eq(ry_progress_thread_start(F.a), 0);
	ck_assert_int_eq(ry_progress_thread_start(F.b), 0);
	fx_fill(F.bufa, 8 * MiB, 3);
	for (unsigned i = 0; i < 8; i++) {
		ck_assert_int_eq(ry_write(F.ab, F.ra, i * MiB, F.desc_b,
					  (size_t)F.desc_b_len, i * MiB, MiB,
					  tdone_cb, &d[i]),
				 0);
		if (i == 3) {
			ry_loop_absent("a-r1", true);
			ry__lock_and_run_leftovers(F.a);
			r = ry__mgr_rail(F.a, "r1");
			ck_assert_ptr_nonnull(r);
			ry_loop_device_gone(r);
			ry__unlock(F.a);
			ry__kick(F.a);
		}
	}
	/* the events' counters are the callbacks': read after the stop */
	end = fx_now_ns() + 20000000000ull;
	while (fx_now_ns() < end && ry_rail_count(F.a) != 1)
		usleep(1000);
	ck_assert_int_eq(ry_rail_count(F.a), 1);
	ry_loop_absent("a-r1", false);
	while (fx_now_ns() < end && ry_rail_count(F.a) != 2)
		usleep(1000);
	ck_assert_int_eq(ry_rail_count(F.a), 2);
	for (unsigned i = 0; i < 8; i++) {
		while (
		    !atomic_load_explicit(&d[i].done, memory_order_acquire) &&
		    fx_now_ns() < end)
			usleep(1000);
		ck_assert_msg(d[i].d.ok == 1, "op %u: %s", i, d[i].d.reason);
	}
	ry_progress_thread_stop(F.a);
	ry_progress_thread_stop(F.b);
	ck_assert_uint_eq(F.ev_a.n_rail_gone, 1);
	ck_assert_uint_eq(F.ev_a.n_rail_back, 1);
	ck_assert(!memcmp(F.bufa, F.bufb, 8 * MiB));
}
END_TEST

int main(void)
{
	const TTest *const tests[] = {
	    absent_at_create_opens_when_it_appears,
	    require_all_rails_refuses,
	    no_rail_starts_and_waits,
	    reload_keeps_missing_rail,
	    device_gone_and_back_initiator,
	    device_gone_and_back_target,
	    device_gone_and_back_threads,
	};
	Suite *s = suite_create("rail_life");
	TCase *tc = tcase_create("rail_life");
	SRunner *sr;
	int failed;

	if (!getenv("RY_TEST_LOG"))
		ry_log_set_level(RY_LOG_ERROR);
	if (ry_loop_register())
		return 1;
	tcase_set_timeout(tc, 60);
	tcase_add_checked_fixture(tc, NULL, teardown_rail_life);
	for (unsigned i = 0; i < sizeof(tests) / sizeof(tests[0]); i++)
		tcase_add_test(tc, tests[i]);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
