// SPDX-License-Identifier: BSD-2-Clause
/*
 * The manager's public face for peers and memory: the entry points that
 * take the cold lock and call down into peer.c, peer_index.c and mr.c,
 * which themselves never take it (README, layout: floors).
 */
#include <errno.h>
#include <string.h>

#include "src/manager.h"
#include "src/peer.h"
#include "src/region.h"

int ry_peer_get(struct ry_manager *m, const char *s, struct ry_peer **peer_p)
{
	struct ry_peer *p;
	unsigned i;
	int ret = 0;

	if (!m || !s || !s[0] || !peer_p)
		return -EINVAL;
	ry__lock_and_run_leftovers(m);
	if (m->m_closing) {
		ret = -ESHUTDOWN;
		goto out;
	}
	p = ry__peer_find(m, s, s);
	if (p && p->pr_retired) {
		ret = -ENOENT; /* a reload removed its peer section */
		goto out;
	}
	if (!p) {
		const char *addr = s;

		for (i = 0; i < m->m_cfg.n_peers; i++)
			if (!strcmp(m->m_cfg.peers[i].name, s))
				break;
		if (i < m->m_cfg.n_peers) {
			addr = m->m_cfg.peers[i].address;
			p = ry__peer_find(m, NULL, addr);
		} else if (!strchr(s, ':')) { /* neither name nor address */
			ret = -ENOENT;
			goto out;
		}
		if (!p)
			p = ry__peer_new(m, s, addr, true);
		if (!p) {
			ret = -ENOMEM;
			goto out;
		}
	}
	/* named by the application with this address: ours to dial */
	if (!p->pr_dial && p->pr_addr[0] && !strcmp(p->pr_addr, s)) {
		p->pr_dial = true;
		ry__peer_index(p);
	}
	p->pr_app_seen = true;
	*peer_p = p;
out:
	ry__unlock(m);
	return ret;
}

void ry_peer_hold(struct ry_peer *p)
{
	if (!p)
		return;
	ry__lock_and_run_leftovers(p->pr_mgr);
	p->pr_app_refs++;
	ry__unlock(p->pr_mgr);
}

void ry_peer_release(struct ry_peer *p)
{
	if (!p)
		return;
	ry__lock_and_run_leftovers(p->pr_mgr);
	ry__peer_unref(p);
	ry__unlock(p->pr_mgr);
}

const char *ry_peer_name(const struct ry_peer *p)
{
	return p ? p->pr_name : "";
}

int ry_desc_live(struct ry_peer *p, const void *desc, size_t len)
{
	struct ry_manager *m;
	struct ry__desc d;
	int ret;

	if (!p || !desc)
		return -EINVAL;
	ret = ry__desc_unpack(desc, len, &d);
	if (ret)
		return ret;
	m = p->pr_mgr;
	ry__lock_and_run_leftovers(m);
	if (ry__peer_node_stale(p, d.d_node))
		ret = -ESTALE;
	else if (!p->pr_node)
		ret = -EAGAIN;
	else if (d.d_node != p->pr_node)
		ret = -ENXIO;
	ry__unlock(m);
	return ret;
}

int ry_mr_reg(struct ry_manager *m, void *addr, size_t len, unsigned access,
	      struct ry_region **rg_p)
{
	int ret;

	if (!m || !addr || !len || !rg_p ||
	    access & ~(unsigned)(RY_MR_REMOTE_WRITE | RY_MR_REMOTE_READ))
		return -EINVAL;
	ry__lock_and_run_leftovers(m);
	ret = m->m_closing ? -ESHUTDOWN
			   : ry__region_reg(m, addr, len, access, rg_p);
	ry__unlock(m);
	return ret;
}

int ry_mr_dereg(struct ry_region *rg)
{
	struct ry_manager *m;
	int ret = 0;

	if (!rg)
		return 0;
	if (rg->rg_cached)
		return -EINVAL; /* the cache's: ry_mr_cache_put() */
	m = rg->rg_mgr;
	ry__lock_and_run_leftovers(m);
	if (rg->rg_users)
		ret = -EBUSY;
	else
		ry__region_dereg(rg);
	ry__unlock(m);
	return ret;
}
