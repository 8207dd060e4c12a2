// SPDX-License-Identifier: BSD-2-Clause
/*
 * The tcp rail's sockets: the listener and the parked sockets waiting for
 * their HELLO, connecting, the transmit queue and sendmsg, and the receive
 * state machine (header first, then the payload straight into the region).
 * What a message means is tcp_qp.c's.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>
#include <linux/sockios.h>

#include "rails/tcp/tcp_int.h"
#include "src/util/log.h"

#define TXQ_SLOT(i) ((i) & (RY__TCP_TXQ - 1))

static void abort_fd(int fd)
{
	struct linger lg = {.l_onoff = 1, .l_linger = 0};

	/* RST, not FIN: the peer's QP sees the end at once, and nothing
	 * queued here goes out after the QP left RTS */
	setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	close(fd);
}

static void sock_opts(int fd, uint32_t user_timeout_ms)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	/* recvmsg says how much is left: no recv just to hear EAGAIN */
	setsockopt(fd, IPPROTO_TCP, TCP_INQ, &one, sizeof(one));
	if (user_timeout_ms)
		setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_timeout_ms,
			   sizeof(user_timeout_ms));
}

int ry__tcp_listen(struct ry__tcp_rail *r)
{
	socklen_t alen = sizeof(r->addr);
	int one = 1;

	r->lfd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (r->lfd < 0) {
		RY_ERR("tcp", "rail %s: socket: %m", r->base.name);
		return -errno;
	}
	setsockopt(r->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (r->ifname[0] && geteuid() == 0 &&
	    setsockopt(r->lfd, SOL_SOCKET, SO_BINDTODEVICE, r->ifname,
		       (socklen_t)strlen(r->ifname))) {
		RY_ERR("tcp", "rail %s: bind to device %s: %m", r->base.name,
		       r->ifname);
		return -errno;
	}
	if (bind(r->lfd, (struct sockaddr *)&r->addr, sizeof(r->addr))) {
		RY_ERR("tcp", "rail %s: bind %s:%u: %m", r->base.name,
		       inet_ntoa(r->addr.sin_addr), ntohs(r->addr.sin_port));
		return -errno;
	}
	if (listen(r->lfd, 256) ||
	    getsockname(r->lfd, (struct sockaddr *)&r->addr, &alen)) {
		RY_ERR("tcp", "rail %s: listen: %m", r->base.name);
		return -errno;
	}
	return 0;
}

/* ---- parked sockets: accepted, HELLO not yet matched ---- */

void ry__tcp_pend_close(struct ry__tcp_rail *r, struct ry__tcp_pend *p)
{
	ry__list_del(&p->link);
	if (p->fd >= 0) {
		r->n_pend--;
		abort_fd(p->fd);
	}
	free(p);
}

/*
 * Close the oldest parked socket that is still open.  Its struct stays on
 * the list until the timers run (after this progress call's events: one
 * of them may name it), with fd -1, which nothing reads.
 */
static void pend_evict(struct ry__tcp_rail *r)
{
	struct ry__list *n;

	for (n = r->pend.next; n != &r->pend; n = n->next) {
		struct ry__tcp_pend *p =
		    container_of(n, struct ry__tcp_pend, link);

		if (p->fd < 0)
			continue;
		abort_fd(p->fd);
		p->fd = -1;
		p->deadline = 0;
		r->n_pend--;
		return;
	}
}

void ry__tcp_accept(struct ry__tcp_rail *r)
{
	for (;;) {
		struct ry__tcp_pend *p;
		socklen_t alen = sizeof(struct sockaddr_in);
		struct sockaddr_in from;
		int fd = accept4(r->lfd, (struct sockaddr *)&from, &alen,
				 SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0)
			return;
		/* bounded: the oldest parked socket makes room */
		if (r->n_pend >= RY__TCP_PEND_MAX)
			pend_evict(r);
		p = calloc(1, sizeof(*p));
		if (!p) {
			abort_fd(fd);
			continue;
		}
		p->ep.kind = RY__TCP_EP_PEND;
		p->fd = fd;
		p->from = from;
		p->deadline = r->now + RY__TCP_PEND_NS;
		ry__list_add_tail(&r->pend, &p->link);
		r->n_pend++;
		if (ry__tcp_epoll(r, EPOLL_CTL_ADD, fd, EPOLLIN, &p->ep))
			ry__tcp_pend_close(r, p);
		else
			ry__tcp_pend_rx(r, p); /* its HELLO may be there */
	}
}

/* The QP a complete HELLO names, when it is ready for exactly this peer;
 * NULL with *drop when it never will be. */
static struct ry__tcp_qp *hello_match(struct ry__tcp_rail *r,
				      struct ry__tcp_pend *p, bool *drop)
{
	struct ry__tcp_msg m;
	struct ry__tcp_qp *qp;
	enum ry__tcp_bad bad = ry__tcp_wire_decode(p->hdr, &m);

	*drop = true;
	if (bad == RY__TCP_BAD_VERSION && !r->version_said) {
		/* a node of another release: say why nothing connects */
		r->version_said = true;
		RY_WARN("tcp",
			"rail %s: a connection from %s speaks tcp wire "
			"version %u, this node %u: closed (both ends need the "
			"same release; said once per rail)",
			r->base.name, inet_ntoa(p->from.sin_addr),
			ry__tcp_get_version(p->hdr), RY__TCP_WIRE_VERSION);
	}
	if (bad || m.opcode != RY__TCP_OP_HELLO) {
		r->st.rx_bad_header++;
		return NULL;
	}
	qp = ry__tcp_qp_lookup(r, m.qpn);
	if (!qp) {
		r->st.rx_bad_qpn++;
		return NULL;
	}
	if (m.cookie != qp->base.local.cookie) {
		r->st.rx_bad_cookie++;
		return NULL;
	}
	if (qp->base.state < RY_QPS_RTR) {
		*drop = false; /* the QP may get there: keep it parked */
		return NULL;
	}
	if (qp->base.state > RY_QPS_RTS || qp->c.active ||
	    qp->c.state != RY__TCP_C_WAIT || m.rkey != qp->remote.qpn ||
	    m.va != qp->remote.cookie ||
	    p->from.sin_addr.s_addr != qp->peer.sin_addr.s_addr) {
		r->st.rx_bad_cookie++;
		return NULL;
	}
	*drop = false;
	return qp;
}

static void pend_attach(struct ry__tcp_rail *r, struct ry__tcp_pend *p,
			struct ry__tcp_qp *qp)
{
	qp->c.fd = p->fd;
	qp->c.state = RY__TCP_C_UP;
	sock_opts(qp->c.fd, qp->user_timeout_ms);
	p->fd = -1;
	ry__list_del(&p->link);
	r->n_pend--;
	free(p);
	if (ry__tcp_epoll(r, EPOLL_CTL_MOD, qp->c.fd, EPOLLIN, &qp->c.ep)) {
		ry__tcp_qp_conn_lost(qp, EIO);
		return;
	}
	ry__tcp_conn_interest(qp);
	ry__tcp_kick(qp);
}

void ry__tcp_pend_rx(struct ry__tcp_rail *r, struct ry__tcp_pend *p)
{
	struct ry__tcp_qp *qp;
	bool drop;
	ssize_t n;

	if (p->fd < 0)
		return; /* evicted: freed when the timers run */
	if (p->got < RY__TCP_HDR_LEN) {
		n = recv(p->fd, p->hdr + p->got, RY__TCP_HDR_LEN - p->got,
			 MSG_DONTWAIT);
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (n <= 0) {
			ry__tcp_pend_close(r, p);
			return;
		}
		p->got += (uint32_t)n;
		if (p->got < RY__TCP_HDR_LEN)
			return;
	}
	qp = hello_match(r, p, &drop);
	if (qp) {
		pend_attach(r, p, qp);
		return;
	}
	if (drop) {
		ry__tcp_pend_close(r, p);
		return;
	}
	/* parked with its HELLO read: stop listening to it until its QP
	 * reaches RTR (a hang-up is still reported, and closes it) */
	ry__tcp_epoll(r, EPOLL_CTL_MOD, p->fd, 0, &p->ep);
}

/* ---- connecting ---- */

static void txq_alloc(struct ry__tcp_qp *qp)
{
	if (!qp->c.txq)
		qp->c.txq = calloc(RY__TCP_TXQ, sizeof(*qp->c.txq));
}

/* A connect finished (state UP), failed (-errno) or not yet (1). */
static int connect_done(struct ry__tcp_qp *qp)
{
	struct pollfd pfd = {.fd = qp->c.fd, .events = POLLOUT};
	socklen_t len = sizeof(int);
	int err = 0;

	if (poll(&pfd, 1, 0) != 1)
		return 1;
	if (getsockopt(qp->c.fd, SOL_SOCKET, SO_ERROR, &err, &len))
		err = errno;
	if (err)
		return -err;
	qp->c.state = RY__TCP_C_UP;
	return 0;
}

static int connect_active(struct ry__tcp_qp *qp)
{
	struct ry__tcp_rail *r = tqp_rail(qp);
	struct sockaddr_in src = r->addr;
	struct ry__tcp_txe *t;
	struct ry__tcp_msg m = {0};
	int fd;

	fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	sock_opts(fd, qp->user_timeout_ms);
	if (r->ifname[0] && geteuid() == 0)
		setsockopt(fd, SOL_SOCKET, SO_BINDTODEVICE, r->ifname,
			   (socklen_t)strlen(r->ifname));
	/* from the rail's own address, so the path is the rail's */
	src.sin_port = 0;
	if (bind(fd, (struct sockaddr *)&src, sizeof(src)) ||
	    (connect(fd, (struct sockaddr *)&qp->peer, sizeof(qp->peer)) &&
	     errno != EINPROGRESS)) {
		int err = errno;

		RY_WARN("tcp", "rail %s: qp 0x%x: connect to %s:%u: %m",
			r->base.name, qp->base.qp_num,
			inet_ntoa(qp->peer.sin_addr), ntohs(qp->peer.sin_port));
		close(fd);
		return -err;
	}
	qp->c.fd = fd;
	qp->c.state = RY__TCP_C_CONNECTING;
	qp->c.want_out = true;
	qp->c.syn_by = r->now + RY__TCP_SYN_NS;
	ry__tcp_timed(qp);
	if (ry__tcp_epoll(r, EPOLL_CTL_ADD, fd, EPOLLIN | EPOLLOUT,
			  &qp->c.ep)) {
		abort_fd(fd);
		qp->c.fd = -1;
		qp->c.state = RY__TCP_C_NONE;
		return -EIO;
	}
	/* HELLO first: the QP we want and who we are */
	t = ry__tcp_txq_slot(qp);
	m.opcode = RY__TCP_OP_HELLO;
	m.qpn = qp->remote.qpn;
	m.cookie = qp->remote.cookie;
	m.va = qp->base.local.cookie;
	m.rkey = qp->base.qp_num;
	m.psn = qp->base.local.psn;
	ry__tcp_wire_encode(t->hdr, &m);
	t->kind = RY__TCP_TX_HELLO;
	ry__tcp_txq_commit(qp);
	/* on a near path (loopback) the handshake is done already: HELLO
	 * goes now, so the peer finds it at its next progress */
	if (!connect_done(qp))
		ry__tcp_conn_tx(qp);
	return 0;
}

int ry__tcp_conn_start(struct ry__tcp_qp *qp)
{
	struct ry__tcp_rail *r = tqp_rail(qp);
	struct ry__list *n;

	txq_alloc(qp);
	if (!qp->c.txq)
		return -ENOMEM;
	qp->c.ep.kind = RY__TCP_EP_CONN;
	qp->c.rx.state = RY__TCP_RX_HDR;
	qp->c.rx.got = 0;
	qp->c.rx.lowat = 1;
	if (qp->c.active)
		return connect_active(qp);
	qp->c.state = RY__TCP_C_WAIT;
	/* the peer may have been quicker: its HELLO waits parked */
	for (n = r->pend.next; n != &r->pend; n = n->next) {
		struct ry__tcp_pend *p =
		    container_of(n, struct ry__tcp_pend, link);
		bool drop;

		if (p->fd >= 0 && p->got == RY__TCP_HDR_LEN &&
		    hello_match(r, p, &drop) == qp) {
			pend_attach(r, p, qp);
			break;
		}
	}
	return 0;
}

void ry__tcp_conn_abort(struct ry__tcp_qp *qp)
{
	if (qp->c.fd >= 0) {
		ry__tcp_epoll(tqp_rail(qp), EPOLL_CTL_DEL, qp->c.fd, 0,
			      &qp->c.ep);
		abort_fd(qp->c.fd);
	}
	qp->c.fd = -1;
	qp->c.state = RY__TCP_C_NONE;
	qp->c.want_out = qp->c.closing = qp->c.in_off = false;
	free(qp->c.txq);
	qp->c.txq = NULL;
	qp->c.tx_head = qp->c.tx_tail = qp->c.tx_off = 0;
	qp->c.tx_reqs = 0;
	qp->c.rx.state = RY__TCP_RX_HDR;
	qp->c.rx.got = 0;
	qp->c.rx.lowat = 1;
}

/* ---- the transmit queue ---- */

struct ry__tcp_txe *ry__tcp_txq_slot(struct ry__tcp_qp *qp)
{
	struct ry__tcp_txe *t;

	if (!qp->c.txq || qp->c.tx_tail - qp->c.tx_head >= RY__TCP_TXQ)
		return NULL;
	t = &qp->c.txq[TXQ_SLOT(qp->c.tx_tail)];
	memset(t, 0, sizeof(*t));
	return t;
}

void ry__tcp_txq_commit(struct ry__tcp_qp *qp)
{
	if (qp->c.txq[TXQ_SLOT(qp->c.tx_tail)].kind == RY__TCP_TX_REQ)
		qp->c.tx_reqs++;
	qp->c.tx_tail++;
	ry__tcp_kick(qp);
}

static bool tx_started(const struct ry__tcp_qp *qp, uint32_t i)
{
	return i == qp->c.tx_head && qp->c.tx_off;
}

/* Queues an ACK (syn 0) or a NAK of psn; false when the queue is full. */
static bool queue_ack(struct ry__tcp_qp *qp, uint32_t psn, uint8_t syn,
		      enum ry__tcp_txkind kind)
{
	struct ry__tcp_txe *t = ry__tcp_txq_slot(qp);
	struct ry__tcp_msg m = {
	    .opcode = RY__TCP_OP_ACK,
	    .syndrome = syn,
	    .qpn = qp->remote.qpn,
	    .cookie = qp->remote.cookie,
	    .psn = psn,
	};

	if (!t)
		return false;
	ry__tcp_wire_encode(t->hdr, &m);
	t->kind = kind;
	ry__tcp_txq_commit(qp);
	return true;
}

void ry__tcp_txq_ack(struct ry__tcp_qp *qp, uint32_t psn)
{
	/* coalesce into the last response if it is an ACK not yet started:
	 * nothing may overtake a READ response, so only the last one */
	for (uint32_t i = qp->c.tx_tail; i != qp->c.tx_head; i--) {
		struct ry__tcp_txe *t = &qp->c.txq[TXQ_SLOT(i - 1)];

		if (t->kind == RY__TCP_TX_REQ || t->kind == RY__TCP_TX_HELLO)
			continue;
		if (t->kind == RY__TCP_TX_ACK && !tx_started(qp, i - 1)) {
			ry__tcp_put_psn(t->hdr, psn);
			return;
		}
		break;
	}
	/* never full: responses have room (tcp_int.h) */
	queue_ack(qp, psn, 0, RY__TCP_TX_ACK);
}

void ry__tcp_txq_nak(struct ry__tcp_qp *qp, uint32_t psn, uint8_t syn)
{
	if (!queue_ack(qp, psn, syn, RY__TCP_TX_NAK))
		return;
	if (syn == RY__TCP_SYN_RNR)
		tqp_rail(qp)->st.rnr_naks_sent++;
	else
		tqp_rail(qp)->st.naks_sent++;
}

void ry__tcp_txq_cancel_reqs(struct ry__tcp_qp *qp)
{
	for (uint32_t i = qp->c.tx_head; i != qp->c.tx_tail; i++) {
		struct ry__tcp_txe *t = &qp->c.txq[TXQ_SLOT(i)];

		if (t->kind == RY__TCP_TX_REQ && !t->cancel &&
		    !tx_started(qp, i)) {
			t->cancel = true;
			qp->c.tx_reqs--;
		}
	}
}

/* An entry's payload, looked up again: NULL when its region is gone. */
static void *tx_payload(struct ry__tcp_qp *qp, const struct ry__tcp_txe *t)
{
	struct ry__tcp_rail *r = tqp_rail(qp);
	struct ry__sw_mr *m;

	if (!t->len)
		return NULL;
	m = t->rkey ? ry__sw_mr_rkey(&r->mem, qp->base.pd, t->key, t->va,
				     t->len, RY_ACCESS_REMOTE_READ)
		    : ry__sw_mr_lkey(&r->mem, qp->base.pd, t->key, t->va,
				     t->len, 0);
	return m ? (void *)(uintptr_t)t->va : NULL;
}

void ry__tcp_conn_interest(struct ry__tcp_qp *qp)
{
	bool up = !ry__tcp_io_off(tqp_rail(qp));
	uint32_t ev = (up && !qp->c.in_off ? EPOLLIN : 0) |
		      (up && qp->c.want_out ? EPOLLOUT : 0);

	if (qp->c.fd >= 0)
		ry__tcp_epoll(tqp_rail(qp), EPOLL_CTL_MOD, qp->c.fd, ev,
			      &qp->c.ep);
}

static void set_out(struct ry__tcp_qp *qp, bool on)
{
	if (qp->c.want_out == on)
		return;
	qp->c.want_out = on;
	ry__tcp_conn_interest(qp);
}

/* Entries fully sent: popped, requests reported to the requester. */
static void tx_advance(struct ry__tcp_qp *qp, size_t n)
{
	while (qp->c.tx_head != qp->c.tx_tail) {
		struct ry__tcp_txe *t = &qp->c.txq[TXQ_SLOT(qp->c.tx_head)];
		size_t whole = t->cancel ? 0 : RY__TCP_HDR_LEN + (size_t)t->len;
		size_t rest = whole - qp->c.tx_off;

		if (n < rest) {
			qp->c.tx_off += (uint32_t)n;
			return;
		}
		n -= rest;
		qp->c.tx_off = 0;
		qp->c.tx_head++;
		if (t->kind == RY__TCP_TX_REQ && !t->cancel) {
			qp->c.tx_reqs--;
			ry__tcp_req_sent(qp, t->idx);
		}
		if (qp->base.state == RY_QPS_ERR && !qp->c.closing)
			return; /* the QP failed under us */
	}
}

void ry__tcp_conn_tx(struct ry__tcp_qp *qp)
{
	struct ry__tcp_rail *r = tqp_rail(qp);
	size_t budget = RY__TCP_BUDGET;

	if (qp->lost) { /* no connection: WRs fail as after their retries */
		ry__tcp_req_fill(qp);
		return;
	}
	if (qp->c.fd < 0 || qp->c.state == RY__TCP_C_CONNECTING ||
	    ry__tcp_io_off(r))
		return;
	if (!qp->c.closing) {
		if (qp->c.state != RY__TCP_C_UP)
			return;
		ry__tcp_req_fill(qp);
	}
	while (qp->c.fd >= 0 && qp->c.tx_head != qp->c.tx_tail && budget) {
		struct msghdr mh = {.msg_iov = r->iov};
		unsigned niov = 0;
		size_t total = 0;
		ssize_t n;

		for (uint32_t i = qp->c.tx_head;
		     i != qp->c.tx_tail && niov + 2 <= RY__TCP_IOV &&
		     total < budget;
		     i++) {
			struct ry__tcp_txe *t = &qp->c.txq[TXQ_SLOT(i)];
			uint32_t off = i == qp->c.tx_head ? qp->c.tx_off : 0;
			void *pay;

			if (t->cancel)
				continue;
			if (off < RY__TCP_HDR_LEN) {
				r->iov[niov].iov_base = t->hdr + off;
				r->iov[niov++].iov_len = RY__TCP_HDR_LEN - off;
				total += RY__TCP_HDR_LEN - off;
				off = 0;
			} else
				off -= RY__TCP_HDR_LEN;
			if (!t->len)
				continue;
			pay = tx_payload(qp, t);
			if (!pay) {
				/* its region went away under a WR: a stream
				 * cannot skip half a message */
				if (i != qp->c.tx_head || !qp->c.tx_off) {
					if (niov)
						break;
				}
				ry__tcp_qp_error(qp,
						 t->kind == RY__TCP_TX_REQ
						     ? RY_WC_LOC_PROT
						     : RY_WC_GENERAL_ERR,
						 false);
				return;
			}
			r->iov[niov].iov_base = (uint8_t *)pay + off;
			r->iov[niov++].iov_len = t->len - off;
			total += t->len - off;
		}
		if (!niov) {
			/* only cancelled entries left */
			tx_advance(qp, 0);
			continue;
		}
		mh.msg_iovlen = niov;
		n = sendmsg(qp->c.fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR) {
				set_out(qp, true);
				return;
			}
			ry__tcp_qp_conn_lost(qp, errno);
			return;
		}
		r->st.tx_bytes += (uint64_t)n;
		budget = (size_t)n < budget ? budget - (size_t)n : 0;
		tx_advance(qp, (size_t)n);
		if (qp->base.state == RY_QPS_ERR && !qp->c.closing)
			return;
		if (!qp->c.closing)
			ry__tcp_req_fill(qp);
		if ((size_t)n < total) {
			set_out(qp, true);
			return;
		}
	}
	if (qp->c.fd < 0)
		return;
	if (qp->c.tx_head == qp->c.tx_tail) {
		set_out(qp, false);
		if (qp->c.closing)
			ry__tcp_conn_linger(qp);
	} else
		ry__tcp_kick(qp); /* budget spent: its turn comes again */
}

void ry__tcp_conn_linger(struct ry__tcp_qp *qp)
{
	int unsent = 0;

	if (qp->c.fd < 0)
		return;
	if (qp->c.tx_head == qp->c.tx_tail) {
		shutdown(qp->c.fd, SHUT_WR);
		if (ioctl(qp->c.fd, SIOCOUTQ, &unsent) || !unsent ||
		    tqp_rail(qp)->now >= qp->c.close_by) {
			ry__tcp_conn_abort(qp);
			return;
		}
	} else if (tqp_rail(qp)->now >= qp->c.close_by) {
		ry__tcp_conn_abort(qp);
		return;
	}
	ry__tcp_timed(qp);
}

/* ---- receiving ---- */

/* Where the current payload goes, looked up again; NULL: region gone. */
static uint8_t *rx_target(struct ry__tcp_qp *qp)
{
	struct ry__tcp_rail *r = tqp_rail(qp);
	struct ry__sw_mr *m;

	m = qp->c.rx.rkey
		? ry__sw_mr_rkey(&r->mem, qp->base.pd, qp->c.rx.key,
				 qp->c.rx.va, qp->c.rx.left + qp->c.rx.off,
				 qp->c.rx.access)
		: ry__sw_mr_lkey(&r->mem, qp->base.pd, qp->c.rx.key,
				 qp->c.rx.va, qp->c.rx.left + qp->c.rx.off,
				 qp->c.rx.access);
	return m ? (uint8_t *)(uintptr_t)qp->c.rx.va : NULL;
}

/* The socket held nothing more after this read (TCP_INQ's count). */
static bool inq_empty(struct msghdr *mh)
{
	struct cmsghdr *c;
	int inq;

	for (c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c))
		if (c->cmsg_level == SOL_TCP && c->cmsg_type == TCP_CM_INQ &&
		    c->cmsg_len >= CMSG_LEN(sizeof(inq))) {
			memcpy(&inq, CMSG_DATA(c), sizeof(inq));
			return inq == 0;
		}
	return false;
}

/*
 * Read what waits on qp's socket, one message at a time.  The rest of a
 * payload is read together with the next message's header, which goes
 * to the header buffer (never to a region: it is checked first, as any
 * header).  Once a read says the socket is empty (it came back short, or
 * TCP_INQ counted nothing left), the round ends without the recv that
 * would only say EAGAIN: at depth 1 that recv stood between a message
 * and its answer on both sides.  Epoll is level-triggered, so bytes that
 * come after it are read next time.
 */
static void conn_rx_round(struct ry__tcp_qp *qp)
{
	struct ry__tcp_rail *r = tqp_rail(qp);
	size_t budget = RY__TCP_BUDGET;
	bool empty = false;

	while (qp->c.fd >= 0 && !qp->c.closing && budget) {
		union {
			char buf[CMSG_SPACE(sizeof(int))];
			struct cmsghdr align;
		} cm;
		struct iovec iov[2];
		struct msghdr mh = {.msg_iov = iov,
				    .msg_iovlen = 1,
				    .msg_control = cm.buf,
				    .msg_controllen = sizeof(cm.buf)};
		size_t want, asked, extra = 0;
		bool dma;
		void *dst;
		ssize_t n;

		switch (qp->c.rx.state) {
		case RY__TCP_RX_HDR:
			dst = qp->c.rx.hdr + qp->c.rx.got;
			want = RY__TCP_HDR_LEN - qp->c.rx.got;
			break;
		case RY__TCP_RX_PAYLOAD:
			dst = rx_target(qp);
			if (!dst) {
				/* deregistered mid-message: the rest is
				 * dropped, and the QP fails after it */
				qp->c.rx.state = RY__TCP_RX_DRAIN;
				qp->c.rx.done = RY__TCP_DONE_FAIL;
				qp->c.rx.fail = RY_WC_LOC_PROT;
				continue;
			}
			dst = (uint8_t *)dst + qp->c.rx.off;
			want = qp->c.rx.left;
			break;
		default:
			dst = r->scratch;
			want = qp->c.rx.left < RY__TCP_SCRATCH
				   ? qp->c.rx.left
				   : RY__TCP_SCRATCH;
			break;
		}
		if (want) {
			if (empty)
				return;
			iov[0].iov_base = dst;
			iov[0].iov_len = want;
			asked = want;
			if (qp->c.rx.state != RY__TCP_RX_HDR &&
			    want == qp->c.rx.left) {
				iov[1].iov_base = qp->c.rx.hdr;
				iov[1].iov_len = RY__TCP_HDR_LEN;
				mh.msg_iovlen = 2;
				asked += RY__TCP_HDR_LEN;
			}
			dma = qp->c.rx.state == RY__TCP_RX_PAYLOAD;
			if (dma)
				ry__dma_begin(); /* into the region */
			n = recvmsg(qp->c.fd, &mh, MSG_DONTWAIT);
			if (dma)
				ry__dma_end();
			if (n < 0 && (errno == EAGAIN || errno == EINTR))
				return;
			if (n <= 0) {
				ry__tcp_qp_conn_lost(qp,
						     n ? errno : ECONNRESET);
				return;
			}
			empty = (size_t)n < asked || inq_empty(&mh);
			r->st.rx_bytes += (uint64_t)n;
			budget = (size_t)n < budget ? budget - (size_t)n : 0;
			/* a sign of life: the answer timer starts over */
			if (qp->ack_since)
				qp->ack_since = r->lclock;
		} else
			n = 0;
		if (qp->c.rx.state == RY__TCP_RX_HDR) {
			qp->c.rx.got += (uint32_t)n;
			if (qp->c.rx.got < RY__TCP_HDR_LEN)
				continue;
			qp->c.rx.got = 0;
			r->st.rx_packets++;
			if (!ry__tcp_rx_header(qp))
				return;
			continue; /* its payload next, or done already */
		}
		if ((size_t)n > want) {
			extra = (size_t)n - want;
			n = (ssize_t)want;
		}
		qp->c.rx.left -= (uint32_t)n;
		qp->c.rx.off += (uint32_t)n;
		if (!qp->c.rx.left) {
			qp->c.rx.state = RY__TCP_RX_HDR;
			ry__tcp_rx_done(qp);
			/* the next header's first bytes, if they came along
			 * (an abort since reset the receive state) */
			if (qp->c.fd >= 0 && !qp->c.closing)
				qp->c.rx.got = (uint32_t)extra;
		}
	}
}

/*
 * A payload read in part sleeps till the rest is all there: the socket's
 * SO_RCVLOWAT is what is left of it, so the kernel wakes us once, not for
 * every segment (at 1 Gbit/s a 256 KiB payload came in dozens of reads,
 * each a wake-up).  Nothing behind the payload in the stream could be
 * read before it anyway; a close or a reset still wakes us.  Back to 1
 * once a payload is done, for the next header.
 */
static void rx_lowat(struct ry__tcp_qp *qp)
{
	uint32_t want = 1;
	int v;

	if (qp->c.fd < 0 || qp->c.closing)
		return;
	if ((qp->c.rx.state == RY__TCP_RX_PAYLOAD ||
	     qp->c.rx.state == RY__TCP_RX_DRAIN) &&
	    qp->c.rx.left >= RY__TCP_LOWAT_MIN)
		want = qp->c.rx.left > INT_MAX ? INT_MAX : qp->c.rx.left;
	if (want == qp->c.rx.lowat)
		return;
	v = (int)want;
	if (!setsockopt(qp->c.fd, SOL_SOCKET, SO_RCVLOWAT, &v, sizeof(v)))
		qp->c.rx.lowat = want;
}

static void conn_rx(struct ry__tcp_qp *qp)
{
	conn_rx_round(qp);
	rx_lowat(qp);
}

void ry__tcp_conn_event(struct ry__tcp_qp *qp, uint32_t events)
{
	if (qp->c.closing) {
		if (events & (EPOLLHUP | EPOLLERR))
			ry__tcp_conn_abort(qp);
		else
			ry__tcp_conn_tx(qp);
		return;
	}
	if (qp->c.state == RY__TCP_C_CONNECTING &&
	    (events & (EPOLLOUT | EPOLLERR | EPOLLHUP))) {
		int rc = connect_done(qp);

		if (rc < 0) {
			ry__tcp_qp_conn_lost(qp, -rc);
			return;
		}
	}
	if (events & (EPOLLIN | EPOLLHUP | EPOLLERR))
		conn_rx(qp);
	if (qp->c.fd >= 0 && (events & EPOLLOUT))
		ry__tcp_conn_tx(qp);
}
