// SPDX-License-Identifier: BSD-2-Clause
/*
 * Operations: the op state machine, timeouts, and completion; the
 * application posts them through post.c.
 *
 * A vectored op is cut into pieces (struct ry__seg) wherever its local or
 * remote list has a boundary; adjacent pieces are merged.  Its fragments
 * are numbered piece by piece and never cross a piece, so each WR is one
 * SGE and replay (fragment ranges) works as for any op; ry__op_span() maps
 * fragments to memory for the scheduler.
 *
 * Op state machine (enum ry__op_state):
 *
 *   WAITING  -> RUNNING   a slot among ops_in_flight frees up
 *   RUNNING  -> FENCING   all fragments done, some were replayed, and the
 *                         peer has not yet acknowledged the fence
 *   RUNNING|FENCING -> MESSAGE   a write's notification is queued
 *   (OP_SEND starts in MESSAGE)
 *   any      -> DONE      success, or failure once nothing is posted
 *
 * Whoever moves an op to DONE unlinks it from every peer list; it is then
 * on exactly one delivery list until the application has seen it, and is
 * freed by whoever delivers it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/manager.h"
#include "src/msg.h"
#include "src/op.h"
#include "src/peer.h"
#include "src/pool.h"
#include "src/progress.h"
#include "src/region.h"
#include "src/tunables.h"

static const char *const op_state_names[] = {
    [OPS_WAITING] = "waiting", [OPS_RUNNING] = "running",
    [OPS_FENCING] = "fencing", [OPS_MESSAGE] = "message",
    [OPS_DONE] = "done",
};

const char *ry__op_state_str(enum ry__op_state s)
{
	return (unsigned)s <= OPS_DONE ? op_state_names[s] : "?";
}

void ry__sched_push(struct ry_peer *p, struct ry__op *op)
{
	ry__sq_push_tail(p->pr_sched_head, p->pr_sched_tail, op, op_q_next);
	op->op_on_sched = true;
}

void ry__msgq_push(struct ry_peer *p, struct ry__op *op, bool head)
{
	if (head)
		ry__sq_push_head(p->pr_msgq_head, p->pr_msgq_tail, op,
				 op_q_next);
	else
		ry__sq_push_tail(p->pr_msgq_head, p->pr_msgq_tail, op,
				 op_q_next);
	op->op_on_msgq = true;
	ry__peer_dirty(p);
}

/* Unlink op from a singly linked queue through op_q_next. */
static void q_remove(struct ry__op **head, struct ry__op **tail,
		     struct ry__op *op)
{
	struct ry__op *prev = NULL, *o;

	for (o = *head; o; prev = o, o = o->op_q_next) {
		if (o != op)
			continue;
		if (prev)
			prev->op_q_next = o->op_q_next;
		else
			*head = o->op_q_next;
		if (*tail == o)
			*tail = prev;
		return;
	}
}

static void start(struct ry_peer *p, struct ry__op *op, uint64_t now)
{
	p->pr_inflight++;
	op->op_wait_ns = op->op_post_ns = now;
	if (op->op_type == OP_SEND) {
		op->op_state = OPS_MESSAGE;
		ry__msgq_push(p, op, false);
	} else {
		op->op_state = OPS_RUNNING;
		ry__sched_push(p, op);
	}
	ry__peer_dirty(p);
}

static void complete(struct ry__op *op)
{
	struct ry_peer *p = op->op_peer;
	struct ry_manager *m = p->pr_mgr;
	uint64_t now = 0; /* read once, when needed */

	ry__list_del(&op->op_all);
	if (op->op_state != OPS_WAITING)
		p->pr_inflight--;
	op->op_state = OPS_DONE;
	if (op->op_region)
		op->op_region->rg_users--;
	for (uint32_t i = 0; i < op->op_nsegs; i++)
		op->op_segs[i].sg_mr->rg_users--;
	if (op->op_seq)
		ry__tx_seq_done(p, op->op_seq);
	if (op->op_slot != ~0u) {
		ry__slot_put(m, op->op_slot);
		op->op_slot = ~0u;
	}
	if (op->op_status == RY_OK) {
		now = ry__now_ns();
		op->op_reason[0] = 0;
		ry__lat_add(&p->pr_lat[op->op_type], ry__lat_le_ns,
			    ry__since(now, op->op_post_ns));
	}
	if (op->op_cb)
		ry__sq_push_tail(op->op_cx->cx_done_head,
				 op->op_cx->cx_done_tail, op, op_q_next);
	else
		ry__sq_push_tail(op->op_cx->cx_poll_head,
				 op->op_cx->cx_poll_tail, op, op_q_next);
	while (p->pr_inflight < m->m_cfg.ops_in_flight && p->pr_waitq_head) {
		struct ry__op *w = p->pr_waitq_head;

		ry__sq_pop_head(p->pr_waitq_head, p->pr_waitq_tail, op_q_next);
		if (!now)
			now = ry__now_ns();
		start(p, w, now);
	}
}

static void after_frags(struct ry__op *op)
{
	if (op->op_notify && op->op_status == RY_OK) {
		op->op_state = OPS_MESSAGE;
		ry__msg_prepare(op, MT_NOTIFY, NULL, 0);
		ry__msgq_push(op->op_peer, op, false);
		return;
	}
	complete(op);
}

void ry__op_check(struct ry__op *op)
{
	switch (op->op_state) {
	case OPS_WAITING:
		if (op->op_status != RY_OK)
			complete(op);
		return;
	case OPS_RUNNING:
		if (op->op_done_frags < op->op_nfrags || op->op_posted)
			return;
		if (op->op_status != RY_OK) {
			complete(op);
			return;
		}
		if (ry__fence_pending(op)) {
			op->op_state = OPS_FENCING;
			op->op_wait_ns = ry__now_ns();
			return;
		}
		after_frags(op);
		return;
	case OPS_FENCING:
		if (op->op_status != RY_OK)
			complete(op);
		else if (!ry__fence_pending(op))
			after_frags(op);
		return;
	case OPS_MESSAGE:
		if (op->op_status != RY_OK && !op->op_posted && !op->op_on_msgq)
			complete(op);
		return;
	case OPS_DONE:
		return;
	}
}

void ry__op_msg_done(struct ry__op *op)
{
	if (op->op_state == OPS_MESSAGE)
		complete(op);
}

void ry__op_fail(struct ry__op *op, enum ry_status st, const char *reason)
{
	struct ry_peer *p = op->op_peer;
	struct ry__range **pp, *rn;

	if (op->op_state == OPS_DONE)
		return;
	if (op->op_status == RY_OK) {
		op->op_status = st;
		snprintf(op->op_reason, sizeof(op->op_reason), "%s", reason);
		RY_INFO("mgr", "op failed while %s: %s",
			ry__op_state_str(op->op_state), reason);
	}
	if (op->op_state == OPS_WAITING) {
		q_remove(&p->pr_waitq_head, &p->pr_waitq_tail, op);
		ry__op_check(op);
		return;
	}
	if (op->op_on_sched) {
		q_remove(&p->pr_sched_head, &p->pr_sched_tail, op);
		op->op_on_sched = false;
	}
	op->op_done_frags += op->op_nfrags - op->op_next_frag;
	op->op_next_frag = op->op_nfrags;
	pp = &p->pr_replay_head;
	p->pr_replay_tail = NULL;
	while ((rn = *pp)) {
		if (rn->rn_op == op) {
			*pp = rn->rn_next;
			op->op_done_frags += rn->rn_n;
			ry__pool_put(&p->pr_ctx->cx_range_pool, rn);
		} else {
			p->pr_replay_tail = rn;
			pp = &rn->rn_next;
		}
	}
	if (op->op_on_msgq) {
		q_remove(&p->pr_msgq_head, &p->pr_msgq_tail, op);
		op->op_on_msgq = false;
	}
	if (op->op_parked) {
		q_remove(&p->pr_parked_head, &p->pr_parked_tail, op);
		op->op_parked = false;
	}
	ry__op_check(op);
}

/*
 * An op whose descriptor names another incarnation of the peer than the
 * one we know waits here (it has posted nothing) until the peer's next
 * HELLO, or op_timeout.  Seeing such a descriptor is a hint the peer
 * restarted, so a control channel in backoff is redialed at once.
 */
void ry__op_park(struct ry_peer *p, struct ry__op *op)
{
	q_remove(&p->pr_sched_head, &p->pr_sched_tail, op);
	op->op_on_sched = false;
	op->op_parked = true;
	ry__sq_push_tail(p->pr_parked_head, p->pr_parked_tail, op, op_q_next);
	if (p->pr_state == PEER_BACKOFF)
		p->pr_ctl_retry_ns = 0;
}

void ry__op_unpark_all(struct ry_peer *p)
{
	struct ry__op *op;

	while ((op = p->pr_parked_head)) {
		ry__sq_pop_head(p->pr_parked_head, p->pr_parked_tail,
				op_q_next);
		op->op_parked = false;
		ry__sched_push(p, op);
	}
}

void ry__ops_timeouts(struct ry_peer *p, uint64_t now)
{
	struct ry_manager *m = p->pr_mgr;
	struct ry__list *pos, *next;
	char why[192];

	ry__list_for_each_safe(pos, next, &p->pr_ops) {
		struct ry__op *op = ry__list_entry(pos, struct ry__op, op_all);
		uint64_t since;

		if (op->op_status != RY_OK)
			continue;
		if (op->op_parked) {
			if (ry__since(now, op->op_wait_ns) <=
			    m->m_op_timeout_ns)
				continue;
			snprintf(why, sizeof(why),
				 "peer %s: the descriptor is for a node (or "
				 "run) other than the peer's (control %s)",
				 p->pr_name, ry__peer_state_str(p->pr_state));
			ry__op_fail(op, RY_EPEER, why);
			continue;
		}
		if (op->op_state == OPS_FENCING) {
			/* a stall of our own is not the peer's delay: we
			 * could not read its acknowledgement meanwhile */
			if (ry__since(now, ry__max64(op->op_wait_ns,
						     m->m_resumed_ns)) <=
			    m->m_op_timeout_ns)
				continue;
			snprintf(
			    why, sizeof(why),
			    "peer %s: fence not acknowledged within %llu ms "
			    "(control %s)",
			    p->pr_name,
			    (unsigned long long)(m->m_op_timeout_ns / 1000000),
			    ry__peer_state_str(p->pr_state));
			ry__op_fail(op, RY_ETIMEDOUT, why);
			continue;
		}
		if (p->pr_nactive)
			continue;
		/* nor could a path come back while we did not run */
		since = ry__max64(ry__max64(op->op_wait_ns, p->pr_nopath_ns),
				  m->m_resumed_ns);
		if (ry__since(now, since) <= m->m_op_timeout_ns)
			continue;
		ry__peer_path_reason(p, ry__since(now, since), why,
				     sizeof(why));
		ry__op_fail(op, RY_ETIMEDOUT, why);
	}
}

/* Manager teardown: every op completes as canceled, nothing is posted. */
void ry__op_cancel_all(struct ry_peer *p)
{
	struct ry__op *op;

	ry__sq_init(p->pr_waitq_head, p->pr_waitq_tail);
	ry__sq_init(p->pr_sched_head, p->pr_sched_tail);
	ry__sq_init(p->pr_msgq_head, p->pr_msgq_tail);
	ry__sq_init(p->pr_parked_head, p->pr_parked_tail);
	ry__sq_init(p->pr_replay_head, p->pr_replay_tail);
	while (!ry__list_empty(&p->pr_ops)) {
		op = ry__list_first_entry(&p->pr_ops, struct ry__op, op_all);
		op->op_status = RY_ECANCELED;
		snprintf(op->op_reason, sizeof(op->op_reason),
			 "peer %s: canceled, manager destroyed", p->pr_name);
		op->op_posted = 0;
		op->op_on_sched = op->op_on_msgq = op->op_parked = false;
		op->op_seq = 0;
		complete(op);
	}
}

/* Its context's lock held (or the cold lock). */
void ry__op_release(struct ry_manager *m, struct ry__op *op)
{
	(void)m;
	free(op->op_segs);
	op->op_segs = NULL;
	op->op_nsegs = 0;
	ry__pool_put(&op->op_cx->cx_op_pool, op);
}

struct ry__op *ry__op_new(struct ry_peer *p, enum ry__op_type type,
			  ry_complete_fn cb, void *ctx)
{
	struct ry__op *op = ry__pool_get(&p->pr_ctx->cx_op_pool);

	if (!op)
		return NULL;
	memset(op, 0, offsetof(struct ry__op, op_reason));
	op->op_cx = p->pr_ctx;
	op->op_reason[0] = 0;
	ry__list_init(&op->op_all);
	op->op_q_next = NULL;
	op->op_on_sched = op->op_on_msgq = op->op_parked = false;
	op->op_peer = p;
	op->op_type = type;
	op->op_slot = ~0u;
	op->op_cb = cb;
	op->op_ctx = ctx;
	op->op_state = OPS_WAITING;
	op->op_segs = NULL;
	op->op_nsegs = 0;
	return op;
}

void ry__op_enqueue(struct ry_peer *p, struct ry__op *op)
{
	struct ry_manager *m = p->pr_mgr;
	uint64_t now = ry__now_ns();

	ry__list_add_tail(&p->pr_ops, &op->op_all);
	op->op_wait_ns = now;
	if (p->pr_inflight < m->m_cfg.ops_in_flight) {
		start(p, op, now);
	} else {
		ry__sq_push_tail(p->pr_waitq_head, p->pr_waitq_tail, op,
				 op_q_next);
	}
	ry__peer_use(p);
	ry__stripe(p);
}

/* The pieces of a vectored op (post.c builds them). */
void ry__op_span_vec(const struct ry__op *op, uint32_t first, uint32_t n,
		     struct ry__span *sp)
{
	const uint64_t fs = op->op_peer->pr_mgr->m_cfg.fragment_size;
	const struct ry__seg *sg;
	uint32_t lo = 0, hi, end_frag;
	uint64_t off, end;

	/* the last piece starting at or before `first` */
	hi = op->op_nsegs;
	while (hi - lo > 1) {
		uint32_t mid = lo + (hi - lo) / 2;

		if (op->op_segs[mid].sg_first <= first)
			lo = mid;
		else
			hi = mid;
	}
	sg = &op->op_segs[lo];
	end_frag = lo + 1 < op->op_nsegs ? op->op_segs[lo + 1].sg_first
					 : op->op_nfrags;
	if (n > end_frag - first)
		n = end_frag - first;
	off = (uint64_t)(first - sg->sg_first) * fs;
	end = off + (uint64_t)n * fs;
	if (end > sg->sg_len)
		end = sg->sg_len;
	sp->sp_mr = sg->sg_mr;
	sp->sp_loff = sg->sg_off + off;
	sp->sp_roff = sg->sg_roff + off;
	sp->sp_bytes = (uint32_t)(end - off);
	sp->sp_n = n;
}

/* What the application is told of a finished op. */
void ry__op_fill(struct ry_completion *c, const struct ry__op *op)
{
	size_t n;

	c->context = op->op_ctx;
	c->status = op->op_status;
	c->length = op->op_status == RY_OK ? op->op_len : 0;
	/* per completion: a copy, not a format; empty on success */
	n = op->op_reason[0] ? strnlen(op->op_reason, sizeof(c->reason) - 1)
			     : 0;
	memcpy(c->reason, op->op_reason, n);
	c->reason[n] = 0;
}
