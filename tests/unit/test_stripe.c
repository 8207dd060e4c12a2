// SPDX-License-Identifier: BSD-2-Clause
/*
 * The striping decision (ry__stripe_pick, src/stripe.c), table-driven, on
 * connections built by hand: no manager, no rail, no clock.  One table
 * holds single decisions on the edges (limits, masks, states, backlog,
 * ties, arithmetic near 2^64); the others assign N pieces with nothing
 * completing, as ry__stripe() does within one call, and check who got
 * what.  That is the deterministic core of the end-to-end unequal_rates
 * case (tests/manager), which can only keep its ops small enough that the
 * backlog never engages; here 1:3 must give exactly 1:3 at any size.
 */
#include <check.h>
#include <stdint.h>
#include <string.h>

#include "src/manager.h"

#define NC 4
#define KiB 1024u
#define NOBL (UINT64_MAX / 4) /* cn_win_prev: never backlogged */

struct cand {
	uint64_t share, out, win;
	unsigned wrs;
	int r; /* remote rail index + 1; 0: same as i */
};

static void build(struct ry__conn *conns, struct ry__conn **cs,
		  const struct cand *cd, unsigned n)
{
	unsigned i;

	memset(conns, 0, sizeof(*conns) * NC);
	for (i = 0; i < n; i++) {
		conns[i].cn_share = cd[i].share;
		conns[i].cn_out_bytes = cd[i].out;
		conns[i].cn_win_prev = cd[i].win;
		conns[i].cn_out_wrs = cd[i].wrs;
		conns[i].cn_state = CONN_ACTIVE;
		conns[i].cn_ridx = cd[i].r ? cd[i].r - 1 : (int)i;
		cs[i] = &conns[i];
	}
}

/* ---- single decisions ---- */

static const struct {
	const char *name;
	unsigned n;
	struct cand c[NC];
	uint32_t bytes, mask;
	unsigned max_wrs;
	bool msg;
	int want;
} picks[] = {
    {"no candidates", 0, {{0}}, 4096, ~0u, 256, false, -1},
    {"no candidates, message", 0, {{0}}, 64, ~0u, 256, true, -1},
    {"one idle", 1, {{.share = 1}}, 4096, ~0u, 256, false, 0},
    {"equal and idle: a tie keeps the first",
     2,
     {{.share = 5}, {.share = 5}},
     4096,
     ~0u,
     256,
     false,
     0},
    {"equal, first busier",
     2,
     {{.share = 1, .out = 4096}, {.share = 1, .out = 0}},
     4096,
     ~0u,
     256,
     false,
     1},
    {"1:3 exact tie keeps the first",
     2,
     {{.share = 1, .out = 0}, {.share = 3, .out = 8192}},
     4096,
     ~0u,
     256,
     false,
     0},
    {"1:3 one byte under the tie",
     2,
     {{.share = 1, .out = 0}, {.share = 3, .out = 8191}},
     4096,
     ~0u,
     256,
     false,
     1},
    {"tie among three keeps the first",
     3,
     {{.share = 2, .out = 4096},
      {.share = 1, .out = 0},
      {.share = 4, .out = 12288}},
     4096,
     ~0u,
     256,
     false,
     0},
    {"the piece's size decides",
     2,
     {{.share = 1, .out = 0}, {.share = 2, .out = 1000}},
     1,
     ~0u,
     256,
     false,
     0},
    {"... a bigger piece flips it",
     2,
     {{.share = 1, .out = 0}, {.share = 2, .out = 1000}},
     2000,
     ~0u,
     256,
     false,
     1},
    {"at max_wrs: skipped",
     2,
     {{.share = 100, .wrs = 4}, {.share = 1, .out = 1 << 16}},
     4096,
     ~0u,
     4,
     false,
     1},
    {"one under max_wrs: eligible",
     2,
     {{.share = 100, .wrs = 3}, {.share = 1}},
     4096,
     ~0u,
     4,
     false,
     0},
    {"all at max_wrs",
     2,
     {{.share = 1, .wrs = 2}, {.share = 1, .wrs = 9}},
     4096,
     ~0u,
     2,
     false,
     -1},
    {"max_wrs 0", 1, {{.share = 1}}, 4096, ~0u, 0, true, -1},
    {"message honours max_wrs",
     2,
     {{.share = 9, .wrs = 1}, {.share = 1}},
     64,
     ~0u,
     1,
     true,
     1},
    {"outside the mask",
     2,
     {{.share = 100}, {.share = 1, .out = 1 << 16}},
     4096,
     1u << 1,
     256,
     false,
     1},
    {"the mask is by remote rail, not position",
     2,
     {{.share = 100, .r = 8}, {.share = 1, .r = 1}},
     4096,
     1u << 7,
     256,
     false,
     0},
    {"... and excludes by it",
     2,
     {{.share = 100, .r = 8}, {.share = 1, .r = 1}},
     4096,
     1u << 0,
     256,
     false,
     1},
    {"remote rail 31",
     1,
     {{.share = 1, .r = 32}},
     4096,
     1u << 31,
     256,
     false,
     0},
    {"empty mask", 2, {{.share = 1}, {.share = 1}}, 4096, 0, 256, false, -1},
    {"backlogged: skipped",
     2,
     {{.share = 1, .out = 256 * KiB, .win = 0},
      {.share = 1, .out = 512 * KiB, .win = 1024 * KiB}},
     4096,
     ~0u,
     256,
     false,
     1},
    {"message ignores backlog",
     2,
     {{.share = 1, .out = 256 * KiB, .win = 0},
      {.share = 1, .out = 512 * KiB, .win = 1024 * KiB}},
     64,
     ~0u,
     256,
     true,
     0},
    {"all backlogged",
     2,
     {{.share = 1, .out = 256 * KiB, .win = 0},
      {.share = 1, .out = 1024 * KiB, .win = 512 * KiB}},
     4096,
     ~0u,
     256,
     false,
     -1},
    {"... a message still goes",
     2,
     {{.share = 1, .out = 256 * KiB, .win = 0},
      {.share = 1, .out = 1024 * KiB, .win = 512 * KiB}},
     64,
     ~0u,
     256,
     true,
     0},
    {"under RY__OUT_MIN never backlogged",
     2,
     {{.share = 1, .out = RY__OUT_MIN - 1, .win = 0},
      {.share = 1, .out = RY__OUT_MIN + 4096, .win = NOBL}},
     4096,
     ~0u,
     256,
     false,
     0},
    {"at RY__OUT_MIN with nothing drained: backlogged",
     2,
     {{.share = 1, .out = RY__OUT_MIN, .win = 0},
      {.share = 1, .out = RY__OUT_MIN + 4096, .win = NOBL}},
     4096,
     ~0u,
     256,
     false,
     1},
    {"at twice the window: backlogged",
     2,
     {{.share = 4, .out = 1024 * KiB, .win = 512 * KiB},
      {.share = 1, .out = 1024 * KiB, .win = NOBL}},
     4096,
     ~0u,
     256,
     false,
     1},
    {"a byte under twice the window: eligible",
     2,
     {{.share = 4, .out = 1024 * KiB, .win = 512 * KiB + 1},
      {.share = 1, .out = 1024 * KiB, .win = NOBL}},
     4096,
     ~0u,
     256,
     false,
     0},
    {"share 1 vs 2^40: the huge one, even far busier",
     2,
     {{.share = 1, .out = 0},
      {.share = 1ull << 40, .out = 1ull << 40, .win = NOBL}},
     4096,
     ~0u,
     256,
     false,
     1},
    {"share 1 vs 2^40: past 4096 x 2^40 the small one",
     2,
     {{.share = 1, .out = 0},
      {.share = 1ull << 40, .out = 1ull << 52, .win = NOBL}},
     4096,
     ~0u,
     256,
     false,
     0},
    {"largest share the config makes, 2^32 x 1010, vs 1",
     2,
     {{.share = 1, .out = 4096},
      {.share = 4294967295ull * 1010, .out = 1ull << 40, .win = NOBL}},
     4096,
     ~0u,
     256,
     false,
     1},
    /* 64-bit products wrap in these: (2^34 - 4096 + 4096) x 2^30 is 2^64 */
    {"16 GiB behind a share-1 rail vs a 2^30 rail",
     2,
     {{.share = 1, .out = (1ull << 34) - 4096, .win = NOBL},
      {.share = 1ull << 30, .out = 1 << 20, .win = NOBL}},
     4096,
     ~0u,
     256,
     false,
     1},
    {"... the other way round",
     2,
     {{.share = 1ull << 30, .out = 1 << 20, .win = NOBL},
      {.share = 1, .out = (1ull << 34) - 4096, .win = NOBL}},
     4096,
     ~0u,
     256,
     false,
     0},
    {"out_bytes + bytes past 2^64",
     2,
     {{.share = 1, .out = UINT64_MAX - 100}, {.share = 1, .out = 0}},
     4096,
     ~0u,
     256,
     true,
     1},
    {"both near 2^64",
     2,
     {{.share = 1, .out = UINT64_MAX}, {.share = 1, .out = UINT64_MAX - 1}},
     UINT32_MAX,
     ~0u,
     256,
     true,
     1},
    {"near 2^64 with big shares",
     2,
     {{.share = 1ull << 41, .out = UINT64_MAX},
      {.share = 1ull << 40, .out = UINT64_MAX / 2 - 10000}},
     4096,
     ~0u,
     256,
     true,
     1},
    {"largest piece",
     2,
     {{.share = 1, .out = 0}, {.share = 2, .out = 0}},
     UINT32_MAX,
     ~0u,
     256,
     false,
     1},
};

#define NPICKS ((int)(sizeof(picks) / sizeof(picks[0])))

START_TEST(pick_table)
{
	struct ry__conn conns[NC], *cs[NC];

	build(conns, cs, picks[_i].c, picks[_i].n);
	ck_assert_msg(ry__stripe_pick(cs, picks[_i].n, picks[_i].bytes,
				      picks[_i].mask, picks[_i].max_wrs,
				      picks[_i].msg) == picks[_i].want,
		      "%s: want %d", picks[_i].name, picks[_i].want);
	if (!picks[_i].msg) {
		/* ry__stripe()'s fragment path decides the same */
		struct ry__choice ln;

		ry__choice_init(&ln, cs, picks[_i].n, picks[_i].max_wrs);
		ck_assert_msg(ry__choice_pick(&ln, picks[_i].bytes,
					      picks[_i].mask) == picks[_i].want,
			      "%s (choice): want %d", picks[_i].name,
			      picks[_i].want);
	}
}
END_TEST

/* Only ACTIVE connections carry anything, messages included. */
START_TEST(pick_not_active)
{
	struct ry__conn conns[NC], *cs[NC];
	const struct cand cd[2] = {{.share = 1000}, {.share = 1, .out = 4096}};
	enum ry__conn_state s = (enum ry__conn_state)_i;

	build(conns, cs, cd, 2);
	conns[0].cn_state = s;
	ck_assert_int_eq(ry__stripe_pick(cs, 2, 4096, ~0u, 256, false),
			 s == CONN_ACTIVE ? 0 : 1);
	ck_assert_int_eq(ry__stripe_pick(cs, 2, 64, ~0u, 256, true),
			 s == CONN_ACTIVE ? 0 : 1);
	conns[1].cn_state = s;
	ck_assert_int_eq(ry__stripe_pick(cs, 2, 64, ~0u, 256, true),
			 s == CONN_ACTIVE ? 0 : -1);
}
END_TEST

/* ---- N pieces, nothing completing ---- */

static const struct {
	const char *name;
	unsigned n;
	struct cand c[NC];
	unsigned npieces;
	uint32_t bytes;
	unsigned max_wrs;
	/* the first picks, '0'..'3', '-' for none; may be shorter */
	const char *seq;
	unsigned want[NC]; /* per connection after npieces */
} sims[] = {
    {"equal shares alternate",
     2,
     {{.share = 1010}, {.share = 1010}},
     8,
     4096,
     256,
     "01010101",
     {4, 4}},
    {"three equal go round",
     3,
     {{.share = 1}, {.share = 1}, {.share = 1}},
     9,
     4096,
     256,
     "012012012",
     {3, 3, 3}},
    {"1:3", 2, {{.share = 1}, {.share = 3}}, 8, 4096, 256, "11011101", {2, 6}},
    {"1:3 with health, 1 MiB in 4 KiB pieces",
     2,
     {{.share = 1010, .win = NOBL}, {.share = 3030, .win = NOBL}},
     256,
     4096,
     256,
     "1101",
     {64, 192}},
    {"1:3, 1 MiB in 64 KiB WRs",
     2,
     {{.share = 1010, .win = NOBL}, {.share = 3030, .win = NOBL}},
     16,
     64 * KiB,
     256,
     "1101110111011101",
     {4, 12}},
    {"1:3, 1001 pieces",
     2,
     {{.share = 1, .win = NOBL}, {.share = 3, .win = NOBL}},
     1001,
     4096,
     2000,
     "",
     {250, 751}},
    {"3:1: ties go to the first, so not quite a mirror of 1:3",
     2,
     {{.share = 3}, {.share = 1}},
     8,
     4096,
     256,
     "00010001",
     {6, 2}},
    {"1:2:3:4",
     4,
     {{.share = 1, .win = NOBL},
      {.share = 2, .win = NOBL},
      {.share = 3, .win = NOBL},
      {.share = 4, .win = NOBL}},
     1000,
     4096,
     1000,
     "",
     {100, 200, 300, 400}},
    {"100 Gb/s vs 25 Gb/s, rate-derived",
     2,
     {{.share = 100001ull * 1010, .win = NOBL},
      {.share = 25001ull * 1010, .win = NOBL}},
     1000,
     4096,
     1000,
     "",
     {800, 200}},
    {"share 1 vs 2^40",
     2,
     {{.share = 1, .win = NOBL}, {.share = 1ull << 40, .win = NOBL}},
     10000,
     4096,
     20000,
     "1111",
     {0, 10000}},
    {"start unequal: the idle one catches up first",
     2,
     {{.share = 1, .out = 5 * 4096, .win = NOBL}, {.share = 1, .win = NOBL}},
     9,
     4096,
     256,
     "111110101",
     {2, 7}},
    {"max_wrs caps each, then none",
     2,
     {{.share = 1}, {.share = 3}},
     10,
     4096,
     4,
     "11011000--",
     {4, 4}},
    /*
     * Nothing drained yet (cn_win_prev 0): each rail takes RY__OUT_MIN and
     * is then backlogged, so the first 256 KiB go 1:1 whatever the
     * weights.  In unequal_rates this holds until the first window closes,
     * which is why the end-to-end share depends on timing.
     */
    {"backlog floor before any window: 1:1",
     2,
     {{.share = 1}, {.share = 3}},
     5,
     64 * KiB,
     256,
     "1100-",
     {2, 2}},
};

#define NSIMS ((int)(sizeof(sims) / sizeof(sims[0])))

START_TEST(sim_table)
{
	struct ry__conn conns[NC], *cs[NC];
	unsigned got[NC] = {0}, k, i;
	const char *seq = sims[_i].seq;

	struct ry__choice ln;

	build(conns, cs, sims[_i].c, sims[_i].n);
	ry__choice_init(&ln, cs, sims[_i].n, sims[_i].max_wrs);
	for (k = 0; k < sims[_i].npieces; k++) {
		int b = ry__stripe_pick(cs, sims[_i].n, sims[_i].bytes, ~0u,
					sims[_i].max_wrs, false);

		ck_assert_msg(
		    ry__choice_pick(&ln, sims[_i].bytes, ~0u) == b,
		    "%s: piece %u: the choice and ry__stripe_pick differ",
		    sims[_i].name, k);

		if (k < strlen(seq))
			ck_assert_msg(b == (seq[k] == '-' ? -1 : seq[k] - '0'),
				      "%s: piece %u went to %d, want %c",
				      sims[_i].name, k, b, seq[k]);
		if (b < 0)
			continue;
		/* what account() does; nothing completes */
		conns[b].cn_out_wrs++;
		conns[b].cn_out_bytes += sims[_i].bytes;
		ry__choice_update(&ln, (unsigned)b);
		got[b]++;
	}
	for (i = 0; i < sims[_i].n; i++)
		ck_assert_msg(got[i] == sims[_i].want[i],
			      "%s: connection %u got %u, want %u",
			      sims[_i].name, i, got[i], sims[_i].want[i]);
}
END_TEST

/*
 * For any N, with nothing completing and nothing else in the way, no
 * connection is ever a whole piece ahead of another in expected completion
 * time: got_i / share_i <= (got_j + 1) / share_j, after every assignment.
 * With two connections that puts each within one piece of its exact share
 * of N (1:3 gives N/4 : 3N/4).  With more it does not: 7:1:1 hands the
 * first seven pieces to the 7, 1.6 pieces over its 7/9.
 */
static const uint64_t share_sets[][NC] = {
    {1, 1},    {1, 3},	  {1010, 3030},	  {3, 1},	{1, 2, 3, 4},
    {7, 1, 1}, {1, 1000}, {5, 7, 11, 13}, {1000000, 1},
};

START_TEST(share_invariant)
{
	const uint64_t *sh = share_sets[_i];
	struct ry__conn conns[NC], *cs[NC];
	struct cand cd[NC] = {{0}};
	unsigned got[NC] = {0}, n = 0, k, i, j;
	uint64_t total = 0;

	for (i = 0; i < NC && sh[i]; i++) {
		cd[i].share = sh[i];
		cd[i].win = NOBL;
		total += sh[i];
		n++;
	}
	build(conns, cs, cd, n);
	for (k = 1; k <= 4000; k++) {
		int b = ry__stripe_pick(cs, n, 4096, ~0u, ~0u, false);
		bool ok = b >= 0;

		if (!ok)
			ck_abort_msg("set %d: piece %u went nowhere", _i, k);
		conns[b].cn_out_bytes += 4096;
		got[b]++;
		for (i = 0; i < n; i++)
			for (j = 0; j < n; j++)
				ok &= got[i] * sh[j] <= (got[j] + 1) * sh[i];
		if (n == 2)
			for (i = 0; i < n; i++) {
				/* |got / k - share / total| <= 1 / k */
				uint64_t have = got[i] * total;
				uint64_t ideal = k * sh[i];

				ok &= (have > ideal ? have - ideal
						    : ideal - have) <= total;
			}
		if (!ok)
			ck_abort_msg("set %d: after %u pieces: %u %u %u %u", _i,
				     k, got[0], got[1], got[2], got[3]);
	}
	/* the set's exact share at every multiple of its total */
	if (4000 % total == 0)
		for (i = 0; i < n; i++)
			ck_assert_uint_eq(got[i], 4000 / total * sh[i]);
}
END_TEST

/*
 * ry__stripe()'s fragment path (ry__choice_*: keys computed once per call,
 * updated per fragment) against the reference ry__stripe_pick() on random
 * connections: equal and unequal shares, masks, limits, backlogs, states,
 * and sequences of picks as ry__stripe() makes them.
 */
static uint64_t rnd_state;

static uint64_t rnd(void)
{
	rnd_state = rnd_state * 6364136223846793005ull + 1442695040888963407ull;
	return rnd_state >> 33;
}

START_TEST(choice_same_as_pick)
{
	struct ry__conn conns[NC], *cs[NC];
	struct ry__choice ln;
	struct cand cd[NC];
	unsigned n, i, k, t, max_wrs;
	uint64_t sh;

	rnd_state = (uint64_t)_i * 7919 + 1;
	for (t = 0; t < 20; t++) {
		int c = _i * 20 + (int)t; /* the case, for the message */

		n = (unsigned)(rnd() % (NC + 1));
		max_wrs = 1 + (unsigned)(rnd() % 64);
		sh = 1 + rnd() % 3000;
		memset(cd, 0, sizeof(cd));
		for (i = 0; i < n; i++) {
			cd[i].share = c % 3 ? sh : 1 + rnd() % 3000;
			cd[i].out =
			    rnd() % 4 ? (rnd() % 64) * 4096 : rnd() % 300000;
			cd[i].win = rnd() % 3 ? NOBL : rnd() % 200000;
			cd[i].wrs = (unsigned)(rnd() % (max_wrs + 1));
			cd[i].r = c % 5 ? 0 : (int)(1 + (i + 1) % NC);
		}
		build(conns, cs, cd, n);
		for (i = 0; i < n; i++)
			if (rnd() % 8 == 0)
				conns[i].cn_state =
				    (enum ry__conn_state)(rnd() % CONN__MAX);
		ry__choice_init(&ln, cs, n, max_wrs);
		for (k = 0; k < 300; k++) {
			uint32_t bytes =
			    rnd() % 4 ? 4096 : 1 + (uint32_t)(rnd() % 65536);
			uint32_t mask = rnd() % 3 ? ~0u : (uint32_t)rnd();
			int want =
			    ry__stripe_pick(cs, n, bytes, mask, max_wrs, false);

			ck_assert_msg(
			    ry__choice_pick(&ln, bytes, mask) == want,
			    "case %d pick %u: the choice differs from %d", c, k,
			    want);
			if (want < 0)
				continue;
			conns[want].cn_out_wrs++;
			conns[want].cn_out_bytes += bytes;
			ry__choice_update(&ln, (unsigned)want);
		}
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("stripe");
	TCase *tc = tcase_create("pick");
	SRunner *sr;
	int nf;

	tcase_add_loop_test(tc, pick_table, 0, NPICKS);
	tcase_add_loop_test(tc, pick_not_active, 0, CONN__MAX);
	tcase_add_loop_test(tc, sim_table, 0, NSIMS);
	tcase_add_loop_test(tc, share_invariant, 0,
			    (int)(sizeof(share_sets) / sizeof(share_sets[0])));
	tcase_add_loop_test(tc, choice_same_as_pick, 0, 100);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf ? 1 : 0;
}
