/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * An intrusive hash index: embed a struct ry__hnode in the element, file
 * it under a 64-bit key (a seeded hash of what it is looked up by), walk
 * the nodes filed under a key, get back to the element with container_of.
 * Several nodes may share a key (two names hashing alike, or one name
 * held by two records): the caller compares what the key stands for.
 * Unlinking is O(1) (each node knows the pointer that points at it); the
 * bucket array doubles when it holds more nodes than buckets, and if that
 * allocation fails the index stays correct, only its chains grow.
 * Zeroed memory is a node that is in no index; an index is made by
 * ry__hidx_init, so that adding to it never fails.
 *
 * Why: the manager looks peers up by name, control address and
 * incarnation for every HELLO and every stray packet; with thousands of
 * client nodes a walk over every record made each of those O(N)
 * (issue 13).
 */
#ifndef RAILYARD_UTIL_HIDX_H
#define RAILYARD_UTIL_HIDX_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ry__hnode {
	struct ry__hnode *next, **pprev; /* pprev NULL: not in an index */
	uint64_t key;
};

struct ry__hidx {
	struct ry__hnode **b;
	size_t mask; /* buckets - 1 */
	size_t n;
};

/* 0, or -ENOMEM. */
int ry__hidx_init(struct ry__hidx *h);
/* File x under key (moving it if it is filed already). */
void ry__hidx_add(struct ry__hidx *h, struct ry__hnode *x, uint64_t key);
/* Take x out of its index; a node in none is left alone. */
void ry__hidx_del(struct ry__hidx *h, struct ry__hnode *x);
void ry__hidx_free(struct ry__hidx *h);

static inline bool ry__hidx_linked(const struct ry__hnode *x)
{
	return x->pprev != NULL;
}

/* The first node filed under key, or NULL; then ry__hidx_next. */
static inline struct ry__hnode *ry__hidx_first(const struct ry__hidx *h,
					       uint64_t key)
{
	struct ry__hnode *x = h->b[key & h->mask];

	while (x && x->key != key)
		x = x->next;
	return x;
}

static inline struct ry__hnode *ry__hidx_next(const struct ry__hnode *x)
{
	uint64_t key = x->key;

	for (x = x->next; x && x->key != key; x = x->next)
		;
	return (struct ry__hnode *)x;
}

#define ry__hidx_for_each(pos, h, key)                                         \
	for ((pos) = ry__hidx_first((h), (key)); (pos);                        \
	     (pos) = ry__hidx_next(pos))

#endif
