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
 * completion is matched to its send WR by the QP's ring of posted WRs (an
 * RC send queue completes in order); one that matches no send WR is a
 * receive's.  Any error completion means the QP is in ERR now: the HCA
 * moved it there, and the base struct says so at once.
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

/* A successful send completion's own opcode (verbs defines it only then) */
static enum ry_wc_opcode send_opcode(enum ibv_wc_opcode op)
{
	switch (op) {
	case IBV_WC_RDMA_READ:
		return RY_WC_RDMA_READ;
	case IBV_WC_SEND:
		return RY_WC_SEND;
	default:
		return RY_WC_RDMA_WRITE;
	}
}

/* Returns false for a completion nobody may see: a send WR of a QP the
 * caller destroyed.  Under c->lock. */
static bool translate(struct ry__verbs_rail *r, struct ry__verbs_cq *c,
		      const struct ibv_wc *w, struct ry_wc *o)
{
	struct ry__verbs_qp *q = ry__verbs_qp_find(c, w->qp_num);
	bool send;

	o->wr_id = w->wr_id;
	o->status = status_of(w->status);
	o->qp_num = w->qp_num;
	o->vendor_err = w->vendor_err;
	o->byte_len = 0;
	o->imm_data = 0;
	o->flags = 0;
	if (w->status == IBV_WC_SUCCESS)
		send = !(w->opcode & IBV_WC_RECV);
	else
		send = q && q->tail != q->head &&
		       !q->ring[q->head & q->ring_mask].flushed &&
		       q->ring[q->head & q->ring_mask].wr_id == w->wr_id;
	if (send && q && q->tail != q->head) {
		struct ry__verbs_swr *s = &q->ring[q->head++ & q->ring_mask];

		o->opcode = s->opcode;
		/* iWARP (siw) completes a WRITE posted after a READ before
		 * it: a success names its own opcode */
		if (s->wr_id != w->wr_id) {
			if (r->ctx->device->transport_type !=
			    IBV_TRANSPORT_IWARP)
				RY_WARN("verbs",
					"rail %s: qp 0x%x: completion for "
					"wr_id %#llx, expected %#llx",
					r->base.name, w->qp_num,
					(unsigned long long)w->wr_id,
					(unsigned long long)s->wr_id);
			if (w->status == IBV_WC_SUCCESS)
				o->opcode = send_opcode(w->opcode);
		}
		q->hw_outstanding--;
		if (q->zombie)
			return false;
	} else if (send) {
		/* a QP destroyed on a dead device: no ring to ask */
		o->opcode = send_opcode(w->opcode);
	} else {
		o->opcode = w->opcode == IBV_WC_RECV_RDMA_WITH_IMM &&
				    w->status == IBV_WC_SUCCESS
				? RY_WC_RECV_RDMA_IMM
				: RY_WC_RECV;
		o->byte_len = w->byte_len;
		if (w->status == IBV_WC_SUCCESS &&
		    (w->wc_flags & IBV_WC_WITH_IMM)) {
			o->flags |= RY_WC_WITH_IMM;
			o->imm_data = be32toh(w->imm_data);
		}
	}
	if (w->status != IBV_WC_SUCCESS && q && q->base.state != RY_QPS_ERR) {
		if (w->status != IBV_WC_WR_FLUSH_ERR)
			RY_DBG("verbs", "rail %s: qp 0x%x: %s (vendor 0x%x)",
			       r->base.name, w->qp_num,
			       ibv_wc_status_str(w->status), w->vendor_err);
		ry__verbs_qp_set_err(q);
	}
	return true;
}

/* WRs posted in ERR whose turn has come: they are at the ring's head.
 * They complete on their QP's CQ, as the HCA's would. */
static int poll_sw_flushed(struct ry__verbs_cq *c, struct ry_wc *wc, int n)
{
	struct ry__list *pos;
	int got = 0;

	ry__list_for_each(pos, &c->qps) {
		struct ry__verbs_qp *q =
		    ry__list_entry(pos, struct ry__verbs_qp, cq_link);

		while (got < n && q->tail != q->head &&
		       q->ring[q->head & q->ring_mask].flushed) {
			struct ry__verbs_swr *s =
			    &q->ring[q->head++ & q->ring_mask];
			struct ry_wc *o = &wc[got++];

			o->wr_id = s->wr_id;
			o->status = RY_WC_FLUSHED;
			o->opcode = s->opcode;
			o->byte_len = 0;
			o->imm_data = 0;
			o->qp_num = q->base.qp_num;
			o->flags = 0;
			o->vendor_err = 0;
			c->n_sw_flush--;
		}
		if (got == n)
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
		int k = n - got < POLL_BATCH ? n - got : POLL_BATCH;
		int m = ibv_poll_cq(c->cq, k, w);

		if (m < 0) {
			RY_ERR("verbs", "rail %s: ibv_poll_cq failed (%d)",
			       r->base.name, m);
			return got ? got : -EIO;
		}
		for (int i = 0; i < m; i++)
			if (translate(r, c, &w[i], &wc[got]))
				got++;
		if (m < k)
			break;
	}
	if (c->n_sw_flush && got < n)
		got += poll_sw_flushed(c, wc + got, n - got);
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
	int size = RY__VERBS_CQ_MIN < r->dev_attr.max_cqe ? RY__VERBS_CQ_MIN
							  : r->dev_attr.max_cqe;
	int rc;

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
		struct ry_wc o;
		int m;

		/* nobody polls a dead CQ but this: the lock is translate's
		 * rule, taken for it */
		pthread_mutex_lock(&c->lock);
		do {
			m = ibv_poll_cq(c->cq, POLL_BATCH, w);
			for (int i = 0; i < m; i++)
				translate(r, c, &w[i], &o);
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
