// SPDX-License-Identifier: BSD-2-Clause
/* The min-heap of deadlines (heap.h). */
#include "src/util/heap.h"

#include <errno.h>
#include <stdlib.h>

static void put(struct ry__heap *h, uint32_t i, struct ry__heap_node *x)
{
	h->v[i] = x;
	x->idx = i + 1;
}

/* x belongs at slot i or somewhere from there: sift it up or down. */
static void fix(struct ry__heap *h, uint32_t i, struct ry__heap_node *x)
{
	while (i && x->at < h->v[(i - 1) / 2]->at) {
		put(h, i, h->v[(i - 1) / 2]);
		i = (i - 1) / 2;
	}
	for (;;) {
		uint32_t l = 2 * i + 1, m = l;

		if (l >= h->n)
			break;
		if (l + 1 < h->n && h->v[l + 1]->at < h->v[l]->at)
			m = l + 1;
		if (h->v[m]->at >= x->at)
			break;
		put(h, i, h->v[m]);
		i = m;
	}
	put(h, i, x);
}

int ry__heap_set(struct ry__heap *h, struct ry__heap_node *x, uint64_t at)
{
	if (x->idx) {
		if (x->at != at) {
			x->at = at;
			fix(h, x->idx - 1, x);
		}
		return 0;
	}
	if (h->n == h->cap) {
		uint32_t cap = h->cap ? 2 * h->cap : 64;
		struct ry__heap_node **v = realloc(h->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		h->v = v;
		h->cap = cap;
	}
	x->at = at;
	fix(h, h->n++, x);
	return 0;
}

void ry__heap_del(struct ry__heap *h, struct ry__heap_node *x)
{
	uint32_t i = x->idx - 1;
	struct ry__heap_node *last;

	if (!x->idx)
		return;
	x->idx = 0;
	last = h->v[--h->n];
	if (last != x)
		fix(h, i, last);
}

void ry__heap_free(struct ry__heap *h)
{
	free(h->v);
	h->v = NULL;
	h->n = h->cap = 0;
}
