// SPDX-License-Identifier: BSD-2-Clause
/*
 * The rail manager end to end, two managers in one process over the loop
 * rail (label unit) or the soft rail (label soft), every transfer
 * verified byte for byte (mgr_common.h).
 *
 * Completion styles and threads: polling and the event fd, progress
 * threads with posting threads, a stalled rail thread logged, the log
 * level changed under running threads (tcase "threads", which the TSan
 * build runs), and what a post from a callback and a rail that sends
 * alone cost in kicks (tcase "progress").
 */
#include <check.h>
#include <stdatomic.h>
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/loop/loop.h"
#include "src/manager.h"
#include "tests/manager/fixture.h"
#include "tests/manager/mgr_common.h"
#include "tests/rail/epoll_members.h"

/* ---- completion styles and threads ---- */

START_TEST(poll_mode_and_event_fd)
{
	struct ry_completion cpl[8];
	struct epoll_event ev = {.events = EPOLLIN};
	int ep, fd, n = 0, got, nested;
	unsigned i;
	uint64_t end;

	setup_opts(NULL);
	fd = ry_event_fd(F.a);
	ck_assert_int_ge(fd, 0);
	/* a packet wakes whoever sleeps on it through this one set: the
	 * rails' own fds are in it (ry_rail_ops.watch), not their sets */
	test_epoll_members(fd, &nested);
	ck_assert_int_eq(nested, 0);
	ep = epoll_create1(0);
	ck_assert_int_ge(ep, 0);
	ck_assert_int_eq(epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev), 0);
	fx_fill(F.bufa, 4 * MiB, 9);
	for (i = 0; i < 4; i++)
		ck_assert_int_eq(ry_write(F.ab, F.ra, i * MiB, F.desc_b,
					  (size_t)F.desc_b_len, i * MiB, MiB,
					  NULL, (void *)(uintptr_t)(i + 1)),
				 0);
	end = fx_now_ns() + 10000000000ull;
	while (n < 4 && fx_now_ns() < end) {
		epoll_wait(ep, &ev, 1, 5); /* a sleeps here; b is driven */
		ry_progress(F.b);
		ry_progress(F.a);
		got = ry_poll_completions(F.a, cpl, 8);
		ck_assert_int_ge(got, 0);
		for (i = 0; i < (unsigned)got; i++) {
			ck_assert_int_eq(cpl[i].status, RY_OK);
			ck_assert_uint_eq(cpl[i].length, MiB);
			ck_assert_uint_ge((uintptr_t)cpl[i].context, 1);
		}
		n += got;
	}
	ck_assert_int_eq(n, 4);
	ck_assert(!memcmp(F.bufa, F.bufb, 4 * MiB));
	close(ep);
	teardown();
}
END_TEST

struct poster {
	unsigned id;
	struct fx_done d;
	pthread_mutex_t *lock;
};

static void locked_cb(const struct ry_completion *c, void *arg)
{
	struct poster *p = arg;

	pthread_mutex_lock(p->lock);
	fx_cb(c, &p->d);
	pthread_mutex_unlock(p->lock);
}

static void *post_thread(void *arg)
{
	struct poster *p = arg;
	size_t off = (size_t)p->id * MiB;
	unsigned i;

	for (i = 0; i < 25; i++) {
		int ret;

		do {
			ret = ry_write(F.ab, F.ra, off, F.desc_b,
				       (size_t)F.desc_b_len, off, MiB,
				       locked_cb, p);
		} while (ret == -EAGAIN);
		ck_assert_int_eq(ret, 0);
		while (1) {
			unsigned t;

			pthread_mutex_lock(p->lock);
			t = p->d.total;
			pthread_mutex_unlock(p->lock);
			if (t > i)
				break;
			usleep(200);
		}
	}
	return NULL;
}

static struct log_match g_rt_stall_lines = {
    .level = -1, .has1 = "rail thread", .has2 = "was not run for"};

/*
 * A rail thread kept from running past half of timeout_ms says so itself
 * when it runs again, whether or not the control thread was there to see
 * it: a peer's silence verdict on its rails must not go unexplained (the
 * drill tests tell such a failover from a broken path by this line).
 * Kept from running here by holding its rail's lock, as a starved
 * machine would keep it.
 */
START_TEST(rail_thread_stall_logged)
{
	enum ry_log_level was = (enum ry_log_level)atomic_load(&ry__log_level);
	struct ry__lrail *lr;
	uint64_t hold_us;

	setup_opts(NULL);
	ck_assert_int_eq(write_verify(0, MiB, 1), RY_OK);
	atomic_store(&g_rt_stall_lines.n, 0);
	ry_log_set_level(RY_LOG_WARN);
	ry_log_set_sink(count_lines, &g_rt_stall_lines);
	ck_assert_int_eq(ry_progress_thread_start(F.b), 0);
	ck_assert_uint_gt(F.b->m_nrt, 0);
	lr = F.b->m_rt[0].rt_rails[0];
	hold_us = (F.b->m_timeout_ns + 2 * F.b->m_tick_ns) / 1000 + 50000;
	usleep(50000); /* the thread has had rounds: it has a previous one */
	pthread_mutex_lock(&lr->lr_lock);
	usleep((useconds_t)hold_us);
	pthread_mutex_unlock(&lr->lr_lock);
	for (int i = 0; i < 100 && !atomic_load(&g_rt_stall_lines.n); i++)
		usleep(10000);
	ry_progress_thread_stop(F.b);
	ry_log_set_sink(NULL, NULL);
	ry_log_set_level(was);
	ck_assert_msg(atomic_load(&g_rt_stall_lines.n) >= 1,
		      "no \"was not run for\" warning after rail thread 0 "
		      "was held for %llu ms",
		      (unsigned long long)hold_us / 1000);
	teardown();
}
END_TEST

/* A rail of a's posted to and not run since (LOCKING: Kick). */
static int a_kick_left(void)
{
	for (unsigned i = 0; i < F.a->m_nrails; i++)
		if (atomic_load(&F.a->m_rails[i].lr_kick))
			return (int)i;
	return -1;
}

struct repost {
	int posted;	     /* the second write's ry_write(), once */
	struct fx_done done; /* the second write */
};

/* The first write's callback posts the next, as applications do. */
static void repost_cb(const struct ry_completion *c, void *arg)
{
	struct repost *r = arg;

	ck_assert_int_eq(c->status, RY_OK);
	r->posted = ry_write(F.ab, F.ra, 4096, F.desc_b, (size_t)F.desc_b_len,
			     4096, 4096, fx_cb, &r->done) == 0
			? 1
			: -1;
}

static bool reposted(void *arg)
{
	return ((struct repost *)arg)->posted != 0;
}

/*
 * A small write posted from a completion callback has its kick left to
 * the end of the callback batch (progress.c, ry__kick_post), so that the
 * batch's reposts share a send: but it is run before the progress call
 * that ran the callback returns, not one call or a tick later.
 */
START_TEST(post_from_callback_sent_by_progress_end)
{
	struct repost r = {0};
	int left;

	setup_opts(NULL);
	ck_assert_int_eq(write_verify(0, 4096, 5), RY_OK);
	fx_fill(F.bufa, 8192, 6);
	ck_assert_int_eq(ry_write(F.ab, F.ra, 0, F.desc_b, (size_t)F.desc_b_len,
				  0, 4096, repost_cb, &r),
			 0);
	/* fx_until stops after the progress pair in which a's ran the
	 * callback; b's progress does not touch a's rails */
	ck_assert(fx_until(&F, reposted, &r, 20000));
	ck_assert_int_eq(r.posted, 1);
	left = a_kick_left();
	ck_assert_msg(left < 0,
		      "rail %d still waits for the kick of a write posted "
		      "from a callback after the progress call returned",
		      left);
	ck_assert(fx_until_done(&F, &r.done, 1, 20000));
	ck_assert_uint_eq(r.done.ok, 1);
	ck_assert(!memcmp(F.bufa, F.bufb, 8192));
	teardown();
}
END_TEST

static bool wait_threads(bool (*f)(void), unsigned ms);
static atomic_uint g_alone_ok, g_alone_bad;

static void alone_cb(const struct ry_completion *c, void *arg)
{
	(void)arg;
	atomic_fetch_add(c->status == RY_OK ? &g_alone_ok : &g_alone_bad, 1);
}

static bool alone_all_done(void)
{
	return atomic_load(&g_alone_ok) + atomic_load(&g_alone_bad) == 20;
}

/* a's rails' progress() calls so far */
static uint64_t a_rail_progress_calls(void)
{
	uint64_t n = 0;

	for (unsigned i = 0; i < F.a->m_nrails; i++)
		n += ry_loop_progress_calls(F.a->m_rails[i].lr_rail);
	return n;
}

/* Post one 4 KiB write from the application and say whether a rail was
 * kicked: without rail threads ry__kick runs the kicked rail's progress
 * inside ry_write, and clears lr_kick with it; the write is then seen
 * through. */
static bool post_kicks(void)
{
	struct fx_done d = {0};
	uint64_t n0 = a_rail_progress_calls();
	bool kick;

	fx_fill(F.bufa, 4096, 9);
	ck_assert_int_eq(ry_write(F.ab, F.ra, 0, F.desc_b, (size_t)F.desc_b_len,
				  0, 4096, fx_cb, &d),
			 0);
	kick = a_rail_progress_calls() != n0;
	ck_assert(fx_until_done(&F, &d, 1, 20000));
	ck_assert_uint_eq(d.ok, 1);
	ck_assert(!memcmp(F.bufa, F.bufb, 4096));
	return kick;
}

/*
 * A rail that sends alone (rails/rail.h: verbs, the null rail) is not
 * kicked after a post: its thread would wake only to find nothing to do.
 * Writes still complete, self-driven and with progress threads (its fd
 * brings the completions).  A rail that needs progress after a post is
 * kicked, so the first assertion can fail.
 */
START_TEST(sends_alone_not_kicked)
{
	setup_opts(NULL);
	ck_assert_int_eq(write_verify(0, 4096, 5), RY_OK);
	ck_assert(post_kicks());
	teardown();

	ry_loop_sends_alone(true);
	setup_opts(NULL);
	ck_assert_int_eq(write_verify(0, 4096, 5), RY_OK);
	ck_assert(!post_kicks());
	/* the threads alone see these through: nobody calls ry_progress */
	ck_assert_int_eq(ry_progress_thread_start(F.a), 0);
	ck_assert_int_eq(ry_progress_thread_start(F.b), 0);
	atomic_store(&g_alone_ok, 0);
	atomic_store(&g_alone_bad, 0);
	fx_fill(F.bufa, 20 * 65536, 12);
	for (unsigned i = 0; i < 20; i++)
		ck_assert_int_eq(ry_write(F.ab, F.ra, i * 65536, F.desc_b,
					  (size_t)F.desc_b_len, i * 65536,
					  65536, alone_cb, NULL),
				 0);
	ck_assert_msg(wait_threads(alone_all_done, 20000),
		      "%u of 20 writes done by the progress threads",
		      atomic_load(&g_alone_ok) + atomic_load(&g_alone_bad));
	ry_progress_thread_stop(F.a);
	ry_progress_thread_stop(F.b);
	ck_assert_uint_eq(atomic_load(&g_alone_ok), 20);
	ck_assert(!memcmp(F.bufa, F.bufb, 20 * 65536));
	teardown();
	ry_loop_sends_alone(false);
}
END_TEST

static struct log_match g_fail_warns = {
    .level = RY_LOG_WARN, .has1 = "connection qp", .has2 = "failed"};

/* a's r1 failovers so far (ry_rail_counters: safe beside the threads) */
static uint64_t a_r1_failovers(void)
{
	struct ry_counters c;

	ck_assert_int_eq(ry_rail_counters(F.a, "r1", &c), 0);
	return c.failovers;
}

/* Poll (threads run the managers) until f holds or ms pass. */
static bool wait_threads(bool (*f)(void), unsigned ms)
{
	for (unsigned i = 0; i < ms / 10; i++) {
		if (f())
			return true;
		usleep(10000);
	}
	return f();
}

static uint64_t g_fo0;

static bool r1_failed_again(void)
{
	return a_r1_failovers() > g_fo0;
}

static bool r1_back(void)
{
	struct ry_rail_info ri;

	ck_assert_int_eq(ry_rail_info(F.a, "r1", &ri), 0);
	return ri.peers_active > 0;
}

static bool fail_warned(void)
{
	return atomic_load(&g_fail_warns.n) > 0;
}

/*
 * An operator turns the log level down and up while the progress threads
 * run (serve's reload does): it takes effect in those threads, and under
 * TSan setting it is no data race (it was a plain global).
 */
START_TEST(log_level_set_while_threads_run)
{
	enum ry_log_level was = (enum ry_log_level)atomic_load(&ry__log_level);

	setup_opts(NULL);
	ck_assert_int_eq(write_verify(0, MiB, 1), RY_OK);
	atomic_store(&g_fail_warns.n, 0);
	ry_log_set_sink(count_lines, &g_fail_warns);
	ck_assert_int_eq(ry_progress_thread_start(F.a), 0);
	ck_assert_int_eq(ry_progress_thread_start(F.b), 0);
	ry_log_set_level(RY_LOG_ERROR);
	g_fo0 = a_r1_failovers();
	ck_assert_int_eq(ry_rail_link(F.a, "r1", false), 0);
	ck_assert(wait_threads(r1_failed_again, 5000));
	ck_assert_uint_eq(atomic_load(&g_fail_warns.n), 0);
	ck_assert_int_eq(ry_rail_link(F.a, "r1", true), 0);
	ck_assert_msg(wait_threads(r1_back, 10000), "r1 not back");
	ry_log_set_level(RY_LOG_WARN);
	g_fo0 = a_r1_failovers();
	ck_assert_int_eq(ry_rail_link(F.a, "r1", false), 0);
	ck_assert(wait_threads(r1_failed_again, 5000));
	ck_assert_msg(wait_threads(fail_warned, 2000),
		      "no failover warning at level warn");
	ry_progress_thread_stop(F.a);
	ry_progress_thread_stop(F.b);
	ry_log_set_sink(NULL, NULL);
	ry_log_set_level(was);
	teardown();
}
END_TEST

static struct calm {
	atomic_uint left, ok, bad;
} g_calm;

/* the next of a chain of 4 KiB writes at depth 1, posted from the
 * callback (the rail thread) */
static void calm_cb(const struct ry_completion *c, void *arg)
{
	(void)arg;
	atomic_fetch_add(c->status == RY_OK ? &g_calm.ok : &g_calm.bad, 1);
	if (c->status == RY_OK && atomic_fetch_sub(&g_calm.left, 1) > 1 &&
	    ry_write(F.ab, F.ra, 0, F.desc_b, (size_t)F.desc_b_len, 0, 4096,
		     calm_cb, NULL))
		atomic_fetch_add(&g_calm.bad, 1);
}

static bool calm_done(void)
{
	return atomic_load(&g_calm.left) == 0 || atomic_load(&g_calm.bad);
}

/*
 * A rail thread runs only the rails with something to do: a's two rails
 * share one thread (progress_threads = 1), b has only r0's network, so r1
 * never connects and carries nothing.  2,000 writes at depth 1 on r0 wake
 * the thread at least once each; r1's progress may be called once a tick
 * (the sweep, or a wait that timed out), not at each of those wake-ups,
 * where it would only find nothing (a soft rail: an empty recvmmsg).
 */
START_TEST(calm_rail_not_run)
{
	const unsigned writes = 2000;
	uint64_t c0, c1, t0, ticks;
	struct ry_rail *r0, *r1;

	setup_opts(&(struct fx_opts){.nrails_a = 2,
				     .nrails_b = 1,
				     .net_a = {"net0", "net1"},
				     .net_b = {"net0"},
				     .progress_threads = 1});
	ck_assert_int_eq(write_verify(0, 4096, 5), RY_OK);
	ck_assert_int_eq(ry_progress_thread_start(F.a), 0);
	ck_assert_int_eq(ry_progress_thread_start(F.b), 0);
	ck_assert_uint_eq(F.a->m_nrt, 1);
	r0 = F.a->m_rails[0].lr_rail;
	r1 = F.a->m_rails[1].lr_rail;
	memset(&g_calm, 0, sizeof(g_calm));
	atomic_store(&g_calm.left, writes);
	fx_fill(F.bufa, 4096, 13);
	c0 = ry_loop_progress_calls(r0);
	c1 = ry_loop_progress_calls(r1);
	t0 = fx_now_ns();
	ck_assert_int_eq(ry_write(F.ab, F.ra, 0, F.desc_b, (size_t)F.desc_b_len,
				  0, 4096, calm_cb, NULL),
			 0);
	ck_assert_msg(wait_threads(calm_done, 60000), "%u of %u writes done",
		      atomic_load(&g_calm.ok), writes);
	ticks = (fx_now_ns() - t0) / F.a->m_tick_ns + 1;
	c0 = ry_loop_progress_calls(r0) - c0;
	c1 = ry_loop_progress_calls(r1) - c1;
	ry_progress_thread_stop(F.a);
	ry_progress_thread_stop(F.b);
	ck_assert_uint_eq(atomic_load(&g_calm.bad), 0);
	ck_assert_uint_eq(atomic_load(&g_calm.ok), writes);
	ck_assert_msg(c0 >= writes,
		      "r0 progressed %" PRIu64 " times for %u "
		      "writes",
		      c0, writes);
	ck_assert_msg(c1 <= 2 * ticks + 20,
		      "calm r1 progressed %" PRIu64 " times in %" PRIu64
		      " ticks (r0: %" PRIu64 ")",
		      c1, ticks, c0);
	ck_assert(!memcmp(F.bufa, F.bufb, 4096));
	teardown();
}
END_TEST

START_TEST(progress_threads)
{
	pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	struct poster ps[4];
	pthread_t th[4];
	unsigned i;

	setup_opts(&(struct fx_opts){.nrails_a = 3});
	ck_assert_int_eq(ry_progress_thread_start(F.a), 0);
	ck_assert_int_eq(ry_progress_thread_start(F.a), -EALREADY);
	ck_assert_int_eq(ry_progress_thread_start(F.b), 0);
	fx_fill(F.bufa, 4 * MiB, 11);
	for (i = 0; i < 4; i++) {
		memset(&ps[i], 0, sizeof(ps[i]));
		ps[i].id = i;
		ps[i].lock = &lock;
		ck_assert_int_eq(
		    pthread_create(&th[i], NULL, post_thread, &ps[i]), 0);
	}
	usleep(100000);
	ck_assert_int_eq(ry_rail_link(F.a, "r1", false), 0);
	for (i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	for (i = 0; i < 4; i++)
		ck_assert_uint_eq(ps[i].d.ok, 25);
	ry_progress_thread_stop(F.a);
	ry_progress_thread_stop(F.b);
	ck_assert(!memcmp(F.bufa, F.bufb, 4 * MiB));
	teardown();
}
END_TEST

int main(void)
{
	const struct mgr_case cases[] = {
	    {"threads", poll_mode_and_event_fd, MGR_ANY},
	    {"threads", progress_threads, MGR_ANY},
	    {"threads", rail_thread_stall_logged, MGR_ANY},
	    {"threads", log_level_set_while_threads_run, MGR_ANY},
	    {"progress", post_from_callback_sent_by_progress_end, MGR_ANY},
	    {"progress", sends_alone_not_kicked, MGR_LOOP},
	    {"progress", calm_rail_not_run, MGR_LOOP},
	};

	return mgr_main("threads", cases, sizeof(cases) / sizeof(cases[0]));
}
