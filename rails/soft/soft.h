/* SPDX-License-Identifier: BSD-2-Clause */
/* The soft rail: userspace reliable-connected RDMA over UDP. */
#ifndef RAILYARD_SOFT_H
#define RAILYARD_SOFT_H

#include "rails/rail.h"

extern const struct ry_rail_ops ry_soft_ops;

#endif
