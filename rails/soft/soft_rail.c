// SPDX-License-Identifier: BSD-2-Clause
/*
 * The soft rail: userspace reliable-connected RDMA over UDP, modelled on the
 * kernel's rxe.  This file holds the rail itself: open/close, the ops
 * table, the one CQ and SRQ, the event queue and progress; the socket and
 * the batched I/O are soft_net.c's.
 *
 * progress() is the only place protocol work happens: receive what waits
 * (soft_net.c dispatches it by destination QPN), run the timers, responder
 * and requester of each QP that has work (the active list) or a timer due
 * (the heap), flush the transmit batch, arm the timerfd for the earliest
 * deadline.  Its cost grows with the QPs that have work, not with all.
 * fd() is an epoll fd over the socket, the timerfd, the netlink socket and
 * an eventfd that is set while completions or events wait.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "rails/rail_addr.h"
#include "rails/soft/soft.h"
#include "rails/soft/soft_int.h"
#include "src/util/log.h"
#include "src/util/ring.h"

_Static_assert(RY__SOFT_OVERHEAD == RY__SOFT_IP_UDP_HDR + RY__SOFT_HDR_LEN,
	       "RY__SOFT_OVERHEAD is IPv4, UDP and the wire header");

/* ---- CQ, SRQ, events ---- */

static void efd_raise(struct ry__soft_rail *r)
{
	uint64_t one = 1;

	if (r->efd_set)
		return;
	if (write(r->efd, &one, sizeof(one)) == sizeof(one))
		r->efd_set = true;
}

void ry__soft_fd_raise(struct ry__soft_rail *r)
{
	efd_raise(r);
}

static void efd_clear(struct ry__soft_rail *r)
{
	uint64_t v;

	if (!r->efd_set)
		return;
	if (read(r->efd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		return;
	r->efd_set = false;
}

static struct ry__sw_cq *to_scq(struct ry_cq *cq)
{
	return container_of(cq, struct ry__sw_cq, base);
}

/* Nothing for the owner to take: the fd may go calm. */
static bool rail_calm(const struct ry__soft_rail *r)
{
	return !r->cqs_busy && r->ev_head == r->ev_tail;
}

void ry__soft_cq_push(struct ry__soft_qp *qp, const struct ry_wc *wc)
{
	struct ry__sw_cq *cq = qp->cq;
	bool idle = ry__sw_cq_empty(cq);

	/* Never full: room for every send WR was taken when it was posted
	 * (ry__soft_cq_take), and for twice the SRQ's receives (MEMORY in
	 * soft_int.h). */
	if (ry__sw_cq_push(cq, wc)) {
		RY_ERR("soft",
		       "rail %s: CQ overrun, completion of qp 0x%x lost",
		       qp_rail(qp)->base.name, wc->qp_num);
		return;
	}
	if (idle)
		qp_rail(qp)->cqs_busy++;
	/* a flush made by post_send or modify_qp: the owner is not asking */
	if (!qp_rail(qp)->in_progress)
		efd_raise(qp_rail(qp));
}

int ry__soft_cq_ready(struct ry__sw_cq *cq)
{
	return cq->size ? 0 : ry__sw_cq_take(cq, 0, RY__SOFT_SRQ_SIZE);
}

int ry__soft_cq_take(struct ry__soft_qp *qp, uint32_t n)
{
	return ry__sw_cq_take(qp->cq, n, RY__SOFT_SRQ_SIZE);
}

static int cq_poll(struct ry__soft_rail *r, struct ry__sw_cq *cq,
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

static int soft_poll_cq(struct ry_rail *rail, struct ry_wc *wc, int n)
{
	struct ry__soft_rail *r = to_srail(rail);

	return cq_poll(r, &r->cq0, wc, n);
}

int ry__soft_cq_poll(struct ry_cq *cq, struct ry_wc *wc, int n)
{
	return cq_poll(to_srail(cq->rail), to_scq(cq), wc, n);
}

int ry__soft_cq_pending(struct ry_cq *cq)
{
	return !ry__sw_cq_empty(to_scq(cq));
}

int ry__soft_create_cq(struct ry_rail *rail, struct ry_cq **cq_p)
{
	return ry__sw_cq_new(rail, &to_srail(rail)->cqs, RY__SOFT_SRQ_SIZE,
			     cq_p);
}

static void cq_free(struct ry__soft_rail *r, struct ry__sw_cq *cq)
{
	/* completions never polled go with it */
	if (!ry__sw_cq_empty(cq) && !--r->cqs_busy && rail_calm(r))
		efd_clear(r);
	ry__list_del(&cq->link);
	free(cq->ring);
	if (cq != &r->cq0)
		free(cq);
}

int ry__soft_destroy_cq(struct ry_cq *base)
{
	struct ry__sw_cq *cq = to_scq(base);

	if (cq->n_qps)
		return -EBUSY;
	cq_free(to_srail(base->rail), cq);
	return 0;
}

/* At close, after the QPs: every CQ. */
void ry__soft_cq_cleanup(struct ry__soft_rail *r)
{
	while (!ry__list_empty(&r->cqs))
		cq_free(r,
			ry__list_first_entry(&r->cqs, struct ry__sw_cq, link));
	free(r->cq0.ring);
}

static int soft_post_recv(struct ry_rail *rail, const struct ry_recv_wr *wr,
			  unsigned n)
{
	struct ry__soft_rail *r = to_srail(rail);

	if (RY__SOFT_SRQ_SIZE - (r->srq_tail - r->srq_head) < n)
		return -ENOMEM;
	for (unsigned i = 0; i < n; i++)
		r->srq[ry__ring_slot(r->srq_tail++, RY__SOFT_SRQ_SIZE)] = wr[i];
	return 0;
}

void ry__soft_event(struct ry__soft_rail *r, enum ry_rail_event_type type,
		    uint32_t qpn)
{
	struct ry_rail_event *ev;

	if (ry__ring_full(r->ev_head, r->ev_tail, RY__SOFT_EVENTS))
		r->ev_head++; /* keep the newest: the last state is what counts
			       */
	ev = &r->ev[ry__ring_slot(r->ev_tail++, RY__SOFT_EVENTS)];
	ev->type = type;
	ev->qpn = qpn;
	ev->time_ns = ry__now_ns();
	efd_raise(r);
}

static int soft_get_event(struct ry_rail *rail, struct ry_rail_event *ev)
{
	struct ry__soft_rail *r = to_srail(rail);

	if (r->ev_head == r->ev_tail)
		return -EAGAIN;
	*ev = r->ev[ry__ring_slot(r->ev_head++, RY__SOFT_EVENTS)];
	if (rail_calm(r))
		efd_clear(r);
	return 0;
}

/* The link is up when neither set_link nor the real interface says down. */
void ry__soft_link_update(struct ry__soft_rail *r)
{
	bool up = r->link == RY_LINK_UP && r->nl_up;

	if (up == r->eff_up)
		return;
	r->eff_up = up;
	RY_DBG("soft", "rail %s: link %s", r->base.name, up ? "up" : "down");
	ry__soft_event(r, up ? RY_RAIL_EV_LINK_UP : RY_RAIL_EV_LINK_DOWN, 0);
}

/* ---- progress ---- */

/*
 * The timerfd only ever moves earlier.  Every ACK pushes the retransmit
 * deadline later; re-arming for each would cost a syscall per progress
 * call.  A timer left armed too early fires once for nothing: progress then
 * finds no deadline due and arms the real one (at most one spurious wakeup
 * per RTO).
 */
static void arm_timer(struct ry__soft_rail *r, uint64_t when)
{
	struct itimerspec its = {0};

	if (!when || (r->timer_armed && r->timer_armed <= when))
		return;
	its.it_value.tv_sec = (time_t)(when / 1000000000ull);
	its.it_value.tv_nsec = (long)(when % 1000000000ull);
	if (timerfd_settime(r->tfd, TFD_TIMER_ABSTIME, &its, NULL) == 0)
		r->timer_armed = when;
}

/* ---- the active list and the timer heap (soft_int.h) ---- */

void ry__soft_qp_kick(struct ry__soft_qp *qp)
{
	if (ry__list_empty(&qp->active))
		ry__list_add_tail(&qp_rail(qp)->active, &qp->active);
}

/* qp's next timer is at when (0: none). */
static void heap_set(struct ry__soft_rail *r, struct ry__soft_qp *qp,
		     uint64_t when)
{
	if (!when)
		ry__heap_del(&r->timers, &qp->tnode);
	else if (ry__heap_set(&r->timers, &qp->tnode, when))
		ry__soft_qp_kick(qp); /* no room to wait: poll it instead */
}

static struct ry__soft_qp *heap_first(struct ry__soft_rail *r)
{
	struct ry__heap_node *x = ry__heap_top(&r->timers);

	return x ? container_of(x, struct ry__soft_qp, tnode) : NULL;
}

void ry__soft_qp_unsched(struct ry__soft_qp *qp)
{
	ry__list_del(&qp->active);
	ry__heap_del(&qp_rail(qp)->timers, &qp->tnode);
}

/* Run one QP with work; returns when it wants to run again: 0 never (until
 * something happens to it), 1 at the next call, else its next timer. */
static uint64_t run_qp(struct ry__soft_qp *qp)
{
	uint64_t t;

	ry__soft_req_timers(qp);
	ry__soft_resp_run(qp);
	ry__soft_req_run(qp);
	t = ry__soft_req_next_timer(qp);
	/* READ responses left over when the batch filled */
	if (qp->resp.rd_head != qp->resp.rd_tail &&
	    qp->base.state != RY_QPS_ERR)
		t = 1;
	if (!t)
		ry__soft_sq_trim(qp); /* nothing to do: drained, if empty */
	return t;
}

static int soft_progress(struct ry_rail *rail)
{
	struct ry__soft_rail *r = to_srail(rail);
	struct ry__soft_qp *qp;
	struct ry__list work;
	uint64_t next = 0;
	bool nl_due;
	int rc, n;

	r->now = ry__now_ns();
	r->in_progress = true;
	if (r->timer_armed && r->now >= r->timer_armed) {
		uint64_t v;

		if (read(r->tfd, &v, sizeof(v)) < 0 && errno != EAGAIN)
			RY_DBG("soft", "timerfd read: %m");
		r->timer_armed = 0;
	}
	ry__soft_fault_run(r);
	n = ry__soft_net_rx(r); /* kicks every QP a packet was for */
	if (r->nheld && r->now >= r->held_until)
		ry__soft_hold_expire(r);
	rc = n < 0 ? n : 0;
	/* Link changes are needed within milliseconds, not per call: a
	 * busy-polling owner must not pay a netlink syscall each time.  But
	 * a change to the rail's interface makes the netlink socket, and so
	 * fd(), readable: every second call in a row that read no datagram
	 * reads it too, or an epoll owner would spin until the millisecond
	 * is up. */
	nl_due = r->now - r->nl_checked >= 1000000 || (n <= 0 && r->rx_idle);
	r->rx_idle = n <= 0 && !nl_due;
	if (r->nlfd >= 0 && nl_due) {
		r->nl_checked = r->now;
		ry__soft_nl_run(r);
	}
	while ((qp = heap_first(r)) && qp->tnode.at <= r->now) {
		ry__heap_del(&r->timers, &qp->tnode);
		ry__soft_qp_kick(qp);
	}
	/* Taken off the rail's list first: a QP that still has work goes
	 * back to its tail, for the next call (round robin when the
	 * transmit batch fills). */
	ry__list_init(&work);
	if (!ry__list_empty(&r->active)) {
		work.next = r->active.next;
		work.prev = r->active.prev;
		work.next->prev = &work;
		work.prev->next = &work;
		ry__list_init(&r->active);
	}
	while (!ry__list_empty(&work)) {
		uint64_t t;

		qp = ry__list_first_entry(&work, struct ry__soft_qp, active);
		ry__list_del(&qp->active);
		t = run_qp(qp);
		if (t == 1) {
			ry__heap_del(&r->timers, &qp->tnode);
			ry__soft_qp_kick(qp);
		} else
			heap_set(r, qp, t);
	}
	ry__soft_tx_flush(r);
	if (!ry__list_empty(&r->active))
		next = 1;
	else if ((qp = heap_first(r)))
		next = qp->tnode.at;
	{
		uint64_t t = ry__soft_fault_next_timer(r);

		if (t && (!next || t < next))
			next = t;
		if (r->nheld && (!next || r->held_until < next))
			next = r->held_until;
	}
	arm_timer(r, next);
	/*
	 * What this call completed is not announced (progress_quiet): the
	 * owner asks pending() after it, and an eventfd written here and read
	 * when the CQ is polled cost two syscalls a completion.  A raise for
	 * work a post left (post_send) is taken back once there is nothing
	 * to take.
	 */
	r->in_progress = false;
	if (rail_calm(r))
		efd_clear(r);
	return rc;
}

static int soft_pending(struct ry_rail *rail)
{
	struct ry__soft_rail *r = to_srail(rail);

	return !ry__sw_cq_empty(&r->cq0) || r->ev_head != r->ev_tail;
}

static int soft_fd(struct ry_rail *rail)
{
	return to_srail(rail)->epfd;
}

/* The fds behind soft_fd() are fixed from open to close: moving them is all
 * watch does. */
static int soft_watch(struct ry_rail *rail, int epfd, void *tag)
{
	struct ry__soft_rail *r = to_srail(rail);
	const int fds[] = {r->sock, r->tfd, r->efd, r->nlfd};
	int rc = 0;

	for (unsigned i = 0; i < sizeof(fds) / sizeof(fds[0]); i++)
		rc =
		    ry__rail_watch_move(r->wfd, epfd, fds[i], EPOLLIN, tag, rc);
	r->wfd = epfd;
	if (rc) /* none of them anywhere */
		soft_watch(rail, -1, NULL);
	return rc;
}

static int soft_query(struct ry_rail *rail, struct ry_rail_attr *attr)
{
	struct ry__soft_rail *r = to_srail(rail);

	memset(attr, 0, sizeof(*attr));
	attr->link = r->eff_up ? RY_LINK_UP : RY_LINK_DOWN;
	attr->mtu = r->mtu;
	attr->mtu_hdr = RY__SOFT_OVERHEAD;
	attr->sends_alone = false;   /* post queues, progress transmits */
	attr->sends_idle = true;     /* unless nothing was outstanding */
	attr->progress_quiet = true; /* pending() after progress */
	attr->local.gid[10] = 0xff;
	attr->local.gid[11] = 0xff;
	memcpy(&attr->local.gid[12], &r->addr.sin_addr, 4);
	attr->local.udp_port = ntohs(r->addr.sin_port);
	attr->local.mtu = r->mtu;
	attr->max_qp_wr = RY__SOFT_MAX_QP_WR;
	attr->max_msg_size = RY__SOFT_MAX_MSG;
	/* small MTUs: a WR may not span more PSNs than the window allows */
	if ((uint64_t)RY__SOFT_WR_MAX_PKTS * (r->mtu - RY__SOFT_OVERHEAD) <
	    attr->max_msg_size)
		attr->max_msg_size =
		    RY__SOFT_WR_MAX_PKTS * (r->mtu - RY__SOFT_OVERHEAD);
	return 0;
}

static int soft_get_stats(struct ry_rail *rail, struct ry_rail_stats *st)
{
	*st = to_srail(rail)->st;
	/* what a port's error counters say of a link, said of the path */
	st->port_errors = st->retransmits + st->rx_bad_crc;
	return 0;
}

/* ---- open / close ---- */

/*
 * mtu = 0: the interface's MTU (the manager then probes the path's).
 * 1500 on loopback, whose 64 KiB is no network's, and when the address
 * has no interface of its own (a wildcard bind).
 */
static uint32_t link_mtu(int sock, const char *ifname)
{
	struct ifreq ifr;

	if (!ifname[0])
		return 1500;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	if (ioctl(sock, SIOCGIFFLAGS, &ifr) || (ifr.ifr_flags & IFF_LOOPBACK) ||
	    ioctl(sock, SIOCGIFMTU, &ifr) ||
	    ifr.ifr_mtu < (int)(RY__SOFT_OVERHEAD + 64))
		return 1500;
	return ifr.ifr_mtu > RY__SOFT_GSO_BYTES ? RY__SOFT_GSO_BYTES
						: (uint32_t)ifr.ifr_mtu;
}

static int epoll_add(int epfd, int fd)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.fd = fd};

	return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) ? -errno : 0;
}

static void soft_close(struct ry_rail *rail);

static int soft_open(const struct ry_rail_config *cfg, struct ry_rail **rail_p)
{
	struct ry__soft_rail *r;
	char ifname[IF_NAMESIZE] = "";
	struct ry_fault f = {0};
	int rc;

	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->base.ops = &ry__soft_ops;
	snprintf(r->base.name, sizeof(r->base.name), "%s", cfg->name);
	r->sock = r->epfd = r->tfd = r->efd = r->nlfd = r->wfd = -1;
	ry__list_init(&r->active);
	if (ry__hidx_init(&r->qpns)) {
		free(r);
		return -ENOMEM;
	}
	r->link = RY_LINK_UP;
	r->nl_up = true;
	r->eff_up = true;
	r->mtu = cfg->mtu ? cfg->mtu : 1500;
	if (r->mtu < RY__SOFT_IP_UDP_HDR + RY__SOFT_HDR_LEN + 64 ||
	    r->mtu > RY__SOFT_GSO_BYTES) {
		RY_ERR("soft", "rail %s: mtu %u out of range 148..%u",
		       cfg->name, r->mtu, RY__SOFT_GSO_BYTES);
		rc = -EINVAL;
		goto err_free;
	}
	rc = ry__rail_parse_addr(cfg, &r->addr);
	if (rc == -EADDRNOTAVAIL) { /* not an error of the config */
		RY_ERR("soft", "rail %s: interface %s has no IPv4 address",
		       cfg->name, cfg->interface);
		goto err_free;
	} else if (rc) {
		RY_ERR("soft", "rail %s: bad address \"%s\" (want ip[:port])",
		       cfg->name, cfg->address);
		goto err_free;
	}
	rc = ry__rand_bytes(&r->rng, sizeof(r->rng));
	if (rc)
		goto err_free;
	r->rng |= 1;
	rc = ry__soft_net_init(r);
	if (rc)
		goto err_free;
	/* cq0's ring comes with its first QP (ry__soft_cq_ready): an owner
	 * with CQs of its own (the manager) never pays for it */
	r->cq0.base.rail = &r->base;
	ry__list_init(&r->cqs);
	rc = ry__soft_net_open(r, cfg);
	if (rc)
		goto err_close;
	r->epfd = epoll_create1(EPOLL_CLOEXEC);
	r->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	r->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (r->epfd < 0 || r->tfd < 0 || r->efd < 0) {
		rc = -errno;
		RY_ERR("soft", "rail %s: epoll/timerfd/eventfd: %m", cfg->name);
		goto err_close;
	}
	rc = epoll_add(r->epfd, r->sock);
	if (!rc)
		rc = epoll_add(r->epfd, r->tfd);
	if (!rc)
		rc = epoll_add(r->epfd, r->efd);
	if (rc)
		goto err_close;
	if (cfg->interface[0]) {
		if (strlen(cfg->interface) >= sizeof(ifname)) {
			rc = -ENODEV;
			goto err_close;
		}
		memcpy(ifname, cfg->interface, strlen(cfg->interface) + 1);
	} else
		ry__rail_addr_owner(&r->addr, ifname, sizeof(ifname));
	if (!cfg->mtu)
		r->mtu = link_mtu(r->sock, ifname);
	rc = ry__soft_hold_init(r);
	if (rc)
		goto err_close;
	if (ifname[0]) {
		rc = ry__soft_nl_open(r, ifname);
		if (rc)
			goto err_close;
		rc = epoll_add(r->epfd, r->nlfd);
		if (rc)
			goto err_close;
	}
	f.drop_all = cfg->fault.down;
	f.drop = cfg->fault.drop;
	f.duplicate = cfg->fault.duplicate;
	f.reorder = cfg->fault.reorder;
	f.corrupt = cfg->fault.corrupt;
	f.delay_us = cfg->fault.delay_us;
	rc = ry__soft_set_fault(&r->base, &f);
	if (rc)
		goto err_close;
	r->eff_up = r->link == RY_LINK_UP && r->nl_up;
	r->ev_head = r->ev_tail = 0; /* the initial state is not an event */
	RY_DBG("soft", "rail %s: bound %s:%u if \"%s\" mtu %u gso %d gro %d",
	       r->base.name, inet_ntoa(r->addr.sin_addr),
	       ntohs(r->addr.sin_port), ifname, r->mtu, r->gso, r->gro);
	*rail_p = &r->base;
	return 0;

err_close:
	soft_close(&r->base);
	return rc;
err_free:
	ry__soft_net_close(r);
	ry__hidx_free(&r->qpns);
	free(r->cq0.ring);
	free(r);
	return rc;
}

static void soft_close(struct ry_rail *rail)
{
	struct ry__soft_rail *r;

	if (!rail)
		return;
	r = to_srail(rail);
	/* Teardown in phases: QPs (nothing more goes out), regions, PDs. */
	ry__soft_qp_cleanup(r);
	ry__soft_cq_cleanup(r);
	ry__sw_mem_cleanup(&r->mem);
	ry__soft_fault_cleanup(r);
	if (r->nlfd >= 0)
		close(r->nlfd);
	if (r->efd >= 0)
		close(r->efd);
	if (r->tfd >= 0)
		close(r->tfd);
	if (r->epfd >= 0)
		close(r->epfd);
	ry__soft_net_close(r);
	ry__heap_free(&r->timers);
	ry__hidx_free(&r->qpns);
	free(r);
}

/* Test hook: run one raw datagram through the receive path. */
void ry__soft_inject(struct ry_rail *rail, const void *pkt, size_t len,
		     const uint8_t gid[16], uint16_t udp_port)
{
	struct ry__soft_rail *r = to_srail(rail);
	struct sockaddr_in from = {.sin_family = AF_INET};

	memcpy(&from.sin_addr, gid + 12, 4);
	from.sin_port = htons(udp_port);
	r->now = ry__now_ns();
	ry__soft_rx_packet(r, pkt, (uint32_t)len, &from);
	ry__soft_tx_flush(r);
}

static int soft_alloc_pd(struct ry_rail *rail, struct ry_pd **pd_p)
{
	return ry__sw_alloc_pd(&to_srail(rail)->mem, rail, pd_p);
}

static int soft_dealloc_pd(struct ry_pd *pd)
{
	return ry__sw_dealloc_pd(&to_srail(pd->rail)->mem, pd);
}

static int soft_dereg_mr(struct ry_mr *mr)
{
	ry__sw_dereg_mr(&to_srail(mr->pd->rail)->mem, mr);
	return 0;
}

const struct ry_rail_ops ry__soft_ops = {
    .name = "soft",
    .alloc_pd = soft_alloc_pd,
    .close = soft_close,
    .create_cq = ry__soft_create_cq,
    .create_qp = ry__soft_create_qp,
    .cq_pending = ry__soft_cq_pending,
    .cq_poll = ry__soft_cq_poll,
    .dealloc_pd = soft_dealloc_pd,
    .dereg_mr = soft_dereg_mr,
    .destroy_cq = ry__soft_destroy_cq,
    .destroy_qp = ry__soft_destroy_qp,
    .fd = soft_fd,
    .watch = soft_watch,
    .get_event = soft_get_event,
    .get_stats = soft_get_stats,
    .modify_qp = ry__soft_modify_qp,
    .open = soft_open,
    .poll_cq = soft_poll_cq,
    .post_recv = soft_post_recv,
    .post_send = ry__soft_post_send,
    .progress = soft_progress,
    .pending = soft_pending,
    .query = soft_query,
    .reg_mr = ry__soft_reg_mr,
    .set_fault = ry__soft_set_fault,
    .set_link = ry__soft_set_link,
};
