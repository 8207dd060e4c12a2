/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What the manager's suites by area (test_mgr_*.c) share, on top of the
 * fixture: the two managers a and b (F), transfers verified byte for byte,
 * a stream of operations kept going while rails fail, a log sink that
 * counts lines, and the Check main that names the area.
 */
#ifndef RY_TEST_MGR_COMMON_H
#define RY_TEST_MGR_COMMON_H

#include <check.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "tests/manager/fixture.h"

#define MiB (1u << 20)

extern struct fx F;

/* fx_init() of F with o (NULL: the defaults), asserted; fx_fini(). */
void setup_opts(const struct fx_opts *o);
void teardown(void);

/* Write (read) len bytes at off between a and b, wait, verify; returns
 * the status. */
enum ry_status write_verify(size_t off, size_t len, uint32_t seed);
enum ry_status read_verify(size_t off, size_t len, uint32_t seed);

/* `slots` 1 MiB operations kept going from a to b, each verified as it
 * completes. */
struct stream {
	unsigned slots, done_ok, done_err;
	bool is_read;
	struct fx_done d[8];
	bool busy[8];
	uint32_t seed;
	char reason[192];
};
void stream_pump(struct stream *s);
void stream_run(struct stream *s, unsigned ms);
/* wait for what is in flight and account it, verifying what completed;
 * posts nothing more */
void stream_finish(struct stream *s);
/* stream_finish(), then assert that none of the stream's ops failed */
void stream_finish_clean(struct stream *s);
/* Stream until a's rail has completed fragments within the last 50 ms
 * (and, if active, is ACTIVE then), for at most ms; false if it never
 * did. */
bool rail_busy(struct stream *s, const char *rail, unsigned ms, bool active);

/* A completion taken on a library thread (the progress threads): fx_cb()'s
 * count, then done published with release for the application's thread. */
struct tdone {
	struct fx_done d;
	atomic_bool done;
};
void tdone_cb(const struct ry_completion *c, void *arg);

/*
 * A log sink for tests that look for a line: counts the lines of a level
 * (-1: any) that hold both strings (NULL: any), from whichever thread
 * logs them.
 */
struct log_match {
	int level;
	const char *has1, *has2;
	atomic_uint n;
};
void count_lines(enum ry_log_level level, const char *comp, const char *msg,
		 void *arg);

/* fx_until() predicates: r0 and r1 ACTIVE on both ends; every rail of
 * a ACTIVE. */
bool both_rails_active(void *arg);
bool all_active(void *arg);

/* A case of an area's suite, in a tcase by name, on the rails it needs:
 * any, the loop rail only, any but the loop rail, the soft rail only. */
enum mgr_rail { MGR_ANY, MGR_LOOP, MGR_NOT_LOOP, MGR_SOFT };
struct mgr_case {
	const char *tcase;
	const TTest *test;
	enum mgr_rail rail;
};

/*
 * Run an area's cases as suite "manager-AREA" ("manager-AREA-soft",
 * "-tcp" over those rails), each tcase with a 120 s timeout; skips (77) where
 * the provider cannot run.  Returns main's exit status.
 */
int mgr_main(const char *area, const struct mgr_case *cases, unsigned n);

#endif
