/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef RAILYARD_TEST_TCP_PROVIDER_H
#define RAILYARD_TEST_TCP_PROVIDER_H

#include "rail/rail_fixture.h"

/* Rail idx of a loopback pair: 127.0.0.1, kernel-chosen port. */
void ry__tcp_test_config(struct ry_rail_config *cfg, int idx);

extern const struct ry_test_provider ry__tcp_test_provider;

#endif
