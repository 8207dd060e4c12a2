// SPDX-License-Identifier: BSD-2-Clause
/*
 * The engine behind bench, drill and demo (see session.h).
 *
 * Each of `depth` slots owns a source and a destination buffer in one local
 * region and one `size` slice of the peer's target region, so operations in
 * flight never overlap and every read-back can be compared with exactly
 * what that slot wrote.  The pattern depends on the operation's sequence
 * number, so a stale write that landed late would show as a verify error.
 *
 * The drill's load (enum cli_session_load).  With --load cycle each slot
 * writes, then reads back; slots that write then read drift in and out of
 * step after a disturbance, and the total moves with their phase (52 -> 72
 * MB/s with no rail change), not only with the rails.  --load streams, the
 * default, runs two independent streams, each with a fixed share of the
 * depth in flight at all times (writer(): three quarters write, a quarter
 * reads): writers write slices of the target (2 x
 * depth of them when the target holds that many) with the pattern of their
 * sequence number; readers read back a slice not being written and compare
 * it with exactly what was written there, the oldest write not checked yet
 * first, else the slice checked longest ago.  Neither stream waits for
 * the other and how many of each are in flight is fixed, so the
 * throughput moves when a rail does, not with slot phase.  A
 * writer takes the slice checked (or written) longest ago, preferring
 * checked ones, so a write may be overwritten unchecked while the readers
 * lag; every slice written and not checked yet is read back after the
 * run's end.  With --load pairs one write and one read of each pair of
 * slots are in flight, the read checking the slice the write filled
 * before (both wait for the slower of the two).
 *
 * A peer that restarts (RY_EV_PEER_RESTARTED) takes its target region
 * with it: operations aimed at it fail with RY_ESTALE (counted apart, as
 * "failed because their target died"), nothing more is posted until the
 * new incarnation has sent its descriptor (asked for again at once and
 * every second), and a slot whose write went to the old region is not
 * read back from the new one (each slot remembers the target generation
 * it wrote to).
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "src/cli/json.h"
#include "src/cli/session.h"
#include "src/cli/session_int.h"

static bool paired(const struct cli_session *s);
static void pair_kick(struct cli_session *s, unsigned pair);

/* xorshift64*, seeded by the operation: cheap enough for line rate. */
static void fill_pattern(uint8_t *p, size_t len, uint64_t seed)
{
	uint64_t x = seed * 0x9e3779b97f4a7c15ull + 1;
	size_t i = 0;

	for (; i + 8 <= len; i += 8) {
		x ^= x >> 12;
		x ^= x << 25;
		x ^= x >> 27;
		uint64_t v = x * 0x2545f4914f6cdd1dull;
		memcpy(p + i, &v, 8);
	}
	for (; i < len; i++)
		p[i] = (uint8_t)(seed + i);
}

static uint64_t count_diff(const uint8_t *a, const uint8_t *b, size_t len)
{
	uint64_t n = 0;

	if (!memcmp(a, b, len))
		return 0;
	for (size_t i = 0; i < len; i++)
		n += a[i] != b[i];
	return n;
}

static uint8_t *src_of(struct slot *sl)
{
	return sl->s->buf + (size_t)sl->idx * 2 * sl->s->o.size;
}

static uint8_t *dst_of(struct slot *sl)
{
	return src_of(sl) + sl->s->o.size;
}

static void on_done(const struct ry_completion *c, void *arg);

/* The run goes on (it may be waiting for a restarted peer's target). */
static bool running(struct cli_session *s)
{
	if (s->fatal || (s->o.stop && *s->o.stop))
		return false;
	if (s->o.count && s->posted >= s->o.count)
		return false;
	if (s->o.duration > 0 && cli__now_s() >= s->t_end)
		return false;
	return true;
}

/* --rate: the n-th operation starts no sooner than (n - 2) / rate
 * seconds into the run (the first two at once, then one each 1 / rate);
 * wait_ms() sleeps until the next is due. */
static double rate_due(const struct cli_session *s)
{
	return s->t0 + ((double)s->posted - 1) / s->o.rate;
}

static bool may_post(struct cli_session *s)
{
	if (s->o.rate > 0 && cli__now_s() < rate_due(s))
		return false;
	return s->have_target && running(s);
}

static void fatal(struct cli_session *s, const char *what, int err)
{
	if (!s->fatal)
		fprintf(stderr, "railyard: %s: %s\n", what, strerror(-err));
	s->fatal = err;
}

/* After a post: -ESTALE idles the slot until the restarted peer's new
 * target comes (its event is on its way); any other error ends the run. */
static void post_result(struct slot *sl, int ret, const char *what)
{
	if (!ret)
		return;
	sl->phase = IDLE;
	if (ret != -ESTALE)
		fatal(sl->s, what, ret);
}

static const char *write_rejected(int ret)
{
	return ret == -EINVAL ? "write rejected (is the peer's target region "
				"large enough for depth x size?)"
			      : "write rejected";
}

static void post_write(struct slot *sl)
{
	struct cli_session *s = sl->s;
	size_t off = (size_t)(src_of(sl) - s->buf);
	int ret;

	sl->seq = ++s->posted;
	/* Data nobody reads back need not differ per operation: a plain
	 * write bench fills each slot once (the pattern costs a core's
	 * worth of memory bandwidth at line rate). */
	if (s->o.verify || s->o.mode != CLI_SESSION_WRITE || !sl->filled)
		fill_pattern(src_of(sl), s->o.size, sl->seq);
	sl->filled = true;
	sl->phase = WRITING;
	sl->t_post = cli__now_s();
	sl->gen = s->gen;
	ret = ry_write(s->peer, s->local, off, s->desc, s->desc_len,
		       (size_t)sl->idx * s->o.size, s->o.size, on_done, sl);
	if (ret == -ESTALE)
		s->posted--;
	post_result(sl, ret, write_rejected(ret));
}

static void post_read(struct slot *sl, bool new_seq)
{
	struct cli_session *s = sl->s;
	size_t off = (size_t)(dst_of(sl) - s->buf);
	int ret;

	if (new_seq)
		sl->seq = ++s->posted;
	/* a read that is compared must not pass on what was there before */
	if (s->o.verify || s->o.mode == CLI_SESSION_DRILL)
		memset(dst_of(sl), 0, s->o.size);
	sl->phase = READING;
	sl->t_post = cli__now_s();
	ret = ry_read(s->peer, s->local, off, s->desc, s->desc_len,
		      (size_t)sl->idx * s->o.size, s->o.size, on_done, sl);
	post_result(sl, ret, "read rejected");
}

/*
 * A read bench reads data that was written: each slot writes its slice
 * once per target, uncounted, before it reads it.  A target never written
 * is the kernel's zero page behind every one of its pages, which no
 * storage server serves, and which cost 64 KiB reads a third of their
 * speed on one machine (tests/bench/RESULTS.md).
 */
static void post_layout(struct slot *sl)
{
	struct cli_session *s = sl->s;
	size_t off = (size_t)(src_of(sl) - s->buf);
	int ret;

	fill_pattern(src_of(sl), s->o.size, sl->idx + 1);
	sl->phase = LAYING;
	sl->gen = s->gen;
	ret = ry_write(s->peer, s->local, off, s->desc, s->desc_len,
		       (size_t)sl->idx * s->o.size, s->o.size, on_done, sl);
	post_result(sl, ret, write_rejected(ret));
}

static void next(struct slot *sl)
{
	struct cli_session *s = sl->s;

	sl->phase = IDLE;
	if (!may_post(s))
		return;
	if (s->o.mode == CLI_SESSION_READ && !s->o.verify) {
		if (sl->laid && sl->gen == s->gen)
			post_read(sl, true);
		else
			post_layout(sl);
	} else {
		post_write(sl);
	}
}

static void record_latency(struct cli_session *s, double t_post)
{
	double us = (cli__now_s() - t_post) * 1e6;

	s->lat[s->n_lat % LAT_SAMPLES] = us;
	s->n_lat++;
	if (us > s->lat_max)
		s->lat_max = us;
}

/* A completion that failed only because the peer restarted. */
static bool target_died(struct cli_session *s, struct slot *sl,
			const struct ry_completion *c)
{
	if (c->status != RY_ESTALE)
		return false;
	s->ops_stale++;
	/* their completions may come before the restart's event */
	if (s->resume_wait && s->n_restarts)
		s->restarts[s->n_restarts - 1].stale_ops++;
	else
		s->stale_early++;
	sl->phase = IDLE;
	return true;
}

/* The first success after a restart: traffic has resumed. */
static void note_resumed(struct cli_session *s)
{
	struct restart *r;

	if (!s->resume_wait || !s->n_restarts)
		return;
	r = &s->restarts[s->n_restarts - 1];
	s->resume_wait = false;
	r->t_resumed = cli__now_s() - s->t0;
	if (s->o.live)
		fprintf(s->o.live,
			"%s%8.3f s  traffic resumed on the restarted peer's "
			"new target (%.3f s after the restart)\n",
			s->o.live_tty ? "\r\033[K" : "", r->t_resumed,
			r->t_resumed - r->t);
}

/* A failed operation: counted, the first reason kept, and each new reason
 * said once, so an outage is visible live. */
static void op_failed(struct cli_session *s, const struct ry_completion *c)
{
	s->ops_failed++;
	if (!s->first_error[0])
		snprintf(s->first_error, sizeof(s->first_error), "%s: %s",
			 ry_status_str(c->status), c->reason);
	if (strncmp(s->last_error, c->reason, sizeof(s->last_error) - 1)) {
		snprintf(s->last_error, sizeof(s->last_error), "%s", c->reason);
		fprintf(stderr, "railyard: operation failed: %s: %s\n",
			ry_status_str(c->status), c->reason);
	}
}

/* ---- --load streams (see the top) ---- */

static bool streams(const struct cli_session *s)
{
	return s->o.mode == CLI_SESSION_DRILL &&
	       s->o.load == CLI_LOAD_STREAMS && s->o.depth >= 2;
}

/* Slices' sources first, then each slot's read-back buffer. */
static uint8_t *slice_src(struct cli_session *s, unsigned i)
{
	return s->buf + (size_t)i * s->o.size;
}

static uint8_t *slot_dst(struct slot *sl)
{
	struct cli_session *s = sl->s;

	return s->buf + ((size_t)2 * s->o.depth + sl->idx) * s->o.size;
}

/*
 * A quarter of the slots (at least one) read, the rest write.  With half
 * reading, both directions of every rail run full and the survivors of a
 * failure carry only about 78 % of their healthy rate each (two of four
 * shaped rails out; the same with --load pairs): a finding for the
 * transport, which this load is not meant to measure.  With a quarter the
 * way back is not saturated and the survivors run at their rate.
 */
static bool writer(const struct slot *sl)
{
	unsigned readers = sl->s->o.depth / 4 ? sl->s->o.depth / 4 : 1;

	return sl->idx < sl->s->o.depth - readers;
}

static bool unchecked(const struct cli_session *s, const struct slice *x)
{
	return x->seq && !x->checked && x->gen == s->gen;
}

/*
 * The slice a writer takes: any that is free, checked (or empty) before
 * unchecked, then the one written or checked longest ago.  The slice a
 * reader takes: written and free, the oldest write not checked yet first,
 * else (while running) the one checked longest ago.
 */
static int pick(struct cli_session *s, bool w)
{
	int best = -1;

	for (unsigned i = 0; i < s->n_slices; i++) {
		const struct slice *x = &s->slices[i], *b;

		if (x->writing || x->reading ||
		    (!w && (!x->seq || x->gen != s->gen ||
			    (x->checked && !running(s)))))
			continue;
		b = best < 0 ? NULL : &s->slices[best];
		if (!b || (unchecked(s, b) != unchecked(s, x)
			       ? unchecked(s, w ? b : x)
			       : x->age < b->age))
			best = (int)i;
	}
	return best;
}

static int stream_post(struct slot *sl, unsigned i)
{
	struct cli_session *s = sl->s;
	struct slice *x = &s->slices[i];
	bool w = writer(sl);
	uint8_t *local = w ? slice_src(s, i) : slot_dst(sl);
	size_t off = (size_t)(local - s->buf), roff = (size_t)i * s->o.size;
	int ret;

	sl->seq = ++s->posted;
	sl->slice = i;
	sl->gen = s->gen;
	sl->t_post = cli__now_s();
	if (w) {
		fill_pattern(local, s->o.size, sl->seq);
		x->seq = sl->seq;
		x->gen = s->gen;
		x->checked = false;
		x->writing = true;
		sl->phase = WRITING;
		ret = ry_write(s->peer, s->local, off, s->desc, s->desc_len,
			       roff, s->o.size, on_done, sl);
	} else {
		memset(local, 0, s->o.size);
		x->reading = true;
		sl->phase = READING;
		ret = ry_read(s->peer, s->local, off, s->desc, s->desc_len,
			      roff, s->o.size, on_done, sl);
	}
	if (ret) {
		sl->phase = IDLE;
		s->posted--;
		x->writing = x->reading = false;
		if (w)
			x->seq = 0;
	}
	return ret;
}

/* Keep every idle slot of both streams busy. */
static void stream_kick(struct cli_session *s)
{
	for (unsigned k = 0; k < s->o.depth; k++) {
		struct slot *sl = &s->slots[k];
		int i, ret;

		if (sl->phase != IDLE || s->fatal || !s->have_target ||
		    (writer(sl) && !running(s)))
			continue;
		i = pick(s, writer(sl));
		if (i < 0)
			continue;
		ret = stream_post(sl, (unsigned)i);
		if (ret == -EINVAL && writer(sl) && (unsigned)i >= s->o.depth) {
			/* the target holds depth slices only: use those */
			s->n_slices = s->o.depth;
			k--;
		} else if (ret && ret != -ESTALE) {
			/* -ESTALE: the restart's event is on its way */
			fatal(s,
			      ret == -EINVAL ? "operation rejected (is the "
					       "peer's target region large "
					       "enough for depth x size?)"
					     : "operation rejected",
			      ret);
		}
	}
}

static void stream_done(struct slot *sl, const struct ry_completion *c)
{
	struct cli_session *s = sl->s;
	struct slice *x = &s->slices[sl->slice];
	bool w = sl->phase == WRITING;

	if (w)
		x->writing = false;
	else
		x->reading = false;
	if (target_died(s, sl, c) || c->status != RY_OK) {
		if (c->status != RY_ESTALE)
			op_failed(s, c);
		/* what landed there is unknown; a read that failed is
		 * not tried again (after the run's end it would be, for
		 * ever, with no path left) */
		x->seq = 0;
	} else {
		s->ops_ok++;
		s->bytes += s->o.size;
		record_latency(s, sl->t_post);
		if (sl->gen != s->gen || x->gen != s->gen) {
			/* it went to the old incarnation, or read what a
			 * restart made unknown: nothing to check */
			if (w && sl->gen != s->gen)
				x->seq = 0;
		} else if (w) {
			x->age = ++s->age;
		} else if (x->seq) {
			s->verify_errors += count_diff(slice_src(s, sl->slice),
						       slot_dst(sl), s->o.size);
			x->checked = true;
			x->age = ++s->age;
		}
		if (sl->gen == s->gen)
			note_resumed(s);
	}
	sl->phase = IDLE;
	stream_kick(s);
}

static void on_done(const struct ry_completion *c, void *arg)
{
	struct slot *sl = arg;
	struct cli_session *s = sl->s;
	bool died;

	if (streams(s)) {
		stream_done(sl, c);
		return;
	}
	if (sl->phase == LAYING) {
		sl->phase = IDLE;
		if (c->status == RY_OK) {
			sl->laid = sl->gen == s->gen;
			s->ops_laid++;
		} else if (!target_died(s, sl, c))
			op_failed(s, c);
		next(sl);
		return;
	}
	died = target_died(s, sl, c);

	if (c->status == RY_OK && sl->gen == s->gen)
		note_resumed(s);
	/* a write that landed in the old incarnation: nothing to read back
	 * from the new one */
	if (c->status == RY_OK && sl->phase == WRITING && sl->gen != s->gen) {
		s->ops_ok++;
		s->bytes += s->o.size;
		sl->phase = IDLE;
		died = true;
	}
	if (died) {
		if (paired(s))
			pair_kick(s, sl->idx / 2);
		else
			next(sl);
		return;
	}
	if (paired(s)) {
		if (c->status != RY_OK) {
			op_failed(s, c);
			/* a failed write left nothing to check; a failed
			 * read leaves its slice unchecked */
			sl->phase = IDLE;
		} else {
			s->ops_ok++;
			s->bytes += s->o.size;
			record_latency(s, sl->t_post);
			if (sl->phase == WRITING) {
				sl->phase = FULL;
			} else {
				s->verify_errors += count_diff(
				    src_of(sl), dst_of(sl), s->o.size);
				sl->phase = IDLE;
			}
		}
		pair_kick(s, sl->idx / 2);
		return;
	}
	if (c->status != RY_OK) {
		op_failed(s, c);
		next(sl);
		return;
	}
	s->ops_ok++;
	s->bytes += s->o.size;
	record_latency(s, sl->t_post);
	if (sl->phase == WRITING &&
	    (s->o.verify || s->o.mode != CLI_SESSION_WRITE)) {
		post_read(sl, false);
		return;
	}
	if (sl->phase == READING &&
	    (s->o.verify || s->o.mode == CLI_SESSION_DRILL))
		s->verify_errors +=
		    count_diff(src_of(sl), dst_of(sl), s->o.size);
	next(sl);
}

static bool paired(const struct cli_session *s)
{
	return s->o.mode == CLI_SESSION_DRILL && s->o.load == CLI_LOAD_PAIRS &&
	       s->o.depth >= 2;
}

/*
 * Keep one write and one read of a pair in flight: the write goes to a
 * slice that is free, the read to the written slice with the lower
 * sequence.  Written slices are still read back after the run's end, so
 * everything written is checked.
 */
static void pair_kick(struct cli_session *s, unsigned pair)
{
	struct slot *a = &s->slots[2 * pair], *b = a + 1, *w, *r;

	if (2 * pair + 1 >= s->o.depth)
		return;
	if (a->phase != READING && b->phase != READING && !s->fatal) {
		r = a->phase == FULL && (b->phase != FULL || a->seq < b->seq)
			? a
		    : b->phase == FULL ? b
				       : NULL;
		if (r)
			post_read(r, false);
	}
	if (a->phase != WRITING && b->phase != WRITING && may_post(s)) {
		w = a->phase == IDLE ? a : b->phase == IDLE ? b : NULL;
		if (w)
			post_write(w);
	}
}

int cli_session_create(struct ry_manager *mgr, struct ry_peer *peer,
		       const struct cli_session_opts *opts,
		       struct cli_session **s_p)
{
	struct cli_session *s;
	int ret = -ENOMEM;

	if (!opts->size || !opts->depth)
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->mgr = mgr;
	s->peer = peer;
	s->o = *opts;
	/* streams: 2 x depth slices' sources, then depth read-backs */
	s->buf_len = (size_t)opts->depth * (streams(s) ? 3 : 2) * opts->size;
	s->buf = aligned_alloc(4096, (s->buf_len + 4095) & ~(size_t)4095);
	s->slots = calloc(opts->depth, sizeof(*s->slots));
	s->lat = calloc(LAT_SAMPLES, sizeof(*s->lat));
	s->n_slices = streams(s) ? 2 * opts->depth : 0;
	s->slices = calloc(s->n_slices + 1, sizeof(*s->slices));
	if (!s->buf || !s->slots || !s->lat || !s->slices)
		goto err;
	memset(s->buf, 0, s->buf_len);
	ret = ry_mr_reg(mgr, s->buf, s->buf_len, 0, &s->local);
	if (ret) {
		fprintf(stderr, "railyard: cannot register %zu bytes: %s\n",
			s->buf_len, strerror(-ret));
		goto err;
	}
	for (unsigned i = 0; i < opts->depth; i++)
		s->slots[i] = (struct slot){.s = s, .idx = i};
	s->n_rails = (unsigned)ry_rail_count(mgr);
	if (s->n_rails > CLI_REPORT_MAX_RAILS)
		s->n_rails = CLI_REPORT_MAX_RAILS;
	s->report.n_rails = s->n_rails;
	snprintf(s->report.title, sizeof(s->report.title), "%s to %s",
		 opts->mode == CLI_SESSION_DRILL ? "drill" : "bench",
		 ry_peer_name(peer));
	for (unsigned i = 0; i < s->n_rails; i++) {
		snprintf(s->rails[i].name, sizeof(s->rails[i].name), "%s",
			 ry_rail_name(mgr, i));
		_Static_assert(sizeof(s->report.rails[i]) ==
				   sizeof(s->rails[i].name),
			       "rail names have one size");
		memcpy(s->report.rails[i], s->rails[i].name,
		       sizeof(s->rails[i].name));
	}
	ry_set_recv_cb(mgr, cli__session_on_recv, s);
	ry_set_event_cb(mgr, cli__session_on_event, s);
	*s_p = s;
	return 0;
err:
	free(s->lat);
	free(s->slots);
	free(s->slices);
	free(s->buf);
	free(s);
	return ret;
}

void cli_session_destroy(struct cli_session *s)
{
	if (!s)
		return;
	ry_set_recv_cb(s->mgr, NULL, NULL);
	ry_set_event_cb(s->mgr, NULL, NULL);
	ry_mr_dereg(s->local);
	cli_report_free(&s->report);
	free(s->lat);
	free(s->slots);
	free(s->slices);
	free(s->buf);
	free(s);
}

/*
 * Progress, waiting on the event fd when there is nothing to do.  After a
 * round that ran callbacks (which posted the next operations and sent
 * them), whatever is left the event fd shows (ry_event_fd(3)), so the
 * wait comes at once: a round before it would only find nothing.  The
 * wait is the round's own (ry_progress_wait(3)): one epoll_wait per
 * operation at depth 1.
 */
static void pump(struct cli_session *s, int wait_ms)
{
	bool ran = s->pump_ran;

	s->pump_ran = false;
	if ((ran || ry_progress(s->mgr) <= 0) && wait_ms > 0)
		s->pump_ran = ry_progress_wait(s->mgr, wait_ms) > 0;
}

/* Nothing to do: an unanswered hello is simply said again.  No pointer
 * into the session is handed over, because this may complete (canceled)
 * while the manager is destroyed, after the session is gone. */
static void hello_done(const struct ry_completion *c, void *arg)
{
}

int cli_session_fetch_target(struct cli_session *s, int timeout_ms)
{
	double end = cli__now_s() + timeout_ms / 1e3, next_hello = 0;

	s->refused[0] = 0;
	while (!s->have_target && !s->refused[0] && cli__now_s() < end) {
		if (cli__now_s() >= next_hello) {
			int ret = ry_send(s->peer, CLI_SESSION_HELLO,
					  strlen(CLI_SESSION_HELLO), hello_done,
					  NULL);

			if (ret && ret != -EAGAIN) {
				fprintf(stderr,
					"railyard: cannot reach peer %s: %s\n",
					ry_peer_name(s->peer), strerror(-ret));
				return ret;
			}
			next_hello = cli__now_s() + 1;
		}
		pump(s, 10);
	}
	if (!s->have_target && s->refused[0]) {
		fprintf(stderr,
			"railyard: peer %s gives us no target region: %s\n",
			ry_peer_name(s->peer), s->refused);
		return -EACCES;
	}
	if (!s->have_target) {
		fprintf(stderr,
			"railyard: peer %s did not send its target region "
			"within %d ms "
			"(is 'railyard serve' running there, and do we share a "
			"rail network?)\n",
			ry_peer_name(s->peer), timeout_ms);
		return -ETIMEDOUT;
	}
	return 0;
}

int cli_session_wait_rails(struct cli_session *s, int timeout_ms)
{
	double end = cli__now_s() + timeout_ms / 1e3;
	struct ry_peer_info pi = {0};

	for (;;) {
		ry_peer_info(s->peer, &pi);
		if ((pi.ready && pi.rails_active >= pi.rails_usable) ||
		    cli__now_s() >= end)
			break;
		pump(s, 10);
	}
	if (pi.rails_active >= pi.rails_usable)
		return 0;
	fprintf(stderr,
		"railyard: %u of %u rails to %s connected after %d ms; "
		"starting with those\n",
		pi.rails_active, pi.rails_usable, ry_peer_name(s->peer),
		timeout_ms);
	return (int)(pi.rails_usable - pi.rails_active);
}

int cli_session_set_target(struct cli_session *s, const void *desc, size_t len)
{
	int ret = ry_desc_check(desc, len);

	if (ret)
		return ret;
	if (len > sizeof(s->desc))
		return -EMSGSIZE;
	memcpy(s->desc, desc, len);
	s->desc_len = len;
	s->have_target = true;
	return 0;
}

static void tick(struct cli_session *s, double now)
{
	struct cli_report_sample smp = {.t = now - s->t0};
	double dt = now - s->t_last_tick;
	double total = 0;
	char line[512];
	size_t n = 0;

	n += (size_t)snprintf(line + n, sizeof(line) - n, "%8.3f s ", smp.t);
	for (unsigned i = 0; i < s->n_rails; i++) {
		struct rail_track *rt = &s->rails[i];
		struct ry_rail_info info = {0};
		struct ry_counters c;

		if (ry_rail_counters(s->mgr, rt->name, &c))
			continue;
		ry_rail_info(s->mgr, rt->name, &info);
		smp.mbyte_s[i] = (double)(c.bytes - rt->last.bytes) / dt / 1e6;
		total += smp.mbyte_s[i];
		if (c.replayed_fragments > rt->last.replayed_fragments)
			cli__session_add_event(s, smp.t, rt->name, "replay");
		if (c.fences > rt->last.fences)
			cli__session_add_event(s, smp.t, rt->name, "fence");
		if (n < sizeof(line))
			n += (size_t)snprintf(
			    line + n, sizeof(line) - n, " %s %7.1f%s", rt->name,
			    smp.mbyte_s[i],
			    info.link_up && info.peers_active ? "" : " (down)");
		rt->last = c;
	}
	if (n < sizeof(line))
		snprintf(line + n, sizeof(line) - n,
			 "  total %7.1f MB/s  ops %" PRIu64 " ok %" PRIu64
			 " failed  %" PRIu64 " bad bytes",
			 total, s->ops_ok, s->ops_failed, s->verify_errors);
	cli_report_add_sample(&s->report, &smp);
	if (s->o.live) {
		if (s->o.live_tty)
			fprintf(s->o.live, "\r\033[K%s", line);
		else
			fprintf(s->o.live, "%s\n", line);
		fflush(s->o.live);
	}
	s->t_last_tick = now;
	if (s->o.tick)
		s->o.tick(smp.t, s->o.tick_arg);
}

static bool busy(const struct cli_session *s)
{
	/* streams: what was written and not checked yet is read back */
	if (streams(s) && !s->fatal && s->have_target)
		for (unsigned i = 0; i < s->n_slices; i++)
			if (unchecked(s, &s->slices[i]))
				return true;
	for (unsigned i = 0; i < s->o.depth; i++)
		if (s->slots[i].phase == WRITING ||
		    s->slots[i].phase == READING ||
		    s->slots[i].phase == LAYING ||
		    (s->slots[i].phase == FULL && !s->fatal))
			return true;
	return false;
}

static void kick_all(struct cli_session *s)
{
	if (streams(s)) {
		stream_kick(s);
		return;
	}
	if (paired(s)) {
		for (unsigned i = 0; i + 1 < s->o.depth; i += 2)
			pair_kick(s, i / 2);
		return;
	}
	for (unsigned i = 0; i < s->o.depth; i++)
		if (s->slots[i].phase == IDLE && may_post(s))
			next(&s->slots[i]);
}

/*
 * How long the run loop may sleep when nothing wakes it (completions and
 * the manager's own timers do, through its event fd): 1 ms, or with
 * --rate until the next operation is due (at most 50 ms: the per-second
 * sample).  A hundred rate-limited clients on one machine (scale.sh)
 * woke a hundred thousand times a second at 1 ms and took the CPU from
 * the server they were testing.
 */
static int wait_ms(const struct cli_session *s)
{
	double ms;

	if (s->o.rate <= 0 || !s->have_target)
		return 1;
	ms = (rate_due(s) - cli__now_s()) * 1e3;
	return ms < 1 ? 1 : ms > 50 ? 50 : (int)ms;
}

int cli_session_run(struct cli_session *s)
{
	struct timespec ts;

	if (!s->have_target)
		return -EINVAL;
	s->t0 = cli__now_s();
	clock_gettime(CLOCK_REALTIME, &ts);
	s->t0_unix = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
	s->t_last_tick = s->t0;
	s->t_end = s->t0 + s->o.duration;
	for (unsigned i = 0; i < s->n_rails; i++) {
		ry_rail_counters(s->mgr, s->rails[i].name, &s->rails[i].last);
		s->rails[i].at_start = s->rails[i].last;
	}
	kick_all(s);
	while (busy(s) || running(s)) {
		double now = cli__now_s();

		if (now - s->t_last_tick >= 1.0)
			tick(s, now);
		if (!s->have_target && running(s) &&
		    now - s->refetch_since > REFETCH_MAX_S) {
			fprintf(stderr,
				"railyard: peer %s restarted and did not send "
				"its new target within %d s\n",
				ry_peer_name(s->peer), REFETCH_MAX_S);
			s->fatal = -ETIMEDOUT;
		}
		if (s->refresh && s->have_target && running(s) &&
		    ry_send(s->peer, CLI_SESSION_HELLO,
			    strlen(CLI_SESSION_HELLO), hello_done,
			    NULL) != -EAGAIN)
			s->refresh = false;
		if (!s->have_target && running(s) && now >= s->next_hello) {
			/* -EAGAIN or a peer still down: ask again later */
			ry_send(s->peer, CLI_SESSION_HELLO,
				strlen(CLI_SESSION_HELLO), hello_done, NULL);
			s->next_hello = now + 1;
		}
		kick_all(s);
		if (s->fatal && !busy(s))
			break;
		pump(s, wait_ms(s));
	}
	s->t_stop = cli__now_s();
	if (s->t_stop - s->t_last_tick > 0.05)
		tick(s, s->t_stop);
	if (s->o.live && s->o.live_tty)
		fprintf(s->o.live, "\n");
	return s->fatal;
}
