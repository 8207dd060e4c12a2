// SPDX-License-Identifier: BSD-2-Clause
/*
 * Protection domains and memory regions of the verbs rail.
 *
 * Every ry_pd of a rail wraps the rail's one ibv_pd: the SRQ needs a PD at
 * open, before the manager allocates any, and a receive buffer registered
 * under another PD than the SRQ's would fail with a protection error.  The
 * wrapper only counts its users, so dealloc with regions or QPs left is
 * refused as the contract says.
 */
#include <errno.h>
#include <stdlib.h>

#include "rails/verbs/verbs_int.h"
#include "src/util/log.h"

int ry__verbs_alloc_pd(struct ry_rail *rail, struct ry_pd **pd_p)
{
	struct ry__verbs_rail *r = vrail(rail);
	struct ry__verbs_pd *p = calloc(1, sizeof(*p));

	if (!p)
		return -ENOMEM;
	p->base.rail = rail;
	ry__list_add(&r->pds, &p->link);
	*pd_p = &p->base;
	return 0;
}

int ry__verbs_dealloc_pd(struct ry_pd *pd)
{
	struct ry__verbs_pd *p = container_of(pd, struct ry__verbs_pd, base);

	if (p->refs)
		return -EBUSY;
	ry__list_del(&p->link);
	free(p);
	return 0;
}

static int ibv_access(unsigned access)
{
	int a = 0;

	/* Verbs refuses REMOTE_WRITE without LOCAL_WRITE; the soft rail has
	 * no such rule, and a region the peer may write is one we may
	 * write, so grant it rather than fail only on this provider. */
	if (access & (RY_ACCESS_LOCAL_WRITE | RY_ACCESS_REMOTE_WRITE))
		a |= IBV_ACCESS_LOCAL_WRITE;
	if (access & RY_ACCESS_REMOTE_WRITE)
		a |= IBV_ACCESS_REMOTE_WRITE;
	if (access & RY_ACCESS_REMOTE_READ)
		a |= IBV_ACCESS_REMOTE_READ;
	return a;
}

int ry__verbs_reg_mr(struct ry_pd *pd, void *addr, size_t length,
		     unsigned access, struct ry_mr **mr_p)
{
	struct ry__verbs_rail *r = pd_vrail(pd);
	struct ry__verbs_pd *p = container_of(pd, struct ry__verbs_pd, base);
	struct ry__verbs_mr *m;
	int rc;

	if (access &
	    ~(unsigned)(RY_ACCESS_LOCAL_WRITE | RY_ACCESS_REMOTE_WRITE |
			RY_ACCESS_REMOTE_READ))
		return -EINVAL;
	/* siw answers a READ of any region of the PD (it checks no
	 * REMOTE_READ): a region meant to be written but not read by the
	 * peer would not be what it says (rail.h: read_unchecked) */
	if (r->iwarp && (access & RY_ACCESS_REMOTE_WRITE) &&
	    !(access & RY_ACCESS_REMOTE_READ)) {
		RY_ERR("verbs",
		       "rail %s: a region the peer may write but not read: "
		       "this iWARP device does not check REMOTE_READ",
		       r->base.name);
		return -EOPNOTSUPP;
	}
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->mr = ibv_reg_mr(r->pd, addr, length, ibv_access(access));
	if (!m->mr && !length && errno == EINVAL) {
		/* siw refuses an empty region.  A WR of 0 bytes carries no
		 * SGE and the peer checks no key for it (verbs; siw too), so
		 * its keys are never looked at: the region needs none of the
		 * device's.  Its keys are 0, which no region of the device
		 * has (iWARP STag 0 is reserved, siw starts at 1). */
		m->base.pd = pd;
		m->base.addr = addr;
		m->base.access = access;
		p->refs++;
		ry__list_add(&r->mrs, &m->link);
		*mr_p = &m->base;
		return 0;
	}
	if (!m->mr) {
		rc = -errno;
		RY_ERR("verbs",
		       "rail %s: ibv_reg_mr(%p, %zu): %m (is RLIMIT_MEMLOCK "
		       "large enough?)",
		       r->base.name, addr, length);
		free(m);
		return rc;
	}
	m->base.pd = pd;
	m->base.addr = addr;
	m->base.length = length;
	m->base.lkey = m->mr->lkey;
	m->base.rkey = m->mr->rkey;
	m->base.access = access;
	p->refs++;
	ry__list_add(&r->mrs, &m->link);
	*mr_p = &m->base;
	return 0;
}

int ry__verbs_dereg_mr(struct ry_mr *mr)
{
	struct ry__verbs_mr *m = container_of(mr, struct ry__verbs_mr, base);
	struct ry__verbs_pd *p =
	    container_of(mr->pd, struct ry__verbs_pd, base);
	int rc;

	rc = m->mr ? ibv_dereg_mr(m->mr) : 0;
	if (rc) {
		/* EBUSY: a memory window is bound; anything else is a bug */
		errno = rc;
		RY_ERR("verbs", "rail %s: ibv_dereg_mr: %m",
		       mr->pd->rail->name);
		return -rc;
	}
	p->refs--;
	ry__list_del(&m->link);
	free(m);
	return 0;
}

/* At close: whatever the manager left registered, and every PD wrapper. */
void ry__verbs_mr_close_all(struct ry__verbs_rail *r)
{
	while (!ry__list_empty(&r->mrs)) {
		struct ry__verbs_mr *m =
		    ry__list_first_entry(&r->mrs, struct ry__verbs_mr, link);

		if (m->mr)
			ibv_dereg_mr(m->mr);
		ry__list_del(&m->link);
		free(m);
	}
	while (!ry__list_empty(&r->pds)) {
		struct ry__verbs_pd *p =
		    ry__list_first_entry(&r->pds, struct ry__verbs_pd, link);

		ry__list_del(&p->link);
		free(p);
	}
}
