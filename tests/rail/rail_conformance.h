/* SPDX-License-Identifier: BSD-2-Clause */
/* The rail contract suite: provider-independent cases over rails/rail.h. */
#ifndef RY_TESTS_RAIL_CONFORMANCE_H
#define RY_TESTS_RAIL_CONFORMANCE_H

#include <check.h>

#include "rail_fixture.h"

/* Add the contract cases to s; they use ry_test_provider. */
void rail_conformance_add(Suite *s);

/* Shared by the soft suites: one WR from rail 0 to rail 1, data checked. */
void xfer_check(struct ry_test_pair *p, enum ry_wr_opcode op, size_t len,
		unsigned seed);

#endif
