// SPDX-License-Identifier: BSD-2-Clause
/*
 * RDMA WRITE bandwidth between two soft rails, each driven by its own
 * thread.  The rails may live in different network namespaces: a socket
 * stays in the namespace it was created in, so the program enters each
 * namespace just to open its rail.
 *
 *   bench_soft_write [-a ADDR] [-b ADDR] [-A NETNS_PATH] [-B NETNS_PATH]
 *                    [-m MTU] [-t SECONDS] [-s SIZE]... [-w] [-M]
 *
 * -M: data_mac on (fixed test keys): every packet carries the keyed MAC.
 * -w: each thread sleeps in poll() on its rail's fd when it has nothing
 * to do, instead of spinning in progress (kinder to a shared machine).
 *
 * Prints one line per size: size, MB/s (10^6 bytes per second), retransmits.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rails/rail.h"
#include "rails/soft/soft.h"
#include "soft/soft_ns.h"

#define DEPTH_BYTES (8u << 20)

static atomic_int stop_b;
static bool busy = true; /* -w: wait on the rail fd instead of spinning */
static bool mac;	 /* -M */

/* Event-driven: sleep until the rail has work (it says so on its fd). */
static void wait_fd(struct ry_rail *r)
{
	struct pollfd pfd = {.fd = ry__rail_fd(r), .events = POLLIN};

	if (!busy)
		poll(&pfd, 1, 10);
}

static void die(const char *what, int rc)
{
	fprintf(stderr, "bench_soft_write: %s: %s\n", what, strerror(-rc));
	exit(1);
}

static void *responder(void *arg)
{
	struct ry_rail *r = arg;

	while (!atomic_load_explicit(&stop_b, memory_order_relaxed)) {
		wait_fd(r);
		ry__rail_progress(r);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	const char *addr[2] = {"127.0.0.1:0", "127.0.0.1:0"};
	const char *ns[2] = {NULL, NULL};
	uint32_t sizes[32], n_sizes = 0, mtu = 1500;
	double secs = 2.0;
	struct ry_rail *r[2];
	struct ry_pd *pd[2];
	struct ry_qp *qp[2];
	struct ry_mr *mr[2];
	uint8_t *buf[2];
	size_t buflen = 16u << 20;
	struct ry_qp_init init = {.max_send_wr = 1024};
	pthread_t tb;
	int c;

	while ((c = getopt(argc, argv, "a:b:A:B:m:t:s:wM")) != -1) {
		switch (c) {
		case 'a':
			addr[0] = optarg;
			break;
		case 'b':
			addr[1] = optarg;
			break;
		case 'A':
			ns[0] = optarg;
			break;
		case 'B':
			ns[1] = optarg;
			break;
		case 'm':
			mtu = (uint32_t)atoi(optarg);
			break;
		case 'w':
			busy = false;
			break;
		case 'M':
			mac = true;
			break;
		case 't':
			secs = atof(optarg);
			break;
		case 's':
			if (n_sizes < 32)
				sizes[n_sizes++] = (uint32_t)atoi(optarg);
			break;
		default:
			fprintf(stderr, "usage: see the comment at the top\n");
			return 2;
		}
	}
	if (!n_sizes)
		for (uint32_t s = 4096; s <= (1u << 20); s *= 4)
			sizes[n_sizes++] = s;
	for (int i = 0; i < 2; i++) {
		int rc;

		r[i] =
		    ry_test_soft_open_in_ns(i ? "b" : "a", addr[i], ns[i], mtu);
		buf[i] = aligned_alloc(4096, buflen);
		memset(buf[i], i + 1, buflen);
		rc = ry__rail_alloc_pd(r[i], &pd[i]);
		if (!rc)
			rc = ry__rail_reg_mr(pd[i], buf[i], buflen,
					     RY_ACCESS_LOCAL_WRITE |
						 RY_ACCESS_REMOTE_WRITE,
					     &mr[i]);
		if (!rc)
			rc = ry__rail_create_qp(pd[i], &init, &qp[i]);
		if (rc)
			die("setup", rc);
	}
	for (int i = 0; i < 2; i++) {
		struct ry_qp_attr at = {
		    .access = RY_ACCESS_REMOTE_WRITE,
		    .remote = qp[1 - i]->local,
		    .mtu = mtu,
		    .ack_timeout_us = 50000,
		    .retry_cnt = 6,
		    .rnr_retry = 6,
		    .min_rnr_timer_us = 1000,
		    .max_rd_atomic = 4,
		    .mac = mac,
		};
		int rc;

		/* the two directions' keys differ, as the manager's do */
		memset(at.mac_tx, 'a' + i, sizeof(at.mac_tx));
		memset(at.mac_rx, 'b' - i, sizeof(at.mac_rx));
		rc = ry__rail_modify_qp(qp[i], RY_QPS_INIT, &at);

		if (!rc)
			rc = ry__rail_modify_qp(qp[i], RY_QPS_RTR, &at);
		if (!rc)
			rc = ry__rail_modify_qp(qp[i], RY_QPS_RTS, &at);
		if (rc)
			die("connect", rc);
	}
	pthread_create(&tb, NULL, responder, r[1]);
	printf("# soft rail RDMA WRITE, mtu %u, %.1f s per size, data_mac %s\n",
	       mtu, secs, mac ? "on" : "off");
	printf("%10s %12s %12s\n", "size", "MB/s", "retransmits");
	for (uint32_t k = 0; k < n_sizes; k++) {
		uint32_t size = sizes[k];
		uint32_t depth = DEPTH_BYTES / size;
		uint32_t slots = (uint32_t)(buflen / size);
		uint64_t posted = 0, done = 0, bytes = 0;
		struct ry_rail_stats st0, st1;
		double t0, t1, end;

		if (depth < 2)
			depth = 2;
		if (depth > 512)
			depth = 512;
		ry__rail_get_stats(r[0], &st0);
		t0 = ry_test_now_s();
		end = t0 + secs;
		for (;;) {
			struct ry_wc wc[64];
			int n;

			while (posted - done < depth && ry_test_now_s() < end) {
				struct ry_send_wr wr = {
				    .wr_id = posted,
				    .opcode = RY_WR_RDMA_WRITE,
				    .sge = {(uintptr_t)buf[0] +
						(posted % slots) * size,
					    size, mr[0]->lkey},
				    .remote_addr = (uintptr_t)buf[1] +
						   (posted % slots) * size,
				    .rkey = mr[1]->rkey,
				};

				if (ry__rail_post_send(qp[0], &wr, 1))
					break;
				posted++;
			}
			ry__rail_progress(r[0]);
			n = ry__rail_poll_cq(r[0], wc, 64);
			for (int i = 0; i < n; i++) {
				if (wc[i].status != RY_WC_SUCCESS) {
					struct ry_rail_stats s0, s1;

					ry__rail_get_stats(r[0], &s0);
					ry__rail_get_stats(r[1], &s1);
					fprintf(
					    stderr,
					    "write failed: %s (a: tx %llu "
					    "rx %llu dropped %llu; b: tx "
					    "%llu rx %llu dropped %llu "
					    "header %llu crc %llu qpn %llu "
					    "empty %llu faults %llu)\n",
					    ry_wc_status_str(wc[i].status),
					    (unsigned long long)s0.tx_packets,
					    (unsigned long long)s0.rx_packets,
					    (unsigned long long)s0.rx_dropped,
					    (unsigned long long)s1.tx_packets,
					    (unsigned long long)s1.rx_packets,
					    (unsigned long long)s1.rx_dropped,
					    (unsigned long long)
						s1.rx_bad_header,
					    (unsigned long long)s1.rx_bad_crc,
					    (unsigned long long)s1.rx_bad_qpn,
					    (unsigned long long)s1.rx_empty,
					    (unsigned long long)
						s1.faults_dropped);
					return 1;
				}
				bytes += size;
			}
			done += (uint64_t)n;
			if (done == posted && ry_test_now_s() >= end)
				break;
			if (!n)
				wait_fd(r[0]);
		}
		t1 = ry_test_now_s();
		ry__rail_get_stats(r[0], &st1);
		printf("%10u %12.1f %12llu\n", size,
		       (double)bytes / (t1 - t0) / 1e6,
		       (unsigned long long)(st1.retransmits - st0.retransmits));
		if (getenv("BENCH_STATS")) {
			struct ry_rail_stats sb;

			ry__rail_get_stats(r[1], &sb);
			fprintf(stderr,
				"  a: tx %llu naks_rcvd %llu | b: rx %llu "
				"dropped %llu dup %llu naks_sent %llu "
				"bad_psn %llu\n",
				(unsigned long long)st1.tx_packets,
				(unsigned long long)st1.naks_rcvd,
				(unsigned long long)sb.rx_packets,
				(unsigned long long)sb.rx_dropped,
				(unsigned long long)sb.dup_rcvd,
				(unsigned long long)sb.naks_sent,
				(unsigned long long)sb.rx_bad_psn);
		}
		fflush(stdout);
	}
	atomic_store(&stop_b, 1);
	pthread_join(tb, NULL);
	for (int i = 0; i < 2; i++) {
		ry__rail_destroy_qp(qp[i]);
		ry__rail_dereg_mr(mr[i]);
		ry__rail_dealloc_pd(pd[i]);
		ry__rail_close(r[i]);
		free(buf[i]);
	}
	return 0;
}
