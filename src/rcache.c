// SPDX-License-Identifier: BSD-2-Clause
/*
 * The registration cache: ry_mr_cache_get/put/invalidate/stats.
 *
 * An entry is an ordinary region (registered on every rail, on m_regions,
 * so manager teardown frees it like any other) with rg_cached set.  Its
 * extent is the pages around the buffer it was made for.  Entries in the
 * index are in a hash by their first page (rc_hash) and on an LRU list
 * (rc_lru, least recently got first).  A hit is a bucket walk for a region
 * covering the buffer with the access asked for, a reference, and a move
 * to the LRU tail: no allocation, no syscall, one lock.
 *
 * rg_refs counts gets not yet put.  An entry with references or with
 * operations in flight (rg_users) is never deregistered.  Entries not in
 * the index (rg_stale: invalidated while in use, made while caching is
 * off, or larger than the limit) are found by nobody and deregistered at
 * their last put.
 *
 * rc_bytes counts every byte the cache has registered, stale entries too.
 * After a miss or a put, idle entries go from the LRU head until rc_bytes
 * is within reg_cache_bytes; entries in use stay, so the total may exceed
 * the limit while they are in use.
 *
 * Invalidation walks the LRU list (every entry in the index): it is linear
 * in the entries, and meant for free/munmap, not for the data path.
 */
#include <errno.h>
#include <stdint.h>
#include <unistd.h>

#include "src/manager.h"
#include "src/region.h"
#include "src/tunables.h"

#define MR_ACCESS_ALL (RY_MR_REMOTE_WRITE | RY_MR_REMOTE_READ)

static void rc_init(struct ry__rcache *rc)
{
	long pg = sysconf(_SC_PAGESIZE);

	rc->rc_page = pg > 0 ? (size_t)pg : 4096;
	ry__list_init(&rc->rc_lru);
	rc->rc_init = true;
}

static unsigned bucket(const struct ry__rcache *rc, uintptr_t start)
{
	uint64_t k = (uint64_t)(start / rc->rc_page) * 0x9e3779b97f4a7c15ull;

	return (unsigned)(k >> 32) & (RY__RCACHE_HASH - 1);
}

/* Out of the index: no hit finds it any more. */
static void unindex(struct ry__rcache *rc, struct ry_region *rg)
{
	struct ry_region **pp =
	    &rc->rc_hash[bucket(rc, (uintptr_t)rg->rg_addr)];

	while (*pp && *pp != rg)
		pp = &(*pp)->rg_hnext;
	if (*pp)
		*pp = rg->rg_hnext;
	rg->rg_hnext = NULL;
	ry__list_del(&rg->rg_lru);
	rg->rg_stale = true;
}

static void drop(struct ry_manager *m, struct ry_region *rg)
{
	struct ry__rcache *rc = &m->m_rcache;

	if (!rg->rg_stale)
		unindex(rc, rg);
	rc->rc_bytes -= rg->rg_len;
	rc->rc_entries--;
	ry__region_dereg(rg);
}

static bool idle(const struct ry_region *rg)
{
	return !rg->rg_refs && !rg->rg_users;
}

static void evict(struct ry_manager *m)
{
	struct ry__rcache *rc = &m->m_rcache;
	struct ry__list *pos, *next;

	ry__list_for_each_safe(pos, next, &rc->rc_lru) {
		struct ry_region *rg =
		    ry__list_entry(pos, struct ry_region, rg_lru);

		if (rc->rc_bytes <= m->m_cfg.reg_cache_bytes)
			return;
		if (!idle(rg))
			continue;
		rc->rc_st.evictions++;
		drop(m, rg);
	}
}

static struct ry_region *lookup(struct ry__rcache *rc, uintptr_t a, size_t len,
				unsigned access)
{
	uintptr_t start = a & ~(uintptr_t)(rc->rc_page - 1);
	struct ry_region *rg;

	for (rg = rc->rc_hash[bucket(rc, start)]; rg; rg = rg->rg_hnext) {
		uintptr_t b = (uintptr_t)rg->rg_addr;

		if (b <= a && a - b <= rg->rg_len &&
		    len <= rg->rg_len - (a - b) &&
		    (rg->rg_access & access) == access)
			return rg;
	}
	return NULL;
}

/* A new entry for the pages around [a, a + len); the cold lock held. */
static int miss(struct ry_manager *m, uintptr_t a, size_t len, unsigned access,
		struct ry_region **rg_p)
{
	struct ry__rcache *rc = &m->m_rcache;
	uintptr_t start = a & ~(uintptr_t)(rc->rc_page - 1);
	uintptr_t end = a + len;
	struct ry_region *rg;
	int ret;

	if (end < a || end + (rc->rc_page - 1) < end)
		return -EINVAL;
	end = (end + rc->rc_page - 1) & ~(uintptr_t)(rc->rc_page - 1);
	ret = ry__region_reg(m, (void *)start, end - start, access, &rg);
	if (ret)
		return ret;
	rg->rg_cached = true;
	ry__list_init(&rg->rg_lru);
	rc->rc_bytes += rg->rg_len;
	rc->rc_entries++;
	if (rg->rg_len > m->m_cfg.reg_cache_bytes) {
		rg->rg_stale = true; /* off, or too big to keep */
	} else {
		unsigned bk = bucket(rc, start);

		rg->rg_hnext = rc->rc_hash[bk];
		rc->rc_hash[bk] = rg;
		ry__list_add_tail(&rc->rc_lru, &rg->rg_lru);
	}
	*rg_p = rg;
	return 0;
}

int ry_mr_cache_get(struct ry_manager *m, void *addr, size_t len,
		    unsigned access, struct ry_region **rg_p, size_t *off_p)
{
	struct ry__rcache *rc;
	struct ry_region *rg;
	int ret = 0;

	if (!m || !addr || !len || !rg_p || !off_p ||
	    access & ~(unsigned)MR_ACCESS_ALL)
		return -EINVAL;
	rc = &m->m_rcache;
	ry__lock_and_run_leftovers(m);
	if (m->m_closing) {
		ret = -ESHUTDOWN;
		goto out;
	}
	if (!rc->rc_init)
		rc_init(rc);
	rg = lookup(rc, (uintptr_t)addr, len, access);
	if (rg) {
		rc->rc_st.hits++;
		ry__list_del(&rg->rg_lru);
		ry__list_add_tail(&rc->rc_lru, &rg->rg_lru);
	} else {
		ret = miss(m, (uintptr_t)addr, len, access, &rg);
		if (ret)
			goto out;
		rc->rc_st.misses++;
	}
	if (!rg->rg_refs++)
		rc->rc_st.in_use++;
	if (!rg->rg_stale)
		evict(m);
	*rg_p = rg;
	*off_p = (size_t)((uintptr_t)addr - (uintptr_t)rg->rg_addr);
out:
	ry__unlock(m);
	return ret;
}

int ry_mr_cache_put(struct ry_region *rg)
{
	struct ry_manager *m;
	int ret = 0;

	if (!rg || !rg->rg_cached)
		return -EINVAL;
	m = rg->rg_mgr;
	ry__lock_and_run_leftovers(m);
	if (!rg->rg_refs) {
		ret = -EINVAL; /* more puts than gets */
	} else if (rg->rg_users) {
		ret = -EBUSY;
	} else if (!--rg->rg_refs) {
		m->m_rcache.rc_st.in_use--;
		if (rg->rg_stale)
			drop(m, rg);
		else
			evict(m);
	}
	ry__unlock(m);
	return ret;
}

int ry_mr_cache_invalidate(struct ry_manager *m, void *addr, size_t len)
{
	struct ry__list *pos, *next;
	struct ry__rcache *rc;
	uintptr_t a = (uintptr_t)addr;
	int n = 0;

	if (!m || !addr || !len || a + len < a)
		return -EINVAL;
	rc = &m->m_rcache;
	ry__lock_and_run_leftovers(m);
	if (!rc->rc_init)
		goto out;
	ry__list_for_each_safe(pos, next, &rc->rc_lru) {
		struct ry_region *rg =
		    ry__list_entry(pos, struct ry_region, rg_lru);
		uintptr_t b = (uintptr_t)rg->rg_addr;

		if (b >= a + len || a >= b + rg->rg_len)
			continue;
		n++;
		rc->rc_st.invalidations++;
		if (idle(rg))
			drop(m, rg);
		else
			unindex(rc, rg);
	}
out:
	ry__unlock(m);
	return n;
}

int ry_mr_cache_stats(struct ry_manager *m, struct ry_mr_cache_stats *out)
{
	if (!m || !out)
		return -EINVAL;
	ry__lock_and_run_leftovers(m);
	*out = m->m_rcache.rc_st;
	out->bytes = m->m_rcache.rc_bytes;
	out->entries = m->m_rcache.rc_entries;
	ry__unlock(m);
	return 0;
}
