// SPDX-License-Identifier: BSD-2-Clause
/*
 * The tcp rail's own rules, beyond the contract suite: how a connection
 * is made and whom the listener believes.
 *
 *   hello_before_rtr   the connecting side reaches RTS (and sends HELLO)
 *                      while the other QP is still in INIT: the HELLO is
 *                      parked and taken at RTR
 *   forged_hello       a stranger's connection naming a live QP with a
 *                      wrong cookie, or the right cookie but the wrong
 *                      peer, is closed; the QPs' own connection is
 *                      untouched and carries data
 *   stale_hello        after a reconnect (new QPs), the old connection's
 *                      HELLO replayed is refused
 *   old_version_hello  a HELLO of another wire version (a newer release's)
 *                      is closed and said once a rail; the QPs still work
 *   garbage            a connection that sends no HELLO but bytes is
 *                      closed, and nothing lands
 *   pend_flood         more silent connections than the listener parks:
 *                      the oldest are closed, and a QP pair connecting
 *                      through the same listener still comes up
 *   err_closes         a QP moved to ERR resets its connection: the idle
 *                      peer QP's next WR fails (RETRY_EXCEEDED) at once,
 *                      not after a timeout
 *   unanswered         the peer's socket takes the bytes but its rail never
 *                      runs: the WR fails RETRY_EXCEEDED after the ack
 *                      timeout x (retry_cnt + 1), as on an RC QP
 *   split_stream       a peer (a raw socket after a good HELLO) whose
 *                      messages the stream cuts anywhere: a header in
 *                      pieces, a payload with part or all of the next
 *                      header behind it, a header-only READ and a WRITE
 *                      in one segment: each lands whole, where its header
 *                      says and nowhere else, and is answered in order
 *   payload_wakes_once a 200 KiB WRITE in three pieces: its socket is not
 *                      readable for the middle one (SO_RCVLOWAT), the rail
 *                      wakes for the end and for a small WRITE behind it
 */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "railyard/railyard.h"
#include "rail/rail_conformance.h"
#include "rails/tcp/tcp_int.h" /* a connection's socket (to_tqp) */
#include "rails/tcp/tcp_wire.h"
#include "tcp/tcp_provider.h"

static const unsigned ALL = RY_TEST_ACCESS_ALL;

/* The listener's port of rail i. */
static uint16_t port_of(struct ry_test_pair *p, int i)
{
	struct ry_rail_attr a;

	ck_assert_int_eq(ry__rail_query(p->r[i], &a), 0);
	return a.local.udp_port;
}

/* A raw client connected to rail i's listener. */
static int raw_connect(struct ry_test_pair *p, int i)
{
	struct sockaddr_in sa = {.sin_family = AF_INET,
				 .sin_port = htons(port_of(p, i))};
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	ck_assert_int_ge(fd, 0);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	return fd;
}

static void send_hello(int fd, uint32_t qpn, uint64_t cookie, uint32_t src_qpn,
		       uint64_t src_cookie)
{
	uint8_t h[RY__TCP_HDR_LEN];
	struct ry__tcp_msg m = {.opcode = RY__TCP_OP_HELLO,
				.qpn = qpn,
				.cookie = cookie,
				.va = src_cookie,
				.rkey = src_qpn};

	ry__tcp_wire_encode(h, &m);
	ck_assert_int_eq(send(fd, h, sizeof(h), 0), (ssize_t)sizeof(h));
}

/* The rail closed our raw connection (EOF or reset) within 2 s. */
static void expect_closed(struct ry_test_pair *p, int fd)
{
	uint64_t end = test_now_ms() + 2000;
	char c;

	for (;;) {
		struct pollfd pfd = {.fd = fd, .events = POLLIN};
		ssize_t n;

		pair_progress(p);
		if (poll(&pfd, 1, 10) == 1) {
			n = recv(fd, &c, 1, MSG_DONTWAIT);
			ck_assert_msg(n <= 0, "the rail answered a stranger");
			if (n == 0 || errno == ECONNRESET)
				break;
		}
		ck_assert_msg(test_now_ms() < end, "stranger not closed");
	}
	close(fd);
}

/* Index (0/1) of the QP that connects: the smaller listener port. */
static int active_side(struct ry_test_pair *p)
{
	return port_of(p, 0) < port_of(p, 1) ? 0 : 1;
}

START_TEST(test_hello_before_rtr)
{
	struct ry_test_pair p;
	struct ry_qp_attr at[2];
	int a, b;

	pair_open(&p);
	pair_defaults(&p);
	pair_create_qps(&p);
	a = active_side(&p);
	b = 1 - a;
	for (int i = 0; i < 2; i++) {
		at[i] = p.attr;
		at[i].mtu = p.mtu;
		at[i].remote = p.qp[1 - i]->local;
		ck_assert_int_eq(
		    ry__rail_modify_qp(p.qp[i], RY_QPS_INIT, &at[i]), 0);
	}
	ck_assert_int_eq(pair_to_rtr(p.qp[a], &at[a]), 0);
	ck_assert_int_eq(ry__rail_modify_qp(p.qp[a], RY_QPS_RTS, &at[a]), 0);
	/* the passive rail accepts and reads the HELLO: its QP is in INIT */
	pair_spin(&p, 50);
	ck_assert_int_eq(p.qp[b]->state, RY_QPS_INIT);
	ck_assert_int_eq(pair_to_rtr(p.qp[b], &at[b]), 0);
	ck_assert_int_eq(ry__rail_modify_qp(p.qp[b], RY_QPS_RTS, &at[b]), 0);
	xfer_check(&p, RY_WR_RDMA_WRITE, 65536, 1);
	xfer_check(&p, RY_WR_SEND, 4096, 2);
	xfer_check(&p, RY_WR_RDMA_READ, 100000, 3);
	pair_close(&p);
}
END_TEST

START_TEST(test_forged_hello)
{
	struct ry_test_pair p;
	int fd, b;

	pair_open(&p);
	pair_connect(&p);
	xfer_check(&p, RY_WR_RDMA_WRITE, 4096, 1);
	/* the passive QP was taken already; try both rails' QPs anyway */
	for (b = 0; b < 2; b++) {
		struct ry_qp *q = p.qp[b], *o = p.qp[1 - b];

		fd = raw_connect(&p, b);
		send_hello(fd, q->qp_num, q->local.cookie ^ 1, o->qp_num,
			   o->local.cookie);
		expect_closed(&p, fd);
		fd = raw_connect(&p, b);
		send_hello(fd, q->qp_num, q->local.cookie, o->qp_num ^ 2,
			   o->local.cookie);
		expect_closed(&p, fd);
		fd = raw_connect(&p, b);
		send_hello(fd, q->qp_num, q->local.cookie, o->qp_num,
			   o->local.cookie);
		/* even the right names: the QP has its connection */
		expect_closed(&p, fd);
	}
	xfer_check(&p, RY_WR_RDMA_WRITE, 1 << 20, 2);
	xfer_check(&p, RY_WR_RDMA_READ, 1 << 20, 3);
	pair_close(&p);
}
END_TEST

/* A node of another release (wire version 2) connecting: closed, said
 * once a rail, and the QPs' own connection unharmed. */
START_TEST(test_old_version_hello)
{
	struct ry_test_pair p;
	uint8_t h[RY__TCP_HDR_LEN];
	int fd, b;

	pair_open(&p);
	pair_connect(&p);
	b = 1 - active_side(&p);
	test_warn_capture();
	for (int i = 0; i < 2; i++) {
		struct ry__tcp_msg m = {.opcode = RY__TCP_OP_HELLO,
					.qpn = p.qp[b]->qp_num,
					.cookie = p.qp[b]->local.cookie,
					.va = p.qp[1 - b]->local.cookie,
					.rkey = p.qp[1 - b]->qp_num};

		fd = raw_connect(&p, b);
		ry__tcp_wire_encode(h, &m);
		ry__tcp_put_version(h, RY__TCP_WIRE_VERSION + 1);
		ck_assert_int_eq(send(fd, h, sizeof(h), 0), (ssize_t)sizeof(h));
		expect_closed(&p, fd);
	}
	test_warn_end();
	ck_assert_uint_eq(test_warn_n, 1);
	ck_assert_msg(strstr(test_warn[0], "tcp wire version 2") &&
			  strstr(test_warn[0], "this node 1"),
		      "%s", test_warn[0]);
	xfer_check(&p, RY_WR_RDMA_WRITE, 1 << 20, 2);
	pair_close(&p);
}
END_TEST

START_TEST(test_stale_hello)
{
	struct ry_test_pair p;
	uint32_t qpn[2];
	uint64_t cookie[2];
	int fd, b;

	pair_open(&p);
	pair_connect(&p);
	b = 1 - active_side(&p);
	for (int i = 0; i < 2; i++) {
		qpn[i] = p.qp[i]->qp_num;
		cookie[i] = p.qp[i]->local.cookie;
		ck_assert_int_eq(ry__rail_modify_qp(p.qp[i], RY_QPS_ERR, NULL),
				 0);
		ck_assert_int_eq(
		    ry__rail_modify_qp(p.qp[i], RY_QPS_RESET, NULL), 0);
		/* RESET draws a new cookie: the old connection's is void */
		ck_assert_uint_ne(p.qp[i]->local.cookie, cookie[i]);
	}
	/* the old HELLO, replayed while the QPs reconnect */
	fd = raw_connect(&p, b);
	send_hello(fd, qpn[b], cookie[b], qpn[1 - b], cookie[1 - b]);
	pair_connect_qps(&p);
	expect_closed(&p, fd);
	xfer_check(&p, RY_WR_RDMA_WRITE, 65536, 1);
	pair_close(&p);
}
END_TEST

START_TEST(test_garbage)
{
	struct ry_test_pair p;
	struct region r;
	uint8_t junk[4096], *snap;
	int fd;

	pair_open(&p);
	pair_connect(&p);
	region_get(&p, 1, &r, 4096, 7, ALL);
	snap = malloc(4096 + 2 * GUARD);
	memcpy(snap, r.buf, 4096 + 2 * GUARD);
	/* a WRITE header aimed at a real region, but no HELLO first */
	memset(junk, 0xab, sizeof(junk));
	{
		struct ry__tcp_msg m = {.opcode = RY__TCP_OP_WRITE,
					.qpn = p.qp[1]->qp_num,
					.cookie = p.qp[1]->local.cookie,
					.va = (uintptr_t)r.mr->addr,
					.rkey = r.mr->rkey,
					.len = 1024};

		ry__tcp_wire_encode(junk, &m);
	}
	fd = raw_connect(&p, 1);
	ck_assert_int_eq(send(fd, junk, sizeof(junk), 0),
			 (ssize_t)sizeof(junk));
	expect_closed(&p, fd);
	pair_spin(&p, 20);
	ck_assert(!memcmp(snap, r.buf, 4096 + 2 * GUARD));
	xfer_check(&p, RY_WR_RDMA_WRITE, 4096, 1);
	free(snap);
	region_put(&r);
	pair_close(&p);
}
END_TEST

START_TEST(test_pend_flood)
{
	enum { N = 300 }; /* above the listener's 256 parked sockets */
	struct ry_test_pair p;
	int fd[N];

	pair_open(&p);
	for (int i = 0; i < N; i++) {
		fd[i] = raw_connect(&p, 0);
		if (i % 32 == 31)
			pair_progress(&p);
	}
	pair_spin(&p, 20);
	/* the first ones were pushed out: closed by the rail */
	expect_closed(&p, fd[0]);
	pair_connect(&p);
	xfer_check(&p, RY_WR_RDMA_WRITE, 65536, 1);
	xfer_check(&p, RY_WR_RDMA_READ, 65536, 2);
	for (int i = 1; i < N; i++)
		close(fd[i]);
	pair_spin(&p, 20);
	xfer_check(&p, RY_WR_SEND, 4096, 3);
	pair_close(&p);
}
END_TEST

START_TEST(test_err_closes)
{
	struct ry_test_pair p;
	struct region a, b;
	struct ry_send_wr wr;
	struct ry_rail_event ev;
	struct ry_wc wc;
	uint64_t t;

	pair_open(&p);
	pair_defaults(&p);
	/* long timeouts: only the reset can end it this fast */
	p.attr.ack_timeout_us = 1000000;
	p.attr.retry_cnt = 6;
	pair_connect(&p);
	region_get(&p, 0, &a, 4096, 1, ALL);
	region_get(&p, 1, &b, 4096, 2, ALL);
	xfer_check(&p, RY_WR_RDMA_WRITE, 4096, 1);
	ck_assert_int_eq(ry__rail_modify_qp(p.qp[0], RY_QPS_ERR, NULL), 0);
	/* the reset reaches an idle QP first: its next WR fails */
	pair_spin(&p, 50);
	t = test_now_ms();
	wr = wr_make(RY_WR_RDMA_WRITE, &b, &a, 4096, 5);
	ck_assert_int_eq(ry__rail_post_send(p.qp[1], &wr, 1), 0);
	for (;;) {
		struct ry_test_pair q = p;

		/* rail 1's completions, on its side */
		if (pair_poll(&q, 1, &wc, 1) == 1)
			break;
		pair_progress(&p);
		ck_assert_msg(test_now_ms() - t < 2000, "no completion");
	}
	ck_assert_uint_eq(wc.wr_id, 5);
	ck_assert_msg(wc.status == RY_WC_RETRY_EXCEEDED, "got %s",
		      ry_wc_status_str(wc.status));
	ck_assert_int_eq(p.qp[1]->state, RY_QPS_ERR);
	/* and the rail said so: the manager fails over at once */
	ck_assert_int_eq(ry__rail_get_event(p.r[1], &ev), 0);
	ck_assert_int_eq(ev.type, RY_RAIL_EV_QP_FATAL);
	ck_assert_uint_eq(ev.qpn, p.qp[1]->qp_num);
	region_put(&a);
	region_put(&b);
	pair_close(&p);
}
END_TEST

/* A WRITE or READ_REQ of the raw peer at h (its header), psn in order. */
static void raw_msg(uint8_t *h, struct ry_qp *to, uint32_t psn, uint8_t op,
		    struct region *r, size_t off, uint32_t len)
{
	struct ry__tcp_msg m = {.opcode = op,
				.qpn = to->qp_num,
				.cookie = to->local.cookie,
				.psn = psn & 0xffffff,
				.va = (uintptr_t)r->mr->addr + off,
				.rkey = r->mr->rkey};

	if (op == RY__TCP_OP_READ_REQ)
		m.rlen = len;
	else
		m.len = len;
	ry__tcp_wire_encode(h, &m);
}

/* Send len bytes of s in pieces ending at cuts[] (ascending, < len), the
 * rail run between them so that it reads each piece alone. */
static void send_cut(struct ry_test_pair *p, int fd, const uint8_t *s,
		     size_t len, const size_t *cuts, int ncuts)
{
	size_t at = 0;

	for (int i = 0; i <= ncuts; i++) {
		size_t end = i < ncuts ? cuts[i] : len;

		ck_assert_int_eq(send(fd, s + at, end - at, 0),
				 (ssize_t)(end - at));
		at = end;
		pair_spin(p, 5);
	}
}

/* Read len bytes the rail sends the raw peer, running it meanwhile. */
static void raw_recv(struct ry_test_pair *p, int fd, uint8_t *d, size_t len)
{
	uint64_t end = test_now_ms() + 5000;
	size_t got = 0;

	while (got < len) {
		ssize_t n = recv(fd, d + got, len - got, MSG_DONTWAIT);

		if (n > 0)
			got += (size_t)n;
		else
			ck_assert_msg(n < 0 && errno == EAGAIN,
				      "connection closed");
		pair_progress(p);
		ck_assert_msg(test_now_ms() < end, "no answer");
	}
}

/* The next message from the rail is an ACK (syndrome OK) up to psn. */
static void expect_ack(struct ry_test_pair *p, int fd, uint32_t psn)
{
	uint8_t h[RY__TCP_HDR_LEN];
	struct ry__tcp_msg m;

	for (;;) {
		raw_recv(p, fd, h, sizeof(h));
		ck_assert_int_eq(ry__tcp_wire_decode(h, &m), 0);
		ck_assert_int_eq(m.opcode, RY__TCP_OP_ACK);
		ck_assert_int_eq(m.syndrome, RY__TCP_SYN_OK);
		if (m.psn == (psn & 0xffffff))
			return;
	}
}

START_TEST(test_unanswered)
{
	struct ry_test_pair p;
	struct region a, b;
	struct ry_send_wr wr;
	struct ry_wc wc;
	uint64_t t;
	int n;

	pair_open(&p);
	pair_defaults(&p);
	p.attr.ack_timeout_us = 20000;
	p.attr.retry_cnt = 2; /* 60 ms without an answer */
	pair_connect(&p);
	region_get(&p, 0, &a, 4096, 1, ALL);
	region_get(&p, 1, &b, 4096, 2, ALL);
	xfer_check(&p, RY_WR_RDMA_WRITE, 4096, 1);
	/* an idle QP is not timed out: nothing of it is unanswered */
	t = test_now_ms();
	while (test_now_ms() - t < 200)
		ck_assert_int_eq(ry__rail_progress(p.r[0]), 0);
	ck_assert_int_eq(p.qp[0]->state, RY_QPS_RTS);
	/* from now on only rail 0 runs: the write is never answered */
	wr = wr_make(RY_WR_RDMA_WRITE, &a, &b, 4096, 7);
	ck_assert_int_eq(ry__rail_post_send(p.qp[0], &wr, 1), 0);
	t = test_now_ms();
	for (;;) {
		struct ry_test_pair q = p;

		ck_assert_int_eq(ry__rail_progress(p.r[0]), 0);
		n = pair_poll(&q, 0, &wc, 1);
		if (n == 1)
			break;
		ck_assert_msg(test_now_ms() - t < 3000, "no completion");
		usleep(1000);
	}
	ck_assert_uint_eq(wc.wr_id, 7);
	ck_assert_msg(wc.status == RY_WC_RETRY_EXCEEDED, "got %s",
		      ry_wc_status_str(wc.status));
	ck_assert_int_eq(p.qp[0]->state, RY_QPS_ERR);
	region_put(&a);
	region_put(&b);
	pair_close(&p);
}
END_TEST

/*
 * A pair whose qp[b] is in RTS and whose qp[a] stays in INIT: a raw
 * socket speaks for it (raw_connect, send_hello).  Returns b, *a_out a.
 */
static int raw_pair(struct ry_test_pair *p, int *a_out)
{
	struct ry_qp_attr at;
	int a, b;

	pair_open(p);
	pair_defaults(p);
	pair_create_qps(p);
	a = active_side(p);
	b = 1 - a;
	at = p->attr;
	at.mtu = p->mtu;
	at.remote = p->qp[a]->local;
	ck_assert_int_eq(ry__rail_modify_qp(p->qp[b], RY_QPS_INIT, &at), 0);
	ck_assert_int_eq(pair_to_rtr(p->qp[b], &at), 0);
	ck_assert_int_eq(ry__rail_modify_qp(p->qp[b], RY_QPS_RTS, &at), 0);
	*a_out = a;
	return b;
}

START_TEST(test_split_stream)
{
	enum { LEN = 1000, MSG = RY__TCP_HDR_LEN + LEN };
	struct ry_test_pair p;
	struct region r;
	struct ry__tcp_msg m;
	uint8_t s[4 * MSG + RY__TCP_HDR_LEN], *snap, *pay;
	uint8_t rh[RY__TCP_HDR_LEN], rd[100];
	uint32_t psn;
	int a, b, fd;
	/* a header in three pieces, the first payload in two and the next
	 * header's first 20 bytes with its end, the second payload with its
	 * whole next header; the third and fourth messages in one piece */
	const size_t cuts[] = {10, 30, RY__TCP_HDR_LEN + 500, MSG + 20,
			       2 * MSG + RY__TCP_HDR_LEN};

	b = raw_pair(&p, &a);
	region_get(&p, b, &r, 4 * LEN, 7, ALL);
	snap = malloc(4 * LEN + 2 * GUARD);
	memcpy(snap, r.buf, 4 * LEN + 2 * GUARD);
	fd = raw_connect(&p, b);
	send_hello(fd, p.qp[b]->qp_num, p.qp[b]->local.cookie, p.qp[a]->qp_num,
		   p.qp[a]->local.cookie);
	pair_spin(&p, 20);
	psn = p.qp[a]->local.psn;
	for (int i = 0; i < 4; i++) {
		pay = s + i * MSG + RY__TCP_HDR_LEN;
		raw_msg(s + i * MSG, p.qp[b], psn + (uint32_t)i,
			RY__TCP_OP_WRITE, &r, (size_t)i * LEN, LEN);
		for (int k = 0; k < LEN; k++)
			pay[k] = (uint8_t)(i * 31 + k * 7 + 1);
		memcpy(snap + GUARD + (size_t)i * LEN, pay, LEN);
	}
	/* then a READ of the first 100 bytes, header only, behind them */
	raw_msg(s + 4 * MSG, p.qp[b], psn + 4, RY__TCP_OP_READ_REQ, &r, 0,
		sizeof(rd));
	send_cut(&p, fd, s, sizeof(s), cuts, 5);
	expect_ack(&p, fd, psn + 3);
	raw_recv(&p, fd, rh, sizeof(rh));
	ck_assert_int_eq(ry__tcp_wire_decode(rh, &m), 0);
	ck_assert_int_eq(m.opcode, RY__TCP_OP_READ_RESP);
	ck_assert_uint_eq(m.psn, (psn + 4) & 0xffffff);
	ck_assert_uint_eq(m.len, sizeof(rd));
	raw_recv(&p, fd, rd, sizeof(rd));
	ck_assert(!memcmp(rd, snap + GUARD, sizeof(rd)));
	/* every byte where its header said, the guards untouched */
	ck_assert(!memcmp(snap, r.buf, 4 * LEN + 2 * GUARD));
	ck_assert_int_eq(p.qp[b]->state, RY_QPS_RTS);
	close(fd);
	free(snap);
	region_put(&r);
	pair_close(&p);
}
END_TEST

/*
 * A large payload read in part does not wake the rail again for each
 * piece that follows: its fd becomes readable once the rest is all there
 * (SO_RCVLOWAT), and again for a small message after it.  The bytes land
 * where the header said either way.
 */
START_TEST(test_payload_wakes_once)
{
	enum { LEN = 200 << 10, SMALL = 1000 };
	struct ry_test_pair p;
	struct region r;
	uint8_t *s, *snap;
	struct pollfd pf;
	uint32_t psn;
	size_t at_byte;
	int a, b, fd;

	b = raw_pair(&p, &a);
	region_get(&p, b, &r, LEN + SMALL, 9, ALL);
	snap = malloc(LEN + SMALL + 2 * GUARD);
	s = malloc(2 * RY__TCP_HDR_LEN + LEN + SMALL);
	ck_assert(snap && s);
	memcpy(snap, r.buf, LEN + SMALL + 2 * GUARD);
	fd = raw_connect(&p, b);
	send_hello(fd, p.qp[b]->qp_num, p.qp[b]->local.cookie, p.qp[a]->qp_num,
		   p.qp[a]->local.cookie);
	pair_spin(&p, 20);
	psn = p.qp[a]->local.psn;
	raw_msg(s, p.qp[b], psn, RY__TCP_OP_WRITE, &r, 0, LEN);
	raw_msg(s + RY__TCP_HDR_LEN + LEN, p.qp[b], psn + 1, RY__TCP_OP_WRITE,
		&r, LEN, SMALL);
	for (size_t k = 0; k < LEN + SMALL; k++) {
		size_t o =
		    k < LEN ? RY__TCP_HDR_LEN + k : 2 * RY__TCP_HDR_LEN + k;

		s[o] = (uint8_t)(k * 13 + 5);
		snap[GUARD + k] = s[o];
	}
	/* the header and a first piece: read, the rest awaited */
	at_byte = RY__TCP_HDR_LEN + 40000;
	ck_assert_int_eq(send(fd, s, at_byte, 0), (ssize_t)at_byte);
	pair_spin(&p, 50);
	/* a second piece arrives: its socket, which is what would wake the
	 * rail for it, does not say readable */
	ck_assert_int_eq(send(fd, s + at_byte, 40000, 0), 40000);
	at_byte += 40000;
	usleep(50000);
	pf = (struct pollfd){.fd = to_tqp(p.qp[b])->c.fd, .events = POLLIN};
	ck_assert_msg(poll(&pf, 1, 0) == 0,
		      "the rail woke for a piece of a payload");
	/* the rest: one wake-up, the whole write in place, its ACK */
	pf.fd = ry__rail_fd(p.r[b]);
	ck_assert_int_eq(
	    send(fd, s + at_byte, RY__TCP_HDR_LEN + LEN - at_byte, 0),
	    (ssize_t)(RY__TCP_HDR_LEN + LEN - at_byte));
	ck_assert_msg(poll(&pf, 1, 2000) == 1,
		      "the rail did not wake for the payload's end");
	expect_ack(&p, fd, psn);
	ck_assert(!memcmp(snap + GUARD, r.buf + GUARD, LEN));
	/* a small write after it wakes the rail by itself */
	ck_assert_int_eq(
	    send(fd, s + RY__TCP_HDR_LEN + LEN, RY__TCP_HDR_LEN + SMALL, 0),
	    RY__TCP_HDR_LEN + SMALL);
	ck_assert_msg(poll(&pf, 1, 2000) == 1,
		      "the rail did not wake for a small message");
	expect_ack(&p, fd, psn + 1);
	ck_assert(!memcmp(snap, r.buf, LEN + SMALL + 2 * GUARD));
	ck_assert_int_eq(p.qp[b]->state, RY_QPS_RTS);
	close(fd);
	free(s);
	free(snap);
	region_put(&r);
	pair_close(&p);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("tcp_rail");
	TCase *tc = tcase_create("tcp");
	SRunner *sr;
	int failed;

	ry_test_provider = &ry__tcp_test_provider;
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_hello_before_rtr);
	tcase_add_test(tc, test_forged_hello);
	tcase_add_test(tc, test_stale_hello);
	tcase_add_test(tc, test_old_version_hello);
	tcase_add_test(tc, test_garbage);
	tcase_add_test(tc, test_pend_flood);
	tcase_add_test(tc, test_err_closes);
	tcase_add_test(tc, test_unanswered);
	tcase_add_test(tc, test_split_stream);
	tcase_add_test(tc, test_payload_wakes_once);
	rail_same_bytes_add(tc);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
