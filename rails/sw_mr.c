// SPDX-License-Identifier: BSD-2-Clause
/* PDs and regions of the soft and tcp rails (sw_mr.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rails/sw_mr.h"
#include "src/util/random.h"

static unsigned bucket(uint32_t key)
{
	return (key * 2654435761u) >> 22; /* top 10 bits */
}
_Static_assert(RY__SW_KEY_BUCKETS == 1024, "bucket() makes 10 bits");

int ry__sw_alloc_pd(struct ry__sw_mem *mem, struct ry_rail *rail,
		    struct ry_pd **pd_p)
{
	struct ry__sw_pd *pd = calloc(1, sizeof(*pd));

	if (!pd)
		return -ENOMEM;
	pd->base.rail = rail;
	pd->next = mem->pds;
	mem->pds = pd;
	*pd_p = &pd->base;
	return 0;
}

int ry__sw_dealloc_pd(struct ry__sw_mem *mem, struct ry_pd *base)
{
	struct ry__sw_pd *pd = ry__sw_pd(base);
	struct ry__sw_pd **pp;

	if (pd->refs)
		return -EBUSY;
	for (pp = &mem->pds; *pp != pd; pp = &(*pp)->next)
		;
	*pp = pd->next;
	free(pd);
	return 0;
}

static struct ry__sw_mr *find_rkey(const struct ry__sw_mem *mem, uint32_t key)
{
	struct ry__sw_mr *m = mem->rkeys[bucket(key)];

	while (m && m->base.rkey != key)
		m = m->rnext;
	return m;
}

static struct ry__sw_mr *find_lkey(const struct ry__sw_mem *mem, uint32_t key)
{
	struct ry__sw_mr *m = mem->lkeys[bucket(key)];

	while (m && m->base.lkey != key)
		m = m->lnext;
	return m;
}

static int new_key(const struct ry__sw_mem *mem, uint32_t *key, bool rkey)
{
	for (int tries = 0; tries < 64; tries++) {
		uint32_t k;
		int rc = ry__rand_bytes(&k, sizeof(k));

		if (rc)
			return rc;
		if (!k || (rkey ? find_rkey(mem, k) : find_lkey(mem, k)))
			continue;
		*key = k;
		return 0;
	}
	return -EAGAIN;
}

int ry__sw_reg_mr(struct ry__sw_mem *mem, struct ry_pd *pd, void *addr,
		  size_t length, unsigned access, struct ry_mr **mr_p)
{
	struct ry__sw_mr *m;
	uintptr_t end;
	int rc;

	if ((!addr && length) ||
	    __builtin_add_overflow((uintptr_t)addr, length, &end))
		return -EINVAL;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	rc = new_key(mem, &m->base.lkey, false);
	if (!rc)
		rc = new_key(mem, &m->base.rkey, true);
	if (rc) {
		free(m);
		return rc;
	}
	m->base.pd = pd;
	m->base.addr = addr;
	m->base.length = length;
	m->base.access = access;
	m->rnext = mem->rkeys[bucket(m->base.rkey)];
	mem->rkeys[bucket(m->base.rkey)] = m;
	m->lnext = mem->lkeys[bucket(m->base.lkey)];
	mem->lkeys[bucket(m->base.lkey)] = m;
	ry__sw_pd(pd)->refs++;
	*mr_p = &m->base;
	return 0;
}

void ry__sw_dereg_mr(struct ry__sw_mem *mem, struct ry_mr *mr)
{
	struct ry__sw_mr *m = container_of(mr, struct ry__sw_mr, base);
	struct ry__sw_mr **pp;

	for (pp = &mem->rkeys[bucket(mr->rkey)]; *pp != m; pp = &(*pp)->rnext)
		;
	*pp = m->rnext;
	for (pp = &mem->lkeys[bucket(mr->lkey)]; *pp != m; pp = &(*pp)->lnext)
		;
	*pp = m->lnext;
	ry__sw_pd(mr->pd)->refs--;
	free(m);
}

void ry__sw_mem_cleanup(struct ry__sw_mem *mem)
{
	for (unsigned b = 0; b < RY__SW_KEY_BUCKETS; b++)
		while (mem->rkeys[b])
			ry__sw_dereg_mr(mem, &mem->rkeys[b]->base);
	while (mem->pds) {
		struct ry__sw_pd *pd = mem->pds;

		mem->pds = pd->next;
		free(pd);
	}
}

static struct ry__sw_mr *usable(struct ry__sw_mr *m, struct ry_pd *pd,
				uint64_t va, uint64_t len, unsigned access)
{
	uint64_t start, end;

	if (!m || m->base.pd != pd || (m->base.access & access) != access ||
	    __builtin_add_overflow(va, len, &end))
		return NULL;
	start = (uintptr_t)m->base.addr;
	return va >= start && end <= start + m->base.length ? m : NULL;
}

struct ry__sw_mr *ry__sw_mr_rkey(const struct ry__sw_mem *mem, struct ry_pd *pd,
				 uint32_t rkey, uint64_t va, uint64_t len,
				 unsigned access)
{
	return usable(find_rkey(mem, rkey), pd, va, len, access);
}

struct ry__sw_mr *ry__sw_mr_lkey(const struct ry__sw_mem *mem, struct ry_pd *pd,
				 uint32_t lkey, uint64_t va, uint64_t len,
				 unsigned access)
{
	return usable(find_lkey(mem, lkey), pd, va, len, access);
}

void ry__sw_land(void *dst, const void *src, size_t len)
{
	unsigned char *d = dst;
	const unsigned char *s = src;
	uint64_t v;

	for (; len && ((uintptr_t)d & 7); len--)
		__atomic_store_n(d++, *s++, __ATOMIC_RELAXED);
	for (; len >= 8; len -= 8, d += 8, s += 8) {
		memcpy(&v, s, 8);
		__atomic_store_n((uint64_t *)(void *)d, v, __ATOMIC_RELAXED);
	}
	for (; len; len--)
		__atomic_store_n(d++, *s++, __ATOMIC_RELAXED);
}
