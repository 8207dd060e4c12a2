// SPDX-License-Identifier: BSD-2-Clause
/*
 * The soft rail under injected faults: loss, duplicates, reordering,
 * corruption and delay with every byte checked; retry exhaustion with the
 * head WR failing and the rest flushed; the link switch and the real
 * interface watched through rtnetlink, and another interface's changes
 * never making the rail's fd readable (in a private network namespace, so
 * only when root).
 */
#include <check.h>
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "rails/soft/soft.h"
#include "rails/soft/wire.h"
#include "rail/rail_conformance.h"
#include "soft/soft_provider.h"

static const unsigned ALL = RY_TEST_ACCESS_ALL;

static void faults_both(struct ry_test_pair *p, const struct ry_fault *f)
{
	for (int i = 0; i < 2; i++)
		ck_assert_int_eq(ry__rail_set_fault(p->r[i], f), 0);
}

/* Connected pair with short timers: losses are recovered quickly. */
static void lossy_pair(struct ry_test_pair *p)
{
	ry__soft_test_short_pair(p);
}

/* Every opcode, several sizes, every byte compared. */
static void mix(struct ry_test_pair *p, size_t big)
{
	static const enum ry_wr_opcode ops[] = {
	    RY_WR_RDMA_WRITE,	  RY_WR_RDMA_READ, RY_WR_SEND,
	    RY_WR_RDMA_WRITE_IMM, RY_WR_SEND_IMM,
	};
	/* one byte, one packet's payload at MTU 1500, one byte more */
	size_t one = 1500 - RY__SOFT_IP_UDP_HDR - RY__SOFT_HDR_LEN;
	size_t lens[] = {1, one, one + 1, 20000, big};
	unsigned seed = 1;

	for (unsigned o = 0; o < 5; o++)
		for (unsigned l = 0; l < 5; l++)
			xfer_check(p, ops[o], lens[l], seed++);
}

/*
 * Loss on rail 0's outbound packets (requests, WRITE data), on rail 1's
 * (ACKs, NAKs, READ responses) or on both.  A WR fails with retry exceeded
 * when one exchange loses 7 attempts in a row (retry_cnt 6, the contract's
 * maximum): probability drop^7 per exchange for loss in one direction.  A
 * mix is not one exchange per WR but about a hundred: every single-packet
 * WR, and every window of a large one whose last ACK is the only answer
 * (after a timeout the window restarts at 2 packets).  At 30 % that is
 * 0.3^7 = 2.2e-4 per exchange, about 1 % of runs per case: the protocol
 * working as specified, not a data error, and not a matter of CPU load
 * (under stress-ng the run of timeouts per episode has the same geometric
 * distribution, ratio ~0.25, as on a quiet machine; no timeout fires with
 * an ACK waiting unread).  So heavy one-way loss is 15 %: 0.15^7 = 1.7e-6
 * per exchange, and the mix still sees hundreds of drops and timeouts.
 */
static void loss_case(double drop, size_t big, unsigned rails)
{
	struct ry_test_pair p;
	struct ry_fault f = {.drop = drop};
	struct ry_rail_stats st[2];

	lossy_pair(&p);
	for (int i = 0; i < 2; i++)
		if (rails & (1u << i))
			ck_assert_int_eq(ry__rail_set_fault(p.r[i], &f), 0);
	mix(&p, big);
	for (int i = 0; i < 2; i++)
		ck_assert_int_eq(ry__rail_get_stats(p.r[i], &st[i]), 0);
	ck_assert_uint_gt(st[0].faults_dropped + st[1].faults_dropped, 0);
	ck_assert_uint_gt(st[0].retransmits, 0);
	pair_close(&p);
}

START_TEST(test_loss_1)
{
	loss_case(0.01, 1 << 20, 3);
}
END_TEST
START_TEST(test_loss_10)
{
	loss_case(0.10, 256 << 10, 3);
}
END_TEST
START_TEST(test_loss_15_forward)
{
	loss_case(0.15, 256 << 10, 1);
}
END_TEST
START_TEST(test_loss_15_reverse)
{
	loss_case(0.15, 256 << 10, 2);
}
END_TEST

/*
 * A descheduled owner is no lost path: stalls of several RTOs between
 * progress calls cost neither a retransmission nor a retry.  (It does not
 * pin down why: with everything acknowledged by one late ACK, running the
 * timers before the receive loop would pass too.)
 */
START_TEST(test_stall_past_rto)
{
	struct ry_test_pair p;
	struct ry_rail_stats st;
	uint8_t *a = test_buf(64 << 10, 1), *b = test_buf(64 << 10, 2);
	struct ry_mr *ma, *mb;
	struct ry_wc wc;
	int stalls = 0;

	lossy_pair(&p); /* 2 ms RTO, 6 retries */
	ck_assert_int_eq(ry__rail_reg_mr(p.pd[0], a, 64 << 10, ALL, &ma), 0);
	ck_assert_int_eq(ry__rail_reg_mr(p.pd[1], b, 64 << 10, ALL, &mb), 0);
	for (int i = 0; i < 4; i++) {
		struct ry_send_wr wr = {
		    .wr_id = (uint64_t)i,
		    .opcode = RY_WR_RDMA_WRITE,
		    .sge = {(uintptr_t)a, 64 << 10, ma->lkey},
		    .remote_addr = (uintptr_t)b,
		    .rkey = mb->rkey,
		};
		int rounds = 0;

		test_fill(a, 64 << 10, 10 + (unsigned)i);
		ck_assert_int_eq(ry__rail_post_send(p.qp[0], &wr, 1), 0);
		/* each stall 4 RTOs (the RTO's cap) with the ACK queued */
		while (pair_poll(&p, 0, &wc, 1) == 0) {
			ck_assert_int_lt(rounds++, 1000);
			pair_progress(&p);
			usleep(8000);
		}
		stalls += rounds;
		ck_assert_int_eq(wc.status, RY_WC_SUCCESS);
		ck_assert_uint_eq(wc.wr_id, (uint64_t)i);
		ck_assert(!memcmp(a, b, 64 << 10));
	}
	ck_assert_int_gt(stalls, 6); /* more than the retries */
	ck_assert_int_eq(ry__rail_get_stats(p.r[0], &st), 0);
	ck_assert_uint_eq(st.retransmits, 0);
	ck_assert_int_eq(ry__rail_dereg_mr(ma), 0);
	ck_assert_int_eq(ry__rail_dereg_mr(mb), 0);
	free(a);
	free(b);
	pair_close(&p);
}
END_TEST

START_TEST(test_duplicate_reorder)
{
	struct ry_test_pair p;
	struct ry_fault f = {.duplicate = 0.2, .reorder = 0.2};
	struct ry_rail_stats st;

	lossy_pair(&p);
	faults_both(&p, &f);
	mix(&p, 512 << 10);
	ck_assert_int_eq(ry__rail_get_stats(p.r[1], &st), 0);
	ck_assert_uint_gt(st.dup_rcvd, 0);
	ck_assert_int_eq(ry__rail_get_stats(p.r[0], &st), 0);
	ck_assert_uint_gt(st.faults_duplicated, 0);
	ck_assert_uint_gt(st.faults_reordered, 0);
	pair_close(&p);
}
END_TEST

/*
 * Reordering without loss (the fault holds a packet back 300 us and later
 * ones overtake it): the receiver holds what arrives ahead of the gap
 * until it fills, so every byte arrives and nothing is NAKed or sent
 * twice; requests and READ responses alike.  One WR at a time of at most
 * 64 KiB keeps fewer packets in flight than RY__SOFT_HOLD_SPAN, and the
 * long timers and hold time leave no retransmission to timing.
 */
START_TEST(test_reorder_no_resend)
{
	struct ry_test_pair p;
	struct ry_fault f = {.reorder = 0.05};
	struct ry_rail_stats st[2];

	pair_open(&p);
	p.attr_set = true;
	p.attr = (struct ry_qp_attr){.access = ALL,
				     .ack_timeout_us = 2000000,
				     .retry_cnt = 6,
				     .rnr_retry = 6,
				     .max_rd_atomic = 4};
	pair_connect(&p);
	for (int i = 0; i < 2; i++)
		ry__soft_test_set_hold(p.r[i], 60ull * 1000000000);
	faults_both(&p, &f);
	for (int k = 0; k < 4; k++)
		mix(&p, 64 << 10);
	for (int i = 0; i < 2; i++)
		ck_assert_int_eq(ry__rail_get_stats(p.r[i], &st[i]), 0);
	ck_assert_uint_gt(st[0].faults_reordered, 0);
	ck_assert_uint_gt(st[1].faults_reordered, 0);
	for (int i = 0; i < 2; i++) {
		ck_assert_uint_eq(st[i].naks_sent, 0);
		ck_assert_uint_eq(st[i].retransmits, 0);
	}
	ck_assert_uint_gt(st[0].rx_held, 0); /* READ responses */
	ck_assert_uint_gt(st[1].rx_held, 0); /* requests */
	pair_close(&p);
}
END_TEST

START_TEST(test_corrupt)
{
	struct ry_test_pair p;
	struct ry_fault f = {.corrupt = 0.05};
	struct ry_rail_stats st[2];

	lossy_pair(&p);
	faults_both(&p, &f);
	mix(&p, 256 << 10);
	for (int i = 0; i < 2; i++)
		ck_assert_int_eq(ry__rail_get_stats(p.r[i], &st[i]), 0);
	ck_assert_uint_gt(st[0].faults_corrupted, 0);
	/* every corrupted packet was caught by some check */
	ck_assert_uint_ge(st[0].rx_dropped + st[1].rx_dropped,
			  st[0].faults_corrupted + st[1].faults_corrupted);
	pair_close(&p);
}
END_TEST

START_TEST(test_delay)
{
	struct ry_test_pair p;
	struct ry_fault f = {.delay_us = 3000};
	uint64_t t0;

	pair_open(&p);
	pair_connect(&p); /* 10 ms ack timeout: a 6 ms RTT is no loss */
	faults_both(&p, &f);
	t0 = test_now_ms();
	xfer_check(&p, RY_WR_RDMA_WRITE, 4096, 1);
	ck_assert_uint_ge(test_now_ms() - t0, 6);
	xfer_check(&p, RY_WR_RDMA_READ, 100000, 2);
	pair_close(&p);
}
END_TEST

/* An unplugged cable: the head WR fails with retry exceeded after
 * retry_cnt timeouts, everything behind it is flushed, in order. */
static void exhaust_case(bool use_link)
{
	struct ry_test_pair p;
	struct ry_fault f = {.drop_all = true};
	uint8_t *a = test_buf(1 << 20, 1), *b = test_buf(1 << 20, 2);
	struct ry_mr *ma, *mb;
	struct ry_wc wc;
	uint64_t t0;

	pair_open(&p);
	p.attr_set = true;
	p.attr = (struct ry_qp_attr){.access = ALL,
				     .ack_timeout_us = 5000,
				     .retry_cnt = 3,
				     .rnr_retry = 3,
				     .min_rnr_timer_us = 500,
				     .max_rd_atomic = 2};
	pair_connect(&p);
	ck_assert_int_eq(ry__rail_reg_mr(p.pd[0], a, 1 << 20, ALL, &ma), 0);
	ck_assert_int_eq(ry__rail_reg_mr(p.pd[1], b, 1 << 20, ALL, &mb), 0);
	if (use_link)
		ck_assert_int_eq(ry__rail_set_link(p.r[1], RY_LINK_DOWN), 0);
	else
		ck_assert_int_eq(ry__rail_set_fault(p.r[1], &f), 0);
	t0 = test_now_ms();
	for (int i = 0; i < 10; i++) {
		struct ry_send_wr wr = {
		    .wr_id = (uint64_t)i,
		    .opcode = i % 4 == 3 ? RY_WR_RDMA_READ : RY_WR_RDMA_WRITE,
		    .sge = {(uintptr_t)a, 100000, ma->lkey},
		    .remote_addr = (uintptr_t)b,
		    .rkey = mb->rkey,
		};

		ck_assert_int_eq(ry__rail_post_send(p.qp[0], &wr, 1), 0);
	}
	pair_wait_wc(&p, 0, &wc, 5000);
	ck_assert_int_eq(wc.status, RY_WC_RETRY_EXCEEDED);
	ck_assert_uint_eq(wc.wr_id, 0);
	/* 1 try + 3 retries, 5 ms each */
	ck_assert_uint_ge(test_now_ms() - t0, 19);
	ck_assert_int_eq(p.qp[0]->state, RY_QPS_ERR);
	for (int i = 1; i < 10; i++) {
		pair_wait_wc(&p, 0, &wc, 1000);
		ck_assert_int_eq(wc.status, RY_WC_FLUSHED);
		ck_assert_uint_eq(wc.wr_id, (uint64_t)i);
	}
	ck_assert_int_eq(ry__rail_dereg_mr(ma), 0);
	ck_assert_int_eq(ry__rail_dereg_mr(mb), 0);
	free(a);
	free(b);
	pair_close(&p);
}

START_TEST(test_retry_exhausted)
{
	exhaust_case(false);
}
END_TEST
START_TEST(test_link_down_exhausts)
{
	exhaust_case(true);
}
END_TEST

/*
 * A write of len bytes posted while side's rail drops everything; after
 * ms of that no completion yet, and once the rail carries again the write
 * completes with nothing lost.  Over a pair with a 10 ms timeout and 6
 * retries.
 */
static void outage_case(uint32_t len, int side, unsigned ms)
{
	struct ry_test_pair p;
	struct ry_fault down = {.drop_all = true}, up = {0};
	uint8_t *a = test_buf(len, 1), *b = test_buf(len, 2);
	struct ry_mr *ma, *mb;
	struct ry_send_wr wr;
	struct ry_wc wc;

	pair_open(&p);
	pair_connect(&p); /* 10 ms timeout, 6 retries */
	ck_assert_int_eq(ry__rail_reg_mr(p.pd[0], a, len, ALL, &ma), 0);
	ck_assert_int_eq(ry__rail_reg_mr(p.pd[1], b, len, ALL, &mb), 0);
	ck_assert_int_eq(ry__rail_set_fault(p.r[side], &down), 0);
	wr = (struct ry_send_wr){.wr_id = 1,
				 .opcode = RY_WR_RDMA_WRITE,
				 .sge = {(uintptr_t)a, len, ma->lkey},
				 .remote_addr = (uintptr_t)b,
				 .rkey = mb->rkey};
	ck_assert_int_eq(ry__rail_post_send(p.qp[0], &wr, 1), 0);
	pair_spin(&p, ms);
	ck_assert_int_eq(pair_poll(&p, 0, &wc, 1), 0);
	ck_assert_int_eq(ry__rail_set_fault(p.r[side], &up), 0);
	pair_wait_wc(&p, 0, &wc, 5000);
	ck_assert_int_eq(wc.status, RY_WC_SUCCESS);
	ck_assert(!memcmp(a, b, len));
	ck_assert_int_eq(ry__rail_dereg_mr(ma), 0);
	ck_assert_int_eq(ry__rail_dereg_mr(mb), 0);
	free(a);
	free(b);
	pair_close(&p);
}

/* The cable comes back before the retries run out: nothing is lost. */
START_TEST(test_unplug_replug)
{
	outage_case(1 << 20, 0, 25);
}
END_TEST

/*
 * A peer unreachable for 400 ms (a starved server, a switch rebooting a
 * port) with a 10 ms timeout and 6 retries: the retransmissions back off
 * (10, 20, 40, ... ms), so the WR waits it out and completes, where seven
 * tries of 10 to 40 ms each gave up within 280 ms.
 */
START_TEST(test_blackout_backoff)
{
	outage_case(64 << 10, 1, 400);
}
END_TEST

/* Fault settings from the config are applied at open. */
static void lossy_config(struct ry_rail_config *cfg, int idx)
{
	ry__soft_test_config(cfg, idx);
	cfg->fault.drop = 0.05;
	cfg->fault.duplicate = 0.05;
}

START_TEST(test_config_fault)
{
	static const struct ry_test_provider lossy = {
	    .name = "soft-lossy",
	    .ops = &ry__soft_ops,
	    .config = lossy_config,
	    .has_faults = true,
	};
	struct ry_rail_config cfg = {0};
	struct ry_fault bad = {.drop = 1.5};
	struct ry_rail_stats st;
	struct ry_test_pair p;
	struct ry_rail *r;

	ry_test_provider = &lossy;
	lossy_pair(&p);
	xfer_check(&p, RY_WR_RDMA_WRITE, 1 << 20, 1);
	ck_assert_int_eq(ry__rail_get_stats(p.r[0], &st), 0);
	ck_assert_uint_gt(st.faults_dropped, 0);
	ck_assert_uint_gt(st.faults_duplicated, 0);
	pair_close(&p);
	ry_test_provider = &ry__soft_test_provider;

	ry__soft_test_config(&cfg, 0);
	cfg.fault.down = true;
	ck_assert_int_eq(ry__rail_open(&cfg, &r), 0);
	ck_assert_int_eq(ry__rail_set_fault(r, &bad), -EINVAL);
	ry__rail_close(r);
	snprintf(cfg.address, sizeof(cfg.address), "not-an-address");
	ck_assert_int_eq(ry__rail_open(&cfg, &r), -EINVAL);
}
END_TEST

/*
 * In the caller's fresh network namespace: a veth pair ry0/ry1 up with
 * 198.18.0.1 on ry0, and a soft rail bound to ry0 once the carrier is up
 * (it comes asynchronously) and the fd calm, its events so far read.
 */
static struct ry_rail *veth_rail(void)
{
	struct ry_rail_config cfg = {0};
	struct ry_rail_event ev;
	struct ry_rail *r;
	struct pollfd pfd;

	if (system("ip link set lo up && ip link add ry0 type veth peer name "
		   "ry1 && ip addr add 198.18.0.1/24 dev ry0 && "
		   "ip link set ry1 up && ip link set ry0 up"))
		return NULL;
	cfg.provider = RY_PROVIDER_SOFT;
	snprintf(cfg.name, sizeof(cfg.name), "nl");
	snprintf(cfg.address, sizeof(cfg.address), "198.18.0.1:0");
	snprintf(cfg.interface, sizeof(cfg.interface), "ry0");
	if (ry__rail_open(&cfg, &r))
		return NULL;
	pfd = (struct pollfd){.fd = ry__rail_fd(r), .events = POLLIN};
	for (uint64_t t0 = test_now_ms(); test_now_ms() - t0 < 2000;) {
		struct ry_rail_attr a;

		ry__rail_progress(r);
		ry__rail_progress(r);
		ry__rail_query(r, &a);
		if (a.link == RY_LINK_UP && poll(&pfd, 1, 0) == 0)
			break;
		usleep(1000);
	}
	while (!ry__rail_get_event(r, &ev))
		;
	return r;
}

/* The type of the rail's next event within a second; -1: none. */
static int next_event(struct ry_rail *r)
{
	struct ry_rail_event ev;

	for (uint64_t t0 = test_now_ms(); test_now_ms() - t0 < 1000;) {
		ry__rail_progress(r);
		if (!ry__rail_get_event(r, &ev))
			return (int)ev.type;
	}
	return -1;
}

/*
 * rtnetlink: `ip link set DEV down` on the rail's interface is seen as
 * RY_RAIL_EV_LINK_DOWN within milliseconds.  Runs in a child in a private
 * network namespace with a veth pair on 198.18.0.1.
 */
static int netns_child(void)
{
	struct ry_rail *r;
	uint64_t t0;

	if (unshare(CLONE_NEWNET))
		return 10;
	r = veth_rail();
	if (!r)
		return 11;
	if (system("ip link set ry0 down"))
		return 13;
	t0 = test_now_ms();
	if (next_event(r) != RY_RAIL_EV_LINK_DOWN || test_now_ms() - t0 > 100)
		return 14;
	if (system("ip link set ry0 up"))
		return 15;
	if (next_event(r) != RY_RAIL_EV_LINK_UP)
		return 16;
	ry__rail_close(r);
	return 0;
}

/* Runs child() in a forked process (it unshares its own network
 * namespace); false when this is not root with iproute2. */
static bool in_netns_child(const char *test, int (*child)(void), int *code)
{
	pid_t pid;
	int status;

	if (geteuid() != 0 || system("ip -V >/dev/null 2>&1")) {
		fprintf(stderr, "%s: needs root and iproute2, skipped\n", test);
		return false;
	}
	fflush(NULL);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	/* exit(), not _exit(): library destructors run, so that valgrind
	 * does not see the child's libnl globals as leaks */
	if (pid == 0)
		exit(child());
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status), "netns child died");
	*code = WEXITSTATUS(status);
	return true;
}

START_TEST(test_netlink_link_down)
{
	int code;

	if (in_netns_child("test_netlink_link_down", netns_child, &code))
		ck_assert_msg(!code, "netns child failed with %d", code);
}
END_TEST

/*
 * A link change in the namespace about another interface never reaches
 * the rail: its fd stays calm while a background shell flaps an
 * unrelated veth (on a host where containers come and go, each veth would
 * otherwise wake every rail thread), and the rail's own interface going
 * down still makes the fd readable and says LINK_DOWN.
 */
static int netns_calm_child(void)
{
	struct ry_rail *r;
	struct pollfd pfd;
	unsigned seen = 0;
	pid_t sh;
	int status = -1, ev;

	if (unshare(CLONE_NEWNET))
		return 20;
	if (system("ip link add ry2 type veth peer name ry3"))
		return 21;
	r = veth_rail();
	if (!r)
		return 22;
	pfd = (struct pollfd){.fd = ry__rail_fd(r), .events = POLLIN};
	if (poll(&pfd, 1, 0) != 0)
		return 23;
	fflush(NULL);
	sh = fork();
	if (sh < 0)
		return 24;
	if (sh == 0)
		_exit(
		    system("for i in 1 2 3 4 5 6 7 8 9 10; do ip link set ry2 "
			   "up; ip link set ry2 down; done; ip link del ry2"));
	for (uint64_t t0 = test_now_ms(); test_now_ms() - t0 < 10000;) {
		if (waitpid(sh, &status, WNOHANG) == sh)
			break;
		if (poll(&pfd, 1, 1) == 1) {
			seen++;
			ry__rail_progress(r);
		}
	}
	/* anything the last flap sent is queued by now */
	if (poll(&pfd, 1, 50) == 1)
		seen++;
	if (!WIFEXITED(status) || WEXITSTATUS(status))
		return 25;
	if (seen) {
		fprintf(stderr,
			"netlink: fd readable %u times for another "
			"interface\n",
			seen);
		return 26;
	}
	if (system("ip link set ry0 down"))
		return 27;
	if (poll(&pfd, 1, 2000) != 1)
		return 28;
	ev = next_event(r);
	ry__rail_close(r);
	return ev == RY_RAIL_EV_LINK_DOWN ? 0 : 29;
}

START_TEST(test_netlink_other_link_silent)
{
	int code;

	if (in_netns_child("test_netlink_other_link_silent", netns_calm_child,
			   &code))
		ck_assert_msg(!code,
			      "netns child failed with %d (26: the fd woke for "
			      "another interface; 28/29: not for its own)",
			      code);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("soft_faults");
	TCase *tc = tcase_create("faults");
	SRunner *sr;
	int failed;

	ry_test_provider = &ry__soft_test_provider;
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_loss_1);
	tcase_add_test(tc, test_loss_10);
	tcase_add_test(tc, test_loss_15_forward);
	tcase_add_test(tc, test_loss_15_reverse);
	tcase_add_test(tc, test_stall_past_rto);
	tcase_add_test(tc, test_duplicate_reorder);
	tcase_add_test(tc, test_reorder_no_resend);
	tcase_add_test(tc, test_corrupt);
	tcase_add_test(tc, test_delay);
	tcase_add_test(tc, test_retry_exhausted);
	tcase_add_test(tc, test_link_down_exhausts);
	tcase_add_test(tc, test_unplug_replug);
	tcase_add_test(tc, test_blackout_backoff);
	tcase_add_test(tc, test_config_fault);
	tcase_add_test(tc, test_netlink_link_down);
	tcase_add_test(tc, test_netlink_other_link_silent);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
