// SPDX-License-Identifier: BSD-2-Clause
/*
 * One RC connection per (our rail, peer's rail) pair: connect, probe,
 * reconnect with exponential backoff and jitter, and the health score that
 * lowers a flapping rail's share (as LNet Health does: halved on every
 * failure, restored step by step while the connection stays up).
 *
 * Connection state machine (enum ry__conn_state).  Every change of
 * cn_state is made in this file (when to try again is conn_pace.c's); the code
 * that detects a reason for one (peer_life.c, replay.c, fence.c, heartbeat.c,
 * progress.c) calls in here.
 *
 *   UNPAIRED   the peer has no rail on this network
 *   UNPAIRED <-> IDLE         pairing found or lost a peer rail (peer_life.c)
 *   IDLE -> CONNECTING        we sent CONNECT_REQ (QP in INIT)
 *   IDLE -> PROBING           we accepted the peer's CONNECT_REQ (QP in RTS)
 *   CONNECTING -> PROBING     CONNECT_REP: QP to RTS, probe SEND posted
 *   PROBING -> ACTIVE         our own probe completed: its RC ACK came
 *                             back, so both directions work.  The peer's
 *                             probe arriving proves only one; the side
 *                             that accepted posts its probe then
 *   CONNECTING -> BACKOFF     reject or timeout (nothing was posted)
 *   PROBING|ACTIVE -> FAILED  error completion, link down, silence, fence
 *   FAILED -> DRAINING        QP to ERR (replay.c), flushed WRs replayed
 *   DRAINING -> BACKOFF       last flushed WR seen; QP destroyed
 *   BACKOFF -> CONNECTING     backoff expired, link up, control channel up
 *
 * Reconnecting: when a connection tries again (back-off, flap damping,
 * the rail's gate on attempts in flight) is conn_pace.c's.  A failed
 * attempt (PROBING, never ACTIVE) posted nothing but its probe, so no
 * operation waits on it: it is neither fenced nor counted as a failover,
 * and raises no event; its reason says which direction of the path is
 * broken.
 *
 * Path MTU (packetization-layer discovery, RFC 8899 style: the probes are
 * the connection's own packets).  With the small probe SEND each side posts
 * a ladder of steps in ascending size below the QP's MTU and at it: an
 * RDMA WRITE of exactly one packet of the step's size into the peer rail's
 * probe slice (its address and rkey come with CONNECT_REQ/REP), then a READ
 * of as much back, whose response is a packet of that size the other way.
 * RC completes in order, so when a switch with a smaller MTU silently drops
 * a step's packet, every smaller step has completed and the largest is the
 * path MTU both ways.  A connection becomes ACTIVE only when the step at
 * its QP's MTU completes; otherwise the attempt fails (never ACTIVE: no
 * failover, fence or event) and the next attempt offers the MTU found, so
 * the rail runs at it ("rail r0: path MTU 1500 (interface 9000)") instead
 * of flapping, or stays down with the MTU named.  What an attempt offers
 * goes back to the interface's MTU when a connection that was ACTIVE
 * fails (the path may have changed either way); there is no raise timer.
 * The soft rail's MTU is the IP MTU (rail attr mtu_hdr: IP, UDP and its
 * header are inside it), so steps are common IP MTUs.  On the verbs rail
 * the MTU is the RoCE path MTU (ibv_qp_attr.path_mtu, set at RTR from the
 * offer, payload only: mtu_hdr 0), the steps are IB MTUs, and a smaller
 * path MTU means a new QP at it, as here.
 *
 * Both sides may connect a pair at once; the CONNECT_REQ of the node with
 * the larger incarnation id wins and the other side abandons its own.
 * Every connection gets a fresh QP, so a new QPN and a new random PSN; on
 * the soft rail the QPN and a cookie are random too, on verbs the QPN is
 * the HCA's next (rxe counts up, so both ends of a pair often show the
 * same numbers, 0x12 -> 0x12 then 0x13 -> 0x13) and the cookie is 0.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "src/conn.h"
#include "src/events.h"
#include "src/control.h"
#include "src/lrail.h"
#include "src/manager.h"
#include "src/op.h"
#include "src/peer.h"
#include "src/pool.h"
#include "src/progress.h"
#include "src/region.h"
#include "src/tunables.h"

static const char *const conn_state_names[CONN__MAX] = {
    [CONN_UNPAIRED] = "unpaired",     [CONN_IDLE] = "idle",
    [CONN_CONNECTING] = "connecting", [CONN_PROBING] = "probing",
    [CONN_ACTIVE] = "active",	      [CONN_FAILED] = "failed",
    [CONN_DRAINING] = "draining",     [CONN_BACKOFF] = "backoff",
};

const char *ry__conn_state_str(enum ry__conn_state s)
{
	return (unsigned)s < CONN__MAX ? conn_state_names[s] : "?";
}

/*
 * Attempts in flight (CONNECTING, PROBING) per rail, counted by every
 * change of state, for the pacing in ry__conn_start.
 */
static bool attempting(enum ry__conn_state s)
{
	return s == CONN_CONNECTING || s == CONN_PROBING;
}

/* (a closed rail has counted every attempt out at once) */
static void count_out(struct ry__lrail *lr)
{
	if (lr->lr_connecting)
		lr->lr_connecting--;
	lr->lr_gate_done++;
}

static void set_state(struct ry__conn *c, enum ry__conn_state s)
{
	c->cn_rts_wait = false;
	if (attempting(s) && !attempting(c->cn_state))
		c->cn_lrail->lr_connecting++;
	else if (!attempting(s) && attempting(c->cn_state))
		count_out(c->cn_lrail);
	c->cn_state = s;
}

void ry__conn_gone(struct ry__conn *c)
{
	if (ry__heap_linked(&c->cn_tnode))
		ry__conn_timer_stop(c);
	if (c->cn_lrail && attempting(c->cn_state))
		count_out(c->cn_lrail);
	c->cn_state = CONN_UNPAIRED; /* counted out */
}

void ry__conn_init(struct ry__conn *c, struct ry_peer *p, struct ry__lrail *lr)
{
	const struct ry_rail_config *rc = &lr->lr_cfg;

	ry__conn_gone(c); /* a slot a reload reuses */
	memset(c, 0, sizeof(*c));
	ry__list_init(&c->cn_posted);
	ry__list_init(&c->cn_unposted);
	c->cn_peer = p;
	c->cn_lrail = lr;
	c->cn_ridx = -1;
	c->cn_state = CONN_UNPAIRED; /* set_state: not an attempt */
	c->cn_health = 1000;
	/* a known rate beats a configured weight; Mb/s keeps it in range */
	if (rc->rate_bps)
		c->cn_weight =
		    (uint32_t)ry__min64(rc->rate_bps / 1000000 + 1, 1u << 20);
	else
		c->cn_weight = rc->weight ? rc->weight : 1;
	c->cn_backoff_ms = lr->lr_mgr->m_cfg.failover.reconnect_min_ms;
	ry__conn_update_share(c);
}

void ry__conn_renew(struct ry__conn *c, struct ry_peer *p, struct ry__lrail *lr)
{
	struct ry__conn old = *c;

	ry__conn_init(c, p, lr);
	c->cn_cnt = old.cn_cnt;
	c->cn_goodbyes = old.cn_goodbyes;
	c->cn_ridx = old.cn_ridx;
	c->cn_fence_gen = old.cn_fence_gen;
	c->cn_dead_qpn = old.cn_dead_qpn;
	c->cn_dead_rqpn = old.cn_dead_rqpn;
}

/* UNPAIRED <-> IDLE, once pairing (peer_life.c) has set or cleared cn_ridx. */
void ry__conn_paired(struct ry__conn *c)
{
	if (c->cn_ridx < 0) {
		if (c->cn_state != CONN_UNPAIRED)
			RY_INFO(
			    "mgr", "peer %s: no rail on network %s for rail %s",
			    c->cn_peer->pr_name, c->cn_lrail->lr_cfg.network,
			    c->cn_lrail->lr_cfg.name);
		set_state(c, CONN_UNPAIRED);
	} else if (c->cn_state == CONN_UNPAIRED) {
		set_state(c, CONN_IDLE);
	}
}

void ry__conn_destroy_qp(struct ry__conn *c)
{
	int ret;

	c->cn_rts_wait = false; /* nothing left to ask the rail about */
	if (!c->cn_qp)
		return;
	/*
	 * Messages its rail accepted (and acknowledged: the sender counts
	 * them delivered) may wait in the CQ: with the rail on a thread of
	 * its own they arrive at any time, not only just before a poll.  Hand
	 * them over while the QP number still finds this connection.  Inside
	 * a poll of this rail they were polled already: the CQ is one FIFO
	 * and nothing arrives on a QP after its flush.  Not at teardown:
	 * the canceled operations those completions would name are gone.
	 */
	if (!c->cn_lrail->lr_polling && !c->cn_lrail->lr_mgr->m_closing) {
		c->cn_lrail->lr_mgr->m_conn_up->cu_poll_rail(c->cn_lrail,
							     ry__now_ns());
		if (!c->cn_qp)
			return;
	}
	ry__conn_hash_del(c);
	pthread_mutex_lock(&c->cn_lrail->lr_lock);
	ret = ry__rail_destroy_qp(c->cn_qp);
	pthread_mutex_unlock(&c->cn_lrail->lr_lock);
	if (ret)
		RY_ERR("mgr", "qp 0x%x: destroy: %d", c->cn_qp->qp_num, ret);
	c->cn_qp = NULL;
}

static int create_qp(struct ry__conn *c)
{
	struct ry_manager *m = c->cn_lrail->lr_mgr;
	struct ry_qp_init init = {
	    /* room for a heartbeat or probe beside a full window */
	    .max_send_wr = m->m_cfg.wr_per_qp + 2,
	    .context = c,
	    .cq = c->cn_lrail->lr_cq[c->cn_peer->pr_ctx->cx_idx],
	};
	struct ry_qp_attr attr = {
	    .access = RY_ACCESS_LOCAL_WRITE | RY_ACCESS_REMOTE_WRITE |
		      RY_ACCESS_REMOTE_READ,
	};
	int ret;

	pthread_mutex_lock(&c->cn_lrail->lr_lock);
	ret = ry__rail_create_qp(c->cn_lrail->lr_pd, &init, &c->cn_qp);
	if (!ret && (ret = ry__rail_modify_qp(c->cn_qp, RY_QPS_INIT, &attr))) {
		ry__rail_destroy_qp(c->cn_qp);
		c->cn_qp = NULL;
	}
	pthread_mutex_unlock(&c->cn_lrail->lr_lock);
	if (ret) {
		RY_ERR("mgr", "rail %s: create QP: %d",
		       c->cn_lrail->lr_cfg.name, ret);
		return ret;
	}
	if (ry__conn_hash_add(c)) {
		pthread_mutex_lock(&c->cn_lrail->lr_lock);
		ry__rail_destroy_qp(c->cn_qp);
		pthread_mutex_unlock(&c->cn_lrail->lr_lock);
		c->cn_qp = NULL;
		return -ENOMEM;
	}
	return 0;
}

static void local_ep(struct ry__conn *c, struct ry_qp_endpoint *ep)
{
	static const uint8_t zero[16];
	const struct ry_rail_attr *a = &c->cn_lrail->lr_attr;

	*ep = c->cn_qp->local;
	ep->qpn = c->cn_qp->qp_num;
	if (!memcmp(ep->gid, zero, 16) && !ep->udp_port && !ep->lid) {
		memcpy(ep->gid, a->local.gid, 16);
		ep->lid = a->local.lid;
		ep->udp_port = a->local.udp_port;
	}
	if (!ep->mtu)
		ep->mtu = a->mtu;
	if (c->cn_mtu && c->cn_mtu < ep->mtu)
		ep->mtu = c->cn_mtu;
}

/* ctl: the session the CONN_REQ/REP came over (data_mac keys) */
static int to_rts(struct ry__conn *c, const struct ry_qp_endpoint *rem,
		  const struct ry__ctl *ctl)
{
	const struct ry_failover_config *f =
	    &c->cn_lrail->lr_mgr->m_cfg.failover;
	uint32_t offer = c->cn_mtu && c->cn_mtu < c->cn_lrail->lr_attr.mtu
			     ? c->cn_mtu
			     : c->cn_lrail->lr_attr.mtu;
	struct ry_qp_attr attr = {
	    .remote = *rem,
	    .mtu = rem->mtu && rem->mtu < offer ? rem->mtu : offer,
	    .ack_timeout_us = f->ack_timeout_ms * 1000,
	    .retry_cnt = f->retry_count,
	    .rnr_retry = f->rnr_retry,
	    .min_rnr_timer_us = 1000,
	    .max_rd_atomic = 16,
	};
	struct ry_qp_endpoint loc;
	int ret = 0;

	if (c->cn_lrail->lr_mgr->m_cfg.data_mac) {
		local_ep(c, &loc);
		ret = ry__ctl_conn_keys(ctl, &loc, rem, &attr);
	}
	pthread_mutex_lock(&c->cn_lrail->lr_lock);
	if (!ret)
		ret = ry__rail_modify_qp(c->cn_qp, RY_QPS_RTR, &attr);
	if (!ret)
		ret = ry__rail_modify_qp(c->cn_qp, RY_QPS_RTS, &attr);
	pthread_mutex_unlock(&c->cn_lrail->lr_lock);
	/* read before the keys are wiped with the rest of attr: a zero here
	 * skipped the MTU ladder and let a black hole flap the rail */
	c->cn_qp_mtu = attr.mtu;
	sodium_memzero(&attr, sizeof(attr));
	/* -EAGAIN: the rail is still getting ready (the verbs rail resolving
	 * the peer's MAC); the caller backs off and tries again */
	if (ret == -EAGAIN)
		RY_DBG("mgr", "qp 0x%x: not ready for RTR yet",
		       c->cn_qp->qp_num);
	else if (ret)
		RY_ERR("mgr", "qp 0x%x: to RTS: %d", c->cn_qp->qp_num, ret);
	c->cn_remote = *rem;
	return ret;
}

void ry__conn_update_share(struct ry__conn *c)
{
	uint64_t share = (uint64_t)c->cn_weight * (c->cn_health + 10);

	/* a rail whose port counts errors (rail_health.c) */
	if (c->cn_lrail->lr_health.rh_state != RY_RAIL_OK)
		share = share / RY__DEGRADED_DIV + 1;
	c->cn_share = share;
}

/* Up for less than this before failing again: a flap (see the top). */
#define RY__FLAP_NS 1000000000ull

/* To BACKOFF, trying again at at. */
static void backoff_until(struct ry__conn *c, uint64_t at, uint64_t now)
{
	set_state(c, CONN_BACKOFF);
	c->cn_probe_out = false;
	c->cn_heard = false;
	c->cn_deadline_ns = at;
	ry__conn_timer(c, now);
}

void ry__conn_backoff(struct ry__conn *c, uint64_t now)
{
	backoff_until(c, ry__conn_backoff_at(c, now), now);
}

static bool can_connect(struct ry__conn *c)
{
	struct ry_peer *p = c->cn_peer;

	return c->cn_ridx >= 0 && p->pr_state == PEER_READY &&
	       ry__ctl_alive(p->pr_ctl) && c->cn_lrail->lr_link == RY_LINK_UP;
}

void ry__conn_start(struct ry__conn *c, uint64_t now)
{
	struct ry_manager *m = c->cn_lrail->lr_mgr;
	struct ry_qp_endpoint ep;
	uint64_t at;

	if (!can_connect(c)) {
		ry__conn_backoff(c, now);
		return;
	}
	at = ry__conn_gate_wait(c, now);
	if (at) {
		backoff_until(c, at, now); /* its turn comes */
		return;
	}
	if (create_qp(c)) {
		ry__conn_backoff(c, now);
		return;
	}
	local_ep(c, &ep);
	c->cn_attempt++;
	set_state(c, CONN_CONNECTING);
	c->cn_probe_out = false;
	c->cn_heard = false;
	c->cn_deadline_ns = now + m->m_connect_ns;
	ry__conn_timer(c, now);
	ry__ctl_send_conn(c->cn_peer->pr_ctl, CTL_CONN_REQ, c->cn_lrail->lr_idx,
			  (unsigned)c->cn_ridx, c->cn_attempt, &ep, 0,
			  ry__conn_work(c, now) ? RY__CONN_F_WORK : 0);
	RY_DBG("mgr", "peer %s rail %s: connecting qp 0x%x",
	       c->cn_peer->pr_name, c->cn_lrail->lr_cfg.name, ep.qpn);
}

void ry__conn_activate(struct ry__conn *c, uint64_t now)
{
	struct ry_peer *p = c->cn_peer;
	char why[64];

	set_state(c, CONN_ACTIVE);
	c->cn_probe_out = false;
	c->cn_heard = false;
	c->cn_active_ns = now;
	c->cn_health_ns = now;
	c->cn_last_ok_ns = now;
	c->cn_reason[0] = 0;
	c->cn_lrail->lr_active++;
	c->cn_cnt.reconnects++;
	ry__conn_timer(c, now);
	ry__peer_update_paths(p);
	ry__log_event(RY_LOG_INFO, "mgr",
		      (&(struct ry__log_ev){.event = "up",
					    .rail = c->cn_lrail->lr_cfg.name,
					    .peer = p->pr_name,
					    .has_qpn = true,
					    .qpn = c->cn_qp->qp_num}),
		      "peer %s rail %s: connected, qp 0x%x -> 0x%x", p->pr_name,
		      c->cn_lrail->lr_cfg.name, c->cn_qp->qp_num,
		      c->cn_remote.qpn);
	ry__conn_mtu_note(c, why, sizeof(why));
	ry__queue_event(c->cn_lrail->lr_mgr, RY_EV_CONN_UP, c->cn_lrail, p, why,
			now);
	ry__peer_dirty(p);
}

/*
 * Why a connection attempt's probe round trip failed, naming the broken
 * direction when what arrived tells it: the peer's probe arriving while ours
 * is not acknowledged means our direction fails; nothing arriving means at
 * least the peer's does.
 */
static void attempt_reason(struct ry__conn *c, const char *what, char *buf,
			   size_t len)
{
	struct ry_peer *p = c->cn_peer;
	const char *me =
	    p->pr_mgr->m_cfg.node[0] ? p->pr_mgr->m_cfg.node : "we";
	const char *them = p->pr_node_name[0] ? p->pr_node_name : p->pr_name;

	if (c->cn_heard)
		snprintf(buf, len,
			 "probes from the peer arrive, ours are not "
			 "acknowledged: %.24s->%.24s fails (%.30s)",
			 me, them, what);
	else if (c->cn_probe_out)
		snprintf(buf, len,
			 "no probe round trip, nothing heard from the peer: "
			 "%.24s->%.24s or the way back fails (%.30s)",
			 me, them, what);
	else
		snprintf(buf, len,
			 "no probe from the peer arrived: %.24s->%.24s fails "
			 "(%.30s)",
			 them, me, what);
}

/* PROBING -> FAILED for an attempt that never carried traffic. */
static void attempt_failed(struct ry__conn *c, const char *what)
{
	struct ry_manager *m = c->cn_peer->pr_mgr;
	char why[sizeof(c->cn_reason)];

	if (!ry__conn_mtu_reason(c, what, why, sizeof(why)))
		attempt_reason(c, what, why, sizeof(why));
	/* once per kind of failure, not once per attempt; a peer that said
	 * goodbye is not a broken path */
	if (strcmp(why, c->cn_reason) && !c->cn_peer->pr_gone)
		RY_WARN("mgr", "peer %s rail %s: path not up: %s",
			c->cn_peer->pr_name, c->cn_lrail->lr_cfg.name, why);
	else
		RY_DBG("mgr", "peer %s rail %s: attempt failed: %s",
		       c->cn_peer->pr_name, c->cn_lrail->lr_cfg.name, why);
	snprintf(c->cn_reason, sizeof(c->cn_reason), "%s", why);
	set_state(c, CONN_FAILED);
	c->cn_fnext = m->m_failed;
	m->m_failed = c;
}

static void mark_failed(struct ry__conn *c, const char *reason,
			uint64_t fail_ns, bool exact)
{
	struct ry_peer *p = c->cn_peer;
	struct ry_manager *m = p->pr_mgr;
	uint64_t now = ry__now_ns();
	struct ry_event *ev;
	bool bye = p->pr_gone; /* closed, not failed: no failover, no fence */

	switch (c->cn_state) {
	case CONN_CONNECTING:
		/* nothing was ever posted on it */
		ry__conn_destroy_qp(c);
		snprintf(c->cn_reason, sizeof(c->cn_reason), "%s", reason);
		ry__conn_backoff(c, now);
		return;
	case CONN_PROBING:
		attempt_failed(c, reason);
		return;
	case CONN_ACTIVE:
		break;
	default:
		return;
	}
	set_state(c, CONN_FAILED);
	snprintf(c->cn_reason, sizeof(c->cn_reason), "%s", reason);
	c->cn_mtu = 0; /* the path may have changed: probe from the top */
	c->cn_lrail->lr_active--;
	ry__peer_update_paths(p);
	/* back up soon, unless it keeps failing right after coming up */
	c->cn_damp = ry__since(now, c->cn_active_ns) < RY__FLAP_NS;
	/* without a local event, the failure began at the last sign of life
	 * at the latest: a fence from the peer, say, comes later */
	if (!exact && c->cn_last_ok_ns && c->cn_last_ok_ns < fail_ns)
		fail_ns = c->cn_last_ok_ns;
	if (fail_ns > now)
		fail_ns = now;
	c->cn_fail_ns = fail_ns;
	c->cn_detect_ns = now;
	c->cn_resume_wait = false;
	c->cn_dead_qpn = c->cn_qp->qp_num;
	c->cn_dead_rqpn = c->cn_remote.qpn;
	c->cn_fnext = m->m_failed;
	m->m_failed = c;
	if (bye) { /* its QPs are gone: no packet of ours can land there */
		c->cn_fence_gen = 0;
		c->cn_goodbyes++;
		RY_INFO("mgr", "peer %s rail %s: connection qp 0x%x closed: %s",
			p->pr_name, c->cn_lrail->lr_cfg.name, c->cn_dead_qpn,
			reason);
		ry__queue_event(m, RY_EV_CONN_DOWN, c->cn_lrail, p, reason,
				now);
		return;
	}
	c->cn_cnt.failovers++;
	c->cn_cnt.detect_count++;
	c->cn_cnt.detect_ns_total += now - fail_ns;
	if (now - fail_ns > c->cn_cnt.detect_ns_max)
		c->cn_cnt.detect_ns_max = now - fail_ns;
	c->cn_fence_gen = ry__peer_fence_gen(p);
	c->cn_health /= 2;
	ry__conn_update_share(c);
	if (!p->pr_resume_from_ns) {
		p->pr_resume_from_ns = now;
		p->pr_resume_conn = c;
	}
	ry__lat_add(&c->cn_lrail->lr_fo[RY__FO_DETECT], ry__fo_le_ns,
		    now - fail_ns);
	ry__log_event(RY_LOG_WARN, "mgr",
		      (&(struct ry__log_ev){.event = "down",
					    .rail = c->cn_lrail->lr_cfg.name,
					    .peer = p->pr_name,
					    .reason = reason,
					    .has_detect = true,
					    .detect_ns = now - fail_ns,
					    .has_qpn = true,
					    .qpn = c->cn_dead_qpn}),
		      "peer %s rail %s: connection qp 0x%x failed: %s",
		      p->pr_name, c->cn_lrail->lr_cfg.name, c->cn_dead_qpn,
		      reason);
	ev = ry__queue_event(m, RY_EV_CONN_DOWN, c->cn_lrail, p, reason, now);
	if (ev) {
		ev->fail_ns = fail_ns;
		ev->detect_ns = now;
	}
}

void ry__conn_mark_failed(struct ry__conn *c, const char *reason,
			  uint64_t fail_ns)
{
	mark_failed(c, reason, fail_ns, false);
}

void ry__conn_link_failed(struct ry__conn *c, const char *reason,
			  uint64_t fail_ns)
{
	mark_failed(c, reason, fail_ns, true);
}

/* A new attempt's probing starts: nothing of the last one counts. */
static void probing(struct ry__conn *c, const struct ry__probe_mr *pm,
		    uint64_t now)
{
	set_state(c, CONN_PROBING);
	c->cn_probe_out = false;
	c->cn_heard = false;
	c->cn_probe_ok = false;
	c->cn_ladder = false;
	c->cn_mtu_ok = 0;
	c->cn_deadline_ns = now + c->cn_lrail->lr_mgr->m_connect_ns;
	ry__conn_timer(c, now);
	c->cn_pmr = *pm;
}

/*
 * Something arrived on a PROBING connection: the peer can reach us.  The
 * side that accepted the connection answers with its own probe now that
 * the peer's QP is known to be ready for it; each side becomes ACTIVE when
 * its own probe is acknowledged.
 */
void ry__conn_on_probe_rx(struct ry__conn *c, uint64_t now)
{
	c->cn_heard = true;
	if (c->cn_probe_out)
		return;
	if (ry__conn_post_probes(c, now))
		ry__conn_mark_failed(c, "cannot post probe", now);
}

/* Work of c's last failure was put back for replay. */
void ry__conn_replayed(struct ry__conn *c)
{
	if (c->cn_detect_ns)
		c->cn_resume_wait = true;
}

/*
 * Replayed work posted on w completed: the failures of w's peer declared
 * before it was posted have their traffic back (RY_EV_CONN_RESUMED).
 */
void ry__conn_resumed(struct ry__wr *w, uint64_t now)
{
	struct ry_peer *p = w->wr_conn->cn_peer;
	struct ry_manager *m = p->pr_mgr;
	struct ry_event *ev;
	unsigned i;

	if (w->wr_conn->cn_state != CONN_ACTIVE)
		return;
	for (i = 0; i < m->m_nrails; i++) {
		struct ry__conn *x = p->pr_conn[i];

		if (!x->cn_resume_wait || x->cn_detect_ns > w->wr_post_ns)
			continue;
		x->cn_resume_wait = false;
		ry__log_event(
		    RY_LOG_INFO, "mgr",
		    (&(struct ry__log_ev){.event = "resume",
					  .rail = x->cn_lrail->lr_cfg.name,
					  .peer = p->pr_name,
					  .has_detect = true,
					  .detect_ns =
					      x->cn_detect_ns - x->cn_fail_ns,
					  .has_resume = true,
					  .resume_ns = now - x->cn_detect_ns,
					  .has_qpn = true,
					  .qpn = x->cn_dead_qpn}),
		    "peer %s rail %s: traffic of qp 0x%x resumed %.3f ms after "
		    "detection",
		    p->pr_name, x->cn_lrail->lr_cfg.name, x->cn_dead_qpn,
		    (double)(now - x->cn_detect_ns) / 1e6);
		ev = ry__queue_event(m, RY_EV_CONN_RESUMED, x->cn_lrail, p, "",
				     now);
		if (ev) {
			ev->fail_ns = x->cn_fail_ns;
			ev->detect_ns = x->cn_detect_ns;
		}
	}
}

/*
 * FAILED -> DRAINING: in ERR the QP flushes every WR still posted back
 * through the CQ, so each completes exactly once and is replayed.
 */
void ry__conn_flush(struct ry__conn *c)
{
	int ret;

	pthread_mutex_lock(&c->cn_lrail->lr_lock);
	ret = ry__rail_modify_qp(c->cn_qp, RY_QPS_ERR, NULL);
	pthread_mutex_unlock(&c->cn_lrail->lr_lock);
	if (ret)
		RY_ERR("mgr", "qp 0x%x: to ERR: %d", c->cn_qp->qp_num, ret);
	set_state(c, CONN_DRAINING);
}

void ry__conn_drained_check(struct ry__conn *c, uint64_t now)
{
	if (c->cn_state != CONN_DRAINING || c->cn_out_wrs)
		return;
	ry__conn_destroy_qp(c);
	ry__conn_backoff(c, now);
}

/* Drain a connection that must be replaced now (the peer reconnects it). */
static bool make_room(struct ry__conn *c, uint64_t now)
{
	struct ry_manager *m = c->cn_lrail->lr_mgr;

	if (c->cn_state == CONN_PROBING || c->cn_state == CONN_ACTIVE)
		ry__conn_mark_failed(c, "peer reconnected", now);
	if (c->cn_state == CONN_FAILED)
		m->m_conn_up->cu_replay(m);
	if (c->cn_state == CONN_DRAINING)
		m->m_conn_up->cu_poll_rail(c->cn_lrail, now);
	return c->cn_state == CONN_IDLE || c->cn_state == CONN_BACKOFF;
}

/* How often a QP on its way to RTR is asked again (rdma_cm: a REQ/REP
 * round trip; a MAC address being resolved). */
#define RTS_POLL_NS 5000000ull

/* The rail answered -EAGAIN on the way to RTR: the QP stays, CONNECTING,
 * and is asked again on the connection's timer until the attempt's time
 * is out (ry__conn_timers).  The caller's thread does not wait for the
 * network. */
static void rts_wait(struct ry__conn *c, bool asker, const struct ry__ctl *ctl,
		     const struct ry__probe_mr *pm, uint64_t now)
{
	if (c->cn_state != CONN_CONNECTING) {
		set_state(c, CONN_CONNECTING);
		c->cn_deadline_ns = now + c->cn_lrail->lr_mgr->m_connect_ns;
	}
	c->cn_rts_wait = true;
	c->cn_rts_asker = asker;
	c->cn_rts_ctl = ctl;
	c->cn_pmr = *pm;
	c->cn_rts_poll_ns = now + RTS_POLL_NS;
	ry__conn_timer(c, now);
}

/* Ask the rail again; on its answer, go on as the CONN_REQ or CONN_REP
 * that started the wait would have. */
static void rts_again(struct ry__conn *c, uint64_t now)
{
	struct ry_peer *p = c->cn_peer;
	struct ry__ctl *ctl = p->pr_ctl;
	struct ry_qp_endpoint mine;
	bool asker = c->cn_rts_asker;
	int ret = -ECONNRESET;

	/* the keys are the session's that carried the request: a new
	 * session means a new request */
	if (ctl == c->cn_rts_ctl && ry__ctl_alive(ctl))
		ret = to_rts(c, &c->cn_remote, ctl);
	if (ret == -EAGAIN) {
		c->cn_rts_poll_ns = now + RTS_POLL_NS;
		ry__conn_timer(c, now);
		return;
	}
	c->cn_rts_wait = false;
	if (ret) {
		ry__conn_destroy_qp(c);
		ry__conn_backoff(c, now);
		if (!asker && ctl == c->cn_rts_ctl)
			ry__ctl_send_conn(ctl, CTL_CONN_REJ,
					  c->cn_lrail->lr_idx, c->cn_rts_src,
					  c->cn_rts_attempt, NULL, -EIO, 0);
		return;
	}
	probing(c, &c->cn_pmr, now);
	if (asker) {
		if (ry__conn_post_probes(c, now))
			ry__conn_mark_failed(c, "cannot post probe", now);
		return;
	}
	local_ep(c, &mine);
	ry__ctl_send_conn(ctl, CTL_CONN_REP, c->cn_lrail->lr_idx, c->cn_rts_src,
			  c->cn_rts_attempt, &mine, 0, 0);
}

void ry__conn_on_req(struct ry_peer *p, unsigned src, unsigned dst,
		     uint32_t attempt, const struct ry_qp_endpoint *ep,
		     const struct ry__probe_mr *pm, uint32_t flags,
		     struct ry__ctl *ctl)
{
	struct ry_manager *m = p->pr_mgr;
	uint64_t now = ry__now_ns();
	struct ry_qp_endpoint mine;
	struct ry__conn *c;
	bool work;
	int ret;

	if (dst >= m->m_nrails || p->pr_conn[dst]->cn_ridx != (int)src) {
		ry__ctl_send_conn(ctl, CTL_CONN_REJ, dst, src, attempt, NULL,
				  -EINVAL, 0);
		return;
	}
	c = p->pr_conn[dst];
	c->cn_unanswered = 0; /* it speaks on this rail */
	if (flags & RY__CONN_F_WORK)
		c->cn_work_ns = now;
	if (c->cn_state == CONN_CONNECTING) {
		/* ours wins and the peer will take it; but a QP still on its
		 * way to RTR for the peer's last request gives way to its new
		 * one */
		if (m->m_node > p->pr_node &&
		    !(c->cn_rts_wait && !c->cn_rts_asker))
			return;
		ry__conn_destroy_qp(c);
		set_state(c, CONN_IDLE);
	}
	if (c->cn_lrail->lr_link != RY_LINK_UP) {
		/* the peer waits for us to connect when our link is back
		 * (ry__conn_on_rej): 10,000 clients do not ask every
		 * reconnect_min_ms while a server's cable is out.  The
		 * link-up event starts our BACKOFF connections; one never
		 * connected yet (IDLE) is made one here, or the peer would
		 * wait about reconnect_max_ms for it. */
		if (c->cn_state == CONN_IDLE)
			ry__conn_backoff(c, now);
		ry__ctl_send_conn(ctl, CTL_CONN_REJ, dst, src, attempt, NULL,
				  -ENETDOWN, 0);
		return;
	}
	work = (flags & RY__CONN_F_WORK) || ry__conn_work(c, now);
	if (!attempting(c->cn_state) &&
	    c->cn_lrail->lr_connecting >= ry__conn_gate_room(work)) {
		ry__ctl_send_conn(
		    ctl, CTL_CONN_REJ, dst, src, attempt, NULL, -EBUSY,
		    ry__conn_gate_retry_ms(c->cn_lrail, work, now));
		return;
	}
	if (!make_room(c, now) || create_qp(c)) {
		ry__ctl_send_conn(ctl, CTL_CONN_REJ, dst, src, attempt, NULL,
				  -EAGAIN, 0);
		return;
	}
	ret = to_rts(c, ep, ctl);
	if (ret == -EAGAIN) {
		rts_wait(c, false, ctl, pm, now);
		c->cn_rts_src = src;
		c->cn_rts_attempt = attempt;
		return;
	}
	if (ret) {
		ry__conn_destroy_qp(c);
		ry__conn_backoff(c, now);
		ry__ctl_send_conn(ctl, CTL_CONN_REJ, dst, src, attempt, NULL,
				  -EIO, 0);
		return;
	}
	local_ep(c, &mine);
	probing(c, pm, now);
	ry__ctl_send_conn(ctl, CTL_CONN_REP, dst, src, attempt, &mine, 0, 0);
}

void ry__conn_on_rep(struct ry_peer *p, unsigned src, unsigned dst,
		     uint32_t attempt, const struct ry_qp_endpoint *ep,
		     const struct ry__probe_mr *pm, struct ry__ctl *ctl)
{
	struct ry_manager *m = p->pr_mgr;
	uint64_t now = ry__now_ns();
	struct ry__conn *c;
	int ret;

	if (dst >= m->m_nrails)
		return;
	c = p->pr_conn[dst];
	if (c->cn_state != CONN_CONNECTING || c->cn_attempt != attempt ||
	    c->cn_ridx != (int)src || c->cn_rts_wait)
		return; /* an attempt we gave up on, or a REP again */
	c->cn_unanswered = 0;
	ret = to_rts(c, ep, ctl);
	if (ret == -EAGAIN) {
		rts_wait(c, true, ctl, pm, now);
		return;
	}
	if (ret) {
		ry__conn_destroy_qp(c);
		ry__conn_backoff(c, now);
		return;
	}
	probing(c, pm, now);
	if (ry__conn_post_probes(c, now))
		ry__conn_mark_failed(c, "cannot post probe", now);
}

void ry__conn_on_rej(struct ry_peer *p, unsigned src, unsigned dst,
		     uint32_t attempt, int err, uint32_t retry_ms)
{
	struct ry__conn *c;

	if (dst >= p->pr_mgr->m_nrails)
		return;
	c = p->pr_conn[dst];
	if (c->cn_state != CONN_CONNECTING || c->cn_attempt != attempt)
		return;
	RY_DBG("mgr", "peer %s rail %s: connect rejected: %d", p->pr_name,
	       c->cn_lrail->lr_cfg.name, err);
	c->cn_unanswered = 0;
	ry__conn_destroy_qp(c);
	ry__conn_backoff(c, ry__now_ns());
	if (err == -ENETDOWN || err == -EBUSY) {
		uint64_t now = ry__now_ns();

		ry__conn_refused_wait(c, err, retry_ms, now);
		ry__conn_timer(c, now);
	}
}

/*
 * Whether a connect or probe attempt (m_connect_ns from its start) has run
 * out.  A stall of our own within it (m_resumed_ns, progress.c) is not the
 * peer's silence: it could not be heard, nor answer what we had not read,
 * so the attempt's time starts again at the end of the stall.
 */
static bool attempt_expired(struct ry__conn *c, uint64_t now)
{
	const struct ry_manager *m = c->cn_lrail->lr_mgr;

	if (now < c->cn_deadline_ns)
		return false;
	if (m->m_resumed_ns + m->m_connect_ns > c->cn_deadline_ns)
		c->cn_deadline_ns = m->m_resumed_ns + m->m_connect_ns;
	return now >= c->cn_deadline_ns;
}

void ry__conn_timers(struct ry__conn *c, uint64_t now)
{
	struct ry_manager *m = c->cn_lrail->lr_mgr;

	switch (c->cn_state) {
	case CONN_CONNECTING:
		if (c->cn_rts_wait) {
			if (attempt_expired(c, now)) {
				snprintf(c->cn_reason, sizeof(c->cn_reason),
					 "the rail did not reach RTR in time");
				ry__conn_destroy_qp(c);
				ry__conn_backoff(c, now);
			} else if (now >= c->cn_rts_poll_ns) {
				rts_again(c, now);
			}
			break;
		}
		if (attempt_expired(c, now)) {
			ry__conn_destroy_qp(c);
			if (c->cn_unanswered < UINT32_MAX)
				c->cn_unanswered++;
			snprintf(c->cn_reason, sizeof(c->cn_reason),
				 "connect timed out (%u unanswered in a row)",
				 c->cn_unanswered);
			ry__conn_backoff(c, now);
		}
		break;
	case CONN_PROBING:
		if (attempt_expired(c, now))
			ry__conn_mark_failed(c, "probe timed out", now);
		break;
	case CONN_BACKOFF:
		if (now >= c->cn_deadline_ns) {
			if (can_connect(c))
				ry__conn_start(c, now);
			else
				c->cn_deadline_ns = now + m->m_tick_ns * 4;
		}
		break;
	case CONN_ACTIVE:
		if (c->cn_health < 1000 &&
		    ry__since(now, c->cn_health_ns) >= 100000000ull) {
			c->cn_health =
			    c->cn_health + 50 > 1000 ? 1000 : c->cn_health + 50;
			c->cn_health_ns = now;
			ry__conn_update_share(c);
		}
		if (ry__since(now, c->cn_active_ns) > 1000000000ull)
			c->cn_backoff_ms = m->m_cfg.failover.reconnect_min_ms;
		break; /* then its heartbeat (ry__timers_run) */
	default:
		break;
	}
}
