// SPDX-License-Identifier: BSD-2-Clause
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "rail_fixture.h"

const struct ry_test_provider *ry_test_provider;

uint64_t test_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

void test_fill(void *buf, size_t len, unsigned seed)
{
	uint8_t *p = buf;
	uint32_t x = seed * 2654435761u + 1;

	for (size_t i = 0; i < len; i++) {
		x = x * 1103515245u + 12345u;
		p[i] = (uint8_t)(x >> 16);
	}
}

void *test_buf(size_t len, unsigned seed)
{
	void *p = NULL;

	ck_assert_int_eq(posix_memalign(&p, 4096, len ? len : 1), 0);
	test_fill(p, len, seed);
	return p;
}

void pair_open(struct ry_test_pair *p)
{
	memset(p, 0, sizeof(*p));
	for (int i = 0; i < 2; i++) {
		struct ry_rail_config cfg;
		struct ry_rail_attr a;

		memset(&cfg, 0, sizeof(cfg));
		ry_test_provider->config(&cfg, i);
		ck_assert_int_eq(ry_test_provider->ops->open(&cfg, &p->r[i]),
				 0);
		ck_assert_int_eq(ry_rail_query(p->r[i], &a), 0);
		ck_assert_int_eq(a.link, RY_LINK_UP);
		p->mtu = a.mtu;
		ck_assert_int_eq(ry_rail_alloc_pd(p->r[i], &p->pd[i]), 0);
	}
}

void pair_create_qps(struct ry_test_pair *p)
{
	struct ry_qp_init init = {
	    .max_send_wr = p->max_send_wr ? p->max_send_wr : 256,
	};

	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(ry_rail_create_qp(p->pd[i], &init, &p->qp[i]),
				 0);
		ck_assert_int_eq(p->qp[i]->state, RY_QPS_RESET);
		ck_assert_uint_eq(p->qp[i]->local.qpn, p->qp[i]->qp_num);
		ck_assert_uint_le(p->qp[i]->qp_num, 0xffffff);
		ck_assert_uint_le(p->qp[i]->local.psn, 0xffffff);
	}
	ck_assert_int_ne(p->qp[0]->qp_num, p->qp[1]->qp_num);
}

void pair_connect_qps(struct ry_test_pair *p)
{
	struct ry_qp_attr at[2];

	for (int i = 0; i < 2; i++) {
		at[i] = p->attr;
		if (!p->attr_set) {
			at[i].access = RY_ACCESS_LOCAL_WRITE |
				       RY_ACCESS_REMOTE_WRITE |
				       RY_ACCESS_REMOTE_READ;
			at[i].ack_timeout_us = 10000;
			at[i].retry_cnt = 6;
			at[i].rnr_retry = 6;
			at[i].min_rnr_timer_us = 1000;
			at[i].max_rd_atomic = 4;
		}
		at[i].mtu = p->mtu;
		ck_assert_int_eq(
		    ry_rail_modify_qp(p->qp[i], RY_QPS_INIT, &at[i]), 0);
	}
	for (int i = 0; i < 2; i++) {
		at[i].remote = p->qp[1 - i]->local;
		ck_assert_int_eq(
		    ry_rail_modify_qp(p->qp[i], RY_QPS_RTR, &at[i]), 0);
		ck_assert_int_eq(
		    ry_rail_modify_qp(p->qp[i], RY_QPS_RTS, &at[i]), 0);
		ck_assert_int_eq(p->qp[i]->state, RY_QPS_RTS);
	}
}

void pair_connect(struct ry_test_pair *p)
{
	pair_create_qps(p);
	pair_connect_qps(p);
}

void pair_close(struct ry_test_pair *p)
{
	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(ry_rail_destroy_qp(p->qp[i]), 0);
		ck_assert_int_eq(ry_rail_dealloc_pd(p->pd[i]), 0);
		ry_rail_close(p->r[i]);
	}
	memset(p, 0, sizeof(*p));
}

void pair_progress(struct ry_test_pair *p)
{
	for (int i = 0; i < 2; i++)
		ck_assert_int_eq(ry_rail_progress(p->r[i]), 0);
}

void pair_wait_wc(struct ry_test_pair *p, int i, struct ry_wc *wc,
		  int timeout_ms)
{
	uint64_t end = test_now_ms() + (uint64_t)timeout_ms;

	for (;;) {
		if (ry_rail_poll_cq(p->r[i], wc, 1) == 1)
			return;
		pair_progress(p);
		ck_assert_msg(test_now_ms() < end,
			      "no completion on rail %d in %d ms", i,
			      timeout_ms);
	}
}

void pair_spin(struct ry_test_pair *p, int ms)
{
	uint64_t end = test_now_ms() + (uint64_t)ms;

	while (test_now_ms() < end)
		pair_progress(p);
}
