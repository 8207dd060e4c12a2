// SPDX-License-Identifier: BSD-2-Clause
/*
 * Counters.  Each connection keeps its own; a rail's are the sum over its
 * connections to every peer (plus the transport's retransmits), a peer's
 * the sum over its connections (plus its fences).  Summing on read keeps
 * the hot path to one increment per event.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "src/conn.h"
#include "src/lrail.h"
#include "src/manager.h"
#include "src/peer.h"
#include "src/util/cnt.h"

static struct ry__lrail *rail_by_name(struct ry_manager *m, const char *name)
{
	unsigned i;

	for (i = 0; i < m->m_nrails; i++)
		if (ry__lrail_live(&m->m_rails[i]) &&
		    !strcmp(m->m_rails[i].lr_cfg.name, name))
			return &m->m_rails[i];
	return NULL;
}

/* The rail by that name with the cold lock held, or NULL with it not held. */
static struct ry__lrail *lock_rail(struct ry_manager *m, const char *name)
{
	struct ry__lrail *lr;

	ry__lock_and_run_leftovers(m);
	lr = rail_by_name(m, name);
	if (!lr)
		ry__unlock(m);
	return lr;
}

int ry_rail_counters(struct ry_manager *m, const char *rail,
		     struct ry_counters *out)
{
	struct ry_rail_stats st;
	struct ry_counters sum;
	struct ry__lrail *lr;
	struct ry_peer *p;

	if (!m || !rail || !out)
		return -EINVAL;
	lr = lock_rail(m, rail);
	if (!lr)
		return -ENOENT;
	sum = lr->lr_gone;
	for (p = m->m_peers; p; p = p->pr_next)
		ry__cnt_add(&sum, &p->pr_conn[lr->lr_idx]->cn_cnt);
	pthread_mutex_lock(&lr->lr_lock);
	if (!ry__rail_get_stats(lr->lr_rail, &st))
		sum.retransmits += st.retransmits;
	pthread_mutex_unlock(&lr->lr_lock);
	ry__unlock(m);
	*out = sum;
	return 0;
}

int ry_peer_counters(struct ry_peer *p, struct ry_counters *out)
{
	struct ry_manager *m;
	struct ry_counters sum;
	unsigned i;

	if (!p || !out)
		return -EINVAL;
	m = p->pr_mgr;
	memset(&sum, 0, sizeof(sum));
	ry__lock_and_run_leftovers(m);
	for (i = 0; i < m->m_nrails; i++)
		ry__cnt_add(&sum, &p->pr_conn[i]->cn_cnt);
	ry__unlock(m);
	*out = sum;
	return 0;
}

/* Called with the cold lock held. */
static void peer_info(const struct ry_peer *p, struct ry_peer_info *out)
{
	const struct ry_manager *m = p->pr_mgr;
	struct ry_peer_info pi = {0};

	pi.ready = p->pr_state == PEER_READY;
	pi.incarnation = p->pr_node;
	pi.restarts = p->pr_npast;
	for (unsigned i = 0; i < m->m_nrails; i++) {
		const struct ry__conn *c = p->pr_conn[i];

		if (c->cn_state == CONN_UNPAIRED)
			continue;
		pi.rails_paired++;
		if (c->cn_lrail->lr_link == RY_LINK_UP)
			pi.rails_usable++;
		if (c->cn_state == CONN_ACTIVE)
			pi.rails_active++;
	}
	*out = pi;
}

int ry_peer_info(struct ry_peer *p, struct ry_peer_info *out)
{
	struct ry_peer_info pi;
	struct ry_manager *m;

	if (!p || !out)
		return -EINVAL;
	m = p->pr_mgr;
	ry__lock_and_run_leftovers(m);
	peer_info(p, &pi);
	ry__unlock(m);
	*out = pi;
	return 0;
}

int ry_peer_list(struct ry_manager *m, struct ry_peer_entry *out, unsigned max)
{
	const struct ry_peer *p;
	unsigned n = 0, i;

	if (!m || (!out && max))
		return -EINVAL;
	ry__lock_and_run_leftovers(m);
	for (p = m->m_peers; p; p = p->pr_next, n++) {
		struct ry_peer_entry *e;

		if (n >= max)
			continue;
		e = &out[n];
		memset(e, 0, sizeof(*e));
		snprintf(e->name, sizeof(e->name), "%s", p->pr_name);
		snprintf(e->node, sizeof(e->node), "%s", p->pr_node_name);
		snprintf(e->address, sizeof(e->address), "%s", p->pr_addr);
		snprintf(e->state, sizeof(e->state), "%s",
			 ry__peer_state_str(p->pr_state));
		e->dialed = p->pr_dial;
		e->from_hello = p->pr_from_hello;
		peer_info(p, &e->info);
		for (i = 0; i < m->m_nrails; i++)
			ry__cnt_add(&e->counters, &p->pr_conn[i]->cn_cnt);
	}
	/* configured peers not used yet have no record: listed as new */
	for (i = 0; i < m->m_cfg.n_peers; i++) {
		const struct ry_peer_config *pc = &m->m_cfg.peers[i];
		struct ry_peer_entry *e;

		if (ry__peer_find(m, pc->name, pc->address))
			continue;
		if (n++ >= max)
			continue;
		e = &out[n - 1];
		memset(e, 0, sizeof(*e));
		snprintf(e->name, sizeof(e->name), "%s", pc->name);
		snprintf(e->address, sizeof(e->address), "%s", pc->address);
		snprintf(e->state, sizeof(e->state), "%s",
			 ry__peer_state_str(PEER_NEW));
		e->dialed = true;
	}
	ry__unlock(m);
	return (int)n;
}

int ry_rail_info(struct ry_manager *m, const char *rail,
		 struct ry_rail_info *out)
{
	struct ry_rail_info ri = {.health_min = 1000};
	struct ry__lrail *lr;
	struct ry_peer *p;

	if (!m || !rail || !out)
		return -EINVAL;
	lr = lock_rail(m, rail);
	if (!lr)
		return -ENOENT;
	ri.link_up = lr->lr_link == RY_LINK_UP;
	ri.peers_active = lr->lr_active;
	for (p = m->m_peers; p; p = p->pr_next) {
		const struct ry__conn *c = p->pr_conn[lr->lr_idx];

		if (c->cn_state != CONN_UNPAIRED &&
		    c->cn_health < ri.health_min)
			ri.health_min = c->cn_health;
	}
	ry__unlock(m);
	*out = ri;
	return 0;
}
