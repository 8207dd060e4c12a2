/* SPDX-License-Identifier: BSD-2-Clause */
/* The rail contract suite: provider-independent cases over rails/rail.h. */
#ifndef RY_TESTS_RAIL_CONFORMANCE_H
#define RY_TESTS_RAIL_CONFORMANCE_H

#include <check.h>

#include "rail_fixture.h"

/* Add the contract cases to s; they use ry_test_provider. */
void rail_conformance_add(Suite *s);

/* Two rails land the same bytes in one region at once (soft, tcp). */
void rail_same_bytes_add(TCase *tc);

/* Helpers the provider-specific suites share with it. */
#define GUARD 64

/* Registered memory with GUARD bytes either side, to see stray writes. */
struct region {
	uint8_t *buf; /* GUARD | len | GUARD */
	size_t len;
	struct ry_mr *mr;
};

void region_get(struct ry_test_pair *p, int side, struct region *g, size_t len,
		unsigned seed, unsigned access);
void region_put(struct region *g);
/* A WR from l (local) to r (remote, NULL for SENDs), len bytes. */
struct ry_send_wr wr_make(enum ry_wr_opcode op, struct region *l,
			  struct region *r, size_t len, uint64_t id);

/* One WR from rail 0 to rail 1, data and guard bytes checked. */
void xfer_check(struct ry_test_pair *p, enum ry_wr_opcode op, size_t len,
		unsigned seed);

#endif
