// SPDX-License-Identifier: BSD-2-Clause
/* Standby rails: see standby.h. */
#include "src/manager.h"
#include "src/standby.h"

bool ry__standby_primary_up(const struct ry_peer *p)
{
	const struct ry_manager *m = p->pr_mgr;
	uint64_t up = 0, all = 0;

	for (unsigned i = 0; i < m->m_nrails; i++) {
		const struct ry__conn *c = p->pr_conn[i];
		uint32_t w = c->cn_lrail->lr_cfg.weight;

		if (c->cn_lrail->lr_cfg.standby)
			continue;
		all += w;
		if (c->cn_state == CONN_ACTIVE && !c->cn_post_err)
			up += w;
	}
	return up && up * 100 >= (uint64_t)m->m_cfg.standby_below * all;
}
