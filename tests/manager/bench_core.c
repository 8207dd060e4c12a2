// SPDX-License-Identifier: BSD-2-Clause
/*
 * Core-cost benchmark: the rail manager's own cost per fragment, over null
 * rails that complete every RDMA work request at once and move no bytes.
 * 1 MiB writes in 4 KiB fragments, ops_in_flight of them outstanding,
 * over 1, 2 or 4 rails; one thread drives everything, so fragments per
 * CPU-second is fragments per second per core.
 *
 *   bench_core [-r rails] [-s seconds] [-w frags_per_wr] [-n ops]
 *
 * With -n, exactly n operations are measured (for callgrind):
 *
 *   valgrind --tool=callgrind --instr-atstart=no ./bench_core -r 2 -n 2000
 *
 * instruments only the measured loop; instructions per fragment is the
 * reported Ir total divided by the fragments printed.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#if defined(__has_include)
#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#endif
#endif
#ifndef CALLGRIND_START_INSTRUMENTATION
/* no valgrind headers: -n still bounds the run, callgrind sees it all */
#define CALLGRIND_START_INSTRUMENTATION                                        \
	do {                                                                   \
	} while (0)
#define CALLGRIND_STOP_INSTRUMENTATION                                         \
	do {                                                                   \
	} while (0)
#endif

#include <railyard/railyard.h>

#include "tests/loop/loop.h"

#define MiB (1u << 20)

static unsigned long done_ops, failed_ops;

static void on_done(const struct ry_completion *c, void *arg)
{
	(void)arg;
	if (c->status == RY_OK)
		done_ops++;
	else
		failed_ops++;
}

static double cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double wall_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void config(struct ry_config *c, const char *node, unsigned rails,
		   unsigned fpw)
{
	unsigned i;

	memset(c, 0, sizeof(*c));
	snprintf(c->source, sizeof(c->source), "<bench>");
	snprintf(c->node, sizeof(c->node), "%s", node);
	snprintf(c->control, sizeof(c->control), "127.0.0.1:0");
	c->accept.n = 1;
	snprintf(c->accept.s[0], sizeof(c->accept.s[0]), "127.0.0.0/8");
	c->fragment_size = 4096;
	c->ops_in_flight = 8;
	c->max_op_size = MiB;
	c->wr_per_qp = 256;
	c->frags_per_wr = fpw;
	c->failover.fence = true;
	c->n_rails = rails;
	for (i = 0; i < rails; i++) {
		snprintf(c->rails[i].name, sizeof(c->rails[i].name), "r%u", i);
		snprintf(c->rails[i].network, sizeof(c->rails[i].network),
			 "n%u", i);
		snprintf(c->rails[i].address, sizeof(c->rails[i].address),
			 "%s-%u", node, i);
		c->rails[i].provider = RY_PROVIDER_NULL;
		c->rails[i].weight = 1;
	}
}

int main(int argc, char **argv)
{
	unsigned rails = 1, fpw = 16, i;
	unsigned long nops = 0, target, posted = 0;
	double secs = 2, c0, c1, w0, w1, frags;
	struct ry_manager *a, *b;
	struct ry_region *ra, *rb;
	struct ry_peer *pb;
	unsigned char desc[RY_DESC_MAX];
	char addr[128];
	void *bufa, *bufb;
	int opt, dlen, ret;
	struct ry_config ca, cb;

	while ((opt = getopt(argc, argv, "r:s:w:n:")) != -1) {
		switch (opt) {
		case 'r':
			rails = (unsigned)atoi(optarg);
			break;
		case 's':
			secs = atof(optarg);
			break;
		case 'w':
			fpw = (unsigned)atoi(optarg);
			break;
		case 'n':
			nops = strtoul(optarg, NULL, 0);
			break;
		default:
			fprintf(stderr,
				"usage: %s [-r rails] [-s seconds] [-w "
				"frags_per_wr] [-n ops]\n",
				argv[0]);
			return 2;
		}
	}
	config(&ca, "a", rails, fpw);
	config(&cb, "b", rails, fpw);
	if ((ret = ry_loop_register()) || (ret = ry_manager_create(&ca, &a)) ||
	    (ret = ry_manager_create(&cb, &b))) {
		fprintf(stderr, "create: %s\n", strerror(-ret));
		return 1;
	}
	bufa = calloc(1, MiB);
	bufb = calloc(1, MiB);
	if (!bufa || !bufb || ry_mr_reg(a, bufa, MiB, 0, &ra) ||
	    ry_mr_reg(b, bufb, MiB, RY_MR_REMOTE_WRITE, &rb))
		return 1;
	dlen = ry_mr_pack(rb, desc, sizeof(desc));
	ry_manager_control_addr(b, addr, sizeof(addr));
	if (dlen < 0 || ry_peer_get(a, addr, &pb))
		return 1;

	/* connect: one write, then let every rail come up */
	ry_write(pb, ra, 0, desc, (size_t)dlen, 0, MiB, on_done, NULL);
	w0 = wall_now();
	while (wall_now() - w0 < 0.5) {
		ry_progress(a);
		ry_progress(b);
	}
	if (done_ops != 1) {
		fprintf(stderr, "warm-up write did not complete\n");
		return 1;
	}
	done_ops = 0;

	target = nops ? nops : ~0ul;
	CALLGRIND_START_INSTRUMENTATION;
	c0 = cpu_now();
	w0 = wall_now();
	for (i = 0;; i++) {
		while (posted - done_ops - failed_ops < 8 && posted < target) {
			if (ry_write(pb, ra, 0, desc, (size_t)dlen, 0, MiB,
				     on_done, NULL))
				break;
			posted++;
		}
		ry_progress(a);
		if (done_ops + failed_ops >= target)
			break;
		if (!nops && (i & 1023) == 0 && wall_now() - w0 > secs) {
			target = posted;
		}
		if ((i & 4095) == 0)
			ry_progress(b); /* b's heartbeats */
	}
	c1 = cpu_now();
	w1 = wall_now();
	CALLGRIND_STOP_INSTRUMENTATION;

	frags = (double)done_ops * (MiB / 4096);
	printf("rails %u frags_per_wr %u: %lu ops, %.0f fragments, %.3f s cpu, "
	       "%.3f s wall: %.1f M fragments/s/core, %.1f ns/fragment%s\n",
	       rails, fpw, done_ops, frags, c1 - c0, w1 - w0,
	       frags / (c1 - c0) / 1e6, (c1 - c0) * 1e9 / frags,
	       failed_ops ? " (SOME FAILED)" : "");
	ry_manager_destroy(a);
	ry_manager_destroy(b);
	free(bufa);
	free(bufb);
	return failed_ops ? 1 : 0;
}
