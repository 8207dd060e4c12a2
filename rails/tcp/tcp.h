/* SPDX-License-Identifier: BSD-2-Clause */
/* The tcp rail: reliable-connected RDMA semantics over kernel TCP. */
#ifndef RAILYARD_TCP_H
#define RAILYARD_TCP_H

#include "rails/rail.h"

extern const struct ry_rail_ops ry__tcp_ops;

#endif
