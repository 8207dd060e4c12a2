// SPDX-License-Identifier: BSD-2-Clause
#include "src/util/hidx.h"

#include <errno.h>
#include <stdlib.h>

#define HIDX_MIN_BUCKETS 64u

static void link_node(struct ry__hnode **b, size_t mask, struct ry__hnode *x)
{
	struct ry__hnode **head = &b[x->key & mask];

	x->next = *head;
	if (x->next)
		x->next->pprev = &x->next;
	x->pprev = head;
	*head = x;
}

int ry__hidx_init(struct ry__hidx *h)
{
	h->b = calloc(HIDX_MIN_BUCKETS, sizeof(*h->b));
	h->mask = HIDX_MIN_BUCKETS - 1;
	h->n = 0;
	return h->b ? 0 : -ENOMEM;
}

/* Double the buckets; on ENOMEM keep the old ones (longer chains). */
static void grow(struct ry__hidx *h)
{
	size_t nb = 2 * (h->mask + 1), i;
	struct ry__hnode **b = calloc(nb, sizeof(*b)), *x, *next;

	if (!b)
		return;
	for (i = 0; i <= h->mask; i++)
		for (x = h->b[i]; x; x = next) {
			next = x->next;
			link_node(b, nb - 1, x);
		}
	free(h->b);
	h->b = b;
	h->mask = nb - 1;
}

void ry__hidx_add(struct ry__hidx *h, struct ry__hnode *x, uint64_t key)
{
	ry__hidx_del(h, x);
	if (h->n > h->mask)
		grow(h);
	x->key = key;
	link_node(h->b, h->mask, x);
	h->n++;
}

void ry__hidx_del(struct ry__hidx *h, struct ry__hnode *x)
{
	if (!x->pprev)
		return;
	*x->pprev = x->next;
	if (x->next)
		x->next->pprev = x->pprev;
	x->next = NULL;
	x->pprev = NULL;
	h->n--;
}

void ry__hidx_free(struct ry__hidx *h)
{
	free(h->b);
	h->b = NULL;
	h->mask = 0;
	h->n = 0;
}
