/* SPDX-License-Identifier: BSD-2-Clause */
#ifndef RAILYARD_UTIL_CNT_H
#define RAILYARD_UTIL_CNT_H

#include <railyard/railyard.h>

/* dst += src, field by field (the maxima as maxima). */
void ry__cnt_add(struct ry_counters *dst, const struct ry_counters *src);

#endif /* RAILYARD_UTIL_CNT_H */
