/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Small language helpers shared by the manager and every rail, so that no
 * file defines its own.
 */
#ifndef RAILYARD_UTIL_COMPILER_H
#define RAILYARD_UTIL_COMPILER_H

#include <stddef.h>
#include <stdint.h>

#ifndef container_of
#define container_of(ptr, type, member)                                        \
	((type *)((char *)(ptr)-offsetof(type, member)))
#endif

static inline uint64_t ry__min64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

static inline uint64_t ry__max64(uint64_t a, uint64_t b)
{
	return a > b ? a : b;
}

static inline uint32_t ry__min32(uint32_t a, uint32_t b)
{
	return a < b ? a : b;
}

static inline uint32_t ry__max32(uint32_t a, uint32_t b)
{
	return a > b ? a : b;
}

#endif
