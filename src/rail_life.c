// SPDX-License-Identifier: BSD-2-Clause
/*
 * A configured rail's life: absent, present, gone.
 *
 *   absent    its open failed because something it names is not there
 *             (device, port not ACTIVE, interface, address, GID): the
 *             manager starts without it (unless require_all_rails) and
 *             says so once, naming the rail and the cause.
 *   present   open; its slot is live (ry__lrail_live).
 *   gone      it was open and its device went away (the provider's
 *             RY_RAIL_EV_DEVICE_FATAL: an HCA reset or removal, a deleted
 *             netdev): its connections fail over as for a pulled cable
 *             (ry__rail_remove, no drain: the device answers no more),
 *             the rail is closed and released, RY_EV_RAIL_GONE.
 *
 * An absent or gone rail is missing: its slot is a hole, as a reload's
 * removed rail is, so nothing pairs, stripes or connects on it, and the
 * peers are told (HELLO again: ry__ctl_announce).  It keeps what the
 * config named (rl_cfg) and is opened again by that, every
 * RY_RAIL_RETRY_MS, never by a handle cached from the last open: a
 * re-created netdev has a new ifindex, a reset HCA a new context.  Once
 * open, in the same slot, every region is registered on it, the peers'
 * connections of the slot start afresh (new QPs: new QPNs and PSNs; the
 * fence a failed one still owes is kept), the peers hear the rail list
 * and pair, and RY_EV_RAIL_BACK is sent.
 *
 * A descriptor never carried a key for a slot that was absent.  One
 * packed while a rail was present and used after it came back carries
 * the old rkey: operations with it on that rail fail as remote access
 * errors, so pack descriptors again on RY_EV_RAIL_BACK (railyard serve
 * does).
 *
 * Each round also samples the open rails' error rates (rail_health.c).
 *
 * Threads: everything here runs under the cold lock.  Opening and
 * closing call into the rail without lr_lock held throughout, so rl_busy
 * (set under lr_lock) keeps the rail threads' rail_run off it meanwhile.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "src/conn.h"
#include "src/ctl/ctl.h"
#include "src/events.h"
#include "src/lrail.h"
#include "src/manager.h"
#include "src/op.h"
#include "src/peer.h"
#include "src/progress.h"
#include "src/region.h"

#define RETRY_NS (RY_RAIL_RETRY_MS * 1000000ull)

/* Errors that say "not there (yet)", not "this config cannot work". */
static bool absent_error(int err)
{
	switch (-err) {
	case ENODEV:
	case ENXIO:
	case ENETDOWN:
	case EADDRNOTAVAIL:
	case ENOENT:
	case EAGAIN:
		return true;
	default:
		return false;
	}
}

static void set_busy(struct ry__lrail *lr, bool busy)
{
	pthread_mutex_lock(&lr->lr_lock);
	lr->lr_life.rl_busy = busy;
	pthread_mutex_unlock(&lr->lr_lock);
}

int ry__rail_life_open(struct ry__lrail *lr, struct ry_rail **rail_p)
{
	struct ry__rlife *rl = &lr->lr_life;
	struct ry__log_capture cap;
	const char *why;
	size_t n;
	int ret;

	ry__log_capture_begin(&cap);
	ret = ry__rail_open(&lr->lr_cfg, rail_p);
	ry__log_capture_end();
	rl->rl_err = ret;
	if (!ret) {
		rl->rl_why[0] = '\0';
		if (cap.msg[0])
			RY_WARN("mgr", "rail %s: %s", lr->lr_cfg.name, cap.msg);
		return 0;
	}
	/* the provider names the rail too: "rail NAME: cause" */
	why = cap.msg[0] ? cap.msg : strerror(-ret);
	n = strlen(lr->lr_cfg.name);
	if (!strncmp(why, "rail ", 5) &&
	    !strncmp(why + 5, lr->lr_cfg.name, n) &&
	    !strncmp(why + 5 + n, ": ", 2))
		why += 5 + n + 2;
	snprintf(rl->rl_why, sizeof(rl->rl_why), "%s", why);
	if (!rl->rl_quiet)
		RY_ERR("mgr", "rail %s: cannot open: %s", lr->lr_cfg.name,
		       rl->rl_why);
	return ret;
}

static void note_missing(struct ry__lrail *lr, const struct ry_rail_config *rc,
			 uint64_t now)
{
	struct ry__rlife *rl = &lr->lr_life;

	rl->rl_missing = true;
	rl->rl_cfg = *rc;
	rl->rl_since_ns = now;
	rl->rl_next_ns = now + RETRY_NS;
	memset(&lr->lr_cfg, 0, sizeof(lr->lr_cfg)); /* a hole */
}

/* Undo what ry__lrail_open() did before it failed. */
static void open_failed(struct ry__lrail *lr)
{
	struct ry_region *rg;

	if (lr->lr_rail) {
		for (rg = lr->lr_mgr->m_regions; rg; rg = rg->rg_next)
			ry__region_dereg_rail(rg, lr);
		ry__lrail_close(lr);
	}
	memset(&lr->lr_cfg, 0, sizeof(lr->lr_cfg));
}

int ry__rail_life_create(struct ry_manager *m, unsigned i,
			 const struct ry_rail_config *rc)
{
	struct ry__lrail *lr = &m->m_rails[i];
	struct ry__rlife *rl = &lr->lr_life;
	int ret;

	rl->rl_quiet = true;
	ret = ry__lrail_open(m, i, rc);
	rl->rl_quiet = false;
	if (!ret) {
		rl->rl_was_open = true;
		return 0;
	}
	if (lr->lr_rail || m->m_cfg.require_all_rails || !absent_error(ret)) {
		RY_ERR("mgr", "rail %s: cannot open: %s%s", rc->name,
		       rl->rl_why[0] ? rl->rl_why : strerror(-ret),
		       m->m_cfg.require_all_rails && !lr->lr_rail &&
			       absent_error(ret)
			   ? " (require_all_rails: not starting without it)"
			   : "");
		return ret;
	}
	note_missing(lr, rc, ry__now_ns());
	RY_WARN("mgr",
		"rail %s: absent: %s; starting without it, it opens when it "
		"appears",
		rc->name, rl->rl_why);
	return 0;
}

/* Why the device went, from what the config names. */
static void gone_why(struct ry__lrail *lr)
{
	struct ry__rlife *rl = &lr->lr_life;
	const struct ry_rail_config *c = &lr->lr_cfg;

	if (c->provider == RY_PROVIDER_VERBS)
		snprintf(rl->rl_why, sizeof(rl->rl_why),
			 "device %s: fatal error or removed", c->device);
	else if (c->provider != RY_PROVIDER_SOFT)
		snprintf(rl->rl_why, sizeof(rl->rl_why),
			 "device fatal error or removed");
	else if (c->interface[0])
		snprintf(rl->rl_why, sizeof(rl->rl_why), "interface %s deleted",
			 c->interface);
	else
		snprintf(rl->rl_why, sizeof(rl->rl_why),
			 "the interface of %s deleted", c->address);
}

static void close_gone(struct ry_manager *m, struct ry__lrail *lr, uint64_t now)
{
	struct ry__rlife *rl = &lr->lr_life;
	struct ry_rail_config rc = lr->lr_cfg;

	gone_why(lr);
	RY_WARN("mgr",
		"rail %s: gone: %s; closed, its connections fail over; it "
		"opens again when it returns",
		rc.name, rl->rl_why);
	ry__queue_event(m, RY_EV_RAIL_GONE, lr, NULL, rl->rl_why, now);
	set_busy(lr, true);
	ry__rail_remove(m, lr, 0, rl->rl_why);
	set_busy(lr, false);
	rl->rl_dying = false;
	note_missing(lr, &rc, now);
	/* the peers unpair from the hole now, and pair again at once when
	 * it is back rather than after their reconnect backoff */
	ry__ctl_announce(m);
}

static void try_open(struct ry_manager *m, struct ry__lrail *lr, uint64_t now)
{
	struct ry__rlife *rl = &lr->lr_life;
	char was[sizeof(rl->rl_why)];
	struct ry_region *rg;
	struct ry_peer *p;
	int ret;

	rl->rl_next_ns = now + RETRY_NS;
	snprintf(was, sizeof(was), "%s", rl->rl_why);
	set_busy(lr, true);
	rl->rl_quiet = true;
	ret = ry__lrail_open(m, lr->lr_idx, &rl->rl_cfg);
	rl->rl_quiet = false;
	for (rg = m->m_regions; rg && !ret; rg = rg->rg_next)
		ret = ry__region_reg_rail(rg, lr);
	if (ret) {
		open_failed(lr);
		set_busy(lr, false);
		if (!rl->rl_why[0])
			snprintf(rl->rl_why, sizeof(rl->rl_why), "%s",
				 strerror(-ret));
		if (strcmp(was, rl->rl_why)) /* once per cause */
			RY_WARN("mgr", "rail %s: still missing: %s",
				rl->rl_cfg.name, rl->rl_why);
		return;
	}
	set_busy(lr, false);
	rl->rl_missing = false;
	ry__rail_health_reset(&lr->lr_health);
	if (rl->rl_was_open) /* keys of the last open are not this one's */
		rl->rl_gen = (rl->rl_gen + 1) & 0xffffff;
	/* a rail list names no QP: its cookie carries the generation */
	lr->lr_attr.local.cookie = rl->rl_gen;
	/* the slot's connections start afresh on the rail; a fence the last
	 * one owes is kept (as ry__rail_remove keeps it in a hole) */
	for (p = m->m_peers; p; p = p->pr_next)
		ry__conn_renew(p->pr_conn[lr->lr_idx], p, lr);
	for (p = m->m_peers; p; p = p->pr_next)
		ry__peer_pair(p);
	/* a peer that dials a rail whose link is not up yet (a netdev
	 * created, its address added, then set up) is refused and backs
	 * off, doubling: it hears of the rail once the link is up */
	rl->rl_announce = lr->lr_link != RY_LINK_UP;
	if (!rl->rl_announce)
		ry__ctl_announce(m);
	for (p = m->m_peers; p; p = p->pr_next)
		ry__peer_dirty(p);
	RY_INFO("mgr", "rail %s: %s after %llu ms missing", lr->lr_cfg.name,
		rl->rl_was_open ? "back" : "open",
		(unsigned long long)((now - rl->rl_since_ns) / 1000000));
	rl->rl_was_open = true;
	ry__queue_event(m, RY_EV_RAIL_BACK, lr, NULL, "", now);
}

void ry__rail_life_run(struct ry_manager *m, uint64_t now)
{
	for (unsigned i = 0; i < m->m_nrails; i++) {
		struct ry__lrail *lr = &m->m_rails[i];

		if (lr->lr_life.rl_dying && lr->lr_rail)
			close_gone(m, lr, now);
		else if (lr->lr_life.rl_announce && lr->lr_rail &&
			 lr->lr_link == RY_LINK_UP) {
			lr->lr_life.rl_announce = false;
			ry__ctl_announce(m);
		} else if (lr->lr_life.rl_missing &&
			   now >= lr->lr_life.rl_next_ns && !m->m_closing)
			try_open(m, lr, now);
	}
	ry__rail_health_run(m, now);
}

void ry__rail_life_peer_rails(struct ry_peer *p,
			      const struct ry_qp_endpoint *ep, unsigned n)
{
	uint32_t stale = 0;
	struct ry__list *pos;

	for (unsigned j = 0; j < n && j < p->pr_nrrails && j < RY_MAX_RAILS;
	     j++)
		if (ep[j].cookie != p->pr_rrails[j].rr_ep.cookie)
			stale |= 1u << j;
	if (!stale)
		return;
	/* every op of the peer got its keys before the rail came back */
	ry__list_for_each(pos, &p->pr_ops)
		ry__list_entry(pos, struct ry__op, op_all)->op_rmask &= ~stale;
}

int ry_rail_missing(struct ry_manager *m, unsigned index, char *name,
		    size_t name_len, char *reason, size_t reason_len)
{
	int ret = -ENOENT;

	if (!m || (!name && name_len) || (!reason && reason_len))
		return -EINVAL;
	ry__lock_and_run_leftovers(m);
	for (unsigned i = 0; i < m->m_nrails; i++) {
		const struct ry__rlife *rl = &m->m_rails[i].lr_life;

		if (!rl->rl_missing || index--)
			continue;
		if (name_len)
			snprintf(name, name_len, "%s", rl->rl_cfg.name);
		if (reason_len)
			snprintf(reason, reason_len, "%s", rl->rl_why);
		ret = 0;
		break;
	}
	ry__unlock(m);
	return ret;
}
