// SPDX-License-Identifier: BSD-2-Clause
/*
 * Progress contexts (LOCKING: Contexts): the cold lock, which takes every
 * context's lock and hands what the context paths left to their handlers,
 * and the context path itself, a context's CQs and striping under its own
 * lock alone.  A thread's marks (which context it holds, which it last
 * posted to) are ctx_mark.c's.
 *
 * The lock order and ownership rules are in src/manager.h (LOCKING).
 */
#include "src/conn.h"
#include "src/control.h"
#include "src/lrail.h"
#include "src/manager.h"
#include "src/msg.h"
#include "src/op.h"
#include "src/peer.h"
#include "src/pool.h"
#include "src/progress.h"
#include "src/tunables.h"

/*
 * A completion the context path may handle under cx_lock alone: a
 * successful fragment or message WR of one of cx's peers, on a connection
 * that is ACTIVE, not part of a replay.  Everything else (errors,
 * receives, heartbeats, probes, replayed work, draining connections)
 * touches state beyond the context and waits for the cold round.  The WR
 * is read before knowing it is cx's: it is not written by anyone until its
 * completion is handled, which is now.
 */
static bool hot_wc(const struct ry__ctx *cx, const struct ry_wc *wc)
{
	const struct ry__wr *w;
	const struct ry__conn *c;

	if (wc->status != RY_WC_SUCCESS || wc->opcode == RY_WC_RECV ||
	    wc->opcode == RY_WC_RECV_RDMA_IMM)
		return false;
	w = (const struct ry__wr *)(uintptr_t)wc->wr_id;
	c = w->wr_conn;
	if (c->cn_peer->pr_ctx != cx || c->cn_state != CONN_ACTIVE ||
	    w->wr_replay)
		return false;
	return w->wr_kind == WRK_FRAG ||
	       (w->wr_kind == WRK_MSG && !w->wr_op->op_replayed);
}

/* The cold lock held: the WRs of cx's failed posts (stripe.c, unpost):
 * the connection fails, the WRs complete FLUSHED, as a post that fails
 * under the cold lock does at once. */
static void unposted(struct ry_manager *m, struct ry__ctx *cx, uint64_t now)
{
	struct ry_wc wc = {.status = RY_WC_FLUSHED};
	struct ry__conn *c;

	while ((c = cx->cx_pfail)) {
		cx->cx_pfail = c->cn_pfnext;
		RY_ERR("mgr", "qp 0x%x: post_send: %d", c->cn_qp->qp_num,
		       c->cn_post_err);
		c->cn_post_err = 0;
		ry__conn_mark_failed(c, "post_send failed", now);
		while (!ry__list_empty(&c->cn_unposted)) {
			struct ry__wr *w = ry__list_first_entry(
			    &c->cn_unposted, struct ry__wr, wr_link);

			/* ry__wr_complete unlinks it */
			ry__wr_complete(m, w, &wc, now);
		}
	}
}

/* The cold lock held: hand over what the context paths left, in order. */
static void cold_drain(struct ry_manager *m)
{
	uint64_t now = 0;

	for (unsigned i = 0; i < m->m_nctx; i++) {
		struct ry__ctx *cx = &m->m_ctx[i];
		unsigned k;

		if (!cx->cx_nstash && !cx->cx_pfail)
			continue;
		if (!now)
			now = ry__now_ns();
		for (k = 0; k < cx->cx_nstash; k++) {
			struct ry__stash *st = &cx->cx_stash[k];

			if (st->st_wc.opcode == RY_WC_RECV ||
			    st->st_wc.opcode == RY_WC_RECV_RDMA_IMM)
				ry__on_recv(st->st_lr, &st->st_wc, now);
			else
				ry__wr_complete(
				    m,
				    (struct ry__wr *)(uintptr_t)st->st_wc.wr_id,
				    &st->st_wc, now);
		}
		cx->cx_nstash = 0;
		unposted(m, cx, now);
	}
}

void ry__lock_and_run_leftovers(struct ry_manager *m)
{
	pthread_mutex_lock(&m->m_lock);
	/* the context paths wait at the gate (ry__ctx_gate) until we have
	 * their locks: a mutex is not fair, and a thread that posts in a
	 * loop would retake its context's lock ahead of us for hundreds of
	 * microseconds */
	atomic_fetch_add_explicit(&m->m_cold_want, 1, memory_order_relaxed);
	for (unsigned i = 0; i < m->m_nctx; i++)
		pthread_mutex_lock(&m->m_ctx[i].cx_lock);
	atomic_fetch_sub_explicit(&m->m_cold_want, 1, memory_order_relaxed);
	cold_drain(m);
}

void ry__unlock(struct ry_manager *m)
{
	for (unsigned i = m->m_nctx; i-- > 0;)
		pthread_mutex_unlock(&m->m_ctx[i].cx_lock);
	pthread_mutex_unlock(&m->m_lock);
}

/* cx_lock held: cx's completions on lr, until one the context path may
 * not handle (it and the rest of the batch wait in cx_stash). */
static void ctx_poll(struct ry_manager *m, struct ry__ctx *cx,
		     struct ry__lrail *lr, uint64_t now)
{
	struct ry_cq *cq = lr->lr_cq[cx->cx_idx];
	struct ry_wc wc[RY__STASH];
	int n, i, rounds = 0;

	if (!cq)
		return; /* on the rail's own CQ: the cold round's */
	do {
		if (ry__lrail_free_qps(lr)) {
			n = ry__rail_cq_poll(cq, wc, RY__STASH);
		} else {
			pthread_mutex_lock(&lr->lr_lock);
			n = ry__rail_cq_poll(cq, wc, RY__STASH);
			pthread_mutex_unlock(&lr->lr_lock);
		}
		for (i = 0; i < n; i++) {
			if (!hot_wc(cx, &wc[i])) {
				for (; i < n; i++) {
					struct ry__stash *st =
					    &cx->cx_stash[cx->cx_nstash++];

					st->st_lr = lr;
					st->st_wc = wc[i];
				}
				atomic_store_explicit(&m->m_cold_due, true,
						      memory_order_relaxed);
				return;
			}
			ry__wr_complete(m,
					(struct ry__wr *)(uintptr_t)wc[i].wr_id,
					&wc[i], now);
		}
	} while (n == RY__STASH && ++rounds < 64);
}

/*
 * The context path: cx's completions on the given rails, then its dirty
 * peers' striping, under cx_lock alone (try: not if another thread holds
 * it).  True if it queued callbacks.
 */
bool ry__ctx_round(struct ry_manager *m, struct ry__ctx *cx,
		   struct ry__lrail *const *rails, unsigned nr, uint64_t now,
		   bool try)
{
	struct ry_peer *p;
	bool queued = false;
	unsigned i;

	ry__ctx_gate(m);
	if (try ? pthread_mutex_trylock(&cx->cx_lock) != 0
		: pthread_mutex_lock(&cx->cx_lock) != 0)
		return false;
	ry__tl_hot = cx;
	for (i = 0; i < nr && !cx->cx_nstash; i++)
		if (ry__lrail_live(rails[i]))
			ctx_poll(m, cx, rails[i], now);
	while ((p = cx->cx_dirty)) {
		cx->cx_dirty = p->pr_dnext;
		p->pr_dirty = false;
		ry__stripe(p);
	}
	if (cx->cx_done_head) {
		ry__deliver_queue_ctx(cx);
		queued = true;
	}
	ry__tl_hot = NULL;
	pthread_mutex_unlock(&cx->cx_lock);
	return queued;
}
