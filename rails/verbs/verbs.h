/* SPDX-License-Identifier: BSD-2-Clause */
/* The verbs rail: an HCA port driven through libibverbs and libibumad. */
#ifndef RAILYARD_VERBS_H
#define RAILYARD_VERBS_H

#include "rails/rail.h"

extern const struct ry_rail_ops ry__verbs_ops;

#endif
