// SPDX-License-Identifier: BSD-2-Clause
/*
 * A peer's life as the control plane reports it (struct ry__ctl_ops,
 * registered in manager.c), and what each event does to its connections
 * and operations: discovery (pairing our rails with the peer's by network
 * name once the HELLOs are exchanged, again when a reload or a rail's
 * return changes them), the session becoming ready, a restart (a new
 * incarnation), a goodbye, a revoked admission.
 *
 * Above peers and connections: a peer's or a connection's state changes
 * through their setters (ry__peer_set_state, conn.c's transitions).
 * Beside operations, replay and fencing (op.c, replay.c, fence.c), which
 * it drives: the failed connections go to ERR (ry__replay_run) before the
 * event's handler returns, while the pairing and the session they are
 * fenced over are still known.
 */
#include <stdio.h>
#include <string.h>

#include "src/conn.h"
#include "src/events.h"
#include "src/lrail.h"
#include "src/manager.h"
#include "src/msg.h"
#include "src/op.h"
#include "src/peer.h"

static bool pairable(const struct ry__conn *c)
{
	return c->cn_state == CONN_UNPAIRED || c->cn_state == CONN_IDLE ||
	       c->cn_state == CONN_BACKOFF;
}

/*
 * A connection paired with a rail the peer no longer lists (its reload
 * removed it; the slot is a hole, never reused): fail it, its work to the
 * other rails, and forget the pairing.  The peer fenced it already when it
 * removed the rail, so usually this finds it failed.
 */
static void unpair_gone(struct ry__conn *c, uint64_t now)
{
	struct ry_peer *p = c->cn_peer;
	const struct ry__rrail *rr;

	if (c->cn_ridx < 0)
		return;
	rr = (unsigned)c->cn_ridx < p->pr_nrrails ? &p->pr_rrails[c->cn_ridx]
						  : NULL;
	if (rr && rr->rr_name[0] &&
	    !strcmp(rr->rr_network, c->cn_lrail->lr_cfg.network))
		return;
	if (!pairable(c)) {
		ry__conn_link_failed(c, "the peer removed its rail", now);
		/* ERR and the fence request while the pairing is known */
		ry__replay_run(p->pr_mgr);
	}
	c->cn_ridx = -1;
	if (pairable(c))
		ry__conn_paired(c);
}

/*
 * A rail left idle for a peer that has nothing on its network: said once
 * per rail (a server whose clients have fewer rails would say it for each
 * of them).  Lanes (railyard.conf(5)) pair by their networks' names too,
 * so both ends need the same number.
 */
static void unpaired_said(struct ry_manager *m, struct ry__lrail *lr,
			  const struct ry_peer *p)
{
	if (lr->lr_unpaired_said)
		return;
	lr->lr_unpaired_said = true;
	RY_WARN("mgr",
		"rail %s: peer %s has no rail on network %s, so this rail "
		"carries nothing to it%s (said once per rail)",
		lr->lr_cfg.name, p->pr_name, lr->lr_cfg.network,
		m->m_cfg.lanes > 1 ? "; lanes must be the same on both ends"
				   : "");
}

/* Pair our rails with the peer's by network name, first match first. */
static void pair_rails(struct ry_peer *p)
{
	struct ry_manager *m = p->pr_mgr;
	uint64_t now = ry__now_ns();
	uint32_t used = 0;
	unsigned i, j;

	/* a hole (a rail a reload removed) keeps its last pairing for the
	 * fence it may still owe (reload.c) and pairs with nothing */
	for (i = 0; i < m->m_nrails; i++)
		if (ry__lrail_live(&m->m_rails[i]))
			unpair_gone(p->pr_conn[i], now);
	for (i = 0; i < m->m_nrails; i++)
		if (p->pr_conn[i]->cn_ridx >= 0 && !pairable(p->pr_conn[i]))
			used |= 1u << p->pr_conn[i]->cn_ridx;
	for (i = 0; i < m->m_nrails; i++) {
		struct ry__conn *c = p->pr_conn[i];

		if (!pairable(c) || !ry__lrail_live(&m->m_rails[i]))
			continue;
		c->cn_ridx = -1;
		for (j = 0; j < p->pr_nrrails; j++) {
			/* a hole in the peer's list has no name */
			if (used & (1u << j) || !p->pr_rrails[j].rr_name[0] ||
			    strcmp(p->pr_rrails[j].rr_network,
				   m->m_rails[i].lr_cfg.network))
				continue;
			c->cn_ridx = (int)j;
			used |= 1u << j;
			break;
		}
		ry__conn_paired(c);
		if (c->cn_ridx < 0)
			unpaired_said(m, &m->m_rails[i], p);
	}
}

void ry__peer_pair(struct ry_peer *p)
{
	if (p->pr_state == PEER_READY)
		pair_rails(p);
}

/*
 * The peer came back as a new process: what its old incarnation held is
 * gone.  Connections to it are failed, the message windows start again,
 * and every operation aimed at its memory completes with RY_ESTALE as
 * soon as nothing of it is posted (ops queued behind them go on; sends
 * are resent to the new incarnation).  Called with pr_node already the
 * new incarnation, so nothing with an old descriptor is posted again.
 */
static void restarted(struct ry_peer *p, uint64_t old_node, uint64_t now)
{
	struct ry_manager *m = p->pr_mgr;
	struct ry__list *pos, *next;
	char why[320];
	unsigned i;

	RY_WARN("mgr",
		"peer %s restarted (incarnation %016llx -> %016llx): "
		"dropping its connections, failing operations aimed at its "
		"old memory",
		p->pr_name, (unsigned long long)old_node,
		(unsigned long long)p->pr_node);
	p->pr_past[p->pr_npast++ % RY__PAST] = old_node;
	for (i = 0; i < m->m_nrails; i++)
		ry__conn_mark_failed(p->pr_conn[i], "peer restarted", now);
	/* the old incarnation's QPs died with it: nothing to fence (and
	 * nothing to ask the new one) */
	p->pr_fence_acked = p->pr_fence_gen;
	ry__replay_run(m);
	p->pr_rx_base = 1;
	memset(p->pr_rx_bits, 0, sizeof(p->pr_rx_bits));
	ry__tx_seq_reset(p);
	ry__list_for_each(pos, &p->pr_ops) {
		struct ry__op *op = ry__list_entry(pos, struct ry__op, op_all);

		op->op_seq = 0;
	}
	snprintf(why, sizeof(why),
		 "peer %s restarted (incarnation %016llx -> %016llx): the "
		 "target memory died with the old incarnation",
		 p->pr_name, (unsigned long long)old_node,
		 (unsigned long long)p->pr_node);
	ry__list_for_each_safe(pos, next, &p->pr_ops) {
		struct ry__op *op = ry__list_entry(pos, struct ry__op, op_all);

		if (op->op_type != OP_SEND &&
		    ry__peer_node_stale(p, op->op_rnode))
			ry__op_fail(op, RY_ESTALE, why);
	}
	ry__peer_event(p, RY_EV_PEER_RESTARTED, "peer restarted", old_node,
		       p->pr_node);
}

void ry__peer_ready(struct ry_peer *p, uint64_t old_node, bool dialer)
{
	struct ry_manager *m = p->pr_mgr;
	uint64_t now = ry__now_ns();
	bool was_ready = p->pr_state == PEER_READY;
	unsigned i;

	if (old_node)
		restarted(p, old_node, now);
	ry__peer_set_state(p, PEER_READY);
	p->pr_gone = false;
	if (!was_ready || old_node)
		ry__peer_event(p, RY_EV_PEER_UP, "", 0, p->pr_node);
	ry__op_unpark_all(p);
	p->pr_ctl_backoff_ms = m->m_cfg.failover.reconnect_min_ms;
	pair_rails(p);
	ry__fence_resend(p);
	for (i = 0; i < m->m_nrails; i++) {
		struct ry__conn *c = p->pr_conn[i];

		if (c->cn_state == CONN_IDLE && dialer)
			ry__conn_start(c, now);
		else if (c->cn_state == CONN_BACKOFF && old_node) {
			c->cn_deadline_ns = now;
			ry__conn_timer(c, now);
		}
	}
	ry__peer_dirty(p);
}

void ry__peer_goodbye(struct ry_peer *p, int why)
{
	struct ry_manager *m = p->pr_mgr;
	uint64_t now = ry__now_ns();
	unsigned i;

	RY_INFO("mgr", "peer %s: said goodbye (%s): its connections close",
		p->pr_name,
		why == BYE_CLOSING ? "its manager is closing"
				   : "it dropped this node");
	p->pr_gone = true;
	for (i = 0; i < m->m_nrails; i++)
		ry__conn_mark_failed(p->pr_conn[i],
				     "closed by the peer (goodbye)", now);
	/* QPs to ERR now: nothing more is posted to a peer that left */
	ry__replay_run(m);
}

void ry__peer_revoked(struct ry_peer *p)
{
	struct ry_manager *m = p->pr_mgr;
	uint64_t now = ry__now_ns();
	unsigned i;

	for (i = 0; i < m->m_nrails; i++)
		ry__conn_mark_failed(p->pr_conn[i],
				     "its admission was revoked by a reload",
				     now);
	/* QPs to ERR and the fences out while its session is still up */
	ry__replay_run(m);
}
