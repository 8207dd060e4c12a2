// SPDX-License-Identifier: BSD-2-Clause
/*
 * Delivery: completions, messages and events are queued under the cold
 * lock (or a context's) and handed to the application's callbacks only
 * after it is dropped, so a callback may call back into the manager.
 *
 * The lock order and ownership rules are in src/manager.h (LOCKING).
 */
#include <stdlib.h>
#include <string.h>

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
		ry__lock_and_run_leftovers(m);
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
void ry__deliver_queue_ctx(struct ry__ctx *cx)
{
	if (!cx->cx_done_head)
		return;
	pthread_mutex_lock(&cx->cx_dq_lock);
	ry__sq_append(cx->cx_dq_head, cx->cx_dq_tail, cx->cx_done_head,
		      cx->cx_done_tail, op_q_next);
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
		ry__deliver_queue_ctx(&m->m_ctx[i]);
	}
	if (!m->m_dv_head)
		return any;
	pthread_mutex_lock(&m->m_dq_lock);
	ry__sq_append(m->m_dq_dv_head, m->m_dq_dv_tail, m->m_dv_head,
		      m->m_dv_tail, dv_next);
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
	unsigned first = ry__ctx_noted(m) < m->m_nctx ? ry__ctx_noted(m) : 0;
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
