// SPDX-License-Identifier: BSD-2-Clause
/*
 * The loop rail (see loop.h).  One global lock covers the registry and every
 * loop rail's state, because a post on one rail writes into another rail's
 * memory, SRQ and CQ.  The null provider takes it too: its SENDs do cross
 * rails, and the benchmark should pay what a real provider's CQ lock costs.
 *
 * Lock order: the manager's lock, then loop_lock (never the reverse: the
 * loop rail calls nothing outside itself).
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/eventfd.h>

#include "tests/loop/loop.h"
#include "src/util/clock.h"
#include "src/util/compiler.h"
#include "src/util/log.h"
#include "src/util/queue.h"
#include "src/util/random.h"

static const struct ry_rail_ops loop_ops, null_ops;

struct loop_pend {
	struct ry_send_wr lp_wr;
	struct loop_pend *lp_next;
};

/* A packet "in the network" while a cable is pulled (ry_loop_hold). */
struct loop_pkt {
	uint32_t pk_src_qpn, pk_dst_qpn;
	struct ry_send_wr pk_wr;
	struct loop_pkt *pk_next;
	unsigned char pk_data[];
};

/* A CQ of a null rail's own making (create_cq), with a lock of its own:
 * the contexts' QPs post and poll without the global loop_lock. */
struct loop_cq {
	struct ry_cq lc_base;
	pthread_mutex_t lc_lock;
	struct ry_wc *lc_ring;
	unsigned lc_head, lc_count, lc_cap;
	unsigned lc_nqps;
	struct loop_cq *lc_next;
} __attribute__((aligned(64))); /* two contexts' CQs share no line */

struct loop_qp {
	struct ry_qp lq_base;
	struct loop_cq *lq_cq;
	struct ry_qp_attr lq_attr;
	unsigned lq_access;
	/* WRs posted into a pulled cable, in order, all unacknowledged */
	struct loop_pend *lq_pend_head, *lq_pend_tail;
	uint64_t lq_pend_deadline;
	struct loop_qp *lq_next;
};

struct loop_mr {
	struct ry_mr lm_base;
	struct loop_mr *lm_next;
};

struct loop_pd {
	struct ry_pd lpd_base;
};

struct loop_rail {
	struct ry_rail lr_base;
	char lr_addr[RY_ADDR_MAX];
	bool lr_null;
	bool lr_hold;
	int lr_efd;
	atomic_bool lr_efd_armed;
	struct loop_cq *lr_cqs;
	_Atomic uint64_t lr_progress_calls; /* ry_loop_progress_calls() */
	atomic_uint lr_fail_posts;	    /* ry_loop_fail_posts() */
	atomic_uint lr_fail_recvs;	    /* ry_loop_fail_recvs() */
	unsigned lr_port_errors;	    /* ry_loop_port_errors() */
	enum ry_link_state lr_link;
	struct ry_fault lr_fault;
	struct ry_wc *lr_cq;
	unsigned lr_cq_head, lr_cq_count, lr_cq_cap;
	struct ry_recv_wr *lr_srq;
	unsigned lr_srq_head, lr_srq_count, lr_srq_cap;
	struct ry_rail_event lr_ev[64];
	unsigned lr_ev_head, lr_ev_count;
	struct loop_mr *lr_mrs;
	struct loop_qp *lr_qps;
	struct loop_pkt *lr_held_head, *lr_held_tail;
	struct ry_rail_stats lr_stats;
	struct loop_rail *lr_next;
};

static pthread_mutex_t loop_lock = PTHREAD_MUTEX_INITIALIZER;
static atomic_bool loop_sends_alone;

void ry_loop_sends_alone(bool on)
{
	atomic_store(&loop_sends_alone, on);
}

static struct loop_rail *loop_rails;

static inline struct loop_rail *to_lr(struct ry_rail *r)
{
	return container_of(r, struct loop_rail, lr_base);
}

static inline struct loop_qp *to_lq(struct ry_qp *q)
{
	return container_of(q, struct loop_qp, lq_base);
}

static void efd_signal(struct loop_rail *lr)
{
	uint64_t one = 1;

	if (atomic_load_explicit(&lr->lr_efd_armed, memory_order_relaxed) ||
	    atomic_exchange(&lr->lr_efd_armed, true))
		return;
	if (write(lr->lr_efd, &one, sizeof(one)) < 0)
		RY_DBG("loop", "rail %s: eventfd write: %m", lr->lr_base.name);
}

static void efd_clear(struct loop_rail *lr)
{
	uint64_t v;

	if (!atomic_load(&lr->lr_efd_armed) || lr->lr_cqs)
		return;
	atomic_store(&lr->lr_efd_armed, false);
	if (read(lr->lr_efd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		RY_DBG("loop", "rail %s: eventfd read: %m", lr->lr_base.name);
}

/* loop_lock held: every CQ of lr's own making empty. */
static bool cqs_empty(struct loop_rail *lr)
{
	for (struct loop_cq *c = lr->lr_cqs; c; c = c->lc_next) {
		unsigned n;

		pthread_mutex_lock(&c->lc_lock);
		n = c->lc_count;
		pthread_mutex_unlock(&c->lc_lock);
		if (n)
			return false;
	}
	return true;
}

/*
 * loop_lock held, the rail's own CQ and events empty: the fd is readable
 * while any CQ of the rail holds a completion (rails/rail.h), so it is
 * cleared once they are all empty, then they are looked at again: a push
 * that found it still armed (and so did not signal) is seen then.
 */
static void efd_settle(struct loop_rail *lr)
{
	uint64_t v;

	if (!atomic_load(&lr->lr_efd_armed) || !cqs_empty(lr))
		return;
	atomic_store(&lr->lr_efd_armed, false);
	if (read(lr->lr_efd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		RY_DBG("loop", "rail %s: eventfd read: %m", lr->lr_base.name);
	if (!cqs_empty(lr))
		efd_signal(lr);
}

static int grow(void **arr, unsigned *cap, unsigned head, unsigned count,
		size_t elem)
{
	unsigned ncap = *cap ? *cap * 2 : 256;
	unsigned char *n = malloc(ncap * elem);
	unsigned i;

	if (!n)
		return -ENOMEM;
	for (i = 0; i < count; i++)
		memcpy(n + i * elem,
		       (unsigned char *)*arr + ((head + i) % *cap) * elem,
		       elem);
	free(*arr);
	*arr = n;
	*cap = ncap;
	return 0;
}

static void cq_push(struct loop_rail *lr, const struct ry_wc *wc)
{
	if (lr->lr_cq_count == lr->lr_cq_cap) {
		if (grow((void **)&lr->lr_cq, &lr->lr_cq_cap, lr->lr_cq_head,
			 lr->lr_cq_count, sizeof(*wc))) {
			RY_ERR("loop", "rail %s: CQ overflow, completion lost",
			       lr->lr_base.name);
			return;
		}
		lr->lr_cq_head = 0;
	}
	lr->lr_cq[(lr->lr_cq_head + lr->lr_cq_count++) % lr->lr_cq_cap] = *wc;
	efd_signal(lr);
}

static void qcq_push(struct loop_rail *lr, struct loop_qp *q,
		     const struct ry_wc *wc)
{
	struct loop_cq *c = q->lq_cq;

	if (!c) {
		cq_push(lr, wc);
		return;
	}
	pthread_mutex_lock(&c->lc_lock);
	if (c->lc_count == c->lc_cap) {
		if (grow((void **)&c->lc_ring, &c->lc_cap, c->lc_head,
			 c->lc_count, sizeof(*wc))) {
			pthread_mutex_unlock(&c->lc_lock);
			return;
		}
		c->lc_head = 0;
	}
	c->lc_ring[(c->lc_head + c->lc_count++) % c->lc_cap] = *wc;
	pthread_mutex_unlock(&c->lc_lock);
	efd_signal(lr);
}

static void send_wc(struct loop_rail *lr, struct loop_qp *q,
		    const struct ry_send_wr *wr, enum ry_wc_status st)
{
	static const enum ry_wc_opcode opc[] = {
	    [RY_WR_RDMA_WRITE] = RY_WC_RDMA_WRITE,
	    [RY_WR_RDMA_WRITE_IMM] = RY_WC_RDMA_WRITE,
	    [RY_WR_RDMA_READ] = RY_WC_RDMA_READ,
	    [RY_WR_SEND] = RY_WC_SEND,
	    [RY_WR_SEND_IMM] = RY_WC_SEND,
	};
	struct ry_wc wc = {
	    .wr_id = wr->wr_id,
	    .status = st,
	    .opcode = opc[wr->opcode],
	    .byte_len = wr->sge.length,
	    .qp_num = q->lq_base.qp_num,
	};

	qcq_push(lr, q, &wc);
}

static void ev_push(struct loop_rail *lr, enum ry_rail_event_type t)
{
	struct ry_rail_event *ev;

	if (lr->lr_ev_count == 64) /* oldest is least useful */
		lr->lr_ev_head = (lr->lr_ev_head + 1) % 64, lr->lr_ev_count--;
	ev = &lr->lr_ev[(lr->lr_ev_head + lr->lr_ev_count++) % 64];
	ev->type = t;
	ev->qpn = 0;
	ev->time_ns = ry__now_ns();
	efd_signal(lr);
}

/* Flush everything pending on q, the head with head_st. */
static void qp_to_err(struct loop_rail *lr, struct loop_qp *q,
		      enum ry_wc_status head_st)
{
	struct loop_pend *p;

	q->lq_base.state = RY_QPS_ERR;
	while ((p = q->lq_pend_head)) {
		q->lq_pend_head = p->lp_next;
		send_wc(lr, q, &p->lp_wr, head_st);
		head_st = RY_WC_FLUSHED;
		free(p);
	}
	q->lq_pend_tail = NULL;
}

static void check_deadlines(struct loop_rail *lr)
{
	uint64_t now = 0;
	struct loop_qp *q;

	for (q = lr->lr_qps; q; q = q->lq_next) {
		if (!q->lq_pend_head)
			continue;
		if (!now)
			now = ry__now_ns();
		if (now >= q->lq_pend_deadline) {
			lr->lr_stats.retransmits += q->lq_attr.retry_cnt;
			qp_to_err(lr, q, RY_WC_RETRY_EXCEEDED);
		}
	}
}

static struct loop_qp *find_qp(uint32_t qpn, struct loop_rail **lr_p)
{
	struct loop_rail *lr;
	struct loop_qp *q;

	for (lr = loop_rails; lr; lr = lr->lr_next)
		for (q = lr->lr_qps; q; q = q->lq_next)
			if (q->lq_base.qp_num == qpn) {
				*lr_p = lr;
				return q;
			}
	return NULL;
}

static bool cable_cut(const struct loop_rail *lr)
{
	return lr->lr_link == RY_LINK_DOWN || lr->lr_fault.drop_all;
}

static struct loop_mr *find_mr(struct loop_rail *lr, uint32_t key, bool rkey)
{
	struct loop_mr *m;

	for (m = lr->lr_mrs; m; m = m->lm_next)
		if ((rkey ? m->lm_base.rkey : m->lm_base.lkey) == key)
			return m;
	return NULL;
}

static bool in_bounds(const struct ry_mr *m, uint64_t addr, uint64_t len)
{
	uint64_t base = (uintptr_t)m->addr;

	return addr >= base && len <= m->length &&
	       addr - base <= m->length - len;
}

/* The responder's checks on an RDMA request; true when it may proceed. */
static struct loop_mr *remote_mr(struct loop_rail *dlr,
				 const struct ry_send_wr *wr, unsigned need)
{
	struct loop_mr *m;

	if (!wr->sge.length)
		return NULL;
	m = find_mr(dlr, wr->rkey, true);
	if (!m || !(m->lm_base.access & need) ||
	    !in_bounds(&m->lm_base, wr->remote_addr, wr->sge.length))
		return NULL;
	return m;
}

/* One of the n that ry_loop_fail_posts() or ry_loop_fail_recvs() asked
 * to fail, if any are left. */
static bool take_one(atomic_uint *left)
{
	unsigned n = atomic_load(left);

	while (n && !atomic_compare_exchange_weak(left, &n, n - 1))
		;
	return n != 0;
}

/* Consume a receive on dlr for a SEND or WRITE_IMM from src to dq. */
static enum ry_wc_status deliver_recv(struct loop_rail *dlr, struct loop_qp *dq,
				      const struct ry_send_wr *wr,
				      const void *data)
{
	struct ry_recv_wr rwr;
	struct ry_wc wc = {0};
	bool is_send = wr->opcode == RY_WR_SEND || wr->opcode == RY_WR_SEND_IMM;

	if (!dlr->lr_srq_count)
		return RY_WC_RNR_RETRY_EXCEEDED;
	rwr = dlr->lr_srq[dlr->lr_srq_head];
	dlr->lr_srq_head = (dlr->lr_srq_head + 1) % dlr->lr_srq_cap;
	dlr->lr_srq_count--;
	wc.wr_id = rwr.wr_id;
	wc.qp_num = dq->lq_base.qp_num;
	if (is_send) {
		wc.opcode = RY_WC_RECV;
		if (wr->sge.length > rwr.sge.length) {
			wc.status = RY_WC_LOC_LEN;
			qcq_push(dlr, dq, &wc);
			return RY_WC_REM_INVALID_REQ;
		}
		if (take_one(&dlr->lr_fail_recvs)) {
			/* a responder error: its QP goes to ERR too */
			wc.status = RY_WC_LOC_LEN;
			qcq_push(dlr, dq, &wc);
			qp_to_err(dlr, dq, RY_WC_FLUSHED);
			return RY_WC_REM_INVALID_REQ;
		}
		memcpy((void *)(uintptr_t)rwr.sge.addr, data, wr->sge.length);
		wc.byte_len = wr->sge.length;
	} else {
		wc.opcode = RY_WC_RECV_RDMA_IMM;
		wc.byte_len = wr->sge.length;
	}
	if (wr->opcode == RY_WR_SEND_IMM ||
	    wr->opcode == RY_WR_RDMA_WRITE_IMM) {
		wc.flags = RY_WC_WITH_IMM;
		wc.imm_data = wr->imm_data;
	}
	qcq_push(dlr, dq, &wc);
	dlr->lr_stats.rx_packets++;
	dlr->lr_stats.rx_bytes += wr->sge.length;
	return RY_WC_SUCCESS;
}

/*
 * Execute one request at the responder.  data is the payload for WRITE and
 * SEND (the sender's buffer, or a held packet's copy).
 */
static enum ry_wc_status execute(struct loop_rail *dlr, struct loop_qp *dq,
				 const struct ry_send_wr *wr, const void *data)
{
	struct loop_mr *m;

	switch (wr->opcode) {
	case RY_WR_RDMA_WRITE:
	case RY_WR_RDMA_WRITE_IMM:
		if (wr->sge.length) {
			m = remote_mr(dlr, wr, RY_ACCESS_REMOTE_WRITE);
			if (!m || !(dq->lq_access & RY_ACCESS_REMOTE_WRITE)) {
				dlr->lr_stats.rx_access_err++;
				return RY_WC_REM_ACCESS;
			}
			memcpy((void *)(uintptr_t)wr->remote_addr, data,
			       wr->sge.length);
		}
		dlr->lr_stats.rx_packets++;
		dlr->lr_stats.rx_bytes += wr->sge.length;
		if (wr->opcode == RY_WR_RDMA_WRITE_IMM)
			return deliver_recv(dlr, dq, wr, data);
		return RY_WC_SUCCESS;
	case RY_WR_RDMA_READ:
		if (!wr->sge.length)
			return RY_WC_SUCCESS;
		m = remote_mr(dlr, wr, RY_ACCESS_REMOTE_READ);
		if (!m || !(dq->lq_access & RY_ACCESS_REMOTE_READ)) {
			dlr->lr_stats.rx_access_err++;
			return RY_WC_REM_ACCESS;
		}
		memcpy((void *)(uintptr_t)wr->sge.addr,
		       (void *)(uintptr_t)wr->remote_addr, wr->sge.length);
		dlr->lr_stats.rx_packets++;
		return RY_WC_SUCCESS;
	case RY_WR_SEND:
	case RY_WR_SEND_IMM:
		return deliver_recv(dlr, dq, wr, data);
	}
	return RY_WC_REM_INVALID_REQ;
}

static void hold_packet(struct loop_rail *lr, struct loop_qp *q,
			const struct ry_send_wr *wr)
{
	size_t len = wr->opcode == RY_WR_RDMA_READ ? 0 : wr->sge.length;
	struct loop_pkt *pk = malloc(sizeof(*pk) + len);

	if (!pk)
		return; /* a lost packet is still a lost packet */
	pk->pk_src_qpn = q->lq_base.qp_num;
	pk->pk_dst_qpn = q->lq_attr.remote.qpn;
	pk->pk_wr = *wr;
	memcpy(pk->pk_data, (void *)(uintptr_t)wr->sge.addr, len);
	ry__sq_push_tail(lr->lr_held_head, lr->lr_held_tail, pk, pk_next);
}

static int pend(struct loop_rail *lr, struct loop_qp *q,
		const struct ry_send_wr *wr)
{
	struct loop_pend *p = malloc(sizeof(*p));

	if (!p)
		return -ENOMEM;
	p->lp_wr = *wr;
	if (!q->lq_pend_head) {
		uint64_t t = (uint64_t)q->lq_attr.ack_timeout_us *
			     (q->lq_attr.retry_cnt + 1);

		q->lq_pend_deadline = ry__now_ns() + t * 1000;
	}
	ry__sq_push_tail(q->lq_pend_head, q->lq_pend_tail, p, lp_next);
	if (lr->lr_hold)
		hold_packet(lr, q, wr);
	return 0;
}

void ry_loop_fail_posts(struct ry_rail *rail, unsigned n)
{
	atomic_store(&to_lr(rail)->lr_fail_posts, n);
}

void ry_loop_fail_recvs(struct ry_rail *rail, unsigned n)
{
	atomic_store(&to_lr(rail)->lr_fail_recvs, n);
}

static int post_send_loop(struct ry_qp *qp, const struct ry_send_wr *wr,
			  unsigned n)
{
	struct loop_qp *q = to_lq(qp);
	struct loop_rail *lr = to_lr(qp->pd->rail);
	struct loop_rail *dlr;
	struct loop_qp *dq;
	enum ry_wc_status st;
	unsigned i;
	int ret = 0;

	if (qp->state != RY_QPS_RTS && qp->state != RY_QPS_ERR)
		return -EINVAL;
	pthread_mutex_lock(&loop_lock);
	for (i = 0; i < n; i++, wr++) {
		if (qp->state == RY_QPS_ERR) {
			send_wc(lr, q, wr, RY_WC_FLUSHED);
			continue;
		}
		lr->lr_stats.tx_packets++;
		lr->lr_stats.tx_bytes += wr->sge.length;
		dq = NULL;
		if (!q->lq_pend_head && !cable_cut(lr))
			dq = find_qp(q->lq_attr.remote.qpn, &dlr);
		if (!dq || cable_cut(dlr) ||
		    (dq->lq_base.state != RY_QPS_RTR &&
		     dq->lq_base.state != RY_QPS_RTS) ||
		    dq->lq_attr.remote.qpn != qp->qp_num) {
			/* nobody answers: the transport retries, then gives up
			 */
			ret = pend(lr, q, wr);
			if (ret)
				break;
			continue;
		}
		st = execute(dlr, dq, wr, (void *)(uintptr_t)wr->sge.addr);
		send_wc(lr, q, wr, st);
		if (st != RY_WC_SUCCESS)
			qp_to_err(lr, q, RY_WC_FLUSHED);
	}
	pthread_mutex_unlock(&loop_lock);
	return ret;
}

static int loop_post_send(struct ry_qp *qp, const struct ry_send_wr *wr,
			  unsigned n)
{
	if (take_one(&to_lr(qp->pd->rail)->lr_fail_posts))
		return -EIO;
	return post_send_loop(qp, wr, n);
}

/*
 * Null mode: RDMA WRITE and READ complete at once and move nothing.  SENDs
 * still go through the loop path, so probes and heartbeats arrive and
 * connections come up as on a real rail.
 */
static int null_post_send(struct ry_qp *qp, const struct ry_send_wr *wr,
			  unsigned n)
{
	struct loop_rail *lr = to_lr(qp->pd->rail);
	struct loop_qp *q = to_lq(qp);
	enum ry_wc_status st;
	unsigned i;
	int ret;

	if (qp->state != RY_QPS_RTS && qp->state != RY_QPS_ERR)
		return -EINVAL;
	if (take_one(&lr->lr_fail_posts))
		return -EIO;
	for (i = 0; i < n; i++) {
		if (wr[i].opcode == RY_WR_SEND ||
		    wr[i].opcode == RY_WR_SEND_IMM) {
			ret = post_send_loop(qp, &wr[i], 1);
			if (ret)
				return ret;
			continue;
		}
		if (q->lq_cq) { /* the CQ's lock once per run */
			struct loop_cq *c = q->lq_cq;
			struct ry_wc w = {0};

			st = qp->state == RY_QPS_ERR ? RY_WC_FLUSHED
						     : RY_WC_SUCCESS;
			pthread_mutex_lock(&c->lc_lock);
			for (; i < n && wr[i].opcode != RY_WR_SEND &&
			       wr[i].opcode != RY_WR_SEND_IMM;
			     i++) {
				if (c->lc_count == c->lc_cap) {
					if (grow((void **)&c->lc_ring,
						 &c->lc_cap, c->lc_head,
						 c->lc_count, sizeof(w)))
						break;
					c->lc_head = 0; /* grown: from 0 */
				}
				w.wr_id = wr[i].wr_id;
				w.status = st;
				w.opcode = wr[i].opcode == RY_WR_RDMA_READ
					       ? RY_WC_RDMA_READ
					       : RY_WC_RDMA_WRITE;
				w.byte_len = wr[i].sge.length;
				w.qp_num = qp->qp_num;
				c->lc_ring[(c->lc_head + c->lc_count++) %
					   c->lc_cap] = w;
			}
			pthread_mutex_unlock(&c->lc_lock);
			efd_signal(lr);
			i--;
			continue;
		}
		/* one lock for the run of RDMA WRs, as a doorbell would */
		if (!q->lq_cq)
			pthread_mutex_lock(&loop_lock);
		st = qp->state == RY_QPS_ERR ? RY_WC_FLUSHED : RY_WC_SUCCESS;
		for (; i < n && wr[i].opcode != RY_WR_SEND &&
		       wr[i].opcode != RY_WR_SEND_IMM;
		     i++)
			send_wc(lr, q, &wr[i], st);
		if (!q->lq_cq)
			pthread_mutex_unlock(&loop_lock);
		i--;
	}
	return 0;
}

static int loop_poll_cq(struct ry_rail *rail, struct ry_wc *wc, int n)
{
	struct loop_rail *lr = to_lr(rail);
	int i = 0;

	pthread_mutex_lock(&loop_lock);
	check_deadlines(lr);
	while (i < n && lr->lr_cq_count) {
		wc[i++] = lr->lr_cq[lr->lr_cq_head];
		if (++lr->lr_cq_head == lr->lr_cq_cap)
			lr->lr_cq_head = 0;
		lr->lr_cq_count--;
	}
	if (!lr->lr_cq_count && !lr->lr_ev_count)
		efd_clear(lr);
	pthread_mutex_unlock(&loop_lock);
	return i;
}

static int loop_post_recv(struct ry_rail *rail, const struct ry_recv_wr *wr,
			  unsigned n)
{
	struct loop_rail *lr = to_lr(rail);
	unsigned i;
	int ret = 0;

	pthread_mutex_lock(&loop_lock);
	for (i = 0; i < n; i++) {
		if (lr->lr_srq_count == lr->lr_srq_cap) {
			ret = grow((void **)&lr->lr_srq, &lr->lr_srq_cap,
				   lr->lr_srq_head, lr->lr_srq_count,
				   sizeof(*wr));
			if (ret)
				break;
			lr->lr_srq_head = 0;
		}
		lr->lr_srq[(lr->lr_srq_head + lr->lr_srq_count++) %
			   lr->lr_srq_cap] = wr[i];
	}
	pthread_mutex_unlock(&loop_lock);
	return ret;
}

#define LOOP_ABSENT 8
static char loop_absent[LOOP_ABSENT][RY_ADDR_MAX]; /* loop_lock */

void ry_loop_absent(const char *address, bool absent)
{
	int free_i = -1, i;

	pthread_mutex_lock(&loop_lock);
	for (i = 0; i < LOOP_ABSENT; i++) {
		if (!strcmp(loop_absent[i], address)) {
			if (!absent)
				loop_absent[i][0] = '\0';
			break;
		}
		if (!loop_absent[i][0] && free_i < 0)
			free_i = i;
	}
	if (i == LOOP_ABSENT && absent && free_i >= 0)
		snprintf(loop_absent[free_i], sizeof(loop_absent[free_i]), "%s",
			 address);
	pthread_mutex_unlock(&loop_lock);
}

static bool is_absent(const char *address)
{
	bool r = false;

	pthread_mutex_lock(&loop_lock);
	for (int i = 0; i < LOOP_ABSENT && !r; i++)
		r = address[0] && !strcmp(loop_absent[i], address);
	pthread_mutex_unlock(&loop_lock);
	return r;
}

static int open_common(const struct ry_rail_config *cfg, bool null,
		       struct ry_rail **rail_p)
{
	struct loop_rail *lr;

	if (is_absent(cfg->address)) {
		RY_ERR("loop", "rail %s: loop device %s not found", cfg->name,
		       cfg->address);
		return -ENODEV;
	}
	lr = calloc(1, sizeof(*lr));
	if (!lr)
		return -ENOMEM;
	lr->lr_base.ops = null ? &null_ops : &loop_ops;
	snprintf(lr->lr_base.name, sizeof(lr->lr_base.name), "%s", cfg->name);
	snprintf(lr->lr_addr, sizeof(lr->lr_addr), "%s", cfg->address);
	lr->lr_null = null;
	lr->lr_link = cfg->fault.down ? RY_LINK_DOWN : RY_LINK_UP;
	lr->lr_efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (lr->lr_efd < 0) {
		int err = -errno;

		RY_ERR("loop", "rail %s: eventfd: %m", cfg->name);
		free(lr);
		return err;
	}
	pthread_mutex_lock(&loop_lock);
	lr->lr_next = loop_rails;
	loop_rails = lr;
	pthread_mutex_unlock(&loop_lock);
	*rail_p = &lr->lr_base;
	return 0;
}

static int loop_open(const struct ry_rail_config *cfg, struct ry_rail **rail_p)
{
	return open_common(cfg, false, rail_p);
}

static int null_open(const struct ry_rail_config *cfg, struct ry_rail **rail_p)
{
	return open_common(cfg, true, rail_p);
}

static void free_qp(struct loop_qp *q)
{
	struct loop_pend *p;

	while ((p = q->lq_pend_head)) {
		q->lq_pend_head = p->lp_next;
		free(p);
	}
	free(q);
}

static void loop_close(struct ry_rail *rail)
{
	struct loop_rail *lr = to_lr(rail), **pp;
	struct loop_pkt *pk;
	struct loop_mr *m;
	struct loop_qp *q;

	pthread_mutex_lock(&loop_lock);
	for (pp = &loop_rails; *pp; pp = &(*pp)->lr_next)
		if (*pp == lr) {
			*pp = lr->lr_next;
			break;
		}
	pthread_mutex_unlock(&loop_lock);
	while ((q = lr->lr_qps)) {
		lr->lr_qps = q->lq_next;
		free_qp(q);
	}
	while ((m = lr->lr_mrs)) {
		lr->lr_mrs = m->lm_next;
		free(m);
	}
	while ((pk = lr->lr_held_head)) {
		lr->lr_held_head = pk->pk_next;
		free(pk);
	}
	free(lr->lr_cq);
	free(lr->lr_srq);
	close(lr->lr_efd);
	while (lr->lr_cqs) {
		struct loop_cq *c = lr->lr_cqs;

		lr->lr_cqs = c->lc_next;
		free(c->lc_ring);
		free(c);
	}
	free(lr);
}

static int loop_query(struct ry_rail *rail, struct ry_rail_attr *attr)
{
	struct loop_rail *lr = to_lr(rail);

	memset(attr, 0, sizeof(*attr));
	pthread_mutex_lock(&loop_lock);
	attr->link = lr->lr_link;
	pthread_mutex_unlock(&loop_lock);
	attr->mtu = 4096;
	/* the null rail completes in post_send, like an HCA; the loop rail
	 * too, but says it needs progress as the soft rail does, so that the
	 * manager's kicks are exercised on it, unless a test asks */
	attr->sends_alone = lr->lr_null || loop_sends_alone;
	/* its CQs of create_cq's have locks of their own, and a post on a QP
	 * reporting there takes only that one (or loop_lock, for a SEND) */
	attr->concurrent_qps = lr->lr_null;
	attr->max_qp_wr = 1u << 16;
	attr->max_msg_size = 1u << 31;
	return 0;
}

static int loop_fd(struct ry_rail *rail)
{
	return to_lr(rail)->lr_efd;
}

uint64_t ry_loop_progress_calls(struct ry_rail *rail)
{
	return atomic_load(&to_lr(rail)->lr_progress_calls);
}

static int loop_progress(struct ry_rail *rail)
{
	struct loop_rail *lr = to_lr(rail);

	atomic_fetch_add_explicit(&lr->lr_progress_calls, 1,
				  memory_order_relaxed);
	if (lr->lr_null)
		return 0;
	pthread_mutex_lock(&loop_lock);
	check_deadlines(lr);
	pthread_mutex_unlock(&loop_lock);
	return 0;
}

static int loop_pending(struct ry_rail *rail)
{
	struct loop_rail *lr = to_lr(rail);
	int ret;

	pthread_mutex_lock(&loop_lock);
	check_deadlines(lr);
	ret = lr->lr_cq_count || lr->lr_ev_count;
	if (!ret && lr->lr_cqs)
		efd_settle(lr); /* where the owner asks: nothing of its own */
	pthread_mutex_unlock(&loop_lock);
	return ret;
}

static int loop_get_event(struct ry_rail *rail, struct ry_rail_event *ev)
{
	struct loop_rail *lr = to_lr(rail);
	int ret = -EAGAIN;

	pthread_mutex_lock(&loop_lock);
	if (lr->lr_ev_count) {
		*ev = lr->lr_ev[lr->lr_ev_head];
		lr->lr_ev_head = (lr->lr_ev_head + 1) % 64;
		lr->lr_ev_count--;
		ret = 0;
	}
	pthread_mutex_unlock(&loop_lock);
	return ret;
}

static int loop_alloc_pd(struct ry_rail *rail, struct ry_pd **pd_p)
{
	struct loop_pd *pd = calloc(1, sizeof(*pd));

	if (!pd)
		return -ENOMEM;
	pd->lpd_base.rail = rail;
	*pd_p = &pd->lpd_base;
	return 0;
}

static int loop_dealloc_pd(struct ry_pd *pd)
{
	free(container_of(pd, struct loop_pd, lpd_base));
	return 0;
}

static int loop_reg_mr(struct ry_pd *pd, void *addr, size_t length,
		       unsigned access, struct ry_mr **mr_p)
{
	struct loop_rail *lr = to_lr(pd->rail);
	struct loop_mr *m;

	if (!addr || !length)
		return -EINVAL;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->lm_base.pd = pd;
	m->lm_base.addr = addr;
	m->lm_base.length = length;
	m->lm_base.access = access;
	pthread_mutex_lock(&loop_lock);
	do {
		uint64_t r = ry__rand64();

		m->lm_base.lkey = (uint32_t)r;
		m->lm_base.rkey = (uint32_t)(r >> 32);
	} while (!m->lm_base.rkey || find_mr(lr, m->lm_base.rkey, true) ||
		 find_mr(lr, m->lm_base.lkey, false));
	m->lm_next = lr->lr_mrs;
	lr->lr_mrs = m;
	pthread_mutex_unlock(&loop_lock);
	*mr_p = &m->lm_base;
	return 0;
}

static int loop_dereg_mr(struct ry_mr *mr)
{
	struct loop_rail *lr = to_lr(mr->pd->rail);
	struct loop_mr *m = container_of(mr, struct loop_mr, lm_base), **pp;

	pthread_mutex_lock(&loop_lock);
	for (pp = &lr->lr_mrs; *pp; pp = &(*pp)->lm_next)
		if (*pp == m) {
			*pp = m->lm_next;
			break;
		}
	pthread_mutex_unlock(&loop_lock);
	free(m);
	return 0;
}

static int loop_create_qp(struct ry_pd *pd, const struct ry_qp_init *init,
			  struct ry_qp **qp_p)
{
	struct loop_rail *lr = to_lr(pd->rail), *dummy;
	struct loop_qp *q;
	uint32_t qpn;

	/* one CQ per loop rail: no create_cq, so no CQ to name */
	if (init->cq && (init->cq->rail != pd->rail))
		return -EINVAL;
	if (init->cq && !lr->lr_null)
		return -EOPNOTSUPP;
	q = calloc(1, sizeof(*q));
	if (!q)
		return -ENOMEM;
	if (init->cq) {
		q->lq_cq = container_of(init->cq, struct loop_cq, lc_base);
		q->lq_cq->lc_nqps++;
	}
	q->lq_base.pd = pd;
	q->lq_base.context = init->context;
	q->lq_base.state = RY_QPS_RESET;
	pthread_mutex_lock(&loop_lock);
	do {
		qpn = (uint32_t)ry__rand64() & 0xffffff;
	} while (!qpn || find_qp(qpn, &dummy));
	q->lq_base.qp_num = qpn;
	q->lq_base.local.qpn = qpn;
	q->lq_base.local.psn = (uint32_t)ry__rand64() & 0xffffff;
	q->lq_base.local.cookie = ry__rand64();
	q->lq_base.local.mtu = 4096;
	q->lq_next = lr->lr_qps;
	lr->lr_qps = q;
	pthread_mutex_unlock(&loop_lock);
	*qp_p = &q->lq_base;
	return 0;
}

static int loop_modify_qp(struct ry_qp *qp, enum ry_qp_state state,
			  const struct ry_qp_attr *attr)
{
	struct loop_rail *lr = to_lr(qp->pd->rail);
	struct loop_qp *q = to_lq(qp);
	int ret = 0;

	pthread_mutex_lock(&loop_lock);
	switch (state) {
	case RY_QPS_INIT:
		if (qp->state != RY_QPS_RESET)
			goto bad;
		q->lq_access = attr->access;
		break;
	case RY_QPS_RTR:
		if (qp->state != RY_QPS_INIT)
			goto bad;
		q->lq_attr.remote = attr->remote;
		q->lq_attr.mtu = attr->mtu;
		break;
	case RY_QPS_RTS:
		if (qp->state != RY_QPS_RTR)
			goto bad;
		q->lq_attr.ack_timeout_us = attr->ack_timeout_us;
		q->lq_attr.retry_cnt = attr->retry_cnt;
		q->lq_attr.rnr_retry = attr->rnr_retry;
		break;
	case RY_QPS_ERR:
		qp_to_err(lr, q, RY_WC_FLUSHED);
		break;
	case RY_QPS_RESET:
		qp_to_err(lr, q, RY_WC_FLUSHED);
		memset(&q->lq_attr.remote, 0, sizeof(q->lq_attr.remote));
		break;
	}
	qp->state = state;
	pthread_mutex_unlock(&loop_lock);
	return ret;
bad:
	pthread_mutex_unlock(&loop_lock);
	RY_ERR("loop", "qp 0x%x: bad transition %s -> %s", qp->qp_num,
	       ry_qp_state_str(qp->state), ry_qp_state_str(state));
	return -EINVAL;
}

static int loop_destroy_qp(struct ry_qp *qp)
{
	struct loop_rail *lr = to_lr(qp->pd->rail);
	struct loop_qp *q = to_lq(qp), **pp;

	pthread_mutex_lock(&loop_lock);
	for (pp = &lr->lr_qps; *pp; pp = &(*pp)->lq_next)
		if (*pp == q) {
			*pp = q->lq_next;
			break;
		}
	pthread_mutex_unlock(&loop_lock);
	if (q->lq_cq)
		q->lq_cq->lc_nqps--;
	free_qp(q);
	return 0;
}

static int null_create_cq(struct ry_rail *rail, struct ry_cq **cq_p)
{
	struct loop_rail *lr = to_lr(rail);
	struct loop_cq *c = aligned_alloc(_Alignof(struct loop_cq), sizeof(*c));

	if (!c)
		return -ENOMEM;
	memset(c, 0, sizeof(*c));
	c->lc_base.rail = rail;
	pthread_mutex_init(&c->lc_lock, NULL);
	pthread_mutex_lock(&loop_lock);
	c->lc_next = lr->lr_cqs;
	lr->lr_cqs = c;
	pthread_mutex_unlock(&loop_lock);
	*cq_p = &c->lc_base;
	return 0;
}

static int null_destroy_cq(struct ry_cq *cq)
{
	struct loop_rail *lr = to_lr(cq->rail);
	struct loop_cq *c = container_of(cq, struct loop_cq, lc_base), **pp;

	if (c->lc_nqps)
		return -EBUSY;
	pthread_mutex_lock(&loop_lock);
	for (pp = &lr->lr_cqs; *pp; pp = &(*pp)->lc_next)
		if (*pp == c) {
			*pp = c->lc_next;
			break;
		}
	pthread_mutex_unlock(&loop_lock);
	free(c->lc_ring);
	free(c);
	return 0;
}

static int null_cq_poll(struct ry_cq *cq, struct ry_wc *wc, int n)
{
	struct loop_cq *c = container_of(cq, struct loop_cq, lc_base);
	int i = 0;

	pthread_mutex_lock(&c->lc_lock);
	while (i < n && c->lc_count) {
		wc[i++] = c->lc_ring[c->lc_head];
		if (++c->lc_head == c->lc_cap)
			c->lc_head = 0;
		c->lc_count--;
	}
	pthread_mutex_unlock(&c->lc_lock);
	return i;
}

static int null_cq_pending(struct ry_cq *cq)
{
	struct loop_cq *c = container_of(cq, struct loop_cq, lc_base);
	unsigned n;

	pthread_mutex_lock(&c->lc_lock);
	n = c->lc_count;
	pthread_mutex_unlock(&c->lc_lock);
	return n != 0;
}

static int loop_set_fault(struct ry_rail *rail, const struct ry_fault *f)
{
	struct loop_rail *lr = to_lr(rail);

	/* only the pulled cable is modelled; say so instead of ignoring */
	if (f->drop || f->duplicate || f->reorder || f->corrupt || f->delay_us)
		return -EOPNOTSUPP;
	pthread_mutex_lock(&loop_lock);
	lr->lr_fault = *f;
	pthread_mutex_unlock(&loop_lock);
	return 0;
}

static int loop_set_link(struct ry_rail *rail, enum ry_link_state state)
{
	struct loop_rail *lr = to_lr(rail);

	pthread_mutex_lock(&loop_lock);
	if (lr->lr_link != state) {
		lr->lr_link = state;
		ev_push(lr, state == RY_LINK_UP ? RY_RAIL_EV_LINK_UP
						: RY_RAIL_EV_LINK_DOWN);
	}
	pthread_mutex_unlock(&loop_lock);
	return 0;
}

void ry_loop_device_gone(struct ry_rail *rail)
{
	struct loop_rail *lr = to_lr(rail);

	pthread_mutex_lock(&loop_lock);
	if (lr->lr_link != RY_LINK_DOWN) {
		lr->lr_link = RY_LINK_DOWN;
		ev_push(lr, RY_RAIL_EV_LINK_DOWN);
	}
	ev_push(lr, RY_RAIL_EV_DEVICE_FATAL);
	pthread_mutex_unlock(&loop_lock);
}

static int loop_get_stats(struct ry_rail *rail, struct ry_rail_stats *st)
{
	struct loop_rail *lr = to_lr(rail);

	pthread_mutex_lock(&loop_lock);
	lr->lr_stats.port_errors += lr->lr_port_errors;
	*st = lr->lr_stats;
	pthread_mutex_unlock(&loop_lock);
	return 0;
}

void ry_loop_port_errors(struct ry_rail *rail, unsigned n)
{
	pthread_mutex_lock(&loop_lock);
	to_lr(rail)->lr_port_errors = n;
	pthread_mutex_unlock(&loop_lock);
}

void ry_loop_hold(struct ry_rail *rail, bool on)
{
	pthread_mutex_lock(&loop_lock);
	to_lr(rail)->lr_hold = on;
	pthread_mutex_unlock(&loop_lock);
}

int ry_loop_release_held(struct ry_rail *rail)
{
	struct loop_rail *lr = to_lr(rail), *dlr;
	struct loop_pkt *pk;
	struct loop_qp *dq;
	int landed = 0;

	pthread_mutex_lock(&loop_lock);
	while ((pk = lr->lr_held_head)) {
		lr->lr_held_head = pk->pk_next;
		dq = find_qp(pk->pk_dst_qpn, &dlr);
		/* a stale packet lands only on a QP still talking to its
		 * source; an ERR or destroyed QP drops it */
		if (dq && pk->pk_wr.opcode != RY_WR_RDMA_READ &&
		    (dq->lq_base.state == RY_QPS_RTR ||
		     dq->lq_base.state == RY_QPS_RTS) &&
		    dq->lq_attr.remote.qpn == pk->pk_src_qpn &&
		    execute(dlr, dq, &pk->pk_wr, pk->pk_data) == RY_WC_SUCCESS)
			landed++;
		else
			lr->lr_stats.rx_qp_err_dropped++;
		free(pk);
	}
	lr->lr_held_tail = NULL;
	pthread_mutex_unlock(&loop_lock);
	return landed;
}

static const struct ry_rail_ops loop_ops = {
    .alloc_pd = loop_alloc_pd,
    .close = loop_close,
    .create_qp = loop_create_qp,
    .dealloc_pd = loop_dealloc_pd,
    .dereg_mr = loop_dereg_mr,
    .destroy_qp = loop_destroy_qp,
    .fd = loop_fd,
    .get_event = loop_get_event,
    .get_stats = loop_get_stats,
    .modify_qp = loop_modify_qp,
    .name = "loop",
    .open = loop_open,
    .poll_cq = loop_poll_cq,
    .post_recv = loop_post_recv,
    .post_send = loop_post_send,
    .progress = loop_progress,
    .pending = loop_pending,
    .query = loop_query,
    .reg_mr = loop_reg_mr,
    .set_fault = loop_set_fault,
    .set_link = loop_set_link,
};

static const struct ry_rail_ops null_ops = {
    .alloc_pd = loop_alloc_pd,
    .close = loop_close,
    .create_qp = loop_create_qp,
    .dealloc_pd = loop_dealloc_pd,
    .dereg_mr = loop_dereg_mr,
    .destroy_qp = loop_destroy_qp,
    .fd = loop_fd,
    .get_event = loop_get_event,
    .get_stats = loop_get_stats,
    .modify_qp = loop_modify_qp,
    .name = "null",
    .create_cq = null_create_cq,
    .destroy_cq = null_destroy_cq,
    .cq_poll = null_cq_poll,
    .cq_pending = null_cq_pending,
    .open = null_open,
    .poll_cq = loop_poll_cq,
    .post_recv = loop_post_recv,
    .post_send = null_post_send,
    .progress = loop_progress,
    .pending = loop_pending,
    .query = loop_query,
    .reg_mr = loop_reg_mr,
    .set_fault = loop_set_fault,
    .set_link = loop_set_link,
};

int ry_loop_register(void)
{
	int ret = ry__rail_provider_register(RY_PROVIDER_LOOP, &loop_ops);

	return ret ? ret
		   : ry__rail_provider_register(RY_PROVIDER_NULL, &null_ops);
}
