// SPDX-License-Identifier: BSD-2-Clause
/*
 * The soft rail's per-QP memory (MEMORY in rails/soft/soft_int.h): a QP
 * holds its WRs inline until more are outstanding, grows a ring of its own
 * in post_send (moving WRs in flight, under loss so that go-back-N runs
 * over the moved ones), gives it back once drained and idle; the CQ room
 * is taken per posted send WR and given back by poll, ERR, destroy and
 * RESET, so no completion is ever lost; the READ responder's ring exists
 * only once a READ came.  And a region two rails land the same bytes in
 * at once, as a replayed fragment and its original do.
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rail/rail_conformance.h"
#include "rails/soft/soft.h"
#include "rails/soft/soft_int.h"
#include "soft/soft_provider.h"

static const unsigned ALL = RY_TEST_ACCESS_ALL;

static struct ry__soft_qp *sqp(struct ry_test_pair *p, int i)
{
	return to_sqp(p->qp[i]);
}

static uint32_t cq_sends(struct ry_test_pair *p, int i)
{
	return to_srail(p->r[i])->cq0.sends;
}

/* Post n WRITEs of len bytes with ids from id0, one call each. */
static void post_writes(struct ry_test_pair *p, struct region *l,
			struct region *r, unsigned n, size_t len, uint64_t id0)
{
	for (unsigned i = 0; i < n; i++) {
		struct ry_send_wr wr =
		    wr_make(RY_WR_RDMA_WRITE, l, r, len, id0 + i);

		ck_assert_int_eq(ry__rail_post_send(p->qp[0], &wr, 1), 0);
	}
}

/* The next n completions on rail 0 are ids id0.. in order, status st. */
static void expect_wcs(struct ry_test_pair *p, unsigned n, uint64_t id0,
		       enum ry_wc_status st)
{
	for (unsigned i = 0; i < n; i++) {
		struct ry_wc wc;

		pair_wait_wc(p, 0, &wc, 5000);
		ck_assert_uint_eq(wc.wr_id, id0 + i);
		ck_assert_int_eq(wc.status, st);
	}
}

/* Idle: no ring of its own, no CQ room taken. */
static void assert_idle(struct ry_test_pair *p)
{
	ck_assert_ptr_eq(sqp(p, 0)->sq, sqp(p, 0)->sq_inline);
	ck_assert_uint_eq(sqp(p, 0)->sq_size, RY__SOFT_SQ_INLINE);
	ck_assert_uint_eq(cq_sends(p, 0), 0);
}

START_TEST(test_ring_grows_and_goes)
{
	struct ry_test_pair p = {0};
	struct region l, r;

	ry__soft_test_short_pair(&p);
	assert_idle(&p);
	region_get(&p, 0, &l, 64 << 10, 1, ALL);
	region_get(&p, 1, &r, 64 << 10, 2, ALL);
	/* a few fit inline */
	post_writes(&p, &l, &r, RY__SOFT_SQ_INLINE, 100, 0);
	ck_assert_ptr_eq(sqp(&p, 0)->sq, sqp(&p, 0)->sq_inline);
	ck_assert_uint_eq(cq_sends(&p, 0), RY__SOFT_SQ_INLINE);
	expect_wcs(&p, RY__SOFT_SQ_INLINE, 0, RY_WC_SUCCESS);
	pair_spin(&p, 5);
	assert_idle(&p);
	/* the whole send queue: a ring of 256 */
	post_writes(&p, &l, &r, 256, 4000, 100);
	ck_assert_ptr_ne(sqp(&p, 0)->sq, sqp(&p, 0)->sq_inline);
	ck_assert_uint_eq(sqp(&p, 0)->sq_size, 256);
	ck_assert_int_eq(
	    ry__rail_post_send(
		p.qp[0], &(struct ry_send_wr){.opcode = RY_WR_RDMA_WRITE}, 1),
	    -ENOMEM);
	expect_wcs(&p, 256, 100, RY_WC_SUCCESS);
	pair_spin(&p, 5);
	assert_idle(&p);
	region_put(&l);
	region_put(&r);
	pair_close(&p);
}
END_TEST

/* Growth with WRs in flight, under loss: the moved WRs are sent again
 * from their new slots and everything completes once, in order. */
START_TEST(test_grow_in_flight_lossy)
{
	struct ry_fault f = {.drop = 0.1};
	struct ry_test_pair p = {0};
	struct region l, r;
	uint64_t id = 0;

	ry__soft_test_short_pair(&p);
	region_get(&p, 0, &l, 64 << 10, 3, ALL);
	region_get(&p, 1, &r, 64 << 10, 4, ALL);
	for (int i = 0; i < 2; i++)
		ck_assert_int_eq(ry__rail_set_fault(p.r[i], &f), 0);
	for (unsigned round = 0; round < 20; round++) {
		/* some on the wire, then more than the ring holds */
		post_writes(&p, &l, &r, 3, 8000, id);
		pair_progress(&p);
		post_writes(&p, &l, &r, 5 + 7 * round, 3000, id + 3);
		pair_progress(&p);
		post_writes(&p, &l, &r, 2 * round, 100, id + 8 + 7 * round);
		expect_wcs(&p, 8 + 9 * round, id, RY_WC_SUCCESS);
		id += 8 + 9 * round;
	}
	f.drop = 0;
	for (int i = 0; i < 2; i++)
		ck_assert_int_eq(ry__rail_set_fault(p.r[i], &f), 0);
	pair_spin(&p, 20);
	assert_idle(&p);
	region_put(&l);
	region_put(&r);
	pair_close(&p);
}
END_TEST

/* ERR flushes give the room back once polled; so does destroy for WRs
 * never completed, and RESET. */
START_TEST(test_cq_room_given_back)
{
	struct ry_test_pair p = {0};
	struct region l, r;
	struct ry_wc wc;

	ry__soft_test_short_pair(&p);
	region_get(&p, 0, &l, 4096, 5, ALL);
	region_get(&p, 1, &r, 4096, 6, ALL);
	post_writes(&p, &l, &r, 50, 64, 0);
	ck_assert_uint_eq(cq_sends(&p, 0), 50);
	ck_assert_int_eq(ry__rail_modify_qp(p.qp[0], RY_QPS_ERR, NULL), 0);
	/* in ERR a new WR completes at once, flushed: room for it too */
	post_writes(&p, &l, &r, 10, 64, 50);
	ck_assert_uint_eq(cq_sends(&p, 0), 60);
	for (unsigned i = 0; i < 60; i++) {
		pair_wait_wc(&p, 0, &wc, 2000);
		ck_assert_uint_eq(wc.wr_id, i);
	}
	ck_assert_uint_eq(cq_sends(&p, 0), 0);
	ck_assert(!pair_try_wc(&p, 0, &wc, 10));
	/* RESET drops what is posted without a completion */
	ck_assert_int_eq(ry__rail_modify_qp(p.qp[0], RY_QPS_RESET, NULL), 0);
	ck_assert_uint_eq(cq_sends(&p, 0), 0);
	ck_assert_ptr_eq(sqp(&p, 0)->sq, sqp(&p, 0)->sq_inline);
	pair_destroy_qp(&p, 0);
	pair_destroy_qp(&p, 1);
	/* destroy with 40 posted, none progressed: their room goes back */
	pair_create_qps(&p);
	pair_connect_qps(&p);
	post_writes(&p, &l, &r, 40, 64, 0);
	ck_assert_uint_eq(cq_sends(&p, 0), 40);
	pair_destroy_qp(&p, 0);
	ck_assert_uint_eq(cq_sends(&p, 0), 0);
	region_put(&l);
	region_put(&r);
	pair_close(&p);
}
END_TEST

/* Many QPs, each with its whole send queue posted and nothing polled until
 * all are: the CQ grew at post time, every completion is there. */
START_TEST(test_cq_never_overruns)
{
	enum { NQP = 24, DEPTH = 256 };
	struct ry_test_pair p = {0};
	struct ry_qp *q[2][NQP];
	struct region l, r;
	unsigned got = 0;
	uint64_t end;

	ry__soft_test_short_pair(&p);
	region_get(&p, 0, &l, 4096, 7, ALL);
	region_get(&p, 1, &r, 4096, 8, ALL);
	pair_destroy_qp(&p, 0);
	pair_destroy_qp(&p, 1);
	for (int k = 0; k < NQP; k++) {
		pair_create_qps(&p);
		pair_connect_qps(&p);
		q[0][k] = p.qp[0];
		q[1][k] = p.qp[1];
		post_writes(&p, &l, &r, DEPTH, 32, (uint64_t)k * DEPTH);
		ck_assert_uint_ge(to_srail(p.r[0])->cq0.size,
				  cq_sends(&p, 0) + 2 * RY__SOFT_SRQ_SIZE);
	}
	ck_assert_uint_eq(cq_sends(&p, 0), NQP * DEPTH);
	/* run them all to completion before polling anything */
	end = test_now_ms() + 20000;
	while (test_now_ms() < end) {
		unsigned out = 0;

		ry__rail_progress(p.r[0]);
		ry__rail_progress(p.r[1]);
		for (int k = 0; k < NQP; k++) {
			struct ry__soft_qp *s = to_sqp(q[0][k]);

			out += s->sq_tail - s->sq_head;
		}
		if (!out)
			break;
	}
	for (;;) {
		struct ry_wc wc[64];
		int n = pair_poll(&p, 0, wc, 64);

		if (n <= 0)
			break;
		for (int i = 0; i < n; i++)
			ck_assert_int_eq(wc[i].status, RY_WC_SUCCESS);
		got += (unsigned)n;
	}
	ck_assert_uint_eq(got, NQP * DEPTH);
	ck_assert_uint_eq(cq_sends(&p, 0), 0);
	for (int k = 0; k < NQP; k++) {
		p.qp[0] = q[0][k];
		p.qp[1] = q[1][k];
		pair_destroy_qp(&p, 0);
		pair_destroy_qp(&p, 1);
	}
	region_put(&l);
	region_put(&r);
	pair_close(&p);
}
END_TEST

START_TEST(test_read_state_on_first_read)
{
	struct ry_test_pair p = {0};

	ry__soft_test_short_pair(&p);
	ck_assert_ptr_null(sqp(&p, 1)->resp.rd);
	xfer_check(&p, RY_WR_RDMA_WRITE, 5000, 1);
	ck_assert_ptr_null(sqp(&p, 1)->resp.rd);
	xfer_check(&p, RY_WR_RDMA_READ, 50000, 2);
	ck_assert_ptr_nonnull(sqp(&p, 1)->resp.rd);
	/* kept across RESET, freed with the QP (ASan would say) */
	ck_assert_int_eq(ry__rail_modify_qp(p.qp[1], RY_QPS_RESET, NULL), 0);
	ck_assert_ptr_nonnull(sqp(&p, 1)->resp.rd);
	pair_close(&p);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("soft_mem");
	TCase *tc = tcase_create("mem");
	SRunner *sr;
	int failed;

	ry_test_provider = &ry__soft_test_provider;
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_ring_grows_and_goes);
	tcase_add_test(tc, test_grow_in_flight_lossy);
	tcase_add_test(tc, test_cq_room_given_back);
	tcase_add_test(tc, test_cq_never_overruns);
	tcase_add_test(tc, test_read_state_on_first_read);
	rail_same_bytes_add(tc);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
