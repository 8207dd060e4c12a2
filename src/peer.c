// SPDX-License-Identifier: BSD-2-Clause
/*
 * Peers: records (their lookup is peer_index.c), state (ry__peer_set_state,
 * fence generations), the control channel's dialing and backoff, and the
 * text that says why no path is left.  What a peer's arrival, restart,
 * goodbye or revocation does to its connections and operations is
 * peer_life.c's, a floor above.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/conn.h"
#include "src/events.h"
#include "src/control.h"
#include "src/lrail.h"
#include "src/manager.h"
#include "src/peer.h"
#include "src/progress.h"
#include "src/region.h"
#include "src/tunables.h"
#include "src/util/cnt.h"

static const char *const peer_state_names[PEER__MAX] = {
    [PEER_NEW] = "new",		[PEER_CONNECTING] = "connecting",
    [PEER_HELLO] = "hello",	[PEER_READY] = "ready",
    [PEER_BACKOFF] = "backoff",
};

const char *ry__peer_state_str(enum ry__peer_state s)
{
	return (unsigned)s < PEER__MAX ? peer_state_names[s] : "?";
}

void ry__peer_set_state(struct ry_peer *p, enum ry__peer_state s)
{
	if (p->pr_state != s)
		RY_DBG("peer", "%s: %s -> %s", p->pr_name,
		       ry__peer_state_str(p->pr_state), ry__peer_state_str(s));
	p->pr_state = s;
}

struct ry_peer *ry__peer_new(struct ry_manager *m, const char *name,
			     const char *addr, bool dial)
{
	/* a connection for every slot there is; a reload adds the others */
	struct ry_peer *p =
	    calloc(1, sizeof(*p) + m->m_nrails * sizeof(p->pr_slots[0]));
	unsigned i;

	if (!p)
		return NULL;
	p->pr_mgr = m;
	snprintf(p->pr_name, sizeof(p->pr_name), "%s", name);
	snprintf(p->pr_addr, sizeof(p->pr_addr), "%s", addr ? addr : "");
	p->pr_dial = dial && addr && addr[0];
	ry__peer_set_state(p, PEER_NEW);
	p->pr_ctl_backoff_ms = m->m_cfg.failover.reconnect_min_ms;
	/* both message windows start at sequence 1 (msg.c) */
	p->pr_rx_base = 1;
	p->pr_tx_low = 1;
	p->pr_nopath_ns = ry__now_ns();
	ry__list_init(&p->pr_ops);
	ry__list_init(&p->pr_tlink);
	ry__list_init(&p->pr_rlink);
	p->pr_seq = ++m->m_peer_seq;
	/* in turn: the n-th peer made is context n mod contexts's */
	p->pr_ctx = &m->m_ctx[(p->pr_seq - 1) % m->m_nctx];
	p->pr_nslots = m->m_nrails;
	for (i = 0; i < m->m_nrails; i++) {
		p->pr_conn[i] = &p->pr_slots[i];
		ry__conn_init(p->pr_conn[i], p, &m->m_rails[i]);
	}
	p->pr_next = m->m_peers;
	if (p->pr_next)
		p->pr_next->pr_pprev = &p->pr_next;
	p->pr_pprev = &m->m_peers;
	m->m_peers = p;
	ry__peer_index(p);
	return p;
}

/* Out of m_peers, its indexes and m_reapq (ry__peer_free). */
static void peer_unlink(struct ry_peer *p)
{
	if (!p->pr_pprev)
		return;
	*p->pr_pprev = p->pr_next;
	if (p->pr_next)
		p->pr_next->pr_pprev = p->pr_pprev;
	p->pr_next = NULL;
	p->pr_pprev = NULL;
	ry__peer_unindex(p);
	ry__list_del(&p->pr_rlink);
}

void ry__peer_free(struct ry_peer *p)
{
	unsigned i;

	peer_unlink(p);
	ry__list_del(&p->pr_tlink);
	for (i = 0; i < RY_MAX_RAILS; i++)
		if (p->pr_conn[i])
			ry__conn_gone(p->pr_conn[i]);
	for (i = p->pr_nslots; i < RY_MAX_RAILS; i++)
		free(p->pr_conn[i]); /* added by a reload */
	free(p->pr_rrails);
	free(p);
}

/* The rule is in peer.h; live sessions are control.c's. */
bool ry__peer_disposable(const struct ry_peer *p)
{
	unsigned i;

	if (!p->pr_from_hello || p->pr_app_seen || p->pr_app_refs ||
	    p->pr_dirty || !ry__list_empty(&p->pr_ops) || p->pr_replay_head ||
	    p->pr_inflight)
		return false;
	for (i = 0; i < p->pr_mgr->m_nrails; i++) {
		const struct ry__conn *c = p->pr_conn[i];

		if ((c->cn_state != CONN_UNPAIRED && c->cn_state != CONN_IDLE &&
		     c->cn_state != CONN_BACKOFF) ||
		    c->cn_qp || !ry__list_empty(&c->cn_posted))
			return false;
	}
	return true;
}

/* Free a record, counting its connections' traffic as gone. */
void ry__peer_forget(struct ry_peer *p)
{
	struct ry_manager *m = p->pr_mgr;
	unsigned i;

	for (i = 0; i < m->m_nrails; i++) {
		ry__cnt_add(&m->m_rails[i].lr_gone, &p->pr_conn[i]->cn_cnt);
		m->m_rails[i].lr_goodbyes_gone += p->pr_conn[i]->cn_goodbyes;
	}
	ry__peer_free(p);
}

void ry__peer_dirty(struct ry_peer *p)
{
	struct ry__ctx *cx = p->pr_ctx;

	if (!ry__list_empty(&p->pr_ops))
		ry__peer_timer(p);
	if (p->pr_dirty)
		return;
	p->pr_dirty = true;
	p->pr_dnext = cx->cx_dirty;
	cx->cx_dirty = p;
}

bool ry__peer_fence_pairs(const struct ry_peer *p)
{
	return p->pr_node && p->pr_fence_caps_node == p->pr_node &&
	       (p->pr_fence_caps & RY__FENCE_CAP_PAIRS);
}

uint64_t ry__peer_fence_requested(const struct ry_peer *p)
{
	return p->pr_fence_sent > p->pr_fence_acked ? p->pr_fence_sent
						    : p->pr_fence_acked;
}

uint64_t ry__peer_fence_gen(struct ry_peer *p)
{
	/* the newest generation, not requested yet, covers this one too */
	if (ry__peer_fence_pairs(p) &&
	    p->pr_fence_gen > ry__peer_fence_requested(p))
		return p->pr_fence_gen;
	return ++p->pr_fence_gen;
}

/*
 * The control channel waits before the next dial, twice as long each time
 * up to reconnect_max_ms; but while operations wait for the peer at most
 * 4 x reconnect_min_ms (jittered), so a peer that restarts is found again
 * within about half a second of being back, not when a backoff grown
 * while it was down runs out.
 */
static void ctl_backoff(struct ry_peer *p, uint64_t now)
{
	struct ry_manager *m = p->pr_mgr;
	uint64_t ms = p->pr_ctl_backoff_ms;
	uint64_t busy_max = 4ull * m->m_cfg.failover.reconnect_min_ms;

	if (!ry__list_empty(&p->pr_ops) && ms > busy_max)
		ms = busy_max;
	ry__peer_set_state(p, PEER_BACKOFF);
	p->pr_ctl = NULL;
	ry__peer_timer(p); /* the redial */
	p->pr_ctl_retry_ns =
	    now + ms * 1000000ull / 2 + ry__rand64() % (ms * 1000000ull + 1);
	p->pr_ctl_backoff_ms =
	    (uint32_t)ry__min64(ms * 2, m->m_cfg.failover.reconnect_max_ms);
}

/*
 * Make sure a control connection is on its way: on first use of the peer,
 * and when work is posted while the channel is in backoff.  A backoff that
 * grew while the peer was down (or restarting) would otherwise keep new
 * work waiting up to reconnect_max_ms after the peer is back; with work
 * waiting the next dial is at most reconnect_min_ms away.
 */
void ry__peer_use(struct ry_peer *p)
{
	uint64_t soon;

	if (!ry__list_empty(&p->pr_ops))
		ry__peer_timer(p); /* operations to time out */
	if (p->pr_state == PEER_BACKOFF && p->pr_dial) {
		soon = ry__now_ns() +
		       p->pr_mgr->m_cfg.failover.reconnect_min_ms * 1000000ull;
		if (p->pr_ctl_retry_ns > soon)
			p->pr_ctl_retry_ns = soon;
		return;
	}
	if (p->pr_state != PEER_NEW)
		return;
	if (!p->pr_dial || ry__ctl_dial(p))
		ctl_backoff(p, ry__now_ns());
}

void ry__peer_update_paths(struct ry_peer *p)
{
	unsigned i, n = 0;

	for (i = 0; i < p->pr_mgr->m_nrails; i++)
		n += p->pr_conn[i]->cn_state == CONN_ACTIVE;
	if (!n && p->pr_nactive)
		p->pr_nopath_ns = ry__now_ns();
	p->pr_nactive = n;
}

/*
 * A peer event (RY_EV_PEER_*).  It names the peer but hands out no
 * pointer to it, so a record learned from a HELLO stays disposable.
 */
void ry__peer_event(struct ry_peer *p, enum ry_event_type t, const char *reason,
		    uint64_t old_node, uint64_t new_node)
{
	struct ry_event *ev =
	    ry__queue_event(p->pr_mgr, t, NULL, NULL, reason, ry__now_ns());
	struct ry__delivery *dv;

	if (!ev)
		return;
	dv = container_of(ev, struct ry__delivery, dv_ev);
	snprintf(dv->dv_peer_name, sizeof(dv->dv_peer_name), "%s", p->pr_name);
	ev->old_incarnation = old_node;
	ev->new_incarnation = new_node;
}

bool ry__peer_node_stale(const struct ry_peer *p, uint64_t node)
{
	unsigned n = p->pr_npast < RY__PAST ? p->pr_npast : RY__PAST;

	if (!node || node == p->pr_node)
		return false;
	while (n--)
		if (p->pr_past[n] == node)
			return true;
	return false;
}

void ry__peer_ctl_lost(struct ry_peer *p, struct ry__ctl *c)
{
	bool was_ready = p->pr_state == PEER_READY;
	uint64_t now = ry__now_ns();
	unsigned i;

	if (p->pr_ctl != c)
		return;
	p->pr_ctl = NULL;
	ctl_backoff(p, now);
	/* no control: its idle connections are ours to check (heartbeat.c) */
	for (i = 0; i < p->pr_mgr->m_nrails; i++)
		ry__conn_timer(p->pr_conn[i], now);
	if (was_ready)
		ry__peer_event(p, RY_EV_PEER_DOWN, "control session lost",
			       p->pr_node, 0);
}

void ry__peer_path_reason(struct ry_peer *p, uint64_t waited_ns, char *buf,
			  size_t len)
{
	struct ry_manager *m = p->pr_mgr;
	const char *sep = "";
	size_t n;
	unsigned i;

	n = (size_t)snprintf(
	    buf, len,
	    "peer %s: no path for %llu ms (control %s); rails:", p->pr_name,
	    (unsigned long long)(waited_ns / 1000000),
	    ry__peer_state_str(p->pr_state));
	for (i = 0; i < m->m_nrails && n < len; i++) {
		const struct ry__conn *c = p->pr_conn[i];

		if (!ry__lrail_live(&m->m_rails[i]))
			continue;
		n +=
		    (size_t)snprintf(buf + n, len - n, "%s %s %s%s%s", sep,
				     m->m_rails[i].lr_cfg.name,
				     m->m_rails[i].lr_link == RY_LINK_UP
					 ? ry__conn_state_str(c->cn_state)
					 : "link-down",
				     c->cn_reason[0] ? ": " : "", c->cn_reason);
		sep = ",";
	}
}

/* The cold lock held: one reference of the application's gone; at the last, a
 * record the reaper is waiting for (on m_reapq) is looked at again. */
void ry__peer_unref(struct ry_peer *p)
{
	if (!p->pr_app_refs) {
		RY_ERR("mgr", "peer %s released more often than held",
		       p->pr_name);
		return;
	}
	if (!--p->pr_app_refs && !ry__list_empty(&p->pr_rlink))
		p->pr_mgr->m_reap_peers = true;
}
