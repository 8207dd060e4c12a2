/* SPDX-License-Identifier: BSD-2-Clause */
/* Soft rails in network namespaces, for the programs that measure the soft
 * rail across a veth (bench_soft_write, soft_cc_transfer). */
#ifndef RAILYARD_TEST_SOFT_NS_H
#define RAILYARD_TEST_SOFT_NS_H

#include <stdint.h>

#include "rails/rail.h"

/* Open a soft rail bound to addr inside the namespace at ns_path (e.g.
 * /var/run/netns/NAME; NULL: this one), then come back: a socket stays in
 * the namespace it was made in.  Exits the program on failure. */
struct ry_rail *ry_test_soft_open_in_ns(const char *name, const char *addr,
					const char *ns_path, uint32_t mtu);

/* CLOCK_MONOTONIC in seconds. */
double ry_test_now_s(void);

#endif
