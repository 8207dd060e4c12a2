/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * An intrusive circular doubly linked list, shaped like the Linux kernel's
 * list.h: embed a struct ry__list in the element, keep one as the head,
 * get back to the element with ry__list_entry().  A head must be
 * initialised (ry__list_init) before use; zeroed memory is not an empty
 * list.
 */
#ifndef RAILYARD_UTIL_LIST_H
#define RAILYARD_UTIL_LIST_H

#include <stdbool.h>

#include "src/util/compiler.h"

struct ry__list {
	struct ry__list *next, *prev;
};

static inline void ry__list_init(struct ry__list *h)
{
	h->next = h->prev = h;
}

static inline bool ry__list_empty(const struct ry__list *h)
{
	return h->next == h;
}

static inline void ry__list_insert(struct ry__list *n, struct ry__list *prev,
				   struct ry__list *next)
{
	n->next = next;
	n->prev = prev;
	prev->next = n;
	next->prev = n;
}

/* At the front: a stack, or "first to be looked at". */
static inline void ry__list_add(struct ry__list *h, struct ry__list *n)
{
	ry__list_insert(n, h, h->next);
}

static inline void ry__list_add_tail(struct ry__list *h, struct ry__list *n)
{
	ry__list_insert(n, h->prev, h);
}

/*
 * The node is left pointing at itself, so deleting it twice, or asking
 * whether it is linked (ry__list_empty on the node), is harmless.
 */
static inline void ry__list_del(struct ry__list *n)
{
	n->prev->next = n->next;
	n->next->prev = n->prev;
	n->next = n->prev = n;
}

#define ry__list_entry(ptr, type, member) container_of(ptr, type, member)

#define ry__list_first_entry(h, type, member)                                  \
	ry__list_entry((h)->next, type, member)

#define ry__list_for_each(pos, h)                                              \
	for ((pos) = (h)->next; (pos) != (h); (pos) = (pos)->next)

/* pos may be deleted (and freed) in the body; tmp holds the next node. */
#define ry__list_for_each_safe(pos, tmp, h)                                    \
	for ((pos) = (h)->next, (tmp) = (pos)->next; (pos) != (h);             \
	     (pos) = (tmp), (tmp) = (pos)->next)

#endif
