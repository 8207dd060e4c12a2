// SPDX-License-Identifier: BSD-2-Clause
/* The software completion queue of the soft and tcp rails (sw_cq.h). */
#include <errno.h>
#include <stdlib.h>

#include "rails/sw_cq.h"
#include "src/util/ring.h"

static int reserve(struct ry__sw_cq *cq, uint32_t entries)
{
	uint32_t size = cq->size ? cq->size : 64;
	struct ry_wc *ring;

	while (size < entries)
		size *= 2;
	if (size == cq->size)
		return 0;
	ring = calloc(size, sizeof(*ring));
	if (!ring)
		return -ENOMEM;
	for (uint32_t i = 0; cq->head + i != cq->tail; i++)
		ring[i] = cq->ring[ry__ring_slot(cq->head + i, cq->size)];
	cq->tail -= cq->head;
	cq->head = 0;
	free(cq->ring);
	cq->ring = ring;
	cq->size = size;
	return 0;
}

int ry__sw_cq_take(struct ry__sw_cq *cq, uint32_t n, uint32_t srq_size)
{
	int rc = reserve(cq, cq->sends + n + 2 * srq_size);

	if (!rc)
		cq->sends += n;
	return rc;
}

int ry__sw_cq_new(struct ry_rail *rail, struct ry__list *cqs, uint32_t srq_size,
		  struct ry_cq **cq_p)
{
	struct ry__sw_cq *cq = calloc(1, sizeof(*cq));
	int rc;

	if (!cq)
		return -ENOMEM;
	cq->base.rail = rail;
	rc = ry__sw_cq_take(cq, 0, srq_size);
	if (rc) {
		free(cq);
		return rc;
	}
	ry__list_add_tail(cqs, &cq->link);
	*cq_p = &cq->base;
	return 0;
}

int ry__sw_cq_push(struct ry__sw_cq *cq, const struct ry_wc *wc)
{
	if (!cq->size || ry__ring_full(cq->head, cq->tail, cq->size))
		return -ENOSPC;
	cq->ring[ry__ring_slot(cq->tail++, cq->size)] = *wc;
	return 0;
}

int ry__sw_cq_poll(struct ry__sw_cq *cq, struct ry_wc *wc, int n)
{
	int i = 0;

	while (i < n && !ry__sw_cq_empty(cq)) {
		wc[i] = cq->ring[ry__ring_slot(cq->head++, cq->size)];
		if (wc[i].opcode != RY_WC_RECV &&
		    wc[i].opcode != RY_WC_RECV_RDMA_IMM)
			cq->sends--;
		i++;
	}
	return i;
}

void ry__sw_cq_drop(struct ry__sw_cq *cq)
{
	free(cq->ring);
	cq->ring = NULL;
	cq->size = cq->head = cq->tail = 0;
}
