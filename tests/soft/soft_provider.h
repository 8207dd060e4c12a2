/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef RAILYARD_TEST_SOFT_PROVIDER_H
#define RAILYARD_TEST_SOFT_PROVIDER_H

#include "rail/rail_fixture.h"

/* Rail idx of a loopback pair: 127.0.0.1, kernel-chosen port, MTU 1500. */
void ry__soft_test_config(struct ry_rail_config *cfg, int idx);

extern const struct ry_test_provider ry__soft_test_provider;

/* A connected pair with short timers (2 ms RTO, 6 retries, every access):
 * losses are recovered quickly. */
void ry__soft_test_short_pair(struct ry_test_pair *p);

#endif
