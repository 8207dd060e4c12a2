// SPDX-License-Identifier: BSD-2-Clause
/*
 * A rail's health from its error counters (src/rail_health.c), a and b
 * over the loop rail (label unit: the rail's port_errors raised by
 * ry_loop_port_errors) or the soft rail (label soft: packets dropped on
 * a's rail, so its retransmits rise): degraded, drained while the other
 * rails carry the work, back when quiet; a drained rail still carries
 * work when no other can.
 */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include <railyard/testing.h>

#include "src/manager.h"
#include "tests/loop/loop.h"
#include "tests/manager/fixture.h"
#include "tests/manager/mgr_common.h"

static bool soft(void)
{
	return FX_PROVIDER != RY_PROVIDER_LOOP;
}

/* errors on a's rail: per sample on loop, a drop rate on soft */
static void errors_on(const char *rail, unsigned loop_per_sample,
		      double soft_drop)
{
	if (soft()) {
		struct ry_fault_spec f = {.drop = soft_drop};

		ck_assert_int_eq(ry_rail_fault(F.a, rail, &f), 0);
	} else {
		ry__lock_and_run_leftovers(F.a);
		ry_loop_port_errors(ry__mgr_rail(F.a, rail), loop_per_sample);
		ry__unlock(F.a);
	}
}

static void errors_off(const char *rail)
{
	errors_on(rail, 0, 0);
}

static uint64_t a_rail_bytes(const char *rail)
{
	struct ry_counters c;

	ck_assert_int_eq(ry_rail_counters(F.a, rail, &c), 0);
	return c.bytes;
}

static enum ry_rail_health_state a_health(const char *rail)
{
	struct ry_rail_health h;

	ck_assert_int_eq(ry_rail_health(F.a, rail, &h), 0);
	return h.state;
}

static uint32_t seed = 100;

static bool a_r1_active(void *arg)
{
	(void)arg;
	return fx_active(F.a, "r1") == 1;
}

/* Verified writes (traffic for the soft rail's counters) until a's rail
 * is in state want, at most ms; whether it got there. */
static bool write_until(const char *rail, enum ry_rail_health_state want,
			unsigned ms)
{
	uint64_t end = fx_now_ns() + (uint64_t)ms * 1000000ull;

	while (a_health(rail) != want) {
		if (fx_now_ns() > end)
			return false;
		ck_assert_int_eq(write_verify(0, MiB, seed++), RY_OK);
		fx_sleep_progress(&F, 5);
	}
	return true;
}

/* the metric's sample for a's rail, or -1 */
static long metric(const char *family, const char *rail)
{
	char buf[1 << 16], want[128];
	const char *at;
	long v = -1;

	ck_assert_int_lt(ry_metrics_render(F.a, buf, sizeof(buf)),
			 (int)sizeof(buf));
	snprintf(want, sizeof(want), "\n%s{rail=\"%s\"} ", family, rail);
	at = strstr(buf, want);
	if (at)
		sscanf(at + strlen(want), "%ld", &v);
	return v;
}

/*
 * r1 of three counts errors well over error_drain_ppm: drained (event,
 * state, metric, log), its connection stays up, and new work goes to r0
 * and r2 only; the errors stop: after error_quiet_ms it is ok again and
 * carries work.
 */
START_TEST(drained_then_back)
{
	struct log_match lm = {.level = RY_LOG_WARN,
			       .has1 = "rail r1: drained"};
	uint64_t d;

	setup_opts(&(struct fx_opts){
	    .nrails_a = 3, .nrails_b = 3, .error_quiet_ms = 1500});
	ck_assert_int_eq(write_verify(0, MiB, 1), RY_OK);
	ck_assert(fx_until(&F, all_active, NULL, 5000));
	ck_assert_int_eq(a_health("r1"), RY_RAIL_OK);
	ck_assert_int_eq(metric("railyard_rail_health", "r1"), 0);
	ry_log_set_level(RY_LOG_WARN);
	ry_log_set_sink(count_lines, &lm);
	errors_on("r1", 5000, 0.1);
	ck_assert_msg(write_until("r1", RY_RAIL_DRAINED, 10000),
		      "r1 not drained: %s (%u events)", F.ev_a.last_health,
		      F.ev_a.n_rail_health);
	ry_log_set_sink(NULL, NULL);
	ry_log_set_level(RY_LOG_ERROR);
	ck_assert_uint_ge(atomic_load(&lm.n), 1);
	ck_assert_uint_ge(F.ev_a.n_rail_health, 1);
	ck_assert_msg(!strncmp(F.ev_a.last_health, "drained: ", 9), "%s",
		      F.ev_a.last_health);
	ck_assert_int_eq(metric("railyard_rail_health", "r1"), 2);
	ck_assert_int_ge(metric("railyard_rail_error_ppm", "r1"), 50000);
	/* what was posted on r1 before the drain completes; then nothing */
	fx_sleep_progress(&F, 200);
	d = a_rail_bytes("r1");
	for (int i = 0; i < 16; i++)
		ck_assert_int_eq(write_verify(0, MiB, seed++), RY_OK);
	ck_assert_uint_eq(a_rail_bytes("r1"), d);
	/* drained, not closed (a drop can still fail it on soft: up again) */
	ck_assert_msg(fx_until(&F, a_r1_active, NULL, 5000), "r1: %s",
		      F.ev_a.last_reason);
	errors_off("r1");
	ck_assert_msg(write_until("r1", RY_RAIL_OK, 8000),
		      "r1 not ok: %u ppm, %s",
		      metric("railyard_rail_error_ppm", "r1") < 0
			  ? 0
			  : (unsigned)metric("railyard_rail_error_ppm", "r1"),
		      F.ev_a.last_health);
	ck_assert_msg(!strncmp(F.ev_a.last_health, "ok: ", 4), "%s",
		      F.ev_a.last_health);
	ck_assert_int_eq(metric("railyard_rail_health", "r1"), 0);
	for (int i = 0; i < 16; i++)
		ck_assert_int_eq(write_verify(0, MiB, seed++), RY_OK);
	ck_assert_uint_gt(a_rail_bytes("r1"), d);
	teardown();
}
END_TEST

/*
 * Both rails drained: no other rail can take the work, so they still
 * carry it, nothing fails.
 */
START_TEST(drained_alone_still_carries)
{
	uint64_t d0, d1;

	setup_opts(&(struct fx_opts){.error_quiet_ms = 60000});
	ck_assert_int_eq(write_verify(0, MiB, 1), RY_OK);
	ck_assert(fx_until(&F, all_active, NULL, 5000));
	errors_on("r0", 5000, 0.2);
	errors_on("r1", 5000, 0.1);
	ck_assert(write_until("r0", RY_RAIL_DRAINED, 10000));
	ck_assert(write_until("r1", RY_RAIL_DRAINED, 10000));
	d0 = a_rail_bytes("r0");
	d1 = a_rail_bytes("r1");
	for (int i = 0; i < 16; i++) {
		ck_assert_int_eq(write_verify(0, MiB, seed++), RY_OK);
		ck_assert_int_eq(read_verify(0, MiB, seed - 1), RY_OK);
	}
	ck_assert_uint_gt(a_rail_bytes("r0") + a_rail_bytes("r1"),
			  d0 + d1 + 16 * MiB);
	errors_off("r0");
	errors_off("r1");
	teardown();
}
END_TEST

/*
 * Over error_degrade_ppm, under error_drain_ppm: degraded, its share of
 * the stripe a quarter of r0's, so r0 takes more of what follows.  Loop
 * only: a drop rate cannot hold the soft rail's retransmits between the
 * two marks.
 */
START_TEST(degraded_takes_less)
{
	uint64_t r0, r1;

	if (soft())
		return;
	setup_opts(&(struct fx_opts){.error_quiet_ms = 60000,
				     .error_degrade_ppm = 10000,
				     .error_drain_ppm = 1000000});
	ck_assert_int_eq(write_verify(0, MiB, 1), RY_OK);
	ck_assert(fx_until(&F, all_active, NULL, 5000));
	errors_on("r1", 500, 0);
	ck_assert(write_until("r1", RY_RAIL_DEGRADED, 10000));
	ck_assert_msg(!strncmp(F.ev_a.last_health, "degraded: ", 10), "%s",
		      F.ev_a.last_health);
	r0 = a_rail_bytes("r0");
	r1 = a_rail_bytes("r1");
	for (int i = 0; i < 32; i++)
		ck_assert_int_eq(write_verify(0, MiB, seed++), RY_OK);
	r0 = a_rail_bytes("r0") - r0;
	r1 = a_rail_bytes("r1") - r1;
	ck_assert_msg(r1 < r0, "r0 %llu bytes, degraded r1 %llu",
		      (unsigned long long)r0, (unsigned long long)r1);
	errors_off("r1");
	teardown();
}
END_TEST

int main(void)
{
	const TTest *const tests[] = {
	    drained_then_back,
	    drained_alone_still_carries,
	    degraded_takes_less,
	};

	return fx_run_suite("rail_health", 60, tests,
			    sizeof(tests) / sizeof(tests[0]), true);
}
