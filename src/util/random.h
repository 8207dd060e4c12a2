/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Randomness from getrandom(): QP numbers, PSNs, keys, cookies and
 * incarnation ids must not repeat across restarts, so a seeded PRNG will
 * not do.
 */
#ifndef RAILYARD_UTIL_RANDOM_H
#define RAILYARD_UTIL_RANDOM_H

#include <stddef.h>
#include <stdint.h>

/* Fill buf; 0, or -errno (logged) if the kernel has no entropy to give. */
int ry__rand_bytes(void *buf, size_t len);

/*
 * A random 64-bit value that never fails: where a weak value is only
 * worse jitter, not a correctness problem, the clock stands in.
 */
uint64_t ry__rand64(void);

#endif
