// SPDX-License-Identifier: BSD-2-Clause
/*
 * The base layer's containers (src/util/list.h, queue.h, ring.h),
 * table-driven: each case is a script of pushes, pops and deletes and the
 * contents it must leave, front to back.  The manager's queues and the
 * rails' rings lean on exactly these edges: the first push, the last pop,
 * a push at the head of an empty queue, and counters that wrap.
 */
#include <check.h>
#include <stdint.h>
#include <string.h>

#include "src/util/heap.h"
#include "src/util/hidx.h"
#include "src/util/list.h"
#include "src/util/queue.h"
#include "src/util/random.h"
#include "src/util/ring.h"

#define NELEM 8

/* 'T' push at the tail, 'H' push at the head, 'P' pop the head (which must
 * be v), 'D' delete element v (lists only). */
struct step {
	char op;
	int v;
};

static const struct {
	const char *name;
	struct step steps[10];
	int want[NELEM]; /* contents after, front to back, -1 ends */
} cases[] = {
    {"empty", {{0, 0}}, {-1}},
    {"one push", {{'T', 1}}, {1, -1}},
    {"fifo order", {{'T', 1}, {'T', 2}, {'T', 3}}, {1, 2, 3, -1}},
    {"head on empty", {{'H', 4}}, {4, -1}},
    {"head jumps queue", {{'T', 1}, {'T', 2}, {'H', 3}}, {3, 1, 2, -1}},
    {"pop to empty", {{'T', 1}, {'P', 1}}, {-1}},
    {"push after empty", {{'T', 1}, {'P', 1}, {'T', 2}}, {2, -1}},
    {"head after pop", {{'T', 1}, {'P', 1}, {'H', 2}, {'T', 3}}, {2, 3, -1}},
    {"pop keeps tail",
     {{'T', 1}, {'T', 2}, {'T', 3}, {'P', 1}, {'T', 4}},
     {2, 3, 4, -1}},
    {"delete middle", {{'T', 1}, {'T', 2}, {'T', 3}, {'D', 2}}, {1, 3, -1}},
    {"delete last", {{'T', 1}, {'T', 2}, {'D', 2}, {'T', 5}}, {1, 5, -1}},
    {"delete only", {{'T', 1}, {'D', 1}}, {-1}},
};

#define NCASES ((int)(sizeof(cases) / sizeof(cases[0])))

static bool uses_delete(int i)
{
	for (unsigned k = 0; k < 10 && cases[i].steps[k].op; k++)
		if (cases[i].steps[k].op == 'D')
			return true;
	return false;
}

/* ---- list.h ---- */

struct lnode {
	int v;
	struct ry__list link;
};

START_TEST(list_table)
{
	struct lnode n[NELEM];
	struct ry__list head, *pos, *tmp;
	unsigned k, got = 0;

	memset(n, 0, sizeof(n));
	ry__list_init(&head);
	for (k = 0; k < 10 && cases[_i].steps[k].op; k++) {
		const struct step *s = &cases[_i].steps[k];
		struct lnode *x = &n[s->v];

		x->v = s->v;
		switch (s->op) {
		case 'T':
			ry__list_add_tail(&head, &x->link);
			break;
		case 'H':
			ry__list_add(&head, &x->link);
			break;
		case 'P':
			ck_assert(!ry__list_empty(&head));
			x = ry__list_first_entry(&head, struct lnode, link);
			ck_assert_int_eq(x->v, s->v);
			ry__list_del(&x->link);
			/* a deleted node points at itself: a second del is
			 * harmless */
			ck_assert(ry__list_empty(&x->link));
			ry__list_del(&x->link);
			break;
		case 'D':
			ry__list_del(&x->link);
			break;
		}
	}
	ry__list_for_each(pos, &head) {
		ck_assert_int_ge(cases[_i].want[got], 0);
		ck_assert_int_eq(ry__list_entry(pos, struct lnode, link)->v,
				 cases[_i].want[got]);
		got++;
	}
	ck_assert_int_eq(cases[_i].want[got], -1);
	ck_assert(ry__list_empty(&head) == (got == 0));
	/* deleting while walking leaves an empty list */
	ry__list_for_each_safe(pos, tmp, &head) {
		ry__list_del(pos);
		memset(pos, 0xa5, sizeof(*pos));
	}
	ck_assert(ry__list_empty(&head));
}
END_TEST

/* ---- queue.h ---- */

struct qnode {
	int v;
	struct qnode *q_next;
};

START_TEST(queue_table)
{
	struct qnode n[NELEM], *head, *tail, *x;
	unsigned k, got = 0;

	if (uses_delete(_i))
		return; /* a FIFO has no delete */
	memset(n, 0, sizeof(n));
	ry__sq_init(head, tail);
	for (k = 0; k < 10 && cases[_i].steps[k].op; k++) {
		const struct step *s = &cases[_i].steps[k];

		x = &n[s->v];
		x->v = s->v;
		switch (s->op) {
		case 'T':
			x->q_next = &n[7]; /* the push must clear it */
			ry__sq_push_tail(head, tail, x, q_next);
			break;
		case 'H':
			ry__sq_push_head(head, tail, x, q_next);
			break;
		case 'P':
			ck_assert_ptr_nonnull(head);
			ck_assert_int_eq(head->v, s->v);
			ry__sq_pop_head(head, tail, q_next);
			break;
		}
	}
	for (x = head; x; x = x->q_next) {
		ck_assert_int_ge(cases[_i].want[got], 0);
		ck_assert_int_eq(x->v, cases[_i].want[got]);
		if (!x->q_next)
			ck_assert_ptr_eq(tail, x);
		got++;
	}
	ck_assert_int_eq(cases[_i].want[got], -1);
	if (!got)
		ck_assert_ptr_null(tail);
}
END_TEST

/* ---- ring.h ---- */

static const struct {
	const char *name;
	uint32_t size, start; /* head and tail begin at start */
	uint32_t push, pop;
	uint32_t used;
	bool full, empty;
	uint32_t tail_slot;
} rings[] = {
    {"fresh", 16, 0, 0, 0, 0, false, true, 0},
    {"one", 16, 0, 1, 0, 1, false, false, 1},
    {"full", 16, 0, 16, 0, 16, true, false, 0},
    {"drained", 16, 0, 16, 16, 0, false, true, 0},
    {"wraps 2^32", 16, UINT32_MAX - 2, 10, 4, 6, false, false, 7},
    {"full across wrap", 4, UINT32_MAX, 4, 0, 4, true, false, 3},
    {"size one", 1, 7, 1, 0, 1, true, false, 0},
};

START_TEST(ring_table)
{
	uint32_t head = rings[_i].start, tail = rings[_i].start;

	tail += rings[_i].push;
	head += rings[_i].pop;
	ck_assert_uint_eq(ry__ring_used(head, tail), rings[_i].used);
	ck_assert(ry__ring_full(head, tail, rings[_i].size) == rings[_i].full);
	ck_assert(ry__ring_empty(head, tail) == rings[_i].empty);
	ck_assert_uint_eq(ry__ring_slot(tail, rings[_i].size),
			  rings[_i].tail_slot);
	ck_assert_uint_lt(ry__ring_slot(tail, rings[_i].size), rings[_i].size);
}
END_TEST

/* ---- heap.h ---- */

/*
 * Random sets, moves (earlier and later) and deletes against a plain
 * array: the top is always the smallest key, every node knows its slot.
 */
START_TEST(heap_random)
{
	enum { N = 200 };
	struct ry__heap h = {0};
	struct ry__heap_node x[N];
	uint64_t rng = 0x9e3779b97f4a7c15ull;

	memset(x, 0, sizeof(x));
	/* plain comparisons inside: each ck_assert costs a pipe write */
	for (int step = 0; step < 20000; step++) {
		unsigned i, bad = 0;
		uint64_t min = UINT64_MAX;
		uint32_t n = 0;

		rng ^= rng << 13;
		rng ^= rng >> 7;
		rng ^= rng << 17;
		i = (unsigned)(rng % N);
		if (rng % 5 == 0)
			ry__heap_del(&h, &x[i]);
		else
			ck_assert_int_eq(ry__heap_set(&h, &x[i], rng >> 40), 0);
		for (i = 0; i < N; i++) {
			if (!ry__heap_linked(&x[i]))
				continue;
			n++;
			bad += h.v[x[i].idx - 1] != &x[i];
			if (x[i].at < min)
				min = x[i].at;
		}
		bad += h.n != n;
		bad += n ? ry__heap_top(&h)->at != min : !!ry__heap_top(&h);
		if (bad)
			ck_abort_msg("step %d: heap inconsistent", step);
	}
	ry__heap_free(&h);
}
END_TEST

/* ---- hidx.h ---- */

/*
 * Random adds (moves, when filed already) and deletes against a plain
 * array, with few distinct keys so that chains are long and keys shared,
 * and enough nodes that the buckets double several times: every filed
 * node is found under its key exactly once, nothing else is, and the
 * count matches.
 */
START_TEST(hidx_random)
{
	enum { N = 600, KEYS = 97 };
	struct ry__hidx h;
	struct ry__hnode x[N];
	uint64_t rng = 0x2545f4914f6cdd1dull;

	memset(x, 0, sizeof(x));
	ck_assert_int_eq(ry__hidx_init(&h), 0);
	for (int step = 0; step < 20000; step++) {
		unsigned i, bad = 0, filed = 0;
		struct ry__hnode *pos;

		rng ^= rng << 13;
		rng ^= rng >> 7;
		rng ^= rng << 17;
		i = (unsigned)(rng % N);
		if (rng % 4 == 0)
			ry__hidx_del(&h, &x[i]);
		else
			/* keys far apart in their high bits: buckets use
			 * the low ones */
			ry__hidx_add(&h, &x[i],
				     ((rng >> 20) % KEYS) * 0x100000001ull);
		if (step % 50 && step != 19999)
			continue;
		for (i = 0; i < N; i++) {
			unsigned seen = 0;

			if (!ry__hidx_linked(&x[i]))
				continue;
			filed++;
			ry__hidx_for_each(pos, &h, x[i].key)
			{
				bad += pos->key != x[i].key;
				seen += pos == &x[i];
			}
			bad += seen != 1;
		}
		bad += h.n != filed;
		if (bad)
			ck_abort_msg("step %d: index inconsistent", step);
	}
	ck_assert_uint_gt(h.mask + 1, 256); /* it grew */
	for (unsigned i = 0; i < N; i++)
		ry__hidx_del(&h, &x[i]);
	ck_assert_uint_eq(h.n, 0);
	ck_assert_ptr_null(ry__hidx_first(&h, 0));
	ry__hidx_free(&h);
}
END_TEST

/* ---- random.h ---- */

START_TEST(random_fills)
{
	uint8_t buf[4096];
	unsigned zeros = 0;

	memset(buf, 0, sizeof(buf));
	ck_assert_int_eq(ry__rand_bytes(buf, sizeof(buf)), 0);
	for (unsigned i = 0; i < sizeof(buf); i++)
		zeros += !buf[i];
	/* 16 expected; a buffer left unfilled would be all zeros */
	ck_assert_uint_lt(zeros, 100);
	ck_assert_int_eq(ry__rand_bytes(buf, 0), 0);
	ck_assert_uint_ne(ry__rand64() | ry__rand64(), 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("util");
	TCase *tc = tcase_create("containers");
	SRunner *sr;
	int nf;

	tcase_add_loop_test(tc, list_table, 0, NCASES);
	tcase_add_loop_test(tc, queue_table, 0, NCASES);
	tcase_add_loop_test(tc, ring_table, 0,
			    (int)(sizeof(rings) / sizeof(rings[0])));
	tcase_add_test(tc, heap_random);
	tcase_add_test(tc, hidx_random);
	tcase_add_test(tc, random_fills);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf ? 1 : 0;
}
