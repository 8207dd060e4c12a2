/* SPDX-License-Identifier: BSD-2-Clause */
/* mr.c, rcache.c: registered memory and descriptors. */
#ifndef RAILYARD_REGION_H
#define RAILYARD_REGION_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <railyard/railyard.h>

#include "rails/rail.h"
#include "src/util/list.h"

struct ry__lrail;

struct ry_region {
	struct ry_manager *rg_mgr;
	void *rg_addr;
	size_t rg_len;
	unsigned rg_access;   /* enum ry_mr_access */
	atomic_uint rg_users; /* ops in flight using it (any context) */
	struct ry_mr *rg_mr[RY_MAX_RAILS];
	/* 0: each rail's MR covers the region; else rail i's covers only
	 * [rg_addr + i * rg_slice, + rg_slice) (ry__region_reg_slices) */
	size_t rg_slice;
	struct ry_region *rg_next, *rg_prev;
	/* registration cache (rcache.c); rg_cached false: not the cache's */
	bool rg_cached;
	bool rg_stale;		    /* invalidated while in use: no hits */
	unsigned rg_refs;	    /* ry_mr_cache_get()s not yet put */
	struct ry_region *rg_hnext; /* rc_hash bucket */
	struct ry__list rg_lru;	    /* rc_lru, most recent last */
};

/* An unpacked descriptor. */
struct ry__desc {
	uint64_t d_node;
	uint64_t d_addr;
	uint64_t d_len;
	unsigned d_access;
	uint32_t d_mask; /* which of the owner's rails have an rkey */
	uint32_t d_rkey[RY_MAX_RAILS];
	uint32_t d_gen[RY_MAX_RAILS]; /* of the rail the rkey is on */
};

int ry__desc_unpack(const void *buf, size_t len, struct ry__desc *d);
int ry__region_reg(struct ry_manager *m, void *addr, size_t len,
		   unsigned access, struct ry_region **rg_p);
/* A region of RY_MAX_RAILS slices of slice bytes from addr: rail i's MR
 * covers slice i alone, so its rkey opens nothing of another rail's. */
int ry__region_reg_slices(struct ry_manager *m, void *addr, size_t slice,
			  unsigned access, struct ry_region **rg_p);
void ry__region_dereg(struct ry_region *rg);
int ry__region_reg_rail(struct ry_region *rg, struct ry__lrail *lr);
void ry__region_dereg_rail(struct ry_region *rg, struct ry__lrail *lr);

#endif /* RAILYARD_REGION_H */
