// SPDX-License-Identifier: BSD-2-Clause
/*
 * The registration cache (ry_mr_cache_*): hits, misses, LRU eviction by
 * bytes, pinning of regions in use, invalidation, the cache turned off,
 * and cached regions carrying real operations (fixture managers over the
 * loop rail, byte-verified).
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/manager/fixture.h"

#define KiB 1024u
#define NBUF 8

static struct fx F;
static size_t PG;
static unsigned char *B[NBUF]; /* page-aligned, 16 KiB each */

static void setup_cache(uint64_t limit)
{
	int ret = fx_init(&F, &(struct fx_opts){.reg_cache_bytes = limit});

	ck_assert_msg(ret == 0, "fixture: %s", strerror(-ret));
	PG = (size_t)sysconf(_SC_PAGESIZE);
	ck_assert_uint_le(PG, 16 * KiB);
	for (int i = 0; i < NBUF; i++) {
		B[i] = aligned_alloc(PG, 16 * KiB);
		ck_assert_ptr_nonnull(B[i]);
	}
}

static void teardown(void)
{
	fx_fini(&F);
	for (int i = 0; i < NBUF; i++)
		free(B[i]);
}

static struct ry_mr_cache_stats stats(void)
{
	struct ry_mr_cache_stats st;

	ck_assert_int_eq(ry_mr_cache_stats(F.a, &st), 0);
	return st;
}

static struct ry_region *get(void *addr, size_t len, unsigned access,
			     size_t *off)
{
	struct ry_region *mr = NULL;
	size_t o;

	ck_assert_int_eq(ry_mr_cache_get(F.a, addr, len, access, &mr, &o), 0);
	ck_assert_ptr_nonnull(mr);
	if (off)
		*off = o;
	return mr;
}

/* get and put: leaves the buffer cached (or not) and idle */
static struct ry_region *touch(void *addr, size_t len)
{
	struct ry_region *mr = get(addr, len, RY_MR_REMOTE_READ, NULL);

	ck_assert_int_eq(ry_mr_cache_put(mr), 0);
	return mr;
}

START_TEST(hit_and_miss)
{
	struct ry_region *r1, *r2, *r3, *r4;
	size_t off;

	setup_cache(1 << 20);
	r1 = get(B[0] + 100, 1000, RY_MR_REMOTE_READ, &off);
	ck_assert_uint_eq(off, 100); /* the region starts at the page */
	ck_assert_uint_eq(stats().misses, 1);
	ck_assert_uint_eq(stats().hits, 0);
	/* the same buffer, and one inside the same first page: hits */
	r2 = get(B[0] + 100, 1000, RY_MR_REMOTE_READ, &off);
	ck_assert_ptr_eq(r2, r1);
	r3 = get(B[0] + 7, 10, 0, &off);
	ck_assert_ptr_eq(r3, r1);
	ck_assert_uint_eq(off, 7);
	ck_assert_uint_eq(stats().hits, 2);
	ck_assert_uint_eq(stats().entries, 1);
	ck_assert_uint_eq(stats().in_use, 1);
	ck_assert_uint_eq(stats().bytes, PG);
	/* more access, or past the cached pages: misses */
	r4 = get(B[0] + 100, 1000, RY_MR_REMOTE_WRITE, NULL);
	ck_assert_ptr_ne(r4, r1);
	ck_assert_int_eq(ry_mr_cache_put(r4), 0);
	r4 = get(B[0] + 100, PG, RY_MR_REMOTE_READ, NULL);
	ck_assert_ptr_ne(r4, r1);
	ck_assert_int_eq(ry_mr_cache_put(r4), 0);
	ck_assert_uint_eq(stats().misses, 3);
	ck_assert_uint_eq(stats().entries, 3);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(ry_mr_cache_put(r1), 0);
	ck_assert_uint_eq(stats().in_use, 0);
	/* still cached when idle (any of the covering regions may hit) */
	touch(B[0] + 100, 1000);
	ck_assert_uint_eq(stats().hits, 3);
	ck_assert_uint_eq(stats().misses, 3);
	teardown();
}
END_TEST

START_TEST(bad_calls)
{
	struct ry_region *mr, *plain;
	size_t off;

	setup_cache(1 << 20);
	ck_assert_int_eq(ry_mr_cache_get(F.a, B[0], 0, 0, &mr, &off), -EINVAL);
	ck_assert_int_eq(ry_mr_cache_get(F.a, NULL, 10, 0, &mr, &off), -EINVAL);
	ck_assert_int_eq(ry_mr_cache_get(NULL, B[0], 10, 0, &mr, &off),
			 -EINVAL);
	ck_assert_int_eq(ry_mr_cache_get(F.a, B[0], 10, 1u << 7, &mr, &off),
			 -EINVAL);
	ck_assert_int_eq(ry_mr_cache_get(F.a, B[0], 10, 0, NULL, &off),
			 -EINVAL);
	ck_assert_int_eq(ry_mr_cache_put(NULL), -EINVAL);
	ck_assert_int_eq(ry_mr_cache_invalidate(F.a, NULL, 10), -EINVAL);
	ck_assert_int_eq(ry_mr_cache_invalidate(F.a, B[0], 0), -EINVAL);
	ck_assert_int_eq(ry_mr_cache_stats(F.a, NULL), -EINVAL);
	/* a region of the application is not the cache's, and the reverse */
	ck_assert_int_eq(ry_mr_reg(F.a, B[1], 100, 0, &plain), 0);
	ck_assert_int_eq(ry_mr_cache_put(plain), -EINVAL);
	ck_assert_int_eq(ry_mr_dereg(plain), 0);
	mr = get(B[0], 10, 0, NULL);
	ck_assert_int_eq(ry_mr_dereg(mr), -EINVAL);
	ck_assert_int_eq(ry_mr_cache_put(mr), 0);
	/* more puts than gets */
	ck_assert_int_eq(ry_mr_cache_put(mr), -EINVAL);
	ck_assert_uint_eq(stats().entries, 1);
	teardown();
}
END_TEST

START_TEST(lru_eviction_by_bytes)
{
	struct ry_region *r[NBUF];
	int i;

	setup_cache(64 * KiB); /* four of the 16 KiB buffers */
	for (i = 0; i < NBUF; i++) {
		r[i] = touch(B[i], 16 * KiB);
		if (i == 4)
			touch(B[1], 16 * KiB); /* recently used: kept */
	}
	ck_assert_uint_eq(stats().entries, 4);
	ck_assert_uint_eq(stats().bytes, 64 * KiB);
	ck_assert_uint_eq(stats().evictions, 4);
	ck_assert_uint_eq(stats().misses, NBUF);
	/* kept: B[1] (touched) and the last three; gone: 0, 2, 3, 4 */
	ck_assert_ptr_eq(touch(B[1], 16 * KiB), r[1]);
	for (i = 5; i < NBUF; i++)
		ck_assert_ptr_eq(touch(B[i], 16 * KiB), r[i]);
	ck_assert_uint_eq(stats().hits, 1 + 1 + 3);
	ck_assert_uint_eq(stats().misses, NBUF);
	touch(B[0], 16 * KiB);
	ck_assert_uint_eq(stats().misses, NBUF + 1);
	ck_assert_uint_eq(stats().evictions, 5);
	/* a buffer larger than the limit is registered, not kept */
	{
		unsigned char *big = aligned_alloc(PG, 128 * KiB);
		struct ry_region *mr;

		ck_assert_ptr_nonnull(big);
		mr = get(big, 128 * KiB, 0, NULL);
		ck_assert_uint_eq(stats().entries, 5);
		ck_assert_int_eq(ry_mr_cache_put(mr), 0);
		ck_assert_uint_eq(stats().entries, 4);
		ck_assert_uint_eq(stats().bytes, 64 * KiB);
		free(big);
	}
	teardown();
}
END_TEST

START_TEST(in_use_never_evicted)
{
	struct ry_region *r[NBUF];
	int i;

	setup_cache(32 * KiB);
	for (i = 0; i < NBUF; i++)
		r[i] = get(B[i], 16 * KiB, 0, NULL);
	/* all in use: over the limit, nothing evicted, all still hit */
	ck_assert_uint_eq(stats().entries, NBUF);
	ck_assert_uint_eq(stats().bytes, NBUF * 16 * KiB);
	ck_assert_uint_eq(stats().evictions, 0);
	for (i = 0; i < NBUF; i++) {
		ck_assert_ptr_eq(get(B[i], 16 * KiB, 0, NULL), r[i]);
		ck_assert_int_eq(ry_mr_cache_put(r[i]), 0);
	}
	/* each put lets the idle ones go down to the limit */
	for (i = 0; i < NBUF; i++)
		ck_assert_int_eq(ry_mr_cache_put(r[i]), 0);
	ck_assert_uint_eq(stats().in_use, 0);
	ck_assert_uint_le(stats().bytes, 32 * KiB);
	ck_assert_uint_eq(stats().evictions, NBUF - 2);
	teardown();
}
END_TEST

START_TEST(invalidate)
{
	struct ry_region *r0, *r1, *again;

	setup_cache(1 << 20);
	r0 = touch(B[0], 16 * KiB);
	r1 = get(B[1], 16 * KiB, 0, NULL);
	touch(B[2], 16 * KiB);
	ck_assert_uint_eq(stats().entries, 3);
	/* an overlapping range: one byte of B[0] */
	ck_assert_int_eq(ry_mr_cache_invalidate(F.a, B[0] + 5000, 1), 1);
	ck_assert_uint_eq(stats().entries, 2);
	again = touch(B[0], 16 * KiB);
	ck_assert_uint_eq(stats().misses, 4);
	(void)r0;
	(void)again;
	/* in use: out of the index at once, deregistered at its last put */
	ck_assert_int_eq(ry_mr_cache_invalidate(F.a, B[1], 16 * KiB), 1);
	ck_assert_uint_eq(stats().entries, 3);
	again = get(B[1], 16 * KiB, 0, NULL);
	ck_assert_ptr_ne(again, r1);
	ck_assert_uint_eq(stats().entries, 4);
	ck_assert_int_eq(ry_mr_cache_put(r1), 0);
	ck_assert_uint_eq(stats().entries, 3);
	ck_assert_int_eq(ry_mr_cache_put(again), 0);
	/* a range touching nothing cached */
	ck_assert_int_eq(ry_mr_cache_invalidate(F.a, B[3], 16 * KiB), 0);
	ck_assert_uint_eq(stats().invalidations, 2);
	teardown();
}
END_TEST

START_TEST(cache_off)
{
	struct ry_region *a, *b;

	setup_cache(0);
	a = get(B[0], 100, 0, NULL);
	b = get(B[0], 100, 0, NULL);
	ck_assert_ptr_ne(a, b);
	ck_assert_uint_eq(stats().hits, 0);
	ck_assert_uint_eq(stats().entries, 2);
	ck_assert_int_eq(ry_mr_cache_put(a), 0);
	ck_assert_int_eq(ry_mr_cache_put(b), 0);
	ck_assert_uint_eq(stats().entries, 0);
	ck_assert_uint_eq(stats().bytes, 0);
	teardown();
}
END_TEST

/* Cached regions carry real operations; a put waits for them. */
START_TEST(cached_regions_in_ops)
{
	struct ry_iov iov[NBUF];
	struct fx_done d = {0};
	struct ry_region *mr;
	size_t off, at = 0;
	int i, round;

	setup_cache(1 << 20);
	for (round = 0; round < 3; round++) {
		for (i = 0; i < NBUF; i++) {
			size_t len = 16 * KiB - 11 - (size_t)i;

			fx_fill(B[i] + 11, len, (uint32_t)(round * 10 + i));
			mr = get(B[i] + 11, len, 0, &off);
			iov[i] = (struct ry_iov){mr, off, len};
		}
		ck_assert_int_eq(ry_writev(F.ab, iov, NBUF, F.desc_b,
					   (size_t)F.desc_b_len, 0, fx_cb, &d),
				 0);
		/* the first op waits for the peer to connect: a put fails */
		if (round == 0)
			ck_assert_int_eq(ry_mr_cache_put(iov[0].mr), -EBUSY);
		ck_assert(fx_until_done(&F, &d, (unsigned)round + 1, 10000));
		ck_assert_uint_eq(d.ok, (unsigned)round + 1);
		at = 0;
		for (i = 0; i < NBUF; i++) {
			ck_assert(!memcmp(F.bufb + at, B[i] + 11, iov[i].len));
			at += iov[i].len;
			ck_assert_int_eq(ry_mr_cache_put(iov[i].mr), 0);
		}
	}
	ck_assert_uint_eq(stats().misses, NBUF);
	ck_assert_uint_eq(stats().hits, 2 * NBUF);
	teardown();
}
END_TEST

int main(void)
{
	const TTest *const tests[] = {
	    hit_and_miss,	   bad_calls,  lru_eviction_by_bytes,
	    in_use_never_evicted,  invalidate, cache_off,
	    cached_regions_in_ops,
	};

	return fx_run_suite("rcache", 60, tests,
			    sizeof(tests) / sizeof(tests[0]), false);
}
