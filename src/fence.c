// SPDX-License-Identifier: BSD-2-Clause
/*
 * Fencing.  A packet of a failed connection may still be in the network.
 * Before an operation that had replayed fragments completes, the peer must
 * have moved its side of every connection those fragments failed on to ERR
 * and said so (FENCE_ACK over the control channel).  After that no stale
 * packet can land: the peer's old QP drops it, and the reconnected QP has a
 * new QPN and PSN (and on the soft rail a new cookie; verbs has none).  A
 * fence names the dead pair by both QPNs, which on verbs the HCAs assign:
 * it relies on neither end handing a dead QP's number to a new QP before
 * the fence is handled (rxe allocates them cyclically).
 *
 * Each failure of a connection to a peer takes the next fence generation
 * (pr_fence_gen); an op records the highest generation its fragments were
 * replayed from (op_fence_gen) and waits until pr_fence_acked reaches it.
 * The peer handles FENCE_REQs in order on one TCP stream, so an ack of
 * generation g means every earlier one was handled too.
 *
 * With fence = no, none of this happens: an operation may complete while a
 * delayed WRITE of a dead connection is still in flight, and that packet
 * may land later over memory the application has already reused.  The risk
 * is small (the peer's QP normally errors out on its own within timeout_ms)
 * but real; railyard.conf(5), FENCING, says so.
 */
#include <errno.h>

#include "src/conn.h"
#include "src/control.h"
#include "src/lrail.h"
#include "src/manager.h"
#include "src/op.h"
#include "src/peer.h"

static bool fence_on(const struct ry_manager *m)
{
	return m->m_cfg.failover.fence;
}

void ry__fence_request(struct ry__conn *c)
{
	struct ry_peer *p = c->cn_peer;

	if (!fence_on(p->pr_mgr) || c->cn_fence_gen <= p->pr_fence_acked ||
	    !ry__ctl_alive(p->pr_ctl) || c->cn_ridx < 0)
		return; /* resent when the control channel is back */
	ry__ctl_send_fence(p->pr_ctl, false, c->cn_fence_gen,
			   c->cn_lrail->lr_idx, (unsigned)c->cn_ridx,
			   c->cn_dead_qpn, c->cn_dead_rqpn);
}

void ry__fence_resend(struct ry_peer *p)
{
	struct ry_manager *m = p->pr_mgr;
	unsigned i;

	for (i = 0; i < m->m_nrails; i++)
		if (p->pr_conn[i]->cn_fence_gen > p->pr_fence_acked &&
		    p->pr_conn[i]->cn_state != CONN_FAILED)
			ry__fence_request(p->pr_conn[i]);
}

void ry__fence_on_req(struct ry_peer *p, struct ry__ctl *ctl, uint64_t gen,
		      unsigned src, unsigned dst, uint32_t src_qpn,
		      uint32_t dst_qpn)
{
	struct ry_manager *m = p->pr_mgr;
	struct ry__conn *c;

	if (dst < m->m_nrails) {
		c = p->pr_conn[dst];
		if (c->cn_qp && c->cn_qp->qp_num == dst_qpn &&
		    c->cn_remote.qpn == src_qpn) {
			ry__conn_mark_failed(c, "fenced by peer", ry__now_ns());
			/* ERR now, before the ack leaves */
			ry__replay_run(m);
		}
	}
	ry__ctl_send_fence(ctl, true, gen, 0, 0, 0, 0);
}

/* The peer fenced c's dead pair: time it from c's detection. */
static void fenced(struct ry__conn *c, uint64_t now)
{
	uint64_t ns = ry__since(now, c->cn_detect_ns);

	ry__lat_add(&c->cn_lrail->lr_fo[RY__FO_FENCE], ry__fo_le_ns, ns);
	ry__log_event(RY_LOG_DEBUG, "mgr",
		      (&(struct ry__log_ev){.event = "fence",
					    .rail = c->cn_lrail->lr_cfg.name,
					    .peer = c->cn_peer->pr_name,
					    .has_qpn = true,
					    .qpn = c->cn_dead_qpn}),
		      "peer %s rail %s: qp 0x%x fenced %.3f ms after detection",
		      c->cn_peer->pr_name, c->cn_lrail->lr_cfg.name,
		      c->cn_dead_qpn, (double)ns / 1e6);
}

int ry__fence_on_ack(struct ry_peer *p, uint64_t gen)
{
	struct ry_manager *m = p->pr_mgr;
	struct ry__list *pos, *next;
	uint64_t now = ry__now_ns();
	unsigned i;

	/* a generation we never asked for would acknowledge fences not yet
	 * requested (2^64-1: all of them, for good) */
	if (gen > p->pr_fence_gen) {
		RY_WARN("mgr",
			"peer %s: FENCE_ACK for generation %llu, never "
			"requested (last %llu)",
			p->pr_name, (unsigned long long)gen,
			(unsigned long long)p->pr_fence_gen);
		return -EPROTO;
	}
	/* a request resent after a reconnect, or resent out of order, is
	 * acknowledged twice: harmless */
	if (gen <= p->pr_fence_acked)
		return 0;
	/* count each fenced connection on its rail */
	for (i = 0; i < m->m_nrails; i++) {
		struct ry__conn *c = p->pr_conn[i];

		if (c->cn_fence_gen > p->pr_fence_acked &&
		    c->cn_fence_gen <= gen) {
			c->cn_cnt.fences++;
			fenced(c, now);
		}
	}
	p->pr_fence_acked = gen;
	ry__list_for_each_safe(pos, next, &p->pr_ops) {
		struct ry__op *op = ry__list_entry(pos, struct ry__op, op_all);

		if (op->op_state == OPS_FENCING)
			ry__op_check(op);
	}
	return 0;
}

bool ry__fence_pending(const struct ry__op *op)
{
	return fence_on(op->op_peer->pr_mgr) && op->op_replayed &&
	       op->op_fence_gen > op->op_peer->pr_fence_acked;
}
