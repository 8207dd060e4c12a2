/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Protection domains and memory regions of the rails that move bytes in
 * software (soft, tcp).  Keys are random 32-bit values from getrandom(),
 * never 0 (a zeroed descriptor must not match), unique within the rail,
 * hashed by key.  Every inbound WRITE or READ and every local SGE goes
 * through one check (key, PD, access, bounds, overflow) before a byte is
 * touched; deregistering unhashes the region at once, so the next packet
 * naming it fails.
 */
#ifndef RAILYARD_SW_MR_H
#define RAILYARD_SW_MR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "rails/rail.h"
#include "src/util/compiler.h"

#define RY__SW_KEY_BUCKETS 1024

struct ry__sw_pd {
	struct ry_pd base;
	struct ry__sw_pd *next; /* the rail's list, freed at close */
	unsigned refs;		/* MRs and QPs */
};

struct ry__sw_mr {
	struct ry_mr base;
	struct ry__sw_mr *rnext; /* rkey hash chain */
	struct ry__sw_mr *lnext; /* lkey hash chain */
};

/* A rail's PDs and regions. */
struct ry__sw_mem {
	struct ry__sw_mr *rkeys[RY__SW_KEY_BUCKETS];
	struct ry__sw_mr *lkeys[RY__SW_KEY_BUCKETS];
	struct ry__sw_pd *pds;
};

static inline struct ry__sw_pd *ry__sw_pd(struct ry_pd *pd)
{
	return container_of(pd, struct ry__sw_pd, base);
}

int ry__sw_alloc_pd(struct ry__sw_mem *mem, struct ry_rail *rail,
		    struct ry_pd **pd_p);
/* -EBUSY while a region or QP holds pd */
int ry__sw_dealloc_pd(struct ry__sw_mem *mem, struct ry_pd *pd);
/* -EINVAL: no addr for a length, or a range that wraps */
int ry__sw_reg_mr(struct ry__sw_mem *mem, struct ry_pd *pd, void *addr,
		  size_t length, unsigned access, struct ry_mr **mr_p);
void ry__sw_dereg_mr(struct ry__sw_mem *mem, struct ry_mr *mr);
/* At close, after the QPs: every region, then every PD. */
void ry__sw_mem_cleanup(struct ry__sw_mem *mem);

/* The region of rkey (lkey) if it belongs to pd, allows access and covers
 * [va, va + len); else NULL. */
struct ry__sw_mr *ry__sw_mr_rkey(const struct ry__sw_mem *mem, struct ry_pd *pd,
				 uint32_t rkey, uint64_t va, uint64_t len,
				 unsigned access);
struct ry__sw_mr *ry__sw_mr_lkey(const struct ry__sw_mem *mem, struct ry_pd *pd,
				 uint32_t lkey, uint64_t va, uint64_t len,
				 unsigned access);

/*
 * Copies a packet's payload into a region, as an HCA's DMA would land it.
 * A fragment replayed after a failover can land on a surviving rail's
 * thread while the dead rail's thread still lands the original (the fence
 * orders everything after, not these two): the same bytes, from two
 * threads at once.  Relaxed atomic stores make that defined, and cost what
 * memcpy does (both move 4 KiB in ~140 ns here, bound by memory); an
 * application's own unordered access to the region is still a race.
 */
void ry__sw_land(void *dst, const void *src, size_t len);

#endif
