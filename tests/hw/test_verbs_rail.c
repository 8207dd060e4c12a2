// SPDX-License-Identifier: BSD-2-Clause
/*
 * What only the verbs rail does, on real devices (the contract both rails
 * keep is tests/rail/rail_conformance.c, run on verbs by
 * test_verbs_conformance): opening a port by node GUID or address, the
 * GID choice, the MTU rounded to an IB size, retry counts of 7 refused,
 * and failures made with the netdev under a RoCE port: a pulled cable
 * (ip link down) and silent loss (netem).
 *
 * Without an RDMA device it exits 77 with a plain message (the host);
 * tests/hw/hw_qemu_rxe.sh runs it in a QEMU guest where rxe exists.
 * Devices: RY_HW_DEV_A, RY_HW_DEV_B (default rxe_a0, rxe_b0), port 1;
 * RY_HW_NETDEV_A/B name their netdevs for the cable and loss cases,
 * RY_HW_GUID_A and RY_HW_ADDR_A rail A's node GUID and IPv4 address.
 */
#include <check.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rail/rail_conformance.h"
#include "verbs_provider.h"

#define MIB (1u << 20)

static const unsigned ALL =
    RY_ACCESS_LOCAL_WRITE | RY_ACCESS_REMOTE_WRITE | RY_ACCESS_REMOTE_READ;

static void config(struct ry_rail_config *cfg, int idx)
{
	ry_test_provider->config(cfg, idx);
}

/* retry_cnt or rnr_retry 7 is "forever" on rxe and some HCAs: a dead peer
 * would never be noticed by the transport.  Refused, the QP stays in RTR. */
START_TEST(test_verbs_retry_7_refused)
{
	struct ry_test_pair p;
	struct ry_qp_attr at;

	pair_open(&p);
	pair_defaults(&p);
	pair_create_qps(&p);
	at = p.attr;
	at.remote = p.qp[1]->local;
	at.mtu = p.mtu;
	ck_assert_int_eq(ry__rail_modify_qp(p.qp[0], RY_QPS_INIT, &at), 0);
	ck_assert_int_eq(pair_to_rtr(p.qp[0], &at), 0);
	at.retry_cnt = 7;
	ck_assert_int_eq(ry__rail_modify_qp(p.qp[0], RY_QPS_RTS, &at), -EINVAL);
	at.retry_cnt = 3;
	at.rnr_retry = 7;
	ck_assert_int_eq(ry__rail_modify_qp(p.qp[0], RY_QPS_RTS, &at), -EINVAL);
	ck_assert_int_eq(p.qp[0]->state, RY_QPS_RTR);
	at.rnr_retry = 6;
	ck_assert_int_eq(ry__rail_modify_qp(p.qp[0], RY_QPS_RTS, &at), 0);
	pair_close(&p);
}
END_TEST

/* Wait for an event of type t on rail i; false after timeout_ms. */
static bool wait_event(struct ry_test_pair *p, int i, enum ry_rail_event_type t,
		       int timeout_ms)
{
	uint64_t end = test_now_ms() + (uint64_t)timeout_ms;
	struct ry_rail_event ev;

	for (;;) {
		struct pollfd pfd = {.fd = ry__rail_fd(p->r[i]),
				     .events = POLLIN};

		pair_progress(p);
		while (!ry__rail_get_event(p->r[i], &ev))
			if (ev.type == t)
				return true;
		if (test_now_ms() >= end)
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
	struct ry_test_pair p;
	uint64_t t;

	pair_open(&p);
	if (verbs_cable(1, true) == -EOPNOTSUPP) {
		pair_close(&p);
		return; /* this setup has no cable to pull */
	}
	pair_defaults(&p);
	p.attr.ack_timeout_us = 10000;
	p.attr.retry_cnt = 2;
	pair_connect(&p);
	xfer_check(&p, RY_WR_RDMA_WRITE, 4096, 1);

	ck_assert_int_eq(verbs_cable(1, false), 0);
	t = test_now_ms();
	ck_assert_msg(wait_event(&p, 1, RY_RAIL_EV_LINK_DOWN, 10000),
		      "no LINK_DOWN after the cable was pulled");
	fprintf(stderr, "link down seen after %llu ms\n",
		(unsigned long long)(test_now_ms() - t));
	ck_assert_int_eq(ry__rail_query(p.r[1], &ra), 0);
	ck_assert_int_eq(ra.link, RY_LINK_DOWN);
	config(&cfg, 1);
	ck_assert_int_eq(ry__rail_open(&cfg, &extra), -ENETDOWN);
	ck_assert_ptr_null(extra);

	region_get(&p, 0, &a, 65536, 1, ALL);
	region_get(&p, 1, &b, 65536, 2, ALL);
	wr = wr_make(RY_WR_RDMA_WRITE, &a, &b, 65536, 5);
	ck_assert_int_eq(ry__rail_post_send(p.qp[0], &wr, 1), 0);
	pair_wait_wc(&p, 0, &wc, 20000);
	ck_assert_msg(wc.status != RY_WC_SUCCESS,
		      "a write over a pulled cable succeeded");
	fprintf(stderr, "write over the pulled cable: %s\n",
		ry_wc_status_str(wc.status));
	ck_assert_int_eq(p.qp[0]->state, RY_QPS_ERR);
	for (int i = 0; i < 2; i++) {
		qpn[i] = p.qp[i]->qp_num;
		psn[i] = p.qp[i]->local.psn;
		ck_assert_int_eq(ry__rail_modify_qp(p.qp[i], RY_QPS_ERR, NULL),
				 0);
		pair_destroy_qp(&p, i);
	}

	ck_assert_int_eq(verbs_cable(1, true), 0);
	t = test_now_ms();
	ck_assert_msg(wait_event(&p, 1, RY_RAIL_EV_LINK_UP, 10000),
		      "no LINK_UP after the cable was put back");
	fprintf(stderr, "link up seen after %llu ms\n",
		(unsigned long long)(test_now_ms() - t));
	ck_assert_int_eq(ry__rail_query(p.r[1], &ra), 0);
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
	struct ry_test_pair p;
	uint64_t t;

	pair_open(&p);
	if (verbs_blackhole(1, false) == -EOPNOTSUPP) {
		pair_close(&p);
		return;
	}
	pair_defaults(&p);
	p.attr.ack_timeout_us = 20000;
	p.attr.retry_cnt = 5;
	pair_connect(&p);
	region_get(&p, 0, &a, 65536, 1, ALL);
	region_get(&p, 1, &b, 65536, 2, ALL);
	xfer_check(&p, RY_WR_RDMA_WRITE, 4096, 1);
	ck_assert_int_eq(verbs_blackhole(0, true), 0);
	wr = wr_make(RY_WR_RDMA_WRITE, &a, &b, 65536, 7);
	t = test_now_ms();
	ck_assert_int_eq(ry__rail_post_send(p.qp[0], &wr, 1), 0);
	pair_wait_wc(&p, 0, &wc, 20000);
	fprintf(
	    stderr,
	    "silent loss: %s after %llu ms (ack timeout 20 ms, 5 retries)\n",
	    ry_wc_status_str(wc.status),
	    (unsigned long long)(test_now_ms() - t));
	ck_assert_msg(wc.status == RY_WC_RETRY_EXCEEDED, "got %s",
		      ry_wc_status_str(wc.status));
	ck_assert_int_eq(ry__rail_query(p.r[0], &ra), 0);
	ck_assert_int_eq(ra.link, RY_LINK_UP);
	while (!ry__rail_get_event(p.r[0], &ev))
		ck_assert_int_ne(ev.type, RY_RAIL_EV_LINK_DOWN);
	ck_assert_int_eq(verbs_blackhole(0, false), 0);
	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(ry__rail_modify_qp(p.qp[i], RY_QPS_ERR, NULL),
				 0);
		pair_destroy_qp(&p, i);
	}
	pair_connect(&p);
	xfer_check(&p, RY_WR_RDMA_WRITE, 65536, 2);
	region_put(&a);
	region_put(&b);
	pair_close(&p);
}
END_TEST

/* By node GUID as well as by name; the GID by address or index. */
START_TEST(test_verbs_open_by_guid_and_address)
{
	const char *guid = getenv("RY_HW_GUID_A");
	const char *addr = getenv("RY_HW_ADDR_A");
	struct ry_rail_config cfg;
	struct ry_rail_attr ra;
	struct ry_rail *r;
	uint8_t want[16] = {[10] = 0xff, [11] = 0xff};
	unsigned b[4];

	if (!guid || !addr)
		return; /* the guest script sets them */
	ck_assert_int_eq(
	    sscanf(addr, "%u.%u.%u.%u", &b[0], &b[1], &b[2], &b[3]), 4);
	for (int i = 0; i < 4; i++)
		want[12 + i] = (uint8_t)b[i];

	config(&cfg, 0);
	snprintf(cfg.device, sizeof(cfg.device), "%s", guid);
	ck_assert_int_eq(ry__rail_open(&cfg, &r), 0);
	ck_assert_int_eq(ry__rail_query(r, &ra), 0);
	/* the default GID is the routable RoCE v2 one */
	ck_assert(!memcmp(ra.local.gid, want, 16));
	ry__rail_close(r);

	config(&cfg, 0);
	snprintf(cfg.address, sizeof(cfg.address), "%s", addr);
	ck_assert_int_eq(ry__rail_open(&cfg, &r), 0);
	ck_assert_int_eq(ry__rail_query(r, &ra), 0);
	ck_assert(!memcmp(ra.local.gid, want, 16));
	ry__rail_close(r);

	config(&cfg, 0);
	snprintf(cfg.address, sizeof(cfg.address), "198.19.255.254");
	ck_assert_int_eq(ry__rail_open(&cfg, &r), -ENOENT);

	config(&cfg, 0);
	cfg.gid_index = 0; /* fe80:: on RoCE, the port GID on IB */
	ck_assert_int_eq(ry__rail_open(&cfg, &r), 0);
	ck_assert_int_eq(ry__rail_query(r, &ra), 0);
	ck_assert(memcmp(ra.local.gid, want, 16));
	ry__rail_close(r);
}
END_TEST

/* A configured MTU caps the path MTU, rounded down to an IB size. */
START_TEST(test_verbs_mtu_config)
{
	struct ry_rail_config cfg;
	struct ry_rail_attr ra, full;
	struct ry_rail *r;

	config(&cfg, 0);
	ck_assert_int_eq(ry__rail_open(&cfg, &r), 0);
	ck_assert_int_eq(ry__rail_query(r, &full), 0);
	ry__rail_close(r);
	ck_assert_uint_ge(full.mtu, 256);
	ck_assert_uint_le(full.mtu, 4096);
	ck_assert_uint_eq(full.mtu & (full.mtu - 1), 0);

	cfg.mtu = 600;
	ck_assert_int_eq(ry__rail_open(&cfg, &r), 0);
	ck_assert_int_eq(ry__rail_query(r, &ra), 0);
	ck_assert_uint_eq(ra.mtu, full.mtu >= 512 ? 512 : full.mtu);
	ry__rail_close(r);

	cfg.mtu = 9000;
	ck_assert_int_eq(ry__rail_open(&cfg, &r), 0);
	ck_assert_int_eq(ry__rail_query(r, &ra), 0);
	ck_assert_uint_eq(ra.mtu, full.mtu);
	ry__rail_close(r);
}
END_TEST

static void add(Suite *s)
{
	TCase *tc = tcase_create("verbs");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_verbs_open_by_guid_and_address);
	tcase_add_test(tc, test_verbs_mtu_config);
	tcase_add_test(tc, test_verbs_retry_7_refused);
	tcase_add_test(tc, test_blackhole_retry_exceeded);
	tcase_add_test(tc, test_link_down_reconnect);
	suite_add_tcase(s, tc);
}

int main(void)
{
	return verbs_run_suite("verbs_rail", add);
}
