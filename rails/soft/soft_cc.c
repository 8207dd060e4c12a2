// SPDX-License-Identifier: BSD-2-Clause
/*
 * Congestion control for the requester: a window in packets, driven by
 * delay first and loss second.
 *
 * Why delay: the soft rail's retransmit timer is the QP's ack_timeout (the
 * manager uses 20 ms) and its liveness timeout is 100 ms, while a shaped
 * link may queue far longer than that (tc tbf with latency 400 ms).  A pure
 * loss-based window (Reno) fills whatever buffer the bottleneck has before
 * it backs off, so the RTT grows past ack_timeout and every "timeout" is
 * spurious: go-back-N resends a window the bottleneck is still holding, and
 * the retry counter runs out on a live path.  So, as Swift (Google's
 * delay-based CC for RDMA-like transports) and TIMELY do, the window is
 * kept so that the queueing delay stays near a small target, whatever the
 * buffer depth; loss is only the backstop for buffers shallower than that.
 *
 *   RTT sample    one at a time: the time from sending a new PSN to the ACK
 *                 that covers it; dropped on any go-back-N (Karn), so a
 *                 retransmission never gives a sample
 *   base RTT      the smallest sample of this connection
 *   target        base RTT + RY__SOFT_CC_QDELAY_NS of queueing
 *   increase      slow start (+1 per packet acknowledged) up to ssthresh,
 *                 then +1 packet per window acknowledged (per RTT), both
 *                 only while the last sample was under target
 *   delay > target   multiplicative decrease proportional to the excess,
 *                 cwnd *= 1 - 0.8 (rtt - target) / rtt, at most halving,
 *                 at most once per RTT; ends slow start
 *   NAK sequence, out-of-order READ response  (a gap: loss)
 *                 halve, once per window: not again until everything sent
 *                 before the cut is acknowledged (NewReno's recovery point),
 *                 since go-back-N's stale packets still in the pipe report
 *                 the same loss
 *   timeout       ssthresh = cwnd / 2, cwnd = RY__SOFT_CC_MIN: the go-back-N
 *                 resend that follows starts small and slow-starts again, so
 *                 it cannot itself overflow the bottleneck
 *   RTO           max(ack_timeout, srtt + 4 rttvar), at most 4 ack_timeout:
 *                 ack_timeout stays the floor the user asked for, but a
 *                 queue that briefly exceeds it is not mistaken for loss
 *
 * The window counts PSNs between the oldest unacknowledged one and the next
 * to send, READ responses included (a READ occupies one PSN per response),
 * so the window also bounds the READ response bytes a peer sends us: a
 * READ is asked for in requests of RY__SOFT_READ_CHUNK (soft_req.c), each
 * sent when the window has room for its responses, or alone when nothing
 * else is in flight.
 * The retry counter is the completer's: reset by every forward progress, so
 * only timeouts without progress count, as in IB.  The state lives in
 * qp->cc; nothing allocates.
 */
#include "rails/soft/soft_int.h"
#include "src/util/log.h"

#define RY__SOFT_CC_INIT 16		 /* initial window, packets */
#define RY__SOFT_CC_MIN 2		 /* smallest window, packets */
#define RY__SOFT_CC_QDELAY_NS 4000000ull /* queueing delay target: 4 ms */

void ry__soft_cc_init(struct ry__soft_qp *qp)
{
	struct ry__soft_cc *cc = &qp->cc;

	*cc = (struct ry__soft_cc){
	    .cwnd =
		RY__SOFT_CC_INIT < qp->window ? RY__SOFT_CC_INIT : qp->window,
	    .ssthresh = qp->window,
	    .acked_psn = qp->comp.psn,
	};
}

uint32_t ry__soft_cc_window(const struct ry__soft_qp *qp)
{
	return qp->cc.cwnd < qp->window ? qp->cc.cwnd : qp->window;
}

uint64_t ry__soft_cc_rto(const struct ry__soft_qp *qp)
{
	const struct ry__soft_cc *cc = &qp->cc;
	uint64_t rto = cc->srtt + 4 * cc->rttvar;

	if (rto < qp->ack_timeout_ns)
		rto = qp->ack_timeout_ns;
	if (rto > 4 * qp->ack_timeout_ns)
		rto = 4 * qp->ack_timeout_ns;
	return rto;
}

bool ry__soft_cc_queued(const struct ry__soft_qp *qp)
{
	const struct ry__soft_cc *cc = &qp->cc;

	return cc->srtt > cc->min_rtt + RY__SOFT_CC_QDELAY_NS / 4;
}

void ry__soft_cc_sent(struct ry__soft_qp *qp, uint32_t psn)
{
	struct ry__soft_cc *cc = &qp->cc;

	if (cc->sampling)
		return;
	cc->sampling = true;
	cc->sample_psn = psn;
	cc->sample_t = qp_rail(qp)->now;
}

void ry__soft_cc_rewound(struct ry__soft_qp *qp)
{
	qp->cc.sampling = false;
}

static void rtt_sample(struct ry__soft_qp *qp, uint64_t rtt)
{
	struct ry__soft_cc *cc = &qp->cc;
	uint64_t err;

	if (!rtt)
		rtt = 1;
	if (!cc->min_rtt || rtt < cc->min_rtt)
		cc->min_rtt = rtt;
	cc->rtt = rtt;
	if (!cc->srtt) {
		cc->srtt = rtt;
		cc->rttvar = rtt / 2;
		return;
	}
	err = rtt > cc->srtt ? rtt - cc->srtt : cc->srtt - rtt;
	cc->rttvar = (3 * cc->rttvar + err) / 4;
	cc->srtt = (7 * cc->srtt + rtt) / 8;
}

static void set_cwnd(struct ry__soft_qp *qp, uint64_t cwnd)
{
	if (cwnd < RY__SOFT_CC_MIN)
		cwnd = RY__SOFT_CC_MIN;
	if (cwnd > qp->window)
		cwnd = qp->window;
	qp->cc.cwnd = (uint32_t)cwnd;
}

/* The delay signal: decrease in proportion to how far over target, at most
 * once per RTT (the window then in flight has not seen the last cut). */
static bool delay_decrease(struct ry__soft_qp *qp, uint64_t now)
{
	struct ry__soft_cc *cc = &qp->cc;
	uint64_t target = cc->min_rtt + RY__SOFT_CC_QDELAY_NS;
	uint64_t cut;

	if (cc->rtt <= target)
		return false;
	if (now - cc->last_dec < cc->srtt)
		return true;
	cut = (uint64_t)cc->cwnd * 4 * (cc->rtt - target) / (5 * cc->rtt);
	if (cut > cc->cwnd / 2)
		cut = cc->cwnd / 2;
	set_cwnd(qp, cc->cwnd - cut);
	cc->ssthresh = cc->cwnd;
	cc->acc = 0;
	cc->last_dec = now;
	return true;
}

void ry__soft_cc_acked(struct ry__soft_qp *qp)
{
	struct ry__soft_cc *cc = &qp->cc;
	uint64_t now = qp_rail(qp)->now;
	int32_t n = ry__soft_psn_cmp(qp->comp.psn, cc->acked_psn);

	if (n <= 0)
		return;
	cc->acked_psn = qp->comp.psn;
	if (cc->sampling &&
	    ry__soft_psn_cmp(qp->comp.psn, cc->sample_psn) > 0) {
		cc->sampling = false;
		rtt_sample(qp, now - cc->sample_t);
	}
	/* Growth goes on while a loss is repaired: after a timeout the
	 * go-back-N resend must slow-start, not crawl at the minimum. */
	if (cc->recovering && ry__soft_psn_cmp(qp->comp.psn, cc->recover) >= 0)
		cc->recovering = false;
	if (delay_decrease(qp, now))
		return;
	if (cc->cwnd < cc->ssthresh) {
		set_cwnd(qp, (uint64_t)cc->cwnd + (uint32_t)n);
		return;
	}
	cc->acc += (uint32_t)n;
	if (cc->acc >= cc->cwnd) {
		cc->acc -= cc->cwnd;
		set_cwnd(qp, (uint64_t)cc->cwnd + 1);
	}
}

static void enter_recovery(struct ry__soft_qp *qp)
{
	struct ry__soft_cc *cc = &qp->cc;

	cc->recovering = true;
	cc->recover = qp->req.max_psn;
	cc->acc = 0;
	cc->last_dec = qp_rail(qp)->now;
}

void ry__soft_cc_loss(struct ry__soft_qp *qp)
{
	struct ry__soft_cc *cc = &qp->cc;

	if (cc->recovering)
		return; /* this window was already cut for its loss */
	set_cwnd(qp, cc->cwnd / 2);
	cc->ssthresh = cc->cwnd;
	enter_recovery(qp);
}

void ry__soft_cc_timeout(struct ry__soft_qp *qp)
{
	struct ry__soft_cc *cc = &qp->cc;

	/* A second timeout in the same episode must not halve ssthresh
	 * again: the window is already at the minimum. */
	if (!cc->recovering || cc->cwnd > RY__SOFT_CC_MIN)
		cc->ssthresh = cc->cwnd / 2 < RY__SOFT_CC_MIN ? RY__SOFT_CC_MIN
							      : cc->cwnd / 2;
	set_cwnd(qp, RY__SOFT_CC_MIN);
	enter_recovery(qp);
	RY_TRACE("soft", "qp 0x%x: timeout, cwnd %u ssthresh %u srtt %llu us",
		 qp->base.qp_num, cc->cwnd, cc->ssthresh,
		 (unsigned long long)(cc->srtt / 1000));
}
