// SPDX-License-Identifier: BSD-2-Clause
/*
 * The requester: turns posted WRs into packets, keeps at most the congestion
 * window's PSNs in flight (soft_cc.c; never more than qp->window), and goes
 * back N (rewinds to a PSN and sends everything
 * again from there) on a NAK, an out-of-order READ response or a timeout.
 * After retry_cnt timeouts with no progress the head WR completes with
 * RY_WC_RETRY_EXCEEDED and the QP goes to ERR.  Each timeout in a row
 * waits twice the one before (RTO, 2 RTO, 4 RTO, ... up to
 * 2^RY__SOFT_BACKOFF_SHIFT RTOs), so the budget is time, about 2^(retry_cnt+1)
 * RTOs, not a count of short waits: a peer busy for half a second (a
 * starved server) is waited for, as an HCA's retry_cnt x timeout would.
 * The node's own stalls cost nothing: packets are received before timers
 * are run, so a late timer finds the ACK already counted.
 *
 * A WR occupies npkts PSNs; packet k carries bytes [k*pmtu, (k+1)*pmtu) and
 * the remote address of exactly those bytes, so a rewind into the middle of
 * a WR needs no state but the PSN.  A READ request asks for the rest of the
 * READ from its PSN on; its responses come back under PSN, PSN+1, ...
 */
#include "rails/soft/soft_int.h"
#include "src/util/log.h"
#include "src/util/ring.h"

const char *const ry__soft_req_state_names[] = {
    [RY__SOFT_REQ_IDLE] = "idle",	  [RY__SOFT_REQ_SENDING] = "sending",
    [RY__SOFT_REQ_WAIT_ACK] = "wait-ack", [RY__SOFT_REQ_WAIT_RNR] = "wait-rnr",
    [RY__SOFT_REQ_ERROR] = "error",
};

static struct ry__soft_wqe *wqe(struct ry__soft_qp *qp, uint32_t idx)
{
	return &qp->sq[ry__ring_slot(idx, qp->sq_size)];
}

/*
 * A READ's responses are asked for in chunks of rd_chunk packets, each
 * chunk ending at a multiple of rd_chunk or at the last response; a rewind
 * into a chunk asks for the rest of it.  So a request is answered when the
 * response at a chunk's end arrives, and the requests outstanding for
 * responses [lo, hi) are the chunk ends in it.
 */
uint32_t ry__soft_rd_chunks(const struct ry__soft_qp *qp,
			    const struct ry__soft_wqe *w, uint32_t lo,
			    uint32_t hi)
{
	uint32_t c = qp->rd_chunk, n;

	if (hi > w->npkts)
		hi = w->npkts;
	if (lo >= hi)
		return 0;
	n = hi / c - lo / c; /* ends at j with (j + 1) % c == 0 */
	if (hi == w->npkts && w->npkts % c)
		n++; /* the last response ends a short chunk */
	return n;
}

void ry__soft_req_rewind(struct ry__soft_qp *qp, uint32_t psn)
{
	uint32_t i;

	if (ry__soft_psn_cmp(psn, qp->comp.psn) < 0)
		psn = qp->comp.psn;
	qp->req.rd_out = 0;
	for (i = qp->sq_head; i != qp->sq_tail; i++) {
		struct ry__soft_wqe *w = wqe(qp, i);
		int32_t k = ry__soft_psn_cmp(psn, w->first_psn);
		int32_t lo = ry__soft_psn_cmp(qp->comp.psn, w->first_psn);
		uint32_t hi =
		    k >= 0 && (uint32_t)k < w->npkts ? (uint32_t)k : w->npkts;

		/* requests before the rewind point stay outstanding */
		if (w->wr.opcode == RY_WR_RDMA_READ)
			qp->req.rd_out += ry__soft_rd_chunks(
			    qp, w, lo > 0 ? (uint32_t)lo : 0, hi);
		if (k >= 0 && (uint32_t)k < w->npkts) {
			qp->req.pkt = (uint32_t)k;
			break;
		}
	}
	if (i == qp->sq_tail) {
		qp->req.pkt = 0;
		psn = qp->post_psn;
	}
	qp->req.idx = i;
	qp->req.psn = psn;
	ry__soft_cc_rewound(qp);
	RY_TRACE("soft", "qp 0x%x: go back to psn 0x%x", qp->base.qp_num, psn);
}

static void send_read_req(struct ry__soft_qp *qp, struct ry__soft_wqe *w,
			  uint8_t flags, uint32_t n)
{
	uint64_t off = (uint64_t)qp->req.pkt * qp->pmtu;
	uint64_t len = w->wr.sge.length - off;

	if (len > (uint64_t)n * qp->pmtu)
		len = (uint64_t)n * qp->pmtu;
	struct ry__soft_pkt p = {
	    .opcode = RY__SOFT_OP_READ_REQ,
	    .flags = flags | RY__SOFT_F_FIRST | RY__SOFT_F_LAST,
	    .dqpn = qp->remote.qpn,
	    .psn = qp->req.psn,
	    .cookie = qp->remote.cookie,
	    .va = w->wr.remote_addr + off,
	    .rkey = w->wr.rkey,
	    .len = (uint32_t)len,
	};

	ry__soft_tx(qp, &p, NULL);
}

static void send_data(struct ry__soft_qp *qp, struct ry__soft_wqe *w,
		      uint8_t flags, const void *src, uint32_t chunk)
{
	uint64_t off = (uint64_t)qp->req.pkt * qp->pmtu;
	bool write = w->wr.opcode == RY_WR_RDMA_WRITE ||
		     w->wr.opcode == RY_WR_RDMA_WRITE_IMM;
	bool imm = w->wr.opcode == RY_WR_RDMA_WRITE_IMM ||
		   w->wr.opcode == RY_WR_SEND_IMM;
	struct ry__soft_pkt p = {
	    .opcode = write ? RY__SOFT_OP_WRITE : RY__SOFT_OP_SEND,
	    .flags = flags,
	    .dqpn = qp->remote.qpn,
	    .psn = qp->req.psn,
	    .cookie = qp->remote.cookie,
	    .va = write ? w->wr.remote_addr + off : off,
	    .rkey = write ? w->wr.rkey : 0,
	    .len = w->wr.sge.length,
	    .paylen = chunk,
	};

	if (qp->req.pkt == 0)
		p.flags |= RY__SOFT_F_FIRST;
	if (qp->req.pkt + 1 == w->npkts) {
		p.flags |= RY__SOFT_F_LAST | RY__SOFT_F_ACKREQ;
		if (imm) {
			p.flags |= RY__SOFT_F_IMM;
			p.imm = w->wr.imm_data;
		}
	}
	ry__soft_tx(qp, &p, src);
}

void ry__soft_req_run(struct ry__soft_qp *qp)
{
	struct ry__soft_rail *r = qp_rail(qp);
	int32_t window = (int32_t)ry__soft_cc_window(qp);

	qp->req.more = false;
	if (qp->base.state != RY_QPS_RTS)
		return;
	if (qp->comp.rnr_until) {
		if (r->now < qp->comp.rnr_until)
			return;
		qp->comp.rnr_until = 0;
	}
	/* sent by post_send: the clock starts now (soft_qp.c) */
	if (!qp->comp.deadline && qp->comp.psn != qp->req.max_psn)
		qp->comp.deadline = r->now + ry__soft_cc_rto(qp);
	while (qp->req.idx != qp->sq_tail) {
		struct ry__soft_wqe *w = wqe(qp, qp->req.idx);
		bool read = w->wr.opcode == RY_WR_RDMA_READ;
		/* a READ asks up to the end of the current chunk */
		uint32_t n = 1;
		uint64_t off = (uint64_t)qp->req.pkt * qp->pmtu;
		uint8_t flags = 0;
		int32_t inflight = ry__soft_psn_cmp(qp->req.psn, qp->comp.psn);

		if (ry__soft_tx_full(r)) {
			qp->req.more = true;
			break;
		}
		if (read) {
			n = (qp->req.pkt / qp->rd_chunk + 1) * qp->rd_chunk;
			n = (n < w->npkts ? n : w->npkts) - qp->req.pkt;
		}

		/* A READ's responses count in full: they are what it puts
		 * on the path.  One too big for the window goes alone.  A
		 * READ also waits for max_rd's room. */
		if (inflight >= window ||
		    (inflight && inflight + (int32_t)n > window) ||
		    (read && qp->req.rd_out >= qp->max_rd)) {
			qp->req.state = RY__SOFT_REQ_WAIT_ACK;
			break;
		}
		if (ry__soft_psn_cmp(qp->req.psn, qp->req.max_psn) < 0) {
			flags |= RY__SOFT_F_RETRY;
			r->st.retransmits++;
		}
		if (read) {
			if (!ry__sw_mr_lkey(
				&r->mem, qp->base.pd, w->wr.sge.lkey,
				w->wr.sge.addr + off, w->wr.sge.length - off,
				RY_ACCESS_LOCAL_WRITE)) {
				ry__soft_qp_error_at(qp, qp->req.idx,
						     RY_WC_LOC_PROT);
				return;
			}
			send_read_req(qp, w, flags, n);
			qp->req.rd_out++;
		} else {
			uint32_t chunk = w->wr.sge.length - (uint32_t)off;

			if (chunk > qp->pmtu)
				chunk = qp->pmtu;
			/* Checked per packet: a region deregistered while
			 * its WR is in flight stops at once. */
			if (!ry__sw_mr_lkey(&r->mem, qp->base.pd,
					    w->wr.sge.lkey,
					    w->wr.sge.addr + off, chunk, 0)) {
				ry__soft_qp_error_at(qp, qp->req.idx,
						     RY_WC_LOC_PROT);
				return;
			}
			send_data(
			    qp, w, flags,
			    (const void *)(uintptr_t)(w->wr.sge.addr + off),
			    chunk);
		}
		qp->req.state = RY__SOFT_REQ_SENDING;
		if (!(flags & RY__SOFT_F_RETRY))
			ry__soft_cc_sent(qp, qp->req.psn);
		qp->req.psn = ry__soft_psn_add(qp->req.psn, (int32_t)n);
		if (ry__soft_psn_cmp(qp->req.psn, qp->req.max_psn) > 0)
			qp->req.max_psn = qp->req.psn;
		qp->req.pkt += n;
		if (qp->req.pkt == w->npkts) {
			qp->req.idx++;
			qp->req.pkt = 0;
		}
		if (!qp->comp.deadline)
			qp->comp.deadline = r->now + ry__soft_cc_rto(qp);
	}
}

void ry__soft_req_timers(struct ry__soft_qp *qp)
{
	struct ry__soft_rail *r = qp_rail(qp);

	if (qp->base.state != RY_QPS_RTS || !qp->comp.deadline ||
	    r->now < qp->comp.deadline)
		return;
	if (qp->comp.psn == qp->req.max_psn) {
		qp->comp.deadline = 0; /* nothing unacknowledged */
		return;
	}
	if (!qp->comp.retry_left) {
		RY_DBG("soft", "qp 0x%x: retries exhausted at psn 0x%x (%s)",
		       qp->base.qp_num, qp->comp.psn,
		       ry__soft_req_state_names[qp->req.state]);
		ry__soft_qp_error(qp, RY_WC_RETRY_EXCEEDED);
		return;
	}
	RY_DBG("soft", "qp 0x%x: timeout %u of %u at psn 0x%x (sent to 0x%x)",
	       qp->base.qp_num, qp->retry_cnt - qp->comp.retry_left + 1,
	       qp->retry_cnt, qp->comp.psn, qp->req.max_psn);
	qp->comp.retry_left--;
	if (qp->comp.backoff < RY__SOFT_BACKOFF_SHIFT)
		qp->comp.backoff++;
	ry__soft_cc_timeout(qp);
	ry__soft_req_rewind(qp, qp->comp.psn);
	qp->comp.deadline = r->now + (ry__soft_cc_rto(qp) << qp->comp.backoff);
}

uint64_t ry__soft_req_next_timer(struct ry__soft_qp *qp)
{
	uint64_t t = qp->comp.deadline;

	if (qp->base.state != RY_QPS_RTS)
		return 0;
	if (qp->comp.rnr_until && (!t || qp->comp.rnr_until < t))
		t = qp->comp.rnr_until;
	/* More to send but the batch filled: come back at once.  Not when
	 * the window or max_rd stopped it: an ACK or a READ response kicks
	 * it then, and coming back at once would spin the owner's thread
	 * (the timerfd armed in the past at every call) until one arrives. */
	if (qp->req.more && !qp->comp.rnr_until)
		t = 1;
	return t;
}
