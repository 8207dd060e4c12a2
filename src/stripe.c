// SPDX-License-Identifier: BSD-2-Clause
/*
 * The striping scheduler.  Work is taken in this order: messages, replayed
 * fragments (head of the queue), then fresh fragments of running ops in
 * post order.  Each piece goes to the ACTIVE connection with the earliest
 * expected completion time, (outstanding bytes + these bytes) / share,
 * where share = configured rate (or weight when the rate is 0) x health:
 * unequal rails each finish at about the same time, and a flapping rail
 * gets less.  The rate is not measured separately: a rail that drains
 * slower than its share keeps more bytes outstanding, so it is picked
 * less until it catches up -- completions clock each rail's queue.  Up to
 * frags_per_wr adjacent fragments of one op (of one piece of a vectored
 * op: one SGE) share a work request; no
 * connection gets more than wr_per_qp work requests outstanding.
 *
 * Nor does a backlogged connection get more fragments: once it holds twice
 * the bytes it completed in the last RY__OUT_HORIZON_NS window (and at
 * least RY__OUT_MIN), new work stays here.  Otherwise every byte of the ops
 * in flight sat in some QP's send queue -- on a 100 Mbit/s rail 2 MB is
 * 160 ms -- and after a failure the replayed and the new work waited
 * behind all of it on the survivors.  Kept here, it goes to whichever rail
 * frees up first, and a failover resumes within about two windows.  The
 * cap follows what the rail drains, so on a fast rail it is large; two
 * windows are far more than a path's RTT, so it never starves a rail.
 *
 * This is the manager's hot path: no allocation beyond the WR pool, no
 * syscall, one clock read per call, WRs handed to the rail in batches.
 */
#include <endian.h>
#include <errno.h>
#include <string.h>

#include "src/conn.h"
#include "src/lrail.h"
#include "src/manager.h"
#include "src/msg.h"
#include "src/op.h"
#include "src/peer.h"
#include "src/pool.h"
#include "src/progress.h"
#include "src/region.h"
#include "src/standby.h"
#include "src/tunables.h"

struct batch {
	struct ry__conn *b_conn;
	unsigned b_n;
	struct ry__wr *b_wr[RY__POST_BATCH];
	struct ry_send_wr b_swr[RY__POST_BATCH];
};

/* Put back what a failed post_send did not take. */
static void unpost(struct ry_peer *p, struct batch *b, int err)
{
	struct ry_manager *m = p->pr_mgr;
	struct ry__conn *c = b->b_conn;
	struct ry_wc wc = {.status = RY_WC_FLUSHED};
	unsigned i;

	if (ry__tl_hot) {
		/*
		 * Under the context's lock alone: failing the connection
		 * touches the rail and the manager (lr_active, m_failed,
		 * events), so the cold round does it (ry__unposted); until
		 * then nothing more goes to it (cn_post_err).
		 */
		if (!c->cn_post_err) {
			c->cn_post_err = err ? err : -EIO;
			c->cn_pfnext = p->pr_ctx->cx_pfail;
			p->pr_ctx->cx_pfail = c;
		}
		for (i = 0; i < b->b_n; i++)
			ry__list_add_tail(&c->cn_unposted,
					  &b->b_wr[i]->wr_link);
		ry__cold_ask(m);
		b->b_n = 0;
		return;
	}
	RY_ERR("mgr", "qp 0x%x: post_send: %d", c->cn_qp->qp_num, err);
	ry__conn_mark_failed(c, "post_send failed", ry__now_ns());
	for (i = 0; i < b->b_n; i++) {
		struct ry__wr *w = b->b_wr[i];

		/* ry__wr_complete unlinks; make it a no-op link first */
		ry__list_add(&c->cn_posted, &w->wr_link);
		ry__wr_complete(m, w, &wc, ry__now_ns());
	}
	b->b_n = 0;
}

/* Hand a batch to its rail; false if the post failed (see unpost). */
static bool flush(struct ry_peer *p, struct batch *b, uint64_t now)
{
	int ret;

	if (!b->b_n)
		return true;
	ret = ry__conn_post(b->b_conn, b->b_wr, b->b_swr, b->b_n, now);
	if (ret)
		unpost(p, b, ret);
	b->b_n = 0;
	return !ret;
}

/* Holds two windows' worth of what it drains (smoothed), and at least
 * RY__OUT_MIN. */
static bool backlogged(const struct ry__conn *c, bool msg)
{
	return !msg && c->cn_out_bytes >= RY__OUT_MIN &&
	       c->cn_out_bytes >= 2 * c->cn_win_prev;
}

/*
 * Expected completion times are compared as 128-bit products.  In 64 bits
 * a rate-derived share (up to 2^30) times the other rail's outstanding
 * bytes wraps past 16 GiB outstanding -- reachable with the largest
 * fragment_size, frags_per_wr and wr_per_qp -- and a busy rail then looks
 * idle.  With cn_share < 2^42 and out_bytes + bytes < 2^65 the 128-bit
 * products are exact; targets without them keep the 64-bit ones.
 */
#ifdef __SIZEOF_INT128__
typedef unsigned __int128 ry__eta_t;
#else
typedef uint64_t ry__eta_t;
#endif

int ry__stripe_pick(struct ry__conn *const *cs, unsigned n, uint32_t bytes,
		    uint32_t mask, unsigned max_wrs, bool msg)
{
	const struct ry__conn *best = NULL;
	int bi = -1;
	unsigned i;

	for (i = 0; i < n; i++) {
		const struct ry__conn *c = cs[i];

		if (c->cn_out_wrs >= max_wrs || c->cn_state != CONN_ACTIVE ||
		    c->cn_post_err || !(mask & (1u << c->cn_ridx)) ||
		    backlogged(c, msg))
			continue;
		/* strict: a tie keeps the earlier rail */
		if (!best ||
		    ((ry__eta_t)c->cn_out_bytes + bytes) * best->cn_share <
			((ry__eta_t)best->cn_out_bytes + bytes) * c->cn_share) {
			best = c;
			bi = (int)i;
		}
	}
	return bi;
}

/*
 * The fragment path's pick, per fragment, over keys ry__choice_init()
 * computes once per ry__stripe() call and ry__choice_update() refreshes
 * for the one connection a fragment went to: a connection's key is its
 * outstanding bytes, or ~0 while it cannot take a fragment (not ACTIVE,
 * wr_per_qp WRs out, or backlogged: its cap is what backlogged() compares
 * with, and cn_win_prev changes only when a WR completes, which happens
 * in ry__stripe only through a failed post: the caller then calls
 * ry__choice_init() again).  When every share is equal (equal weights at
 * full health: the common case) the expected completion times compare as
 * the outstanding bytes alone -- (o1 + b) * s < (o2 + b) * s is o1 < o2
 * for s >= 1 -- so a pick is a scan for the smallest key; otherwise the
 * reference ry__stripe_pick() decides.  The same decisions either way
 * (tests/unit/test_stripe.c compares them).
 */
void ry__choice_update(struct ry__choice *l, unsigned i)
{
	const struct ry__conn *c = l->ln_cs[i];

	l->ln_key[i] = c->cn_state == CONN_ACTIVE && !c->cn_post_err &&
			       c->cn_out_wrs < l->ln_max_wrs &&
			       c->cn_out_bytes < l->ln_cap[i]
			   ? c->cn_out_bytes
			   : ~0ull;
}

void ry__choice_init(struct ry__choice *l, struct ry__conn *const *cs,
		     unsigned n, unsigned max_wrs)
{
	unsigned i;

	l->ln_n = n;
	l->ln_max_wrs = max_wrs;
	l->ln_equal = true;
	l->ln_all = 0;
	for (i = 0; i < n; i++) {
		const struct ry__conn *c = cs[i];
		uint64_t cap = 2 * c->cn_win_prev;

		l->ln_cs[i] = cs[i];
		l->ln_cap[i] = cap > RY__OUT_MIN ? cap : RY__OUT_MIN;
		l->ln_bit[i] = 1u << c->cn_ridx;
		l->ln_all |= l->ln_bit[i];
		if (c->cn_share != cs[0]->cn_share)
			l->ln_equal = false;
		ry__choice_update(l, i);
	}
}

/* Inline into the stripe's per-fragment loops; ry__choice_pick() for the
 * tests. */
static inline int choice_pick(const struct ry__choice *l, uint32_t bytes,
			      uint32_t mask)
{
	uint64_t bk = ~0ull;
	int bi = -1;
	unsigned i;

	if (!l->ln_equal)
		return ry__stripe_pick(l->ln_cs, l->ln_n, bytes, mask,
				       l->ln_max_wrs, false);
	/* strict: a tie keeps the earlier rail */
	if ((mask & l->ln_all) == l->ln_all) {
		for (i = 0; i < l->ln_n; i++)
			if (l->ln_key[i] < bk) {
				bk = l->ln_key[i];
				bi = (int)i;
			}
	} else {
		for (i = 0; i < l->ln_n; i++)
			if (l->ln_key[i] < bk && (mask & l->ln_bit[i])) {
				bk = l->ln_key[i];
				bi = (int)i;
			}
	}
	return bi;
}

int ry__choice_pick(const struct ry__choice *l, uint32_t bytes, uint32_t mask)
{
	return choice_pick(l, bytes, mask);
}

static struct batch *pick(struct batch *bt, struct ry__conn *const *cs,
			  unsigned na, uint32_t bytes, uint32_t mask,
			  unsigned max_wrs, bool msg)
{
	int i = ry__stripe_pick(cs, na, bytes, mask, max_wrs, msg);

	return i < 0 ? NULL : &bt[i];
}

static void account(struct ry__conn *c, struct ry__wr *w, uint64_t now)
{
	if (!c->cn_out_wrs)
		c->cn_busy_since_ns = now;
	c->cn_out_wrs++;
	c->cn_out_bytes += w->wr_bytes;
}

static void post_msgs(struct ry_peer *p, struct batch *bt,
		      struct ry__conn *const *cs, unsigned na, uint64_t now)
{
	struct ry_manager *m = p->pr_mgr;
	struct ry__op *op;
	struct batch *b;
	struct ry__wr *w;

	while ((op = p->pr_msgq_head)) {
		unsigned char *slot = ry__slot_addr(m, op->op_slot);
		struct ry_send_wr *s;
		uint64_t seq;

		if (!op->op_seq) {
			/* a new message: only inside the sender's window */
			seq = ry__tx_seq_take(p);
			if (!seq)
				return;
			op->op_seq = seq;
			seq = htole64(seq);
			memcpy(slot + offsetof(struct ry__mhdr, mh_seq), &seq,
			       sizeof(seq));
		}
		/* a message is small: it never waits for a backlog */
		b = pick(bt, cs, na, op->op_msg_len, ~0u, m->m_cfg.wr_per_qp,
			 true);
		if (!b)
			return;
		w = ry__pool_get(&p->pr_ctx->cx_wr_pool);
		if (!w)
			return;
		ry__sq_pop_head(p->pr_msgq_head, p->pr_msgq_tail, op_q_next);
		op->op_on_msgq = false;
		memset(w, 0, sizeof(*w));
		w->wr_conn = b->b_conn;
		w->wr_op = op;
		w->wr_bytes = op->op_msg_len;
		w->wr_kind = WRK_MSG;
		w->wr_post_ns = now;
		s = &b->b_swr[b->b_n];
		memset(s, 0, sizeof(*s));
		s->wr_id = (uintptr_t)w;
		s->opcode = RY_WR_SEND;
		s->sge.addr = (uintptr_t)slot;
		s->sge.length = op->op_msg_len;
		s->sge.lkey =
		    m->m_msg_region->rg_mr[b->b_conn->cn_lrail->lr_idx]->lkey;
		b->b_wr[b->b_n++] = w;
		op->op_posted++;
		account(b->b_conn, w, now);
		if (b->b_n == RY__POST_BATCH)
			flush(p, b, now);
	}
}

/* Fragments of an op that will never be posted (the op failed). */
static bool discard(struct ry_peer *p, struct ry__op *op)
{
	char why[192];

	if (op->op_status == RY_OK && op->op_rnode != p->pr_node &&
	    !op->op_posted && !op->op_done_frags && !op->op_next_frag &&
	    !op->op_replayed) {
		/* maybe the peer restarted and we have not heard yet */
		ry__op_park(p, op);
		return true;
	}
	if (op->op_status == RY_OK && op->op_rnode != p->pr_node) {
		snprintf(why, sizeof(why),
			 "peer %s: the descriptor belongs to another node (or "
			 "an earlier run of it)",
			 p->pr_name);
		ry__op_fail(op, RY_EPEER, why);
		return true;
	}
	return op->op_status != RY_OK;
}

/* Fresh fragments leave the queue: the op's next nf. */
static void take_fresh(struct ry_peer *p, struct ry__op *op, uint32_t nf)
{
	op->op_next_frag += nf;
	if (op->op_next_frag == op->op_nfrags) {
		ry__sq_pop_head(p->pr_sched_head, p->pr_sched_tail, op_q_next);
		op->op_on_sched = false;
	}
}

/*
 * Put a WR for fragments [first, first + sp->sp_n) of op into batch b
 * (connection bi), account it, and hand the batch to its rail when full; false
 * if that post failed (the choice must be computed again).
 */
static inline bool add_frag(struct ry_peer *p, struct batch *b,
			    struct ry__choice *ln, unsigned bi,
			    struct ry__wr *w, struct ry__op *op, uint32_t first,
			    const struct ry__span *sp, bool replay,
			    uint64_t now)
{
	struct ry__conn *c = b->b_conn;
	struct ry_send_wr *s = &b->b_swr[b->b_n];

	w->wr_conn = c;
	w->wr_op = op;
	w->wr_first = first;
	w->wr_n = sp->sp_n;
	w->wr_bytes = sp->sp_bytes;
	w->wr_kind = WRK_FRAG;
	w->wr_replay = replay;
	w->wr_post_ns = now;
	s->wr_id = (uintptr_t)w;
	s->opcode = op->op_type == OP_READ ? RY_WR_RDMA_READ : RY_WR_RDMA_WRITE;
	s->sge.addr = (uintptr_t)sp->sp_mr->rg_addr + sp->sp_loff;
	s->sge.length = sp->sp_bytes;
	s->sge.lkey = sp->sp_mr->rg_mr[c->cn_lrail->lr_idx]->lkey;
	s->remote_addr = op->op_raddr + sp->sp_roff;
	s->rkey = op->op_rkey[c->cn_ridx];
	s->imm_data = 0;
	b->b_wr[b->b_n++] = w;
	op->op_posted++;
	account(c, w, now);
	ry__choice_update(ln, bi);
	return b->b_n < RY__POST_BATCH || flush(p, b, now);
}

enum run_end {
	RUN_DONE,   /* the op has no fresh fragments left */
	RUN_FULL,   /* no connection takes more */
	RUN_REPOST, /* a post failed: the choice again, and the queue again (the
		       failure may have queued replay work, which goes first) */
	RUN_NOWR,   /* out of WRs: the general path fails the op */
};

/*
 * The common case: fresh fragments of a one-region op at the head of the
 * queue, piece after piece, without going back through the queue and the
 * discard checks for each (nothing in here changes what they decided:
 * only a failed post, after which it returns).
 */
static enum run_end fresh_run(struct ry_peer *p, struct ry__op *op,
			      struct batch *bt, struct ry__choice *ln,
			      uint32_t fpw, uint64_t now)
{
	struct ry_manager *m = p->pr_mgr;
	const uint64_t fs = m->m_cfg.fragment_size;
	struct ry__span sp;

	while (op->op_next_frag < op->op_nfrags) {
		uint32_t first = op->op_next_frag, n = op->op_nfrags - first;
		struct ry__wr *w;
		int bi;

		ry__op_span_flat(op, fs, first, n < fpw ? n : fpw, &sp);
		bi = choice_pick(ln, sp.sp_bytes, op->op_rmask);
		if (bi < 0)
			return RUN_FULL;
		w = ry__pool_get(&p->pr_ctx->cx_wr_pool);
		if (!w)
			return RUN_NOWR;
		take_fresh(p, op, sp.sp_n);
		if (!add_frag(p, &bt[bi], ln, (unsigned)bi, w, op, first, &sp,
			      false, now))
			return RUN_REPOST;
	}
	return RUN_DONE;
}

void ry__stripe(struct ry_peer *p)
{
	struct ry_manager *m = p->pr_mgr;
	const uint32_t fpw = m->m_cfg.frags_per_wr;
	const unsigned max_wrs = m->m_cfg.wr_per_qp;
	struct batch bt[RY_MAX_RAILS];
	/* bt[i].b_conn again, packed: pick() scans these per fragment */
	struct ry__conn *cs[RY_MAX_RAILS];
	struct ry__choice ln;
	unsigned na = 0, i;
	uint64_t now;
	bool general = false; /* the next piece by the general path */
	int bi;

	if (!p->pr_nactive || p->pr_state == PEER_NEW)
		return;
	na = ry__standby_usable_conns(p, cs);
	for (i = 0; i < na; i++) {
		bt[i].b_conn = cs[i];
		bt[i].b_n = 0;
	}
	now = ry__now_ns();
	post_msgs(p, bt, cs, na, now);
	if (!p->pr_replay_head && !p->pr_sched_head)
		goto out;
	ry__choice_init(&ln, cs, na, max_wrs);

	for (;;) {
		struct ry__range *rn = p->pr_replay_head;
		struct ry__span sp;
		struct ry__op *op;
		struct ry__wr *w;
		uint32_t first, n, nf;

		if (rn) {
			op = rn->rn_op;
			first = rn->rn_first;
			n = rn->rn_n;
		} else if ((op = p->pr_sched_head)) {
			first = op->op_next_frag;
			n = op->op_nfrags - first;
		} else {
			break;
		}
		if (discard(p, op))
			continue; /* ry__op_fail() took its fragments out */
		if (!rn && !op->op_segs && !general && n) {
			int r = fresh_run(p, op, bt, &ln, fpw, now);

			if (r == RUN_FULL)
				break;
			if (r == RUN_REPOST)
				ry__choice_init(&ln, cs, na, max_wrs);
			general = r == RUN_NOWR;
			continue;
		}
		general = false;
		/* up to fpw fragments, within one piece of a vectored op */
		ry__op_span(op, first, n < fpw ? n : fpw, &sp);
		nf = sp.sp_n;
		bi = choice_pick(&ln, sp.sp_bytes, op->op_rmask);
		if (bi < 0)
			break;
		/* take the fragments out of the queue */
		if (rn) {
			rn->rn_first += nf;
			rn->rn_n -= nf;
			if (!rn->rn_n) {
				ry__sq_pop_head(p->pr_replay_head,
						p->pr_replay_tail, rn_next);
				ry__pool_put(&p->pr_ctx->cx_range_pool, rn);
			}
		} else {
			take_fresh(p, op, nf);
		}
		w = ry__pool_get(&p->pr_ctx->cx_wr_pool);
		if (!w) {
			ry__op_fail(op, RY_ELOCAL, "out of memory");
			ry__op_frags_done(op, nf);
			continue;
		}
		if (!add_frag(p, &bt[bi], &ln, (unsigned)bi, w, op, first, &sp,
			      rn != NULL, now))
			ry__choice_init(&ln, cs, na, max_wrs);
	}
out:
	for (i = 0; i < na; i++)
		if (bt[i].b_n)
			flush(p, &bt[i], now);
}
