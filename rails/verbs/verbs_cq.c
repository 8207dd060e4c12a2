// SPDX-License-Identifier: BSD-2-Clause
/*
 * poll_cq of the verbs rail: the rail's one CQ, ibv_wc -> ry_wc.
 *
 * Verbs defines wc.opcode only for successful completions, so an error
 * completion is matched to its send WR by the QP's ring of posted WRs (an
 * RC send queue completes in order); one that matches no send WR is a
 * receive's.  Any error completion means the QP is in ERR now: the HCA
 * moved it there, and the base struct says so at once.
 */
#include <endian.h>
#include <errno.h>

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

/* Returns false for a completion nobody may see: a send WR of a QP the
 * caller destroyed. */
static bool translate(struct ry__verbs_rail *r, const struct ibv_wc *w,
		      struct ry_wc *o)
{
	struct ry__verbs_qp *q = ry__verbs_qp_find(r, w->qp_num);
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

		if (s->wr_id != w->wr_id)
			RY_WARN("verbs",
				"rail %s: qp 0x%x: completion for wr_id %#llx, "
				"expected %#llx",
				r->base.name, w->qp_num,
				(unsigned long long)w->wr_id,
				(unsigned long long)s->wr_id);
		o->opcode = s->opcode;
		q->hw_outstanding--;
		if (q->zombie)
			return false;
	} else if (send) {
		/* a QP destroyed on a dead device: no ring to ask */
		o->opcode = w->opcode == IBV_WC_RDMA_READ ? RY_WC_RDMA_READ
			    : w->opcode == IBV_WC_SEND	  ? RY_WC_SEND
							  : RY_WC_RDMA_WRITE;
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

/* WRs posted in ERR whose turn has come: they are at the ring's head. */
static int poll_sw_flushed(struct ry__verbs_rail *r, struct ry_wc *wc, int n)
{
	int got = 0;

	for (unsigned b = 0; b < RY__VERBS_QP_BUCKETS && got < n; b++)
		for (struct ry__verbs_qp *q = r->qp_hash[b]; q && got < n;
		     q = q->hnext)
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
				r->n_sw_flush--;
			}
	return got;
}

int ry__verbs_poll_cq(struct ry_rail *rail, struct ry_wc *wc, int n)
{
	struct ry__verbs_rail *r = vrail(rail);
	struct ibv_wc w[POLL_BATCH];
	int got = 0;

	while (got < n) {
		int k = n - got < POLL_BATCH ? n - got : POLL_BATCH;
		int m = ibv_poll_cq(r->cq, k, w);

		if (m < 0) {
			RY_ERR("verbs", "rail %s: ibv_poll_cq failed (%d)",
			       r->base.name, m);
			return got ? got : -EIO;
		}
		for (int i = 0; i < m; i++)
			if (translate(r, &w[i], &wc[got]))
				got++;
		if (m < k)
			break;
	}
	if (r->n_sw_flush && got < n)
		got += poll_sw_flushed(r, wc + got, n - got);
	return got;
}
