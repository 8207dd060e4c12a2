// SPDX-License-Identifier: BSD-2-Clause
/*
 * Core-cost benchmark: the rail manager's own cost per fragment, over null
 * rails that complete every RDMA work request at once and move no bytes.
 * 1 MiB writes (-b: another size) in 4 KiB fragments, ops_in_flight (8) of
 * them outstanding per posting thread, over 1, 2 or 4 rails.  Each posting
 * thread drives progress itself; fragments per CPU-second of the posting
 * threads together is fragments per second per core.
 *
 *   bench_core [-r rails] [-s seconds] [-w frags_per_wr] [-n ops]
 *              [-b op_bytes] [-t threads [-S]] [-P] [-c contexts]
 *
 * -t T: T application threads post through one manager, each to a peer of
 * its own (a manager each, progressed by that thread now and then), or with
 * -S all to the same peer; the line then also gives the threads and the
 * fragments per wall-clock second of all of them together (compare -t 2
 * with -t 1 for how posting scales across threads).
 *
 * -c C: the posting side's manager has C progress contexts (config
 * contexts); the threads' peers are made in turn, so with -c T each
 * thread's peer is in a context of its own.
 *
 * -P: the managers' progress threads (ry_progress_thread_start) do the
 * progress, as in a storage server; the posting threads only post and
 * wait for their completions.  CPU is then the whole process's, and the
 * line also gives fragments per wall-clock second.
 *
 * With -n, exactly n operations per thread are measured (for callgrind):
 *
 *   valgrind --tool=callgrind --instr-atstart=no ./bench_core -r 2 -n 2000
 *
 * instruments only the measured loop; instructions per fragment is the
 * reported Ir total divided by the fragments printed.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
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

#define FRAG 4096u
#define DEPTH 8 /* ops each thread keeps posted: ops_in_flight */
#define MAX_THREADS 16

/* One posting thread and its peer; done and failed are counted by
 * whichever thread runs the callbacks. */
struct worker {
	pthread_t w_thread;
	struct ry_manager *w_b; /* the peer's manager (shared with -S) */
	struct ry_peer *w_peer;
	unsigned char w_desc[RY_DESC_MAX];
	int w_dlen;
	atomic_ulong w_done, w_failed;
	pthread_mutex_t w_mu; /* -P: the posting thread waits on w_cv */
	pthread_cond_t w_cv;
	unsigned long w_posted;
	double w_cpu, w_end; /* thread CPU seconds, wall clock at the end */
};

static struct ry_manager *mgr_a;
static struct ry_region *reg_a;
static size_t op_bytes = MiB;
static unsigned long nops;
static double secs = 2, w_start;
static pthread_barrier_t go;
static bool threaded;	      /* -P */
static unsigned contexts = 1; /* -c, manager a's */

static void on_done(const struct ry_completion *c, void *arg)
{
	struct worker *w = arg;

	if (c->status == RY_OK)
		atomic_fetch_add_explicit(&w->w_done, 1, memory_order_relaxed);
	else
		atomic_fetch_add_explicit(&w->w_failed, 1,
					  memory_order_relaxed);
	if (threaded) {
		pthread_mutex_lock(&w->w_mu);
		pthread_cond_signal(&w->w_cv);
		pthread_mutex_unlock(&w->w_mu);
	}
}

static unsigned long finished(struct worker *w)
{
	return atomic_load_explicit(&w->w_done, memory_order_relaxed) +
	       atomic_load_explicit(&w->w_failed, memory_order_relaxed);
}

/* -P: sleep until a completion leaves room below DEPTH (or 1 ms). */
static void wait_room(struct worker *w, unsigned long target)
{
	struct timespec ts;

	pthread_mutex_lock(&w->w_mu);
	if (w->w_posted - finished(w) >= DEPTH ||
	    (w->w_posted >= target && finished(w) < target)) {
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 1000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&w->w_cv, &w->w_mu, &ts);
	}
	pthread_mutex_unlock(&w->w_mu);
}

static double cpu_now(void)
{
	struct timespec ts;

	/* -P: the progress threads' CPU too (the whole process) */
	clock_gettime(
	    threaded ? CLOCK_PROCESS_CPUTIME_ID : CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double wall_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void config(struct ry_config *c, const char *node, unsigned rails,
		   unsigned fpw, size_t obytes)
{
	unsigned i;

	ry_config_init_defaults(c);
	snprintf(c->source, sizeof(c->source), "<bench>");
	snprintf(c->node, sizeof(c->node), "%s", node);
	snprintf(c->control, sizeof(c->control), "127.0.0.1:0");
	c->accept.n = 1;
	snprintf(c->accept.s[0], sizeof(c->accept.s[0]), "127.0.0.0/8");
	c->fragment_size = 4096;
	c->ops_in_flight = 8;
	c->max_op_size = obytes > MiB ? obytes : MiB;
	c->wr_per_qp = 256;
	c->frags_per_wr = fpw;
	c->contexts = node[0] == 'a' ? contexts : 1;
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

/* Every peer's warm-up write done and all its rails carrying traffic. */
static bool all_up(struct worker *ws, unsigned n, unsigned rails)
{
	for (unsigned i = 0; i < n; i++) {
		struct ry_peer_info pi;

		if (atomic_load(&ws[i].w_done) != 1 ||
		    ry_peer_info(ws[i].w_peer, &pi) || pi.rails_active < rails)
			return false;
	}
	return true;
}

/* The measured loop of one posting thread. */
static void *run(void *arg)
{
	struct worker *w = arg;
	unsigned long target = nops ? nops : ~0ul;
	double c0;
	unsigned i;

	pthread_barrier_wait(&go);
	c0 = cpu_now();
	for (i = 0;; i++) {
		while (w->w_posted - finished(w) < DEPTH &&
		       w->w_posted < target) {
			if (ry_write(w->w_peer, reg_a, 0, w->w_desc,
				     (size_t)w->w_dlen, 0, op_bytes, on_done,
				     w))
				break;
			w->w_posted++;
		}
		if (threaded)
			wait_room(w, target);
		else
			ry_progress(mgr_a);
		if (finished(w) >= target)
			break;
		if (!nops && (threaded || (i & 1023) == 0) &&
		    wall_now() - w_start > secs)
			target = w->w_posted;
		if (!threaded && (i & 4095) == 0)
			ry_progress(w->w_b); /* the peer's heartbeats */
	}
	w->w_cpu = cpu_now() - c0;
	w->w_end = wall_now();
	return NULL;
}

int main(int argc, char **argv)
{
	unsigned rails = 1, fpw = 16, nthreads = 1, nb, i;
	bool same = false;
	unsigned long done = 0, failed = 0;
	double cpu = 0, wall = 0, frags, w0;
	struct ry_manager *b[MAX_THREADS];
	struct ry_region *rb[MAX_THREADS];
	struct worker *ws;
	char addr[128];
	void *bufa, *bufb[MAX_THREADS];
	int opt, ret;
	struct ry_config ca, cb;

	while ((opt = getopt(argc, argv, "r:s:w:n:b:t:SPc:")) != -1) {
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
		case 'b':
			op_bytes = strtoul(optarg, NULL, 0);
			break;
		case 't':
			nthreads = (unsigned)atoi(optarg);
			break;
		case 'S':
			same = true;
			break;
		case 'P':
			threaded = true;
			break;
		case 'c':
			contexts = (unsigned)atoi(optarg);
			break;
		default:
			fprintf(stderr,
				"usage: %s [-r rails] [-s seconds] [-w "
				"frags_per_wr] [-n ops] [-b op_bytes] [-t "
				"threads [-S]] [-P] [-c contexts]\n",
				argv[0]);
			return 2;
		}
	}
	if (!op_bytes || op_bytes > 64 * MiB || !nthreads ||
	    nthreads > MAX_THREADS) {
		fprintf(stderr, "op_bytes 1..64 MiB, threads 1..%u\n",
			MAX_THREADS);
		return 2;
	}
	nb = same ? 1 : nthreads;
	ws = calloc(nthreads, sizeof(*ws));
	bufa = calloc(1, op_bytes);
	if (!ws || !bufa)
		return 1;
	config(&ca, "a", rails, fpw, op_bytes);
	if ((ret = ry_loop_register()) ||
	    (ret = ry_manager_create(&ca, &mgr_a)) ||
	    (ret = ry_mr_reg(mgr_a, bufa, op_bytes, 0, &reg_a))) {
		fprintf(stderr, "create: %s\n", strerror(-ret));
		return 1;
	}
	for (i = 0; i < nb; i++) {
		char node[16];

		snprintf(node, sizeof(node), i ? "b%u" : "b", i);
		config(&cb, node, rails, fpw, op_bytes);
		bufb[i] = calloc(1, op_bytes);
		if (!bufb[i] || (ret = ry_manager_create(&cb, &b[i])) ||
		    (ret = ry_mr_reg(b[i], bufb[i], op_bytes,
				     RY_MR_REMOTE_WRITE, &rb[i]))) {
			fprintf(stderr, "create: %s\n", strerror(-ret));
			return 1;
		}
	}
	for (i = 0; i < nthreads; i++) {
		struct worker *w = &ws[i];
		unsigned k = same ? 0 : i;

		pthread_mutex_init(&w->w_mu, NULL);
		pthread_cond_init(&w->w_cv, NULL);
		w->w_b = b[k];
		w->w_dlen = ry_mr_pack(rb[k], w->w_desc, sizeof(w->w_desc));
		ry_manager_control_addr(b[k], addr, sizeof(addr));
		if (w->w_dlen < 0 || ry_peer_get(mgr_a, addr, &w->w_peer))
			return 1;
	}

	/* connect: one write per peer, then let every rail come up (at
	 * least 0.5 s; longer under valgrind on a loaded machine) */
	for (i = 0; i < nb; i++)
		ry_write(ws[i].w_peer, reg_a, 0, ws[i].w_desc,
			 (size_t)ws[i].w_dlen, 0, op_bytes, on_done, &ws[i]);
	w0 = wall_now();
	while (wall_now() - w0 < 0.5 ||
	       (!all_up(ws, nb, rails) && wall_now() - w0 < 60)) {
		ry_progress(mgr_a);
		for (i = 0; i < nb; i++)
			ry_progress(b[i]);
	}
	for (i = 0; i < nb; i++) {
		if (atomic_load(&ws[i].w_done) != 1) {
			fprintf(stderr, "warm-up write did not complete\n");
			return 1;
		}
		atomic_store(&ws[i].w_done, 0);
	}

	if (threaded) {
		if (ry_progress_thread_start(mgr_a))
			return 1;
		for (i = 0; i < nb; i++)
			if (ry_progress_thread_start(b[i]))
				return 1;
	}
	pthread_barrier_init(&go, NULL, nthreads);
	CALLGRIND_START_INSTRUMENTATION;
	w_start = wall_now();
	for (i = 1; i < nthreads; i++)
		if (pthread_create(&ws[i].w_thread, NULL, run, &ws[i]))
			return 1;
	run(&ws[0]);
	for (i = 1; i < nthreads; i++)
		pthread_join(ws[i].w_thread, NULL);
	CALLGRIND_STOP_INSTRUMENTATION;

	for (i = 0; i < nthreads; i++) {
		done += atomic_load(&ws[i].w_done);
		failed += atomic_load(&ws[i].w_failed);
		/* -P: each reads the process's CPU: the longest run's */
		if (!threaded)
			cpu += ws[i].w_cpu;
		else if (ws[i].w_cpu > cpu)
			cpu = ws[i].w_cpu;
		if (ws[i].w_end - w_start > wall)
			wall = ws[i].w_end - w_start;
	}
	frags = (double)done * (double)((op_bytes + FRAG - 1) / FRAG);
	if (threaded)
		printf("progress threads ");
	if (nthreads > 1)
		printf("threads %u (%s) ", nthreads,
		       same ? "same peer" : "one peer each");
	if (contexts > 1)
		printf("contexts %u ", contexts);
	if (op_bytes != MiB)
		printf("op_bytes %zu ", op_bytes);
	printf("rails %u frags_per_wr %u: %lu ops, %.0f fragments, %.3f s cpu, "
	       "%.3f s wall: %.1f M fragments/s/core, %.1f ns/fragment",
	       rails, fpw, done, frags, cpu, wall, frags / cpu / 1e6,
	       cpu * 1e9 / frags);
	if (nthreads > 1 || threaded)
		printf(", %.1f M fragments/s all threads", frags / wall / 1e6);
	printf("%s\n", failed ? " (SOME FAILED)" : "");
	ry_manager_destroy(mgr_a);
	for (i = 0; i < nb; i++) {
		ry_manager_destroy(b[i]);
		free(bufb[i]);
	}
	free(bufa);
	free(ws);
	return failed ? 1 : 0;
}
