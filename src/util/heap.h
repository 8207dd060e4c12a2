/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * An intrusive binary min-heap of deadlines: embed a struct ry__heap_node
 * in the element, get back to it with container_of.  Each node knows its
 * slot, so moving or removing it is O(log n) without a search.  Used for
 * the timers that must not cost a walk over every object per tick: the
 * soft rail's QP timers (soft_rail.c) and the manager's connection timers
 * (timers.c).  Zeroed memory is a node that is not in any heap and an
 * empty heap.
 */
#ifndef RAILYARD_UTIL_HEAP_H
#define RAILYARD_UTIL_HEAP_H

#include <stdbool.h>
#include <stdint.h>

struct ry__heap_node {
	uint64_t at;  /* the key: when it is due */
	uint32_t idx; /* 1 + its slot; 0: not in the heap */
};

struct ry__heap {
	struct ry__heap_node **v;
	uint32_t n, cap;
};

/* Put x in h (or move it) to be due at `at`; 0 or -ENOMEM (x unchanged). */
int ry__heap_set(struct ry__heap *h, struct ry__heap_node *x, uint64_t at);
/* Take x out of h; a node not in it is left alone. */
void ry__heap_del(struct ry__heap *h, struct ry__heap_node *x);
void ry__heap_free(struct ry__heap *h);

static inline bool ry__heap_linked(const struct ry__heap_node *x)
{
	return x->idx != 0;
}

/* The earliest node, or NULL. */
static inline struct ry__heap_node *ry__heap_top(const struct ry__heap *h)
{
	return h->n ? h->v[0] : (struct ry__heap_node *)0;
}

#endif
