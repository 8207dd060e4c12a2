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
 * A failure of a connection to a peer takes a fence generation
 * (pr_fence_gen; ry__peer_fence_gen in peer.c, which conn.c calls as the
 * connection fails); an op records the highest generation its fragments
 * were replayed from (op_fence_gen) and waits until pr_fence_acked
 * reaches it.
 * The peer handles FENCE_REQs in order on one TCP stream, so an ack of
 * generation g means every earlier one was handled too.
 *
 * One request per peer per failure event, not one per connection: the
 * connections to a peer that fail before its pending request has left (in
 * one ry__replay_run(), or while its control session is down) share one
 * generation, and one FENCE_REQ names all their dead pairs; the peer moves
 * each pair that still matches to ERR, then sends one FENCE_ACK.  A peer
 * gets the list only once its own FENCE_ACK said it reads one
 * (RY__FENCE_CAP_PAIRS; each end sends a FENCE_ACK of generation 0, which
 * acknowledges nothing, when a session starts): an older peer reads the
 * first pair alone and its ack would cover the others unfenced.  Such a
 * peer gets a request per connection, each under its own generation, sent
 * in generation order (an ack of a later one covers the earlier ones, so
 * they must have been handled before it).
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

/* One FENCE_REQ under gen naming the dead pairs of due[0..n). */
static void send_req(struct ry_peer *p, uint64_t gen,
		     struct ry__conn *const *due, unsigned n)
{
	struct ry__wire_fence wf = {.wf_gen = gen, .wf_n = n};
	unsigned i;

	/* a send that failed closed the session: the rest wait for the
	 * next one */
	if (!ry__ctl_alive(p->pr_ctl))
		return;
	for (i = 0; i < n; i++)
		wf.wf_pair[i] = (struct ry__wire_fence_pair){
		    .fp_src = (uint8_t)due[i]->cn_lrail->lr_idx,
		    .fp_dst = (uint8_t)due[i]->cn_ridx,
		    .fp_src_qpn = due[i]->cn_dead_qpn,
		    .fp_dst_qpn = due[i]->cn_dead_rqpn,
		};
	ry__ctl_send_fence(p->pr_ctl, false, &wf);
	p->pr_mgr->m_fence_reqs++;
	if (gen > p->pr_fence_sent)
		p->pr_fence_sent = gen;
	if (!p->pr_fence_wait_ns)
		p->pr_fence_wait_ns = RY__FENCE_RESEND_MIN_NS;
	p->pr_fence_retry_ns = ry__now_ns() + p->pr_fence_wait_ns;
}

/*
 * Request every fence p is owed and not yet asked for over this session.
 * A connection still on m_failed is named too: its dead pair is known
 * since it was marked, and our side's ERR follows in the same
 * ry__replay_run(), long before an ack can be read.
 */
static void fence_flush(struct ry_peer *p)
{
	struct ry_manager *m = p->pr_mgr;
	struct ry__conn *due[RY_MAX_RAILS];
	uint64_t from = ry__peer_fence_requested(p);
	unsigned n = 0, i, j;

	_Static_assert(RY__WIRE_FENCE_PAIRS >= RY_MAX_RAILS,
		       "one FENCE_REQ names every connection of a peer");
	if (!fence_on(m) || !ry__ctl_alive(p->pr_ctl))
		return; /* resent when the control channel is back */
	for (i = 0; i < m->m_nrails; i++) {
		struct ry__conn *c = p->pr_conn[i];

		/* unpaired: no rail of the peer to name */
		if (c->cn_fence_gen <= from || c->cn_ridx < 0)
			continue;
		for (j = n; j && due[j - 1]->cn_fence_gen > c->cn_fence_gen;
		     j--)
			due[j] = due[j - 1];
		due[j] = c;
		n++;
	}
	if (!n)
		return;
	if (ry__peer_fence_pairs(p)) {
		send_req(p, due[n - 1]->cn_fence_gen, due, n);
		return;
	}
	for (i = 0; i < n; i++)
		send_req(p, due[i]->cn_fence_gen, &due[i], 1);
}

void ry__fence_request(struct ry__conn *c)
{
	fence_flush(c->cn_peer);
}

void ry__fence_resend(struct ry_peer *p)
{
	const struct ry__wire_fence caps = {.wf_caps = RY__FENCE_CAP_PAIRS};

	if (!ry__ctl_alive(p->pr_ctl))
		return;
	ry__ctl_send_fence(p->pr_ctl, true, &caps);
	/* what a lost session carried may not have arrived */
	p->pr_fence_sent = p->pr_fence_acked;
	fence_flush(p);
}

/*
 * A request the peer dropped unread (its rate limit on control frames,
 * ctl/rate.c) is never acknowledged, and while the session stays up
 * nothing else would send it again: its operations would wait for
 * op_timeout_ms.  So what is still unacknowledged after
 * RY__FENCE_RESEND_MIN_NS is asked again, the wait doubling up to
 * RY__FENCE_RESEND_MAX_NS (a peer that is slow, not dropping, sees a few
 * duplicates, which it acknowledges at no cost).
 */
void ry__fence_tick(struct ry_peer *p, uint64_t now)
{
	if (!fence_on(p->pr_mgr) || p->pr_fence_sent <= p->pr_fence_acked ||
	    !ry__ctl_alive(p->pr_ctl) || now < p->pr_fence_retry_ns)
		return;
	RY_DBG("mgr",
	       "peer %s: fence generation %llu not acknowledged: "
	       "asking again",
	       p->pr_name, (unsigned long long)p->pr_fence_sent);
	p->pr_fence_wait_ns =
	    ry__min64(2 * p->pr_fence_wait_ns, RY__FENCE_RESEND_MAX_NS);
	p->pr_fence_sent = p->pr_fence_acked;
	fence_flush(p);
}

void ry__fence_on_req(struct ry_peer *p, struct ry__ctl *ctl,
		      const struct ry__wire_fence *wf)
{
	struct ry_manager *m = p->pr_mgr;
	const struct ry__wire_fence ack = {.wf_gen = wf->wf_gen,
					   .wf_caps = RY__FENCE_CAP_PAIRS};
	uint64_t now = ry__now_ns();
	bool hit = false;
	unsigned i;

	for (i = 0; i < wf->wf_n; i++) {
		const struct ry__wire_fence_pair *fp = &wf->wf_pair[i];
		struct ry__conn *c;

		if (fp->fp_dst >= m->m_nrails)
			continue;
		c = p->pr_conn[fp->fp_dst];
		if (c->cn_qp && c->cn_qp->qp_num == fp->fp_dst_qpn &&
		    c->cn_remote.qpn == fp->fp_src_qpn) {
			ry__conn_mark_failed(c, "fenced by peer", now);
			hit = true;
		}
	}
	/* every named pair to ERR now, before the ack leaves */
	if (hit)
		ry__replay_run(m);
	ry__ctl_send_fence(ctl, true, &ack);
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

int ry__fence_on_ack(struct ry_peer *p, uint64_t gen, unsigned caps)
{
	struct ry_manager *m = p->pr_mgr;
	struct ry__list *pos, *next;
	uint64_t now = ry__now_ns();
	unsigned i;

	/* an incarnation's caps only grow: no later ack takes them back */
	if (p->pr_fence_caps_node != p->pr_node) {
		p->pr_fence_caps_node = p->pr_node;
		p->pr_fence_caps = 0;
	}
	p->pr_fence_caps |= caps & RY__FENCE_CAP_PAIRS;
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
	if (gen >= p->pr_fence_sent)
		p->pr_fence_wait_ns = 0; /* all answered: the next waits less */
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
