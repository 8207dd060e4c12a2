// SPDX-License-Identifier: BSD-2-Clause
/*
 * Counters.  Each connection keeps its own; a rail's are the sum over its
 * connections to every peer (plus the transport's retransmits), a peer's
 * the sum over its connections (plus its fences).  Summing on read keeps
 * the hot path to one increment per event.
 */
#include <errno.h>
#include <string.h>

#include "src/manager.h"

void ry__cnt_add(struct ry_counters *d, const struct ry_counters *s)
{
	d->bytes += s->bytes;
	d->fragments += s->fragments;
	d->work_requests += s->work_requests;
	d->messages += s->messages;
	d->replayed_fragments += s->replayed_fragments;
	d->retransmits += s->retransmits;
	d->failovers += s->failovers;
	d->fences += s->fences;
	d->reconnects += s->reconnects;
	d->heartbeats += s->heartbeats;
	d->detect_count += s->detect_count;
	d->detect_ns_total += s->detect_ns_total;
	if (s->detect_ns_max > d->detect_ns_max)
		d->detect_ns_max = s->detect_ns_max;
	d->resume_count += s->resume_count;
	d->resume_ns_total += s->resume_ns_total;
	if (s->resume_ns_max > d->resume_ns_max)
		d->resume_ns_max = s->resume_ns_max;
}

static struct ry__lrail *rail_by_name(struct ry_manager *m, const char *name)
{
	unsigned i;

	for (i = 0; i < m->m_nrails; i++)
		if (!strcmp(m->m_rails[i].lr_cfg.name, name))
			return &m->m_rails[i];
	return NULL;
}

/* The rail by that name with m_lock held, or NULL with it not held. */
static struct ry__lrail *lock_rail(struct ry_manager *m, const char *name)
{
	struct ry__lrail *lr;

	pthread_mutex_lock(&m->m_lock);
	lr = rail_by_name(m, name);
	if (!lr)
		pthread_mutex_unlock(&m->m_lock);
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
		ry__cnt_add(&sum, &p->pr_conns[lr->lr_idx].cn_cnt);
	pthread_mutex_lock(&lr->lr_lock);
	if (!ry__rail_get_stats(lr->lr_rail, &st))
		sum.retransmits += st.retransmits;
	pthread_mutex_unlock(&lr->lr_lock);
	pthread_mutex_unlock(&m->m_lock);
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
	pthread_mutex_lock(&m->m_lock);
	for (i = 0; i < m->m_nrails; i++)
		ry__cnt_add(&sum, &p->pr_conns[i].cn_cnt);
	pthread_mutex_unlock(&m->m_lock);
	*out = sum;
	return 0;
}

int ry_peer_info(struct ry_peer *p, struct ry_peer_info *out)
{
	struct ry_peer_info pi = {0};
	struct ry_manager *m;

	if (!p || !out)
		return -EINVAL;
	m = p->pr_mgr;
	pthread_mutex_lock(&m->m_lock);
	pi.ready = p->pr_state == PEER_READY;
	pi.incarnation = p->pr_node;
	for (unsigned i = 0; i < m->m_nrails; i++) {
		const struct ry__conn *c = &p->pr_conns[i];

		if (c->cn_state == CONN_UNPAIRED)
			continue;
		pi.rails_paired++;
		if (c->cn_lrail->lr_link == RY_LINK_UP)
			pi.rails_usable++;
		if (c->cn_state == CONN_ACTIVE)
			pi.rails_active++;
	}
	pthread_mutex_unlock(&m->m_lock);
	*out = pi;
	return 0;
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
		const struct ry__conn *c = &p->pr_conns[lr->lr_idx];

		if (c->cn_state != CONN_UNPAIRED &&
		    c->cn_health < ri.health_min)
			ri.health_min = c->cn_health;
	}
	pthread_mutex_unlock(&m->m_lock);
	*out = ri;
	return 0;
}
