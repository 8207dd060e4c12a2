/* SPDX-License-Identifier: BSD-2-Clause */
/* inflight.c: bounded-chunk pools of one object size. */
#ifndef RAILYARD_POOL_H
#define RAILYARD_POOL_H

#include <stdbool.h>
#include <stddef.h>

struct ry__pool_chunk;

struct ry__pool {
	size_t pl_size; /* object size, rounded */
	unsigned pl_per_chunk;
	void *pl_free; /* free objects, linked through their first word */
	struct ry__pool_chunk *pl_chunks;
	unsigned long pl_in_use;
};

void ry__pool_init(struct ry__pool *pl, size_t size);
void ry__pool_fini(struct ry__pool *pl);
/* A new chunk's objects on the free list; false if out of memory. */
bool ry__pool_grow(struct ry__pool *pl);

/* Inline: a WR is taken and given back per fragment (stripe, completion);
 * only growing by a chunk is a call. */
static inline void *ry__pool_get(struct ry__pool *pl)
{
	void *obj = pl->pl_free;

	if (!obj) {
		if (!ry__pool_grow(pl))
			return NULL;
		obj = pl->pl_free;
	}
	pl->pl_free = *(void **)obj;
	pl->pl_in_use++;
	return obj;
}

static inline void ry__pool_put(struct ry__pool *pl, void *obj)
{
	*(void **)obj = pl->pl_free;
	pl->pl_free = obj;
	pl->pl_in_use--;
}

#endif /* RAILYARD_POOL_H */
