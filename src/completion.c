// SPDX-License-Identifier: BSD-2-Clause
/*
 * Completions: a rail's CQs polled under the cold lock, and the completion
 * of a work request, whose success path is here (fragments done, messages
 * sent, probes answered) and whose error path is replay's (ry__wr_failed).
 *
 * The lock order and ownership rules are in src/manager.h (LOCKING).
 */
#include <stdlib.h>
#include <string.h>

#include "src/conn.h"
#include "src/control.h"
#include "src/lrail.h"
#include "src/manager.h"
#include "src/msg.h"
#include "src/op.h"
#include "src/peer.h"
#include "src/pool.h"
#include "src/progress.h"
#include "src/tunables.h"

/* The cold lock held: what lr's CQ for context k (or its own) holds. */
static void poll_cq(struct ry__lrail *lr, unsigned k, uint64_t now)
{
	struct ry_manager *m = lr->lr_mgr;
	struct ry_cq *cq = lr->lr_cq[k];
	struct ry_wc wc[64];
	int n, i, rounds = 0;

	do {
		pthread_mutex_lock(&lr->lr_lock);
		n = cq ? ry__rail_cq_poll(cq, wc, 64)
		       : ry__rail_poll_cq(lr->lr_rail, wc, 64);
		pthread_mutex_unlock(&lr->lr_lock);
		for (i = 0; i < n; i++) {
			if (wc[i].opcode == RY_WC_RECV ||
			    wc[i].opcode == RY_WC_RECV_RDMA_IMM)
				ry__on_recv(lr, &wc[i], now);
			else
				ry__wr_complete(
				    m, (struct ry__wr *)(uintptr_t)wc[i].wr_id,
				    &wc[i], now);
		}
	} while (n == 64 && ++rounds < 64);
}

void ry__poll_rail(struct ry__lrail *lr, uint64_t now)
{
	struct ry_manager *m = lr->lr_mgr;
	bool was = lr->lr_polling;

	lr->lr_polling = true;
	poll_cq(lr, 0, now);
	for (unsigned k = 1; k < m->m_nctx && lr->lr_cq[k]; k++)
		poll_cq(lr, k, now);
	lr->lr_polling = was;
}

static void wr_succeeded(struct ry__wr *w, uint64_t now)
{
	struct ry__conn *c = w->wr_conn;
	struct ry_peer *p = c->cn_peer;
	struct ry__op *op = w->wr_op;

	c->cn_last_ok_ns = now;
	switch (w->wr_kind) {
	case WRK_FRAG:
		c->cn_cnt.bytes += w->wr_bytes;
		c->cn_cnt.fragments += w->wr_n;
		ry__conn_drained(c, w->wr_bytes, now);
		if (p->pr_resume_from_ns &&
		    w->wr_post_ns >= p->pr_resume_from_ns &&
		    c->cn_state == CONN_ACTIVE) {
			struct ry_counters *rc = &p->pr_resume_conn->cn_cnt;
			uint64_t d = ry__since(now, p->pr_resume_from_ns);

			rc->resume_count++;
			rc->resume_ns_total += d;
			ry__lat_add(
			    &p->pr_resume_conn->cn_lrail->lr_fo[RY__FO_RESUME],
			    ry__fo_le_ns, d);
			if (d > rc->resume_ns_max)
				rc->resume_ns_max = d;
			p->pr_resume_from_ns = 0;
		}
		if (w->wr_replay)
			ry__conn_resumed(w, now);
		ry__op_frags_done(op, w->wr_n);
		break;
	case WRK_MSG:
		c->cn_cnt.messages++;
		c->cn_cnt.bytes += w->wr_bytes;
		if (op->op_replayed)
			ry__conn_resumed(w, now);
		ry__op_msg_done(op);
		break;
	case WRK_HEARTBEAT:
		c->cn_hb_out = false;
		break;
	case WRK_PROBE:
		ry__conn_probed(c, now);
		break;
	case WRK_PMTU:
		ry__conn_probe_done(w, now);
		break;
	}
}

void ry__wr_complete(struct ry_manager *m, struct ry__wr *w,
		     const struct ry_wc *wc, uint64_t now)
{
	struct ry__conn *c = w->wr_conn;
	struct ry_peer *p = c->cn_peer;
	struct ry__op *op = w->wr_op;

	ry__list_del(&w->wr_link);
	c->cn_out_wrs--;
	c->cn_out_bytes -= w->wr_bytes;
	if (op)
		op->op_posted--;

	if (wc->status == RY_WC_SUCCESS)
		wr_succeeded(w, now);
	else
		ry__wr_failed(w, wc);
	ry__pool_put(&p->pr_ctx->cx_wr_pool, w);
	if (c->cn_state == CONN_DRAINING)
		ry__conn_drained_check(c, now);
	ry__peer_dirty(p);
}
