// SPDX-License-Identifier: BSD-2-Clause
/*
 * Progress: ry_progress() (manual and threaded run the same one) and the
 * progress thread; each rail's events (link up and down, QP fatal) and its
 * completion queue; the completion of a work request, whose success path
 * is here and whose error path is replay's (ry__wr_failed); and delivery:
 * completions, messages and events are queued under the cold lock (or a
 * context's) and handed to the application's callbacks only after it is
 * dropped, so a callback may call back into the manager.
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

#include "src/manager.h"

static void drain_fd(int fd)
{
	uint64_t v;

	if (read(fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		RY_DBG("mgr", "read fd %d: %m", fd);
}

/* ---- delivery ---- */

_Thread_local struct ry__ctx *ry__tl_hot;
/* the context this thread last posted to (ry__ctx_note), by manager and
 * index: a pointer could outlive its manager */
static _Thread_local struct ry_manager *tl_aff_m;
static _Thread_local unsigned tl_aff_idx;

void ry__ctx_note(struct ry__ctx *cx)
{
	tl_aff_m = cx->cx_mgr;
	tl_aff_idx = cx->cx_idx;
}

static struct ry__delivery *dv_new(struct ry_manager *m, size_t extra)
{
	struct ry__delivery *dv = calloc(1, sizeof(*dv) + extra);

	if (!dv)
		return NULL;
	ry__sq_push_tail(m->m_dv_head, m->m_dv_tail, dv, dv_next);
	return dv;
}

struct ry_event *ry__queue_event(struct ry_manager *m, enum ry_event_type t,
				 struct ry__lrail *lr, struct ry_peer *p,
				 const char *reason, uint64_t time_ns)
{
	struct ry__delivery *dv;

	if (m->m_closing)
		return NULL;
	dv = dv_new(m, 0);
	if (!dv)
		return NULL;
	dv->dv_kind = 1;
	snprintf(dv->dv_rail, sizeof(dv->dv_rail), "%s",
		 lr ? lr->lr_cfg.name : "");
	if (p)
		snprintf(dv->dv_peer_name, sizeof(dv->dv_peer_name), "%s",
			 p->pr_name);
	snprintf(dv->dv_reason, sizeof(dv->dv_reason), "%s", reason);
	dv->dv_ev.type = t;
	dv->dv_ev.time_ns = time_ns;
	/* an event names the peer, it does not hand out the record: one
	 * learned from a HELLO stays disposable (manager.h, OWNERSHIP) */
	return &dv->dv_ev;
}

void ry__queue_message(struct ry_manager *m, struct ry_peer *p,
		       enum ry_msg_type t, const void *data, size_t len,
		       uint64_t notify)
{
	struct ry__delivery *dv = dv_new(m, len);

	if (!dv) {
		RY_ERR("mgr", "peer %s: message dropped: out of memory",
		       p->pr_name);
		return;
	}
	dv->dv_kind = 0;
	dv->dv_peer = p;
	p->pr_app_refs++; /* until the callback returns: run_callbacks() */
	dv->dv_msg.type = t;
	dv->dv_msg.len = len;
	dv->dv_msg.notify = notify;
	memcpy(dv->dv_data, data, len);
	dv->dv_msg.data = dv->dv_data;
}

/* Run one batch of callbacks; the caller holds m_deliver_lock. */
static int run_callbacks(struct ry_manager *m, struct ry__op *done,
			 struct ry__delivery *dv)
{
	struct ry_completion cpl;
	struct ry__op *op, *first = done;
	struct ry__delivery *d;
	bool msgs = false;
	ry_recv_fn rfn;
	ry_event_fn efn;
	void *rarg, *earg;
	int n = 0;

	for (op = done; op; op = op->op_q_next) {
		ry__op_fill(&cpl, op);
		op->op_cb(&cpl, op->op_ctx);
		n++;
	}
	/* back to their contexts' pools, one lock per run of a context */
	while (first) {
		struct ry__ctx *cx = first->op_cx;

		pthread_mutex_lock(&cx->cx_lock);
		while ((op = first) && op->op_cx == cx) {
			first = op->op_q_next;
			ry__op_release(m, op);
		}
		pthread_mutex_unlock(&cx->cx_lock);
	}
	if (!dv)
		return n;
	pthread_mutex_lock(&m->m_cb_lock);
	rfn = m->m_recv_fn;
	rarg = m->m_recv_arg;
	efn = m->m_event_fn;
	earg = m->m_event_arg;
	pthread_mutex_unlock(&m->m_cb_lock);
	for (d = dv; d; d = d->dv_next) {
		if (d->dv_kind == 0 && rfn) {
			rfn(d->dv_peer, &d->dv_msg, rarg);
			n++;
		} else if (d->dv_kind == 1 && efn) {
			d->dv_ev.rail = d->dv_rail;
			d->dv_ev.peer =
			    d->dv_peer_name[0] ? d->dv_peer_name : NULL;
			d->dv_ev.reason = d->dv_reason;
			efn(&d->dv_ev, earg);
		}
		msgs |= d->dv_kind == 0;
	}
	/* the messages' senders are the application's no longer (unless it
	 * held them): one cold lock for the batch */
	if (msgs)
		ry__lock(m);
	while ((d = dv)) {
		dv = d->dv_next;
		if (d->dv_kind == 0)
			ry__peer_unref(d->dv_peer);
		free(d);
	}
	if (msgs)
		ry__unlock(m);
	return n;
}

/*
 * The lock held while cx's completion callbacks run: the manager's (with
 * its messages and events) while it has one context, so that no two of
 * its callbacks ever run at once; with several, each context's own
 * (LOCKING: Contexts).
 */
static pthread_mutex_t *dlock(struct ry_manager *m, struct ry__ctx *cx)
{
	return m->m_nctx > 1 ? &cx->cx_dl : &m->m_deliver_lock;
}

/* cx_lock or the cold lock held: cx's completed ops to the end of its
 * callback queue. */
static void dq_add_ctx(struct ry__ctx *cx)
{
	if (!cx->cx_done_head)
		return;
	pthread_mutex_lock(&cx->cx_dq_lock);
	if (cx->cx_dq_tail)
		cx->cx_dq_tail->op_q_next = cx->cx_done_head;
	else
		cx->cx_dq_head = cx->cx_done_head;
	cx->cx_dq_tail = cx->cx_done_tail;
	atomic_store_explicit(&cx->cx_dq_any, true, memory_order_relaxed);
	pthread_mutex_unlock(&cx->cx_dq_lock);
	ry__sq_init(cx->cx_done_head, cx->cx_done_tail);
}

/*
 * The cold lock held: move what this round queued for the application
 * (every context's cx_done, m_dv) to the end of the callback queues, in
 * order.  True if it moved anything.
 */
bool ry__deliver_queue(struct ry_manager *m)
{
	bool any = m->m_dv_head;
	unsigned i;

	for (i = 0; i < m->m_nctx; i++) {
		any |= m->m_ctx[i].cx_done_head != NULL;
		dq_add_ctx(&m->m_ctx[i]);
	}
	if (!m->m_dv_head)
		return any;
	pthread_mutex_lock(&m->m_dq_lock);
	if (m->m_dq_dv_tail)
		m->m_dq_dv_tail->dv_next = m->m_dv_head;
	else
		m->m_dq_dv_head = m->m_dv_head;
	m->m_dq_dv_tail = m->m_dv_tail;
	atomic_store_explicit(&m->m_dq_dv_any, true, memory_order_relaxed);
	pthread_mutex_unlock(&m->m_dq_lock);
	ry__sq_init(m->m_dv_head, m->m_dv_tail);
	return true;
}

/* The queues' flags are set under their locks after the queue is, so a
 * false one may only be a moment late: whoever queued delivers after. */
static bool dq_any_ctx(struct ry__ctx *cx)
{
	return atomic_load_explicit(&cx->cx_dq_any, memory_order_relaxed);
}

static bool dq_any_dv(struct ry_manager *m)
{
	return atomic_load_explicit(&m->m_dq_dv_any, memory_order_relaxed);
}

static struct ry__op *dq_take_ctx(struct ry__ctx *cx)
{
	struct ry__op *op;

	if (!dq_any_ctx(cx))
		return NULL;
	pthread_mutex_lock(&cx->cx_dq_lock);
	op = cx->cx_dq_head;
	ry__sq_init(cx->cx_dq_head, cx->cx_dq_tail);
	atomic_store_explicit(&cx->cx_dq_any, false, memory_order_relaxed);
	pthread_mutex_unlock(&cx->cx_dq_lock);
	return op;
}

static struct ry__delivery *dq_take_dv(struct ry_manager *m)
{
	struct ry__delivery *dv;

	if (!dq_any_dv(m))
		return NULL;
	pthread_mutex_lock(&m->m_dq_lock);
	dv = m->m_dq_dv_head;
	ry__sq_init(m->m_dq_dv_head, m->m_dq_dv_tail);
	atomic_store_explicit(&m->m_dq_dv_any, false, memory_order_relaxed);
	pthread_mutex_unlock(&m->m_dq_lock);
	return dv;
}

/* The manager whose callbacks this thread is running, and whether a post
 * from one of them left its kick for the end of the batch. */
static _Thread_local struct ry_manager *tl_delivering;
static _Thread_local bool tl_kick_due;

/*
 * Applications post the next operation from the completion callback of
 * the last.  Kicked one by one, each of a batch of completions' reposts
 * went to the wire alone: a sendmmsg (and a wake-up of the receiver) per
 * operation.  Kicked once after the batch, they share them; a post still
 * leaves without waiting for a progress tick.  Only small operations: a
 * large one fills send batches by itself, and deferring its kick only
 * ran the rail less often (1 MiB writes at MTU 9000: 13 % less).
 */
void ry__kick_post(struct ry_manager *m, uint64_t bytes)
{
	if (tl_delivering == m && bytes < RY__KICK_BATCH_BYTES) {
		tl_kick_due = true;
		return;
	}
	ry__kick(m);
}

/* The deliver lock held: cx's completions (cx NULL: none) and with dv
 * the messages and events, until their queues are empty. */
static int run_held(struct ry_manager *m, struct ry__ctx *cx, bool with_dv)
{
	int n = 0;

	for (;;) {
		struct ry__op *done = cx ? dq_take_ctx(cx) : NULL;
		struct ry__delivery *dv = with_dv ? dq_take_dv(m) : NULL;

		if (!done && !dv)
			return n;
		n += run_callbacks(m, done, dv);
	}
}

/*
 * Run the application's callbacks; called without the cold lock.  One
 * thread at a time runs those behind one deliver lock (dlock(): the
 * manager's, or with several contexts each context's, and the manager's
 * for messages and events), in the order they were queued (LOCKING); a
 * thread that finds one held leaves that share to its holder.  After
 * letting go, look again: work queued by a thread that found the lock
 * held while we were finishing would otherwise wait for the next call.
 * This thread's own context first.
 */
int ry__deliver(struct ry_manager *m)
{
	/* a callback may progress another manager: its deferred kick is
	 * that manager's, ours waits for the end of our batch */
	struct ry_manager *outer = tl_delivering;
	bool outer_due = tl_kick_due;
	unsigned first =
	    tl_aff_m == m && tl_aff_idx < m->m_nctx ? tl_aff_idx : 0;
	int n = 0;

	for (;;) {
		bool more = false;

		for (unsigned k = 0; k <= m->m_nctx; k++) {
			struct ry__ctx *cx = NULL;
			pthread_mutex_t *l = &m->m_deliver_lock;
			bool dv = true;

			if (k < m->m_nctx) {
				cx = &m->m_ctx[(first + k) % m->m_nctx];
				l = dlock(m, cx);
				dv = m->m_nctx == 1;
			} else if (m->m_nctx == 1) {
				break; /* the messages went with context 0 */
			}
			/* nothing queued: not even a look at its lock */
			if (!(cx && dq_any_ctx(cx)) && !(dv && dq_any_dv(m)))
				continue;
			if (pthread_mutex_trylock(l))
				continue;
			tl_delivering = m;
			tl_kick_due = false;
			n += run_held(m, cx, dv);
			tl_delivering = NULL;
			if (tl_kick_due)
				ry__kick(m);
			pthread_mutex_unlock(l);
			more |= (cx && dq_any_ctx(cx)) || (dv && dq_any_dv(m));
		}
		if (!more)
			break;
	}
	tl_delivering = outer;
	tl_kick_due = outer_due;
	return n;
}

void ry_set_recv_cb(struct ry_manager *m, ry_recv_fn fn, void *arg)
{
	if (!m)
		return;
	pthread_mutex_lock(&m->m_cb_lock);
	m->m_recv_fn = fn;
	m->m_recv_arg = arg;
	pthread_mutex_unlock(&m->m_cb_lock);
}

void ry_set_event_cb(struct ry_manager *m, ry_event_fn fn, void *arg)
{
	if (!m)
		return;
	pthread_mutex_lock(&m->m_cb_lock);
	m->m_event_fn = fn;
	m->m_event_arg = arg;
	pthread_mutex_unlock(&m->m_cb_lock);
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
			ry__rail_life_gone(lr, NULL); /* closed, reopened */
		if (lr->lr_link == RY_LINK_DOWN)
			break;
		lr->lr_link = RY_LINK_DOWN;
		RY_WARN("mgr", "rail %s: link down", lr->lr_cfg.name);
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
		RY_INFO("mgr", "rail %s: link up", lr->lr_cfg.name);
		for (p = m->m_peers; p; p = p->pr_next) {
			c = p->pr_conn[lr->lr_idx];
			if (c->cn_state == CONN_BACKOFF)
				c->cn_deadline_ns =
				    now + ry__rand64() % (m->m_tick_ns + 1);
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

/* The cold lock held: what lr's CQ for context k (or its own) holds. */
static void poll_cq(struct ry__lrail *lr, unsigned k, uint64_t now)
{
	struct ry_manager *m = lr->lr_mgr;
	struct ry_cq *cq = lr->lr_cq[k];
	struct ry_wc wc[64];
	int n, i, rounds = 0;

	do {
		pthread_mutex_lock(&lr->lr_lock);
		n = cq ? ry__rail_cq_poll(cq, wc, 64)
		       : ry__rail_poll_cq(lr->lr_rail, wc, 64);
		pthread_mutex_unlock(&lr->lr_lock);
		for (i = 0; i < n; i++) {
			if (wc[i].opcode == RY_WC_RECV ||
			    wc[i].opcode == RY_WC_RECV_RDMA_IMM)
				ry__on_recv(lr, &wc[i], now);
			else
				ry__wr_complete(
				    m, (struct ry__wr *)(uintptr_t)wc[i].wr_id,
				    &wc[i], now);
		}
	} while (n == 64 && ++rounds < 64);
}

void ry__poll_rail(struct ry__lrail *lr, uint64_t now)
{
	struct ry_manager *m = lr->lr_mgr;
	bool was = lr->lr_polling;

	lr->lr_polling = true;
	poll_cq(lr, 0, now);
	for (unsigned k = 1; k < m->m_nctx && lr->lr_cq[k]; k++)
		poll_cq(lr, k, now);
	lr->lr_polling = was;
}

static void wr_succeeded(struct ry__wr *w, uint64_t now)
{
	struct ry__conn *c = w->wr_conn;
	struct ry_peer *p = c->cn_peer;
	struct ry__op *op = w->wr_op;

	c->cn_last_ok_ns = now;
	switch (w->wr_kind) {
	case WRK_FRAG:
		c->cn_cnt.bytes += w->wr_bytes;
		c->cn_cnt.fragments += w->wr_n;
		ry__conn_drained(c, w->wr_bytes, now);
		if (p->pr_resume_from_ns &&
		    w->wr_post_ns >= p->pr_resume_from_ns &&
		    c->cn_state == CONN_ACTIVE) {
			struct ry_counters *rc = &p->pr_resume_conn->cn_cnt;
			uint64_t d = ry__since(now, p->pr_resume_from_ns);

			rc->resume_count++;
			rc->resume_ns_total += d;
			if (d > rc->resume_ns_max)
				rc->resume_ns_max = d;
			p->pr_resume_from_ns = 0;
		}
		if (w->wr_replay)
			ry__conn_resumed(w, now);
		ry__op_frags_done(op, w->wr_n);
		break;
	case WRK_MSG:
		c->cn_cnt.messages++;
		c->cn_cnt.bytes += w->wr_bytes;
		if (op->op_replayed)
			ry__conn_resumed(w, now);
		ry__op_msg_done(op);
		break;
	case WRK_HEARTBEAT:
		c->cn_hb_out = false;
		break;
	case WRK_PROBE:
		ry__conn_probed(c, now);
		break;
	case WRK_PMTU:
		ry__conn_probe_done(w, now);
		break;
	}
}

void ry__wr_complete(struct ry_manager *m, struct ry__wr *w,
		     const struct ry_wc *wc, uint64_t now)
{
	struct ry__conn *c = w->wr_conn;
	struct ry_peer *p = c->cn_peer;
	struct ry__op *op = w->wr_op;

	ry__list_del(&w->wr_link);
	c->cn_out_wrs--;
	c->cn_out_bytes -= w->wr_bytes;
	if (op)
		op->op_posted--;

	if (wc->status == RY_WC_SUCCESS)
		wr_succeeded(w, now);
	else
		ry__wr_failed(w, wc);
	ry__pool_put(&p->pr_ctx->cx_wr_pool, w);
	if (c->cn_state == CONN_DRAINING)
		ry__conn_drained_check(c, now);
	ry__peer_dirty(p);
}

/* ---- contexts (manager.h, LOCKING: Contexts) ---- */

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

/*
 * A post left work to the cold round (a failed post_send): with progress
 * threads the control thread runs it now rather than at its next tick;
 * self-driven, the next ry_progress() call (the wake fd is drained by it).
 */
void ry__cold_ask(struct ry_manager *m)
{
	static const uint64_t one = 1;

	atomic_store_explicit(&m->m_cold_due, true, memory_order_relaxed);
	if (write(m->m_wake_fd, &one, sizeof(one)) < 0)
		RY_DBG("mgr", "wake: %m");
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

void ry__lock(struct ry_manager *m)
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
static bool ctx_round(struct ry_manager *m, struct ry__ctx *cx,
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
		dq_add_ctx(cx);
		queued = true;
	}
	ry__tl_hot = NULL;
	pthread_mutex_unlock(&cx->cx_lock);
	return queued;
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
 * A rail's protocol work, under its own lock only; with ask, true when
 * the rail has completions or events for the manager (or cannot tell),
 * and *own whether its events or its own CQ do (which only the cold
 * round hands over: the contexts' CQs are the context path's).
 */
static bool rail_run(struct ry__lrail *lr, bool ask, bool *own)
{
	struct ry_manager *m = lr->lr_mgr;
	int pending = 0;

	*own = false;
	atomic_store_explicit(&lr->lr_kick, false, memory_order_relaxed);
	pthread_mutex_lock(&lr->lr_lock);
	/* a hole (reload.c, rail_life.c), or being opened or closed */
	if (!lr->lr_rail || lr->lr_life.rl_busy) {
		pthread_mutex_unlock(&lr->lr_lock);
		return false;
	}
	ry__rail_progress(lr->lr_rail);
	if (ask) {
		/* its events (and its own CQ), then ours; < 0: cannot tell */
		pending = ry__rail_pending(lr->lr_rail);
		*own = pending != 0;
		for (unsigned k = 0; !pending && k < m->m_nctx && lr->lr_cq[k];
		     k++)
			pending = ry__rail_cq_pending(lr->lr_cq[k]);
	}
	pthread_mutex_unlock(&lr->lr_lock);
	return pending != 0;
}

static bool rail_work(struct ry__lrail *lr)
{
	bool own;

	return rail_run(lr, true, &own);
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

	ry__rail_life_run(m, now);
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
			/* send now; what it completes is handed over by the
			 * next round (the rail's fd says so), so no need to
			 * ask */
			bool own;

			rail_run(lr, false, &own);
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
			break; /* the rails ran before (m_rail_epfd) */
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

/*
 * One round: the rails' protocol work (only rails without a thread of
 * their own: the others run on theirs), then under the cold lock the control
 * channel, the rails' completions and events, replay, timers and striping;
 * then the kick and the callbacks, without m_lock.
 */
static int progress_round(struct ry_manager *m, bool all)
{
	bool pending[RY_MAX_RAILS] = {0}, ready[RY_MAX_RAILS] = {0}, sweep;
	struct epoll_event evs[RY_MAX_RAILS];
	uint64_t now = ry__now_ns(), gap;
	unsigned i;
	int n;

	/*
	 * Only the rails with something to do: a readable fd (packets, a
	 * timer due, a completion waiting), a post since they last ran, or no
	 * way to tell; and every rail once a tick, in case.
	 */
	n = epoll_wait(m->m_rail_epfd, evs, RY_MAX_RAILS, 0);
	for (i = 0; n > 0 && i < (unsigned)n; i++)
		ready[((struct ry__lrail *)evs[i].data.ptr)->lr_idx] = true;
	sweep =
	    now >= atomic_load_explicit(&m->m_sweep_ns, memory_order_relaxed);
	if (sweep)
		atomic_store_explicit(&m->m_sweep_ns, now + m->m_tick_ns,
				      memory_order_relaxed);
	for (i = 0; i < m->m_nrails; i++) {
		struct ry__lrail *lr = &m->m_rails[i];

		if (!lr->lr_rt &&
		    (ready[i] || sweep || lr->lr_always ||
		     atomic_load_explicit(&lr->lr_kick, memory_order_relaxed)))
			pending[i] = rail_work(lr);
	}
	ry__lock(m);
	if (m->m_closing) {
		ry__unlock(m);
		return -ESHUTDOWN;
	}
	now = ry__now_ns();
	/* this round does what the context path left to it (ry__lock()
	 * handed over its completions): the next is due in a tick */
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
		    (ready[i] || lr->lr_always ||
		     atomic_load_explicit(&lr->lr_kick, memory_order_relaxed)))
			rail_run(lr, true, &own);
		own_any |= own;
	}
	if (tl_aff_m == m && tl_aff_idx < m->m_nctx)
		mine = &m->m_ctx[tl_aff_idx];
	if (mine)
		queued |= ctx_round(m, mine, rails, nr, now, false);
	if (!mine || !(++calls & 15))
		for (i = 0; i < m->m_nctx; i++)
			if (&m->m_ctx[i] != mine)
				queued |= ctx_round(m, &m->m_ctx[i], rails, nr,
						    now, true);
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
		n = progress_round(m, left);
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
	return progress_round(m, true);
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
	struct epoll_event ev;
	int ms = (int)(m->m_tick_ns / 1000000) + 1;

	while (!stopping(m)) {
		epoll_wait(m->m_epfd, &ev, 1, ms);
		progress_round(m, m->m_nctx == 1 || atomic_load_explicit(
							&m->m_cold_due,
							memory_order_relaxed));
	}
	return NULL;
}

#define WAKE_TAG 1 /* a rail thread's wake fd in its epoll set; rails: 0 */

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
	bool pending[RY_MAX_RAILS];
	uint64_t prev = 0;
	unsigned i;
	int n;

	for (i = 0; i < rt->rt_nrails; i++)
		if (ry__rail_fd(rt->rt_rails[i]->lr_rail) < 0)
			ms = 1;
	while (!stopping(m)) {
		bool any = false, again = false, own = false;
		uint64_t t = ry__now_ns();

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
		for (i = 0; i < rt->rt_nrails; i++) {
			bool o;

			any |= pending[i] = rail_run(rt->rt_rails[i], true, &o);
			own |= o;
		}
		if (any && m->m_nctx > 1 && !own) {
			/* only the contexts' CQs: each context under its own
			 * lock, the cold round only if that left it work */
			uint64_t now = ry__now_ns();
			bool queued = false;

			for (i = 0; i < m->m_nctx; i++)
				queued |=
				    ctx_round(m, &m->m_ctx[i], rt->rt_rails,
					      rt->rt_nrails, now, false);
			ry__kick(m);
			if (queued)
				ry__deliver(m);
			any = atomic_load_explicit(&m->m_cold_due,
						   memory_order_relaxed);
		}
		if (any) {
			uint64_t now = ry__now_ns();

			ry__lock(m);
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
	ry__lock(m);
	for (i = 0; i < m->m_nrt; i++) {
		struct ry__rthread *rt = &m->m_rt[i];

		for (k = 0; k < rt->rt_nrails; k++) {
			struct ry__lrail *lr = rt->rt_rails[k];
			int fd = ry__rail_fd(lr->lr_rail);

			lr->lr_rt = NULL;
			if (fd >= 0) {
				struct epoll_event ev = {.events = EPOLLIN,
							 .data.ptr = lr};

				epoll_ctl(m->m_rail_epfd, EPOLL_CTL_ADD, fd,
					  &ev);
			}
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
		struct epoll_event ev = {.events = EPOLLIN};
		int fd;

		if (!ry__lrail_live(lr))
			continue;
		rt = &m->m_rt[k++ % n];
		fd = ry__rail_fd(lr->lr_rail);
		rt->rt_rails[rt->rt_nrails++] = lr;
		lr->lr_rt = rt;
		if (fd >= 0) {
			epoll_ctl(m->m_rail_epfd, EPOLL_CTL_DEL, fd, NULL);
			if (epoll_ctl(rt->rt_epfd, EPOLL_CTL_ADD, fd, &ev))
				return -errno;
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
	ry__lock(m);
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
	ry__lock(m);
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
	ry__lock(m);
	m->m_thread_on = false;
	ry__unlock(m);
}
