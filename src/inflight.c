// SPDX-License-Identifier: BSD-2-Clause
/*
 * Fragment bookkeeping storage.  Operations, posted work requests and
 * replay ranges come from pools that grow in bounded chunks (at most
 * RY__CHUNK_BYTES each) and are never one huge contiguous array; freed
 * objects go on a free list and are reused LIFO, which keeps the hot ones
 * in cache.  Chunks are released only when the manager is destroyed.
 */
#include <stdlib.h>

#include "src/pool.h"
#include "src/util/log.h"

#define RY__CHUNK_BYTES (64u * 1024)

struct ry__pool_chunk {
	struct ry__pool_chunk *pc_next;
	unsigned char pc_objs[] __attribute__((aligned(16)));
};

void ry__pool_init(struct ry__pool *pl, size_t size)
{
	pl->pl_size = (size + 15) & ~(size_t)15;
	pl->pl_per_chunk =
	    (RY__CHUNK_BYTES - sizeof(struct ry__pool_chunk)) / pl->pl_size;
	if (!pl->pl_per_chunk)
		pl->pl_per_chunk = 1;
	pl->pl_free = NULL;
	pl->pl_chunks = NULL;
	pl->pl_in_use = 0;
}

bool ry__pool_grow(struct ry__pool *pl)
{
	struct ry__pool_chunk *ch;
	unsigned i;

	ch = malloc(sizeof(*ch) + pl->pl_size * pl->pl_per_chunk);
	if (!ch)
		return false;
	ch->pc_next = pl->pl_chunks;
	pl->pl_chunks = ch;
	for (i = pl->pl_per_chunk; i-- > 0;) {
		void *o = ch->pc_objs + i * pl->pl_size;

		*(void **)o = pl->pl_free;
		pl->pl_free = o;
	}
	return true;
}

void ry__pool_fini(struct ry__pool *pl)
{
	struct ry__pool_chunk *ch;

	if (pl->pl_in_use)
		RY_ERR("mgr", "pool of %zu-byte objects: %lu still in use",
		       pl->pl_size, pl->pl_in_use);
	while ((ch = pl->pl_chunks)) {
		pl->pl_chunks = ch->pc_next;
		free(ch);
	}
	pl->pl_free = NULL;
}
