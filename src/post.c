// SPDX-License-Identifier: BSD-2-Clause
/*
 * Posting: the application's entry points for operations (ry_write,
 * ry_read, ry_write_notify, ry_send, and the vectored ry_writev,
 * ry_readv, ry_write_notifyv, ry_readv_gather).  Each checks its
 * arguments, takes its peer's context lock (or the cold lock for a peer
 * that is not READY), makes the op and hands it to op.c's state machine.
 * Vectored ops are cut into pieces here (op.c, at the top).
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

/* The owner's rails whose rkey in d is of the rail open now: a rail that
 * came back (rail_life.c) has keys of its own. */
static uint32_t fresh_keys(const struct ry_peer *p, const struct ry__desc *d)
{
	uint32_t mask = d->d_mask;

	for (unsigned j = 0; j < p->pr_nrrails && j < RY_MAX_RAILS; j++)
		if (mask & (1u << j) &&
		    p->pr_rrails[j].rr_ep.cookie != d->d_gen[j])
			mask &= ~(1u << j);
	return mask;
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
 * alone while the peer is READY (all that ry__op_enqueue() may then touch is
 * the context's and the peer's: LOCKING, Contexts), the cold lock otherwise (a
 * dial, a backoff to cut short).  True if it took the context's lock alone.
 */
static bool post_lock(struct ry_peer *p)
{
	struct ry__ctx *cx = p->pr_ctx;

	/* one context: nothing to share the work with, and the cold lock
	 * taken at once is one hand-off where the context's lock and the
	 * gate would be two (progress threads: 5.5 against 10 M fragments/s
	 * in bench_core -P) */
	if (p->pr_mgr->m_nctx == 1) {
		ry__lock_and_run_leftovers(p->pr_mgr);
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
	ry__lock_and_run_leftovers(p->pr_mgr);
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
	op = ry__op_new(p, type, cb, ctx);
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
	op->op_rmask = fresh_keys(p, d);
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
	ry__op_enqueue(p, op);
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
	ry__op_enqueue(p, op);
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
	op = ry__op_new(p, OP_SEND, cb, context);
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
	ry__op_enqueue(p, op);
out:
	return post_unlock(p, hot, ret, len);
}

/* The completions of ops posted without a callback (ry_poll_completions). */
int ry_poll_completions(struct ry_manager *m, struct ry_completion *out,
			int max)
{
	struct ry__op *op;
	int n = 0;

	if (!m || (!out && max > 0) || max < 0)
		return -EINVAL;
	ry__lock_and_run_leftovers(m);
	for (unsigned i = 0; i < m->m_nctx; i++) {
		struct ry__ctx *cx = &m->m_ctx[i];

		while (n < max && (op = cx->cx_poll_head)) {
			ry__sq_pop_head(cx->cx_poll_head, cx->cx_poll_tail,
					op_q_next);
			ry__op_fill(&out[n++], op);
			ry__op_release(m, op);
		}
	}
	ry__unlock(m);
	return n;
}
