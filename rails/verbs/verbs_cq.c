// SPDX-License-Identifier: BSD-2-Clause
/*
 * CQs of the verbs rail: the rail's own and those of create_cq, all on
 * the rail's one completion channel (progress() takes their events, acks
 * and re-arms each; verbs_rail.c), and their poll: ibv_wc -> ry_wc.
 *
 * A CQ grows with its QPs (cq_reserve() in verbs_qp.c) from room for the
 * whole SRQ: any receive may complete on any CQ, that of the QP that took
 * it.
 *
 * Verbs defines wc.opcode only for successful completions, so an error
 * completion is matched to its send WR by the QP's ring of posted WRs
 * (by wr_id, the oldest owed); one that matches no send WR is a
 * receive's.  Send completions leave in posting order (release()), even
 * where the HCA's come out of it (iWARP, see struct ry__verbs_swr).  Any error
 * completion means the QP is in ERR now: the HCA moved it there, and the base
 * struct says so at once.
 */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>

#include "rails/verbs/verbs_int.h"
#include "src/util/log.h"

#define POLL_BATCH 32

static enum ry_wc_status status_of(enum ibv_wc_status s)
{
	switch (s) {
	case IBV_WC_SUCCESS:
		return RY_WC_SUCCESS;
	case IBV_WC_WR_FLUSH_ERR:
		return RY_WC_FLUSHED;
	case IBV_WC_RETRY_EXC_ERR:
		return RY_WC_RETRY_EXCEEDED;
	case IBV_WC_RNR_RETRY_EXC_ERR:
		return RY_WC_RNR_RETRY_EXCEEDED;
	case IBV_WC_REM_ACCESS_ERR:
		return RY_WC_REM_ACCESS;
	case IBV_WC_REM_INV_REQ_ERR:
		return RY_WC_REM_INVALID_REQ;
	case IBV_WC_REM_OP_ERR:
		return RY_WC_REM_OP;
	case IBV_WC_LOC_PROT_ERR:
		return RY_WC_LOC_PROT;
	case IBV_WC_LOC_LEN_ERR:
		return RY_WC_LOC_LEN;
	default:
		return RY_WC_GENERAL_ERR;
	}
}

/* The ring entry a send completion belongs to: the oldest WR of the QP
 * the HCA still owes with that wr_id (most often the head; on siw a WRITE
 * may overtake a READ).  NULL: none, so a receive's.  Under c->lock. */
static struct ry__verbs_swr *swr_find(struct ry__verbs_qp *q, uint64_t wr_id)
{
	for (uint32_t i = q->head; i != q->tail; i++) {
		struct ry__verbs_swr *s = &q->ring[i & q->ring_mask];

		if (!s->done && !s->flushed && s->wr_id == wr_id)
			return s;
	}
	return NULL;
}

/* The oldest WR the HCA still owes: where a success that names no WR of
 * ours goes. */
static struct ry__verbs_swr *swr_owed(struct ry__verbs_qp *q)
{
	for (uint32_t i = q->head; i != q->tail; i++) {
		struct ry__verbs_swr *s = &q->ring[i & q->ring_mask];

		if (!s->done && !s->flushed)
			return s;
	}
	return NULL;
}

/* A READ (or a fence) completed, or any WR failed: what the QP posted
 * before it is settled (struct ry__verbs_swr).  A success confirms the
 * WRITEs and SENDs before it; a failure means the connection ended
 * before they were confirmed: they are FLUSHED (release() reports the
 * first failure of the QP as the error).  Under c->lock. */
static void ack_upto(struct ry__verbs_qp *q, struct ry__verbs_swr *upto,
		     enum ry_wc_status st)
{
	for (uint32_t i = q->head;; i++) {
		struct ry__verbs_swr *e = &q->ring[i & q->ring_mask];

		e->unacked = false;
		if (e == upto)
			break;
		if (st != RY_WC_SUCCESS && e->done &&
		    e->status == RY_WC_SUCCESS)
			e->status = RY_WC_FLUSHED;
	}
}

/*
 * A completion of the HCA.  A receive's is written to *o (returns 1); a
 * send WR's is stored in its ring entry, reported by release() in its
 * turn, and *q_p names the QP (returns 0).  Under c->lock.
 */
static int translate(struct ry__verbs_rail *r, struct ry__verbs_cq *c,
		     const struct ibv_wc *w, struct ry_wc *o,
		     struct ry__verbs_qp **q_p)
{
	struct ry__verbs_qp *q = ry__verbs_qp_find(c, w->qp_num);
	struct ry__verbs_swr *s = NULL;
	enum ry_wc_status st = status_of(w->status);
	bool send;

	*q_p = NULL;
	/* siw says "local QP operation error" for every WR it could not
	 * send: one cut off by the move to ERR is flushed, as on any other
	 * device (release() makes the first one of a failure the error) */
	if (w->status == IBV_WC_LOC_QP_OP_ERR && r->iwarp && q &&
	    q->base.state == RY_QPS_ERR)
		st = RY_WC_FLUSHED;
	/* siw names the opcode of an error completion too; it tells a
	 * send the sweep completed already from a receive */
	if (w->status == IBV_WC_SUCCESS || r->iwarp) {
		send = !(w->opcode & IBV_WC_RECV);
	} else {
		s = q ? swr_find(q, w->wr_id) : NULL;
		send = s != NULL;
	}
	if (w->status != IBV_WC_SUCCESS && q && q->base.state != RY_QPS_ERR) {
		if (w->status != IBV_WC_WR_FLUSH_ERR)
			RY_DBG("verbs", "rail %s: qp 0x%x: %s (vendor 0x%x)",
			       r->base.name, w->qp_num,
			       ibv_wc_status_str(w->status), w->vendor_err);
		ry__verbs_qp_set_err(q);
	}
	if (send && q && !s) {
		s = swr_find(q, w->wr_id);
		if (!s && r->iwarp) {
			/* completed by the sweep already (verbs_qp.c) */
			RY_DBG("verbs",
			       "rail %s: qp 0x%x: late completion "
			       "dropped",
			       r->base.name, w->qp_num);
			return 0;
		}
		if (!s) {
			RY_WARN("verbs",
				"rail %s: qp 0x%x: completion for wr_id "
				"%#llx, not one posted",
				r->base.name, w->qp_num,
				(unsigned long long)w->wr_id);
			s = swr_owed(q);
		}
	}
	if (s) {
		s->done = true;
		s->status = (uint8_t)st;
		s->vendor_err = w->vendor_err;
		q->hw_outstanding--;
		c->n_held++;
		/* only iWARP holds successes unconfirmed (ry__verbs_swr) */
		if (r->iwarp &&
		    (st != RY_WC_SUCCESS || s->opcode == RY_WC_RDMA_READ))
			ack_upto(q, s, st);
		*q_p = q;
		return 0;
	}
	if (send) {
		/* a QP destroyed on a dead device: no ring, nobody to tell */
		return 0;
	}
	o->wr_id = w->wr_id;
	o->status = st;
	o->qp_num = w->qp_num;
	o->vendor_err = w->vendor_err;
	o->opcode = w->opcode == IBV_WC_RECV_RDMA_WITH_IMM &&
			    w->status == IBV_WC_SUCCESS
			? RY_WC_RECV_RDMA_IMM
			: RY_WC_RECV;
	o->byte_len = w->byte_len;
	o->imm_data = 0;
	o->flags = 0;
	if (w->status == IBV_WC_SUCCESS && (w->wc_flags & IBV_WC_WITH_IMM)) {
		o->flags |= RY_WC_WITH_IMM;
		o->imm_data = be32toh(w->imm_data);
	}
	return 1;
}

/* Report q's completed WRs from its ring's head, in posting order, up to
 * the first one still owed: the HCA's (done) and those posted in ERR
 * (flushed), which complete on the QP's CQ as the HCA's would.  A
 * zombie's are dropped.  Under c->lock. */
static int release(struct ry__verbs_cq *c, struct ry__verbs_qp *q,
		   struct ry_wc *wc, int n)
{
	bool iwarp = vrail(c->base.rail)->iwarp;
	int got = 0;

	while (q->tail != q->head) {
		struct ry__verbs_swr *s = &q->ring[q->head & q->ring_mask];
		enum ry_wc_status st;
		struct ry_wc *o;

		if (!s->done && !s->flushed)
			break;
		/* on the wire, not yet confirmed: wait for the READ behind
		 * it, unless nothing more is coming from the HCA */
		if (s->unacked) {
			if (q->base.state != RY_QPS_ERR || q->hw_outstanding)
				break;
			s->unacked = false;
			s->status = RY_WC_FLUSHED;
		}
		if (!q->zombie && !s->fence && got == n)
			break;
		st = s->done ? (enum ry_wc_status)s->status : RY_WC_FLUSHED;
		/* iWARP: the first failure of a connection the caller did
		 * not end is its error (rail.h: opaque_errors), whatever the
		 * HCA said of it (siw flushes the WR the peer refused) */
		if (iwarp && !s->fence && q->failed) {
			st = RY_WC_FLUSHED; /* after the first failure */
		} else if (iwarp && !s->fence && st != RY_WC_SUCCESS) {
			q->failed = true;
			if (!q->user_err)
				st = RY_WC_GENERAL_ERR;
		}
		if (!q->zombie && !s->fence) {
			o = &wc[got++];
			o->wr_id = s->wr_id;
			o->status = st;
			o->opcode = s->opcode;
			o->byte_len = 0;
			o->imm_data = 0;
			o->qp_num = q->base.qp_num;
			o->flags = 0;
			o->vendor_err = s->done ? s->vendor_err : 0;
		}
		if (!s->fence)
			q->n_user--;
		q->head++;
		c->n_held--;
	}
	return got;
}

static int release_all(struct ry__verbs_cq *c, struct ry_wc *wc, int n)
{
	struct ry__list *pos;
	int got = 0;

	ry__list_for_each(pos, &c->qps) {
		got += release(
		    c, ry__list_entry(pos, struct ry__verbs_qp, cq_link),
		    wc + got, n - got);
		if (got == n || !c->n_held)
			break;
	}
	return got;
}

static int cq_poll_locked(struct ry__verbs_rail *r, struct ry__verbs_cq *c,
			  struct ry_wc *wc, int n)
{
	struct ibv_wc w[POLL_BATCH];
	int got = 0;

	while (got < n) {
		struct ry__verbs_qp *touched[POLL_BATCH];
		int k = n - got < POLL_BATCH ? n - got : POLL_BATCH;
		int m = ibv_poll_cq(c->cq, k, w);
		int nt = 0;

		if (m < 0) {
			RY_ERR("verbs", "rail %s: ibv_poll_cq failed (%d)",
			       r->base.name, m);
			return got ? got : -EIO;
		}
		/* receives at once (at most m, there is room), sends into
		 * their rings, then the rings of the QPs they were for */
		for (int i = 0; i < m; i++) {
			struct ry__verbs_qp *q;

			got += translate(r, c, &w[i], &wc[got], &q);
			if (q && (!nt || touched[nt - 1] != q))
				touched[nt++] = q;
		}
		for (int i = 0; i < nt && got < n; i++)
			got += release(c, touched[i], wc + got, n - got);
		if (m < k)
			break;
	}
	if (c->n_held && got < n)
		got += release_all(c, wc + got, n - got);
	return got;
}

static int cq_poll(struct ry__verbs_rail *r, struct ry__verbs_cq *c,
		   struct ry_wc *wc, int n)
{
	int got;

	if (!c->cq) /* the rail's own, no QP on it yet */
		return 0;
	pthread_mutex_lock(&c->lock);
	got = cq_poll_locked(r, c, wc, n);
	pthread_mutex_unlock(&c->lock);
	return got;
}

int ry__verbs_poll_cq(struct ry_rail *rail, struct ry_wc *wc, int n)
{
	struct ry__verbs_rail *r = vrail(rail);

	return cq_poll(r, &r->cq, wc, n);
}

int ry__verbs_cq_poll(struct ry_cq *cq, struct ry_wc *wc, int n)
{
	return cq_poll(vrail(cq->rail), vcq(cq), wc, n);
}

/* As the rail's pending: only polling the CQ would tell. */
int ry__verbs_cq_pending(struct ry_cq *cq)
{
	return -EOPNOTSUPP;
}

int ry__verbs_cq_init(struct ry__verbs_rail *r, struct ry__verbs_cq *c)
{
	int rc = pthread_mutex_init(&c->lock, NULL);

	if (rc)
		return -rc;
	c->base.rail = &r->base;
	ry__list_init(&c->link);
	ry__list_init(&c->qps);
	return 0;
}

int ry__verbs_cq_open(struct ry__verbs_rail *r, struct ry__verbs_cq *c)
{
	int size = r->cq_fixed ? RY__VERBS_CQ_FIXED : RY__VERBS_CQ_MIN;
	int rc;

	if (size > r->dev_attr.max_cqe)
		size = r->dev_attr.max_cqe;

	c->cq = ibv_create_cq(r->ctx, size, c, r->channel, 0);
	if (!c->cq) {
		rc = -errno;
		RY_ERR("verbs", "rail %s: ibv_create_cq(%d): %m", r->base.name,
		       size);
		return rc;
	}
	c->cq_size = c->cq->cqe;
	c->cq_used = (int)r->srq_wr;
	rc = ibv_req_notify_cq(c->cq, 0);
	if (rc) {
		errno = rc;
		RY_ERR("verbs", "rail %s: ibv_req_notify_cq: %m", r->base.name);
		ibv_destroy_cq(c->cq);
		c->cq = NULL;
		return -rc;
	}
	return 0;
}

int ry__verbs_create_cq(struct ry_rail *rail, struct ry_cq **cq_p)
{
	struct ry__verbs_rail *r = vrail(rail);
	struct ry__verbs_cq *c = calloc(1, sizeof(*c));
	int rc;

	if (!c)
		return -ENOMEM;
	rc = ry__verbs_cq_init(r, c);
	if (rc) {
		free(c);
		return rc;
	}
	rc = ry__verbs_cq_open(r, c);
	if (rc) {
		pthread_mutex_destroy(&c->lock);
		free(c);
		return rc;
	}
	ry__list_add_tail(&r->cqs, &c->link);
	*cq_p = &c->base;
	return 0;
}

/*
 * Every event the channel gave for this CQ has been acked (progress acks
 * all it takes), so ibv_destroy_cq does not wait for one; those not yet
 * taken go with the CQ.  On failure (a QP still on it, one whose own
 * destroy failed) the CQ stays on the dead list for close, where it is
 * forgotten anyway: ibv_close_device takes what is left.
 */
static int cq_free(struct ry__verbs_rail *r, struct ry__verbs_cq *c,
		   bool closing)
{
	int rc;

	if (!c->cq) /* the rail's own, never made */
		return 0;
	rc = ibv_destroy_cq(c->cq);
	if (rc) {
		errno = rc;
		RY_ERR("verbs", "rail %s: ibv_destroy_cq: %m", r->base.name);
		if (!closing)
			return -rc;
	}
	ry__list_del(&c->link);
	if (c != &r->cq) {
		pthread_mutex_destroy(&c->lock);
		free(c);
	}
	return 0;
}

/*
 * A zombie (verbs_qp.c) is still on its ibv_cq, and the HCA may still
 * write completions of it there, so that ibv_cq cannot go yet.  The ry_cq
 * goes at once all the same: the CQ turns dead, everything in it from now
 * on is dropped (progress drains it, so that its zombies' sends are seen
 * done), and it is destroyed with its last zombie.  Nothing of a live QP
 * can be in it: destroy_cq is refused while the caller has one there.
 */
int ry__verbs_destroy_cq(struct ry_cq *cq)
{
	struct ry__verbs_rail *r = vrail(cq->rail);
	struct ry__verbs_cq *c = vcq(cq);

	if (c->n_qps)
		return -EBUSY;
	c->dead = true;
	ry__list_del(&c->link);
	ry__list_add_tail(&r->dead_cqs, &c->link);
	if (!ry__list_empty(&c->qps))
		RY_DBG("verbs", "rail %s: CQ destroyed, zombies to drain",
		       r->base.name);
	else
		cq_free(r, c, false);
	return 0;
}

void ry__verbs_cq_drain_dead(struct ry__verbs_rail *r)
{
	struct ry__list *pos;

	ry__list_for_each(pos, &r->dead_cqs) {
		struct ry__verbs_cq *c =
		    ry__list_entry(pos, struct ry__verbs_cq, link);
		struct ibv_wc w[POLL_BATCH];
		struct ry__verbs_qp *q;
		struct ry_wc o;
		int m;

		/* nobody polls a dead CQ but this: the lock is translate's
		 * rule, taken for it */
		pthread_mutex_lock(&c->lock);
		do {
			m = ibv_poll_cq(c->cq, POLL_BATCH, w);
			for (int i = 0; i < m; i++)
				if (!translate(r, c, &w[i], &o, &q) && q)
					release(c, q, &o, 0);
		} while (m == POLL_BATCH);
		pthread_mutex_unlock(&c->lock);
		if (m < 0)
			RY_ERR("verbs", "rail %s: ibv_poll_cq failed (%d)",
			       r->base.name, m);
	}
}

void ry__verbs_cq_put(struct ry__verbs_rail *r, struct ry__verbs_cq *c)
{
	if (c->dead && ry__list_empty(&c->qps))
		cq_free(r, c, false);
}

void ry__verbs_cq_close_all(struct ry__verbs_rail *r)
{
	struct ry__list *pos, *tmp;

	ry__list_for_each_safe(pos, tmp, &r->cqs)
		cq_free(r, ry__list_entry(pos, struct ry__verbs_cq, link),
			true);
	ry__list_for_each_safe(pos, tmp, &r->dead_cqs)
		cq_free(r, ry__list_entry(pos, struct ry__verbs_cq, link),
			true);
	cq_free(r, &r->cq, true);
}
