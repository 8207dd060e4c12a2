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

/*
 * A kernel socket's receive straight into a registered region (the tcp
 * rail) is the rail's DMA, as an HCA's is: a replayed fragment and its
 * original can land there at once from two rails' threads, the same
 * bytes, and ThreadSanitizer sees no HCA's writes either.  Between
 * ry__dma_begin() and ry__dma_end() this thread's memory accesses are
 * hidden from it; only around that one call.  (The soft rail copies with
 * atomic stores instead, rails/sw_mr.h: TSan still sees those.)
 */
#if defined(__SANITIZE_THREAD__)
#define RY__TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define RY__TSAN 1
#endif
#endif
#ifdef RY__TSAN
void AnnotateIgnoreWritesBegin(const char *file, int line);
void AnnotateIgnoreWritesEnd(const char *file, int line);
#define ry__dma_begin() AnnotateIgnoreWritesBegin(__FILE__, __LINE__)
#define ry__dma_end() AnnotateIgnoreWritesEnd(__FILE__, __LINE__)
#else
#define ry__dma_begin() ((void)0)
#define ry__dma_end() ((void)0)
#endif

#endif
