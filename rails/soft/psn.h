/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * 24-bit packet sequence numbers.  Every comparison of two PSNs goes through
 * ry__soft_psn_cmp(): PSNs wrap at 2^24, so "a before b" means b - a taken
 * modulo 2^24 lies in the lower half of the space.
 */
#ifndef RAILYARD_SOFT_PSN_H
#define RAILYARD_SOFT_PSN_H

#include <stdint.h>

#define RY__SOFT_PSN_MASK 0xffffffu

static inline uint32_t ry__soft_psn_add(uint32_t psn, int32_t n)
{
	return (psn + (uint32_t)n) & RY__SOFT_PSN_MASK;
}

/*
 * Signed distance a - b in (-2^23, 2^23]: negative when a comes before b,
 * zero when equal, positive when a comes after b.
 */
static inline int32_t ry__soft_psn_cmp(uint32_t a, uint32_t b)
{
	/* Shift the 24-bit difference to the top and sign-extend it back. */
	return (int32_t)(((a - b) & RY__SOFT_PSN_MASK) << 8) >> 8;
}

#endif
