// SPDX-License-Identifier: BSD-2-Clause
/*
 * Every timer of the rail manager, in one place: when each is due.  What
 * is due is run by ry__timers_run (progress.c), once per tick (m_tick_ns, a
 * quarter of the shortest failover interval, at most 10 ms), and a periodic
 * timerfd in the event fd wakes epoll users and the progress thread at that
 * tick.  A tick touches only what is due: connections wait in a min-heap keyed
 * by their next deadline (m_ctimers, cn_tnode), and only peers with operations
 * to time out or a redial to make are on m_tpeers.  An idle ACTIVE connection
 * is looked at once per heartbeat interval, not per tick.
 *
 *   timer           per            fires after             action
 *   --------------  -------------  ----------------------  -----------------
 *   heartbeat       ACTIVE conn    heartbeat_ms quiet      keepalive SEND
 *                                  (idle_heartbeat_ms when
 *                                  long idle, one end
 *                                  only: heartbeat.c)
 *   liveness        conn with WRs  timeout_ms without a    mark failed
 *                   outstanding    completion or receive
 *   connect         CONNECTING     m_connect_ns (after     backoff
 *                                  our own stall, from its
 *                                  end: conn.c)
 *   probe           PROBING        m_connect_ns (the same) mark failed
 *   reconnect       BACKOFF conn   reconnect_min..max_ms,  connect (if link
 *                                  doubling, +-50% jitter  and control up)
 *   health          ACTIVE conn    every 100 ms            health += 50
 *   backoff reset   ACTIVE conn    1 s up                  backoff = min
 *   op timeout      op, no path    op_timeout_ms           fail ETIMEDOUT
 *   fence timeout   FENCING op     op_timeout_ms (from our fail ETIMEDOUT
 *                                  own stall's end: op.c)
 *   control redial  BACKOFF peer   reconnect backoff       dial again
 *   handshake       inbound ctl    handshake_timeout_ms    close it
 *                   not admitted
 *   listen resume   listen fd off  100 ms after EMFILE     watch it again
 *
 * The heap's key is a lower bound: a connection may be looked at early
 * (ry__conn_timers then finds nothing due and it is keyed again), never
 * late.  Signs of life only move its deadlines later, so they need no
 * update; what can move one earlier calls in: a state change or a new
 * deadline (conn.c, peer.c, the link-up event: ry__conn_timer), the first
 * work posted on an idle connection (ry__conn_post: ry__conn_timer_by),
 * new timing from a reload (ry__timers_reset).
 *
 * The transport's own timers (ack timeout, retry count, RNR) live in the
 * rail provider; the manager only configures them at RTS.
 */
#include "src/conn.h"
#include "src/control.h"
#include "src/lrail.h"
#include "src/manager.h"
#include "src/peer.h"

#define HEALTH_STEP_NS 100000000ull /* conn.c: health += 50 per 100 ms */
#define BACKOFF_RESET_NS 1000000000ull

/* The earliest moment ry__conn_timers may have something to do for c. */
/* Heartbeat timing (heartbeat.c judges and sends). */
#define RY__HB_LINGER_NS 1000000000ull

/* How long c may be quiet before this end sends a heartbeat; 0: never
 * (the other end sends them). */
uint64_t ry__hb_interval(const struct ry__conn *c, uint64_t now)
{
	const struct ry_manager *m = c->cn_lrail->lr_mgr;
	uint64_t peer = c->cn_peer->pr_node;

	if ((c->cn_last_work_ns &&
	     ry__since(now, c->cn_last_work_ns) < RY__HB_LINGER_NS) ||
	    c->cn_peer->pr_state != PEER_READY)
		return m->m_hb_ns;
	/* a drained rail is probed while the peer's other rails carry work:
	 * its error rate needs packets to be judged (rail_health.c) */
	if (c->cn_lrail->lr_health.rh_state == RY_RAIL_DRAINED)
		for (unsigned i = 0; i < m->m_nrails; i++) {
			uint64_t w = c->cn_peer->pr_conn[i]->cn_last_work_ns;

			if (w && ry__since(now, w) < RY__HB_LINGER_NS)
				return m->m_hb_ns;
		}
	if (peer && m->m_node > peer)
		return 0;
	return m->m_idle_hb_ns;
}

/*
 * Where c's silence starts: its last sign of life or its first work since
 * it was idle, and never before the end of a stall of our own.  A peer
 * that is alive answers work within timeout_ms of our coming back;
 * before, it had nothing to answer (we sent nothing) or we could not read
 * it.  Idle peers mostly send no heartbeats (idle_heartbeat_ms, one end
 * only), so no message shows life across the stall: the stall itself
 * must not be counted.
 */
uint64_t ry__hb_silence_from(const struct ry__conn *c)
{
	const struct ry_manager *m = c->cn_lrail->lr_mgr;

	return ry__max64(ry__max64(c->cn_last_ok_ns, c->cn_busy_since_ns),
			 m->m_resumed_ns);
}

uint64_t ry__heartbeat_due(const struct ry__conn *c, uint64_t now)
{
	const struct ry_manager *m = c->cn_lrail->lr_mgr;
	uint64_t iv;

	/* Busy: its silence is judged then -- or, when the work completes
	 * sooner, a heartbeat may be due after heartbeat_ms (the shortest
	 * interval) of quiet from then on: not before the last sign of life
	 * plus that. */
	if (c->cn_out_wrs)
		return ry__min64(ry__hb_silence_from(c) + m->m_timeout_ns + 1,
				 ry__max64(c->cn_last_ok_ns, c->cn_last_tx_ns) +
				     m->m_hb_ns);
	if (c->cn_hb_out)
		return now + m->m_hb_ns;
	iv = ry__hb_interval(c, now);
	if (!iv)
		return 0;
	return ry__max64(c->cn_last_ok_ns, c->cn_last_tx_ns) + iv;
}

static uint64_t conn_due(const struct ry__conn *c, uint64_t now)
{
	const struct ry_manager *m = c->cn_lrail->lr_mgr;
	uint64_t t;

	switch (c->cn_state) {
	case CONN_BACKOFF:
		/* nothing to try before the link-up event (progress.c), which
		 * keys every connection of the rail again: 10,000 waiting
		 * connections are not looked at every few ticks */
		if (c->cn_lrail->lr_link != RY_LINK_UP)
			return 0;
		t = c->cn_deadline_ns;
		break;
	case CONN_CONNECTING:
	case CONN_PROBING:
		t = c->cn_deadline_ns;
		if (c->cn_rts_wait)
			t = ry__min64(t, c->cn_rts_poll_ns);
		break;
	case CONN_ACTIVE:
		t = ry__heartbeat_due(c, now);
		if (!t)
			t = UINT64_MAX; /* the peer heartbeats */
		if (c->cn_health < 1000)
			t = ry__min64(t, c->cn_health_ns + HEALTH_STEP_NS);
		if (c->cn_backoff_ms != m->m_cfg.failover.reconnect_min_ms)
			t = ry__min64(t,
				      c->cn_active_ns + BACKOFF_RESET_NS + 1);
		break;
	default:
		return 0;
	}
	if (t == UINT64_MAX)
		return 0;
	return t > now ? t : now + 1; /* due now: the next tick */
}

void ry__conn_timer(struct ry__conn *c, uint64_t now)
{
	struct ry_manager *m = c->cn_lrail->lr_mgr;
	uint64_t t = conn_due(c, now);

	if (!t)
		ry__heap_del(&m->m_ctimers, &c->cn_tnode);
	else if (ry__heap_set(&m->m_ctimers, &c->cn_tnode, t))
		RY_ERR("mgr", "peer %s rail %s: no memory for a timer",
		       c->cn_peer->pr_name, c->cn_lrail->lr_cfg.name);
	c->cn_timer_at = ry__heap_linked(&c->cn_tnode) ? c->cn_tnode.at : 0;
}

/* From the context path too (ry__conn_post): the heap is the manager's,
 * so a change to it takes m_timer_lock; the common case, a timer that is
 * that early already, reads only the connection's own cn_timer_at. */
void ry__conn_timer_by(struct ry__conn *c, uint64_t at)
{
	struct ry_manager *m = c->cn_lrail->lr_mgr;

	if (c->cn_timer_at && c->cn_timer_at <= at)
		return;
	pthread_mutex_lock(&m->m_timer_lock);
	if (ry__heap_set(&m->m_ctimers, &c->cn_tnode, at))
		RY_ERR("mgr", "peer %s rail %s: no memory for a timer",
		       c->cn_peer->pr_name, c->cn_lrail->lr_cfg.name);
	else
		c->cn_timer_at = at;
	pthread_mutex_unlock(&m->m_timer_lock);
}

void ry__conn_timer_stop(struct ry__conn *c)
{
	ry__heap_del(&c->cn_lrail->lr_mgr->m_ctimers, &c->cn_tnode);
	c->cn_timer_at = 0;
}

void ry__peer_timer(struct ry_peer *p)
{
	struct ry_manager *m = p->pr_mgr;

	/* pr_timed, not the link: another context's peer joining after this
	 * one writes this one's link (LOCKING: Contexts) */
	if (p->pr_timed)
		return;
	pthread_mutex_lock(&m->m_timer_lock);
	ry__list_add_tail(&m->m_tpeers, &p->pr_tlink);
	pthread_mutex_unlock(&m->m_timer_lock);
	p->pr_timed = true;
}

void ry__timers_reset(struct ry_manager *m, uint64_t now)
{
	struct ry_peer *p;
	unsigned i;

	for (p = m->m_peers; p; p = p->pr_next)
		for (i = 0; i < m->m_nrails; i++)
			ry__conn_timer(p->pr_conn[i], now);
}
