// SPDX-License-Identifier: BSD-2-Clause
/*
 * The control channel: TCP between managers, for rail discovery, QP
 * connection parameters and fences.  Everything is non-blocking and driven
 * by ry_progress(); a socket that misbehaves (short frame, unknown type,
 * oversized frame) is closed, and the peer redials with backoff.
 *
 * Framing: u32 body length, u16 type, u16 version (1), body; little-endian.
 *
 *   HELLO / HELLO_ACK  u64 node incarnation, str node name, str control
 *                      address, u8 n, n x { str rail, str network,
 *                      endpoint }   -- the dialer sends HELLO, the
 *                      listener answers HELLO_ACK: rail lists exchanged
 *   CONN_REQ / REP     u8 sender's rail, u8 receiver's rail, u32 attempt,
 *                      endpoint     -- QPN, PSN, cookie, GID, LID, port, MTU
 *   CONN_REJ           u8, u8, u32 attempt, i32 -errno
 *   FENCE_REQ          u64 gen, u8 sender's rail, u8 receiver's rail,
 *                      u32 sender's dead QPN, u32 receiver's QPN on it
 *   FENCE_ACK          u64 gen  -- sent after that QP is in ERR
 *
 *   str = u16 length + bytes; endpoint = u32 qpn, u32 psn, u64 cookie,
 *   16 bytes gid, u16 lid, u16 udp_port, u32 mtu.
 */
#include <endian.h>
#include <errno.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include "src/util/le.h"
#include "src/manager.h"

#define CTL_VERSION 1
#define CTL_HELLO 1
#define CTL_HELLO_ACK 2
#define CTL_FENCE_REQ 6
#define CTL_FENCE_ACK 7
#define CTL_MAX_FRAME 65536

struct ry__ctl {
	struct ry_manager *c_mgr;
	int c_fd;
	bool c_connecting;
	bool c_dead;
	struct ry_peer *c_peer;
	struct ry__fdtag c_tag;
	unsigned char *c_rbuf;
	size_t c_rlen, c_rcap;
	unsigned char *c_wbuf;
	size_t c_wlen, c_woff, c_wcap;
	bool c_want_out;
	struct ry__ctl *c_next;
};

/* ---- encoding ---- */

struct wbuf {
	unsigned char b[CTL_MAX_FRAME];
	size_t n;
	bool bad;
};

static void w_bytes(struct wbuf *w, const void *p, size_t n)
{
	if (w->n + n > sizeof(w->b)) {
		w->bad = true;
		return;
	}
	memcpy(w->b + w->n, p, n);
	w->n += n;
}

static void w_u8(struct wbuf *w, uint8_t v)
{
	w_bytes(w, &v, 1);
}

static void w_u16(struct wbuf *w, uint16_t v)
{
	unsigned char b[2];

	ry__put_le16(b, v);
	w_bytes(w, b, 2);
}

static void w_u32(struct wbuf *w, uint32_t v)
{
	unsigned char b[4];

	ry__put_le32(b, v);
	w_bytes(w, b, 4);
}

static void w_u64(struct wbuf *w, uint64_t v)
{
	unsigned char b[8];

	ry__put_le64(b, v);
	w_bytes(w, b, 8);
}

static void w_str(struct wbuf *w, const char *s)
{
	size_t n = strlen(s);

	w_u16(w, (uint16_t)n);
	w_bytes(w, s, n);
}

static void w_ep(struct wbuf *w, const struct ry_qp_endpoint *ep)
{
	w_u32(w, ep->qpn);
	w_u32(w, ep->psn);
	w_u64(w, ep->cookie);
	w_bytes(w, ep->gid, 16);
	w_u16(w, ep->lid);
	w_u16(w, ep->udp_port);
	w_u32(w, ep->mtu);
}

struct rbuf {
	const unsigned char *p;
	size_t n;
	bool bad;
};

static void r_bytes(struct rbuf *r, void *out, size_t n)
{
	if (r->n < n) {
		r->bad = true;
		memset(out, 0, n);
		return;
	}
	memcpy(out, r->p, n);
	r->p += n;
	r->n -= n;
}

static uint8_t r_u8(struct rbuf *r)
{
	uint8_t v;

	r_bytes(r, &v, 1);
	return v;
}

static uint16_t r_u16(struct rbuf *r)
{
	unsigned char b[2];

	r_bytes(r, b, 2);
	return ry__get_le16(b);
}

static uint32_t r_u32(struct rbuf *r)
{
	unsigned char b[4];

	r_bytes(r, b, 4);
	return ry__get_le32(b);
}

static uint64_t r_u64(struct rbuf *r)
{
	unsigned char b[8];

	r_bytes(r, b, 8);
	return ry__get_le64(b);
}

static void r_str(struct rbuf *r, char *out, size_t cap)
{
	size_t n = r_u16(r);

	if (n >= cap || r->n < n) {
		r->bad = true;
		out[0] = 0;
		return;
	}
	r_bytes(r, out, n);
	out[n] = 0;
}

static void r_ep(struct rbuf *r, struct ry_qp_endpoint *ep)
{
	ep->qpn = r_u32(r);
	ep->psn = r_u32(r);
	ep->cookie = r_u64(r);
	r_bytes(r, ep->gid, 16);
	ep->lid = r_u16(r);
	ep->udp_port = r_u16(r);
	ep->mtu = r_u32(r);
}

/* ---- sockets ---- */

static void ctl_kill(struct ry__ctl *c, const char *why)
{
	if (c->c_dead)
		return;
	if (c->c_peer)
		RY_INFO("mgr", "peer %s: control channel closed: %s",
			c->c_peer->pr_name, why);
	c->c_dead = true;
	ry__fd_unwatch(c->c_mgr, c->c_fd);
	if (c->c_peer)
		ry__peer_ctl_lost(c->c_peer, c);
	c->c_peer = NULL;
}

bool ry__ctl_alive(const struct ry__ctl *c)
{
	return c && !c->c_dead && !c->c_connecting;
}

static void ctl_flush(struct ry__ctl *c)
{
	ssize_t n;

	while (c->c_woff < c->c_wlen) {
		n = send(c->c_fd, c->c_wbuf + c->c_woff, c->c_wlen - c->c_woff,
			 MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				break;
			ctl_kill(c, strerror(errno));
			return;
		}
		c->c_woff += (size_t)n;
	}
	if (c->c_woff == c->c_wlen)
		c->c_woff = c->c_wlen = 0;
	if ((c->c_wlen != 0) != c->c_want_out) {
		c->c_want_out = c->c_wlen != 0;
		ry__fd_watch(c->c_mgr, c->c_fd, &c->c_tag, c->c_want_out);
	}
}

static void ctl_send(struct ry__ctl *c, uint16_t type, const struct wbuf *w)
{
	unsigned char hdr[8];
	uint32_t len = htole32((uint32_t)w->n);
	uint16_t t = htole16(type), v = htole16(CTL_VERSION);
	size_t need;

	if (!c || c->c_dead || w->bad)
		return;
	need = c->c_wlen + sizeof(hdr) + w->n;
	if (need > c->c_wcap) {
		size_t cap = c->c_wcap ? c->c_wcap : 4096;
		unsigned char *nb;

		while (cap < need)
			cap *= 2;
		nb = realloc(c->c_wbuf, cap);
		if (!nb) {
			ctl_kill(c, "out of memory");
			return;
		}
		c->c_wbuf = nb;
		c->c_wcap = cap;
	}
	memcpy(hdr, &len, 4);
	memcpy(hdr + 4, &t, 2);
	memcpy(hdr + 6, &v, 2);
	memcpy(c->c_wbuf + c->c_wlen, hdr, sizeof(hdr));
	memcpy(c->c_wbuf + c->c_wlen + sizeof(hdr), w->b, w->n);
	c->c_wlen += sizeof(hdr) + w->n;
	if (!c->c_connecting)
		ctl_flush(c);
}

static struct ry__ctl *ctl_new(struct ry_manager *m, int fd, bool connecting)
{
	struct ry__ctl *c = calloc(1, sizeof(*c));
	int one = 1;

	if (!c)
		return NULL;
	c->c_mgr = m;
	c->c_fd = fd;
	c->c_connecting = connecting;
	c->c_tag.ft_kind = FDK_CTL;
	c->c_tag.ft_ptr = c;
	c->c_want_out = connecting;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	c->c_next = m->m_ctls;
	m->m_ctls = c;
	ry__fd_watch(m, fd, &c->c_tag, connecting);
	return c;
}

static int parse_addr(const char *addr, struct sockaddr_storage *ss,
		      socklen_t *len)
{
	char host[RY_ADDR_MAX], *colon;
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM,
				 .ai_flags = AI_NUMERICSERV};
	struct addrinfo *res;
	int ret;

	snprintf(host, sizeof(host), "%s", addr);
	colon = strrchr(host, ':');
	if (!colon)
		return -EINVAL;
	*colon = 0;
	if (host[0] == '[') { /* [v6]:port */
		memmove(host, host + 1, strlen(host));
		if (host[0] && host[strlen(host) - 1] == ']')
			host[strlen(host) - 1] = 0;
	}
	ret =
	    getaddrinfo(host[0] ? host : "127.0.0.1", colon + 1, &hints, &res);
	if (ret)
		return -EADDRNOTAVAIL;
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	*len = res->ai_addrlen;
	freeaddrinfo(res);
	return 0;
}

int ry__ctl_listen(struct ry_manager *m)
{
	const char *addr =
	    m->m_cfg.control[0] ? m->m_cfg.control : "127.0.0.1:0";
	struct sockaddr_storage ss;
	socklen_t len;
	char host[64];
	int fd, one = 1, ret;

	ret = parse_addr(addr, &ss, &len);
	if (ret) {
		RY_ERR("mgr", "control address %s: cannot resolve", addr);
		return ret;
	}
	fd =
	    socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		ret = -errno;
		RY_ERR("mgr", "control socket: %m");
		return ret;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(fd, (struct sockaddr *)&ss, len) || listen(fd, 128)) {
		ret = -errno;
		RY_ERR("mgr", "control address %s: %m", addr);
		close(fd);
		return ret;
	}
	len = sizeof(ss);
	getsockname(fd, (struct sockaddr *)&ss, &len);
	if (ss.ss_family == AF_INET6) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;

		inet_ntop(AF_INET6, &s6->sin6_addr, host, sizeof(host));
		snprintf(m->m_listen_addr, sizeof(m->m_listen_addr), "[%s]:%u",
			 host, ntohs(s6->sin6_port));
	} else {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;

		inet_ntop(AF_INET, &s4->sin_addr, host, sizeof(host));
		snprintf(m->m_listen_addr, sizeof(m->m_listen_addr), "%s:%u",
			 host, ntohs(s4->sin_port));
	}
	m->m_listen_fd = fd;
	m->m_listen_tag.ft_kind = FDK_LISTEN;
	m->m_listen_tag.ft_ptr = m;
	ry__fd_watch(m, fd, &m->m_listen_tag, false);
	return 0;
}

void ry__ctl_accept(struct ry_manager *m)
{
	int fd;

	while ((fd = accept4(m->m_listen_fd, NULL, NULL,
			     SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
		if (!ctl_new(m, fd, false))
			close(fd);
	}
}

int ry__ctl_dial(struct ry_peer *p)
{
	struct ry_manager *m = p->pr_mgr;
	struct sockaddr_storage ss;
	struct ry__ctl *c;
	socklen_t len;
	int fd, ret;

	ret = parse_addr(p->pr_addr, &ss, &len);
	if (ret) {
		RY_ERR("mgr", "peer %s: cannot resolve %s", p->pr_name,
		       p->pr_addr);
		return ret;
	}
	fd =
	    socket(ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&ss, len) && errno != EINPROGRESS) {
		ret = -errno;
		RY_DBG("mgr", "peer %s: connect %s: %m", p->pr_name,
		       p->pr_addr);
		close(fd);
		return ret;
	}
	c = ctl_new(m, fd, true);
	if (!c) {
		close(fd);
		return -ENOMEM;
	}
	c->c_peer = p;
	p->pr_ctl = c;
	p->pr_state = PEER_CONNECTING;
	return 0;
}

void ry__ctl_send_hello(struct ry__ctl *c, bool reply)
{
	struct ry_manager *m = c->c_mgr;
	struct wbuf *w = malloc(sizeof(*w));
	unsigned i;

	if (!w)
		return;
	w->n = 0;
	w->bad = false;
	w_u64(w, m->m_node);
	w_str(w, m->m_cfg.node);
	w_str(w, m->m_listen_addr);
	w_u8(w, (uint8_t)m->m_nrails);
	for (i = 0; i < m->m_nrails; i++) {
		w_str(w, m->m_rails[i].lr_cfg.name);
		w_str(w, m->m_rails[i].lr_cfg.network);
		w_ep(w, &m->m_rails[i].lr_attr.local);
	}
	ctl_send(c, reply ? CTL_HELLO_ACK : CTL_HELLO, w);
	free(w);
}

void ry__ctl_send_conn(struct ry__ctl *c, int type, unsigned src, unsigned dst,
		       uint32_t attempt, const struct ry_qp_endpoint *ep,
		       int err)
{
	struct wbuf *w = malloc(sizeof(*w));

	if (!w)
		return;
	w->n = 0;
	w->bad = false;
	w_u8(w, (uint8_t)src);
	w_u8(w, (uint8_t)dst);
	w_u32(w, attempt);
	if (type == CTL_CONN_REJ)
		w_u32(w, (uint32_t)err);
	else
		w_ep(w, ep);
	ctl_send(c, (uint16_t)type, w);
	free(w);
}

void ry__ctl_send_fence(struct ry__ctl *c, bool ack, uint64_t gen, unsigned src,
			unsigned dst, uint32_t src_qpn, uint32_t dst_qpn)
{
	struct wbuf *w = malloc(sizeof(*w));

	if (!w)
		return;
	w->n = 0;
	w->bad = false;
	w_u64(w, gen);
	if (!ack) {
		w_u8(w, (uint8_t)src);
		w_u8(w, (uint8_t)dst);
		w_u32(w, src_qpn);
		w_u32(w, dst_qpn);
	}
	ctl_send(c, ack ? CTL_FENCE_ACK : CTL_FENCE_REQ, w);
	free(w);
}

static int on_hello(struct ry__ctl *c, struct rbuf *r, bool reply)
{
	struct ry_manager *m = c->c_mgr;
	char name[RY_NAME_MAX], addr[RY_ADDR_MAX];
	struct ry__rrail rr[RY_MAX_RAILS];
	struct ry_peer *p;
	uint64_t node;
	unsigned n, i;
	bool fresh;

	node = r_u64(r);
	r_str(r, name, sizeof(name));
	r_str(r, addr, sizeof(addr));
	n = r_u8(r);
	if (n > RY_MAX_RAILS || !node)
		return -EBADMSG;
	for (i = 0; i < n; i++) {
		r_str(r, rr[i].rr_name, sizeof(rr[i].rr_name));
		r_str(r, rr[i].rr_network, sizeof(rr[i].rr_network));
		r_ep(r, &rr[i].rr_ep);
	}
	if (r->bad)
		return -EBADMSG;
	if (node == m->m_node)
		return -ELOOP; /* dialed ourselves */
	p = c->c_peer;
	if (!p) {
		p = ry__peer_find(m, name, addr);
		if (!p)
			p = ry__peer_new(m, name, addr);
		if (!p)
			return -ENOMEM;
		c->c_peer = p;
		if (!ry__ctl_alive(p->pr_ctl))
			p->pr_ctl = c;
	}
	if (!p->pr_addr[0] || !p->pr_dial)
		snprintf(p->pr_addr, sizeof(p->pr_addr), "%s", addr);
	snprintf(p->pr_node_name, sizeof(p->pr_node_name), "%s", name);
	fresh = p->pr_node && p->pr_node != node;
	p->pr_node = node;
	p->pr_nrrails = n;
	memcpy(p->pr_rrails, rr, n * sizeof(rr[0]));
	if (!reply)
		ry__ctl_send_hello(c, true);
	ry__peer_ready(p, fresh, reply);
	return 0;
}

static int dispatch(struct ry__ctl *c, uint16_t type, struct rbuf *r)
{
	struct ry_qp_endpoint ep;
	struct ry_peer *p = c->c_peer;
	unsigned src, dst;
	uint32_t attempt, q1, q2;
	uint64_t gen;
	int err = 0;

	if (type == CTL_HELLO || type == CTL_HELLO_ACK)
		return on_hello(c, r, type == CTL_HELLO_ACK);
	if (!p || !p->pr_node)
		return -EPROTO; /* nothing before HELLO */
	switch (type) {
	case CTL_CONN_REQ:
	case CTL_CONN_REP:
	case CTL_CONN_REJ:
		src = r_u8(r);
		dst = r_u8(r);
		attempt = r_u32(r);
		if (type == CTL_CONN_REJ)
			err = (int)r_u32(r);
		else
			r_ep(r, &ep);
		if (r->bad || src >= RY_MAX_RAILS || dst >= RY_MAX_RAILS)
			return -EBADMSG;
		if (type == CTL_CONN_REQ)
			ry__conn_on_req(p, src, dst, attempt, &ep, c);
		else if (type == CTL_CONN_REP)
			ry__conn_on_rep(p, src, dst, attempt, &ep);
		else
			ry__conn_on_rej(p, src, dst, attempt, err);
		return 0;
	case CTL_FENCE_REQ:
		gen = r_u64(r);
		src = r_u8(r);
		dst = r_u8(r);
		q1 = r_u32(r);
		q2 = r_u32(r);
		if (r->bad || src >= RY_MAX_RAILS || dst >= RY_MAX_RAILS)
			return -EBADMSG;
		ry__fence_on_req(p, c, gen, src, dst, q1, q2);
		return 0;
	case CTL_FENCE_ACK:
		gen = r_u64(r);
		if (r->bad)
			return -EBADMSG;
		ry__fence_on_ack(p, gen);
		return 0;
	}
	return -EPROTO;
}

static void ctl_read(struct ry__ctl *c)
{
	ssize_t n;

	for (;;) {
		if (c->c_rcap - c->c_rlen < 4096) {
			size_t cap = c->c_rcap ? c->c_rcap * 2 : 8192;
			unsigned char *nb;

			if (cap > 4 * CTL_MAX_FRAME) {
				ctl_kill(c, "receive buffer overflow");
				return;
			}
			nb = realloc(c->c_rbuf, cap);
			if (!nb) {
				ctl_kill(c, "out of memory");
				return;
			}
			c->c_rbuf = nb;
			c->c_rcap = cap;
		}
		n = recv(c->c_fd, c->c_rbuf + c->c_rlen, c->c_rcap - c->c_rlen,
			 0);
		if (n == 0) {
			ctl_kill(c, "closed by peer");
			return;
		}
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				break;
			ctl_kill(c, strerror(errno));
			return;
		}
		c->c_rlen += (size_t)n;
		/* handle whole frames */
		while (c->c_rlen >= 8 && !c->c_dead) {
			uint32_t len;
			uint16_t type, ver;
			struct rbuf r;
			int ret;

			memcpy(&len, c->c_rbuf, 4);
			memcpy(&type, c->c_rbuf + 4, 2);
			memcpy(&ver, c->c_rbuf + 6, 2);
			len = le32toh(len);
			type = le16toh(type);
			if (le16toh(ver) != CTL_VERSION ||
			    len > CTL_MAX_FRAME) {
				ctl_kill(c, "bad frame");
				return;
			}
			if (c->c_rlen < 8 + len)
				break;
			r.p = c->c_rbuf + 8;
			r.n = len;
			r.bad = false;
			ret = dispatch(c, type, &r);
			if (ret) {
				RY_WARN("mgr", "control message type %u: %s",
					type, strerror(-ret));
				ctl_kill(c, "protocol error");
				return;
			}
			memmove(c->c_rbuf, c->c_rbuf + 8 + len,
				c->c_rlen - 8 - len);
			c->c_rlen -= 8 + len;
		}
		if (c->c_dead)
			return;
	}
}

void ry__ctl_io(struct ry__ctl *c, uint32_t events)
{
	if (c->c_dead)
		return;
	if (c->c_connecting) {
		int err = 0;
		socklen_t l = sizeof(err);

		if (!(events & (EPOLLOUT | EPOLLERR | EPOLLHUP)))
			return;
		getsockopt(c->c_fd, SOL_SOCKET, SO_ERROR, &err, &l);
		if (err) {
			ctl_kill(c, strerror(err));
			return;
		}
		c->c_connecting = false;
		if (c->c_peer) {
			c->c_peer->pr_state = PEER_HELLO;
			ry__ctl_send_hello(c, false);
		}
		ctl_flush(c);
		return;
	}
	if (events & (EPOLLIN | EPOLLERR | EPOLLHUP))
		ctl_read(c);
	if (!c->c_dead && (events & EPOLLOUT))
		ctl_flush(c);
}

static void ctl_free(struct ry__ctl *c)
{
	close(c->c_fd);
	free(c->c_rbuf);
	free(c->c_wbuf);
	free(c);
}

void ry__ctl_reap(struct ry_manager *m)
{
	struct ry__ctl **pp = &m->m_ctls, *c;

	while ((c = *pp)) {
		if (c->c_dead) {
			*pp = c->c_next;
			ctl_free(c);
		} else {
			pp = &c->c_next;
		}
	}
}

void ry__ctl_close_all(struct ry_manager *m)
{
	struct ry__ctl *c;

	while ((c = m->m_ctls)) {
		m->m_ctls = c->c_next;
		if (!c->c_dead)
			ry__fd_unwatch(m, c->c_fd);
		ctl_free(c);
	}
	if (m->m_listen_fd >= 0) {
		ry__fd_unwatch(m, m->m_listen_fd);
		close(m->m_listen_fd);
		m->m_listen_fd = -1;
	}
}
