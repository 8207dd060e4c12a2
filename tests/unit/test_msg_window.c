// SPDX-License-Identifier: BSD-2-Clause
/*
 * The receiver's message dedupe window (src/msg.c, ry__rxwin_accept) as a
 * pure function, table-driven on its edges: in order, out of order,
 * duplicates, the last sequence inside the window, the first outside it,
 * and sequences so far ahead that sliding up to them would never end.
 */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "src/manager.h"

struct win {
	uint64_t base;
	uint64_t bits[RY__RXWIN / 64];
};

static void win_init(struct win *w)
{
	memset(w, 0, sizeof(*w));
	w->base = 1;
}

/* { sequence, expected result, expected base after } applied in order */
struct step {
	uint64_t seq;
	int ret;
	uint64_t base;
};

static const struct {
	const char *name;
	struct step steps[8];
	unsigned n;
} cases[] = {
    {"in order", {{1, 1, 2}, {2, 1, 3}, {3, 1, 4}}, 3},
    {"duplicate of delivered", {{1, 1, 2}, {1, 0, 2}, {0, 0, 2}}, 3},
    {"gap then fill", {{3, 1, 1}, {2, 1, 1}, {3, 0, 1}, {1, 1, 4}}, 4},
    {"last inside the window", {{RY__RXWIN, 1, 1}, {RY__RXWIN, 0, 1}}, 2},
    {"first outside the window", {{RY__RXWIN + 1, -ERANGE, 1}}, 1},
    {"2^33", {{1ull << 33, -ERANGE, 1}, {1, 1, 2}}, 2},
    {"2^62", {{1ull << 62, -ERANGE, 1}, {1, 1, 2}}, 2},
    {"2^64-1", {{UINT64_MAX, -ERANGE, 1}, {2, 1, 1}, {1, 1, 3}}, 3},
    {"zero is never new", {{0, 0, 1}}, 1},
};

START_TEST(window_table)
{
	struct win w;
	unsigned i;

	win_init(&w);
	for (i = 0; i < cases[_i].n; i++) {
		const struct step *s = &cases[_i].steps[i];
		int ret = ry__rxwin_accept(&w.base, w.bits, s->seq);

		ck_assert_msg(ret == s->ret, "%s, step %u (seq %llu): %d != %d",
			      cases[_i].name, i, (unsigned long long)s->seq,
			      ret, s->ret);
		ck_assert_msg(w.base == s->base,
			      "%s, step %u: base %llu != %llu", cases[_i].name,
			      i, (unsigned long long)w.base,
			      (unsigned long long)s->base);
	}
}
END_TEST

/* The window slides with the traffic: ring bits are reused, never stale. */
START_TEST(window_slides_many_times)
{
	struct win w;
	uint64_t s;

	win_init(&w);
	for (s = 1; s <= 10 * RY__RXWIN; s += 2) {
		/* pairs out of order: s+1 first, then s */
		ck_assert_int_eq(ry__rxwin_accept(&w.base, w.bits, s + 1), 1);
		ck_assert_uint_eq(w.base, s);
		ck_assert_int_eq(ry__rxwin_accept(&w.base, w.bits, s), 1);
		ck_assert_uint_eq(w.base, s + 2);
		ck_assert_int_eq(ry__rxwin_accept(&w.base, w.bits, s), 0);
		ck_assert_int_eq(ry__rxwin_accept(&w.base, w.bits, s + 1), 0);
	}
	/* the edge moved with it */
	ck_assert_int_eq(ry__rxwin_accept(&w.base, w.bits, w.base + RY__RXWIN),
			 -ERANGE);
	ck_assert_int_eq(
	    ry__rxwin_accept(&w.base, w.bits, w.base + RY__RXWIN - 1), 1);
}
END_TEST

/* A full window of holes, then filled: base jumps across all of it. */
START_TEST(window_fills_from_the_top)
{
	struct win w;
	uint64_t s;

	win_init(&w);
	for (s = RY__RXWIN; s >= 2; s--)
		ck_assert_int_eq(ry__rxwin_accept(&w.base, w.bits, s), 1);
	ck_assert_uint_eq(w.base, 1);
	ck_assert_int_eq(ry__rxwin_accept(&w.base, w.bits, 1), 1);
	ck_assert_uint_eq(w.base, RY__RXWIN + 1);
	ck_assert_int_eq(ry__rxwin_accept(&w.base, w.bits, RY__RXWIN), 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("msg_window");
	TCase *tc = tcase_create("window");
	SRunner *sr;
	int nf;

	tcase_add_loop_test(tc, window_table, 0,
			    (int)(sizeof(cases) / sizeof(cases[0])));
	tcase_add_test(tc, window_slides_many_times);
	tcase_add_test(tc, window_fills_from_the_top);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf ? 1 : 0;
}
