// SPDX-License-Identifier: BSD-2-Clause
/*
 * The rail manager end to end, two managers in one process over the loop
 * rail (label unit) or the soft rail (label soft), every transfer
 * verified byte for byte (mgr_common.h).
 *
 * Detection: a local link-down and a silent far side are found within
 * their budgets; an idle connection is kept alive from one end only.
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
	/* and used within the last second again: waiting for both rails may
	 * take longer than that (tcp), and a connection idle for a second
	 * heartbeats every idle_heartbeat_ms from one end only (the next
	 * case), which is not what this one measures; 1 MiB is striped
	 * over both rails */
	ck_assert_int_eq(write_verify(0, 1 << 20, 2), RY_OK);
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

int main(void)
{
	const struct mgr_case cases[] = {
	    {"manager", detect_local_link_down, MGR_ANY},
	    {"manager", detect_far_unplug_idle, MGR_ANY},
	    {"manager", idle_heartbeat_one_end, MGR_ANY},
	};

	return mgr_main("detect", cases, sizeof(cases) / sizeof(cases[0]));
}
