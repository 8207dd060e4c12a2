// SPDX-License-Identifier: BSD-2-Clause
/*
 * What a registration cache hit costs, against registering each time.
 *
 * One manager with RAILS soft rails on 127.0.0.1 (registration is per
 * rail).  Per run:
 *   hit      ry_mr_cache_get + ry_mr_cache_put of one cached buffer
 *   hit/1k   the same over 1000 cached buffers, round robin (a hash walk
 *            per buffer, colder lines)
 *   reg      ry_mr_reg + ry_mr_dereg of the same 64 KiB buffer: what the
 *            cache saves
 * Prints ns per pair for each run and min/median/max over the runs.
 *
 * usage: bench_reg_cache [-r runs] [-n hits] [-R rails]
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <railyard/railyard.h>

#define NBUF 1000
#define BUFSZ (64u << 10)

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static void report(const char *name, double *v, int runs)
{
	printf("%-8s", name);
	for (int i = 0; i < runs; i++)
		printf(" %8.1f", v[i]);
	qsort(v, (size_t)runs, sizeof(*v), cmp);
	printf("   min %.1f median %.1f max %.1f ns\n", v[0], v[runs / 2],
	       v[runs - 1]);
}

static void die(const char *what, int ret)
{
	fprintf(stderr, "%s: %d\n", what, ret);
	exit(1);
}

int main(int argc, char **argv)
{
	int runs = 3, rails = 2, opt, ret;
	long hits = 2000000;
	double hit[16], hitk[16], reg[16];
	struct ry_manager *m;
	struct ry_config cfg;
	struct ry_region *mr;
	unsigned char *buf[NBUF];
	size_t off;

	while ((opt = getopt(argc, argv, "r:n:R:")) != -1) {
		if (opt == 'r')
			runs = atoi(optarg);
		else if (opt == 'n')
			hits = atol(optarg);
		else if (opt == 'R')
			rails = atoi(optarg);
		else
			return 2;
	}
	if (runs < 1 || runs > 16 || hits < 1000 || rails < 1 || rails > 4)
		return 2;
	ry_config_init_defaults(&cfg);
	snprintf(cfg.node, sizeof(cfg.node), "bench");
	cfg.reg_cache_bytes = (uint64_t)NBUF * BUFSZ * 2;
	cfg.n_rails = (unsigned)rails;
	for (int i = 0; i < rails; i++) {
		struct ry_rail_config *r = &cfg.rails[i];

		snprintf(r->name, sizeof(r->name), "r%d", i);
		r->provider = RY_PROVIDER_SOFT;
		r->weight = 1;
		snprintf(r->address, sizeof(r->address), "127.0.0.1:0");
		snprintf(r->network, sizeof(r->network), "n%d", i);
	}
	ret = ry_manager_create(&cfg, &m);
	if (ret)
		die("ry_manager_create", ret);
	for (int i = 0; i < NBUF; i++) {
		buf[i] = aligned_alloc(4096, BUFSZ);
		if (!buf[i])
			die("aligned_alloc", -1);
		memset(buf[i], 0, BUFSZ);
		ret = ry_mr_cache_get(m, buf[i], BUFSZ, RY_MR_REMOTE_WRITE, &mr,
				      &off);
		if (ret)
			die("ry_mr_cache_get", ret);
		ry_mr_cache_put(mr);
	}
	printf("ns per get+put (hit) or reg+dereg, %d soft rails, %ld hits, "
	       "%d runs\n",
	       rails, hits, runs);
	for (int r = 0; r < runs; r++) {
		long regs = hits / 200;
		double t0 = now_ns();

		for (long i = 0; i < hits; i++) {
			ry_mr_cache_get(m, buf[0] + 100, 4000,
					RY_MR_REMOTE_WRITE, &mr, &off);
			ry_mr_cache_put(mr);
		}
		hit[r] = (now_ns() - t0) / (double)hits;
		t0 = now_ns();
		for (long i = 0; i < hits; i++) {
			ry_mr_cache_get(m, buf[i % NBUF], BUFSZ,
					RY_MR_REMOTE_WRITE, &mr, &off);
			ry_mr_cache_put(mr);
		}
		hitk[r] = (now_ns() - t0) / (double)hits;
		t0 = now_ns();
		for (long i = 0; i < regs; i++) {
			ret = ry_mr_reg(m, buf[1], BUFSZ, RY_MR_REMOTE_WRITE,
					&mr);
			if (ret)
				die("ry_mr_reg", ret);
			ry_mr_dereg(mr);
		}
		reg[r] = (now_ns() - t0) / (double)regs;
	}
	{
		struct ry_mr_cache_stats st;

		ry_mr_cache_stats(m, &st);
		if (st.misses != NBUF)
			die("unexpected misses (bench is wrong)",
			    (int)st.misses);
	}
	report("hit", hit, runs);
	report("hit/1k", hitk, runs);
	report("reg", reg, runs);
	ry_manager_destroy(m);
	for (int i = 0; i < NBUF; i++)
		free(buf[i]);
	return 0;
}
