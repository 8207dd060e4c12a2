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

static inline enum ry_wc_opcode ry__sw_wc_opcode(enum ry_wr_opcode op)
{
	switch (op) {
	case RY_WR_RDMA_WRITE:
	case RY_WR_RDMA_WRITE_IMM:
		return RY_WC_RDMA_WRITE;
	case RY_WR_RDMA_READ:
		return RY_WC_RDMA_READ;
	default:
		return RY_WC_SEND;
	}
}

/* The completion of the send WR wr of QP qp_num, with status. */
static inline struct ry_wc ry__sw_send_wc(const struct ry_send_wr *wr,
					  enum ry_wc_status status,
					  uint32_t qp_num)
{
	struct ry_wc wc = {
	    .wr_id = wr->wr_id,
	    .status = status,
	    .opcode = ry__sw_wc_opcode(wr->opcode),
	    .byte_len = wr->sge.length,
	    .qp_num = qp_num,
	};

	return wc;
}

/* Room for n more send WRs besides those posted, and for twice srq_size
 * receives: 0 or -ENOMEM (nothing reserved). */
int ry__sw_cq_take(struct ry__sw_cq *cq, uint32_t n, uint32_t srq_size);

/* 0, or -ENOSPC when the ring is full and wc is not kept (the caller
 * logs: a reservation was missed). */
/* A CQ of create_cq, on the rail's list cqs, with room for an SRQ of
 * srq_size */
int ry__sw_cq_new(struct ry_rail *rail, struct ry__list *cqs, uint32_t srq_size,
		  struct ry_cq **cq_p);

int ry__sw_cq_push(struct ry__sw_cq *cq, const struct ry_wc *wc);

/* Up to n completions into wc, oldest first; a send WR's room is free
 * once its completion is out.  Returns how many. */
int ry__sw_cq_poll(struct ry__sw_cq *cq, struct ry_wc *wc, int n);

/* Drops the ring and what it holds; the CQ may be reserved again. */
void ry__sw_cq_drop(struct ry__sw_cq *cq);

#endif
