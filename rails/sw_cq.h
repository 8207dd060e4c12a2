/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The completion queue of the rails that complete in software (soft, tcp):
 * a ring of ry_wc that grows with the WRs posted to its QPs, so that a
 * push never finds it full.  Room is reserved when a send WR is posted
 * (ry__sw_cq_take) and given back when its completion is polled; every
 * receive the SRQ can hold is reserved twice over (any of them may
 * complete on this CQ).  Whether the rail's fd is raised is the rail's.
 */
#ifndef RAILYARD_SW_CQ_H
#define RAILYARD_SW_CQ_H

#include <stdbool.h>
#include <stdint.h>

#include "rails/rail.h"
#include "src/util/list.h"

struct ry__sw_cq {
	struct ry_cq base;
	struct ry__list link; /* the rail's CQs of create_cq (not its own) */
	struct ry_wc *ring;
	uint32_t size, head, tail;
	/* send WRs posted to its QPs whose completion has not been polled
	 * yet: their reserved room */
	uint32_t sends;
	unsigned n_qps; /* QPs created on it, not destroyed */
};

static inline bool ry__sw_cq_empty(const struct ry__sw_cq *cq)
{
	return cq->head == cq->tail;
}

/* Room for n more send WRs besides those posted, and for twice srq_size
 * receives: 0 or -ENOMEM (nothing reserved). */
int ry__sw_cq_take(struct ry__sw_cq *cq, uint32_t n, uint32_t srq_size);

/* 0, or -ENOSPC when the ring is full and wc is not kept (the caller
 * logs: a reservation was missed). */
int ry__sw_cq_push(struct ry__sw_cq *cq, const struct ry_wc *wc);

/* Up to n completions into wc, oldest first; a send WR's room is free
 * once its completion is out.  Returns how many. */
int ry__sw_cq_poll(struct ry__sw_cq *cq, struct ry_wc *wc, int n);

/* Drops the ring and what it holds; the CQ may be reserved again. */
void ry__sw_cq_drop(struct ry__sw_cq *cq);

#endif
