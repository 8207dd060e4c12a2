// SPDX-License-Identifier: BSD-2-Clause
/* What the manager's suites by area share: mgr_common.h. */
#include <check.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/manager/mgr_common.h"

struct fx F;

void setup_opts(const struct fx_opts *o)
{
	int ret = fx_init(&F, o);

	ck_assert_msg(ret == 0, "fixture: %s", strerror(-ret));
}

void teardown(void)
{
	fx_fini(&F);
}

/* Write len bytes at off from a to b, wait, verify; returns status. */
enum ry_status write_verify(size_t off, size_t len, uint32_t seed)
{
	struct fx_done d = {0};
	int ret;

	fx_fill(F.bufa + off, len, seed);
	ret = ry_write(F.ab, F.ra, off, F.desc_b, (size_t)F.desc_b_len, off,
		       len, fx_cb, &d);
	ck_assert_int_eq(ret, 0);
	ck_assert_msg(fx_until_done(&F, &d, 1, 20000), "write %zu timed out",
		      len);
	ck_assert_uint_eq(d.total, 1);
	if (d.ok)
		ck_assert_msg(!memcmp(F.bufa + off, F.bufb + off, len),
			      "data mismatch, len %zu", len);
	else
		fprintf(stderr, "write of %zu failed: %s\n", len, d.reason);
	return d.ok ? RY_OK : d.last_err;
}

enum ry_status read_verify(size_t off, size_t len, uint32_t seed)
{
	struct fx_done d = {0};
	int ret;

	fx_fill(F.bufb + off, len, seed);
	memset(F.bufa + off, 0, len);
	ret = ry_read(F.ab, F.ra, off, F.desc_b, (size_t)F.desc_b_len, off, len,
		      fx_cb, &d);
	ck_assert_int_eq(ret, 0);
	ck_assert_msg(fx_until_done(&F, &d, 1, 20000), "read %zu timed out",
		      len);
	if (d.ok)
		ck_assert_msg(!memcmp(F.bufa + off, F.bufb + off, len),
			      "read data mismatch, len %zu", len);
	return d.ok ? RY_OK : d.last_err;
}

void stream_pump(struct stream *s)
{
	unsigned i;
	int ret;

	for (i = 0; i < s->slots; i++) {
		size_t off = (size_t)i * MiB;

		if (s->busy[i] && s->d[i].total) {
			s->busy[i] = false;
			if (s->d[i].ok) {
				s->done_ok++;
				ck_assert_msg(
				    !memcmp(F.bufa + off, F.bufb + off, MiB),
				    "data mismatch after failover");
			} else {
				s->done_err++;
				snprintf(s->reason, sizeof(s->reason), "%s",
					 s->d[i].reason);
			}
		}
		if (s->busy[i])
			continue;
		memset(&s->d[i], 0, sizeof(s->d[i]));
		if (s->is_read) {
			fx_fill(F.bufb + off, MiB, ++s->seed);
			ret = ry_read(F.ab, F.ra, off, F.desc_b,
				      (size_t)F.desc_b_len, off, MiB, fx_cb,
				      &s->d[i]);
		} else {
			fx_fill(F.bufa + off, MiB, ++s->seed);
			ret = ry_write(F.ab, F.ra, off, F.desc_b,
				       (size_t)F.desc_b_len, off, MiB, fx_cb,
				       &s->d[i]);
		}
		ck_assert_int_eq(ret, 0);
		s->busy[i] = true;
	}
}

void stream_run(struct stream *s, unsigned ms)
{
	uint64_t end = fx_now_ns() + (uint64_t)ms * 1000000;

	while (fx_now_ns() < end) {
		stream_pump(s);
		fx_progress(&F);
	}
}

void stream_finish(struct stream *s)
{
	unsigned i;

	for (i = 0; i < s->slots; i++)
		if (s->busy[i])
			ck_assert_msg(fx_until_done(&F, &s->d[i], 1, 20000),
				      "op hung");
	s->slots = 0;
	stream_pump(s); /* account the last ones, post nothing */
	for (i = 0; i < 8; i++)
		if (s->busy[i] && s->d[i].total) {
			size_t off = (size_t)i * MiB;

			s->busy[i] = false;
			if (s->d[i].ok) {
				s->done_ok++;
				ck_assert_msg(
				    !memcmp(F.bufa + off, F.bufb + off, MiB),
				    "data differs at slot %u", i);
			} else {
				s->done_err++;
				snprintf(s->reason, sizeof(s->reason), "%s",
					 s->d[i].reason);
			}
		}
}

void stream_finish_clean(struct stream *s)
{
	stream_finish(s);
	ck_assert_msg(s->done_err == 0, "%u failed: %s", s->done_err,
		      s->reason);
}

bool rail_busy(struct stream *s, const char *rail, unsigned ms, bool active)
{
	uint64_t end = fx_now_ns() + (uint64_t)ms * 1000000;
	struct ry_counters c;
	uint64_t before;

	ck_assert_int_eq(ry_rail_counters(F.a, rail, &c), 0);
	do {
		before = c.fragments;
		stream_run(s, 50);
		ck_assert_int_eq(ry_rail_counters(F.a, rail, &c), 0);
		if (c.fragments > before &&
		    (!active || fx_active(F.a, rail) == 1))
			return true;
	} while (fx_now_ns() < end);
	return false;
}

void tdone_cb(const struct ry_completion *c, void *arg)
{
	struct tdone *t = arg;

	fx_cb(c, &t->d);
	atomic_store_explicit(&t->done, true, memory_order_release);
}

void count_lines(enum ry_log_level level, const char *comp, const char *msg,
		 void *arg)
{
	struct log_match *lm = arg;

	(void)comp;
	if ((lm->level < 0 || (int)level == lm->level) &&
	    (!lm->has1 || strstr(msg, lm->has1)) &&
	    (!lm->has2 || strstr(msg, lm->has2)))
		atomic_fetch_add(&lm->n, 1);
}

bool both_rails_active(void *arg)
{
	(void)arg;
	return fx_active(F.a, "r0") && fx_active(F.a, "r1") &&
	       fx_active(F.b, "r0") && fx_active(F.b, "r1");
}

bool all_active(void *arg)
{
	unsigned i;

	(void)arg;
	for (i = 0; i < F.o.nrails_a; i++) {
		char name[16];

		snprintf(name, sizeof(name), "r%u", i);
		if (fx_active(F.a, name) != 1)
			return false;
	}
	return true;
}

#define MAX_TCASES 8

int mgr_main(const char *area, const struct mgr_case *cases, unsigned n)
{
	const char *names[MAX_TCASES];
	TCase *tcs[MAX_TCASES];
	unsigned nt = 0;
	char name[64];
	Suite *s;
	SRunner *sr;
	int failed;

	/* failovers are the point here; RY_TEST_LOG=1 shows them */
	if (!getenv("RY_TEST_LOG"))
		ry_log_set_level(RY_LOG_ERROR);
	fx_skip_if_unavailable();
	snprintf(name, sizeof(name), "manager-%s%s", area,
		 FX_PROVIDER == RY_PROVIDER_SOFT  ? "-soft"
		 : FX_PROVIDER == RY_PROVIDER_TCP ? "-tcp"
						  : "");
	s = suite_create(name);
	for (unsigned i = 0; i < n; i++) {
		enum mgr_rail r = cases[i].rail;
		bool here = r == MGR_ANY || (r == MGR_LOOP && fx_is_loop()) ||
			    (r == MGR_NOT_LOOP && !fx_is_loop()) ||
			    (r == MGR_SOFT && FX_PROVIDER == RY_PROVIDER_SOFT);
		unsigned j;

		if (!here)
			continue;
		/* one tcase per name, in the order names first appear */
		for (j = 0; j < nt && strcmp(names[j], cases[i].tcase); j++)
			;
		if (j == nt) {
			/* more tcases in one suite: raise MAX_TCASES */
			if (nt == MAX_TCASES)
				abort();
			names[nt] = cases[i].tcase;
			tcs[nt] = tcase_create(cases[i].tcase);
			tcase_set_timeout(tcs[nt], 120);
			suite_add_tcase(s, tcs[nt++]);
		}
		tcase_add_test(tcs[j], cases[i].test);
	}
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
