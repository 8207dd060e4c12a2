// SPDX-License-Identifier: BSD-2-Clause
/* Standby and drained rails: see standby.h. */
#include "src/manager.h"
#include "src/standby.h"

static bool can_take(const struct ry__conn *c)
{
	return c->cn_state == CONN_ACTIVE && !c->cn_post_err;
}

/* can take work, and is not a drained rail's while a healthy one can */
static bool takes(const struct ry__conn *c, bool healthy)
{
	return can_take(c) &&
	       !(healthy && c->cn_lrail->lr_health.rh_state == RY_RAIL_DRAINED);
}

unsigned ry__standby_usable_conns(const struct ry_peer *p, struct ry__conn **cs)
{
	const struct ry_manager *m = p->pr_mgr;
	uint64_t up = 0, all = 0;
	bool healthy = false, prim;
	unsigned i, n = 0;

	for (i = 0; i < m->m_nrails && !healthy; i++)
		healthy = takes(p->pr_conn[i], true);
	for (i = 0; i < m->m_nrails; i++) {
		const struct ry__conn *c = p->pr_conn[i];
		uint32_t w = c->cn_lrail->lr_cfg.weight;

		if (c->cn_lrail->lr_cfg.standby)
			continue;
		all += w;
		if (takes(c, healthy))
			up += w;
	}
	prim = up && up * 100 >= (uint64_t)m->m_cfg.standby_below * all;
	for (i = 0; i < m->m_nrails; i++) {
		struct ry__conn *c = p->pr_conn[i];

		if (takes(c, healthy) && !(prim && c->cn_lrail->lr_cfg.standby))
			cs[n++] = c;
	}
	return n;
}
