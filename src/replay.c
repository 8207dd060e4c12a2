// SPDX-License-Identifier: BSD-2-Clause
/*
 * Replay: what happens to the work of a failed connection.
 *
 * A connection fails on an error completion, a link-down event, silence
 * (heartbeat.c), a failed probe, or a fence request from the peer.  The
 * detecting code only marks it (ry__conn_mark_failed in conn.c, where
 * every state change lives); ry__replay_run() later in the same progress
 * call has its QP moved to ERR (ry__conn_flush), asks the peer to fence
 * its side (fence.c), and lets the flushed completions come back through
 * the CQ.  Each posted WR then completes exactly once: success means its
 * fragments are done (RC: they landed; progress.c), anything else
 * (ry__wr_failed, here) puts them back at the head of the peer's queue for
 * the surviving rails.  RDMA WRITE and READ fragments are idempotent, so
 * replaying one that did land is harmless; messages carry sequence numbers
 * (msg.c).  When the last posted WR has come back the QP is destroyed and
 * the connection waits in BACKOFF to be rebuilt with a new QP.
 */
#include <stdio.h>
#include <string.h>

#include "src/conn.h"
#include "src/lrail.h"
#include "src/manager.h"
#include "src/op.h"
#include "src/peer.h"
#include "src/pool.h"

void ry__replay_run(struct ry_manager *m)
{
	uint64_t now = ry__now_ns();
	struct ry__conn *c;

	while ((c = m->m_failed)) {
		m->m_failed = c->cn_fnext;
		c->cn_fnext = NULL;
		if (c->cn_state != CONN_FAILED)
			continue;
		ry__conn_flush(c);
		ry__fence_request(c);
		ry__conn_drained_check(c, now);
	}
}

static void requeue_frags(struct ry_peer *p, struct ry__wr *w)
{
	struct ry__op *op = w->wr_op;
	struct ry__range *rn;

	if (op->op_status != RY_OK) {
		ry__op_frags_done(op, w->wr_n);
		return;
	}
	rn = ry__pool_get(&p->pr_ctx->cx_range_pool);
	if (!rn) {
		ry__op_fail(op, RY_ELOCAL, "out of memory for replay");
		ry__op_frags_done(op, w->wr_n);
		return;
	}
	rn->rn_op = op;
	rn->rn_first = w->wr_first;
	rn->rn_n = w->wr_n;
	/* back at the head: replayed fragments go before anything new */
	ry__sq_push_head(p->pr_replay_head, p->pr_replay_tail, rn, rn_next);
	op->op_replayed = true;
	if (w->wr_conn->cn_fence_gen > op->op_fence_gen)
		op->op_fence_gen = w->wr_conn->cn_fence_gen;
	w->wr_conn->cn_cnt.replayed_fragments += w->wr_n;
	ry__conn_replayed(w->wr_conn);
}

static enum ry_status op_error(enum ry_wc_status st)
{
	switch (st) {
	case RY_WC_REM_ACCESS:
	case RY_WC_REM_INVALID_REQ:
	case RY_WC_REM_OP:
		return RY_EREMOTE_ACCESS;
	case RY_WC_LOC_PROT:
	case RY_WC_LOC_LEN:
		return RY_ELOCAL;
	default:
		return RY_OK; /* a path problem: replay */
	}
}

/*
 * An error completion: the connection has failed if it had not already,
 * and the WR's fragments or message go back to the peer's queues for the
 * surviving rails, unless the error is the operation's own.
 */
void ry__wr_failed(struct ry__wr *w, const struct ry_wc *wc)
{
	struct ry__conn *c = w->wr_conn;
	struct ry_peer *p = c->cn_peer;
	struct ry__op *op = w->wr_op;
	enum ry_status ost;

	if (c->cn_state == CONN_ACTIVE || c->cn_state == CONN_PROBING)
		ry__conn_mark_failed(c, ry_wc_status_str(wc->status),
				     c->cn_last_ok_ns);
	ost = op_error(wc->status);
	switch (w->wr_kind) {
	case WRK_FRAG:
		if (ost != RY_OK) {
			char why[192];

			snprintf(why, sizeof(why), "peer %s rail %s: %s",
				 p->pr_name, c->cn_lrail->lr_cfg.name,
				 ry_wc_status_str(wc->status));
			ry__op_fail(op, ost, why);
			ry__op_frags_done(op, w->wr_n);
		} else {
			requeue_frags(p, w);
			ry__op_check(op);
		}
		break;
	case WRK_MSG:
		if (op->op_status == RY_OK) {
			ry__msgq_push(p, op, true);
			op->op_replayed = true;
			c->cn_cnt.replayed_fragments++;
			ry__conn_replayed(c);
		}
		ry__op_check(op);
		break;
	case WRK_HEARTBEAT:
		c->cn_hb_out = false;
		break;
	default:
		break;
	}
}
