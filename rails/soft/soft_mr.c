// SPDX-License-Identifier: BSD-2-Clause
/*
 * Protection domains and memory regions.  Keys are random 32-bit values
 * from getrandom(), unique within the rail, hashed by key.  Every inbound
 * WRITE or READ and every local SGE goes through one check (key, PD,
 * access, bounds, overflow) before a byte is touched; deregistering
 * unhashes the region at once, so the next packet naming it fails.
 */
#include <errno.h>
#include <stdlib.h>

#include "rails/soft/soft_int.h"
#include "src/util/log.h"

static unsigned bucket(uint32_t key)
{
	return (key * 2654435761u) >> 22; /* 10 bits: RY__SOFT_KEY_BUCKETS */
}
_Static_assert(RY__SOFT_KEY_BUCKETS == 1024, "bucket() makes 10 bits");

int ry__soft_alloc_pd(struct ry_rail *rail, struct ry_pd **pd_p)
{
	struct ry__soft_pd *pd = calloc(1, sizeof(*pd));

	if (!pd)
		return -ENOMEM;
	pd->base.rail = rail;
	pd->next = to_srail(rail)->pds;
	to_srail(rail)->pds = pd;
	*pd_p = &pd->base;
	return 0;
}

int ry__soft_dealloc_pd(struct ry_pd *pd)
{
	struct ry__soft_pd *spd = container_of(pd, struct ry__soft_pd, base);

	struct ry__soft_pd **pp;

	if (spd->refs)
		return -EBUSY;
	for (pp = &to_srail(pd->rail)->pds; *pp; pp = &(*pp)->next) {
		if (*pp == spd) {
			*pp = spd->next;
			break;
		}
	}
	free(spd);
	return 0;
}

static struct ry__soft_mr *find_rkey(struct ry__soft_rail *r, uint32_t key)
{
	struct ry__soft_mr *m = r->rkeys[bucket(key)];

	while (m && m->base.rkey != key)
		m = m->rnext;
	return m;
}

static struct ry__soft_mr *find_lkey(struct ry__soft_rail *r, uint32_t key)
{
	struct ry__soft_mr *m = r->lkeys[bucket(key)];

	while (m && m->base.lkey != key)
		m = m->lnext;
	return m;
}

static int new_key(struct ry__soft_rail *r, uint32_t *key, bool rkey)
{
	for (int tries = 0; tries < 64; tries++) {
		uint32_t k;
		int rc = ry__rand_bytes(&k, sizeof(k));

		if (rc)
			return rc;
		/* 0 is never valid: a zeroed descriptor must not match. */
		if (!k || (rkey ? find_rkey(r, k) : find_lkey(r, k)))
			continue;
		*key = k;
		return 0;
	}
	return -EAGAIN;
}

int ry__soft_reg_mr(struct ry_pd *pd, void *addr, size_t length,
		    unsigned access, struct ry_mr **mr_p)
{
	struct ry__soft_rail *r = to_srail(pd->rail);
	struct ry__soft_mr *m;
	uintptr_t end;
	int rc;

	if ((!addr && length) ||
	    __builtin_add_overflow((uintptr_t)addr, length, &end))
		return -EINVAL;
	if (access &
	    ~(unsigned)(RY_ACCESS_LOCAL_WRITE | RY_ACCESS_REMOTE_WRITE |
			RY_ACCESS_REMOTE_READ))
		return -EINVAL;
	/* verbs: remote write needs local write */
	if ((access & RY_ACCESS_REMOTE_WRITE) &&
	    !(access & RY_ACCESS_LOCAL_WRITE))
		return -EINVAL;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	rc = new_key(r, &m->base.lkey, false);
	if (!rc)
		rc = new_key(r, &m->base.rkey, true);
	if (rc) {
		free(m);
		return rc;
	}
	m->base.pd = pd;
	m->base.addr = addr;
	m->base.length = length;
	m->base.access = access;
	m->rnext = r->rkeys[bucket(m->base.rkey)];
	r->rkeys[bucket(m->base.rkey)] = m;
	m->lnext = r->lkeys[bucket(m->base.lkey)];
	r->lkeys[bucket(m->base.lkey)] = m;
	container_of(pd, struct ry__soft_pd, base)->refs++;
	*mr_p = &m->base;
	return 0;
}

int ry__soft_dereg_mr(struct ry_mr *mr)
{
	struct ry__soft_mr *m = container_of(mr, struct ry__soft_mr, base);
	struct ry__soft_rail *r = to_srail(mr->pd->rail);
	struct ry__soft_mr **pp;

	for (pp = &r->rkeys[bucket(mr->rkey)]; *pp; pp = &(*pp)->rnext) {
		if (*pp == m) {
			*pp = m->rnext;
			break;
		}
	}
	for (pp = &r->lkeys[bucket(mr->lkey)]; *pp; pp = &(*pp)->lnext) {
		if (*pp == m) {
			*pp = m->lnext;
			break;
		}
	}
	container_of(mr->pd, struct ry__soft_pd, base)->refs--;
	free(m);
	return 0;
}

void ry__soft_mr_cleanup(struct ry__soft_rail *r)
{
	for (unsigned b = 0; b < RY__SOFT_KEY_BUCKETS; b++)
		while (r->rkeys[b])
			ry__soft_dereg_mr(&r->rkeys[b]->base);
	while (r->pds) {
		struct ry__soft_pd *pd = r->pds;

		r->pds = pd->next;
		free(pd);
	}
}

static bool in_bounds(const struct ry_mr *mr, uint64_t va, uint64_t len)
{
	uint64_t start = (uintptr_t)mr->addr, end;

	if (__builtin_add_overflow(va, len, &end))
		return false;
	return va >= start && end <= start + mr->length;
}

/* m, if it belongs to pd, allows access and covers [va, va + len). */
static struct ry__soft_mr *usable(struct ry__soft_mr *m, struct ry_pd *pd,
				  uint64_t va, uint64_t len, unsigned access)
{
	if (!m || m->base.pd != pd || (m->base.access & access) != access ||
	    !in_bounds(&m->base, va, len))
		return NULL;
	return m;
}

struct ry__soft_mr *ry__soft_mr_rkey(struct ry__soft_rail *r, struct ry_pd *pd,
				     uint32_t rkey, uint64_t va, uint64_t len,
				     unsigned access)
{
	return usable(find_rkey(r, rkey), pd, va, len, access);
}

struct ry__soft_mr *ry__soft_mr_lkey(struct ry__soft_rail *r, struct ry_pd *pd,
				     uint32_t lkey, uint64_t va, uint64_t len,
				     unsigned access)
{
	return usable(find_lkey(r, lkey), pd, va, len, access);
}
