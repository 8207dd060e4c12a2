// SPDX-License-Identifier: BSD-2-Clause
/*
 * The tcp rail: RC semantics over kernel TCP, one connection per QP (see
 * tcp_int.h for the file map and the connection rules).  This file holds
 * the rail: open/close, the ops table, PDs and regions, CQs, the SRQ,
 * events and progress.
 *
 * fd() is an epoll fd over the listening socket, every connection and
 * parked socket, a timerfd and an eventfd set while completions or events
 * wait that progress() did not make.  progress() takes what epoll reports
 * (accepts, HELLOs, received messages, sockets that took more), runs the
 * QPs with something to send (the active list) and the timers; what it
 * completes its caller finds by pending() (rails/rail.h, Progress), so
 * the eventfd is not written and read again for each of those.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "rails/rail_addr.h"
#include "rails/tcp/tcp_int.h"
#include "src/util/clock.h"
#include "src/util/log.h"
#include "src/util/ring.h"

/* ---- the eventfd: readable while the owner has something to take that
 * no progress() call has reported ---- */

void ry__tcp_efd_raise(struct ry__tcp_rail *r)
{
	uint64_t one = 1;

	if (!r->efd_set && write(r->efd, &one, sizeof(one)) == sizeof(one))
		r->efd_set = true;
}

static void efd_clear(struct ry__tcp_rail *r)
{
	uint64_t v;

	if (r->efd_set && (read(r->efd, &v, sizeof(v)) >= 0 || errno == EAGAIN))
		r->efd_set = false;
}

static bool rail_calm(const struct ry__tcp_rail *r)
{
	return !r->cqs_busy && r->ev_head == r->ev_tail &&
	       ry__list_empty(&r->active);
}

/* Our set, and the owner's (watch) with its tag: the two always hold the
 * same fds with the same events. */
int ry__tcp_epoll(struct ry__tcp_rail *r, int op, int fd, uint32_t events,
		  struct ry__tcp_ep *ep)
{
	struct epoll_event ev = {.events = events, .data.ptr = ep};
	int rc;

	if (epoll_ctl(r->epfd, op, fd, &ev))
		return -errno;
	if (op != EPOLL_CTL_DEL)
		ep->events = events;
	if (r->wfd < 0)
		return 0;
	ev.data.ptr = r->wtag;
	if (!epoll_ctl(r->wfd, op, fd, &ev) || op == EPOLL_CTL_DEL)
		return 0;
	rc = -errno;
	if (op == EPOLL_CTL_ADD) /* in neither */
		epoll_ctl(r->epfd, EPOLL_CTL_DEL, fd, NULL);
	return rc;
}

/*
 * Every fd in our set, for watch: the listener, timer, eventfd and
 * rtnetlink socket, the parked sockets and the QPs' connections (fd -1
 * once closed: a closed fd leaves every epoll set by itself).
 */
static int watch_move(struct ry__tcp_rail *r, int to, void *tag)
{
	struct ry__list *n;
	int rc;

	rc = ry__rail_watch_move(r->wfd, to, r->lfd, r->lep.events, tag, 0);
	rc = ry__rail_watch_move(r->wfd, to, r->tfd, r->tep.events, tag, rc);
	rc = ry__rail_watch_move(r->wfd, to, r->efd, r->eep.events, tag, rc);
	rc = ry__rail_watch_move(r->wfd, to, r->nlfd, r->nep.events, tag, rc);
	for (n = r->pend.next; n != &r->pend; n = n->next) {
		struct ry__tcp_pend *p =
		    container_of(n, struct ry__tcp_pend, link);

		rc = ry__rail_watch_move(r->wfd, to, p->fd, p->ep.events, tag,
					 rc);
	}
	for (n = r->qps.next; n != &r->qps; n = n->next) {
		struct ry__tcp_qp *qp =
		    container_of(n, struct ry__tcp_qp, link);

		rc = ry__rail_watch_move(r->wfd, to, qp->c.fd, qp->c.ep.events,
					 tag, rc);
	}
	r->wfd = to;
	r->wtag = tag;
	return rc;
}

static int tcp_watch(struct ry_rail *rail, int epfd, void *tag)
{
	struct ry__tcp_rail *r = to_trail(rail);
	int rc = watch_move(r, epfd, tag);

	if (rc) /* none of them anywhere */
		watch_move(r, -1, NULL);
	return rc;
}

/* ---- CQs ---- */

static struct ry__sw_cq *to_tcq(struct ry_cq *cq)
{
	return container_of(cq, struct ry__sw_cq, base);
}

/* Room for every send WR posted and not polled, and for every receive the
 * SRQ can hold, twice (any of them may complete on this CQ). */
int ry__tcp_cq_take(struct ry__sw_cq *cq, uint32_t n)
{
	return ry__sw_cq_take(cq, n, RY__TCP_SRQ_SIZE);
}

void ry__tcp_cq_push(struct ry__tcp_qp *qp, const struct ry_wc *wc)
{
	struct ry__sw_cq *cq = qp->cq;
	struct ry__tcp_rail *r = tqp_rail(qp);

	bool idle = ry__sw_cq_empty(cq);

	if (ry__sw_cq_push(cq, wc)) {
		RY_ERR("tcp", "rail %s: CQ overrun, completion of qp 0x%x lost",
		       r->base.name, wc->qp_num);
		return;
	}
	if (idle)
		r->cqs_busy++;
	/* inside progress() the caller asks pending() next */
	if (!r->in_progress)
		ry__tcp_efd_raise(r);
}

static int cq_poll(struct ry__tcp_rail *r, struct ry__sw_cq *cq,
		   struct ry_wc *wc, int n)
{
	int i;

	if (ry__sw_cq_empty(cq))
		return 0;
	i = ry__sw_cq_poll(cq, wc, n);
	if (ry__sw_cq_empty(cq) && !--r->cqs_busy && rail_calm(r))
		efd_clear(r);
	return i;
}

static int tcp_poll_cq(struct ry_rail *rail, struct ry_wc *wc, int n)
{
	struct ry__tcp_rail *r = to_trail(rail);

	return cq_poll(r, &r->cq0, wc, n);
}

static int tcp_cq_poll(struct ry_cq *cq, struct ry_wc *wc, int n)
{
	return cq_poll(to_trail(cq->rail), to_tcq(cq), wc, n);
}

static int tcp_cq_pending(struct ry_cq *cq)
{
	return !ry__sw_cq_empty(to_tcq(cq));
}

static int tcp_create_cq(struct ry_rail *rail, struct ry_cq **cq_p)
{
	return ry__sw_cq_new(rail, &to_trail(rail)->cqs, RY__TCP_SRQ_SIZE,
			     cq_p);
}

static void cq_free(struct ry__tcp_rail *r, struct ry__sw_cq *cq)
{
	if (!ry__sw_cq_empty(cq) && !--r->cqs_busy && rail_calm(r))
		efd_clear(r);
	ry__sw_cq_drop(cq);
	if (cq != &r->cq0) {
		ry__list_del(&cq->link);
		free(cq);
	}
}

static int tcp_destroy_cq(struct ry_cq *base)
{
	struct ry__sw_cq *cq = to_tcq(base);

	if (cq->n_qps)
		return -EBUSY;
	cq_free(to_trail(base->rail), cq);
	return 0;
}

/* ---- SRQ and events ---- */

static int tcp_post_recv(struct ry_rail *rail, const struct ry_recv_wr *wr,
			 unsigned n)
{
	struct ry__tcp_rail *r = to_trail(rail);

	if (ry__ring_used(r->srq_head, r->srq_tail) + n > RY__TCP_SRQ_SIZE)
		return -ENOMEM;
	for (unsigned i = 0; i < n; i++)
		r->srq[ry__ring_slot(r->srq_tail++, RY__TCP_SRQ_SIZE)] = wr[i];
	return 0;
}

bool ry__tcp_srq_pop(struct ry__tcp_rail *r, struct ry_recv_wr *wr)
{
	if (r->srq_head == r->srq_tail)
		return false;
	*wr = r->srq[ry__ring_slot(r->srq_head++, RY__TCP_SRQ_SIZE)];
	return true;
}

void ry__tcp_event(struct ry__tcp_rail *r, enum ry_rail_event_type type,
		   uint32_t qpn)
{
	struct ry_rail_event *e;

	if (ry__ring_full(r->ev_head, r->ev_tail, RY__TCP_EVENTS))
		r->ev_head++; /* the oldest goes: the owner re-reads state */
	e = &r->ev[ry__ring_slot(r->ev_tail++, RY__TCP_EVENTS)];
	e->type = type;
	e->qpn = qpn;
	/* now, not the last progress's time: set_link runs outside it */
	e->time_ns = ry__now_ns();
	if (!r->in_progress)
		ry__tcp_efd_raise(r);
}

static int tcp_get_event(struct ry_rail *rail, struct ry_rail_event *ev)
{
	struct ry__tcp_rail *r = to_trail(rail);

	if (r->ev_head == r->ev_tail)
		return -EAGAIN;
	*ev = r->ev[ry__ring_slot(r->ev_head++, RY__TCP_EVENTS)];
	if (rail_calm(r))
		efd_clear(r);
	return 0;
}

/* ---- PDs and regions (sw_mr.h) ---- */

static int tcp_alloc_pd(struct ry_rail *rail, struct ry_pd **pd_p)
{
	return ry__sw_alloc_pd(&to_trail(rail)->mem, rail, pd_p);
}

static int tcp_dealloc_pd(struct ry_pd *pd)
{
	return ry__sw_dealloc_pd(&to_trail(pd->rail)->mem, pd);
}

static int tcp_reg_mr(struct ry_pd *pd, void *addr, size_t length,
		      unsigned access, struct ry_mr **mr_p)
{
	return ry__sw_reg_mr(&to_trail(pd->rail)->mem, pd, addr, length, access,
			     mr_p);
}

static int tcp_dereg_mr(struct ry_mr *mr)
{
	ry__sw_dereg_mr(&to_trail(mr->pd->rail)->mem, mr);
	return 0;
}

/* ---- progress ---- */

void ry__tcp_kick(struct ry__tcp_qp *qp)
{
	if (qp->flags & RY__TCP_QF_ACTIVE)
		return;
	qp->flags |= RY__TCP_QF_ACTIVE;
	ry__list_add_tail(&tqp_rail(qp)->active, &qp->active);
}

void ry__tcp_timed(struct ry__tcp_qp *qp)
{
	if (qp->flags & RY__TCP_QF_RNR)
		return;
	qp->flags |= RY__TCP_QF_RNR;
	ry__list_add_tail(&tqp_rail(qp)->timed, &qp->timed);
}

/*
 * The timerfd only ever moves earlier, as the soft rail's: the answer
 * timer moves later with every byte received, and re-arming for it cost a
 * timerfd_settime in every progress call, on both sides of every round
 * trip.  A timer left armed too early fires once for nothing; progress
 * then finds nothing due and arms the real deadline.
 */
static void arm_timer(struct ry__tcp_rail *r)
{
	uint64_t next = 0;
	struct ry__list *n;
	struct itimerspec its = {0};

	for (n = r->timed.next; n != &r->timed; n = n->next) {
		struct ry__tcp_qp *qp =
		    container_of(n, struct ry__tcp_qp, timed);
		uint64_t t = ry__tcp_qp_next_timer(qp);

		if (t && (!next || t < next))
			next = t;
	}
	for (n = r->pend.next; n != &r->pend; n = n->next) {
		struct ry__tcp_pend *p =
		    container_of(n, struct ry__tcp_pend, link);

		if (!next || p->deadline < next)
			next = p->deadline;
	}
	if (!next || (r->timer_armed && r->timer_armed <= next))
		return;
	its.it_value.tv_sec = (time_t)(next / 1000000000);
	its.it_value.tv_nsec = (long)(next % 1000000000);
	if (timerfd_settime(r->tfd, TFD_TIMER_ABSTIME, &its, NULL) == 0)
		r->timer_armed = next;
}

static void run_timers(struct ry__tcp_rail *r)
{
	struct ry__list *n, *nx;

	for (n = r->timed.next; n != &r->timed; n = nx) {
		struct ry__tcp_qp *qp =
		    container_of(n, struct ry__tcp_qp, timed);

		nx = n->next;
		ry__tcp_qp_timers(qp);
	}
	for (n = r->pend.next; n != &r->pend; n = nx) {
		struct ry__tcp_pend *p =
		    container_of(n, struct ry__tcp_pend, link);

		nx = n->next;
		if (p->deadline <= r->now)
			ry__tcp_pend_close(r, p);
	}
}

static int tcp_progress(struct ry_rail *rail)
{
	struct ry__tcp_rail *r = to_trail(rail);
	struct epoll_event evs[64];
	int n;

	r->now = ry__now_ns();
	if (r->last_progress) {
		uint64_t d = r->now - r->last_progress;

		r->lclock += d < RY__TCP_STALL_NS ? d : RY__TCP_STALL_NS;
	}
	r->last_progress = r->now;
	r->in_progress = true;
	n = epoll_wait(r->epfd, evs, 64, 0);
	for (int i = 0; i < n; i++) {
		struct ry__tcp_ep *ep = evs[i].data.ptr;
		uint64_t v;

		switch (ep->kind) {
		case RY__TCP_EP_LISTEN:
			ry__tcp_accept(r);
			break;
		case RY__TCP_EP_TIMER:
			if (read(r->tfd, &v, sizeof(v)) < 0) {
				/* EAGAIN: re-armed since it fired */
			}
			r->timer_armed = 0;
			break;
		case RY__TCP_EP_EVENT:
			break; /* the owner's: poll_cq and get_event clear it */
		case RY__TCP_EP_LINK:
			ry__tcp_link_run(r);
			break;
		case RY__TCP_EP_PEND:
			ry__tcp_pend_rx(
			    r, container_of(ep, struct ry__tcp_pend, ep));
			break;
		case RY__TCP_EP_CONN:
			ry__tcp_conn_event(
			    container_of(ep, struct ry__tcp_qp, c.ep),
			    evs[i].events);
			break;
		}
	}
	run_timers(r);
	while (!ry__list_empty(&r->active)) {
		struct ry__tcp_qp *qp =
		    container_of(r->active.next, struct ry__tcp_qp, active);

		ry__list_del(&qp->active);
		qp->flags &= ~RY__TCP_QF_ACTIVE;
		ry__tcp_conn_tx(qp);
	}
	arm_timer(r);
	r->in_progress = false;
	/* what waits now is reported by pending(): the eventfd, raised for
	 * what came between progress calls, has said its part */
	if (rail_calm(r))
		efd_clear(r);
	return 0;
}

static int tcp_pending(struct ry_rail *rail)
{
	struct ry__tcp_rail *r = to_trail(rail);

	return !ry__sw_cq_empty(&r->cq0) || r->ev_head != r->ev_tail;
}

static int tcp_fd(struct ry_rail *rail)
{
	return to_trail(rail)->epfd;
}

static int tcp_query(struct ry_rail *rail, struct ry_rail_attr *attr)
{
	struct ry__tcp_rail *r = to_trail(rail);

	memset(attr, 0, sizeof(*attr));
	attr->link = r->eff_up ? RY_LINK_UP : RY_LINK_DOWN;
	attr->mtu = r->mtu;
	attr->mtu_hdr = 0; /* TCP segments; a message has no MTU limit */
	attr->sends_alone = false;   /* post queues, progress transmits */
	attr->sends_idle = true;     /* unless nothing was outstanding */
	attr->progress_quiet = true; /* pending() after progress */
	attr->local.gid[10] = 0xff;
	attr->local.gid[11] = 0xff;
	memcpy(&attr->local.gid[12], &r->addr.sin_addr, 4);
	attr->local.udp_port = ntohs(r->addr.sin_port); /* the TCP listener */
	attr->local.mtu = r->mtu;
	attr->max_qp_wr = RY__TCP_MAX_QP_WR;
	attr->max_msg_size = RY__TCP_MAX_MSG;
	return 0;
}

/* Socket I/O on or off as link and cut say. */
static void io_switch(struct ry__tcp_rail *r)
{
	bool on = !ry__tcp_io_off(r);
	struct ry__list *n;

	ry__tcp_epoll(r, EPOLL_CTL_MOD, r->lfd, on ? EPOLLIN : 0, &r->lep);
	for (n = r->qps.next; n != &r->qps; n = n->next) {
		struct ry__tcp_qp *qp =
		    container_of(n, struct ry__tcp_qp, link);

		ry__tcp_conn_interest(qp);
		if (on)
			ry__tcp_kick(qp);
	}
}

/*
 * Fault injection is the soft rail's; the tcp rail knows one fault, a cut
 * cable (drop_all): nothing in or out, and no link event, so the manager
 * must notice the silence itself.  Anything else is -EOPNOTSUPP.
 */
static int tcp_set_fault(struct ry_rail *rail, const struct ry_fault *f)
{
	struct ry__tcp_rail *r = to_trail(rail);

	if (f->drop > 0 || f->duplicate > 0 || f->reorder > 0 ||
	    f->corrupt > 0 || f->delay_us)
		return -EOPNOTSUPP;
	if (r->cut != f->drop_all) {
		r->cut = f->drop_all;
		io_switch(r);
	}
	return 0;
}

/*
 * A pulled cable, for drills without namespaces (railyard demo): nothing
 * goes in or out of the rail's sockets while it is DOWN (they stay open,
 * as the kernel's would); the manager hears it as a link event.
 */
static int tcp_set_link(struct ry_rail *rail, enum ry_link_state state)
{
	struct ry__tcp_rail *r = to_trail(rail);

	if (state != RY_LINK_UP && state != RY_LINK_DOWN)
		return -EINVAL;
	if (state == r->link)
		return 0;
	r->link = state;
	io_switch(r);
	ry__tcp_link_update(r);
	return 0;
}

static int tcp_get_stats(struct ry_rail *rail, struct ry_rail_stats *st)
{
	*st = to_trail(rail)->st;
	return 0;
}

/* ---- open / close ---- */

static void tcp_close(struct ry_rail *rail);

static int tcp_open(const struct ry_rail_config *cfg, struct ry_rail **rail_p)
{
	struct ry__tcp_rail *r;
	int rc;

	if (cfg->mtu && (cfg->mtu < 256 || cfg->mtu > 65536)) {
		RY_ERR("tcp", "rail %s: mtu %u out of range 256..65536",
		       cfg->name, cfg->mtu);
		return -EINVAL;
	}
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->base.ops = &ry__tcp_ops;
	snprintf(r->base.name, sizeof(r->base.name), "%s", cfg->name);
	snprintf(r->ifname, sizeof(r->ifname), "%s", cfg->interface);
	r->lfd = r->epfd = r->tfd = r->efd = r->nlfd = r->wfd = -1;
	r->lep.kind = RY__TCP_EP_LISTEN;
	r->nep.kind = RY__TCP_EP_LINK;
	r->tep.kind = RY__TCP_EP_TIMER;
	r->eep.kind = RY__TCP_EP_EVENT;
	r->mtu = cfg->mtu ? cfg->mtu : 1500;
	r->link = RY_LINK_UP;
	/* never 0: the answer timer's start (qp->ack_since) is 0 when off,
	 * and a post may start it before any progress call (sends_idle) */
	r->lclock = 1;
	ry__list_init(&r->qps);
	ry__list_init(&r->active);
	ry__list_init(&r->timed);
	ry__list_init(&r->pend);
	ry__list_init(&r->cqs);
	r->cq0.base.rail = &r->base;
	if (ry__hidx_init(&r->qpns)) {
		free(r);
		return -ENOMEM;
	}
	rc = ry__rail_parse_addr(cfg, &r->addr);
	if (rc) {
		RY_ERR("tcp", "rail %s: bad address \"%s\" (want ip[:port])",
		       cfg->name, cfg->address);
		ry__hidx_free(&r->qpns);
		free(r);
		return rc;
	}
	r->scratch = malloc(RY__TCP_SCRATCH);
	r->epfd = epoll_create1(EPOLL_CLOEXEC);
	r->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	r->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (!r->scratch || r->epfd < 0 || r->tfd < 0 || r->efd < 0) {
		rc = r->scratch ? -errno : -ENOMEM;
		RY_ERR("tcp", "rail %s: epoll/timerfd/eventfd: %m", cfg->name);
		goto err;
	}
	rc = ry__tcp_listen(r);
	if (!rc)
		rc = ry__tcp_epoll(r, EPOLL_CTL_ADD, r->lfd, EPOLLIN, &r->lep);
	if (!rc)
		rc = ry__tcp_epoll(r, EPOLL_CTL_ADD, r->tfd, EPOLLIN, &r->tep);
	if (!rc)
		rc = ry__tcp_epoll(r, EPOLL_CTL_ADD, r->efd, EPOLLIN, &r->eep);
	if (!rc)
		rc = ry__tcp_link_open(r);
	if (rc)
		goto err;
	r->eff_up = r->nl_up;
	RY_DBG("tcp", "rail %s: listening on %s:%u", r->base.name,
	       inet_ntoa(r->addr.sin_addr), ntohs(r->addr.sin_port));
	*rail_p = &r->base;
	return 0;
err:
	tcp_close(&r->base);
	return rc;
}

static void tcp_close(struct ry_rail *rail)
{
	struct ry__tcp_rail *r;
	struct ry__list *n;

	if (!rail)
		return;
	r = to_trail(rail);
	/* in phases: connections and QPs (nothing more goes out or lands),
	 * parked sockets, CQs, regions, PDs */
	ry__tcp_qp_cleanup(r);
	while ((n = r->pend.next) != &r->pend)
		ry__tcp_pend_close(r,
				   container_of(n, struct ry__tcp_pend, link));
	while ((n = r->cqs.next) != &r->cqs)
		cq_free(r, container_of(n, struct ry__sw_cq, link));
	cq_free(r, &r->cq0);
	ry__sw_mem_cleanup(&r->mem);
	if (r->lfd >= 0)
		close(r->lfd);
	if (r->nlfd >= 0)
		close(r->nlfd);
	if (r->efd >= 0)
		close(r->efd);
	if (r->tfd >= 0)
		close(r->tfd);
	if (r->epfd >= 0)
		close(r->epfd);
	free(r->scratch);
	ry__hidx_free(&r->qpns);
	free(r);
}

const struct ry_rail_ops ry__tcp_ops = {
    .name = "tcp",
    .alloc_pd = tcp_alloc_pd,
    .close = tcp_close,
    .create_cq = tcp_create_cq,
    .create_qp = ry__tcp_create_qp,
    .cq_pending = tcp_cq_pending,
    .cq_poll = tcp_cq_poll,
    .dealloc_pd = tcp_dealloc_pd,
    .dereg_mr = tcp_dereg_mr,
    .destroy_cq = tcp_destroy_cq,
    .destroy_qp = ry__tcp_destroy_qp,
    .fd = tcp_fd,
    .watch = tcp_watch,
    .get_event = tcp_get_event,
    .get_stats = tcp_get_stats,
    .modify_qp = ry__tcp_modify_qp,
    .open = tcp_open,
    .poll_cq = tcp_poll_cq,
    .post_recv = tcp_post_recv,
    .post_send = ry__tcp_post_send,
    .progress = tcp_progress,
    .pending = tcp_pending,
    .query = tcp_query,
    .reg_mr = tcp_reg_mr,
    .set_fault = tcp_set_fault,
    .set_link = tcp_set_link,
};
