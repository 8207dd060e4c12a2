// SPDX-License-Identifier: BSD-2-Clause
/*
 * Memory registration on every rail, and the memory descriptor an
 * application carries in its own RPCs.
 *
 * Descriptor layout, version 1, all little-endian:
 *
 *   0   u32  magic "RYMD" (0x444d5952 read as LE u32)
 *   4   u8   version (1)
 *   5   u8   n: rails with an rkey (1..RY_MAX_RAILS)
 *   6   u16  access (enum ry_mr_access)
 *   8   u64  owner node (incarnation id)
 *   16  u64  address
 *   24  u64  length
 *   32  n x { u8 rail index, u24 rail generation, u32 rkey }
 *   32+8n u32 checksum: FNV-1a over every byte before it
 *
 * The rail generation counts the times the owner's rail in that slot came
 * back (rail_life.c), 0 until it does: an initiator uses a key only while
 * the rail list the owner last sent names the same generation, so an rkey
 * of a closed rail is never sent to its successor.
 *
 * A descriptor crosses trust boundaries (it arrives in someone else's RPC),
 * so unpacking checks every field and the exact length; a bad one is
 * -EBADMSG, never a crash or a wild rkey.  The checksum catches truncation
 * and corruption; a forged but well-formed one is caught by the owner's
 * rail (rkey, access, bounds) and fails the operation with
 * RY_EREMOTE_ACCESS.
 */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "src/util/le.h"
#include "src/lrail.h"
#include "src/manager.h"
#include "src/region.h"

#define DESC_MAGIC 0x444d5952u
#define DESC_VERSION 1
#define DESC_HDR 32
#define DESC_ENT 8

static uint32_t fnv1a(const unsigned char *p, size_t n)
{
	uint32_t h = 2166136261u;

	while (n--)
		h = (h ^ *p++) * 16777619u;
	return h;
}

int ry__desc_unpack(const void *buf, size_t len, struct ry__desc *d)
{
	const unsigned char *p = buf;
	struct ry__desc out = {0};
	unsigned n, i;

	if (!buf || len < DESC_HDR + 4)
		return -EBADMSG;
	if (ry__get_le32(p) != DESC_MAGIC)
		return -EBADMSG;
	if (p[4] != DESC_VERSION)
		return -EPROTONOSUPPORT;
	n = p[5];
	if (!n || n > RY_MAX_RAILS || len != DESC_HDR + DESC_ENT * n + 4)
		return -EBADMSG;
	if (fnv1a(p, len - 4) != ry__get_le32(p + len - 4))
		return -EBADMSG;
	out.d_access = ry__get_le16(p + 6);
	out.d_node = ry__get_le64(p + 8);
	out.d_addr = ry__get_le64(p + 16);
	out.d_len = ry__get_le64(p + 24);
	if (out.d_access &
		~(unsigned)(RY_MR_REMOTE_WRITE | RY_MR_REMOTE_READ) ||
	    !out.d_len || out.d_addr + out.d_len < out.d_addr)
		return -EBADMSG;
	for (i = 0; i < n; i++) {
		const unsigned char *e = p + DESC_HDR + DESC_ENT * i;

		if (e[0] >= RY_MAX_RAILS || out.d_mask & (1u << e[0]))
			return -EBADMSG;
		out.d_mask |= 1u << e[0];
		out.d_gen[e[0]] =
		    e[1] | (uint32_t)e[2] << 8 | (uint32_t)e[3] << 16;
		out.d_rkey[e[0]] = ry__get_le32(e + 4);
	}
	*d = out;
	return 0;
}

int ry_desc_check(const void *desc, size_t len)
{
	struct ry__desc d;

	return ry__desc_unpack(desc, len, &d);
}

int ry_mr_pack(const struct ry_region *rg, void *buf, size_t len)
{
	struct ry_manager *m;
	unsigned char *p = buf;
	size_t need;
	unsigned i, n = 0;

	if (!rg || !buf)
		return -EINVAL;
	m = rg->rg_mgr;
	need = DESC_HDR + DESC_ENT * m->m_nrails + 4;
	if (len < need)
		return -ENOSPC;
	/* a rail may close or open meanwhile (rail_life.c): whoever changes
	 * one holds the cold lock, m_lock first */
	pthread_mutex_lock(&m->m_lock);
	memset(p, 0, need);
	ry__put_le32(p, DESC_MAGIC);
	p[4] = DESC_VERSION;
	ry__put_le16(p + 6, (uint16_t)rg->rg_access);
	ry__put_le64(p + 8, m->m_node);
	ry__put_le64(p + 16, (uintptr_t)rg->rg_addr);
	ry__put_le64(p + 24, rg->rg_len);
	for (i = 0; i < m->m_nrails; i++) {
		unsigned char *e = p + DESC_HDR + DESC_ENT * n;

		if (!rg->rg_mr[i]) /* a hole: the rail was removed */
			continue;
		n++;
		e[0] = (unsigned char)i;
		e[1] = (unsigned char)m->m_rails[i].lr_life.rl_gen;
		e[2] = (unsigned char)(m->m_rails[i].lr_life.rl_gen >> 8);
		e[3] = (unsigned char)(m->m_rails[i].lr_life.rl_gen >> 16);
		ry__put_le32(e + 4, rg->rg_mr[i]->rkey);
	}
	pthread_mutex_unlock(&m->m_lock);
	p[5] = (unsigned char)n;
	need = DESC_HDR + DESC_ENT * n;
	ry__put_le32(p + need, fnv1a(p, need));
	return (int)(need + 4);
}

/* Called with the cold lock held. */
static void dereg_one(struct ry__lrail *lr, struct ry_mr *mr)
{
	pthread_mutex_lock(&lr->lr_lock);
	ry__rail_dereg_mr(mr);
	pthread_mutex_unlock(&lr->lr_lock);
}

/* Register rg on one more rail (a new region, or a rail a reload added). */
int ry__region_reg_rail(struct ry_region *rg, struct ry__lrail *lr)
{
	unsigned ra = RY_ACCESS_LOCAL_WRITE;
	int ret;

	if (rg->rg_access & RY_MR_REMOTE_WRITE)
		ra |= RY_ACCESS_REMOTE_WRITE;
	if (rg->rg_access & RY_MR_REMOTE_READ)
		ra |= RY_ACCESS_REMOTE_READ;
	pthread_mutex_lock(&lr->lr_lock);
	if (rg->rg_slice)
		ret = ry__rail_reg_mr(lr->lr_pd,
				      (char *)rg->rg_addr +
					  (size_t)lr->lr_idx * rg->rg_slice,
				      rg->rg_slice, ra, &rg->rg_mr[lr->lr_idx]);
	else
		ret = ry__rail_reg_mr(lr->lr_pd, rg->rg_addr, rg->rg_len, ra,
				      &rg->rg_mr[lr->lr_idx]);
	pthread_mutex_unlock(&lr->lr_lock);
	if (ret)
		RY_ERR("mgr", "rail %s: registering %zu bytes: %d",
		       lr->lr_cfg.name, rg->rg_len, ret);
	return ret;
}

/* Called with the cold lock held. */
void ry__region_dereg_rail(struct ry_region *rg, struct ry__lrail *lr)
{
	if (!rg->rg_mr[lr->lr_idx])
		return;
	dereg_one(lr, rg->rg_mr[lr->lr_idx]);
	rg->rg_mr[lr->lr_idx] = NULL;
}

static int region_new(struct ry_manager *m, void *addr, size_t len,
		      size_t slice, unsigned access, struct ry_region **rg_p)
{
	struct ry_region *rg;
	unsigned i;
	int ret;

	rg = calloc(1, sizeof(*rg));
	if (!rg)
		return -ENOMEM;
	rg->rg_mgr = m;
	rg->rg_addr = addr;
	rg->rg_len = len;
	rg->rg_slice = slice;
	rg->rg_access = access;
	for (i = 0; i < m->m_nrails; i++) {
		if (!ry__lrail_live(&m->m_rails[i]))
			continue;
		ret = ry__region_reg_rail(rg, &m->m_rails[i]);
		if (ret)
			goto err_dereg;
	}
	rg->rg_next = m->m_regions;
	if (m->m_regions)
		m->m_regions->rg_prev = rg;
	m->m_regions = rg;
	*rg_p = rg;
	return 0;

err_dereg:
	while (i-- > 0)
		ry__region_dereg_rail(rg, &m->m_rails[i]);
	free(rg);
	return ret;
}

int ry__region_reg(struct ry_manager *m, void *addr, size_t len,
		   unsigned access, struct ry_region **rg_p)
{
	return region_new(m, addr, len, 0, access, rg_p);
}

int ry__region_reg_slices(struct ry_manager *m, void *addr, size_t slice,
			  unsigned access, struct ry_region **rg_p)
{
	return region_new(m, addr, (size_t)RY_MAX_RAILS * slice, slice, access,
			  rg_p);
}

/* Called with the cold lock held. */
void ry__region_dereg(struct ry_region *rg)
{
	struct ry_manager *m = rg->rg_mgr;
	unsigned i;

	for (i = 0; i < m->m_nrails; i++)
		ry__region_dereg_rail(rg, &m->m_rails[i]);
	if (rg->rg_prev)
		rg->rg_prev->rg_next = rg->rg_next;
	else
		m->m_regions = rg->rg_next;
	if (rg->rg_next)
		rg->rg_next->rg_prev = rg->rg_prev;
	free(rg);
}
