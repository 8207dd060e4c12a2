// SPDX-License-Identifier: BSD-2-Clause
/*
 * The rail contract, provider-independent: every case drives two rails of
 * ry_test_provider through rails/rail.h only, so the same source runs
 * against the soft rail now and the verbs rail later.
 */
#include <check.h>
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "rail_conformance.h"

#define GUARD 64

struct region {
	uint8_t *buf; /* GUARD | len | GUARD */
	size_t len;
	struct ry_mr *mr;
};

static void region_get(struct ry_test_pair *p, int side, struct region *g,
		       size_t len, unsigned seed, unsigned access)
{
	g->len = len;
	g->buf = test_buf(len + 2 * GUARD, seed);
	ck_assert_int_eq(
	    ry_rail_reg_mr(p->pd[side], g->buf + GUARD, len, access, &g->mr),
	    0);
	ck_assert_ptr_eq(g->mr->addr, g->buf + GUARD);
}

static void region_put(struct region *g)
{
	ck_assert_int_eq(ry_rail_dereg_mr(g->mr), 0);
	free(g->buf);
}

static const unsigned ALL =
    RY_ACCESS_LOCAL_WRITE | RY_ACCESS_REMOTE_WRITE | RY_ACCESS_REMOTE_READ;

static struct ry_send_wr wr_make(enum ry_wr_opcode op, struct region *l,
				 struct region *r, size_t len, uint64_t id)
{
	struct ry_send_wr wr = {
	    .wr_id = id,
	    .opcode = op,
	    .sge = {.addr = (uintptr_t)l->mr->addr,
		    .length = (uint32_t)len,
		    .lkey = l->mr->lkey},
	    .remote_addr = r ? (uintptr_t)r->mr->addr : 0,
	    .rkey = r ? r->mr->rkey : 0,
	    .imm_data = 0xc0ffee00u + (uint32_t)id,
	};

	return wr;
}

void xfer_check(struct ry_test_pair *p, enum ry_wr_opcode op, size_t len,
		unsigned seed)
{
	struct region src, dst, ref;
	struct ry_send_wr wr;
	struct ry_wc wc;
	bool read = op == RY_WR_RDMA_READ;
	bool recv = op == RY_WR_SEND || op == RY_WR_SEND_IMM ||
		    op == RY_WR_RDMA_WRITE_IMM;

	/* data flows from the source side to the sink side */
	region_get(p, read ? 1 : 0, &src, len, seed, ALL);
	region_get(p, read ? 0 : 1, &dst, len, seed + 1000, ALL);
	ref.buf = malloc(len + 2 * GUARD);
	memcpy(ref.buf, dst.buf, len + 2 * GUARD);
	memcpy(ref.buf + GUARD, src.buf + GUARD, len);
	if (recv) {
		struct ry_recv_wr rw = {
		    .wr_id = 77,
		    .sge = {.addr = (uintptr_t)dst.mr->addr,
			    .length = (uint32_t)len,
			    .lkey = dst.mr->lkey},
		};

		ck_assert_int_eq(ry_rail_post_recv(p->r[1], &rw, 1), 0);
	}
	if (read)
		wr = wr_make(op, &dst, &src, len, 1);
	else
		wr = wr_make(op, &src, &dst, len, 1);
	ck_assert_int_eq(ry_rail_post_send(p->qp[0], &wr, 1), 0);
	pair_wait_wc(p, 0, &wc, 30000);
	ck_assert_msg(wc.status == RY_WC_SUCCESS, "%s len %zu: %s",
		      op == RY_WR_RDMA_READ ? "read" : "write/send", len,
		      ry_wc_status_str(wc.status));
	ck_assert_uint_eq(wc.wr_id, 1);
	ck_assert_uint_eq(wc.qp_num, p->qp[0]->qp_num);
	ck_assert_int_eq(wc.opcode,
			 read ? RY_WC_RDMA_READ
			 : op == RY_WR_RDMA_WRITE || op == RY_WR_RDMA_WRITE_IMM
			     ? RY_WC_RDMA_WRITE
			     : RY_WC_SEND);
	if (recv) {
		pair_wait_wc(p, 1, &wc, 30000);
		ck_assert_int_eq(wc.status, RY_WC_SUCCESS);
		ck_assert_uint_eq(wc.wr_id, 77);
		ck_assert_uint_eq(wc.byte_len, len);
		ck_assert_uint_eq(wc.qp_num, p->qp[1]->qp_num);
		if (op == RY_WR_SEND) {
			ck_assert_int_eq(wc.opcode, RY_WC_RECV);
			ck_assert(!(wc.flags & RY_WC_WITH_IMM));
		} else {
			ck_assert_int_eq(wc.opcode, op == RY_WR_SEND_IMM
							? RY_WC_RECV
							: RY_WC_RECV_RDMA_IMM);
			ck_assert(wc.flags & RY_WC_WITH_IMM);
			ck_assert_uint_eq(wc.imm_data, 0xc0ffee01u);
		}
	}
	ck_assert_msg(!memcmp(dst.buf, ref.buf, len + 2 * GUARD),
		      "data or guard bytes wrong after %zu bytes", len);
	free(ref.buf);
	region_put(&src);
	region_put(&dst);
}

/* ---- data integrity for every opcode and the edge sizes ---- */

static size_t sizes[16];
static unsigned n_sizes;

static void sizes_for(struct ry_test_pair *p)
{
	/* 84: IPv4 + UDP + soft header; harmless extra sizes elsewhere */
	size_t pm = p->mtu - 84;
	size_t s[] = {0,  1,	  p->mtu - 1, p->mtu,  p->mtu + 1, pm - 1,
		      pm, pm + 1, 3 * pm,     1 << 20, 8 << 20};

	n_sizes = sizeof(s) / sizeof(s[0]);
	memcpy(sizes, s, sizeof(s));
}

static void sizes_case(enum ry_wr_opcode op)
{
	struct ry_test_pair p;

	pair_open(&p);
	pair_connect(&p);
	sizes_for(&p);
	for (unsigned i = 0; i < n_sizes; i++)
		xfer_check(&p, op, sizes[i], i + 1);
	pair_close(&p);
}

START_TEST(test_write_sizes)
{
	sizes_case(RY_WR_RDMA_WRITE);
}
END_TEST
START_TEST(test_write_imm_sizes)
{
	sizes_case(RY_WR_RDMA_WRITE_IMM);
}
END_TEST
START_TEST(test_read_sizes)
{
	sizes_case(RY_WR_RDMA_READ);
}
END_TEST
START_TEST(test_send_sizes)
{
	sizes_case(RY_WR_SEND);
}
END_TEST
START_TEST(test_send_imm_sizes)
{
	sizes_case(RY_WR_SEND_IMM);
}
END_TEST

/* Many WRs of every kind in flight at once, completed in order. */
START_TEST(test_many_outstanding)
{
	enum { N = 64, LEN = 100000 };
	struct ry_test_pair p;
	struct region a, b;
	struct ry_wc wc;

	pair_open(&p);
	pair_connect(&p);
	region_get(&p, 0, &a, (size_t)N * LEN, 5, ALL);
	region_get(&p, 1, &b, (size_t)N * LEN, 6, ALL);
	for (int i = 0; i < N; i++) {
		struct ry_send_wr wr =
		    wr_make(i % 3 == 2 ? RY_WR_RDMA_READ : RY_WR_RDMA_WRITE, &a,
			    &b, LEN, (uint64_t)i);

		wr.sge.addr += (uint64_t)i * LEN;
		wr.remote_addr += (uint64_t)i * LEN;
		ck_assert_int_eq(ry_rail_post_send(p.qp[0], &wr, 1), 0);
	}
	for (int i = 0; i < N; i++) {
		pair_wait_wc(&p, 0, &wc, 30000);
		ck_assert_int_eq(wc.status, RY_WC_SUCCESS);
		ck_assert_uint_eq(wc.wr_id, (uint64_t)i);
	}
	ck_assert(!memcmp(a.buf + GUARD, b.buf + GUARD, (size_t)N * LEN));
	region_put(&a);
	region_put(&b);
	pair_close(&p);
}
END_TEST

/* ---- QP state machine ---- */

START_TEST(test_state_machine)
{
	struct ry_test_pair p;
	struct ry_qp_attr at = {.access = ALL};
	struct region a;
	struct ry_send_wr wr;

	pair_open(&p);
	pair_create_qps(&p);
	region_get(&p, 0, &a, 4096, 1, ALL);
	wr = wr_make(RY_WR_RDMA_WRITE, &a, &a, 16, 1);
	/* posting before RTS is refused */
	ck_assert_int_eq(ry_rail_post_send(p.qp[0], &wr, 1), -EINVAL);
	/* skipping states is refused */
	at.remote = p.qp[1]->local;
	ck_assert_int_eq(ry_rail_modify_qp(p.qp[0], RY_QPS_RTS, &at), -EINVAL);
	ck_assert_int_eq(ry_rail_modify_qp(p.qp[0], RY_QPS_RTR, &at), -EINVAL);
	ck_assert_int_eq(p.qp[0]->state, RY_QPS_RESET);
	ck_assert_int_eq(ry_rail_modify_qp(p.qp[0], RY_QPS_INIT, &at), 0);
	ck_assert_int_eq(ry_rail_post_send(p.qp[0], &wr, 1), -EINVAL);
	/* ERR from anywhere; RESET from ERR */
	ck_assert_int_eq(ry_rail_modify_qp(p.qp[0], RY_QPS_ERR, NULL), 0);
	ck_assert_int_eq(p.qp[0]->state, RY_QPS_ERR);
	ck_assert_int_eq(ry_rail_modify_qp(p.qp[0], RY_QPS_RESET, NULL), 0);
	ck_assert_int_eq(p.qp[0]->state, RY_QPS_RESET);
	region_put(&a);
	pair_close(&p);
}
END_TEST

/* Two QPs of one rail get distinct random QPNs and PSNs. */
START_TEST(test_random_qpn_psn)
{
	struct ry_test_pair p;
	struct ry_qp *q[8];
	struct ry_qp_init init = {.max_send_wr = 4};
	unsigned same_psn = 0;

	pair_open(&p);
	for (int i = 0; i < 8; i++)
		ck_assert_int_eq(ry_rail_create_qp(p.pd[0], &init, &q[i]), 0);
	for (int i = 0; i < 8; i++)
		for (int j = i + 1; j < 8; j++) {
			ck_assert_uint_ne(q[i]->qp_num, q[j]->qp_num);
			same_psn += q[i]->local.psn == q[j]->local.psn;
		}
	ck_assert_uint_lt(same_psn, 2);
	for (int i = 0; i < 8; i++)
		ck_assert_int_eq(ry_rail_destroy_qp(q[i]), 0);
	p.qp[0] = p.qp[1] = NULL;
	pair_close(&p);
}
END_TEST

/* In ERR every outstanding and every new WR completes flushed, in order. */
START_TEST(test_flush_on_err)
{
	struct ry_test_pair p;
	struct region a, b;
	struct ry_wc wc;

	pair_open(&p);
	pair_connect(&p);
	region_get(&p, 0, &a, 1 << 20, 1, ALL);
	region_get(&p, 1, &b, 1 << 20, 2, ALL);
	for (int i = 0; i < 20; i++) {
		struct ry_send_wr wr =
		    wr_make(RY_WR_RDMA_WRITE, &a, &b, 1 << 20, (uint64_t)i);

		ck_assert_int_eq(ry_rail_post_send(p.qp[0], &wr, 1), 0);
	}
	ck_assert_int_eq(ry_rail_modify_qp(p.qp[0], RY_QPS_ERR, NULL), 0);
	for (int i = 20; i < 25; i++) {
		struct ry_send_wr wr =
		    wr_make(RY_WR_RDMA_READ, &a, &b, 10, (uint64_t)i);

		ck_assert_int_eq(ry_rail_post_send(p.qp[0], &wr, 1), 0);
	}
	for (int i = 0; i < 25; i++) {
		pair_wait_wc(&p, 0, &wc, 5000);
		ck_assert_uint_eq(wc.wr_id, (uint64_t)i);
		ck_assert_int_eq(wc.status, RY_WC_FLUSHED);
	}
	ck_assert_int_eq(ry_rail_poll_cq(p.r[0], &wc, 1), 0);
	region_put(&a);
	region_put(&b);
	pair_close(&p);
}
END_TEST

/* ---- protection ---- */

static void access_case(unsigned dst_access, bool bad_rkey, int64_t shift,
			enum ry_wr_opcode op, bool dereg_first)
{
	struct ry_test_pair p;
	struct region a, b;
	struct ry_send_wr wr;
	struct ry_wc wc;
	uint8_t *snap;

	pair_open(&p);
	pair_connect(&p);
	region_get(&p, 0, &a, 65536, 1, ALL);
	region_get(&p, 1, &b, 65536, 2, dst_access);
	snap = malloc(65536 + 2 * GUARD);
	memcpy(snap, b.buf, 65536 + 2 * GUARD);
	wr = wr_make(op, &a, &b, 65536, 9);
	if (bad_rkey)
		wr.rkey ^= 0x5a5a5a5a;
	wr.remote_addr += (uint64_t)shift;
	if (dereg_first) {
		ck_assert_int_eq(ry_rail_dereg_mr(b.mr), 0);
		b.mr = NULL;
	}
	ck_assert_int_eq(ry_rail_post_send(p.qp[0], &wr, 1), 0);
	pair_wait_wc(&p, 0, &wc, 10000);
	ck_assert_msg(wc.status == RY_WC_REM_ACCESS, "got %s",
		      ry_wc_status_str(wc.status));
	ck_assert_uint_eq(wc.wr_id, 9);
	ck_assert_int_eq(p.qp[0]->state, RY_QPS_ERR);
	pair_spin(&p, 20);
	ck_assert(!memcmp(snap, b.buf, 65536 + 2 * GUARD));
	free(snap);
	region_put(&a);
	if (b.mr)
		region_put(&b);
	else
		free(b.buf);
	pair_close(&p);
}

START_TEST(test_bad_rkey)
{
	access_case(ALL, true, 0, RY_WR_RDMA_WRITE, 0);
}
END_TEST
START_TEST(test_out_of_bounds)
{
	access_case(ALL, false, 1, RY_WR_RDMA_WRITE, false);
}
END_TEST
START_TEST(test_below_region)
{
	access_case(ALL, false, -1, RY_WR_RDMA_WRITE, false);
}
END_TEST
START_TEST(test_no_remote_write)
{
	access_case(RY_ACCESS_LOCAL_WRITE | RY_ACCESS_REMOTE_READ, false, 0,
		    RY_WR_RDMA_WRITE, false);
}
END_TEST
START_TEST(test_no_remote_read)
{
	access_case(RY_ACCESS_LOCAL_WRITE | RY_ACCESS_REMOTE_WRITE, false, 0,
		    RY_WR_RDMA_READ, false);
}
END_TEST
START_TEST(test_read_bad_rkey)
{
	access_case(ALL, true, 0, RY_WR_RDMA_READ, false);
}
END_TEST
START_TEST(test_dereg_revokes)
{
	access_case(ALL, false, 0, RY_WR_RDMA_WRITE, true);
}
END_TEST

START_TEST(test_bad_lkey)
{
	struct ry_test_pair p;
	struct region a, b;
	struct ry_send_wr wr;
	struct ry_wc wc;

	pair_open(&p);
	pair_connect(&p);
	region_get(&p, 0, &a, 4096, 1, ALL);
	region_get(&p, 1, &b, 4096, 2, ALL);
	wr = wr_make(RY_WR_RDMA_WRITE, &a, &b, 4096, 3);
	wr.sge.lkey ^= 0xffff;
	ck_assert_int_eq(ry_rail_post_send(p.qp[0], &wr, 1), 0);
	pair_wait_wc(&p, 0, &wc, 5000);
	ck_assert_int_eq(wc.status, RY_WC_LOC_PROT);
	ck_assert_int_eq(p.qp[0]->state, RY_QPS_ERR);
	region_put(&a);
	region_put(&b);
	pair_close(&p);
}
END_TEST

/* ---- receiver not ready ---- */

START_TEST(test_rnr_recovers)
{
	struct ry_test_pair p;
	struct region a, b;
	struct ry_send_wr wr;
	struct ry_recv_wr rw;
	struct ry_wc wc;

	pair_open(&p);
	pair_connect(&p);
	region_get(&p, 0, &a, 5000, 1, ALL);
	region_get(&p, 1, &b, 5000, 2, ALL);
	wr = wr_make(RY_WR_SEND, &a, NULL, 5000, 4);
	ck_assert_int_eq(ry_rail_post_send(p.qp[0], &wr, 1), 0);
	pair_spin(&p, 3); /* a few RNR NAKs, fewer than rnr_retry */
	ck_assert_int_eq(ry_rail_poll_cq(p.r[0], &wc, 1), 0);
	rw = (struct ry_recv_wr){
	    .wr_id = 8, .sge = {(uintptr_t)b.mr->addr, 5000, b.mr->lkey}};
	ck_assert_int_eq(ry_rail_post_recv(p.r[1], &rw, 1), 0);
	pair_wait_wc(&p, 0, &wc, 5000);
	ck_assert_int_eq(wc.status, RY_WC_SUCCESS);
	pair_wait_wc(&p, 1, &wc, 5000);
	ck_assert_int_eq(wc.status, RY_WC_SUCCESS);
	ck_assert_uint_eq(wc.byte_len, 5000);
	ck_assert(!memcmp(a.mr->addr, b.mr->addr, 5000));
	region_put(&a);
	region_put(&b);
	pair_close(&p);
}
END_TEST

START_TEST(test_rnr_exceeded)
{
	struct ry_test_pair p;
	struct region a;
	struct ry_wc wc;

	pair_open(&p);
	p.attr_set = true;
	p.attr = (struct ry_qp_attr){.access = ALL,
				     .ack_timeout_us = 10000,
				     .retry_cnt = 3,
				     .rnr_retry = 2,
				     .min_rnr_timer_us = 1000,
				     .max_rd_atomic = 1};
	pair_connect(&p);
	region_get(&p, 0, &a, 100, 1, ALL);
	for (int i = 0; i < 3; i++) {
		struct ry_send_wr wr =
		    wr_make(i == 1 ? RY_WR_RDMA_WRITE_IMM : RY_WR_SEND, &a, &a,
			    100, (uint64_t)i);

		ck_assert_int_eq(ry_rail_post_send(p.qp[0], &wr, 1), 0);
	}
	pair_wait_wc(&p, 0, &wc, 5000);
	ck_assert_int_eq(wc.status, RY_WC_RNR_RETRY_EXCEEDED);
	ck_assert_uint_eq(wc.wr_id, 0);
	for (int i = 1; i < 3; i++) {
		pair_wait_wc(&p, 0, &wc, 5000);
		ck_assert_int_eq(wc.status, RY_WC_FLUSHED);
		ck_assert_uint_eq(wc.wr_id, (uint64_t)i);
	}
	ck_assert_int_eq(p.qp[0]->state, RY_QPS_ERR);
	region_put(&a);
	pair_close(&p);
}
END_TEST

/* A receive too small for the SEND: local length error on the receiver,
 * remote invalid request on the sender. */
START_TEST(test_recv_too_small)
{
	struct ry_test_pair p;
	struct region a, b;
	struct ry_send_wr wr;
	struct ry_recv_wr rw;
	struct ry_wc wc;

	pair_open(&p);
	pair_connect(&p);
	region_get(&p, 0, &a, 8192, 1, ALL);
	region_get(&p, 1, &b, 8192, 2, ALL);
	rw = (struct ry_recv_wr){
	    .wr_id = 8, .sge = {(uintptr_t)b.mr->addr, 100, b.mr->lkey}};
	ck_assert_int_eq(ry_rail_post_recv(p.r[1], &rw, 1), 0);
	wr = wr_make(RY_WR_SEND, &a, NULL, 8192, 4);
	ck_assert_int_eq(ry_rail_post_send(p.qp[0], &wr, 1), 0);
	pair_wait_wc(&p, 0, &wc, 5000);
	ck_assert_int_eq(wc.status, RY_WC_REM_INVALID_REQ);
	pair_wait_wc(&p, 1, &wc, 5000);
	ck_assert_int_eq(wc.status, RY_WC_LOC_LEN);
	region_put(&a);
	region_put(&b);
	pair_close(&p);
}
END_TEST

/* ---- link and fd ---- */

START_TEST(test_link_events)
{
	struct ry_test_pair p;
	struct ry_rail_event ev;
	struct ry_rail_attr a;

	if (!ry_test_provider->has_faults)
		return;
	pair_open(&p);
	ck_assert_int_eq(ry_rail_get_event(p.r[0], &ev), -EAGAIN);
	ck_assert_int_eq(ry_rail_set_link(p.r[0], RY_LINK_DOWN), 0);
	ck_assert_int_eq(ry_rail_get_event(p.r[0], &ev), 0);
	ck_assert_int_eq(ev.type, RY_RAIL_EV_LINK_DOWN);
	ck_assert_int_eq(ry_rail_query(p.r[0], &a), 0);
	ck_assert_int_eq(a.link, RY_LINK_DOWN);
	ck_assert_int_eq(ry_rail_set_link(p.r[0], RY_LINK_UP), 0);
	ck_assert_int_eq(ry_rail_get_event(p.r[0], &ev), 0);
	ck_assert_int_eq(ev.type, RY_RAIL_EV_LINK_UP);
	ck_assert_int_eq(ry_rail_get_event(p.r[0], &ev), -EAGAIN);
	p.qp[0] = p.qp[1] = NULL;
	pair_close(&p);
}
END_TEST

/*
 * Event-driven progress: a rail is progressed only when its fd is readable
 * (after the post itself).  A transfer must never stall waiting for an fd
 * that does not fire, and the fd is calm once the completion is taken.
 */
static void fd_driven(enum ry_wr_opcode op, size_t len)
{
	struct ry_test_pair p;
	struct region a, b;
	struct ry_send_wr wr;
	struct ry_wc wc;
	struct pollfd pfd;

	pair_open(&p);
	pair_connect(&p);
	region_get(&p, 0, &a, len, 1, ALL);
	region_get(&p, 1, &b, len, 2, ALL);
	if (op == RY_WR_SEND) {
		struct ry_recv_wr rw = {
		    .wr_id = 5,
		    .sge = {(uintptr_t)b.mr->addr, (uint32_t)len, b.mr->lkey},
		};

		ck_assert_int_eq(ry_rail_post_recv(p.r[1], &rw, 1), 0);
	}
	wr = wr_make(op, &a, &b, len, 1);
	ck_assert_int_eq(ry_rail_post_send(p.qp[0], &wr, 1), 0);
	ck_assert_int_eq(ry_rail_progress(p.r[0]), 0);
	for (;;) {
		struct pollfd fds[2] = {
		    {.fd = ry_rail_fd(p.r[0]), .events = POLLIN},
		    {.fd = ry_rail_fd(p.r[1]), .events = POLLIN},
		};

		ck_assert_int_ge(fds[0].fd, 0);
		if (ry_rail_poll_cq(p.r[0], &wc, 1) == 1)
			break;
		ck_assert_msg(poll(fds, 2, 2000) > 0, "stalled: no fd fired");
		for (int i = 0; i < 2; i++)
			if (fds[i].revents)
				ck_assert_int_eq(ry_rail_progress(p.r[i]), 0);
	}
	ck_assert_int_eq(wc.status, RY_WC_SUCCESS);
	ck_assert(!memcmp(a.mr->addr, b.mr->addr, len));
	pair_spin(&p, 5);
	while (ry_rail_poll_cq(p.r[1], &wc, 1) == 1)
		;
	ck_assert_int_eq(ry_rail_poll_cq(p.r[0], &wc, 1), 0);
	pfd = (struct pollfd){.fd = ry_rail_fd(p.r[0]), .events = POLLIN};
	ck_assert_int_eq(poll(&pfd, 1, 0), 0);
	region_put(&a);
	region_put(&b);
	pair_close(&p);
}

START_TEST(test_fd_readable)
{
	fd_driven(RY_WR_RDMA_WRITE, 4096);
	fd_driven(RY_WR_RDMA_WRITE, 8 << 20);
	fd_driven(RY_WR_RDMA_READ, 8 << 20);
	fd_driven(RY_WR_SEND, 1 << 20);
}
END_TEST

/* Two QPs on each rail: one CQ and one SRQ per rail serve both, and each
 * completion names its QP. */
START_TEST(test_two_qps_share_cq_srq)
{
	struct ry_test_pair p, q;
	struct region a, b;
	struct ry_wc wc;
	unsigned seen[2] = {0, 0};

	pair_open(&p);
	pair_connect(&p);
	q = p; /* same rails and PDs, second pair of QPs */
	pair_create_qps(&q);
	pair_connect_qps(&q);
	region_get(&p, 0, &a, 2 * 8192, 1, ALL);
	region_get(&p, 1, &b, 4 * 8192, 2, ALL);
	for (int i = 0; i < 4; i++) {
		struct ry_recv_wr rw = {
		    .wr_id = 100 + (uint64_t)i,
		    .sge = {(uintptr_t)b.mr->addr + (uint64_t)i * 8192, 8192,
			    b.mr->lkey},
		};

		ck_assert_int_eq(ry_rail_post_recv(p.r[1], &rw, 1), 0);
	}
	for (int i = 0; i < 4; i++) {
		struct ry_send_wr wr =
		    wr_make(RY_WR_SEND, &a, NULL, 8192, (uint64_t)i);

		wr.sge.addr += (uint64_t)(i & 1) * 8192;
		ck_assert_int_eq(
		    ry_rail_post_send(i & 1 ? q.qp[0] : p.qp[0], &wr, 1), 0);
	}
	for (int i = 0; i < 4; i++) {
		pair_wait_wc(&p, 0, &wc, 5000);
		ck_assert_int_eq(wc.status, RY_WC_SUCCESS);
		ck_assert_uint_eq(wc.qp_num,
				  (wc.wr_id & 1 ? q.qp[0] : p.qp[0])->qp_num);
	}
	for (int i = 0; i < 4; i++) {
		pair_wait_wc(&p, 1, &wc, 5000);
		ck_assert_int_eq(wc.status, RY_WC_SUCCESS);
		ck_assert_uint_eq(wc.byte_len, 8192);
		ck_assert(wc.qp_num == p.qp[1]->qp_num ||
			  wc.qp_num == q.qp[1]->qp_num);
		seen[wc.qp_num == q.qp[1]->qp_num]++;
		/* every receive buffer holds one whole message */
		ck_assert(!memcmp(
		    b.mr->addr + (wc.wr_id - 100) * 8192,
		    a.mr->addr + (wc.qp_num == q.qp[1]->qp_num) * 8192, 8192));
	}
	ck_assert_uint_eq(seen[0], 2);
	ck_assert_uint_eq(seen[1], 2);
	for (int i = 0; i < 2; i++)
		ck_assert_int_eq(ry_rail_destroy_qp(q.qp[i]), 0);
	region_put(&a);
	region_put(&b);
	pair_close(&p);
}
END_TEST

void rail_conformance_add(Suite *s)
{
	TCase *tc = tcase_create("contract");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_state_machine);
	tcase_add_test(tc, test_random_qpn_psn);
	tcase_add_test(tc, test_write_sizes);
	tcase_add_test(tc, test_write_imm_sizes);
	tcase_add_test(tc, test_read_sizes);
	tcase_add_test(tc, test_send_sizes);
	tcase_add_test(tc, test_send_imm_sizes);
	tcase_add_test(tc, test_many_outstanding);
	tcase_add_test(tc, test_two_qps_share_cq_srq);
	tcase_add_test(tc, test_flush_on_err);
	tcase_add_test(tc, test_bad_rkey);
	tcase_add_test(tc, test_out_of_bounds);
	tcase_add_test(tc, test_below_region);
	tcase_add_test(tc, test_no_remote_write);
	tcase_add_test(tc, test_no_remote_read);
	tcase_add_test(tc, test_read_bad_rkey);
	tcase_add_test(tc, test_dereg_revokes);
	tcase_add_test(tc, test_bad_lkey);
	tcase_add_test(tc, test_rnr_recovers);
	tcase_add_test(tc, test_rnr_exceeded);
	tcase_add_test(tc, test_recv_too_small);
	tcase_add_test(tc, test_link_events);
	tcase_add_test(tc, test_fd_readable);
	suite_add_tcase(s, tc);
}
