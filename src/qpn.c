// SPDX-License-Identifier: BSD-2-Clause
/*
 * A rail's connections by QP number (lr_qpn_hash), for every receive
 * completion: a table of 2^lr_qpn_bits buckets, doubled while there are
 * more connections than buckets, up to RY__QPN_HASH_MAX.
 */
#include <errno.h>
#include <stdlib.h>

#include "src/conn.h"
#include "src/lrail.h"
#include "src/tunables.h"
#include "src/util/log.h"

static unsigned qpn_hash(const struct ry__lrail *lr, uint32_t qpn)
{
	return (qpn * 2654435761u) >> (32 - lr->lr_qpn_bits);
}

/* Twice the buckets (the first table when there is none); when memory is
 * short the chains only grow longer. */
static int qpn_grow(struct ry__lrail *lr)
{
	struct ry__conn **old = lr->lr_qpn_hash;
	size_t nold = old ? (size_t)1 << lr->lr_qpn_bits : 0;
	unsigned bits = old ? lr->lr_qpn_bits + 1 : 6;
	struct ry__conn **t = calloc((size_t)1 << bits, sizeof(*t));

	_Static_assert(RY__QPN_HASH_MIN == 1 << 6, "qpn_grow starts at 6 bits");
	if (!t)
		return -ENOMEM;
	lr->lr_qpn_hash = t;
	lr->lr_qpn_bits = bits;
	for (size_t i = 0; i < nold; i++) {
		struct ry__conn *c, *next;

		for (c = old[i]; c; c = next) {
			struct ry__conn **b =
			    &t[qpn_hash(lr, c->cn_qp->qp_num)];

			next = c->cn_hnext;
			c->cn_hnext = *b;
			*b = c;
		}
	}
	free(old);
	return 0;
}

int ry__conn_hash_add(struct ry__conn *c)
{
	struct ry__lrail *lr = c->cn_lrail;
	struct ry__conn **b;

	if (!lr->lr_qpn_hash && qpn_grow(lr))
		return -ENOMEM;
	if (lr->lr_qpn_n >= 1u << lr->lr_qpn_bits &&
	    (1u << lr->lr_qpn_bits) < RY__QPN_HASH_MAX)
		qpn_grow(lr);
	b = &lr->lr_qpn_hash[qpn_hash(lr, c->cn_qp->qp_num)];
	c->cn_hnext = *b;
	*b = c;
	lr->lr_qpn_n++;
	return 0;
}

void ry__conn_hash_del(struct ry__conn *c)
{
	struct ry__lrail *lr = c->cn_lrail;
	struct ry__conn **pp;

	if (!lr->lr_qpn_hash)
		return;
	for (pp = &lr->lr_qpn_hash[qpn_hash(lr, c->cn_qp->qp_num)]; *pp;
	     pp = &(*pp)->cn_hnext)
		if (*pp == c) {
			*pp = c->cn_hnext;
			lr->lr_qpn_n--;
			break;
		}
	c->cn_hnext = NULL;
}

struct ry__conn *ry__conn_by_qpn(struct ry__lrail *lr, uint32_t qpn)
{
	struct ry__conn *c;

	if (!lr->lr_qpn_hash)
		return NULL;
	c = lr->lr_qpn_hash[qpn_hash(lr, qpn)];
	while (c && c->cn_qp->qp_num != qpn)
		c = c->cn_hnext;
	return c;
}
