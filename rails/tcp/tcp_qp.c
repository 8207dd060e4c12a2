// SPDX-License-Identifier: BSD-2-Clause
/*
 * The tcp rail's QPs: the state machine, post_send, what the requester and
 * the responder decide about each message, completions, flush on ERR.
 *
 * TCP delivers in order and reliably, so the requester has no timers of
 * its own: a WR completes when its ACK (cumulative) or its READ response
 * arrives; a lost connection (reset, EOF, TCP_USER_TIMEOUT) fails the
 * oldest WR with RETRY_EXCEEDED, as an RC QP whose retries ran out.  The
 * only going back is RNR: the responder NAKs a SEND (or WRITE with
 * immediate) it has no receive for and drops every request after it until
 * that PSN comes again; the requester waits min_rnr_timer and sends again
 * from it, rnr_retry times.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#include "rails/tcp/tcp_int.h"
#include "src/util/clock.h"
#include "src/util/log.h"
#include "src/util/random.h"

static uint32_t rand24(void)
{
	uint32_t v;

	do
		v = (uint32_t)ry__rand64() & 0xffffff;
	while (!v);
	return v;
}

static uint64_t rand_cookie(void)
{
	uint64_t v;

	do
		v = ry__rand64();
	while (!v);
	return v;
}

struct ry__tcp_qp *ry__tcp_qp_lookup(struct ry__tcp_rail *r, uint32_t qpn)
{
	struct ry__hnode *h = ry__hidx_first(&r->qpns, qpn);

	return h ? container_of(h, struct ry__tcp_qp, hnode) : NULL;
}

static struct ry__tcp_wqe *wqe(struct ry__tcp_qp *qp, uint32_t i)
{
	return &qp->sq[i & (qp->sq_size - 1)];
}

static void complete(struct ry__tcp_qp *qp, struct ry__tcp_wqe *w,
		     enum ry_wc_status status)
{
	struct ry_wc wc = ry__sw_send_wc(&w->wr, status, qp->base.qp_num);

	ry__tcp_cq_push(qp, &wc);
}

static void recv_complete(struct ry__tcp_qp *qp, const struct ry_recv_wr *rw,
			  enum ry_wc_status status, enum ry_wc_opcode op,
			  uint32_t len, bool imm, uint32_t imm_data)
{
	struct ry_wc wc = {
	    .wr_id = rw->wr_id,
	    .status = status,
	    .opcode = op,
	    .byte_len = len,
	    .imm_data = imm ? imm_data : 0,
	    .flags = imm ? RY_WC_WITH_IMM : 0,
	    .qp_num = qp->base.qp_num,
	};

	ry__tcp_cq_push(qp, &wc);
}

static void timed_off(struct ry__tcp_qp *qp)
{
	if (qp->flags & RY__TCP_QF_RNR) {
		ry__list_del(&qp->timed);
		qp->flags &= ~RY__TCP_QF_RNR;
	}
	qp->rnr_until = 0;
	qp->conn_by = 0;
	qp->ack_since = 0;
}

uint64_t ry__tcp_qp_next_timer(const struct ry__tcp_qp *qp)
{
	uint64_t t = qp->rnr_until;

	if (qp->c.closing)
		return tqp_rail((struct ry__tcp_qp *)qp)->now +
		       RY__TCP_LINGER_TICK_NS;
	if (qp->conn_by && (!t || qp->conn_by < t))
		t = qp->conn_by;
	if (qp->c.state == RY__TCP_C_CONNECTING && (!t || qp->c.syn_by < t))
		t = qp->c.syn_by;
	if (qp->ack_since) {
		const struct ry__tcp_rail *r =
		    tqp_rail((struct ry__tcp_qp *)qp);
		uint64_t used = r->lclock - qp->ack_since;
		uint64_t a =
		    r->now +
		    (used < qp->ack_budget_ns ? qp->ack_budget_ns - used : 0) +
		    1;

		if (!t || a < t)
			t = a;
	}
	return t;
}

void ry__tcp_qp_error(struct ry__tcp_qp *qp, enum ry_wc_status head_status,
		      bool linger)
{
	struct ry__tcp_rail *r = tqp_rail(qp);

	if (qp->base.state == RY_QPS_ERR)
		return;
	qp->base.state = RY_QPS_ERR;
	qp->lost = false;
	timed_off(qp);
	/* a receive taken by a message that never finished goes back */
	if (qp->c.rx.has_rwqe) {
		qp->c.rx.has_rwqe = false;
		recv_complete(qp, &qp->c.rx.rwqe, RY_WC_FLUSHED, RY_WC_RECV, 0,
			      false, 0);
	}
	while (qp->sq_head != qp->sq_tail) {
		complete(qp, wqe(qp, qp->sq_head), head_status);
		head_status = RY_WC_FLUSHED;
		qp->sq_head++;
	}
	qp->sq_next = qp->sq_head;
	qp->rd_out = 0;
	if (linger && qp->c.fd >= 0 && qp->c.state == RY__TCP_C_UP) {
		/* a NAK is queued: it goes out, then the socket closes */
		qp->c.closing = true;
		qp->c.in_off = true;
		qp->c.close_by = r->now + RY__TCP_LINGER_NS;
		qp->c.want_out = true;
		ry__tcp_conn_interest(qp);
		ry__tcp_txq_cancel_reqs(qp);
		ry__tcp_kick(qp);
		ry__tcp_timed(qp);
	} else
		ry__tcp_conn_abort(qp);
}

void ry__tcp_qp_conn_lost(struct ry__tcp_qp *qp, int err)
{
	struct ry__tcp_rail *r = tqp_rail(qp);

	RY_DBG("tcp", "rail %s: qp 0x%x: connection lost: %s", r->base.name,
	       qp->base.qp_num, strerror(err));
	if (qp->c.closing) {
		ry__tcp_conn_abort(qp);
		return;
	}
	ry__tcp_event(r, RY_RAIL_EV_QP_FATAL, qp->base.qp_num);
	if (qp->sq_head != qp->sq_tail) {
		ry__tcp_qp_error(qp, RY_WC_RETRY_EXCEEDED, false);
		return;
	}
	/* nothing outstanding: the QP learns it when it next sends */
	ry__tcp_conn_abort(qp);
	qp->lost = true;
}

int ry__tcp_create_qp(struct ry_pd *pd, const struct ry_qp_init *init,
		      struct ry_qp **qp_p)
{
	struct ry__tcp_rail *r = to_trail(pd->rail);
	struct ry__sw_cq *cq = &r->cq0;
	struct ry__tcp_qp *qp;
	struct ry_rail_attr a;
	uint32_t size = 4;
	int rc;

	if (init->cq) {
		if (init->cq->rail != pd->rail)
			return -EINVAL;
		cq = container_of(init->cq, struct ry__sw_cq, base);
	}
	if (!init->max_send_wr || init->max_send_wr > RY__TCP_MAX_QP_WR)
		return -EINVAL;
	rc = ry__tcp_cq_take(cq, 0);
	if (rc)
		return rc;
	while (size < init->max_send_wr)
		size *= 2;
	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return -ENOMEM;
	qp->sq = calloc(size, sizeof(*qp->sq));
	if (!qp->sq) {
		free(qp);
		return -ENOMEM;
	}
	qp->sq_size = size;
	qp->sq_max = init->max_send_wr;
	qp->base.pd = pd;
	qp->base.context = init->context;
	qp->cq = cq;
	qp->c.fd = -1;
	qp->c.ep.kind = RY__TCP_EP_CONN;
	do
		qp->base.qp_num = rand24();
	while (ry__tcp_qp_lookup(r, qp->base.qp_num));
	ry__hidx_add(&r->qpns, &qp->hnode, qp->base.qp_num);
	ry__list_add_tail(&r->qps, &qp->link);
	ry__sw_pd(pd)->refs++;
	cq->n_qps++;
	ry__rail_query(pd->rail, &a);
	qp->base.local = a.local;
	qp->base.local.qpn = qp->base.qp_num;
	qp->base.local.psn = rand24();
	qp->base.local.cookie = rand_cookie();
	qp->base.state = RY_QPS_RESET;
	*qp_p = &qp->base;
	return 0;
}

/* Both sides agree who connects: the smaller (address, port, QPN). */
static bool we_connect(const struct ry__tcp_qp *qp)
{
	int c = memcmp(qp->base.local.gid, qp->remote.gid, 16);

	if (c)
		return c < 0;
	if (qp->base.local.udp_port != qp->remote.udp_port)
		return qp->base.local.udp_port < qp->remote.udp_port;
	return qp->base.qp_num < qp->remote.qpn;
}

static int to_rtr(struct ry__tcp_qp *qp, const struct ry_qp_attr *attr)
{
	static const uint8_t v4mapped[12] = {0, 0, 0, 0, 0,    0,
					     0, 0, 0, 0, 0xff, 0xff};
	const struct ry_qp_endpoint *rem = &attr->remote;
	int rc;

	if (attr->mac)
		return -EOPNOTSUPP; /* TCP carries no per-message MAC */
	if (!rem->qpn || rem->qpn > 0xffffff || rem->psn > 0xffffff ||
	    !rem->udp_port || memcmp(rem->gid, v4mapped, 12))
		return -EINVAL;
	qp->remote = *rem;
	memset(&qp->peer, 0, sizeof(qp->peer));
	qp->peer.sin_family = AF_INET;
	memcpy(&qp->peer.sin_addr, rem->gid + 12, 4);
	qp->peer.sin_port = htons(rem->udp_port);
	qp->exp_psn = rem->psn;
	qp->rnr_dropping = false;
	qp->c.active = we_connect(qp);
	/* in RTR already while connecting: a HELLO parked before now
	 * (tcp_conn.c) matches only a QP in RTR */
	qp->base.state = RY_QPS_RTR;
	rc = ry__tcp_conn_start(qp);
	if (rc) {
		ry__tcp_conn_abort(qp);
		qp->base.state = RY_QPS_INIT;
		return rc;
	}
	return 0;
}

static void to_rts(struct ry__tcp_qp *qp, const struct ry_qp_attr *attr)
{
	uint64_t ut;

	qp->min_rnr_ns = (uint64_t)attr->min_rnr_timer_us * 1000;
	qp->ack_budget_ns =
	    (uint64_t)attr->ack_timeout_us * 1000 * (attr->retry_cnt + 1);
	qp->rnr_retry = attr->rnr_retry;
	qp->rnr_left = attr->rnr_retry;
	qp->max_rd = attr->max_rd_atomic ? attr->max_rd_atomic : 1;
	if (qp->max_rd > RY__TCP_MAX_RD)
		qp->max_rd = RY__TCP_MAX_RD;
	/*
	 * The kernel's retransmissions must not hold a dead path for
	 * minutes: unacknowledged data older than this ends the connection.
	 * At least a second, so that TCP's own 200 ms minimum RTO gets a few
	 * tries; the manager's heartbeats see a silent path sooner.
	 */
	ut = (uint64_t)attr->ack_timeout_us * (attr->retry_cnt + 1) * 4 / 1000;
	qp->user_timeout_ms = ut < 1000	   ? 1000
			      : ut > 60000 ? 60000
					   : (uint32_t)ut;
	if (qp->c.fd >= 0)
		setsockopt(qp->c.fd, IPPROTO_TCP, 18 /* TCP_USER_TIMEOUT */,
			   &qp->user_timeout_ms, sizeof(qp->user_timeout_ms));
	qp->post_psn = qp->base.local.psn;
	if (qp->c.state != RY__TCP_C_UP) {
		qp->conn_by =
		    tqp_rail(qp)->now + (uint64_t)qp->user_timeout_ms * 1000000;
		ry__tcp_timed(qp);
	}
	ry__tcp_kick(qp);
}

static void to_reset(struct ry__tcp_qp *qp)
{
	uint32_t psn = qp->base.local.psn;

	if (qp->base.state != RY_QPS_ERR)
		ry__tcp_qp_error(qp, RY_WC_FLUSHED, false);
	ry__tcp_conn_abort(qp);
	timed_off(qp);
	qp->lost = false;
	qp->sq_head = qp->sq_next = qp->sq_tail = 0;
	qp->rd_out = 0;
	memset(&qp->remote, 0, sizeof(qp->remote));
	/* a new connection is a new conversation: new PSN and cookie */
	do
		qp->base.local.psn = rand24();
	while (qp->base.local.psn == psn);
	qp->base.local.cookie = rand_cookie();
	qp->base.state = RY_QPS_RESET;
}

int ry__tcp_modify_qp(struct ry_qp *base, enum ry_qp_state state,
		      const struct ry_qp_attr *attr)
{
	struct ry__tcp_qp *qp = to_tqp(base);
	int rc;

	tqp_rail(qp)->now = ry__now_ns();
	switch (state) {
	case RY_QPS_RESET:
		to_reset(qp);
		return 0;
	case RY_QPS_INIT:
		if (base->state != RY_QPS_RESET || !attr)
			return -EINVAL;
		qp->access = attr->access;
		base->state = RY_QPS_INIT;
		return 0;
	case RY_QPS_RTR:
		if (base->state != RY_QPS_INIT || !attr)
			return -EINVAL;
		rc = to_rtr(qp, attr);
		if (rc)
			return rc;
		base->state = RY_QPS_RTR;
		return 0;
	case RY_QPS_RTS:
		if (base->state != RY_QPS_RTR || !attr)
			return -EINVAL;
		to_rts(qp, attr);
		base->state = RY_QPS_RTS;
		return 0;
	case RY_QPS_ERR:
		ry__tcp_qp_error(qp, RY_WC_FLUSHED, false);
		return 0;
	}
	return -EINVAL;
}

int ry__tcp_destroy_qp(struct ry_qp *base)
{
	struct ry__tcp_qp *qp = to_tqp(base);
	struct ry__tcp_rail *r = tqp_rail(qp);

	ry__tcp_conn_abort(qp);
	timed_off(qp);
	if (qp->flags & RY__TCP_QF_ACTIVE)
		ry__list_del(&qp->active);
	/* its outstanding send WRs are never reported: their room goes back */
	qp->cq->sends -= qp->sq_tail - qp->sq_head;
	if (qp->c.rx.has_rwqe)
		recv_complete(qp, &qp->c.rx.rwqe, RY_WC_FLUSHED, RY_WC_RECV, 0,
			      false, 0);
	qp->cq->n_qps--;
	ry__sw_pd(base->pd)->refs--;
	ry__hidx_del(&r->qpns, &qp->hnode);
	ry__list_del(&qp->link);
	free(qp->sq);
	free(qp);
	return 0;
}

void ry__tcp_qp_cleanup(struct ry__tcp_rail *r)
{
	while (!ry__list_empty(&r->qps))
		ry__tcp_destroy_qp(
		    &container_of(r->qps.next, struct ry__tcp_qp, link)->base);
}

int ry__tcp_post_send(struct ry_qp *base, const struct ry_send_wr *wr,
		      unsigned n)
{
	struct ry__tcp_qp *qp = to_tqp(base);
	struct ry__tcp_rail *r = tqp_rail(qp);
	bool idle = qp->sq_head == qp->sq_tail;
	int rc;

	if (base->state != RY_QPS_RTS && base->state != RY_QPS_ERR)
		return -EINVAL;
	for (unsigned i = 0; i < n; i++)
		if ((unsigned)wr[i].opcode > RY_WR_SEND_IMM ||
		    wr[i].sge.length > RY__TCP_MAX_MSG)
			return -EINVAL;
	if (qp->sq_tail - qp->sq_head + n > qp->sq_max)
		return -ENOMEM;
	rc = ry__tcp_cq_take(qp->cq, n);
	if (rc)
		return rc;
	for (unsigned i = 0; i < n; i++) {
		struct ry__tcp_wqe *w = wqe(qp, qp->sq_tail);

		if (base->state == RY_QPS_ERR) {
			/* every WR posted in ERR is flushed, in order */
			w->wr = wr[i];
			complete(qp, w, RY_WC_FLUSHED);
			continue;
		}
		memset(w, 0, sizeof(*w));
		w->wr = wr[i];
		w->psn = qp->post_psn;
		qp->post_psn = ry__soft_psn_add(qp->post_psn, 1);
		qp->sq_tail++;
	}
	if (!idle || base->state != RY_QPS_RTS) {
		ry__tcp_kick(qp); /* the owner's progress call sends it */
		return 0;
	}
	/* sends_idle: nothing of this QP's was outstanding, so the owner
	 * makes no progress call for it (at depth 1 that call's epoll_wait
	 * found nothing); what does not go now (a full socket, a connect
	 * not done, an RNR wait) the fd says */
	r->now = ry__now_ns();
	ry__tcp_conn_tx(qp);
	if (qp->c.tx_head != qp->c.tx_tail || qp->sq_next != qp->sq_tail) {
		ry__tcp_efd_raise(r);
	} else if (qp->flags & RY__TCP_QF_ACTIVE) {
		/* all out: queuing put it on the list for progress */
		ry__list_del(&qp->active);
		qp->flags &= ~RY__TCP_QF_ACTIVE;
	}
	return 0;
}

/* The head WR failed locally (bad lkey) and everything before it is
 * done: now it completes, in order. */
static bool head_check(struct ry__tcp_qp *qp)
{
	if (qp->sq_head != qp->sq_tail && wqe(qp, qp->sq_head)->bad_local) {
		ry__tcp_qp_error(qp, RY_WC_LOC_PROT, false);
		return false;
	}
	return true;
}

void ry__tcp_req_fill(struct ry__tcp_qp *qp)
{
	struct ry__tcp_rail *r = tqp_rail(qp);

	if (qp->base.state != RY_QPS_RTS)
		return;
	if (qp->lost && qp->sq_head != qp->sq_tail) {
		ry__tcp_qp_error(qp, RY_WC_RETRY_EXCEEDED, false);
		return;
	}
	if (qp->c.state != RY__TCP_C_UP || qp->rnr_until)
		return;
	/* nothing out unanswered: the answer timer starts with the next */
	if (qp->sq_next == qp->sq_head)
		qp->ack_since = 0;
	while (qp->sq_next != qp->sq_tail && qp->c.tx_reqs < RY__TCP_TXQ_REQ) {
		struct ry__tcp_wqe *w = wqe(qp, qp->sq_next);
		bool read = w->wr.opcode == RY_WR_RDMA_READ;
		struct ry__tcp_msg m = {0};
		struct ry__tcp_txe *t;

		if (w->bad_local)
			break;
		if (read && qp->rd_out >= qp->max_rd)
			break;
		if (w->wr.sge.length &&
		    !ry__sw_mr_lkey(&r->mem, qp->base.pd, w->wr.sge.lkey,
				    w->wr.sge.addr, w->wr.sge.length,
				    read ? RY_ACCESS_LOCAL_WRITE : 0)) {
			w->bad_local = true;
			head_check(qp);
			return;
		}
		t = ry__tcp_txq_slot(qp);
		if (!t)
			break;
		m.qpn = qp->remote.qpn;
		m.cookie = qp->remote.cookie;
		m.psn = w->psn;
		switch (w->wr.opcode) {
		case RY_WR_RDMA_WRITE:
		case RY_WR_RDMA_WRITE_IMM:
			m.opcode = w->wr.opcode == RY_WR_RDMA_WRITE
				       ? RY__TCP_OP_WRITE
				       : RY__TCP_OP_WRITE_IMM;
			m.va = w->wr.remote_addr;
			m.rkey = w->wr.rkey;
			m.len = w->wr.sge.length;
			break;
		case RY_WR_RDMA_READ:
			m.opcode = RY__TCP_OP_READ_REQ;
			m.va = w->wr.remote_addr;
			m.rkey = w->wr.rkey;
			m.rlen = w->wr.sge.length;
			break;
		default:
			m.opcode = w->wr.opcode == RY_WR_SEND
				       ? RY__TCP_OP_SEND
				       : RY__TCP_OP_SEND_IMM;
			m.len = w->wr.sge.length;
			break;
		}
		if (w->wr.opcode == RY_WR_RDMA_WRITE_IMM ||
		    w->wr.opcode == RY_WR_SEND_IMM)
			m.imm = w->wr.imm_data;
		ry__tcp_wire_encode(t->hdr, &m);
		t->kind = RY__TCP_TX_REQ;
		t->idx = qp->sq_next;
		if (m.len) {
			t->key = w->wr.sge.lkey;
			t->va = w->wr.sge.addr;
			t->len = m.len;
		}
		ry__tcp_txq_commit(qp);
		if (!qp->ack_since && qp->ack_budget_ns) {
			qp->ack_since = r->lclock;
			ry__tcp_timed(qp);
		}
		w->sent = true;
		if (read)
			qp->rd_out++;
		qp->sq_next++;
		r->st.tx_packets++;
	}
}

void ry__tcp_req_sent(struct ry__tcp_qp *qp, uint32_t idx)
{
	(void)qp;
	(void)idx; /* an ACK or a READ response completes it */
}

/* ---- receiving: the responder ---- */

static void rx_payload(struct ry__tcp_qp *qp, uint32_t key, bool rkey,
		       unsigned access, uint64_t va, enum ry__tcp_rx_done done)
{
	qp->c.rx.state = RY__TCP_RX_PAYLOAD;
	qp->c.rx.key = key;
	qp->c.rx.rkey = rkey;
	qp->c.rx.access = access;
	qp->c.rx.va = va;
	qp->c.rx.left = qp->c.rx.m.len;
	qp->c.rx.off = 0;
	qp->c.rx.done = done;
}

static void rx_drain(struct ry__tcp_qp *qp, enum ry__tcp_rx_done done,
		     enum ry_wc_status fail)
{
	qp->c.rx.state = RY__TCP_RX_DRAIN;
	qp->c.rx.left = qp->c.rx.m.len;
	qp->c.rx.off = 0;
	qp->c.rx.done = done;
	qp->c.rx.fail = fail;
}

/* The responder refuses a request for good: NAK, then ERR (after the NAK
 * went out). */
static bool resp_fatal(struct ry__tcp_qp *qp, uint8_t syn)
{
	ry__tcp_txq_nak(qp, qp->c.rx.m.psn, syn);
	ry__tcp_qp_error(qp, RY_WC_FLUSHED, true);
	return false;
}

static bool rx_request(struct ry__tcp_qp *qp)
{
	struct ry__tcp_rail *r = tqp_rail(qp);
	const struct ry__tcp_msg *m = &qp->c.rx.m;
	bool imm = m->opcode == RY__TCP_OP_WRITE_IMM ||
		   m->opcode == RY__TCP_OP_SEND_IMM;
	bool send =
	    m->opcode == RY__TCP_OP_SEND || m->opcode == RY__TCP_OP_SEND_IMM;

	if (m->psn != qp->exp_psn) {
		if (!qp->rnr_dropping) {
			r->st.rx_bad_psn++;
			ry__tcp_qp_error(qp, RY_WC_GENERAL_ERR, false);
			return false;
		}
		/* after an RNR NAK: dropped until the retry arrives */
		r->st.rx_dropped++;
		rx_drain(qp, RY__TCP_DONE_NONE, RY_WC_SUCCESS);
		return true;
	}
	qp->rnr_dropping = false;
	if (m->opcode == RY__TCP_OP_READ_REQ) {
		struct ry__tcp_txe *t;
		struct ry__tcp_msg rm = {0};

		if (!(qp->access & RY_ACCESS_REMOTE_READ) ||
		    (m->rlen &&
		     !ry__sw_mr_rkey(&r->mem, qp->base.pd, m->rkey, m->va,
				     m->rlen, RY_ACCESS_REMOTE_READ))) {
			r->st.rx_access_err++;
			return resp_fatal(qp, RY__TCP_SYN_ACCESS);
		}
		t = ry__tcp_txq_slot(qp);
		if (!t || qp->c.tx_tail - qp->c.tx_head - qp->c.tx_reqs >=
			      RY__TCP_TXQ - RY__TCP_TXQ_REQ)
			return resp_fatal(qp, RY__TCP_SYN_INVALID);
		rm.opcode = RY__TCP_OP_READ_RESP;
		rm.qpn = qp->remote.qpn;
		rm.cookie = qp->remote.cookie;
		rm.psn = m->psn;
		rm.len = m->rlen;
		ry__tcp_wire_encode(t->hdr, &rm);
		t->kind = RY__TCP_TX_RESP;
		t->rkey = true;
		t->key = m->rkey;
		t->va = m->va;
		t->len = m->rlen;
		ry__tcp_txq_commit(qp);
		qp->exp_psn = ry__soft_psn_add(qp->exp_psn, 1);
		return true;
	}
	if (!send &&
	    (!(qp->access & RY_ACCESS_REMOTE_WRITE) ||
	     (m->len && !ry__sw_mr_rkey(&r->mem, qp->base.pd, m->rkey, m->va,
					m->len, RY_ACCESS_REMOTE_WRITE)))) {
		r->st.rx_access_err++;
		return resp_fatal(qp, RY__TCP_SYN_ACCESS);
	}
	if (send || imm) {
		if (!ry__tcp_srq_pop(r, &qp->c.rx.rwqe)) {
			/* no receive: RNR NAK, and drop until it comes again */
			ry__tcp_txq_nak(qp, m->psn, RY__TCP_SYN_RNR);
			qp->rnr_dropping = true;
			rx_drain(qp, RY__TCP_DONE_NONE, RY_WC_SUCCESS);
			return true;
		}
		qp->c.rx.has_rwqe = true;
	}
	if (send) {
		const struct ry_recv_wr *rw = &qp->c.rx.rwqe;

		if (m->len > rw->sge.length) {
			qp->c.rx.has_rwqe = false;
			recv_complete(qp, rw, RY_WC_LOC_LEN, RY_WC_RECV, 0,
				      false, 0);
			return resp_fatal(qp, RY__TCP_SYN_INVALID);
		}
		if (m->len && !ry__sw_mr_lkey(&r->mem, qp->base.pd,
					      rw->sge.lkey, rw->sge.addr,
					      m->len, RY_ACCESS_LOCAL_WRITE)) {
			qp->c.rx.has_rwqe = false;
			recv_complete(qp, rw, RY_WC_LOC_PROT, RY_WC_RECV, 0,
				      false, 0);
			return resp_fatal(qp, RY__TCP_SYN_REM_OP);
		}
		rx_payload(qp, rw->sge.lkey, false, RY_ACCESS_LOCAL_WRITE,
			   rw->sge.addr, RY__TCP_DONE_SEND);
		return true;
	}
	rx_payload(qp, m->rkey, true, RY_ACCESS_REMOTE_WRITE, m->va,
		   RY__TCP_DONE_WRITE);
	return true;
}

/* ---- receiving: the requester's answers ---- */

static enum ry_wc_status syn_status(uint8_t syn)
{
	switch (syn) {
	case RY__TCP_SYN_ACCESS:
		return RY_WC_REM_ACCESS;
	case RY__TCP_SYN_INVALID:
		return RY_WC_REM_INVALID_REQ;
	default:
		return RY_WC_REM_OP;
	}
}

/* A response that cannot be: the peer breaks the protocol. */
static bool rx_broken(struct ry__tcp_qp *qp)
{
	tqp_rail(qp)->st.rx_bad_psn++;
	ry__tcp_qp_error(qp, RY_WC_GENERAL_ERR, false);
	return false;
}

static void rnr_rewind(struct ry__tcp_qp *qp)
{
	struct ry__tcp_rail *r = tqp_rail(qp);

	for (uint32_t i = qp->sq_head; i != qp->sq_next; i++)
		wqe(qp, i)->sent = false;
	qp->sq_next = qp->sq_head;
	qp->rd_out = 0;
	ry__tcp_txq_cancel_reqs(qp);
	qp->rnr_until = r->now + (qp->min_rnr_ns ? qp->min_rnr_ns : 1);
	ry__tcp_timed(qp);
}

static bool rx_ack(struct ry__tcp_qp *qp)
{
	const struct ry__tcp_msg *m = &qp->c.rx.m;
	struct ry__tcp_rail *r = tqp_rail(qp);
	struct ry__tcp_wqe *w;

	if (qp->base.state != RY_QPS_RTS)
		return rx_broken(qp);
	if (m->syndrome != RY__TCP_SYN_OK) {
		/* every request before it was answered first: it is the
		 * head */
		r->st.naks_rcvd++;
		if (qp->sq_head == qp->sq_next ||
		    wqe(qp, qp->sq_head)->psn != m->psn ||
		    !wqe(qp, qp->sq_head)->sent)
			return rx_broken(qp);
		if (m->syndrome != RY__TCP_SYN_RNR) {
			ry__tcp_qp_error(qp, syn_status(m->syndrome), false);
			return false;
		}
		if (!qp->rnr_left) {
			ry__tcp_qp_error(qp, RY_WC_RNR_RETRY_EXCEEDED, false);
			return false;
		}
		qp->rnr_left--;
		rnr_rewind(qp);
		return true;
	}
	/* cumulative: every WR up to m->psn, none of them an open READ */
	if (qp->sq_head == qp->sq_next ||
	    ry__soft_psn_cmp(m->psn, wqe(qp, qp->sq_head)->psn) < 0 ||
	    ry__soft_psn_cmp(m->psn, wqe(qp, qp->sq_next - 1)->psn) > 0)
		return rx_broken(qp);
	while (qp->sq_head != qp->sq_next &&
	       ry__soft_psn_cmp(m->psn, (w = wqe(qp, qp->sq_head))->psn) >= 0) {
		if (w->wr.opcode == RY_WR_RDMA_READ)
			return rx_broken(qp);
		complete(qp, w, RY_WC_SUCCESS);
		qp->sq_head++;
		qp->rnr_left = qp->rnr_retry;
	}
	ry__tcp_kick(qp);
	return head_check(qp);
}

static bool rx_read_resp(struct ry__tcp_qp *qp)
{
	const struct ry__tcp_msg *m = &qp->c.rx.m;
	struct ry__tcp_rail *r = tqp_rail(qp);
	struct ry__tcp_wqe *w;

	if (qp->base.state != RY_QPS_RTS || qp->sq_head == qp->sq_next)
		return rx_broken(qp);
	w = wqe(qp, qp->sq_head);
	if (w->wr.opcode != RY_WR_RDMA_READ || w->psn != m->psn ||
	    m->len != w->wr.sge.length)
		return rx_broken(qp);
	if (m->len &&
	    !ry__sw_mr_lkey(&r->mem, qp->base.pd, w->wr.sge.lkey,
			    w->wr.sge.addr, m->len, RY_ACCESS_LOCAL_WRITE)) {
		rx_drain(qp, RY__TCP_DONE_FAIL, RY_WC_LOC_PROT);
		return true;
	}
	rx_payload(qp, w->wr.sge.lkey, false, RY_ACCESS_LOCAL_WRITE,
		   w->wr.sge.addr, RY__TCP_DONE_READ_RESP);
	return true;
}

bool ry__tcp_rx_header(struct ry__tcp_qp *qp)
{
	struct ry__tcp_rail *r = tqp_rail(qp);
	struct ry__tcp_msg *m = &qp->c.rx.m;
	enum ry__tcp_bad bad = ry__tcp_wire_decode(qp->c.rx.hdr, m);
	bool ok;

	qp->c.rx.done = RY__TCP_DONE_NONE;
	if (bad || m->opcode == RY__TCP_OP_HELLO) {
		r->st.rx_bad_header++;
		RY_WARN("tcp", "rail %s: qp 0x%x: bad header (%s): closed",
			r->base.name, qp->base.qp_num,
			ry__tcp_bad_names[bad ? bad : RY__TCP_BAD_OPCODE]);
		ry__tcp_qp_error(qp, RY_WC_GENERAL_ERR, false);
		return false;
	}
	if (m->qpn != qp->base.qp_num) {
		r->st.rx_bad_qpn++;
		ry__tcp_qp_error(qp, RY_WC_GENERAL_ERR, false);
		return false;
	}
	if (m->cookie != qp->base.local.cookie) {
		r->st.rx_bad_cookie++;
		ry__tcp_qp_error(qp, RY_WC_GENERAL_ERR, false);
		return false;
	}
	switch (m->opcode) {
	case RY__TCP_OP_ACK:
		ok = rx_ack(qp);
		break;
	case RY__TCP_OP_READ_RESP:
		ok = rx_read_resp(qp);
		break;
	default:
		ok = rx_request(qp);
		break;
	}
	if (ok && qp->c.rx.state != RY__TCP_RX_HDR && !m->len) {
		/* nothing follows: done now */
		qp->c.rx.state = RY__TCP_RX_HDR;
		ry__tcp_rx_done(qp);
		ok = qp->base.state != RY_QPS_ERR;
	}
	return ok && qp->c.fd >= 0 && !qp->c.closing;
}

void ry__tcp_rx_done(struct ry__tcp_qp *qp)
{
	const struct ry__tcp_msg *m = &qp->c.rx.m;
	bool imm = m->opcode == RY__TCP_OP_WRITE_IMM ||
		   m->opcode == RY__TCP_OP_SEND_IMM;
	struct ry__tcp_wqe *w;

	switch (qp->c.rx.done) {
	case RY__TCP_DONE_WRITE:
	case RY__TCP_DONE_SEND:
		if (qp->c.rx.has_rwqe) {
			qp->c.rx.has_rwqe = false;
			recv_complete(qp, &qp->c.rx.rwqe, RY_WC_SUCCESS,
				      qp->c.rx.done == RY__TCP_DONE_SEND
					  ? RY_WC_RECV
					  : RY_WC_RECV_RDMA_IMM,
				      m->len, imm, m->imm);
		}
		qp->exp_psn = ry__soft_psn_add(qp->exp_psn, 1);
		ry__tcp_txq_ack(qp, m->psn);
		break;
	case RY__TCP_DONE_READ_RESP:
		w = wqe(qp, qp->sq_head);
		complete(qp, w, RY_WC_SUCCESS);
		qp->sq_head++;
		qp->rd_out--;
		qp->rnr_left = qp->rnr_retry;
		ry__tcp_kick(qp);
		head_check(qp);
		break;
	case RY__TCP_DONE_FAIL:
		ry__tcp_qp_error(qp, qp->c.rx.fail, false);
		break;
	default:
		break;
	}
	qp->c.rx.done = RY__TCP_DONE_NONE;
}

void ry__tcp_qp_timers(struct ry__tcp_qp *qp)
{
	struct ry__tcp_rail *r = tqp_rail(qp);

	if (qp->c.closing) {
		timed_off(qp);
		ry__tcp_conn_linger(qp);
		return;
	}
	if (qp->rnr_until && qp->rnr_until <= r->now) {
		qp->rnr_until = 0;
		ry__tcp_kick(qp);
	}
	if (qp->c.state == RY__TCP_C_CONNECTING && qp->c.syn_by <= r->now &&
	    (qp->base.state == RY_QPS_RTR || qp->base.state == RY_QPS_RTS)) {
		/* only HELLO is queued before the connection is up */
		ry__tcp_conn_abort(qp);
		if (ry__tcp_conn_start(qp))
			ry__tcp_qp_conn_lost(qp, EHOSTUNREACH);
	}
	if (qp->conn_by &&
	    (qp->c.state == RY__TCP_C_UP || qp->base.state != RY_QPS_RTS))
		qp->conn_by = 0;
	if (qp->conn_by && qp->conn_by <= r->now) {
		qp->conn_by = 0;
		RY_DBG("tcp", "rail %s: qp 0x%x: no connection in %u ms",
		       r->base.name, qp->base.qp_num, qp->user_timeout_ms);
		ry__tcp_qp_conn_lost(qp, ETIMEDOUT);
	}
	if (qp->ack_since && qp->sq_next == qp->sq_head) {
		qp->ack_since = 0; /* every request answered */
	} else if (qp->ack_since && qp->base.state == RY_QPS_RTS &&
		   r->lclock - qp->ack_since >= qp->ack_budget_ns) {
		/* the peer's socket takes our bytes but nothing answers
		 * them (its rail stopped, or a middlebox holds the
		 * stream): as an RC QP whose retries ran out */
		RY_DBG("tcp", "rail %s: qp 0x%x: no answer in %llu ms",
		       r->base.name, qp->base.qp_num,
		       (unsigned long long)(qp->ack_budget_ns / 1000000));
		ry__tcp_qp_error(qp, RY_WC_RETRY_EXCEEDED, false);
		return;
	}
	if (!ry__tcp_qp_next_timer(qp))
		timed_off(qp);
}
