// SPDX-License-Identifier: BSD-2-Clause
/*
 * The verbs rail against the rail contract, on real devices: two rails
 * (two RDMA devices, e.g. the soft-RoCE pair rxe_a0 and rxe_b0 on a veth
 * pair, or two HCA ports cabled together) driven only through
 * rails/rail.h, with their QPs connected in-process by exchanging
 * ry_qp_endpoint as the manager does over its control channel.
 *
 * The file has three parts, so the cases can move into the shared
 * conformance suite (tests/soft/rail_conformance.c) unchanged:
 *   1. the provider: how to configure the two rails, when to skip;
 *   2. the fixture: a pair of rails with a connected QP each;
 *   3. the cases: rails/rail.h only, no provider header.
 *
 * Without an RDMA device it exits 77 with a plain message (the host);
 * tests/hw/hw_qemu_rxe.sh runs it in a QEMU guest where rxe exists.
 * Devices: RY_HW_DEV_A, RY_HW_DEV_B (default rxe_a0, rxe_b0), port 1.
 */
#include <check.h>
#include <errno.h>
#include <poll.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>

#include <railyard/railyard.h>

#include "rails/rail.h"

/* ---- 1. the provider ---- */

struct provider {
	const char *name;
	enum ry_provider id;
	void (*config)(struct ry_rail_config *cfg, int idx);
	/* NULL when the suite can run here, else why not */
	const char *(*cannot_run)(void);
	/* Pull (plugged false) or put back rail idx's cable; -EOPNOTSUPP
	 * when this setup cannot. */
	int (*cable)(int idx, bool plugged);
	/* Drop everything rail idx sends, the link staying up (a silent
	 * failure: no event, only timeouts tell); -EOPNOTSUPP if it cannot. */
	int (*blackhole)(int idx, bool on);
};

static const char *dev_name(int idx)
{
	const char *e = getenv(idx ? "RY_HW_DEV_B" : "RY_HW_DEV_A");

	return e && *e ? e : idx ? "rxe_b0" : "rxe_a0";
}

static void verbs_config(struct ry_rail_config *cfg, int idx)
{
	memset(cfg, 0, sizeof(*cfg));
	snprintf(cfg->name, sizeof(cfg->name), "hw%d", idx);
	cfg->provider = RY_PROVIDER_VERBS;
	snprintf(cfg->network, sizeof(cfg->network), "hw");
	snprintf(cfg->device, sizeof(cfg->device), "%s", dev_name(idx));
	cfg->port = 1;
	cfg->gid_index = -1;
	cfg->weight = 1;
}

static const char *verbs_cannot_run(void)
{
	static char why[256];

	if (!ry__rail_ops(RY_PROVIDER_VERBS))
		return "railyard was built without the verbs rail (RY_WITH_VERBS=OFF)";
	if (access("/sys/class/infiniband", F_OK))
		return "no RDMA device here (/sys/class/infiniband is missing); "
		       "tests/hw/hw_qemu_rxe.sh runs this suite in a QEMU guest with soft-RoCE";
	for (int i = 0; i < 2; i++) {
		char path[128];

		snprintf(path, sizeof(path), "/sys/class/infiniband/%s",
			 dev_name(i));
		if (access(path, F_OK)) {
			snprintf(why, sizeof(why),
				 "no RDMA device %s here (set RY_HW_DEV_A and RY_HW_DEV_B to two connected devices)",
				 dev_name(i));
			return why;
		}
	}
	return NULL;
}

static int run(char **argv)
{
	int status;
	pid_t pid;

	if (posix_spawnp(&pid, argv[0], NULL, NULL, argv, environ))
		return -errno;
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status))
		return -EIO;
	return 0;
}

static const char *netdev(int idx)
{
	const char *dev = getenv(idx ? "RY_HW_NETDEV_B" : "RY_HW_NETDEV_A");

	return dev && *dev ? dev : NULL;
}

/* The cable of a RoCE port is its netdev: RY_HW_NETDEV_A/B name them. */
static int verbs_cable(int idx, bool plugged)
{
	char *argv[] = { "ip", "link", "set", (char *)netdev(idx),
			 plugged ? "up" : "down", NULL };

	return argv[3] ? run(argv) : -EOPNOTSUPP;
}

/* netem on the netdev: the port stays ACTIVE, its packets vanish. */
static int verbs_blackhole(int idx, bool on)
{
	char *add[] = { "tc", "qdisc", "add", "dev", (char *)netdev(idx),
			"root", "netem", "loss", "100%", NULL };
	char *del[] = { "tc", "qdisc", "del", "dev", (char *)netdev(idx),
			"root", NULL };

	if (!netdev(idx))
		return -EOPNOTSUPP;
	return run(on ? add : del);
}

static const struct provider verbs_provider = {
	.name = "verbs",
	.id = RY_PROVIDER_VERBS,
	.config = verbs_config,
	.cannot_run = verbs_cannot_run,
	.cable = verbs_cable,
	.blackhole = verbs_blackhole,
};

static const struct provider *provider = &verbs_provider;

/* ---- 2. the fixture ---- */

#define GUARD 64
#define MIB (1u << 20)

static const unsigned ALL = RY_ACCESS_LOCAL_WRITE | RY_ACCESS_REMOTE_WRITE |
			    RY_ACCESS_REMOTE_READ;

struct pair {
	struct ry_rail *r[2];
	struct ry_pd *pd[2];
	struct ry_qp *qp[2];
	struct ry_qp_attr attr;     /* RTS attributes of both sides */
	uint32_t mtu;               /* path MTU: min of both rails */
};

struct region {
	uint8_t *buf;               /* GUARD | len | GUARD */
	size_t len;
	struct ry_mr *mr;
};

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void pair_open(struct pair *p)
{
	memset(p, 0, sizeof(*p));
	p->mtu = UINT32_MAX;
	for (int i = 0; i < 2; i++) {
		struct ry_rail_config cfg;
		struct ry_rail_attr a;

		provider->config(&cfg, i);
		ck_assert_int_eq(ry__rail_open(&cfg, &p->r[i]), 0);
		ck_assert_int_eq(ry_rail_alloc_pd(p->r[i], &p->pd[i]), 0);
		ck_assert_int_eq(ry_rail_query(p->r[i], &a), 0);
		ck_assert_int_eq(a.link, RY_LINK_UP);
		ck_assert_uint_gt(a.mtu, 0);
		if (a.mtu < p->mtu)
			p->mtu = a.mtu;
	}
	p->attr = (struct ry_qp_attr){
		.access = ALL,
		.ack_timeout_us = 100000,
		.retry_cnt = 5,
		.rnr_retry = 5,
		.min_rnr_timer_us = 1000,
		.max_rd_atomic = 16,
	};
}

static void qp_create(struct pair *p, int i)
{
	struct ry_qp_init init = { .max_send_wr = 64 };

	ck_assert_int_eq(ry_rail_create_qp(p->pd[i], &init, &p->qp[i]), 0);
	ck_assert_int_eq(p->qp[i]->state, RY_QPS_RESET);
}

/* What the manager does with the endpoints it exchanged. */
static int qp_connect(struct pair *p, int i)
{
	struct ry_qp_attr a = p->attr;
	int rc;

	a.remote = p->qp[!i]->local;
	a.mtu = p->mtu;
	rc = ry_rail_modify_qp(p->qp[i], RY_QPS_INIT, &a);
	if (!rc)
		rc = ry_rail_modify_qp(p->qp[i], RY_QPS_RTR, &a);
	if (!rc)
		rc = ry_rail_modify_qp(p->qp[i], RY_QPS_RTS, &a);
	return rc;
}

static void pair_connect(struct pair *p)
{
	qp_create(p, 0);
	qp_create(p, 1);
	ck_assert_int_eq(qp_connect(p, 0), 0);
	ck_assert_int_eq(qp_connect(p, 1), 0);
	ck_assert_int_eq(p->qp[0]->state, RY_QPS_RTS);
	ck_assert_int_eq(p->qp[1]->state, RY_QPS_RTS);
}

static void pair_progress(struct pair *p)
{
	for (int i = 0; i < 2; i++)
		ck_assert_int_eq(ry_rail_progress(p->r[i]), 0);
}

/* Wait for one completion on rail i: the way the manager does, sleeping
 * on the rail fds and running progress when they fire. */
static bool pair_try_wc(struct pair *p, int i, struct ry_wc *wc,
			int timeout_ms)
{
	uint64_t end = now_ms() + (uint64_t)timeout_ms;

	for (;;) {
		struct pollfd fds[2] = {
			{ .fd = ry_rail_fd(p->r[0]), .events = POLLIN },
			{ .fd = ry_rail_fd(p->r[1]), .events = POLLIN },
		};

		pair_progress(p);
		if (ry_rail_poll_cq(p->r[i], wc, 1) == 1)
			return true;
		if (now_ms() >= end)
			return false;
		poll(fds, 2, 20);
	}
}

static void pair_wait_wc(struct pair *p, int i, struct ry_wc *wc,
			 int timeout_ms)
{
	ck_assert_msg(pair_try_wc(p, i, wc, timeout_ms),
		      "no completion on rail %d within %d ms", i, timeout_ms);
}

/* Destroy after drain: every WR the QP owes is reported first. */
static void qp_drain_destroy(struct pair *p, int i)
{
	uint64_t end = now_ms() + 10000;
	struct ry_wc wc;
	int rc;

	if (!p->qp[i])
		return;
	for (;;) {
		uint64_t t = now_ms();

		rc = ry_rail_destroy_qp(p->qp[i]);
		/* the manager's progress loop calls this: it must not block
		 * (rxe's ibv_destroy_qp does for seconds while the link is
		 * down) */
		ck_assert_msg(now_ms() - t < 500, "destroy_qp blocked %llu ms",
			      (unsigned long long)(now_ms() - t));
		if (rc != -EBUSY)
			break;
		ck_assert_msg(now_ms() < end, "QP never drained");
		pair_try_wc(p, i, &wc, 50);
	}
	ck_assert_int_eq(rc, 0);
	p->qp[i] = NULL;
}

static void pair_close(struct pair *p)
{
	for (int i = 0; i < 2; i++)
		qp_drain_destroy(p, i);
	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(ry_rail_dealloc_pd(p->pd[i]), 0);
		ry_rail_close(p->r[i]);
	}
}

static void fill(uint8_t *b, size_t len, unsigned seed)
{
	uint32_t x = seed * 2654435761u + 1;

	for (size_t i = 0; i < len; i++) {
		x = x * 1103515245u + 12345u;
		b[i] = (uint8_t)(x >> 16);
	}
}

static void region_get(struct pair *p, int side, struct region *g, size_t len,
		       unsigned seed, unsigned access)
{
	g->len = len;
	g->buf = aligned_alloc(4096, (len + 2 * GUARD + 4095) & ~(size_t)4095);
	ck_assert_ptr_nonnull(g->buf);
	fill(g->buf, len + 2 * GUARD, seed);
	ck_assert_int_eq(ry_rail_reg_mr(p->pd[side], g->buf + GUARD,
					len ? len : 1, access, &g->mr), 0);
	ck_assert_ptr_eq(g->mr->addr, g->buf + GUARD);
}

static void region_put(struct region *g)
{
	ck_assert_int_eq(ry_rail_dereg_mr(g->mr), 0);
	free(g->buf);
}

static struct ry_send_wr wr_make(enum ry_wr_opcode op, struct region *l,
				 struct region *r, size_t len, uint64_t id)
{
	return (struct ry_send_wr){
		.wr_id = id,
		.opcode = op,
		.sge = { .addr = (uintptr_t)l->mr->addr,
			 .length = (uint32_t)len,
			 .lkey = l->mr->lkey },
		.remote_addr = r ? (uintptr_t)r->mr->addr : 0,
		.rkey = r ? r->mr->rkey : 0,
		.imm_data = 0xc0ffee00u + (uint32_t)id,
	};
}

/* ---- 3. the cases ---- */

/* One WR from rail 0's QP, data verified byte for byte, guards intact. */
static void xfer_check(struct pair *p, enum ry_wr_opcode op, size_t len,
		       unsigned seed)
{
	bool read = op == RY_WR_RDMA_READ;
	bool recv = op == RY_WR_SEND || op == RY_WR_SEND_IMM ||
		    op == RY_WR_RDMA_WRITE_IMM;
	struct region src, dst;
	struct ry_send_wr wr;
	struct ry_wc wc;
	uint8_t *ref;

	/* data flows from the source side to the sink side */
	region_get(p, read ? 1 : 0, &src, len, seed, ALL);
	region_get(p, read ? 0 : 1, &dst, len, seed + 1000, ALL);
	ref = malloc(len + 2 * GUARD);
	memcpy(ref, dst.buf, len + 2 * GUARD);
	memcpy(ref + GUARD, src.buf + GUARD, len);
	if (recv) {
		struct ry_recv_wr rw = {
			.wr_id = 77,
			.sge = { .addr = (uintptr_t)dst.mr->addr,
				 .length = (uint32_t)len,
				 .lkey = dst.mr->lkey },
		};

		ck_assert_int_eq(ry_rail_post_recv(p->r[1], &rw, 1), 0);
	}
	wr = read ? wr_make(op, &dst, &src, len, 1) :
		    wr_make(op, &src, &dst, len, 1);
	ck_assert_int_eq(ry_rail_post_send(p->qp[0], &wr, 1), 0);
	pair_wait_wc(p, 0, &wc, 30000);
	ck_assert_msg(wc.status == RY_WC_SUCCESS, "op %d len %zu: %s", op, len,
		      ry_wc_status_str(wc.status));
	ck_assert_uint_eq(wc.wr_id, 1);
	ck_assert_uint_eq(wc.qp_num, p->qp[0]->qp_num);
	ck_assert_int_eq(wc.opcode, read ? RY_WC_RDMA_READ :
				    op == RY_WR_RDMA_WRITE ||
						    op == RY_WR_RDMA_WRITE_IMM ?
					     RY_WC_RDMA_WRITE :
					     RY_WC_SEND);
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
			ck_assert_int_eq(wc.opcode, op == RY_WR_SEND_IMM ?
						    RY_WC_RECV :
						    RY_WC_RECV_RDMA_IMM);
			ck_assert(wc.flags & RY_WC_WITH_IMM);
			ck_assert_uint_eq(wc.imm_data, 0xc0ffee01u);
		}
	}
	ck_assert_msg(!memcmp(dst.buf, ref, len + 2 * GUARD),
		      "op %d: data or guard bytes wrong after %zu bytes", op,
		      len);
	free(ref);
	region_put(&src);
	region_put(&dst);
}

static void sizes_case(enum ry_wr_opcode op)
{
	struct pair p;

	pair_open(&p);
	pair_connect(&p);
	{
		size_t sizes[] = { 0, 1, 4096, p.mtu - 1, p.mtu, p.mtu + 1,
				   MIB };

		for (unsigned i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++)
			xfer_check(&p, op, sizes[i], i + 1);
	}
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

/* Endpoints as exchanged: a QPN and a random nonzero 24-bit PSN. */
START_TEST(test_connect_endpoints)
{
	static const uint8_t zero[16];
	struct pair p;

	pair_open(&p);
	pair_connect(&p);
	for (int i = 0; i < 2; i++) {
		const struct ry_qp_endpoint *e = &p.qp[i]->local;

		ck_assert_uint_eq(e->qpn, p.qp[i]->qp_num);
		ck_assert_uint_ne(e->qpn, 0);
		ck_assert_uint_le(e->qpn, 0xffffff);
		ck_assert_uint_ne(e->psn, 0);
		ck_assert_uint_le(e->psn, 0xffffff);
		ck_assert_uint_ge(e->mtu, p.mtu);
		ck_assert(memcmp(e->gid, zero, 16) || e->lid);
	}
	pair_close(&p);
}
END_TEST

/* Distinct QPNs and random PSNs for QPs of one rail. */
START_TEST(test_random_qpn_psn)
{
	struct ry_qp_init init = { .max_send_wr = 4 };
	struct ry_qp *q[8];
	unsigned same_psn = 0;
	struct pair p;

	pair_open(&p);
	for (int i = 0; i < 8; i++)
		ck_assert_int_eq(ry_rail_create_qp(p.pd[0], &init, &q[i]), 0);
	for (int i = 0; i < 8; i++) {
		ck_assert_uint_ne(q[i]->local.psn, 0);
		for (int j = i + 1; j < 8; j++) {
			ck_assert_uint_ne(q[i]->qp_num, q[j]->qp_num);
			same_psn += q[i]->local.psn == q[j]->local.psn;
		}
	}
	ck_assert_uint_lt(same_psn, 2);
	for (int i = 0; i < 8; i++)
		ck_assert_int_eq(ry_rail_destroy_qp(q[i]), 0);
	pair_close(&p);
}
END_TEST

/* Many QPs, each allowed a full send queue, on one CQ: the rail makes
 * room (a CQ overrun is fatal to every QP of the rail), and traffic
 * flows while they exist. */
START_TEST(test_many_qps_one_cq)
{
	enum { N = 48 };
	struct ry_qp_init init = { .max_send_wr = 128 };
	struct ry_qp *q[N];
	struct pair p;

	pair_open(&p);
	for (int i = 0; i < N; i++)
		ck_assert_int_eq(ry_rail_create_qp(p.pd[0], &init, &q[i]), 0);
	pair_connect(&p);
	xfer_check(&p, RY_WR_RDMA_WRITE, MIB, 1);
	xfer_check(&p, RY_WR_SEND, 4096, 2);
	for (int i = 0; i < N; i++)
		ck_assert_int_eq(ry_rail_destroy_qp(q[i]), 0);
	xfer_check(&p, RY_WR_RDMA_READ, 4096, 3);
	pair_close(&p);
}
END_TEST

START_TEST(test_state_machine)
{
	struct ry_qp_attr at;
	struct region a;
	struct ry_send_wr wr;
	struct pair p;
	uint32_t psn;

	pair_open(&p);
	qp_create(&p, 0);
	qp_create(&p, 1);
	at = p.attr;
	at.remote = p.qp[1]->local;
	at.mtu = p.mtu;
	region_get(&p, 0, &a, 4096, 1, ALL);
	wr = wr_make(RY_WR_RDMA_WRITE, &a, &a, 16, 1);
	/* posting before RTS is refused */
	ck_assert_int_eq(ry_rail_post_send(p.qp[0], &wr, 1), -EINVAL);
	/* skipping states is refused, and changes nothing */
	ck_assert_int_eq(ry_rail_modify_qp(p.qp[0], RY_QPS_RTS, &at), -EINVAL);
	ck_assert_int_eq(ry_rail_modify_qp(p.qp[0], RY_QPS_RTR, &at), -EINVAL);
	ck_assert_int_eq(p.qp[0]->state, RY_QPS_RESET);
	ck_assert_int_eq(ry_rail_modify_qp(p.qp[0], RY_QPS_INIT, &at), 0);
	ck_assert_int_eq(ry_rail_post_send(p.qp[0], &wr, 1), -EINVAL);
	/* retry_cnt 7 is "forever" on some HCAs: refused */
	ck_assert_int_eq(ry_rail_modify_qp(p.qp[0], RY_QPS_RTR, &at), 0);
	at.retry_cnt = 7;
	ck_assert_int_eq(ry_rail_modify_qp(p.qp[0], RY_QPS_RTS, &at), -EINVAL);
	at.retry_cnt = 3;
	at.rnr_retry = 7;
	ck_assert_int_eq(ry_rail_modify_qp(p.qp[0], RY_QPS_RTS, &at), -EINVAL);
	ck_assert_int_eq(p.qp[0]->state, RY_QPS_RTR);
	/* ERR from anywhere; RESET from ERR renews the PSN */
	psn = p.qp[0]->local.psn;
	ck_assert_int_eq(ry_rail_modify_qp(p.qp[0], RY_QPS_ERR, NULL), 0);
	ck_assert_int_eq(p.qp[0]->state, RY_QPS_ERR);
	ck_assert_int_eq(ry_rail_modify_qp(p.qp[0], RY_QPS_RESET, NULL), 0);
	ck_assert_int_eq(p.qp[0]->state, RY_QPS_RESET);
	ck_assert_uint_ne(p.qp[0]->local.psn, 0);
	ck_assert_uint_ne(p.qp[0]->local.psn, psn);
	region_put(&a);
	pair_close(&p);
}
END_TEST

/* A bad rkey: REM_ACCESS for that WR, the QP in ERR, the rest FLUSHED in
 * order, and the target untouched. */
START_TEST(test_bad_rkey)
{
	struct region a, b;
	struct ry_wc wc;
	struct pair p;
	uint8_t *snap;

	pair_open(&p);
	pair_connect(&p);
	region_get(&p, 0, &a, 65536, 1, ALL);
	region_get(&p, 1, &b, 65536, 2, ALL);
	snap = malloc(65536 + 2 * GUARD);
	memcpy(snap, b.buf, 65536 + 2 * GUARD);
	for (int i = 0; i < 4; i++) {
		struct ry_send_wr wr = wr_make(RY_WR_RDMA_WRITE, &a, &b, 65536,
					       (uint64_t)i);

		if (!i)
			wr.rkey ^= 0x5a5a5a00;
		ck_assert_int_eq(ry_rail_post_send(p.qp[0], &wr, 1), 0);
	}
	pair_wait_wc(&p, 0, &wc, 10000);
	ck_assert_msg(wc.status == RY_WC_REM_ACCESS, "got %s",
		      ry_wc_status_str(wc.status));
	ck_assert_uint_eq(wc.wr_id, 0);
	ck_assert_int_eq(wc.opcode, RY_WC_RDMA_WRITE);
	ck_assert_int_eq(p.qp[0]->state, RY_QPS_ERR);
	for (int i = 1; i < 4; i++) {
		pair_wait_wc(&p, 0, &wc, 10000);
		ck_assert_uint_eq(wc.wr_id, (uint64_t)i);
		ck_assert_msg(wc.status == RY_WC_FLUSHED, "wr %d: %s", i,
			      ry_wc_status_str(wc.status));
	}
	ck_assert(!memcmp(snap, b.buf, 65536 + 2 * GUARD));
	free(snap);
	region_put(&a);
	region_put(&b);
	pair_close(&p);
}
END_TEST

/* A bad lkey: the WR fails locally and the QP goes to ERR; nothing lands.
 * (rxe in 6.12 reports it FLUSHED rather than LOC_PROT: the caller may
 * not tell a local protection error from a flush.) */
START_TEST(test_bad_lkey)
{
	struct region a, b;
	struct ry_send_wr wr;
	struct ry_wc wc;
	struct pair p;
	uint8_t *snap;

	pair_open(&p);
	pair_connect(&p);
	region_get(&p, 0, &a, 4096, 1, ALL);
	region_get(&p, 1, &b, 4096, 2, ALL);
	snap = malloc(4096 + 2 * GUARD);
	memcpy(snap, b.buf, 4096 + 2 * GUARD);
	wr = wr_make(RY_WR_RDMA_WRITE, &a, &b, 4096, 3);
	wr.sge.lkey ^= 0xffff00;
	ck_assert_int_eq(ry_rail_post_send(p.qp[0], &wr, 1), 0);
	pair_wait_wc(&p, 0, &wc, 10000);
	ck_assert_uint_eq(wc.wr_id, 3);
	ck_assert_msg(wc.status == RY_WC_LOC_PROT || wc.status == RY_WC_FLUSHED,
		      "got %s", ry_wc_status_str(wc.status));
	ck_assert_int_eq(p.qp[0]->state, RY_QPS_ERR);
	ck_assert(!memcmp(snap, b.buf, 4096 + 2 * GUARD));
	free(snap);
	region_put(&a);
	region_put(&b);
	pair_close(&p);
}
END_TEST

/* A SEND larger than the receive buffer: LOC_LEN at the receiver (rxe:
 * a general error), a remote error at the sender (REM_INVALID_REQ on most
 * HCAs, REM_OP on rxe), both QPs in ERR. */
START_TEST(test_recv_too_small)
{
	struct region a, b;
	struct ry_send_wr wr;
	struct ry_recv_wr rw;
	struct ry_wc wc;
	struct pair p;

	pair_open(&p);
	pair_connect(&p);
	region_get(&p, 0, &a, 8192, 1, ALL);
	region_get(&p, 1, &b, 8192, 2, ALL);
	rw = (struct ry_recv_wr){ .wr_id = 8,
				  .sge = { (uintptr_t)b.mr->addr, 100,
					   b.mr->lkey } };
	ck_assert_int_eq(ry_rail_post_recv(p.r[1], &rw, 1), 0);
	wr = wr_make(RY_WR_SEND, &a, NULL, 8192, 4);
	ck_assert_int_eq(ry_rail_post_send(p.qp[0], &wr, 1), 0);
	pair_wait_wc(&p, 0, &wc, 10000);
	ck_assert_uint_eq(wc.wr_id, 4);
	ck_assert_msg(wc.status == RY_WC_REM_INVALID_REQ ||
			      wc.status == RY_WC_REM_OP,
		      "got %s", ry_wc_status_str(wc.status));
	ck_assert_int_eq(p.qp[0]->state, RY_QPS_ERR);
	pair_wait_wc(&p, 1, &wc, 10000);
	ck_assert_uint_eq(wc.wr_id, 8);
	/* rxe says IBV_WC_LOC_QP_OP_ERR here, which has no better name
	 * than general error */
	ck_assert_msg(wc.status == RY_WC_LOC_LEN ||
			      wc.status == RY_WC_GENERAL_ERR,
		      "got %s", ry_wc_status_str(wc.status));
	ck_assert_int_eq(wc.opcode, RY_WC_RECV);
	ck_assert_uint_eq(wc.qp_num, p.qp[1]->qp_num);
	ck_assert_int_eq(p.qp[1]->state, RY_QPS_ERR);
	region_put(&a);
	region_put(&b);
	pair_close(&p);
}
END_TEST

/* Modify to ERR with WRs in flight: each completes once, in order, as
 * success (it had finished) or flushed; none after a flushed one
 * succeeds; every WR posted in ERR is flushed. */
START_TEST(test_err_flushes_outstanding)
{
	enum { N = 8, M = 3 };
	struct region a, b;
	struct ry_wc wc;
	struct pair p;
	bool flushed = false;

	pair_open(&p);
	pair_connect(&p);
	region_get(&p, 0, &a, MIB, 1, ALL);
	region_get(&p, 1, &b, MIB, 2, ALL);
	for (int i = 0; i < N; i++) {
		struct ry_send_wr wr = wr_make(RY_WR_RDMA_WRITE, &a, &b, MIB,
					       (uint64_t)i);

		ck_assert_int_eq(ry_rail_post_send(p.qp[0], &wr, 1), 0);
	}
	ck_assert_int_eq(ry_rail_modify_qp(p.qp[0], RY_QPS_ERR, NULL), 0);
	ck_assert_int_eq(p.qp[0]->state, RY_QPS_ERR);
	for (int i = N; i < N + M; i++) {
		struct ry_send_wr wr = wr_make(RY_WR_RDMA_READ, &a, &b, 10,
					       (uint64_t)i);

		ck_assert_int_eq(ry_rail_post_send(p.qp[0], &wr, 1), 0);
	}
	for (int i = 0; i < N + M; i++) {
		pair_wait_wc(&p, 0, &wc, 10000);
		ck_assert_uint_eq(wc.wr_id, (uint64_t)i);
		ck_assert_uint_eq(wc.qp_num, p.qp[0]->qp_num);
		if (flushed || i >= N)
			ck_assert_msg(wc.status == RY_WC_FLUSHED, "wr %d: %s", i,
				      ry_wc_status_str(wc.status));
		else
			ck_assert_msg(wc.status == RY_WC_SUCCESS ||
					      wc.status == RY_WC_FLUSHED,
				      "wr %d: %s", i,
				      ry_wc_status_str(wc.status));
		flushed |= wc.status == RY_WC_FLUSHED;
		ck_assert_int_eq(wc.opcode, i < N ? RY_WC_RDMA_WRITE :
						    RY_WC_RDMA_READ);
	}
	ck_assert_int_eq(ry_rail_poll_cq(p.r[0], &wc, 1), 0);
	region_put(&a);
	region_put(&b);
	pair_close(&p);
}
END_TEST

/* Destroy with WRs in flight: either refused until they are drained, or
 * done at once with nothing left behind in the CQ; never a completion of
 * a destroyed QP. */
START_TEST(test_destroy_after_drain)
{
	enum { N = 8 };
	struct region a, b;
	struct ry_wc wc;
	struct pair p;
	uint32_t qpn;
	int rc, got = 0;

	pair_open(&p);
	pair_connect(&p);
	region_get(&p, 0, &a, MIB, 1, ALL);
	region_get(&p, 1, &b, MIB, 2, ALL);
	for (int i = 0; i < N; i++) {
		struct ry_send_wr wr = wr_make(RY_WR_RDMA_WRITE, &a, &b, MIB,
					       (uint64_t)i);

		ck_assert_int_eq(ry_rail_post_send(p.qp[0], &wr, 1), 0);
	}
	qpn = p.qp[0]->qp_num;
	rc = ry_rail_destroy_qp(p.qp[0]);
	if (rc == -EBUSY) {
		uint64_t end = now_ms() + 10000;

		/* refused: the QP was moved to ERR so that it drains; the
		 * caller polls and tries again (the provider may wait for
		 * more than the completions, e.g. "last WQE reached") */
		ck_assert_int_eq(p.qp[0]->state, RY_QPS_ERR);
		while ((rc = ry_rail_destroy_qp(p.qp[0])) == -EBUSY) {
			ck_assert(now_ms() < end);
			if (!pair_try_wc(&p, 0, &wc, 20))
				continue;
			ck_assert_uint_eq(wc.wr_id, (uint64_t)got);
			ck_assert(wc.status == RY_WC_SUCCESS ||
				  wc.status == RY_WC_FLUSHED);
			got++;
		}
		ck_assert_int_eq(got, N);
	}
	ck_assert_int_eq(rc, 0);
	p.qp[0] = NULL;
	/* nothing of the destroyed QP may surface later */
	if (pair_try_wc(&p, 0, &wc, 300))
		ck_assert_uint_ne(wc.qp_num, qpn);
	region_put(&a);
	region_put(&b);
	pair_close(&p);
}
END_TEST

/* Reconnect after ERR: a new QP with a new QPN and a new PSN, and it
 * carries data. */
START_TEST(test_new_qp_after_err)
{
	uint32_t qpn[2], psn[2];
	struct pair p;

	pair_open(&p);
	pair_connect(&p);
	xfer_check(&p, RY_WR_RDMA_WRITE, 4096, 1);
	for (int i = 0; i < 2; i++) {
		qpn[i] = p.qp[i]->qp_num;
		psn[i] = p.qp[i]->local.psn;
		ck_assert_int_eq(ry_rail_modify_qp(p.qp[i], RY_QPS_ERR, NULL),
				 0);
		qp_drain_destroy(&p, i);
	}
	pair_connect(&p);
	for (int i = 0; i < 2; i++) {
		ck_assert_uint_ne(p.qp[i]->qp_num, qpn[i]);
		ck_assert_uint_ne(p.qp[i]->local.psn, psn[i]);
		ck_assert_uint_ne(p.qp[i]->local.psn, 0);
	}
	xfer_check(&p, RY_WR_RDMA_WRITE, MIB, 2);
	xfer_check(&p, RY_WR_SEND, 4096, 3);
	pair_close(&p);
}
END_TEST

/* PSNs are 24 bits: a transfer that wraps past 0xffffff arrives intact,
 * both ways (WRITE from the requester, READ responses to it). */
START_TEST(test_psn_wrap)
{
	struct pair p;

	pair_open(&p);
	qp_create(&p, 0);
	qp_create(&p, 1);
	/* the endpoint is what the peer is told: start both near the top */
	p.qp[0]->local.psn = 0xfffff0;
	p.qp[1]->local.psn = 0xfffff8;
	ck_assert_int_eq(qp_connect(&p, 0), 0);
	ck_assert_int_eq(qp_connect(&p, 1), 0);
	xfer_check(&p, RY_WR_RDMA_WRITE, MIB, 1);
	xfer_check(&p, RY_WR_RDMA_READ, MIB, 2);
	xfer_check(&p, RY_WR_SEND, 64 * 1024, 3);
	pair_close(&p);
}
END_TEST

/* The peer vanishes (its QP destroyed): the transport retries retry_cnt
 * times and gives up with RETRY_EXCEEDED, then flushes. */
START_TEST(test_retry_exceeded)
{
	struct region a, b;
	struct ry_send_wr wr;
	struct ry_wc wc;
	struct pair p;
	uint64_t t;

	pair_open(&p);
	p.attr.ack_timeout_us = 10000;
	p.attr.retry_cnt = 2;
	pair_connect(&p);
	region_get(&p, 0, &a, 4096, 1, ALL);
	region_get(&p, 1, &b, 4096, 2, ALL);
	qp_drain_destroy(&p, 1);
	wr = wr_make(RY_WR_RDMA_WRITE, &a, &b, 4096, 1);
	ck_assert_int_eq(ry_rail_post_send(p.qp[0], &wr, 1), 0);
	wr.wr_id = 2;
	ck_assert_int_eq(ry_rail_post_send(p.qp[0], &wr, 1), 0);
	t = now_ms();
	pair_wait_wc(&p, 0, &wc, 20000);
	ck_assert_msg(wc.status == RY_WC_RETRY_EXCEEDED, "got %s",
		      ry_wc_status_str(wc.status));
	ck_assert_uint_eq(wc.wr_id, 1);
	ck_assert_int_eq(p.qp[0]->state, RY_QPS_ERR);
	fprintf(stderr, "retry exceeded after %llu ms (timeout 10 ms, retry_cnt 2)\n",
		(unsigned long long)(now_ms() - t));
	pair_wait_wc(&p, 0, &wc, 5000);
	ck_assert_uint_eq(wc.wr_id, 2);
	ck_assert_int_eq(wc.status, RY_WC_FLUSHED);
	region_put(&a);
	region_put(&b);
	pair_close(&p);
}
END_TEST

/* No receive posted at the peer: RNR NAKs, rnr_retry of them, then
 * RNR_RETRY_EXCEEDED and the rest flushed. */
START_TEST(test_rnr_exceeded)
{
	struct region a;
	struct ry_wc wc;
	struct pair p;

	pair_open(&p);
	p.attr.rnr_retry = 2;
	p.attr.min_rnr_timer_us = 1000;
	pair_connect(&p);
	region_get(&p, 0, &a, 100, 1, ALL);
	for (int i = 0; i < 3; i++) {
		struct ry_send_wr wr = wr_make(i == 1 ? RY_WR_RDMA_WRITE_IMM :
							RY_WR_SEND,
					       &a, &a, 100, (uint64_t)i);

		ck_assert_int_eq(ry_rail_post_send(p.qp[0], &wr, 1), 0);
	}
	pair_wait_wc(&p, 0, &wc, 20000);
	ck_assert_msg(wc.status == RY_WC_RNR_RETRY_EXCEEDED, "got %s",
		      ry_wc_status_str(wc.status));
	ck_assert_uint_eq(wc.wr_id, 0);
	ck_assert_int_eq(wc.opcode, RY_WC_SEND);
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

/* The receive arrives while the sender is being RNR NAKed: it goes on. */
START_TEST(test_rnr_recovers)
{
	struct region a, b;
	struct ry_send_wr wr;
	struct ry_recv_wr rw;
	struct ry_wc wc;
	struct pair p;

	pair_open(&p);
	p.attr.rnr_retry = 6;
	p.attr.min_rnr_timer_us = 10000;
	pair_connect(&p);
	region_get(&p, 0, &a, 5000, 1, ALL);
	region_get(&p, 1, &b, 5000, 2, ALL);
	wr = wr_make(RY_WR_SEND, &a, NULL, 5000, 4);
	ck_assert_int_eq(ry_rail_post_send(p.qp[0], &wr, 1), 0);
	ck_assert(!pair_try_wc(&p, 0, &wc, 5));
	rw = (struct ry_recv_wr){ .wr_id = 8,
				  .sge = { (uintptr_t)b.mr->addr, 5000,
					   b.mr->lkey } };
	ck_assert_int_eq(ry_rail_post_recv(p.r[1], &rw, 1), 0);
	pair_wait_wc(&p, 0, &wc, 10000);
	ck_assert_msg(wc.status == RY_WC_SUCCESS, "got %s",
		      ry_wc_status_str(wc.status));
	pair_wait_wc(&p, 1, &wc, 5000);
	ck_assert_int_eq(wc.status, RY_WC_SUCCESS);
	ck_assert_uint_eq(wc.byte_len, 5000);
	ck_assert(!memcmp(a.mr->addr, b.mr->addr, 5000));
	region_put(&a);
	region_put(&b);
	pair_close(&p);
}
END_TEST

/* The rail fd turns readable for a completion, and calm once progress
 * and poll_cq took everything. */
START_TEST(test_fd_readable)
{
	struct region a, b;
	struct ry_send_wr wr;
	struct pollfd pfd;
	struct ry_wc wc;
	struct pair p;

	pair_open(&p);
	pair_connect(&p);
	region_get(&p, 0, &a, 4096, 1, ALL);
	region_get(&p, 1, &b, 4096, 2, ALL);
	pair_progress(&p);
	ck_assert_int_eq(ry_rail_poll_cq(p.r[0], &wc, 1), 0);
	pfd = (struct pollfd){ .fd = ry_rail_fd(p.r[0]), .events = POLLIN };
	ck_assert_int_ge(pfd.fd, 0);
	ck_assert_int_eq(poll(&pfd, 1, 0), 0);
	wr = wr_make(RY_WR_RDMA_WRITE, &a, &b, 4096, 1);
	ck_assert_int_eq(ry_rail_post_send(p.qp[0], &wr, 1), 0);
	ck_assert_int_eq(poll(&pfd, 1, 10000), 1);
	ck_assert_int_eq(ry_rail_progress(p.r[0]), 0);
	ck_assert_int_eq(ry_rail_poll_cq(p.r[0], &wc, 1), 1);
	ck_assert_int_eq(wc.status, RY_WC_SUCCESS);
	ck_assert_int_eq(ry_rail_poll_cq(p.r[0], &wc, 1), 0);
	ck_assert_int_eq(poll(&pfd, 1, 0), 0);
	region_put(&a);
	region_put(&b);
	pair_close(&p);
}
END_TEST

/* No link event while the link stays up; fault injection is the soft
 * rail's alone. */
START_TEST(test_events_and_faults)
{
	struct ry_rail_event ev;
	struct ry_fault f = { .drop_all = true };
	struct pair p;

	pair_open(&p);
	pair_progress(&p);
	ck_assert_int_eq(ry_rail_get_event(p.r[0], &ev), -EAGAIN);
	ck_assert_int_eq(ry_rail_set_fault(p.r[0], &f), -EOPNOTSUPP);
	ck_assert_int_eq(ry_rail_set_link(p.r[0], RY_LINK_DOWN), -EOPNOTSUPP);
	pair_close(&p);
}
END_TEST

/* Wait for an event of type t on rail i; false after timeout_ms. */
static bool wait_event(struct pair *p, int i, enum ry_rail_event_type t,
		       int timeout_ms)
{
	uint64_t end = now_ms() + (uint64_t)timeout_ms;
	struct ry_rail_event ev;

	for (;;) {
		struct pollfd pfd = { .fd = ry_rail_fd(p->r[i]),
				      .events = POLLIN };

		pair_progress(p);
		while (!ry_rail_get_event(p->r[i], &ev))
			if (ev.type == t)
				return true;
		if (now_ms() >= end)
			return false;
		poll(&pfd, 1, 50);
	}
}

/* Pull a cable: the rail reports LINK_DOWN, a new open of it fails with a
 * plain reason, traffic on the QP errors out and the QP drains; put the
 * cable back: LINK_UP, and new QPs (new QPNs, new PSNs) carry data. */
START_TEST(test_link_down_reconnect)
{
	struct ry_rail_config cfg;
	struct ry_rail_attr ra;
	struct ry_rail *extra = NULL;
	uint32_t qpn[2], psn[2];
	struct region a, b;
	struct ry_send_wr wr;
	struct ry_wc wc;
	struct pair p;
	uint64_t t;

	pair_open(&p);
	if (provider->cable(1, true) == -EOPNOTSUPP) {
		pair_close(&p);
		return; /* this setup has no cable to pull */
	}
	p.attr.ack_timeout_us = 10000;
	p.attr.retry_cnt = 2;
	pair_connect(&p);
	xfer_check(&p, RY_WR_RDMA_WRITE, 4096, 1);

	ck_assert_int_eq(provider->cable(1, false), 0);
	t = now_ms();
	ck_assert_msg(wait_event(&p, 1, RY_RAIL_EV_LINK_DOWN, 10000),
		      "no LINK_DOWN after the cable was pulled");
	fprintf(stderr, "link down seen after %llu ms\n",
		(unsigned long long)(now_ms() - t));
	ck_assert_int_eq(ry_rail_query(p.r[1], &ra), 0);
	ck_assert_int_eq(ra.link, RY_LINK_DOWN);
	provider->config(&cfg, 1);
	ck_assert_int_eq(ry__rail_open(&cfg, &extra), -ENETDOWN);
	ck_assert_ptr_null(extra);

	region_get(&p, 0, &a, 65536, 1, ALL);
	region_get(&p, 1, &b, 65536, 2, ALL);
	wr = wr_make(RY_WR_RDMA_WRITE, &a, &b, 65536, 5);
	ck_assert_int_eq(ry_rail_post_send(p.qp[0], &wr, 1), 0);
	pair_wait_wc(&p, 0, &wc, 20000);
	ck_assert_msg(wc.status != RY_WC_SUCCESS, "a write over a pulled cable succeeded");
	fprintf(stderr, "write over the pulled cable: %s\n",
		ry_wc_status_str(wc.status));
	ck_assert_int_eq(p.qp[0]->state, RY_QPS_ERR);
	for (int i = 0; i < 2; i++) {
		qpn[i] = p.qp[i]->qp_num;
		psn[i] = p.qp[i]->local.psn;
		ck_assert_int_eq(ry_rail_modify_qp(p.qp[i], RY_QPS_ERR, NULL),
				 0);
		qp_drain_destroy(&p, i);
	}

	ck_assert_int_eq(provider->cable(1, true), 0);
	t = now_ms();
	ck_assert_msg(wait_event(&p, 1, RY_RAIL_EV_LINK_UP, 10000),
		      "no LINK_UP after the cable was put back");
	fprintf(stderr, "link up seen after %llu ms\n",
		(unsigned long long)(now_ms() - t));
	ck_assert_int_eq(ry_rail_query(p.r[1], &ra), 0);
	ck_assert_int_eq(ra.link, RY_LINK_UP);
	/* reconnect: new QPs, new numbers, and a probe that must succeed */
	pair_connect(&p);
	for (int i = 0; i < 2; i++) {
		ck_assert_uint_ne(p.qp[i]->qp_num, qpn[i]);
		ck_assert_uint_ne(p.qp[i]->local.psn, psn[i]);
	}
	xfer_check(&p, RY_WR_RDMA_WRITE, MIB, 2);
	xfer_check(&p, RY_WR_RDMA_READ, 4096, 3);
	region_put(&a);
	region_put(&b);
	pair_close(&p);
}
END_TEST

/* A silent failure with the shipped defaults (ack timeout 20 ms, 5
 * retries): no event, the link stays up, the transport gives up with
 * RETRY_EXCEEDED on its own, and nothing blocks meanwhile. */
START_TEST(test_blackhole_retry_exceeded)
{
	struct ry_rail_event ev;
	struct ry_rail_attr ra;
	struct region a, b;
	struct ry_send_wr wr;
	struct ry_wc wc;
	struct pair p;
	uint64_t t;

	pair_open(&p);
	if (provider->blackhole(1, false) == -EOPNOTSUPP) {
		pair_close(&p);
		return;
	}
	p.attr.ack_timeout_us = 20000;
	p.attr.retry_cnt = 5;
	pair_connect(&p);
	region_get(&p, 0, &a, 65536, 1, ALL);
	region_get(&p, 1, &b, 65536, 2, ALL);
	xfer_check(&p, RY_WR_RDMA_WRITE, 4096, 1);
	ck_assert_int_eq(provider->blackhole(0, true), 0);
	wr = wr_make(RY_WR_RDMA_WRITE, &a, &b, 65536, 7);
	t = now_ms();
	ck_assert_int_eq(ry_rail_post_send(p.qp[0], &wr, 1), 0);
	pair_wait_wc(&p, 0, &wc, 20000);
	fprintf(stderr, "silent loss: %s after %llu ms (ack timeout 20 ms, 5 retries)\n",
		ry_wc_status_str(wc.status),
		(unsigned long long)(now_ms() - t));
	ck_assert_msg(wc.status == RY_WC_RETRY_EXCEEDED, "got %s",
		      ry_wc_status_str(wc.status));
	ck_assert_int_eq(ry_rail_query(p.r[0], &ra), 0);
	ck_assert_int_eq(ra.link, RY_LINK_UP);
	while (!ry_rail_get_event(p.r[0], &ev))
		ck_assert_int_ne(ev.type, RY_RAIL_EV_LINK_DOWN);
	ck_assert_int_eq(provider->blackhole(0, false), 0);
	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(ry_rail_modify_qp(p.qp[i], RY_QPS_ERR, NULL),
				 0);
		qp_drain_destroy(&p, i);
	}
	pair_connect(&p);
	xfer_check(&p, RY_WR_RDMA_WRITE, 65536, 2);
	region_put(&a);
	region_put(&b);
	pair_close(&p);
}
END_TEST

/* A rail config naming no device, or no such port, fails at open. */
START_TEST(test_open_errors)
{
	struct ry_rail_config cfg;
	struct ry_rail *r = (struct ry_rail *)&cfg; /* must stay untouched */

	provider->config(&cfg, 0);
	snprintf(cfg.device, sizeof(cfg.device), "no_such_dev9");
	ck_assert_int_eq(ry__rail_open(&cfg, &r), -ENODEV);
	provider->config(&cfg, 0);
	cfg.port = 9;
	ck_assert_int_eq(ry__rail_open(&cfg, &r), -ENODEV);
	provider->config(&cfg, 0);
	cfg.gid_index = 200;
	ck_assert_int_lt(ry__rail_open(&cfg, &r), 0);
	ck_assert_ptr_eq(r, (struct ry_rail *)&cfg);
}
END_TEST

/* ---- 4. verbs only: how a config names its port ---- */

/* By node GUID as well as by name; the GID by address or index. */
START_TEST(test_verbs_open_by_guid_and_address)
{
	const char *guid = getenv("RY_HW_GUID_A");
	const char *addr = getenv("RY_HW_ADDR_A");
	struct ry_rail_config cfg;
	struct ry_rail_attr ra;
	struct ry_rail *r;
	uint8_t want[16] = { [10] = 0xff, [11] = 0xff };
	unsigned b[4];

	if (!guid || !addr)
		return; /* the guest script sets them */
	ck_assert_int_eq(sscanf(addr, "%u.%u.%u.%u", &b[0], &b[1], &b[2],
				&b[3]), 4);
	for (int i = 0; i < 4; i++)
		want[12 + i] = (uint8_t)b[i];

	provider->config(&cfg, 0);
	snprintf(cfg.device, sizeof(cfg.device), "%s", guid);
	ck_assert_int_eq(ry__rail_open(&cfg, &r), 0);
	ck_assert_int_eq(ry_rail_query(r, &ra), 0);
	/* the default GID is the routable RoCE v2 one */
	ck_assert(!memcmp(ra.local.gid, want, 16));
	ry_rail_close(r);

	provider->config(&cfg, 0);
	snprintf(cfg.address, sizeof(cfg.address), "%s", addr);
	ck_assert_int_eq(ry__rail_open(&cfg, &r), 0);
	ck_assert_int_eq(ry_rail_query(r, &ra), 0);
	ck_assert(!memcmp(ra.local.gid, want, 16));
	ry_rail_close(r);

	provider->config(&cfg, 0);
	snprintf(cfg.address, sizeof(cfg.address), "198.19.255.254");
	ck_assert_int_eq(ry__rail_open(&cfg, &r), -ENOENT);

	provider->config(&cfg, 0);
	cfg.gid_index = 0; /* fe80:: on RoCE, the port GID on IB */
	ck_assert_int_eq(ry__rail_open(&cfg, &r), 0);
	ck_assert_int_eq(ry_rail_query(r, &ra), 0);
	ck_assert(memcmp(ra.local.gid, want, 16));
	ry_rail_close(r);
}
END_TEST

/* A configured MTU caps the path MTU, rounded down to an IB size. */
START_TEST(test_verbs_mtu_config)
{
	struct ry_rail_config cfg;
	struct ry_rail_attr ra, full;
	struct ry_rail *r;

	provider->config(&cfg, 0);
	ck_assert_int_eq(ry__rail_open(&cfg, &r), 0);
	ck_assert_int_eq(ry_rail_query(r, &full), 0);
	ry_rail_close(r);
	ck_assert_uint_ge(full.mtu, 256);
	ck_assert_uint_le(full.mtu, 4096);
	ck_assert_uint_eq(full.mtu & (full.mtu - 1), 0);

	cfg.mtu = 600;
	ck_assert_int_eq(ry__rail_open(&cfg, &r), 0);
	ck_assert_int_eq(ry_rail_query(r, &ra), 0);
	ck_assert_uint_eq(ra.mtu, full.mtu >= 512 ? 512 : full.mtu);
	ry_rail_close(r);

	cfg.mtu = 9000;
	ck_assert_int_eq(ry__rail_open(&cfg, &r), 0);
	ck_assert_int_eq(ry_rail_query(r, &ra), 0);
	ck_assert_uint_eq(ra.mtu, full.mtu);
	ry_rail_close(r);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("verbs_rail");
	TCase *tc = tcase_create("contract");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_open_errors);
	tcase_add_test(tc, test_connect_endpoints);
	tcase_add_test(tc, test_random_qpn_psn);
	tcase_add_test(tc, test_state_machine);
	tcase_add_test(tc, test_many_qps_one_cq);
	tcase_add_test(tc, test_write_sizes);
	tcase_add_test(tc, test_write_imm_sizes);
	tcase_add_test(tc, test_read_sizes);
	tcase_add_test(tc, test_send_sizes);
	tcase_add_test(tc, test_send_imm_sizes);
	tcase_add_test(tc, test_bad_rkey);
	tcase_add_test(tc, test_bad_lkey);
	tcase_add_test(tc, test_recv_too_small);
	tcase_add_test(tc, test_err_flushes_outstanding);
	tcase_add_test(tc, test_destroy_after_drain);
	tcase_add_test(tc, test_new_qp_after_err);
	tcase_add_test(tc, test_psn_wrap);
	tcase_add_test(tc, test_retry_exceeded);
	tcase_add_test(tc, test_rnr_exceeded);
	tcase_add_test(tc, test_rnr_recovers);
	tcase_add_test(tc, test_fd_readable);
	tcase_add_test(tc, test_events_and_faults);
	tcase_add_test(tc, test_verbs_open_by_guid_and_address);
	tcase_add_test(tc, test_verbs_mtu_config);
	tcase_add_test(tc, test_blackhole_retry_exceeded);
	tcase_add_test(tc, test_link_down_reconnect);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	const char *why = provider->cannot_run();
	SRunner *sr;
	int failed;

	if (why) {
		printf("SKIP: %s rail suite: %s\n", provider->name, why);
		return 77;
	}
	if (getenv("RY_HW_DEBUG"))
		ry_log_set_level(RY_LOG_DEBUG);
	sr = srunner_create(suite());
	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
