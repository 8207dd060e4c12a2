// SPDX-License-Identifier: BSD-2-Clause
/*
 * One soft rail QP pair across a shaped path (test_soft_cc.sh builds it):
 * moves BYTES by RDMA WRITE and then by RDMA READ, 1 MiB per WR with
 * several WRs in flight, and checks that
 *
 *   - every WR completes successfully (no retry exceeded on a live path),
 *   - every byte arrived,
 *   - the packets sent again are under MAX_PCT percent of those needed.
 *
 * The QP timers are the rail manager's defaults (ack timeout 20 ms, retry
 * count 5), which a congested path must not exhaust.
 *
 *   soft_cc_transfer -A NETNS_PATH -a ADDR -B NETNS_PATH -b ADDR
 *                    [-s MIB] [-p MAX_PCT]
 *
 * Exit 0 on success, 1 on failure; prints the figures either way.
 */
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
#include "rails/soft/soft_int.h"

#define WR_BYTES (1u << 20)
#define DEPTH 8

static atomic_int stop_b;
/* A rail is not thread-safe (rail.h): b's progress in the responder and
 * the main thread's reads of b's counters take turns under this. */
static pthread_mutex_t b_lock = PTHREAD_MUTEX_INITIALIZER;

static void *responder(void *arg)
{
	struct ry_rail *r = arg;
	struct pollfd pfd = {.fd = ry__rail_fd(r), .events = POLLIN};

	while (!atomic_load(&stop_b)) {
		poll(&pfd, 1, 10);
		pthread_mutex_lock(&b_lock);
		ry__rail_progress(r);
		pthread_mutex_unlock(&b_lock);
	}
	return NULL;
}

static void get_stats(struct ry_rail *r[2], struct ry_rail_stats s[2])
{
	ry__rail_get_stats(r[0], &s[0]);
	pthread_mutex_lock(&b_lock);
	ry__rail_get_stats(r[1], &s[1]);
	pthread_mutex_unlock(&b_lock);
}

/* Moves total bytes with op; 0 or the number of failed WRs. */
static unsigned run(struct ry_rail *ra, struct ry_qp *qp, struct ry_mr *src,
		    struct ry_mr *dst, uint8_t *lbuf, uint8_t *rbuf,
		    size_t total, enum ry_wr_opcode op)
{
	struct pollfd pfd = {.fd = ry__rail_fd(ra), .events = POLLIN};
	uint64_t posted = 0, done = 0, n_wr = total / WR_BYTES;
	unsigned failed = 0;

	while (done < n_wr) {
		struct ry_wc wc[16];
		int n;

		while (posted < n_wr && posted - done < DEPTH) {
			size_t off = (size_t)posted * WR_BYTES;
			struct ry_send_wr wr = {
			    .wr_id = posted,
			    .opcode = op,
			    .sge = {(uintptr_t)lbuf + off, WR_BYTES, src->lkey},
			    .remote_addr = (uintptr_t)rbuf + off,
			    .rkey = dst->rkey,
			};

			if (ry__rail_post_send(qp, &wr, 1))
				break;
			posted++;
		}
		ry__rail_progress(ra);
		n = ry__rail_poll_cq(ra, wc, 16);
		for (int i = 0; i < n; i++)
			if (wc[i].status != RY_WC_SUCCESS) {
				fprintf(stderr, "WR %llu: %s\n",
					(unsigned long long)wc[i].wr_id,
					ry_wc_status_str(wc[i].status));
				failed++;
			}
		done += (uint64_t)(n > 0 ? n : 0);
		if (failed)
			return failed; /* the QP is in ERR: the rest flush */
		if (!n)
			poll(&pfd, 1, 10);
	}
	return 0;
}

int main(int argc, char **argv)
{
	const char *addr[2] = {NULL, NULL}, *ns[2] = {NULL, NULL};
	size_t total = 64u << 20;
	double max_pct = 3.0;
	struct ry_rail *r[2];
	struct ry_pd *pd[2];
	struct ry_qp *qp[2];
	struct ry_mr *mr[2];
	uint8_t *buf[2];
	struct ry_qp_init init = {.max_send_wr = 64};
	struct ry_rail_stats s0[2], s1[2];
	pthread_t tb;
	int c, bad = 0;

	while ((c = getopt(argc, argv, "a:b:A:B:s:p:")) != -1) {
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
		case 's':
			total = (size_t)atoi(optarg) << 20;
			break;
		case 'p':
			max_pct = atof(optarg);
			break;
		default:
			fprintf(stderr, "usage: see the comment at the top\n");
			return 2;
		}
	}
	if (!addr[0] || !addr[1] || !ns[0] || !ns[1] || total < WR_BYTES)
		return 2;
	for (int i = 0; i < 2; i++) {
		int rc;

		r[i] = ry_test_soft_open_in_ns(i ? "b" : "a", addr[i], ns[i],
					       1500);
		buf[i] = aligned_alloc(4096, total);
		for (size_t k = 0; k < total; k++)
			buf[i][k] = (uint8_t)(i ? 0 : k * 7 + (k >> 12));
		rc = ry__rail_alloc_pd(r[i], &pd[i]);
		if (!rc)
			rc = ry__rail_reg_mr(pd[i], buf[i], total,
					     RY_ACCESS_LOCAL_WRITE |
						 RY_ACCESS_REMOTE_WRITE |
						 RY_ACCESS_REMOTE_READ,
					     &mr[i]);
		if (!rc)
			rc = ry__rail_create_qp(pd[i], &init, &qp[i]);
		if (rc) {
			fprintf(stderr, "setup: %s\n", strerror(-rc));
			return 1;
		}
	}
	for (int i = 0; i < 2; i++) {
		/* the rail manager's defaults (src/manager.c) */
		struct ry_qp_attr at = {
		    .access = RY_ACCESS_REMOTE_WRITE | RY_ACCESS_REMOTE_READ,
		    .remote = qp[1 - i]->local,
		    .mtu = 1500,
		    .ack_timeout_us = 20000,
		    .retry_cnt = 5,
		    .rnr_retry = 6,
		    .min_rnr_timer_us = 1000,
		    .max_rd_atomic = 16,
		};
		int rc = ry__rail_modify_qp(qp[i], RY_QPS_INIT, &at);

		if (!rc)
			rc = ry__rail_modify_qp(qp[i], RY_QPS_RTR, &at);
		if (!rc)
			rc = ry__rail_modify_qp(qp[i], RY_QPS_RTS, &at);
		if (rc) {
			fprintf(stderr, "connect: %s\n", strerror(-rc));
			return 1;
		}
	}
	pthread_create(&tb, NULL, responder, r[1]);

	for (int phase = 0; phase < 2 && !bad; phase++) {
		bool rd = phase == 1;
		/* WRITE a -> b, then READ b -> a back into a zeroed a */
		uint32_t pmtu = to_sqp(qp[0])->pmtu;
		uint64_t need = (total + pmtu - 1) / pmtu; /* packets */
		uint64_t again;
		double t0, t1;
		unsigned failed;

		if (rd)
			memset(buf[0], 0, total);
		get_stats(r, s0);
		t0 = ry_test_now_s();
		failed = run(r[0], qp[0], mr[0], mr[1], buf[0], buf[1], total,
			     rd ? RY_WR_RDMA_READ : RY_WR_RDMA_WRITE);
		t1 = ry_test_now_s();
		get_stats(r, s1);
		/* WRITE: a's retransmits.  READ: b sends the responses; any
		 * response packet beyond one per PSN was sent again. */
		if (rd) {
			uint64_t tx = s1[1].tx_packets - s0[1].tx_packets;

			again = tx > need ? tx - need : 0;
		} else {
			again = s1[0].retransmits - s0[0].retransmits;
		}
		printf("%s %zu MiB: %.1f MB/s, %llu of %llu packets sent "
		       "again (%.2f %%), %u WRs failed, naks %llu\n",
		       rd ? "READ" : "WRITE", total >> 20,
		       (double)total / (t1 - t0) / 1e6,
		       (unsigned long long)again, (unsigned long long)need,
		       100.0 * (double)again / (double)need, failed,
		       (unsigned long long)(s1[rd ? 0 : 1].naks_sent -
					    s0[rd ? 0 : 1].naks_sent +
					    s1[rd ? 1 : 0].naks_rcvd -
					    s0[rd ? 1 : 0].naks_rcvd));
		if (failed) {
			bad = 1;
			break;
		}
		if (memcmp(buf[0], buf[1], total)) {
			printf("FAIL: %s data differs\n",
			       rd ? "READ" : "WRITE");
			bad = 1;
		}
		if (100.0 * (double)again / (double)need > max_pct) {
			printf("FAIL: %s resent more than %.1f %%\n",
			       rd ? "READ" : "WRITE", max_pct);
			bad = 1;
		}
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
	return bad;
}
