/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Index arithmetic for a ring of power-of-two size with free-running
 * 32-bit head and tail counters: tail - head is the fill level even
 * across wrap, so no slot is sacrificed to tell full from empty.
 */
#ifndef RAILYARD_UTIL_RING_H
#define RAILYARD_UTIL_RING_H

#include <stdbool.h>
#include <stdint.h>

static inline uint32_t ry__ring_used(uint32_t head, uint32_t tail)
{
	return tail - head;
}

static inline bool ry__ring_empty(uint32_t head, uint32_t tail)
{
	return head == tail;
}

static inline bool ry__ring_full(uint32_t head, uint32_t tail, uint32_t size)
{
	return tail - head >= size;
}

/* The slot of counter value i; size must be a power of two. */
static inline uint32_t ry__ring_slot(uint32_t i, uint32_t size)
{
	return i & (size - 1);
}

#endif
