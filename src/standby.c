// SPDX-License-Identifier: BSD-2-Clause
/* Standby rails: see standby.h. */
#include "src/manager.h"
#include "src/standby.h"

bool ry__standby_primary_up(const struct ry_peer *p)
{
	for (unsigned i = 0; i < p->pr_mgr->m_nrails; i++) {
		const struct ry__conn *c = p->pr_conn[i];

		if (c->cn_state == CONN_ACTIVE && !c->cn_post_err &&
		    !c->cn_lrail->lr_cfg.standby)
			return true;
	}
	return false;
}
