// SPDX-License-Identifier: BSD-2-Clause
/*
 * Progress rounds: ry_progress() (manual and threaded run the same one),
 * the cold round (control channel, rail events, timers, replay), the
 * kick that sends what was posted, and the control and rail threads.
 * Completions are completion.c's, the context path ctx.c's, delivery to
 * the application deliver.c's.
 *
 * The lock order and ownership rules are in src/manager.h (LOCKING).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>

#include "src/conn.h"
#include "src/events.h"
#include "src/control.h"
#include "src/lrail.h"
#include "src/manager.h"
#include "src/msg.h"
#include "src/op.h"
#include "src/peer.h"
#include "src/pool.h"
#include "src/progress.h"
#include "src/tunables.h"

static void drain_fd(int fd)
{
	uint64_t v;

	if (read(fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		RY_DBG("mgr", "read fd %d: %m", fd);
}

/* ---- progress ---- */

static void rail_event(struct ry__lrail *lr, const struct ry_rail_event *ev,
		       uint64_t now)
{
	struct ry_manager *m = lr->lr_mgr;
	struct ry_peer *p;
	struct ry__conn *c;

	switch (ev->type) {
	case RY_RAIL_EV_LINK_DOWN:
	case RY_RAIL_EV_DEVICE_FATAL:
		if (ev->type == RY_RAIL_EV_DEVICE_FATAL)
			lr->lr_life.rl_dying = true; /* rail_life.c closes it */
		if (lr->lr_link == RY_LINK_DOWN)
			break;
		lr->lr_link = RY_LINK_DOWN;
		ry__log_event(RY_LOG_WARN, "mgr",
			      (&(struct ry__log_ev){.event = "down",
						    .rail = lr->lr_cfg.name,
						    .reason = "link down"}),
			      "rail %s: link down", lr->lr_cfg.name);
		for (p = m->m_peers; p; p = p->pr_next)
			ry__conn_link_failed(p->pr_conn[lr->lr_idx],
					     "local link down", ev->time_ns);
		ry__queue_event(m, RY_EV_RAIL_DOWN, lr, NULL, "link down",
				ev->time_ns);
		break;
	case RY_RAIL_EV_LINK_UP:
		if (lr->lr_link == RY_LINK_UP)
			break;
		lr->lr_link = RY_LINK_UP;
		ry__log_event(RY_LOG_INFO, "mgr",
			      (&(struct ry__log_ev){.event = "up",
						    .rail = lr->lr_cfg.name}),
			      "rail %s: link up", lr->lr_cfg.name);
		for (p = m->m_peers; p; p = p->pr_next) {
			c = p->pr_conn[lr->lr_idx];
			/* those with work waiting first (conn.c) */
			if (c->cn_state == CONN_BACKOFF)
				c->cn_deadline_ns =
				    ry__conn_work(c, now)
					? now
					: now + 1 +
					      ry__rand64() % (m->m_tick_ns + 1);
			c->cn_backoff_ms = m->m_cfg.failover.reconnect_min_ms;
			ry__conn_timer(c, now); /* sooner: timers.c */
		}
		ry__queue_event(m, RY_EV_RAIL_UP, lr, NULL, "", ev->time_ns);
		break;
	case RY_RAIL_EV_QP_FATAL:
		c = ry__conn_by_qpn(lr, ev->qpn);
		if (c)
			ry__conn_link_failed(c, "QP fatal error", ev->time_ns);
		break;
	}
}

/* The cold lock held: what is due by now (timers.c keeps the times). */
static bool peer_watched(const struct ry_peer *p)
{
	return !ry__list_empty(&p->pr_ops) ||
	       (p->pr_state == PEER_BACKOFF && p->pr_dial);
}

void ry__timers_run(struct ry_manager *m, uint64_t now)
{
	struct ry__list *pos, *next;
	struct ry__heap_node *x;

	if (m->m_hb_defer) /* back from a stall of our own (progress.c) */
		m->m_resumed_ns = now;
	ry__ctl_timers(m, now);
	ry__list_for_each_safe(pos, next, &m->m_tpeers) {
		struct ry_peer *p =
		    ry__list_entry(pos, struct ry_peer, pr_tlink);

		if (p->pr_state == PEER_BACKOFF && p->pr_dial &&
		    now >= p->pr_ctl_retry_ns) {
			if (ry__ctl_dial(p)) {
				ry__peer_set_state(p, PEER_NEW);
				ry__peer_use(p); /* back to backoff */
			}
		}
		ry__fence_tick(p, now);
		ry__ops_timeouts(p, now);
		if (!peer_watched(p)) {
			ry__list_del(&p->pr_tlink);
			p->pr_timed = false;
		}
	}
	/* Each one keyed again after it ran, never at or before now (conn_due):
	 * the loop ends. */
	while ((x = ry__heap_top(&m->m_ctimers)) && x->at <= now) {
		struct ry__conn *c = container_of(x, struct ry__conn, cn_tnode);

		ry__heap_del(&m->m_ctimers, x);
		c->cn_timer_at = 0;
		ry__conn_timers(c, now);
		if (c->cn_state == CONN_ACTIVE)
			ry__heartbeat(c, now);
		ry__conn_timer(c, now);
	}
}

/* A rail's events and completions; the cold lock held. */
/*
 * With all false and several contexts, the contexts' CQs are left to the
 * context path (ctx_round: the thread posting to the context, or the
 * rail's thread), so that a cold round does not take their work from
 * them under every lock.
 */
static void rail_handover(struct ry__lrail *lr, uint64_t now, bool all)
{
	struct ry_rail_event rev;
	int ret;

	if (!lr->lr_rail)
		return; /* closed since it had work (rail_life.c) */
	for (;;) {
		pthread_mutex_lock(&lr->lr_lock);
		ret = ry__rail_get_event(lr->lr_rail, &rev);
		pthread_mutex_unlock(&lr->lr_lock);
		if (ret)
			break;
		rail_event(lr, &rev, now);
	}
	if (all || lr->lr_mgr->m_nctx == 1 || !lr->lr_cq[0])
		ry__poll_rail(lr, now);
}

/*
 * Whether a rail must run this round whatever its fd says: it cannot tell
 * (no fd, or no pending()), it was posted to since it last ran, or a
 * kick's progress left it completions (lr_left).
 */
static bool rail_due(struct ry__lrail *lr)
{
	return atomic_load_explicit(&lr->lr_always, memory_order_relaxed) ||
	       atomic_load_explicit(&lr->lr_kick, memory_order_relaxed) ||
	       atomic_load_explicit(&lr->lr_left, memory_order_relaxed);
}

/*
 * A rail's protocol work, under its own lock only; true when the rail has
 * completions or events for the manager (or cannot tell), and *own
 * whether its events or its own CQ do (which only the cold round hands
 * over: the contexts' CQs are the context path's).  Always asked: what
 * progress completed the rail's fd need not say (rails/rail.h).
 */
static bool rail_run(struct ry__lrail *lr, bool *own)
{
	struct ry_manager *m = lr->lr_mgr;
	int pending;

	*own = false;
	atomic_store_explicit(&lr->lr_kick, false, memory_order_relaxed);
	atomic_store_explicit(&lr->lr_left, false, memory_order_relaxed);
	pthread_mutex_lock(&lr->lr_lock);
	/* a hole (reload.c, rail_life.c), or being opened or closed */
	if (!lr->lr_rail || lr->lr_life.rl_busy) {
		pthread_mutex_unlock(&lr->lr_lock);
		return false;
	}
	ry__rail_progress(lr->lr_rail);
	/* its events (and its own CQ), then ours; < 0: cannot tell */
	pending = ry__rail_pending(lr->lr_rail);
	*own = pending != 0;
	for (unsigned k = 0; !pending && k < m->m_nctx && lr->lr_cq[k]; k++)
		pending = ry__rail_cq_pending(lr->lr_cq[k]);
	pthread_mutex_unlock(&lr->lr_lock);
	return pending != 0;
}

static bool rail_work(struct ry__lrail *lr)
{
	bool own;

	return rail_run(lr, &own);
}

/*
 * The cold lock held: before a connection is judged silent, run its rail here
 * and hand over what it has, so that a rail thread that has not had the CPU
 * lately (a loaded machine) is not taken for a silent peer: packets that
 * arrived are counted before the verdict.  Once per rail per timer pass.
 */
void ry__rail_catch_up(struct ry__lrail *lr, uint64_t now)
{
	if (!lr->lr_rt || lr->lr_caught_up_ns == now)
		return;
	lr->lr_caught_up_ns = now;
	if (rail_work(lr))
		rail_handover(lr, now, true);
}

/* The manager's part of a round after the rails': the cold lock held. */
static void manager_round(struct ry_manager *m, uint64_t now)
{
	struct ry_peer *p;

	if (m->m_rail_life)
		m->m_rail_life(m, now);
	ry__replay_run(m);
	if (now >= m->m_next_tick_ns) {
		m->m_next_tick_ns = now + m->m_tick_ns;
		ry__timers_run(m, now);
		ry__replay_run(m);
	}
	for (unsigned i = 0; i < m->m_nctx; i++) {
		struct ry__ctx *cx = &m->m_ctx[i];

		while ((p = cx->cx_dirty)) {
			cx->cx_dirty = p->pr_dnext;
			p->pr_dirty = false;
			ry__stripe(p);
		}
	}
}

/* The end of every round: called with m_lock, which it drops; then the
 * kick and the callbacks.  Returns the callbacks run. */
static int unlock_and_deliver(struct ry_manager *m)
{
	bool queued = ry__deliver_queue(m);

	ry__unlock(m);
	ry__kick(m);
	return queued ? ry__deliver(m) : 0;
}

/*
 * Send what was posted since the rails last ran (LOCKING: Kick), without
 * m_lock: a rail with a thread of its own is woken, any other progressed
 * here and now.
 */
void ry__kick(struct ry_manager *m)
{
	static const uint64_t one = 1;
	/* m_nslots, not m_nrails: read without m_lock, and a reload may be
	 * adding rails while an application thread posts; a post to a slot
	 * happened under m_lock after the slot was counted, so its kick
	 * sees it counted */
	unsigned n = atomic_load_explicit(&m->m_nslots, memory_order_acquire);

	for (unsigned i = 0; i < n; i++) {
		struct ry__lrail *lr = &m->m_rails[i];
		struct ry__rthread *rt = lr->lr_rt;

		if (!atomic_load_explicit(&lr->lr_kick, memory_order_relaxed))
			continue;
		if (!rt) {
			/* send now; what it completes the rail's fd need not
			 * say (rails/rail.h, Progress): the next round runs
			 * the rail again and hands it over, and whoever waits
			 * for rounds is woken for it; a rail run every round
			 * anyway (lr_always) needs neither, nor one whose fd
			 * says it (not progress_quiet: soft), where the
			 * extra round cost its depth-1 writes 3-8 % */
			bool own;

			if (rail_run(lr, &own) &&
			    !atomic_load_explicit(&lr->lr_always,
						  memory_order_relaxed) &&
			    lr->lr_attr.progress_quiet) {
				atomic_store_explicit(&lr->lr_left, true,
						      memory_order_relaxed);
				/* once until a round drains it */
				if (!atomic_exchange(&m->m_woken, true) &&
				    write(m->m_wake_fd, &one, sizeof(one)) < 0)
					RY_DBG("mgr", "wake: %m");
			}
			continue;
		}
		if (!atomic_exchange(&rt->rt_woken, true) &&
		    write(rt->rt_wake_fd, &one, sizeof(one)) < 0)
			RY_DBG("mgr", "rail thread wake: %m");
	}
}

static void control_events(struct ry_manager *m)
{
	struct epoll_event evs[32];
	unsigned i;
	int n;

	n = epoll_wait(m->m_epfd, evs, 32, 0);
	for (i = 0; n > 0 && i < (unsigned)n; i++) {
		struct ry__fdtag *t = evs[i].data.ptr;

		switch (t->ft_kind) {
		case FDK_LISTEN:
			ry__ctl_accept(m);
			break;
		case FDK_CTL:
			ry__ctl_io(t->ft_ptr, evs[i].events);
			break;
		case FDK_TIMER:
			drain_fd(m->m_timer_fd);
			break;
		case FDK_WAKE:
			drain_fd(m->m_wake_fd);
			break;
		case FDK_RAIL:
			break; /* the rails ran before (their tags) */
		}
	}
}

/*
 * Our own threads not run for over half of timeout_ms (m_lock): on a
 * starved machine the peer may then judge our connections silent (and a
 * failover follows that no cable caused), so say so, once per stall, with
 * the time in the log's prefix: an operator, and the drill tests, can tell
 * such a failover from a broken path.  Only with progress threads: an
 * application that drives ry_progress() itself may call it rarely on
 * purpose.  A rail thread is judged by the control thread, while it is
 * still stalled (and by itself when it runs again: rail_main); the
 * control thread by its own round.
 */
static uint64_t stall_limit(const struct ry_manager *m)
{
	return m->m_timeout_ns / 2 + m->m_tick_ns;
}

/* was: "" while it is still stalled (the control thread's view), "was "
 * when the rail thread says so itself afterwards */
static void warn_rt_stall(struct ry_manager *m, const struct ry__rthread *rt,
			  uint64_t gap, const char *was)
{
	RY_WARN("mgr",
		"rail thread %u (rail %s%s) %snot run for %llu ms (a starved "
		"machine?): peers may judge its connections silent",
		(unsigned)(rt - m->m_rt), rt->rt_rails[0]->lr_cfg.name,
		rt->rt_nrails > 1 ? " and others" : "", was,
		(unsigned long long)(gap / 1000000));
}

static void note_stalls(struct ry_manager *m, uint64_t now, uint64_t gap)
{
	uint64_t lim = stall_limit(m);

	/* not while the threads are being stopped (joined, not yet off) */
	if (!m->m_thread_on || atomic_load(&m->m_thread_stop))
		return;
	if (gap > lim)
		RY_WARN("mgr",
			"progress was not run for %llu ms (a starved "
			"machine?): peers may judge our connections silent",
			(unsigned long long)(gap / 1000000));
	for (unsigned i = 0; i < m->m_nrt; i++) {
		struct ry__rthread *rt = &m->m_rt[i];
		uint64_t ran =
		    atomic_load_explicit(&rt->rt_ran_ns, memory_order_relaxed);

		if (!rt->rt_running || !ran || ran > now ||
		    ry__since(now, ran) <= lim) {
			rt->rt_stalled = false;
			continue;
		}
		if (rt->rt_stalled)
			continue;
		rt->rt_stalled = true;
		warn_rt_stall(m, rt, ry__since(now, ran), "");
	}
}

/* Whether the manager has work its fd does not show: a rail without a
 * thread that must run whatever its fd says (rail_due). */
static bool work_due(struct ry_manager *m)
{
	for (unsigned i = 0; i < m->m_nrails; i++)
		if (!m->m_rails[i].lr_rt && rail_due(&m->m_rails[i]))
			return true;
	return false;
}

/*
 * One round: the rails' protocol work (only rails without a thread of
 * their own: the others run on theirs), then under the cold lock the control
 * channel, the rails' completions and events, replay, timers and striping;
 * then the kick and the callbacks, without m_lock.
 */
static int progress_round(struct ry_manager *m, bool all, int wait_ms)
{
	bool pending[RY_MAX_RAILS] = {0}, ready[RY_MAX_RAILS] = {0}, sweep;
	bool rails_ready = false, ctl_ready = false;
	struct epoll_event evs[32];
	uint64_t now = ry__now_ns(), gap;
	unsigned i;
	int n;

	/*
	 * One look at the whole set, the rails' fds in it (ry__lrail_watch):
	 * which rails are ready, and whether the control channel is.  Only
	 * the rails' tags are read: they live as long as the manager, while
	 * a control session's tag may be freed by another thread until the
	 * cold lock is held.
	 */
	n = epoll_wait(m->m_epfd, evs, 32,
		       wait_ms && !work_due(m) ? wait_ms : 0);
	if (wait_ms)
		now = ry__now_ns(); /* it may have waited */
	rails_ready = n == 32;	    /* a full batch may not show them all */
	for (i = 0; n > 0 && i < (unsigned)n; i++) {
		uintptr_t t = (uintptr_t)evs[i].data.ptr;

		if (evs[i].data.ptr == &m->m_wake_tag) {
			/* drained before the rails run: a kick after the
			 * store writes again, one before it left lr_left,
			 * which this round sees */
			drain_fd(m->m_wake_fd);
			atomic_store(&m->m_woken, false);
		} else if (t >= (uintptr_t)m->m_rails &&
			   t < (uintptr_t)(m->m_rails + RY_MAX_RAILS))
			ready[container_of(evs[i].data.ptr, struct ry__lrail,
					   lr_tag)
				  ->lr_idx] = true;
		else
			ctl_ready = true;
	}
	/*
	 * Only the rails with something to do: a readable fd (packets, a
	 * timer due, a completion waiting), a post since they last ran, or no
	 * way to tell; and every rail once a tick, in case.
	 */
	if (rails_ready) {
		n = epoll_wait(m->m_rail_epfd, evs, RY_MAX_RAILS, 0);
		for (i = 0; n > 0 && i < (unsigned)n; i++)
			ready[((struct ry__lrail *)evs[i].data.ptr)->lr_idx] =
			    true;
	}
	sweep =
	    now >= atomic_load_explicit(&m->m_sweep_ns, memory_order_relaxed);
	if (sweep)
		atomic_store_explicit(&m->m_sweep_ns, now + m->m_tick_ns,
				      memory_order_relaxed);
	for (i = 0; i < m->m_nrails; i++) {
		struct ry__lrail *lr = &m->m_rails[i];

		if (!lr->lr_rt && (ready[i] || sweep || rail_due(lr)))
			pending[i] = rail_work(lr);
	}
	ry__lock_and_run_leftovers(m);
	if (m->m_closing) {
		ry__unlock(m);
		return -ESHUTDOWN;
	}
	now = ry__now_ns();
	/* this round does what the context path left to it
	 * (ry__lock_and_run_leftovers() handed over its completions): the next
	 * is due in a tick */
	atomic_store_explicit(&m->m_cold_due, false, memory_order_relaxed);
	atomic_store_explicit(&m->m_cold_ns, now + m->m_tick_ns,
			      memory_order_relaxed);
	/*
	 * Back from a stall of our own (a starved machine, an application
	 * busy elsewhere): the peers, starved alike, may not have answered
	 * yet, so silence is not judged in this round.  Never two rounds in
	 * a row, so an application that calls us rarely still detects a dead
	 * peer, one call later.
	 */
	gap = m->m_last_progress_ns ? ry__since(now, m->m_last_progress_ns) : 0;
	m->m_hb_defer = !m->m_hb_deferred && gap > m->m_timeout_ns / 2;
	m->m_hb_deferred = m->m_hb_defer;
	note_stalls(m, now, gap);
	m->m_last_progress_ns = now;
	/* what became ready since is level-triggered: the next round's */
	if (ctl_ready)
		control_events(m);
	for (i = 0; i < m->m_nrails; i++)
		if (pending[i])
			rail_handover(&m->m_rails[i], now, all);
	manager_round(m, now);
	ry__ctl_reap(m);
	return unlock_and_deliver(m);
}

/*
 * With several contexts: the rails' protocol work (those without a thread
 * of their own), then this thread's context (the one it last posted to),
 * the others only when it has none or now and then (whoever holds one is
 * running it), each under its own lock alone; a cold round (the control
 * channel, rail events, timers, replay, what the context path left) only
 * when one is due.
 */
static int ctx_progress(struct ry_manager *m)
{
	static _Thread_local unsigned calls;
	struct ry__lrail *rails[RY_MAX_RAILS];
	struct epoll_event evs[RY_MAX_RAILS];
	bool ready[RY_MAX_RAILS] = {0}, own_any = false, queued = false;
	bool work = false, left;
	uint64_t now = ry__now_ns(), t;
	struct ry__ctx *mine = NULL;
	unsigned i, nr;
	int n;

	nr = atomic_load_explicit(&m->m_nslots, memory_order_acquire);
	for (i = 0; i < nr; i++) {
		rails[i] = &m->m_rails[i];
		/* a rail that sends alone (an HCA, the null rail) has no
		 * protocol work for us: its events wait for the tick's cold
		 * round, and its completions are polled below regardless */
		work |= !rails[i]->lr_rt && !rails[i]->lr_attr.sends_alone;
	}
	if (work) {
		n = epoll_wait(m->m_rail_epfd, evs, RY_MAX_RAILS, 0);
		for (i = 0; n > 0 && i < (unsigned)n; i++)
			ready[((struct ry__lrail *)evs[i].data.ptr)->lr_idx] =
			    true;
	}
	for (i = 0; work && i < nr; i++) {
		struct ry__lrail *lr = rails[i];
		bool own = false;

		if (!lr->lr_rt && !lr->lr_attr.sends_alone &&
		    (ready[i] || rail_due(lr)))
			rail_run(lr, &own);
		own_any |= own;
	}
	if (ry__ctx_noted(m) < m->m_nctx)
		mine = &m->m_ctx[ry__ctx_noted(m)];
	if (mine)
		queued |= ry__ctx_round(m, mine, rails, nr, now, false);
	if (!mine || !(++calls & 15))
		for (i = 0; i < m->m_nctx; i++)
			if (&m->m_ctx[i] != mine)
				queued |= ry__ctx_round(m, &m->m_ctx[i], rails,
							nr, now, true);
	/*
	 * One thread takes a tick's cold round, and the work the context
	 * path left: the others go on with their contexts (a cold round
	 * stops them all for as long as it runs).
	 */
	now = ry__now_ns();
	t = atomic_load_explicit(&m->m_cold_ns, memory_order_relaxed);
	left = atomic_exchange_explicit(&m->m_cold_due, false,
					memory_order_relaxed);
	/* what the context path left (it stopped polling a context's CQs
	 * at it): this round polls them all, as it would with one context,
	 * so that what came after is handed over with it */
	if (own_any || left ||
	    (now >= t && atomic_compare_exchange_strong(&m->m_cold_ns, &t,
							now + m->m_tick_ns))) {
		n = progress_round(m, left, 0);
		if (n < 0)
			return n;
	} else {
		n = 0;
		ry__kick(m);
	}
	return n + (queued ? ry__deliver(m) : 0);
}

int ry_progress(struct ry_manager *m)
{
	if (!m)
		return -EINVAL;
	if (m->m_nctx > 1)
		return ctx_progress(m);
	return progress_round(m, true, 0);
}

int ry_progress_wait(struct ry_manager *m, int timeout_ms)
{
	struct epoll_event ev;

	if (!m)
		return -EINVAL;
	if (!timeout_ms)
		return ry_progress(m);
	/* one context: the wait is the round's own look at the fd */
	if (m->m_nctx == 1)
		return progress_round(m, true, timeout_ms);
	if (!work_due(m))
		epoll_wait(m->m_epfd, &ev, 1, timeout_ms);
	return ctx_progress(m);
}

int ry_event_fd(struct ry_manager *m)
{
	return m ? m->m_epfd : -EINVAL;
}

static bool stopping(struct ry_manager *m)
{
	return atomic_load(&m->m_thread_stop);
}

/* The control thread: control sockets, timers, replay, striping. */
static void *control_main(void *arg)
{
	struct ry_manager *m = arg;
	int ms = (int)(m->m_tick_ns / 1000000) + 1;

	/* the round's own look at the fd is the wait */
	while (!stopping(m))
		progress_round(m,
			       m->m_nctx == 1 ||
				   atomic_load_explicit(&m->m_cold_due,
							memory_order_relaxed),
			       ms);
	return NULL;
}

#define WAKE_TAG 1 /* a rail thread's wake fd in its epoll set; rails: lr */

/*
 * A rail thread: its rails' protocol work under their own locks; m_lock
 * only for rails that have completions or events, to hand them over and
 * stripe what they freed.  A rail without an fd (none of the shipped
 * ones) is run every millisecond.
 */
static void *rail_main(void *arg)
{
	struct ry__rthread *rt = arg;
	struct ry_manager *m = rt->rt_mgr;
	struct epoll_event evs[RY_MAX_RAILS + 1];
	int ms = (int)(m->m_tick_ns / 1000000) + 1;
	/* read once: a reload changes it only while the rail threads are
	 * stopped, and starts them again after */
	const uint64_t lim = stall_limit(m);
	/* ready: by lr_idx, as the fds' tags name them */
	bool pending[RY_MAX_RAILS], ready[RY_MAX_RAILS] = {0};
	uint64_t prev = 0, sweep = 0;
	unsigned i;
	int n;

	for (i = 0; i < rt->rt_nrails; i++)
		if (ry__rail_fd(rt->rt_rails[i]->lr_rail) < 0)
			ms = 1;
	while (!stopping(m)) {
		bool any = false, again = false, own = false;
		uint64_t t = ry__now_ns();
		bool all = t >= sweep;

		/*
		 * Our own gap between two rounds (we wake at least every
		 * tick): note_stalls() judges a rail thread only while it is
		 * stalled and the control thread runs; with both starved,
		 * the silence the peers then see on our rails would go
		 * unexplained in the log.  Said when we run again.
		 */
		if (prev && ry__since(t, prev) > lim)
			warn_rt_stall(m, rt, ry__since(t, prev), "was ");
		prev = t;
		atomic_store_explicit(&rt->rt_ran_ns, t, memory_order_relaxed);
		/*
		 * Only the rails with something to do (as progress_round):
		 * a readable fd or rail_due(); every rail once a tick (the
		 * first round, and after a wait that timed out), in case.  A
		 * sibling whose fd is calm would only answer an empty
		 * recvmmsg.
		 */
		if (all)
			sweep = t + m->m_tick_ns;
		for (i = 0; i < rt->rt_nrails; i++) {
			struct ry__lrail *lr = rt->rt_rails[i];
			bool o = false;

			pending[i] = false;
			if (all || ready[lr->lr_idx] || rail_due(lr))
				any |= pending[i] = rail_run(lr, &o);
			ready[lr->lr_idx] = false;
			own |= o;
		}
		if (any && m->m_nctx > 1 && !own) {
			/* only the contexts' CQs: each context under its own
			 * lock, the cold round only if that left it work */
			uint64_t now = ry__now_ns();
			bool queued = false;

			for (i = 0; i < m->m_nctx; i++)
				queued |=
				    ry__ctx_round(m, &m->m_ctx[i], rt->rt_rails,
						  rt->rt_nrails, now, false);
			ry__kick(m);
			if (queued)
				ry__deliver(m);
			any = atomic_load_explicit(&m->m_cold_due,
						   memory_order_relaxed);
		}
		if (any) {
			uint64_t now = ry__now_ns();

			ry__lock_and_run_leftovers(m);
			atomic_store_explicit(&m->m_cold_due, false,
					      memory_order_relaxed);
			for (i = 0; i < rt->rt_nrails; i++)
				if (pending[i])
					rail_handover(rt->rt_rails[i], now,
						      true);
			if (!m->m_closing)
				manager_round(m, now);
			unlock_and_deliver(m);
		}
		for (i = 0; i < rt->rt_nrails; i++)
			again |= atomic_load_explicit(&rt->rt_rails[i]->lr_kick,
						      memory_order_relaxed);
		if (again)
			continue;
		n = epoll_wait(rt->rt_epfd, evs, RY_MAX_RAILS + 1, ms);
		for (int k = 0; k < n; k++)
			if (evs[k].data.u64 == WAKE_TAG) {
				/* drained first: a kick after the store writes
				 * again, one before it is seen by the rail
				 * work that follows (lr_kick is set first) */
				drain_fd(rt->rt_wake_fd);
				atomic_store(&rt->rt_woken, false);
			} else {
				ready[((struct ry__lrail *)evs[k].data.ptr)
					  ->lr_idx] = true;
			}
	}
	return NULL;
}

/* How many rail threads: the config's, or one per rail up to the cores. */
static unsigned rail_threads(const struct ry_manager *m)
{
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned n = m->m_cfg.progress_threads, live = 0;

	for (unsigned i = 0; i < m->m_nrails; i++)
		live += ry__lrail_live(&m->m_rails[i]);
	if (!n)
		n = cores > 0 && (unsigned long)cores < live ? (unsigned)cores
							     : live;
	return n < live ? n : live;
}

/* Join the rail threads (m_thread_stop set) and give their rails back to
 * the manager's epoll set; without m_lock. */
static void rthreads_stop(struct ry_manager *m)
{
	static const uint64_t one = 1;
	unsigned i, k;

	for (i = 0; i < m->m_nrt; i++) {
		struct ry__rthread *rt = &m->m_rt[i];

		if (!rt->rt_running)
			continue;
		if (write(rt->rt_wake_fd, &one, sizeof(one)) < 0)
			RY_DBG("mgr", "rail thread wake: %m");
		pthread_join(rt->rt_thread, NULL);
	}
	ry__lock_and_run_leftovers(m);
	for (i = 0; i < m->m_nrt; i++) {
		struct ry__rthread *rt = &m->m_rt[i];

		for (k = 0; k < rt->rt_nrails; k++) {
			struct ry__lrail *lr = rt->rt_rails[k];

			lr->lr_rt = NULL;
			if (lr->lr_rail)
				ry__lrail_watch(lr, true);
		}
		if (rt->rt_epfd >= 0)
			close(rt->rt_epfd);
		if (rt->rt_wake_fd >= 0)
			close(rt->rt_wake_fd);
		memset(rt, 0, sizeof(*rt));
	}
	m->m_nrt = 0;
	ry__unlock(m);
}

/*
 * Set up the rail threads' epoll sets and hand them their rails (rail i to
 * thread i mod n); the cold lock held.  A rail's fd moves from the manager's
 * epoll set (the control thread must not wake for packets) to its
 * thread's.  The threads are created by the caller.
 */
static int rthreads_setup(struct ry_manager *m)
{
	unsigned n = rail_threads(m), i, k;

	for (i = 0; i < n; i++) {
		struct ry__rthread *rt = &m->m_rt[i];
		struct epoll_event ev = {.events = EPOLLIN,
					 .data.u64 = WAKE_TAG};

		m->m_nrt++;
		rt->rt_mgr = m;
		rt->rt_epfd = epoll_create1(EPOLL_CLOEXEC);
		rt->rt_wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
		if (rt->rt_epfd < 0 || rt->rt_wake_fd < 0 ||
		    epoll_ctl(rt->rt_epfd, EPOLL_CTL_ADD, rt->rt_wake_fd, &ev))
			return -errno;
	}
	for (i = 0, k = 0; i < m->m_nrails; i++) {
		struct ry__lrail *lr = &m->m_rails[i];
		struct ry__rthread *rt;
		int fd, ret;

		if (!ry__lrail_live(lr))
			continue;
		rt = &m->m_rt[k++ % n];
		fd = ry__rail_fd(lr->lr_rail);
		rt->rt_rails[rt->rt_nrails++] = lr;
		lr->lr_rt = rt;
		if (fd >= 0) {
			ry__lrail_watch(lr, false);
			/* tagged lr: rail_main() tells its rails' events by
			 * it, as manager.c's for a rail reopened here */
			ret = ry__lrail_wait_in(lr, rt->rt_epfd, lr);
			if (ret)
				return ret;
		}
	}
	return 0;
}

int ry_progress_thread_start(struct ry_manager *m)
{
	unsigned i;
	int ret;

	if (!m)
		return -EINVAL;
	ry__lock_and_run_leftovers(m);
	if (m->m_thread_on) {
		ry__unlock(m);
		return -EALREADY;
	}
	atomic_store(&m->m_thread_stop, false);
	ret = rthreads_setup(m);
	for (i = 0; !ret && i < m->m_nrt; i++) {
		ret = -pthread_create(&m->m_rt[i].rt_thread, NULL, rail_main,
				      &m->m_rt[i]);
		m->m_rt[i].rt_running = !ret;
	}
	if (!ret)
		ret = -pthread_create(&m->m_thread, NULL, control_main, m);
	if (!ret)
		m->m_thread_on = true;
	ry__unlock(m);
	if (ret) {
		RY_ERR("mgr", "progress threads: %s", strerror(-ret));
		atomic_store(&m->m_thread_stop, true);
		rthreads_stop(m);
	}
	return ret;
}

void ry_progress_thread_stop(struct ry_manager *m)
{
	uint64_t one = 1;

	if (!m)
		return;
	ry__lock_and_run_leftovers(m);
	if (!m->m_thread_on) {
		ry__unlock(m);
		return;
	}
	ry__unlock(m);
	atomic_store(&m->m_thread_stop, true);
	if (write(m->m_wake_fd, &one, sizeof(one)) < 0)
		RY_DBG("mgr", "wake: %m");
	pthread_join(m->m_thread, NULL);
	rthreads_stop(m);
	ry__lock_and_run_leftovers(m);
	m->m_thread_on = false;
	ry__unlock(m);
}
