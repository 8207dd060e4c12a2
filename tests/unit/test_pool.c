// SPDX-License-Identifier: BSD-2-Clause
/*
 * The bounded-chunk pools (src/inflight.c), table-driven by object size.
 * A pool links free objects through their first word and carves chunks
 * of at most 64 KiB, so the edges are sizes below a pointer, around the
 * 16-byte rounding, and an object bigger than a whole chunk.  Each case
 * takes several chunks' worth, fills every byte, hands them back in a
 * scrambled order and takes them again: the second round must reuse the
 * first round's objects, no two live objects may overlap, and fini must
 * leave nothing behind for ASan or valgrind to find.
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "src/manager.h"

static const size_t sizes[] = {
    1, 7, 8, 9, 15, 16, 17, 64, 4096 + 1, 64 * 1024, 64 * 1024 + 1, 200000,
};

#define NSIZES ((int)(sizeof(sizes) / sizeof(sizes[0])))

static int cmp_ptr(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t) * (void *const *)a;
	uintptr_t y = (uintptr_t) * (void *const *)b;

	return x < y ? -1 : x > y;
}

static unsigned char pattern(unsigned obj, size_t byte)
{
	return (unsigned char)(obj * 31u + byte * 7u + 1u);
}

/* Every live object still holds what was written into it: none of them
 * overlaps another, and the pool did not write into a live one. */
static void check_live(void **objs, unsigned n, size_t size)
{
	unsigned i, bad = 0;
	size_t b;

	/* one assertion, not one per byte: each costs a write to the
	 * runner in fork mode */
	for (i = 0; i < n; i++)
		for (b = 0; b < size; b++)
			bad += ((unsigned char *)objs[i])[b] != pattern(i, b);
	ck_assert_msg(!bad, "%u bytes of live objects overwritten", bad);
}

static void fill(void **objs, unsigned n, size_t size)
{
	unsigned i;
	size_t b;

	for (i = 0; i < n; i++)
		for (b = 0; b < size; b++)
			((unsigned char *)objs[i])[b] = pattern(i, b);
}

START_TEST(pool_sizes)
{
	const size_t size = sizes[_i];
	struct ry__pool pl;
	void **objs, **first, **sorted;
	unsigned n, i, j;

	ry__pool_init(&pl, size);
	ck_assert_uint_ge(pl.pl_size, size);
	ck_assert_uint_eq(pl.pl_size % 16, 0);
	ck_assert_uint_ge(pl.pl_per_chunk, 1);
	ck_assert_uint_eq(pl.pl_in_use, 0);
	/* well past one chunk, and not a multiple of it */
	n = 3 * pl.pl_per_chunk + 5;
	objs = calloc(n, sizeof(*objs));
	first = calloc(n, sizeof(*first));
	sorted = calloc(n, sizeof(*sorted));
	ck_assert(objs && first && sorted);

	for (i = 0; i < n; i++) {
		objs[i] = ry__pool_get(&pl);
		ck_assert_ptr_nonnull(objs[i]);
		ck_assert_uint_eq((uintptr_t)objs[i] % 16, 0);
		ck_assert_uint_eq(pl.pl_in_use, i + 1);
	}
	fill(objs, n, size);
	check_live(objs, n, size);
	memcpy(sorted, objs, n * sizeof(*objs));
	qsort(sorted, n, sizeof(*sorted), cmp_ptr);
	for (i = 1; i < n; i++)
		ck_assert_msg((uintptr_t)sorted[i - 1] + size <=
				  (uintptr_t)sorted[i],
			      "objects overlap");
	memcpy(first, sorted, n * sizeof(*sorted));

	/* back in a scrambled order: a prime stride, coprime with n */
	ck_assert_uint_ne(n % 7919, 0);
	for (j = 0, i = 0; j < n; j++, i = (i + 7919) % n) {
		ry__pool_put(&pl, objs[i]);
		ck_assert_uint_eq(pl.pl_in_use, n - j - 1);
	}
	for (i = 0; i < n; i++) {
		objs[i] = ry__pool_get(&pl);
		ck_assert_msg(bsearch(&objs[i], first, n, sizeof(*first),
				      cmp_ptr) != NULL,
			      "object %u not reused", i);
	}
	ck_assert_uint_eq(pl.pl_in_use, n);
	memcpy(sorted, objs, n * sizeof(*objs));
	qsort(sorted, n, sizeof(*sorted), cmp_ptr);
	for (i = 1; i < n; i++)
		ck_assert_msg(sorted[i - 1] != sorted[i],
			      "one object handed out twice");
	fill(objs, n, size);
	check_live(objs, n, size);

	/* LIFO: the object just put back is the next one out */
	ry__pool_put(&pl, objs[n / 2]);
	ck_assert_ptr_eq(ry__pool_get(&pl), objs[n / 2]);
	ck_assert_uint_eq(pl.pl_in_use, n);

	/* every other one back and out again, then all back */
	for (i = 0; i < n; i += 2)
		ry__pool_put(&pl, objs[i]);
	for (i = 0; i < n; i += 2)
		objs[i] = ry__pool_get(&pl);
	ck_assert_uint_eq(pl.pl_in_use, n);
	for (i = 0; i < n; i++)
		ry__pool_put(&pl, objs[i]);
	ck_assert_uint_eq(pl.pl_in_use, 0);
	ry__pool_fini(&pl);
	ck_assert_ptr_null(pl.pl_free);
	ck_assert_ptr_null(pl.pl_chunks);
	free(objs);
	free(first);
	free(sorted);
}
END_TEST

/* A pool that never handed anything out, and one fini'd twice, free
 * nothing that is not theirs. */
START_TEST(pool_empty)
{
	struct ry__pool pl;

	ry__pool_init(&pl, sizes[_i]);
	ry__pool_fini(&pl);
	ry__pool_fini(&pl);
	ck_assert_ptr_null(pl.pl_chunks);
}
END_TEST

/* Chunks stay bounded: only objects bigger than a chunk get one each. */
START_TEST(pool_chunk_bound)
{
	struct ry__pool pl;

	ry__pool_init(&pl, sizes[_i]);
	if (pl.pl_per_chunk > 1)
		ck_assert_uint_le(pl.pl_size * pl.pl_per_chunk, 64 * 1024);
	else
		ck_assert_uint_gt(pl.pl_size * 2, 64 * 1024 - 16);
	ry__pool_fini(&pl);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("pool");
	TCase *tc = tcase_create("sizes");
	SRunner *sr;
	int nf;

	tcase_add_loop_test(tc, pool_sizes, 0, NSIZES);
	tcase_add_loop_test(tc, pool_empty, 0, NSIZES);
	tcase_add_loop_test(tc, pool_chunk_bound, 0, NSIZES);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf ? 1 : 0;
}
