/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The one clock: CLOCK_MONOTONIC in nanoseconds.  Timeouts, backoff,
 * event stamps and log lines all read it, so their times compare.
 */
#ifndef RAILYARD_UTIL_CLOCK_H
#define RAILYARD_UTIL_CLOCK_H

#include <stdint.h>

uint64_t ry__now_ns(void);

#endif
