// SPDX-License-Identifier: BSD-2-Clause
/*
 * The completer: what comes back to a requester.  An ACK for PSN X
 * acknowledges every PSN up to X; a READ response for PSN P acknowledges
 * everything before P and carries the data of P.  NAKs: a sequence error
 * rewinds to the PSN the responder expects; RNR waits min_rnr_timer and
 * rewinds, rnr_retry times; the error NAKs complete the head WR with their
 * status and move the QP to ERR.
 */
#include <string.h>

#include "rails/soft/soft_int.h"
#include "src/util/log.h"
#include "src/util/ring.h"

static struct ry__soft_wqe *head(struct ry__soft_qp *qp)
{
	return qp->sq_head == qp->sq_tail
		   ? NULL
		   : &qp->sq[ry__ring_slot(qp->sq_head, qp->sq_size)];
}

static void progressed(struct ry__soft_qp *qp)
{
	struct ry__soft_rail *r = qp_rail(qp);

	qp->comp.retry_left = qp->retry_cnt;
	qp->comp.backoff = 0;
	qp->comp.rnr_left = qp->rnr_retry;
	qp->comp.rewound = false;
	ry__soft_cc_acked(qp);
	qp->comp.deadline =
	    qp->comp.psn == qp->req.max_psn ? 0 : r->now + ry__soft_cc_rto(qp);
	/* An old ACK may cover PSNs the requester rewound to resend. */
	if (ry__soft_psn_cmp(qp->req.psn, qp->comp.psn) < 0)
		ry__soft_req_rewind(qp, qp->comp.psn);
}

/* Every PSN up to and including x arrived.  True when something moved. */
static bool ack_upto(struct ry__soft_qp *qp, uint32_t x)
{
	struct ry__soft_wqe *w;
	bool moved = false;

	while ((w = head(qp))) {
		uint32_t last =
		    ry__soft_psn_add(w->first_psn, (int32_t)w->npkts - 1);

		if (ry__soft_psn_cmp(x, w->first_psn) < 0 ||
		    w->wr.opcode == RY_WR_RDMA_READ)
			break; /* READs complete by their responses */
		if (ry__soft_psn_cmp(x, last) >= 0) {
			ry__soft_wqe_complete(qp, w, RY_WC_SUCCESS);
			qp->sq_head++;
			qp->comp.psn = ry__soft_psn_add(last, 1);
			moved = true;
			continue;
		}
		if (ry__soft_psn_cmp(x, qp->comp.psn) >= 0) {
			qp->comp.psn = ry__soft_psn_add(x, 1);
			moved = true;
		}
		break;
	}
	return moved;
}

/*
 * A NAK (sequence error or RNR) also acknowledges everything before its
 * PSN.  False for a stale one, from before what is already acknowledged.
 */
static bool nak_acks(struct ry__soft_rail *r, struct ry__soft_qp *qp,
		     uint32_t psn)
{
	r->st.naks_rcvd++;
	if (ry__soft_psn_cmp(psn, qp->comp.psn) < 0)
		return false;
	if (ack_upto(qp, ry__soft_psn_add(psn, -1)))
		progressed(qp);
	return true;
}

/* Go back to comp.psn once per gap: repeated evidence of the same loss
 * must not restart the window again and again. */
static void rewind_once(struct ry__soft_qp *qp)
{
	if (qp->comp.rewound && qp->comp.rewound_psn == qp->comp.psn)
		return;
	qp->comp.rewound = true;
	qp->comp.rewound_psn = qp->comp.psn;
	ry__soft_cc_loss(qp);
	ry__soft_req_rewind(qp, qp->comp.psn);
}

static void read_resp(struct ry__soft_qp *qp, const struct ry__soft_pkt *p)
{
	struct ry__soft_rail *r = qp_rail(qp);
	struct ry__soft_wqe *w;
	uint64_t off, expect;
	int32_t k;

	if (ry__soft_psn_cmp(p->psn, qp->comp.psn) < 0) {
		r->st.dup_rcvd++;
		return;
	}
	if (ry__soft_psn_cmp(p->psn, qp->comp.psn) > 0) {
		/* implicit ACK of everything before, then the gap */
		if (ack_upto(qp, ry__soft_psn_add(p->psn, -1)))
			progressed(qp);
		if (ry__soft_psn_cmp(p->psn, qp->comp.psn) > 0) {
			/* A PSN at or below the last out-of-order one means
			 * the responder started over and lost its head again:
			 * that is a new gap, ask again. */
			if (qp->comp.rewound &&
			    ry__soft_psn_cmp(p->psn, qp->comp.ooo_psn) <= 0)
				qp->comp.rewound = false;
			qp->comp.ooo_psn = p->psn;
			rewind_once(qp);
			return;
		}
	}
	w = head(qp);
	if (!w || w->wr.opcode != RY_WR_RDMA_READ) {
		r->st.rx_bad_psn++;
		r->st.rx_dropped++;
		return;
	}
	k = ry__soft_psn_cmp(p->psn, w->first_psn);
	if (k < 0 || (uint32_t)k >= w->npkts) {
		r->st.rx_bad_psn++;
		r->st.rx_dropped++;
		return;
	}
	off = (uint64_t)k * qp->pmtu;
	expect = w->wr.sge.length - off;
	if (expect > qp->pmtu)
		expect = qp->pmtu;
	if (p->paylen != expect) {
		r->st.rx_bad_header++;
		r->st.rx_dropped++;
		return;
	}
	if (!ry__sw_mr_lkey(&r->mem, qp->base.pd, w->wr.sge.lkey,
			    w->wr.sge.addr + off, expect,
			    RY_ACCESS_LOCAL_WRITE)) {
		ry__soft_qp_error(qp, RY_WC_LOC_PROT);
		return;
	}
	ry__sw_land((void *)(uintptr_t)(w->wr.sge.addr + off), p->payload,
		    p->paylen);
	qp->comp.psn = ry__soft_psn_add(p->psn, 1);
	/* the end of a chunk: one READ request answered */
	if (ry__soft_rd_chunks(qp, w, (uint32_t)k, (uint32_t)k + 1) &&
	    qp->req.rd_out)
		qp->req.rd_out--;
	if ((uint32_t)k + 1 == w->npkts) {
		ry__soft_wqe_complete(qp, w, RY_WC_SUCCESS);
		qp->sq_head++;
	}
	progressed(qp);
}

static void nak_error(struct ry__soft_qp *qp, uint32_t psn,
		      enum ry_wc_status status)
{
	if (ack_upto(qp, ry__soft_psn_add(psn, -1)))
		progressed(qp);
	ry__soft_qp_error(qp, status);
}

static void ack(struct ry__soft_qp *qp, const struct ry__soft_pkt *p)
{
	struct ry__soft_rail *r = qp_rail(qp);
	uint32_t psn = p->psn;
	struct ry__soft_wqe *w;

	switch (p->syndrome) {
	case RY__SOFT_SYN_ACK:
		if (ry__soft_psn_cmp(psn, qp->comp.psn) < 0) {
			r->st.dup_rcvd++;
			return;
		}
		if (ack_upto(qp, psn))
			progressed(qp);
		w = head(qp);
		/* An ACK past a READ whose responses are missing: they
		 * were lost, ask again. */
		if (w && w->wr.opcode == RY_WR_RDMA_READ &&
		    ry__soft_psn_cmp(psn, w->first_psn) >= 0)
			rewind_once(qp);
		return;
	case RY__SOFT_SYN_NAK_SEQ:
		if (!nak_acks(r, qp, psn))
			return;
		ry__soft_cc_loss(qp);
		ry__soft_req_rewind(qp, psn);
		return;
	case RY__SOFT_SYN_RNR:
		if (!nak_acks(r, qp, psn))
			return;
		if (!qp->comp.rnr_left) {
			ry__soft_qp_error(qp, RY_WC_RNR_RETRY_EXCEEDED);
			return;
		}
		qp->comp.rnr_left--;
		qp->comp.rnr_until = r->now + qp->min_rnr_ns;
		qp->comp.deadline = 0;
		qp->req.state = RY__SOFT_REQ_WAIT_RNR;
		ry__soft_req_rewind(qp, psn);
		return;
	case RY__SOFT_SYN_NAK_REM_ACCESS:
		r->st.naks_rcvd++;
		nak_error(qp, psn, RY_WC_REM_ACCESS);
		return;
	case RY__SOFT_SYN_NAK_INV_REQ:
		r->st.naks_rcvd++;
		nak_error(qp, psn, RY_WC_REM_INVALID_REQ);
		return;
	case RY__SOFT_SYN_NAK_REM_OP:
		r->st.naks_rcvd++;
		nak_error(qp, psn, RY_WC_REM_OP);
		return;
	default:
		r->st.rx_bad_header++;
		r->st.rx_dropped++;
		return;
	}
}

bool ry__soft_comp_next_resp(struct ry__soft_qp *qp, uint32_t *psn)
{
	struct ry__soft_wqe *w = head(qp);

	if (!w || w->wr.opcode != RY_WR_RDMA_READ || qp->comp.rewound)
		return false;
	/* before its first response, that one also ACKs what preceded it */
	*psn = ry__soft_psn_cmp(qp->comp.psn, w->first_psn) >= 0 ? qp->comp.psn
								 : w->first_psn;
	return true;
}

void ry__soft_comp_rx(struct ry__soft_qp *qp, const struct ry__soft_pkt *p)
{
	struct ry__soft_rail *r = qp_rail(qp);

	/* Nothing may acknowledge a PSN that was never sent. */
	if (ry__soft_psn_cmp(p->psn, qp->req.max_psn) >= 0 ||
	    ry__soft_psn_cmp(p->psn, qp->comp.psn) < -RY__SOFT_PSN_WINDOW) {
		r->st.rx_bad_psn++;
		r->st.rx_dropped++;
		return;
	}
	if (p->opcode == RY__SOFT_OP_READ_RESP)
		read_resp(qp, p);
	else if (!p->paylen)
		ack(qp, p);
	else {
		r->st.rx_bad_header++;
		r->st.rx_dropped++;
	}
}
