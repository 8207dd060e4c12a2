// SPDX-License-Identifier: BSD-2-Clause
/*
 * The responder: executes inbound requests in PSN order.
 *
 *   expected PSN      execute, advance, ACK (coalesced: one per progress)
 *   duplicate         re-ACK; a duplicate READ is executed again
 *   ahead of expected NAK sequence error once per gap (again only when the
 *                     requester visibly went back and still left a gap)
 *   far outside       dropped (rx_bad_psn)
 *
 * Every check (region, access, bounds, overflow, receive buffer) happens
 * before a byte is copied.  An access violation NAKs the requester and, as
 * IB's class C errors do, moves this QP to ERR as well.
 */
#include <string.h>

#include "rails/soft/soft_int.h"
#include "src/util/log.h"
#include "src/util/ring.h"

static void send_ack(struct ry__soft_qp *qp, uint8_t syn, uint32_t psn)
{
	struct ry__soft_pkt p = {
	    .opcode = RY__SOFT_OP_ACK,
	    .dqpn = qp->remote.qpn,
	    .psn = psn,
	    .cookie = qp->remote.cookie,
	    .syndrome = syn,
	    .msn = qp->resp.msn,
	};

	ry__soft_tx(qp, &p, NULL);
}

static void fatal(struct ry__soft_qp *qp, uint8_t syn, uint32_t psn)
{
	struct ry__soft_rail *r = qp_rail(qp);

	r->st.naks_sent++;
	send_ack(qp, syn, psn);
	ry__soft_qp_error(qp, RY_WC_FLUSHED);
}

static void access_error(struct ry__soft_qp *qp, uint32_t psn)
{
	struct ry__soft_rail *r = qp_rail(qp);

	r->st.rx_access_err++;
	r->st.rx_dropped++;
	RY_DBG("soft", "qp 0x%x: remote access error at psn 0x%x",
	       qp->base.qp_num, psn);
	fatal(qp, RY__SOFT_SYN_NAK_REM_ACCESS, psn);
}

static void recv_complete(struct ry__soft_qp *qp, const struct ry_recv_wr *rw,
			  enum ry_wc_status status, enum ry_wc_opcode op,
			  uint32_t len, const struct ry__soft_pkt *p)
{
	struct ry_wc wc = {
	    .wr_id = rw->wr_id,
	    .status = status,
	    .opcode = op,
	    .byte_len = len,
	    .qp_num = qp->base.qp_num,
	};

	if (p && (p->flags & RY__SOFT_F_IMM)) {
		wc.flags = RY_WC_WITH_IMM;
		wc.imm_data = p->imm;
	}
	ry__soft_cq_push(qp, &wc);
}

static bool srq_pop(struct ry__soft_rail *r, struct ry_recv_wr *rw)
{
	if (r->srq_head == r->srq_tail)
		return false;
	*rw = r->srq[ry__ring_slot(r->srq_head++, RY__SOFT_SRQ_SIZE)];
	return true;
}

static void rnr(struct ry__soft_qp *qp, uint32_t psn)
{
	qp_rail(qp)->st.rnr_naks_sent++;
	send_ack(qp, RY__SOFT_SYN_RNR, psn);
}

/* Returns false when the packet was not consumed (RNR) or killed the QP. */
static bool do_send(struct ry__soft_qp *qp, const struct ry__soft_pkt *p)
{
	struct ry__soft_rail *r = qp_rail(qp);
	struct ry_recv_wr *rw = &qp->resp.rwqe;
	uint64_t end;

	if (p->flags & RY__SOFT_F_FIRST) {
		if (qp->resp.has_rwqe) {
			fatal(qp, RY__SOFT_SYN_NAK_INV_REQ, p->psn);
			return false;
		}
		if (!srq_pop(r, rw)) {
			rnr(qp, p->psn);
			return false;
		}
		qp->resp.has_rwqe = true;
		qp->resp.roff = 0;
	} else if (!qp->resp.has_rwqe) {
		fatal(qp, RY__SOFT_SYN_NAK_INV_REQ, p->psn);
		return false;
	}
	if (p->va != qp->resp.roff || p->len > RY__SOFT_MAX_MSG) {
		fatal(qp, RY__SOFT_SYN_NAK_INV_REQ, p->psn);
		return false;
	}
	end = (uint64_t)qp->resp.roff + p->paylen;
	if (end > rw->sge.length) {
		recv_complete(qp, rw, RY_WC_LOC_LEN, RY_WC_RECV, 0, NULL);
		qp->resp.has_rwqe = false;
		fatal(qp, RY__SOFT_SYN_NAK_INV_REQ, p->psn);
		return false;
	}
	if (!ry__sw_mr_lkey(&r->mem, qp->base.pd, rw->sge.lkey,
			    rw->sge.addr + qp->resp.roff, p->paylen,
			    RY_ACCESS_LOCAL_WRITE)) {
		recv_complete(qp, rw, RY_WC_LOC_PROT, RY_WC_RECV, 0, NULL);
		qp->resp.has_rwqe = false;
		fatal(qp, RY__SOFT_SYN_NAK_REM_OP, p->psn);
		return false;
	}
	memcpy((void *)(uintptr_t)(rw->sge.addr + qp->resp.roff), p->payload,
	       p->paylen);
	qp->resp.roff = (uint32_t)end;
	if (p->flags & RY__SOFT_F_LAST) {
		recv_complete(qp, rw, RY_WC_SUCCESS, RY_WC_RECV, qp->resp.roff,
			      p);
		qp->resp.has_rwqe = false;
		qp->resp.msn = (qp->resp.msn + 1) & RY__SOFT_PSN_MASK;
	}
	return true;
}

static bool do_write(struct ry__soft_qp *qp, const struct ry__soft_pkt *p)
{
	struct ry__soft_rail *r = qp_rail(qp);
	struct ry_recv_wr rw = {0};
	uint64_t end;

	/* The whole message must fit, not just this packet. */
	if (!(qp->access & RY_ACCESS_REMOTE_WRITE) || p->paylen > p->len ||
	    ((p->flags & RY__SOFT_F_FIRST) &&
	     __builtin_add_overflow(p->va, (uint64_t)p->len, &end)) ||
	    !ry__sw_mr_rkey(&r->mem, qp->base.pd, p->rkey, p->va,
			    (p->flags & RY__SOFT_F_FIRST) ? p->len : p->paylen,
			    RY_ACCESS_REMOTE_WRITE)) {
		access_error(qp, p->psn);
		return false;
	}
	if ((p->flags & RY__SOFT_F_IMM) && r->srq_head == r->srq_tail) {
		rnr(qp, p->psn);
		return false;
	}
	ry__sw_land((void *)(uintptr_t)p->va, p->payload, p->paylen);
	if (p->flags & RY__SOFT_F_IMM) {
		srq_pop(r, &rw);
		recv_complete(qp, &rw, RY_WC_SUCCESS, RY_WC_RECV_RDMA_IMM,
			      p->len, p);
	}
	if (p->flags & RY__SOFT_F_LAST)
		qp->resp.msn = (qp->resp.msn + 1) & RY__SOFT_PSN_MASK;
	return true;
}

static uint32_t read_npkts(const struct ry__soft_qp *qp, uint32_t len)
{
	return len ? (len + qp->pmtu - 1) / qp->pmtu : 1;
}

static bool read_ok(struct ry__soft_qp *qp, const struct ry__soft_pkt *p)
{
	uint64_t end;

	return (qp->access & RY_ACCESS_REMOTE_READ) && !p->paylen &&
	       p->len <= RY__SOFT_MAX_MSG &&
	       !__builtin_add_overflow(p->va, (uint64_t)p->len, &end) &&
	       ry__sw_mr_rkey(&qp_rail(qp)->mem, qp->base.pd, p->rkey, p->va,
			      p->len, RY_ACCESS_REMOTE_READ);
}

static void queue_read(struct ry__soft_qp *qp, const struct ry__soft_pkt *p)
{
	struct ry__soft_rd *rd =
	    &qp->resp.rd[ry__ring_slot(qp->resp.rd_tail++, RY__SOFT_MAX_RD)];

	rd->va = p->va;
	rd->rkey = p->rkey;
	rd->len = p->len;
	rd->psn = p->psn;
	rd->pkt = 0;
	rd->npkts = read_npkts(qp, p->len);
}

static void duplicate(struct ry__soft_qp *qp, const struct ry__soft_pkt *p)
{
	struct ry__soft_rail *r = qp_rail(qp);

	r->st.dup_rcvd++;
	if (p->opcode != RY__SOFT_OP_READ_REQ) {
		qp->resp.ack_pending = true;
		return;
	}
	/* Only a READ we already executed may be executed again. */
	if (!read_ok(qp, p) ||
	    ry__soft_psn_cmp(
		ry__soft_psn_add(p->psn, (int32_t)read_npkts(qp, p->len)),
		qp->resp.psn) > 0) {
		r->st.rx_bad_psn++;
		r->st.rx_dropped++;
		return;
	}
	/* The requester went back to this READ: everything queued from its
	 * PSN on will be asked for again.  What is queued before it stays: a
	 * READ comes in several requests (soft_req.c), and the rest of an
	 * earlier chunk may still be waiting to go out. */
	while (qp->resp.rd_tail != qp->resp.rd_head) {
		uint32_t last =
		    ry__ring_slot(qp->resp.rd_tail - 1, RY__SOFT_MAX_RD);

		if (ry__soft_psn_cmp(qp->resp.rd[last].psn, p->psn) < 0)
			break;
		qp->resp.rd_tail--;
	}
	/* The READ still queued (or half sent) before it may run into the
	 * PSN asked for: its responses from there on would go out twice, the
	 * first copy only to be dropped as out of order -- on a slow path a
	 * whole chunk of waste in front of the retransmission, which then
	 * times out again. */
	if (qp->resp.rd_tail != qp->resp.rd_head) {
		struct ry__soft_rd *rd = &qp->resp.rd[ry__ring_slot(
		    qp->resp.rd_tail - 1, RY__SOFT_MAX_RD)];
		uint32_t upto = (uint32_t)ry__soft_psn_cmp(p->psn, rd->psn);

		if (upto < rd->npkts) {
			rd->npkts = upto;
			if (rd->pkt >= upto)
				qp->resp.rd_tail--;
		}
	}
	if (ry__ring_full(qp->resp.rd_head, qp->resp.rd_tail,
			  RY__SOFT_MAX_RD) ||
	    !ry__soft_rd_alloc(qp))
		return; /* the requester will ask again */
	queue_read(qp, p);
}

/* What the responder makes of a request's PSN; names for trace logs. */
enum resp_verdict {
	RESP_EXPECTED = 0,
	RESP_DUPLICATE,
	RESP_GAP,
	RESP_OUT_OF_WINDOW,
};

static const char *const resp_verdict_names[] = {
    [RESP_EXPECTED] = "expected",
    [RESP_DUPLICATE] = "duplicate",
    [RESP_GAP] = "gap",
    [RESP_OUT_OF_WINDOW] = "out-of-window",
};

static enum resp_verdict judge(int32_t d)
{
	if (d < -RY__SOFT_PSN_WINDOW || d > RY__SOFT_PSN_WINDOW)
		return RESP_OUT_OF_WINDOW;
	if (d < 0)
		return RESP_DUPLICATE;
	return d ? RESP_GAP : RESP_EXPECTED;
}

void ry__soft_resp_rx(struct ry__soft_qp *qp, const struct ry__soft_pkt *p)
{
	struct ry__soft_rail *r = qp_rail(qp);
	int32_t d = ry__soft_psn_cmp(p->psn, qp->resp.psn);
	enum resp_verdict v = judge(d);

	if (v != RESP_EXPECTED)
		RY_TRACE("soft", "qp 0x%x: psn 0x%x %s (expected 0x%x)",
			 qp->base.qp_num, p->psn, resp_verdict_names[v],
			 qp->resp.psn);

	switch (v) {
	case RESP_OUT_OF_WINDOW:
		r->st.rx_bad_psn++;
		r->st.rx_dropped++;
		return;
	case RESP_DUPLICATE:
		duplicate(qp, p);
		return;
	case RESP_GAP:
		if (!qp->resp.nak_sent ||
		    ry__soft_psn_cmp(p->psn, qp->resp.nak_hi) <= 0) {
			qp->resp.nak_sent = true;
			r->st.naks_sent++;
			send_ack(qp, RY__SOFT_SYN_NAK_SEQ, qp->resp.psn);
		}
		qp->resp.nak_hi = p->psn;
		return;
	case RESP_EXPECTED:
		break;
	}
	switch (p->opcode) {
	case RY__SOFT_OP_SEND:
		if (!do_send(qp, p))
			return;
		break;
	case RY__SOFT_OP_WRITE:
		if (!do_write(qp, p))
			return;
		break;
	case RY__SOFT_OP_READ_REQ:
		if (!read_ok(qp, p)) {
			access_error(qp, p->psn);
			return;
		}
		if (ry__ring_full(qp->resp.rd_head, qp->resp.rd_tail,
				  RY__SOFT_MAX_RD))
			return; /* the requester exceeded max_rd: it retries */
		if (!ry__soft_rd_alloc(qp))
			return; /* no memory for it now: it retries too */
		queue_read(qp, p);
		qp->resp.nak_sent = false;
		qp->resp.psn = ry__soft_psn_add(
		    qp->resp.psn, (int32_t)read_npkts(qp, p->len));
		qp->resp.msn = (qp->resp.msn + 1) & RY__SOFT_PSN_MASK;
		return;
	}
	qp->resp.nak_sent = false;
	qp->resp.psn = ry__soft_psn_add(qp->resp.psn, 1);
	qp->resp.ack_pending = true;
}

/* Send queued READ responses, then the coalesced ACK: an ACK must not
 * overtake the responses of an earlier READ. */
void ry__soft_resp_run(struct ry__soft_qp *qp)
{
	struct ry__soft_rail *r = qp_rail(qp);

	if (qp->base.state != RY_QPS_RTR && qp->base.state != RY_QPS_RTS)
		return;
	while (qp->resp.rd_head != qp->resp.rd_tail && !ry__soft_tx_full(r)) {
		uint32_t slot =
		    ry__ring_slot(qp->resp.rd_head, RY__SOFT_MAX_RD);
		struct ry__soft_rd *rd = &qp->resp.rd[slot];
		uint64_t off = (uint64_t)rd->pkt * qp->pmtu;
		uint32_t chunk = rd->len - (uint32_t)off;
		struct ry__soft_pkt p = {
		    .opcode = RY__SOFT_OP_READ_RESP,
		    .dqpn = qp->remote.qpn,
		    .psn = ry__soft_psn_add(rd->psn, (int32_t)rd->pkt),
		    .cookie = qp->remote.cookie,
		    .va = off,
		    .len = rd->len,
		    .msn = qp->resp.msn,
		};

		if (chunk > qp->pmtu)
			chunk = qp->pmtu;
		/* Checked per packet: deregistration revokes at once. */
		if (!ry__sw_mr_rkey(&r->mem, qp->base.pd, rd->rkey,
				    rd->va + off, chunk,
				    RY_ACCESS_REMOTE_READ)) {
			access_error(qp, p.psn);
			return;
		}
		p.paylen = chunk;
		if (rd->pkt == 0)
			p.flags |= RY__SOFT_F_FIRST;
		if (rd->pkt + 1 == rd->npkts)
			p.flags |= RY__SOFT_F_LAST;
		ry__soft_tx(qp, &p, (const void *)(uintptr_t)(rd->va + off));
		if (++rd->pkt == rd->npkts)
			qp->resp.rd_head++;
	}
	if (qp->resp.ack_pending && qp->resp.rd_head == qp->resp.rd_tail) {
		qp->resp.ack_pending = false;
		send_ack(qp, RY__SOFT_SYN_ACK,
			 ry__soft_psn_add(qp->resp.psn, -1));
	}
}
