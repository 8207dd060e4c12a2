// SPDX-License-Identifier: BSD-2-Clause
/*
 * Operations: posting (ry_write, ry_read, ry_write_notify, ry_send, and
 * the vectored ry_writev, ry_readv, ry_write_notifyv, ry_readv_gather), the
 * op state machine, timeouts, and completion.
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

const uint64_t ry__lat_le_ns[RY__LAT_BUCKETS] = {
    10000,     25000,	  50000,     100000,	 250000,   500000,
    1000000,   2500000,	  5000000,   10000000,	 25000000, 50000000,
    100000000, 250000000, 500000000, 1000000000,
};

void ry__lat_add(struct ry__lat *l, uint64_t ns)
{
	unsigned i = 0;

	while (i < RY__LAT_BUCKETS && ns > ry__lat_le_ns[i])
		i++;
	l->lt_bucket[i]++;
	l->lt_sum_ns += ns;
	l->lt_count++;
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
		ry__lat_add(&p->pr_lat[op->op_type],
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
			if (ry__since(now, op->op_wait_ns) <=
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
		since = op->op_wait_ns > p->pr_nopath_ns ? op->op_wait_ns
							 : p->pr_nopath_ns;
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

static struct ry__op *op_new(struct ry_peer *p, enum ry__op_type type,
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

static void enqueue(struct ry_peer *p, struct ry__op *op)
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

/*
 * The last descriptor this thread unpacked, as bytes and unpacked: an
 * application posts many ops against one remote buffer, and unpacking
 * (checksum, per-rail keys) cost more than the rest of posting a small op.
 * ry__desc_unpack() is a function of the bytes alone, so the same bytes
 * give the same result; per thread, so no lock and no sharing.
 */
static _Thread_local struct {
	size_t dc_len; /* 0: empty */
	unsigned char dc_raw[RY_DESC_MAX];
	struct ry__desc dc_d;
} desc_cache;

static int desc_unpack_cached(const void *desc, size_t dlen, struct ry__desc *d)
{
	int ret;

	if (dlen && dlen == desc_cache.dc_len &&
	    !memcmp(desc, desc_cache.dc_raw, dlen)) {
		*d = desc_cache.dc_d;
		return 0;
	}
	ret = ry__desc_unpack(desc, dlen, d);
	if (!ret && dlen <= sizeof(desc_cache.dc_raw)) {
		memcpy(desc_cache.dc_raw, desc, dlen);
		desc_cache.dc_d = *d;
		desc_cache.dc_len = dlen;
	}
	return ret;
}

/* The remote descriptor, checked for the access the op needs. */
static int rdma_desc(enum ry__op_type type, const void *desc, size_t dlen,
		     struct ry__desc *d)
{
	unsigned need;
	int ret;

	if (!desc)
		return -EBADMSG;
	ret = desc_unpack_cached(desc, dlen, d);
	if (ret)
		return ret;
	need = type == OP_READ ? RY_MR_REMOTE_READ : RY_MR_REMOTE_WRITE;
	return d->d_access & need ? 0 : -EACCES;
}

/*
 * The posting section for p: with several contexts, its context's lock
 * alone while the peer is READY (all that enqueue() may then touch is the
 * context's and the peer's: LOCKING, Contexts), the cold lock otherwise
 * (a dial, a backoff to cut short).  True if it took the context's lock
 * alone.
 */
static bool post_lock(struct ry_peer *p)
{
	struct ry__ctx *cx = p->pr_ctx;

	/* one context: nothing to share the work with, and the cold lock
	 * taken at once is one hand-off where the context's lock and the
	 * gate would be two (progress threads: 5.5 against 10 M fragments/s
	 * in bench_core -P) */
	if (p->pr_mgr->m_nctx == 1) {
		ry__lock(p->pr_mgr);
		return false;
	}
	ry__ctx_gate(p->pr_mgr);
	pthread_mutex_lock(&cx->cx_lock);
	if (p->pr_state == PEER_READY) {
		ry__tl_hot = cx;
		ry__ctx_note(cx);
		return true;
	}
	pthread_mutex_unlock(&cx->cx_lock);
	ry__lock(p->pr_mgr);
	return false;
}

/* Leave the posting section: a posted op gets the rail kicked. */
static int post_unlock(struct ry_peer *p, bool hot, int ret, uint64_t bytes)
{
	struct ry_manager *m = p->pr_mgr;

	if (hot) {
		ry__tl_hot = NULL;
		pthread_mutex_unlock(&p->pr_ctx->cx_lock);
	} else {
		ry__unlock(m);
	}
	if (!ret)
		ry__kick_post(m, bytes);
	return ret;
}

/* A new RDMA op with its remote side, in the posting section; NULL with
 * *ret set. */
static struct ry__op *rdma_op_new(struct ry_peer *p, enum ry__op_type type,
				  const struct ry__desc *d, bool notify,
				  uint64_t nval, ry_complete_fn cb, void *ctx,
				  int *ret)
{
	struct ry_manager *m = p->pr_mgr;
	struct ry__op *op;

	if (m->m_closing) {
		*ret = -ESHUTDOWN;
		return NULL;
	}
	/* the peer restarted since the descriptor was made: nothing to send */
	if (ry__peer_node_stale(p, d->d_node)) {
		*ret = -ESTALE;
		return NULL;
	}
	op = op_new(p, type, cb, ctx);
	if (!op) {
		*ret = -ENOMEM;
		return NULL;
	}
	if (notify) {
		op->op_slot = ry__slot_get(m);
		if (op->op_slot == ~0u) {
			ry__op_release(m, op);
			*ret = -EAGAIN;
			return NULL;
		}
		op->op_notify = true;
		op->op_notify_val = nval;
	}
	op->op_raddr = d->d_addr;
	op->op_rmask = ry__rail_life_keys(p, d); /* a rail back: not its */
	memcpy(op->op_rkey, d->d_rkey, sizeof(op->op_rkey));
	op->op_rnode = d->d_node;
	return op;
}

static int post_rdma(struct ry_peer *p, enum ry__op_type type,
		     struct ry_region *rg, size_t loff, const void *desc,
		     size_t dlen, size_t roff, size_t len, bool notify,
		     uint64_t nval, ry_complete_fn cb, void *ctx)
{
	struct ry_manager *m;
	struct ry__desc d;
	struct ry__op *op;
	bool hot;
	int ret = 0;

	if (!p || !rg || !desc || !len || rg->rg_mgr != p->pr_mgr)
		return -EINVAL;
	m = p->pr_mgr;
	if (len > m->m_cfg.max_op_size)
		return -EMSGSIZE;
	if (loff > rg->rg_len || len > rg->rg_len - loff)
		return -EINVAL;
	ret = rdma_desc(type, desc, dlen, &d);
	if (ret)
		return ret;
	if (roff > d.d_len || len > d.d_len - roff)
		return -EINVAL;

	hot = post_lock(p);
	op = rdma_op_new(p, type, &d, notify, nval, cb, ctx, &ret);
	if (!op)
		goto out;
	op->op_region = rg;
	rg->rg_users++;
	op->op_local_off = loff;
	op->op_len = len;
	op->op_raddr += roff;
	op->op_nfrags = (uint32_t)((len + m->m_cfg.fragment_size - 1) /
				   m->m_cfg.fragment_size);
	enqueue(p, op);
out:
	return post_unlock(p, hot, ret, len);
}

int ry_write(struct ry_peer *p, struct ry_region *local, size_t local_off,
	     const void *desc, size_t desc_len, size_t remote_off, size_t len,
	     ry_complete_fn cb, void *context)
{
	return post_rdma(p, OP_WRITE, local, local_off, desc, desc_len,
			 remote_off, len, false, 0, cb, context);
}

int ry_read(struct ry_peer *p, struct ry_region *local, size_t local_off,
	    const void *desc, size_t desc_len, size_t remote_off, size_t len,
	    ry_complete_fn cb, void *context)
{
	return post_rdma(p, OP_READ, local, local_off, desc, desc_len,
			 remote_off, len, false, 0, cb, context);
}

int ry_write_notify(struct ry_peer *p, struct ry_region *local,
		    size_t local_off, const void *desc, size_t desc_len,
		    size_t remote_off, size_t len, uint64_t notify,
		    ry_complete_fn cb, void *context)
{
	return post_rdma(p, OP_WRITE, local, local_off, desc, desc_len,
			 remote_off, len, true, notify, cb, context);
}

/* ---- vectored operations ---- */

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

/* The local list's total, each entry checked; 0 or -EINVAL. */
static int iov_total(struct ry_manager *m, const struct ry_iov *iov, int iovcnt,
		     uint64_t *total)
{
	uint64_t t = 0;
	int i;

	if (!iov || iovcnt < 1 || iovcnt > RY_IOV_MAX)
		return -EINVAL;
	for (i = 0; i < iovcnt; i++) {
		const struct ry_iov *v = &iov[i];

		if (!v->mr || v->mr->rg_mgr != m || v->off > v->mr->rg_len ||
		    v->len > v->mr->rg_len - v->off)
			return -EINVAL;
		t += v->len;
	}
	*total = t;
	return 0;
}

/* The remote list's total, each entry inside the descriptor. */
static int riov_total(const struct ry__desc *d, const struct ry_riov *riov,
		      int riovcnt, uint64_t *total)
{
	uint64_t t = 0;
	int i;

	if (!riov || riovcnt < 1 || riovcnt > RY_IOV_MAX)
		return -EINVAL;
	for (i = 0; i < riovcnt; i++) {
		if (riov[i].off > d->d_len ||
		    riov[i].len > d->d_len - riov[i].off)
			return -EINVAL;
		t += riov[i].len;
	}
	*total = t;
	return 0;
}

/*
 * Cut the two lists into pieces where either has a boundary, merging
 * pieces adjacent on both sides; fragments are numbered per piece.
 */
static struct ry__seg *build_segs(const struct ry_iov *iov, int iovcnt,
				  const struct ry_riov *riov, int riovcnt,
				  uint32_t fs, uint32_t *nsegs,
				  uint32_t *nfrags)
{
	struct ry__seg *segs =
	    malloc((size_t)(iovcnt + riovcnt) * sizeof(*segs));
	uint64_t lused = 0, rused = 0;
	uint32_t n = 0, frags = 0;
	int i = 0, j = 0;

	if (!segs)
		return NULL;
	for (;;) {
		struct ry__seg *prev = n ? &segs[n - 1] : NULL;
		uint64_t take, loff, roff;

		while (i < iovcnt && lused == iov[i].len) {
			i++;
			lused = 0;
		}
		while (j < riovcnt && rused == riov[j].len) {
			j++;
			rused = 0;
		}
		if (i == iovcnt || j == riovcnt)
			break;
		take = iov[i].len - lused;
		if (take > riov[j].len - rused)
			take = riov[j].len - rused;
		loff = iov[i].off + lused;
		roff = riov[j].off + rused;
		if (prev && prev->sg_mr == iov[i].mr &&
		    prev->sg_off + prev->sg_len == loff &&
		    prev->sg_roff + prev->sg_len == roff) {
			prev->sg_len += take;
		} else {
			segs[n++] = (struct ry__seg){.sg_mr = iov[i].mr,
						     .sg_off = loff,
						     .sg_roff = roff,
						     .sg_len = take};
		}
		lused += take;
		rused += take;
	}
	for (i = 0; i < (int)n; i++) {
		segs[i].sg_first = frags;
		frags += (uint32_t)((segs[i].sg_len + fs - 1) / fs);
	}
	*nsegs = n;
	*nfrags = frags;
	return segs;
}

static int post_vec(struct ry_peer *p, enum ry__op_type type,
		    const struct ry_iov *iov, int iovcnt, const void *desc,
		    size_t dlen, const struct ry_riov *riov, int riovcnt,
		    size_t roff, bool notify, uint64_t nval, ry_complete_fn cb,
		    void *ctx)
{
	struct ry_riov one;
	struct ry_manager *m;
	struct ry__seg *segs;
	struct ry__desc d;
	struct ry__op *op;
	uint64_t total, rtotal;
	uint32_t nsegs, nfrags, i;
	bool hot;
	int ret;

	if (!p || !desc)
		return -EINVAL;
	m = p->pr_mgr;
	ret = iov_total(m, iov, iovcnt, &total);
	if (ret)
		return ret;
	if (!total)
		return -EINVAL;
	if (total > m->m_cfg.max_op_size)
		return -EMSGSIZE;
	ret = rdma_desc(type, desc, dlen, &d);
	if (ret)
		return ret;
	if (!riov) {
		one = (struct ry_riov){.off = roff, .len = total};
		riov = &one;
		riovcnt = 1;
	}
	ret = riov_total(&d, riov, riovcnt, &rtotal);
	if (ret)
		return ret;
	if (rtotal != total)
		return -EINVAL;
	segs = build_segs(iov, iovcnt, riov, riovcnt, m->m_cfg.fragment_size,
			  &nsegs, &nfrags);
	if (!segs)
		return -ENOMEM;

	hot = post_lock(p);
	op = rdma_op_new(p, type, &d, notify, nval, cb, ctx, &ret);
	if (!op) {
		free(segs);
		goto out;
	}
	op->op_len = total;
	op->op_nfrags = nfrags;
	if (nsegs == 1) {
		/* one piece: the plain op */
		op->op_region = segs[0].sg_mr;
		op->op_region->rg_users++;
		op->op_local_off = segs[0].sg_off;
		op->op_raddr += segs[0].sg_roff;
		free(segs);
	} else {
		op->op_segs = segs;
		op->op_nsegs = nsegs;
		for (i = 0; i < nsegs; i++)
			segs[i].sg_mr->rg_users++;
	}
	enqueue(p, op);
out:
	return post_unlock(p, hot, ret, total);
}

int ry_writev(struct ry_peer *p, const struct ry_iov *iov, int iovcnt,
	      const void *desc, size_t desc_len, size_t remote_off,
	      ry_complete_fn cb, void *context)
{
	return post_vec(p, OP_WRITE, iov, iovcnt, desc, desc_len, NULL, 0,
			remote_off, false, 0, cb, context);
}

int ry_readv(struct ry_peer *p, const struct ry_iov *iov, int iovcnt,
	     const void *desc, size_t desc_len, size_t remote_off,
	     ry_complete_fn cb, void *context)
{
	return post_vec(p, OP_READ, iov, iovcnt, desc, desc_len, NULL, 0,
			remote_off, false, 0, cb, context);
}

int ry_write_notifyv(struct ry_peer *p, const struct ry_iov *iov, int iovcnt,
		     const void *desc, size_t desc_len, size_t remote_off,
		     uint64_t notify, ry_complete_fn cb, void *context)
{
	return post_vec(p, OP_WRITE, iov, iovcnt, desc, desc_len, NULL, 0,
			remote_off, true, notify, cb, context);
}

int ry_readv_gather(struct ry_peer *p, const struct ry_iov *iov, int iovcnt,
		    const void *desc, size_t desc_len,
		    const struct ry_riov *riov, int riovcnt, ry_complete_fn cb,
		    void *context)
{
	if (!riov)
		return -EINVAL;
	return post_vec(p, OP_READ, iov, iovcnt, desc, desc_len, riov, riovcnt,
			0, false, 0, cb, context);
}

int ry_send(struct ry_peer *p, const void *buf, size_t len, ry_complete_fn cb,
	    void *context)
{
	struct ry_manager *m;
	struct ry__op *op;
	bool hot;
	int ret = 0;

	if (!p || (len && !buf))
		return -EINVAL;
	if (len > RY_MSG_MAX)
		return -EMSGSIZE;
	m = p->pr_mgr;
	hot = post_lock(p);
	if (m->m_closing) {
		ret = -ESHUTDOWN;
		goto out;
	}
	op = op_new(p, OP_SEND, cb, context);
	if (!op) {
		ret = -ENOMEM;
		goto out;
	}
	op->op_slot = ry__slot_get(m);
	if (op->op_slot == ~0u) {
		ry__op_release(m, op);
		ret = -EAGAIN;
		goto out;
	}
	op->op_len = len;
	ry__msg_prepare(op, MT_DATA, buf, len);
	enqueue(p, op);
out:
	return post_unlock(p, hot, ret, len);
}

static void fill(struct ry_completion *c, const struct ry__op *op)
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

void ry__op_fill(struct ry_completion *c, const struct ry__op *op)
{
	fill(c, op);
}

int ry_poll_completions(struct ry_manager *m, struct ry_completion *out,
			int max)
{
	struct ry__op *op;
	int n = 0;

	if (!m || (!out && max > 0) || max < 0)
		return -EINVAL;
	ry__lock(m);
	for (unsigned i = 0; i < m->m_nctx; i++) {
		struct ry__ctx *cx = &m->m_ctx[i];

		while (n < max && (op = cx->cx_poll_head)) {
			ry__sq_pop_head(cx->cx_poll_head, cx->cx_poll_tail,
					op_q_next);
			fill(&out[n++], op);
			ry__op_release(m, op);
		}
	}
	ry__unlock(m);
	return n;
}
