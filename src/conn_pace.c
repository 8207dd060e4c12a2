// SPDX-License-Identifier: BSD-2-Clause
/*
 * When a connection tries again: the back-off after a failure, a refusal
 * or an unanswered attempt, and the rail's gate on attempts in flight.
 * conn.c makes every change of state; it asks here when, and moves the
 * connection to BACKOFF until then.
 *
 * Reconnecting.  After a failure the path is tried again every
 * reconnect_min_ms while the local link is up, so a repaired path (a switch
 * port back, a one-way fault gone) carries traffic again within about that
 * interval plus one probe.  Only a connection that fails again within
 * RY__FLAP_NS of coming up backs off exponentially up to reconnect_max_ms
 * (flap damping).  A failed attempt (PROBING, never ACTIVE) posted nothing
 * but its probe, so no operation waits on it: it is neither fenced nor
 * counted as a failover, and raises no event (conn.c).  Two exceptions keep a
 * server with thousands of peers calm: a node whose own link of the rail is
 * down refuses attempts with -ENETDOWN, and the peer then waits about
 * reconnect_max_ms, because the node connects every connection of that
 * rail itself at its link-up event; and a rail starts at most
 * RY__CONNECTS_MAX attempts at once, the rest paced (ry__conn_gate_wait),
 * keeping some of them for connections with work waiting.  A peer that
 * keeps its control session but never answers a CONN_REQ is asked again
 * after a back-off that doubles with each unanswered attempt
 * (cn_unanswered), so a few hundred hung nodes cannot hold a rail's
 * attempts; a refusal for want of attempts (-EBUSY) says when to ask
 * again (retry-after, ry__conn_gate_retry_ms).
 */
#include <errno.h>
#include <stdio.h>

#include "src/conn.h"
#include "src/lrail.h"
#include "src/manager.h"
#include "src/peer.h"

/*
 * Operations wait for c's peer, or the application holds it, or the peer
 * said it has work for us (RY__CONN_F_WORK, within reconnect_max_ms x 2:
 * a client that asked while our link was down is connected first when it
 * comes back): its connections come first when attempts are scarce (the
 * cold lock).
 */
bool ry__conn_work(const struct ry__conn *c, uint64_t now)
{
	const struct ry_peer *p = c->cn_peer;

	return !ry__list_empty(&p->pr_ops) || p->pr_app_refs ||
	       (c->cn_work_ns &&
		ry__since(now, c->cn_work_ns) <
		    2000000ull * p->pr_mgr->m_cfg.failover.reconnect_max_ms);
}

/* now plus a half to one and a half times ns: waits that spread out */
uint64_t ry__conn_jittered(uint64_t now, uint64_t ns)
{
	return now + ns / 2 + ry__rand64() % (ns + 1);
}

/*
 * The back-off after n attempts in a row that the peer never answered
 * (neither REP nor REJ within m_connect_ns): reconnect_min_ms doubled n
 * times, up to reconnect_max_ms; with work waiting at most 4 x
 * reconnect_min_ms, as the control channel's redial (peer.c).
 */
static uint64_t unanswered_ms(const struct ry__conn *c, uint64_t now)
{
	const struct ry_failover_config *f =
	    &c->cn_lrail->lr_mgr->m_cfg.failover;
	uint64_t ms = (uint64_t)f->reconnect_min_ms
		      << (c->cn_unanswered < 16 ? c->cn_unanswered : 16);
	uint64_t cap = f->reconnect_max_ms;

	if (ry__conn_work(c, now) && cap > 4ull * f->reconnect_min_ms)
		cap = 4ull * f->reconnect_min_ms;
	if (ms > cap)
		ms = cap;
	return ms > f->reconnect_min_ms ? ms : f->reconnect_min_ms;
}

uint64_t ry__conn_backoff_at(struct ry__conn *c, uint64_t now)
{
	const struct ry_failover_config *f =
	    &c->cn_lrail->lr_mgr->m_cfg.failover;
	uint64_t ns, at;

	if (!c->cn_damp)
		c->cn_backoff_ms = f->reconnect_min_ms;
	ns = (uint64_t)c->cn_backoff_ms * 1000000ull;
	if (c->cn_unanswered && !c->cn_damp) {
		/* a peer that does not answer: hung peers spread out */
		at = ry__conn_jittered(now, unanswered_ms(c, now) * 1000000ull);
	} else if (c->cn_damp) {
		at = ry__conn_jittered(now, ns);
		c->cn_backoff_ms = (uint32_t)ry__min64(
		    (uint64_t)c->cn_backoff_ms * 2, f->reconnect_max_ms);
	} else {
		/* a little jitter, so both ends do not always collide */
		at = now + ns - ns / 4 + ry__rand64() % (ns / 4 + 1);
	}
	return at;
}

/*
 * A rail with RY__CONNECTS_MAX attempts in flight starts no more: the rest
 * wait their turn, one every RY__CONNECT_GAP_NS (10,000 a second), each
 * given its own time once (lr_next_start_ns), not polled.  When a rail
 * comes back under 10,000 peers, or they all return at once, the node
 * keeps a bounded amount of handshake work per round instead of creating
 * every QP and sending every request in one pass, which starved its own
 * ACKs and turned one replug into minutes of retries and refails.
 * Attempts the peers start are refused with -EBUSY over the limit
 * (ry__conn_on_req): they try again after reconnect_min_ms.
 */
#define RY__CONNECTS_MAX 256
#define RY__CONNECT_GAP_NS 100000ull
/*
 * Of those, RY__CONNECTS_WORK are kept for connections with work waiting
 * (ours: ry__conn_work; a peer's: RY__CONN_F_WORK in its CONN_REQ): a client
 * with I/O to do is not queued behind thousands of idle nodes.  One of
 * ours that finds even those taken looks again every
 * RY__CONNECT_WORK_WAIT_NS, not at the end of the idle ones' paced turns.
 */
#define RY__CONNECTS_WORK 32
#define RY__CONNECT_WORK_WAIT_NS 1000000ull

unsigned ry__conn_gate_room(bool work)
{
	return work ? RY__CONNECTS_MAX : RY__CONNECTS_MAX - RY__CONNECTS_WORK;
}

uint64_t ry__conn_gate_wait(struct ry__conn *c, uint64_t now)
{
	struct ry__lrail *lr = c->cn_lrail;
	bool work = ry__conn_work(c, now);

	if (lr->lr_connecting < ry__conn_gate_room(work))
		return 0;
	if (work)
		return now + RY__CONNECT_WORK_WAIT_NS;
	lr->lr_next_start_ns =
	    ry__max64(lr->lr_next_start_ns, now) + RY__CONNECT_GAP_NS;
	return lr->lr_next_start_ns;
}

/*
 * The retry-after a refusal for want of attempts gives (ms): a feedback on
 * the rail's gate, updated at most every 100 ms from the refusals and the
 * attempts that ended since.  More peers refused than served: the
 * refused wait longer (at most twice as long per update); fewer than half:
 * half as long; between reconnect_min_ms and reconnect_max_ms, starting at
 * 5 x reconnect_min_ms (they come back after a half to one and a half
 * times it).  So the askers spread over about the time the gate needs to
 * serve them, instead of asking again all together.  One with work
 * waiting asks again after reconnect_min_ms.
 */
uint32_t ry__conn_gate_retry_ms(struct ry__lrail *lr, bool work, uint64_t now)
{
	const struct ry_failover_config *f = &lr->lr_mgr->m_cfg.failover;
	uint64_t ms = lr->lr_gate_retry_ms;

	lr->lr_gate_refused++;
	if (work)
		return f->reconnect_min_ms;
	if (!ms || ry__since(now, lr->lr_gate_win_ns) > 1000000000ull) {
		/* the first refusal after a quiet second: start afresh */
		ms = 5ull * f->reconnect_min_ms;
		lr->lr_gate_win_ns = now;
		lr->lr_gate_refused = 1;
		lr->lr_gate_done = 0;
	} else if (ry__since(now, lr->lr_gate_win_ns) >= 100000000ull) {
		uint64_t r = lr->lr_gate_refused, d = lr->lr_gate_done;

		if (r > 2 * d)
			ms *= 2;
		else if (r > d)
			ms = ms * r / d;
		else if (2 * r < d)
			ms /= 2;
		lr->lr_gate_win_ns = now;
		lr->lr_gate_refused = 0;
		lr->lr_gate_done = 0;
	}
	ms = ry__max64(ms, f->reconnect_min_ms);
	ms = ry__min64(ms, f->reconnect_max_ms);
	lr->lr_gate_retry_ms = (uint32_t)ms;
	return (uint32_t)ms;
}

/*
 * A CONN_REQ of c refused, and c in BACKOFF: when to ask again, and the
 * reason shown meanwhile.  -ENETDOWN: the peer's link of that rail is down, and
 * the peer connects every connection of it as soon as it is back (its link-up
 * event): ask again only after about reconnect_max_ms, in case that attempt is
 * lost.  -EBUSY: the peer has as many attempts in flight on that rail as it
 * takes (thousands of nodes came back at once): ask again
 * after a half to one and a half times its retry-after (at
 * most reconnect_max_ms: it is only a hint), or, from a peer
 * that gives none, within ten reconnect_min_ms; spread, not
 * all at the next.
 */
void ry__conn_refused_wait(struct ry__conn *c, int err, uint32_t retry_ms,
			   uint64_t now)
{
	const struct ry_failover_config *f =
	    &c->cn_lrail->lr_mgr->m_cfg.failover;
	uint64_t ns;

	if (err == -ENETDOWN) {
		ns = (uint64_t)f->reconnect_max_ms * 1000000ull;
		snprintf(c->cn_reason, sizeof(c->cn_reason),
			 "the peer's link is down");
		c->cn_deadline_ns = ry__conn_jittered(now, ns);
	} else if (retry_ms) {
		ns = ry__min64(retry_ms, f->reconnect_max_ms) * 1000000ull;
		snprintf(c->cn_reason, sizeof(c->cn_reason),
			 "the peer is busy connecting others "
			 "(retry after %u ms)",
			 retry_ms);
		c->cn_deadline_ns = ry__conn_jittered(now, ns);
	} else {
		ns = (uint64_t)f->reconnect_min_ms * 1000000ull;
		snprintf(c->cn_reason, sizeof(c->cn_reason),
			 "the peer is busy connecting others");
		c->cn_deadline_ns = now + ns + ry__rand64() % (10 * ns + 1);
	}
}
