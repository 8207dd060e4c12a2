// SPDX-License-Identifier: BSD-2-Clause
/*
 * libFuzzer target for the tcp rail's header parser, in two stages.
 *
 * First the first 48 input bytes go to the pure decoder alone
 * (ry__tcp_wire_decode, rails/tcp/tcp_wire.c): a header it accepts must
 * re-encode to the same bytes, or decoder and encoder disagree.
 *
 * Then the rail path: the target plays the peer of a live tcp rail's QP.
 * It connects to the rail's listener, says HELLO with the names the QP
 * expects, and streams the input: header checks, the responder
 * (WRITE/SEND/READ execution and every check before memory is touched)
 * and the requester's side (ACKs, NAKs, READ responses for a WRITE and a
 * READ the QP has outstanding).  The first input byte steers which fields
 * of the first header are patched to live values (QPN and cookie, the
 * expected PSN, a valid rkey and address), so the fuzzer gets past the
 * outer checks.  The region the rail may write has guard bytes either
 * side that must stay untouched; ASan watches everything else.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "rails/rail.h"
#include "rails/tcp/tcp.h"
#include "rails/tcp/tcp_wire.h"

#define REGION (64 * 1024)
#define GUARD 64
#define FAKE_QPN 0x123456
#define FAKE_COOKIE 0x0123456789abcdefull
#define FAKE_PSN 0x100

static struct ry_rail *rail;
static struct ry_pd *pd;
static struct ry_mr *mr, *lmr;
static uint8_t *mem, *lmem;
static uint16_t port;

static void setup(void)
{
	struct ry_rail_config cfg = {.provider = RY_PROVIDER_TCP, .mtu = 1500};
	struct ry_rail_attr a;

	snprintf(cfg.name, sizeof(cfg.name), "fuzz");
	snprintf(cfg.address, sizeof(cfg.address), "127.0.0.1:0");
	if (ry__rail_open(&cfg, &rail) || ry__rail_alloc_pd(rail, &pd) ||
	    ry__rail_query(rail, &a))
		abort();
	port = a.local.udp_port;
	mem = calloc(1, REGION + 2 * GUARD);
	lmem = calloc(1, REGION);
	if (!mem || !lmem ||
	    ry__rail_reg_mr(pd, mem + GUARD, REGION,
			    RY_ACCESS_LOCAL_WRITE | RY_ACCESS_REMOTE_WRITE |
				RY_ACCESS_REMOTE_READ,
			    &mr) ||
	    ry__rail_reg_mr(pd, lmem, REGION, RY_ACCESS_LOCAL_WRITE, &lmr))
		abort();
}

static void drain(int fd)
{
	uint8_t buf[65536];

	while (recv(fd, buf, sizeof(buf), MSG_DONTWAIT) > 0)
		;
}

/* connect() that a signal does not end: libFuzzer's SIGALRM (its -timeout
 * watch) interrupts a blocking connect now and then over a long run; the
 * connection goes on in the kernel, so wait for it and take its result. */
static int connect_all(int fd, const struct sockaddr *sa, socklen_t len)
{
	struct pollfd p = {.fd = fd, .events = POLLOUT};
	socklen_t elen = sizeof(int);
	int err = 0;

	if (!connect(fd, sa, len))
		return 0;
	if (errno != EINTR)
		return -1;
	while (poll(&p, 1, -1) < 0)
		if (errno != EINTR)
			return -1;
	if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &elen) || err) {
		errno = err ? err : errno;
		return -1;
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ry_qp_init init = {.max_send_wr = 16};
	struct ry_qp_attr at = {
	    .access = RY_ACCESS_LOCAL_WRITE | RY_ACCESS_REMOTE_WRITE |
		      RY_ACCESS_REMOTE_READ,
	    .ack_timeout_us = 100000,
	    .retry_cnt = 1,
	    .rnr_retry = 1,
	    .min_rnr_timer_us = 100,
	    .max_rd_atomic = 4,
	};
	struct sockaddr_in sa = {.sin_family = AF_INET};
	uint8_t hello[RY__TCP_HDR_LEN], first[RY__TCP_HDR_LEN];
	struct ry__tcp_msg m = {0};
	struct ry_rail_stats st0, st;
	struct ry_qp *qp;
	struct ry_wc wc[16];
	uint8_t steer;
	int fd;

	if (!rail)
		setup();
	if (size >= RY__TCP_HDR_LEN) {
		uint8_t again[RY__TCP_HDR_LEN];

		if (!ry__tcp_wire_decode(data, &m)) {
			ry__tcp_wire_encode(again, &m);
			if (memcmp(again, data, RY__TCP_HDR_LEN))
				abort(); /* decoder and encoder disagree */
		}
	}
	if (size < 1)
		return 0;
	steer = data[0];
	data++;
	size--;

	/* the QP: passive (the fake peer's port 1 is below the rail's) */
	if (ry__rail_create_qp(pd, &init, &qp) ||
	    ry__rail_modify_qp(qp, RY_QPS_INIT, &at))
		abort();
	at.remote.qpn = FAKE_QPN;
	at.remote.psn = FAKE_PSN;
	at.remote.cookie = FAKE_COOKIE;
	at.remote.gid[10] = at.remote.gid[11] = 0xff;
	at.remote.gid[12] = 127;
	at.remote.gid[15] = 1;
	at.remote.udp_port = 1;
	if (ry__rail_modify_qp(qp, RY_QPS_RTR, &at) ||
	    ry__rail_modify_qp(qp, RY_QPS_RTS, &at))
		abort();
	if (steer & 0x10) { /* a WRITE and a READ outstanding: answers fit */
		struct ry_send_wr w[2] = {
		    {.wr_id = 1,
		     .opcode = RY_WR_RDMA_WRITE,
		     .sge = {(uintptr_t)lmem, 512, lmr->lkey},
		     .remote_addr = 0x1000,
		     .rkey = 7},
		    {.wr_id = 2,
		     .opcode = RY_WR_RDMA_READ,
		     .sge = {(uintptr_t)lmem, 1024, lmr->lkey},
		     .remote_addr = 0x1000,
		     .rkey = 7},
		};

		if (ry__rail_post_send(qp, w, 2))
			abort();
	}
	if (steer & 0x20) {
		struct ry_recv_wr rw = {
		    .wr_id = 9, .sge = {(uintptr_t)lmem, 2048, lmr->lkey}};

		ry__rail_post_recv(rail, &rw, 1);
	}

	fd = socket(AF_INET, SOCK_STREAM, 0);
	sa.sin_port = htons(port);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || connect_all(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		perror("fuzz_tcp_hdr: socket/connect");
		abort();
	}
	m = (struct ry__tcp_msg){.opcode = RY__TCP_OP_HELLO,
				 .qpn = qp->qp_num,
				 .cookie = qp->local.cookie,
				 .va = FAKE_COOKIE,
				 .rkey = FAKE_QPN};
	ry__tcp_wire_encode(hello, &m);
	if (send(fd, hello, sizeof(hello), MSG_NOSIGNAL) != sizeof(hello))
		abort();
	/* the first header, patched as the steering byte says */
	if (size >= RY__TCP_HDR_LEN) {
		memcpy(first, data, RY__TCP_HDR_LEN);
		if (steer & 1) {
			ry__tcp_put_qpn(first, qp->qp_num);
			ry__tcp_put_cookie(first, qp->local.cookie);
		}
		if (steer & 2)
			ry__tcp_put_psn(first, (steer & 0x10) && (steer & 8)
						   ? qp->local.psn
						   : FAKE_PSN);
		if (steer & 4) {
			ry__tcp_put_rkey(first, mr->rkey);
			ry__tcp_put_va(first,
				       (uintptr_t)mr->addr +
					   (ry__tcp_get_va(first) % REGION));
		}
		if (steer & 0x40)
			ry__tcp_put_version(first, RY__TCP_WIRE_VERSION);
		send(fd, first, sizeof(first), MSG_NOSIGNAL);
		data += RY__TCP_HDR_LEN;
		size -= RY__TCP_HDR_LEN;
	}
	if (size)
		send(fd, data, size, MSG_NOSIGNAL);
	shutdown(fd, SHUT_WR);
	ry__rail_get_stats(rail, &st0);
	/* run the rail until it took everything or gave the QP up */
	for (int i = 0; i < 200; i++) {
		struct pollfd pfd = {.fd = ry__rail_fd(rail), .events = POLLIN};

		ry__rail_progress(rail);
		drain(fd);
		while (ry__rail_poll_cq(rail, wc, 16) > 0)
			;
		ry__rail_get_stats(rail, &st);
		if (qp->state == RY_QPS_ERR)
			break;
		if (poll(&pfd, 1, 1) == 0 && i > 4)
			break;
	}
	close(fd);
	ry__rail_destroy_qp(qp);
	while (ry__rail_poll_cq(rail, wc, 16) > 0)
		;
	for (int i = 0; i < GUARD; i++)
		if (mem[i] || mem[GUARD + REGION + i])
			abort(); /* a write outside the region */
	{
		struct ry_rail_event ev;

		while (!ry__rail_get_event(rail, &ev))
			;
	}
	return 0;
}
