// SPDX-License-Identifier: BSD-2-Clause
#include <check.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <time.h>

#include "rail_fixture.h"
#include "railyard/railyard.h"

const struct ry_test_provider *ry_test_provider;
bool ry_test_own_cq;

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

static const struct ry_qp_attr soft_defaults = {
    .access =
	RY_ACCESS_LOCAL_WRITE | RY_ACCESS_REMOTE_WRITE | RY_ACCESS_REMOTE_READ,
    .ack_timeout_us = 10000,
    .retry_cnt = 6,
    .rnr_retry = 6,
    .min_rnr_timer_us = 1000,
    .max_rd_atomic = 4,
};

void pair_defaults(struct ry_test_pair *p)
{
	const struct ry_qp_attr *d = ry_test_provider->defaults;

	p->attr = d ? *d : soft_defaults;
	p->attr_set = true;
}

void pair_open(struct ry_test_pair *p)
{
	memset(p, 0, sizeof(*p));
	p->mtu = UINT32_MAX;
	for (int i = 0; i < 2; i++) {
		struct ry_rail_config cfg;
		struct ry_rail_attr a;
		int ret;

		memset(&cfg, 0, sizeof(cfg));
		ry_test_provider->config(&cfg, i);
		/*
		 * Through ry__rail_open, as the manager opens rails: the rail
		 * then dispatches through the table with every slot filled.
		 * The provider's open points it at its own table, where a slot
		 * it leaves NULL (verbs: pending) is a call to address 0 (it
		 * was: test_fd_readable crashed on rxe whenever the guest was
		 * slow enough to reach pending()).
		 */
		ck_assert_ptr_nonnull(ry__rail_ops(cfg.provider));
		ck_assert_str_eq(ry__rail_ops(cfg.provider)->name,
				 ry_test_provider->ops->name);
		ck_assert_int_eq(ry__rail_open(&cfg, &p->r[i]), 0);
		/* every slot answers, an empty one with -EOPNOTSUPP */
		ret = ry__rail_pending(p->r[i]);
		ck_assert_msg(ret == 0 || ret == -EOPNOTSUPP, "pending: %d",
			      ret);
		ck_assert_int_eq(ry__rail_query(p->r[i], &a), 0);
		ck_assert_int_eq(a.link, RY_LINK_UP);
		ck_assert_uint_gt(a.mtu, 0);
		if (a.mtu < p->mtu)
			p->mtu = a.mtu;
		ck_assert_int_eq(ry__rail_alloc_pd(p->r[i], &p->pd[i]), 0);
		if (ry_test_own_cq) {
			ck_assert_int_eq(ry__rail_create_cq(p->r[i], &p->cq[i]),
					 0);
			ck_assert_ptr_eq(p->cq[i]->rail, p->r[i]);
		}
	}
}

void pair_create_qps(struct ry_test_pair *p)
{
	struct ry_qp_init init = {
	    .max_send_wr = p->max_send_wr ? p->max_send_wr : 256,
	};

	for (int i = 0; i < 2; i++) {
		init.cq = p->cq[i];
		ck_assert_int_eq(ry__rail_create_qp(p->pd[i], &init, &p->qp[i]),
				 0);
		ck_assert_int_eq(p->qp[i]->state, RY_QPS_RESET);
		ck_assert_uint_eq(p->qp[i]->local.qpn, p->qp[i]->qp_num);
		ck_assert_uint_le(p->qp[i]->qp_num, 0xffffff);
		ck_assert_uint_le(p->qp[i]->local.psn, 0xffffff);
	}
	/* QPNs are distinct within a rail only (test_random_qpn_psn): two
	 * HCAs may give their QPs the same number. */
}

int pair_to_rtr(struct ry_qp *qp, const struct ry_qp_attr *at)
{
	int ret;

	for (int i = 0; i < 300; i++) {
		ret = ry__rail_modify_qp(qp, RY_QPS_RTR, at);
		if (ret != -EAGAIN)
			return ret;
		ck_assert_int_eq(qp->state, RY_QPS_INIT);
		usleep(10000);
	}
	return ret;
}

void pair_connect_qps(struct ry_test_pair *p)
{
	struct ry_qp_attr at[2];

	if (!p->attr_set)
		pair_defaults(p);
	for (int i = 0; i < 2; i++) {
		at[i] = p->attr;
		at[i].mtu = p->mtu;
		ck_assert_int_eq(
		    ry__rail_modify_qp(p->qp[i], RY_QPS_INIT, &at[i]), 0);
	}
	for (int i = 0; i < 2; i++) {
		at[i].remote = p->qp[1 - i]->local;
		if (i && at[i].mac) {
			memcpy(at[i].mac_tx, p->attr.mac_rx, RY_QP_MAC_KEY);
			memcpy(at[i].mac_rx, p->attr.mac_tx, RY_QP_MAC_KEY);
		}
		ck_assert_int_eq(pair_to_rtr(p->qp[i], &at[i]), 0);
		ck_assert_int_eq(
		    ry__rail_modify_qp(p->qp[i], RY_QPS_RTS, &at[i]), 0);
		ck_assert_int_eq(p->qp[i]->state, RY_QPS_RTS);
	}
}

void pair_connect(struct ry_test_pair *p)
{
	pair_create_qps(p);
	pair_connect_qps(p);
}

void pair_destroy_qp(struct ry_test_pair *p, int i)
{
	uint64_t t = test_now_ms();

	if (!p->qp[i])
		return;
	/* the manager's progress loop calls this: it must not block (rxe's
	 * ibv_destroy_qp does for seconds while the link is down) */
	ck_assert_int_eq(ry__rail_destroy_qp(p->qp[i]), 0);
	ck_assert_msg(test_now_ms() - t < 500, "destroy_qp blocked %llu ms",
		      (unsigned long long)(test_now_ms() - t));
	p->qp[i] = NULL;
}

void pair_close(struct ry_test_pair *p)
{
	for (int i = 0; i < 2; i++)
		pair_destroy_qp(p, i);
	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(ry__rail_destroy_cq(p->cq[i]), 0);
		ck_assert_int_eq(ry__rail_dealloc_pd(p->pd[i]), 0);
		ry__rail_close(p->r[i]);
	}
	memset(p, 0, sizeof(*p));
}

void pair_progress(struct ry_test_pair *p)
{
	for (int i = 0; i < 2; i++)
		ck_assert_int_eq(ry__rail_progress(p->r[i]), 0);
}

/* Nothing to do right now: sleep on the rail fds when the provider asks
 * for it, as the manager does. */
static void idle(struct ry_test_pair *p, int max_ms)
{
	int ms = ry_test_provider->poll_ms;
	struct pollfd fds[2] = {
	    {.fd = ry__rail_fd(p->r[0]), .events = POLLIN},
	    {.fd = ry__rail_fd(p->r[1]), .events = POLLIN},
	};

	if (ms <= 0)
		return;
	poll(fds, 2, ms < max_ms ? ms : max_ms);
}

int pair_poll(struct ry_test_pair *p, int i, struct ry_wc *wc, int n)
{
	return p->cq[i] ? ry__rail_cq_poll(p->cq[i], wc, n)
			: ry__rail_poll_cq(p->r[i], wc, n);
}

int pair_pending(struct ry_test_pair *p, int i)
{
	return p->cq[i] ? ry__rail_cq_pending(p->cq[i])
			: ry__rail_pending(p->r[i]);
}

bool pair_try_wc(struct ry_test_pair *p, int i, struct ry_wc *wc,
		 int timeout_ms)
{
	uint64_t end = test_now_ms() + (uint64_t)timeout_ms;

	for (;;) {
		uint64_t now;

		if (pair_poll(p, i, wc, 1) == 1)
			return true;
		pair_progress(p);
		if (pair_poll(p, i, wc, 1) == 1)
			return true;
		now = test_now_ms();
		if (now >= end)
			return false;
		idle(p, (int)(end - now));
	}
}

void pair_wait_wc(struct ry_test_pair *p, int i, struct ry_wc *wc,
		  int timeout_ms)
{
	ck_assert_msg(pair_try_wc(p, i, wc, timeout_ms),
		      "no completion on rail %d in %d ms", i, timeout_ms);
}

void pair_spin(struct ry_test_pair *p, int ms)
{
	uint64_t end = test_now_ms() + (uint64_t)ms;
	uint64_t now;

	while ((now = test_now_ms()) < end) {
		pair_progress(p);
		idle(p, (int)(end - now));
	}
}

bool ry_test_ip_bad_config(void (*config)(struct ry_rail_config *, int),
			   struct ry_rail_config *cfg, int n, int *want)
{
	config(cfg, 0);
	switch (n) {
	case 0:
		snprintf(cfg->address, sizeof(cfg->address), "no.such.host");
		*want = -EINVAL;
		return true;
	case 1: /* not an address of this host */
		snprintf(cfg->address, sizeof(cfg->address),
			 "198.19.255.254:0");
		*want = -EADDRNOTAVAIL;
		return true;
	case 2:
		cfg->mtu = 100;
		*want = -EINVAL;
		return true;
	default:
		return false;
	}
}

char test_warn[TEST_WARN_MAX][256];
unsigned test_warn_n;

static void warn_sink(enum ry_log_level level, const char *component,
		      const char *message, void *arg)
{
	(void)component;
	(void)arg;
	if (level <= RY_LOG_WARN && test_warn_n < TEST_WARN_MAX)
		snprintf(test_warn[test_warn_n++], sizeof(test_warn[0]), "%s",
			 message);
}

void test_warn_capture(void)
{
	test_warn_n = 0;
	ry_log_set_sink(warn_sink, NULL);
}

void test_warn_end(void)
{
	ry_log_set_sink(NULL, NULL);
}
