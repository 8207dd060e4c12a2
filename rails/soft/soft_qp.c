// SPDX-License-Identifier: BSD-2-Clause
/*
 * RC queue pairs: creation with random QPN, PSN and cookie, the verbs state
 * machine RESET -> INIT -> RTR -> RTS -> ERR, posting, and the flush that
 * completes every outstanding WR when a QP enters ERR.  A QP in ERR stays
 * in the QPN table so that its late packets are counted and dropped
 * (rx_qp_err_dropped) rather than looked up as strangers.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rails/soft/soft.h"
#include "rails/soft/soft_int.h"
#include "src/util/log.h"
#include "src/util/ring.h"

/* QPNs are drawn at random (below), so the number is its own hash key;
 * the index grows with the QPs (a fixed table made 10,000 QPs a rail
 * chains of ten). */
struct ry__soft_qp *ry__soft_qp_lookup(struct ry__soft_rail *r, uint32_t qpn)
{
	struct ry__hnode *x = ry__hidx_first(&r->qpns, qpn);

	return x ? container_of(x, struct ry__soft_qp, hnode) : NULL;
}

static int fresh_psn_cookie(struct ry__soft_qp *qp)
{
	uint32_t psn = 0;
	uint64_t cookie;
	int rc = 0;

	/* nonzero, as on verbs: 0 is what a forgotten init would give */
	while (!rc && !(psn & RY__SOFT_PSN_MASK))
		rc = ry__rand_bytes(&psn, sizeof(psn));
	if (!rc)
		rc = ry__rand_bytes(&cookie, sizeof(cookie));
	if (rc)
		return rc;
	qp->base.local.psn = psn & RY__SOFT_PSN_MASK;
	qp->base.local.cookie = cookie ? cookie : 1;
	return 0;
}

int ry__soft_create_qp(struct ry_pd *pd, const struct ry_qp_init *init,
		       struct ry_qp **qp_p)
{
	struct ry__soft_rail *r = to_srail(pd->rail);
	struct ry_rail_attr attr;
	struct ry__soft_qp *qp;
	int rc;

	if (!init->max_send_wr || init->max_send_wr > RY__SOFT_MAX_QP_WR ||
	    (init->cq && init->cq->rail != pd->rail))
		return -EINVAL;
	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return -ENOMEM;
	qp->cq =
	    init->cq ? container_of(init->cq, struct ry__sw_cq, base) : &r->cq0;
	rc = ry__soft_cq_ready(qp->cq);
	if (rc) {
		free(qp);
		return rc;
	}
	/* no ring and no CQ room until WRs are posted (MEMORY, soft_int.h) */
	qp->sq = qp->sq_inline;
	qp->sq_size = RY__SOFT_SQ_INLINE;
	qp->sq_max = init->max_send_wr;
	qp->rtr_again = r->fault.rtr_again;
	for (int tries = 0;; tries++) {
		uint32_t qpn;

		rc = ry__rand_bytes(&qpn, sizeof(qpn));
		if (rc)
			goto err_free;
		qpn &= RY__SOFT_PSN_MASK;
		if (qpn > 1 && !ry__soft_qp_lookup(r, qpn)) {
			qp->base.qp_num = qpn;
			break;
		}
		if (tries > 64) {
			rc = -EAGAIN;
			goto err_free;
		}
	}
	rc = fresh_psn_cookie(qp);
	if (rc)
		goto err_free;
	ry__rail_query(pd->rail, &attr);
	memcpy(qp->base.local.gid, attr.local.gid, 16);
	qp->base.local.udp_port = attr.local.udp_port;
	qp->base.local.mtu = attr.mtu;
	qp->base.local.qpn = qp->base.qp_num;
	qp->base.pd = pd;
	qp->base.state = RY_QPS_RESET;
	qp->base.context = init->context;
	ry__list_init(&qp->active);
	ry__hidx_add(&r->qpns, &qp->hnode, qp->base.qp_num);
	qp->next = r->qps;
	if (r->qps)
		r->qps->prev = qp;
	r->qps = qp;
	ry__sw_pd(pd)->refs++;
	qp->cq->n_qps++;
	RY_DBG("soft", "rail %s: qp 0x%x created psn 0x%x", r->base.name,
	       qp->base.qp_num, qp->base.local.psn);
	*qp_p = &qp->base;
	return 0;

err_free:
	ry__soft_mac_wipe(qp);
	free(qp);
	return rc;
}

static void unlink_qp(struct ry__soft_rail *r, struct ry__soft_qp *qp)
{
	ry__hidx_del(&r->qpns, &qp->hnode);
	if (qp->prev)
		qp->prev->next = qp->next;
	else
		r->qps = qp->next;
	if (qp->next)
		qp->next->prev = qp->prev;
}

int ry__soft_destroy_qp(struct ry_qp *base)
{
	struct ry__soft_qp *qp = to_sqp(base);
	struct ry__soft_rail *r = qp_rail(qp);

	unlink_qp(r, qp);
	ry__soft_qp_unsched(qp);
	/* WRs not completed never will be: their CQ room goes back */
	qp->cq->sends -= qp->sq_tail - qp->sq_head;
	qp->cq->n_qps--;
	ry__sw_pd(base->pd)->refs--;
	qp->sq_head = qp->sq_tail;
	ry__soft_sq_trim(qp);
	free(qp->resp.rd);
	ry__soft_mac_wipe(qp);
	free(qp);
	return 0;
}

void ry__soft_sq_trim(struct ry__soft_qp *qp)
{
	if (qp->sq == qp->sq_inline || qp->sq_head != qp->sq_tail)
		return;
	free(qp->sq);
	qp->sq = qp->sq_inline;
	qp->sq_size = RY__SOFT_SQ_INLINE;
}

/* Room for need (<= sq_max) WRs outstanding: a ring of the next power of
 * two, the outstanding ones moved to their slots in it (the counters are
 * free-running, so they stay valid). */
static int sq_grow(struct ry__soft_qp *qp, uint32_t need)
{
	uint32_t size = qp->sq_size;
	struct ry__soft_wqe *sq;

	while (size < need)
		size *= 2;
	sq = malloc((size_t)size * sizeof(*sq));
	if (!sq)
		return -ENOMEM;
	for (uint32_t i = qp->sq_head; i != qp->sq_tail; i++)
		sq[ry__ring_slot(i, size)] =
		    qp->sq[ry__ring_slot(i, qp->sq_size)];
	if (qp->sq != qp->sq_inline)
		free(qp->sq);
	qp->sq = sq;
	qp->sq_size = size;
	return 0;
}

bool ry__soft_rd_alloc(struct ry__soft_qp *qp)
{
	if (!qp->resp.rd)
		qp->resp.rd = malloc(RY__SOFT_MAX_RD * sizeof(*qp->resp.rd));
	return qp->resp.rd != NULL;
}

void ry__soft_qp_cleanup(struct ry__soft_rail *r)
{
	while (r->qps)
		ry__soft_destroy_qp(&r->qps->base);
}

void ry__soft_wqe_complete(struct ry__soft_qp *qp, struct ry__soft_wqe *w,
			   enum ry_wc_status status)
{
	struct ry_wc wc = ry__sw_send_wc(&w->wr, status, qp->base.qp_num);

	w->done = true;
	ry__soft_cq_push(qp, &wc);
}

void ry__soft_qp_error_at(struct ry__soft_qp *qp, uint32_t idx,
			  enum ry_wc_status status)
{
	struct ry__soft_rail *r = qp_rail(qp);

	if (qp->base.state == RY_QPS_ERR)
		return;
	if (status != RY_WC_FLUSHED)
		RY_INFO("soft", "rail %s: qp 0x%x to ERR: %s", r->base.name,
			qp->base.qp_num, ry_wc_status_str(status));
	qp->base.state = RY_QPS_ERR;
	qp->req.state = RY__SOFT_REQ_ERROR;
	for (uint32_t i = qp->sq_head; i != qp->sq_tail; i++)
		ry__soft_wqe_complete(qp,
				      &qp->sq[ry__ring_slot(i, qp->sq_size)],
				      i == idx ? status : RY_WC_FLUSHED);
	qp->sq_head = qp->sq_tail;
	if (qp->resp.has_rwqe) {
		struct ry_wc wc = {
		    .wr_id = qp->resp.rwqe.wr_id,
		    .status = RY_WC_FLUSHED,
		    .opcode = RY_WC_RECV,
		    .qp_num = qp->base.qp_num,
		};

		ry__soft_cq_push(qp, &wc);
		qp->resp.has_rwqe = false;
	}
	qp->resp.rd_head = qp->resp.rd_tail;
	qp->resp.ack_pending = false;
	qp->comp.deadline = 0;
	qp->comp.rnr_until = 0;
}

void ry__soft_qp_error(struct ry__soft_qp *qp, enum ry_wc_status head_status)
{
	ry__soft_qp_error_at(qp, qp->sq_head, head_status);
}

static int to_rtr(struct ry__soft_qp *qp, const struct ry_qp_attr *attr)
{
	struct ry__soft_rail *r = qp_rail(qp);
	static const uint8_t v4mapped[12] = {[10] = 0xff, [11] = 0xff};
	uint32_t mtu = attr->mtu ? attr->mtu : attr->remote.mtu;
	int rc;

	if (memcmp(attr->remote.gid, v4mapped, 12) || !attr->remote.udp_port ||
	    (attr->remote.qpn & ~RY__SOFT_PSN_MASK) ||
	    (attr->remote.psn & ~RY__SOFT_PSN_MASK)) {
		RY_ERR("soft",
		       "qp 0x%x: RTR needs an IPv4-mapped gid, a "
		       "port and 24-bit qpn/psn",
		       qp->base.qp_num);
		return -EINVAL;
	}
	if (!mtu || mtu > r->mtu)
		mtu = r->mtu;
	if (mtu < RY__SOFT_IP_UDP_HDR + RY__SOFT_HDR_LEN + 64)
		return -EINVAL;
	qp->remote = attr->remote;
	memset(&qp->peer, 0, sizeof(qp->peer));
	qp->peer.sin_family = AF_INET;
	memcpy(&qp->peer.sin_addr, &attr->remote.gid[12], 4);
	qp->peer.sin_port = htons(attr->remote.udp_port);
	rc = ry__soft_mac_rtr(qp, attr);
	if (rc)
		return rc;
	qp->pmtu =
	    mtu - RY__SOFT_IP_UDP_HDR - RY__SOFT_HDR_LEN - ry__soft_mac_len(qp);
	qp->window = RY__SOFT_WINDOW_BYTES / qp->pmtu;
	if (qp->window > RY__SOFT_WINDOW_MAX)
		qp->window = RY__SOFT_WINDOW_MAX;
	if (qp->window < 8)
		qp->window = 8;
	qp->rd_chunk = RY__SOFT_READ_CHUNK / qp->pmtu;
	if (qp->rd_chunk < 16)
		qp->rd_chunk = 16;
	qp->resp.psn = attr->remote.psn;
	qp->resp.msn = 0;
	qp->resp.nak_sent = false;
	return 0;
}

static void to_rts(struct ry__soft_qp *qp, const struct ry_qp_attr *attr)
{
	uint32_t psn = qp->base.local.psn;

	qp->ack_timeout_ns =
	    (uint64_t)(attr->ack_timeout_us ? attr->ack_timeout_us : 100000) *
	    1000;
	qp->min_rnr_ns =
	    (uint64_t)(attr->min_rnr_timer_us ? attr->min_rnr_timer_us : 1000) *
	    1000;
	qp->retry_cnt = attr->retry_cnt > 6 ? 6 : attr->retry_cnt;
	qp->rnr_retry = attr->rnr_retry > 6 ? 6 : attr->rnr_retry;
	qp->max_rd = attr->max_rd_atomic ? attr->max_rd_atomic : 1;
	if (qp->max_rd > RY__SOFT_MAX_RD)
		qp->max_rd = RY__SOFT_MAX_RD;
	if (qp->base.state == RY_QPS_RTS)
		return; /* RTS -> RTS: only the timers change */
	qp->req.psn = psn;
	qp->req.max_psn = psn;
	qp->req.idx = qp->sq_head;
	qp->req.pkt = 0;
	qp->req.state = RY__SOFT_REQ_IDLE;
	qp->post_psn = psn;
	qp->comp.psn = psn;
	qp->comp.retry_left = qp->retry_cnt;
	qp->comp.rnr_left = qp->rnr_retry;
	ry__soft_cc_init(qp);
}

static int to_reset(struct ry__soft_qp *qp)
{
	struct ry__soft_rd *rd = qp->resp.rd;
	int rc = fresh_psn_cookie(qp);

	if (rc)
		return rc;
	/* dropped without a completion: their CQ room goes back */
	qp->cq->sends -= qp->sq_tail - qp->sq_head;
	qp->sq_head = qp->sq_tail = 0;
	ry__soft_sq_trim(qp);
	memset(&qp->req, 0, sizeof(qp->req));
	memset(&qp->comp, 0, sizeof(qp->comp));
	memset(&qp->resp, 0, sizeof(qp->resp));
	qp->resp.rd = rd;
	memset(&qp->remote, 0, sizeof(qp->remote));
	ry__soft_mac_wipe(qp);
	return 0;
}

int ry__soft_modify_qp(struct ry_qp *base, enum ry_qp_state state,
		       const struct ry_qp_attr *attr)
{
	struct ry__soft_qp *qp = to_sqp(base);
	enum ry_qp_state cur = base->state;
	int rc = 0;

	switch (state) {
	case RY_QPS_RESET:
		rc = to_reset(qp);
		break;
	case RY_QPS_INIT:
		if (cur != RY_QPS_RESET && cur != RY_QPS_INIT)
			return -EINVAL;
		if (!attr)
			return -EINVAL;
		qp->access = attr->access;
		break;
	case RY_QPS_RTR:
		if (cur != RY_QPS_INIT || !attr)
			return -EINVAL;
		if (qp->rtr_again) {
			qp->rtr_again--;
			return -EAGAIN;
		}
		rc = to_rtr(qp, attr);
		break;
	case RY_QPS_RTS:
		if ((cur != RY_QPS_RTR && cur != RY_QPS_RTS) || !attr)
			return -EINVAL;
		to_rts(qp, attr);
		break;
	case RY_QPS_ERR:
		ry__soft_qp_error(qp, RY_WC_FLUSHED);
		ry__soft_qp_kick(qp); /* its timers are off */
		return 0;
	default:
		return -EINVAL;
	}
	if (rc)
		return rc;
	ry__soft_qp_kick(qp); /* timers may have changed */
	RY_DBG("soft", "qp 0x%x: %s -> %s", base->qp_num, ry_qp_state_str(cur),
	       ry_qp_state_str(state));
	base->state = state;
	return 0;
}

static uint32_t wr_npkts(const struct ry__soft_qp *qp, uint32_t len)
{
	return len ? (len + qp->pmtu - 1) / qp->pmtu : 1;
}

int ry__soft_post_send(struct ry_qp *base, const struct ry_send_wr *wr,
		       unsigned n)
{
	struct ry__soft_qp *qp = to_sqp(base);
	uint32_t need;
	bool idle, was_empty;
	int rc;

	for (unsigned i = 0; i < n; i++)
		if ((unsigned)wr[i].opcode > RY_WR_SEND_IMM ||
		    wr[i].sge.length > RY__SOFT_MAX_MSG ||
		    (qp->pmtu &&
		     wr_npkts(qp, wr[i].sge.length) > RY__SOFT_WR_MAX_PKTS))
			return -EINVAL;
	if (base->state == RY_QPS_ERR) {
		/* verbs: in ERR a new WR completes at once, flushed */
		rc = ry__soft_cq_take(qp, n);
		if (rc)
			return rc;
		for (unsigned i = 0; i < n; i++) {
			struct ry__soft_wqe w = {.wr = wr[i]};

			ry__soft_wqe_complete(qp, &w, RY_WC_FLUSHED);
		}
		return 0; /* their completions raised the fd */
	}
	if (base->state != RY_QPS_RTS)
		return -EINVAL;
	need = qp->sq_tail - qp->sq_head + n;
	if (need > qp->sq_max)
		return -ENOMEM;
	if (need > qp->sq_size && (rc = sq_grow(qp, need)))
		return rc;
	rc = ry__soft_cq_take(qp, n);
	if (rc)
		return rc;
	was_empty = qp->sq_head == qp->sq_tail;
	idle = qp->req.idx == qp->sq_tail && qp->comp.psn == qp->req.max_psn &&
	       !qp->comp.rnr_until;
	for (unsigned i = 0; i < n; i++) {
		struct ry__soft_wqe *w =
		    &qp->sq[ry__ring_slot(qp->sq_tail++, qp->sq_size)];

		w->wr = wr[i];
		w->first_psn = qp->post_psn;
		w->npkts = wr_npkts(qp, wr[i].sge.length);
		w->done = false;
		qp->post_psn =
		    ry__soft_psn_add(qp->post_psn, (int32_t)w->npkts);
	}
	/*
	 * A QP with nothing in flight sends at once (sends_idle): a lone
	 * request (depth 1, a message) needs no progress call.  A busy one
	 * leaves it to progress, which sends everything posted since in one
	 * batch.  The retransmit clock starts at the next progress call, as
	 * if the packets had gone out there (soft_req.c starts it): that call
	 * receives first, so an owner descheduled right after posting does
	 * not time out on an ACK its peer has long sent; it comes with the
	 * ACK, or else with the owner's next round (its tick).  Whatever was
	 * not sent here, on a QP whose send queue was empty (so that its
	 * owner may not call progress for it), raises the fd.
	 */
	ry__soft_qp_kick(qp);
	if (idle) {
		struct ry__soft_rail *r = qp_rail(qp);

		r->now = ry__now_ns();
		ry__soft_req_run(qp);
		ry__soft_tx_flush(r);
		qp->comp.deadline = 0;
	}
	if (was_empty && qp->req.idx != qp->sq_tail)
		ry__soft_fd_raise(qp_rail(qp));
	return 0;
}

int ry__soft_test_set_psn(struct ry_qp *base, uint32_t psn)
{
	if ((base->state != RY_QPS_RESET && base->state != RY_QPS_INIT) ||
	    (psn & ~RY__SOFT_PSN_MASK))
		return -EINVAL;
	base->local.psn = psn;
	return 0;
}
