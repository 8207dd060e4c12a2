// SPDX-License-Identifier: BSD-2-Clause
/*
 * The rail manager end to end, two managers in one process over the loop
 * rail (label unit) or the soft rail (label soft), every transfer
 * verified byte for byte (mgr_common.h).
 *
 * Fencing: with fence on, a packet of a failed connection that arrives
 * late never lands after the operation completed; with it off, it can.
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

/* ---- fencing ---- */

static void fence_case(bool fence)
{
	struct ry_fault_spec cut = {.drop_all = true};
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
	ck_assert_int_eq(write_verify(0, MiB, 2), RY_OK);
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

static bool a_fencing(void *arg)
{
	struct ry__list *pos;

	(void)arg;
	ry__list_for_each(pos, &F.ab->pr_ops) {
		if (ry__list_entry(pos, struct ry__op, op_all)->op_state ==
		    OPS_FENCING)
			return true;
	}
	return false;
}

/*
 * A stall of our own while a replayed operation waits for the peer's fence
 * acknowledgement: the acknowledgement could not be read meanwhile, so the
 * wait is not timed out for it (op_timeout_ms counts from the stall's
 * end), and the operation completes once both run.  Only a runs until the
 * operation is fencing, so b cannot have answered before the stall.
 */
START_TEST(own_stall_is_not_a_fence_timeout)
{
	struct ry_fault_spec cut = {.drop_all = true};
	struct fx_done d = {0};
	uint64_t end;

	setup_opts(&(struct fx_opts){.op_timeout_ms = 300});
	ck_assert_int_eq(write_verify(0, MiB, 1), RY_OK);
	ck_assert_int_eq(ry_rail_fault(F.a, "r1", &cut), 0);
	fx_fill(F.bufa, MiB, 2);
	ck_assert_int_eq(ry_write(F.ab, F.ra, 0, F.desc_b, (size_t)F.desc_b_len,
				  0, MiB, fx_cb, &d),
			 0);
	end = fx_now_ns() + 5000000000ull;
	while (!a_fencing(NULL)) {
		ck_assert_msg(fx_now_ns() < end && !d.total,
			      "the write never waited for a fence (%u done)",
			      d.total);
		ry_progress(F.a);
	}
	usleep(600000); /* twice op_timeout_ms */
	ry_progress(F.a);
	ck_assert_msg(!d.err, "failed after the stall: %s", d.reason);
	ck_assert(fx_until_done(&F, &d, 1, 5000));
	ck_assert_uint_eq(d.ok, 1);
	ck_assert_int_eq(memcmp(F.bufa, F.bufb, MiB), 0);
	teardown();
}
END_TEST

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
	ck_assert_int_eq(write_verify(0, len, 2), RY_OK);
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

int main(void)
{
	const struct mgr_case cases[] = {
	    {"manager", fence_stale_packet_dropped, MGR_LOOP},
	    {"manager", own_stall_is_not_a_fence_timeout, MGR_LOOP},
	    {"manager", no_fence_stale_packet_lands, MGR_LOOP},
	    /* needs a rail that can delay packets (a tcp rail cannot: a
	     * reset connection delivers nothing more) */
	    {"manager", fence_delayed_packet_dropped, MGR_SOFT},
	    {"manager", no_fence_delayed_packet_lands, MGR_SOFT},
	};

	return mgr_main("fence", cases, sizeof(cases) / sizeof(cases[0]));
}
