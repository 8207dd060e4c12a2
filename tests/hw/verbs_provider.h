/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The verbs rail as a test provider: two RDMA devices that reach each
 * other (rxe_a0 and rxe_b0 on a veth pair in the QEMU guest, or the two
 * HCA ports RY_HW_DEV_A and RY_HW_DEV_B name), port 1.  Used by the
 * contract suite (test_verbs_conformance) and the verbs-only cases
 * (test_verbs_rail).
 */
#ifndef RY_TESTS_VERBS_PROVIDER_H
#define RY_TESTS_VERBS_PROVIDER_H

#include <stdbool.h>

#include "rail/rail_fixture.h"

/* Set ry_test_provider to the verbs rail; NULL when the suite can run
 * here, else a plain reason why not. */
const char *verbs_provider_init(void);

/* Pull (plugged false) or put back rail idx's cable: its netdev
 * (RY_HW_NETDEV_A/B) down or up; -EOPNOTSUPP when none is named. */
int verbs_cable(int idx, bool plugged);

/* Drop everything rail idx sends, the link staying up (netem loss 100%
 * on its netdev): a silent failure; -EOPNOTSUPP when none is named. */
int verbs_blackhole(int idx, bool on);

/* main() of both verbs executables: 77 with the reason when there is no
 * device, else suite name with the cases add() adds; RY_HW_DEBUG=1 turns
 * on debug logs. */
int verbs_run_suite(const char *name, void (*add)(Suite *s));

#endif
