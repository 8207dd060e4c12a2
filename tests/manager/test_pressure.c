// SPDX-License-Identifier: BSD-2-Clause
/*
 * Under pressure (issue 30): a peer leaving on purpose is not a failure,
 * and an admitted peer that floods the control channel costs only itself.
 * Managers a and b (fixture.c) over the provider the suite is built for;
 * the flooder is a raw admitted client (rawctl.c).
 */
#include <check.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>

#include "src/manager.h"
#include "tests/manager/fixture.h"
#include "tests/manager/rawctl.h"

static struct fx F;

/* ---- what the managers log ---- */

static atomic_uint n_warn;
static char last_warn[256];

static void sink(enum ry_log_level level, const char *component,
		 const char *message, void *arg)
{
	(void)component;
	(void)arg;
	if (level > RY_LOG_WARN)
		return;
	atomic_fetch_add(&n_warn, 1);
	snprintf(last_warn, sizeof(last_warn), "%s", message);
}

static void watch_log(void)
{
	atomic_store(&n_warn, 0);
	last_warn[0] = 0;
	ry_log_set_level(RY_LOG_WARN);
	ry_log_set_sink(sink, NULL);
}

static void unwatch_log(void)
{
	ry_log_set_sink(NULL, NULL);
	if (!getenv("RY_TEST_LOG"))
		ry_log_set_level(RY_LOG_ERROR);
}

static struct ry_counters ab_counters(void)
{
	struct ry_counters c;

	ck_assert_int_eq(ry_peer_counters(F.ab, &c), 0);
	return c;
}

static bool a_has_failover(void *arg)
{
	(void)arg;
	return ab_counters().failovers > 0;
}

static bool a_has_no_active(void *arg)
{
	(void)arg;
	return fx_active(F.a, "r0") + fx_active(F.a, "r1") == 0;
}

/* ---- a goodbye is not a failure ---- */

/*
 * b's application destroys its manager: a closes b's connections at once,
 * counts them as goodbyes, not failovers, and logs no warning, however
 * long it then runs without b.
 */
START_TEST(goodbye_not_failure)
{
	struct fx_done d;
	struct ry_counters c;

	ck_assert_int_eq(fx_init(&F, &(struct fx_opts){.timeout_ms = 200}), 0);
	ck_assert_int_eq(write_one(&F, true, 20000, &d), 0);
	ck_assert_uint_eq(fx_active(F.a, "r0") + fx_active(F.a, "r1"), 2);
	watch_log();
	fx_destroy_b(&F);
	/* closed on the goodbye, long before silence would say so */
	ck_assert(fx_until(&F, a_has_no_active, NULL, 150));
	/* well past the heartbeat timeout: nothing more happens */
	fx_sleep_progress(&F, 1000);
	unwatch_log();
	c = ab_counters();
	ck_assert_msg(c.failovers == 0, "%llu failovers counted",
		      (unsigned long long)c.failovers);
	ck_assert_uint_eq(c.goodbyes, 2);
	ck_assert_msg(atomic_load(&n_warn) == 0, "%u warnings, last: %s",
		      atomic_load(&n_warn), last_warn);
	fx_fini(&F);
}
END_TEST

/* b's rails go silent without a word: a failure, counted and logged. */
START_TEST(vanish_is_failure)
{
	struct ry_fault_spec drop = {.drop_all = true};
	struct fx_done d;
	struct ry_counters c;

	ck_assert_int_eq(fx_init(&F, &(struct fx_opts){.timeout_ms = 200}), 0);
	ck_assert_int_eq(write_one(&F, true, 20000, &d), 0);
	watch_log();
	ck_assert_int_eq(ry_rail_fault(F.b, "r0", &drop), 0);
	ck_assert_int_eq(ry_rail_fault(F.b, "r1", &drop), 0);
	ck_assert(fx_until(&F, a_has_failover, NULL, 10000));
	unwatch_log();
	c = ab_counters();
	ck_assert_uint_eq(c.goodbyes, 0);
	ck_assert_uint_gt(atomic_load(&n_warn), 0);
	fx_fini(&F);
}
END_TEST

int main(void)
{
	const TTest *const tests[] = {
	    goodbye_not_failure,
	    vanish_is_failure,
	};

	return fx_run_suite("pressure", 120, tests,
			    sizeof(tests) / sizeof(*tests), true);
}
