// SPDX-License-Identifier: BSD-2-Clause
/* Control sessions: sockets, buffers and the session's life (ctl_int.h). */
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

#include "src/ctl/ctl_int.h"

void ry__ctl_kill(struct ry__ctl *c, const char *why)
{
	struct ry_manager *m = c->c_mgr;

	if (c->c_dead)
		return;
	if (c->c_peer)
		RY_INFO("mgr", "peer %s: control channel closed: %s",
			c->c_peer->pr_name, why);
	c->c_dead = true;
	c->c_dnext = m->m_ctl_dead;
	m->m_ctl_dead = c;
	if (c->c_inbound) {
		m->m_nin--;
		ry__ctl_src_release(c);
		if (!c->c_admitted) {
			m->m_npending--;
			ry__list_del(&c->c_plink);
		}
	}
	ry__fd_unwatch(m, c->c_fd);
	if (c->c_peer)
		ry__ctl_ops(c)->co_peer_lost(c->c_peer, c);
	ry__ctl_bind(c, NULL);
}

/* c speaks for p now (NULL: for nobody); p->pr_nctl counts live sessions
 * bound to it, and a HELLO-made record that loses its last one waits on
 * m_reapq to be freed (ry__ctl_reap). */
void ry__ctl_bind(struct ry__ctl *c, struct ry_peer *p)
{
	struct ry_manager *m = c->c_mgr;
	struct ry_peer *o = c->c_peer;

	if (o == p)
		return;
	c->c_peer = p;
	if (p) {
		p->pr_nctl++;
		ry__list_del(&p->pr_rlink);
	}
	if (o && !--o->pr_nctl && o->pr_from_hello) {
		ry__list_add_tail(&m->m_reapq, &o->pr_rlink);
		m->m_reap_peers = true;
	}
}

bool ry__ctl_alive(const struct ry__ctl *c)
{
	return c && !c->c_dead && !c->c_connecting;
}

/* Tests: the live sessions' fds and directions, up to max; their count. */
unsigned ry__ctl_sessions(const struct ry_manager *m, int *fd, bool *inbound,
			  unsigned max)
{
	const struct ry__ctl *c;
	unsigned n = 0;

	for (c = m->m_ctls; c; c = c->c_next) {
		if (c->c_dead)
			continue;
		if (n < max) {
			fd[n] = c->c_fd;
			inbound[n] = c->c_inbound;
		}
		n++;
	}
	return n;
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
			ry__ctl_kill(c, strerror(errno));
			return;
		}
		c->c_woff += (size_t)n;
	}
	if (c->c_woff == c->c_wlen) {
		/* an idle session holds no buffer: with thousands of client
		 * nodes these were most of a connection's bytes (issue 13) */
		c->c_woff = c->c_wlen = 0;
		free(c->c_wbuf);
		c->c_wbuf = NULL;
		c->c_wcap = 0;
	}
	if ((c->c_wlen != 0) != c->c_want_out) {
		c->c_want_out = c->c_wlen != 0;
		ry__fd_watch(c->c_mgr, c->c_fd, &c->c_tag, c->c_want_out);
	}
}

void ry__ctl_send(struct ry__ctl *c, uint16_t type, const struct ry__wbuf *w)
{
	size_t tag = c && c->c_mac_on ? RY__MAC : 0;
	size_t need;

	if (!c || c->c_dead || w->bad)
		return;
	need = c->c_wlen + RY__CTL_HDR + w->n + tag;
	if (need > c->c_wcap) {
		size_t cap = c->c_wcap ? c->c_wcap : 4096;
		unsigned char *nb;

		if (need > CTL_WBUF_MAX) {
			ry__ctl_kill(c, "the other end does not read");
			return;
		}
		while (cap < need)
			cap *= 2;
		nb = realloc(c->c_wbuf, cap);
		if (!nb) {
			ry__ctl_kill(c, "out of memory");
			return;
		}
		c->c_wbuf = nb;
		c->c_wcap = cap;
	}
	ry__ctl_hdr_put(c->c_wbuf + c->c_wlen, (uint32_t)(w->n + tag), type);
	memcpy(c->c_wbuf + c->c_wlen + RY__CTL_HDR, w->b, w->n);
	if (tag)
		ry__auth_frame_mac(c->c_auth->a_ktx, c->c_auth->a_tx++, type,
				   RY__CTL_VERSION, w->b, w->n,
				   c->c_wbuf + c->c_wlen + RY__CTL_HDR + w->n);
	c->c_wlen += RY__CTL_HDR + w->n + tag;
	if (!c->c_connecting)
		ctl_flush(c);
}

/*
 * A peer host that dies without a FIN leaves its session open, and a new
 * incarnation is refused while it is (ry__ctl_admit_restart): the kernel probes
 * an idle session and closes it after CTL_KEEP_IDLE_S + CTL_KEEP_CNT *
 * CTL_KEEP_INTVL_S (13 s) of silence, and one whose sent data stays
 * unacknowledged after CTL_USER_TIMEOUT_MS.  Failures are ignored: the
 * session works without them (and a non-TCP fd in tests has none).
 */
static void ctl_keepalive(int fd)
{
	int on = 1, idle = CTL_KEEP_IDLE_S, intvl = CTL_KEEP_INTVL_S;
	int cnt = CTL_KEEP_CNT;
	unsigned ut = CTL_USER_TIMEOUT_MS;

	setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof(on));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
	setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
	setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &ut, sizeof(ut));
}

static struct ry__ctl *ctl_new(struct ry_manager *m, int fd, bool connecting)
{
	struct ry__ctl *c = calloc(1, sizeof(*c));
	int one = 1;

	if (!c)
		return NULL;
	if (m->m_auth) {
		c->c_auth = calloc(1, sizeof(*c->c_auth));
		if (!c->c_auth) {
			free(c);
			return NULL;
		}
	}
	c->c_mgr = m;
	c->c_fd = fd;
	c->c_connecting = connecting;
	c->c_tag.ft_kind = FDK_CTL;
	c->c_tag.ft_ptr = c;
	c->c_want_out = connecting;
	ry__list_init(&c->c_plink);
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	ctl_keepalive(fd);
	c->c_next = m->m_ctls;
	if (c->c_next)
		c->c_next->c_pprev = &c->c_next;
	c->c_pprev = &m->m_ctls;
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

/* Sessions that never said HELLO; the listening fd after EMFILE; a
 * rotated key's overlap. */
void ry__ctl_timers(struct ry_manager *m, uint64_t now)
{
	struct ry__ctl *c;

	ry__auth_expire(m, now);
	if (m->m_listen_paused && now >= m->m_listen_resume_ns) {
		m->m_listen_paused = false;
		ry__fd_watch(m, m->m_listen_fd, &m->m_listen_tag, false);
	}
	/* oldest first: the first one not yet due ends the look */
	while (!ry__list_empty(&m->m_ctl_pending)) {
		c = ry__list_entry(m->m_ctl_pending.next, struct ry__ctl,
				   c_plink);
		if (ry__since(now, c->c_born_ns) <= m->m_handshake_ns)
			break;
		ry__ctl_refuse_log(
		    m, &c->c_src,
		    c->c_auth && c->c_auth->a_pending
			? "no AUTH (proof of the key) within "
			  "handshake_timeout_ms"
			: "no HELLO within handshake_timeout_ms");
		ry__ctl_kill(c, "handshake timeout");
	}
}

int ry__ctl_listen(struct ry_manager *m, const struct ry__ctl_ops *ops)
{
	const char *addr =
	    m->m_cfg.control[0] ? m->m_cfg.control : "127.0.0.1:0";
	struct sockaddr_storage ss;
	socklen_t len;
	char host[64];
	int fd, one = 1, ret;

	ret = ry__ctl_admit_init(m, ops);
	if (ret)
		return ret;
	ret = ry__auth_init(m);
	if (ret)
		return ret;
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
	if (bind(fd, (struct sockaddr *)&ss, len) || listen(fd, SOMAXCONN)) {
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

/* fd, from the IP in ss, as an accepted session; fd is closed if refused. */
struct ry__ctl *ry__ctl_adopt(struct ry_manager *m, int fd,
			      const struct sockaddr_storage *ss)
{
	struct ry__ctl *c;
	struct ry__ip ip;
	const char *why;

	ry__ip_from_sa(ss, &ip);
	why = ry__ctl_admit_source(m, &ip);
	if (why) {
		ry__ctl_refuse_log(m, &ip, why);
		close(fd);
		return NULL;
	}
	c = ctl_new(m, fd, false);
	if (!c) {
		close(fd);
		return NULL;
	}
	c->c_inbound = true;
	c->c_src = ip;
	c->c_born_ns = ry__now_ns();
	m->m_nin++;
	m->m_npending++;
	ry__list_add_tail(&m->m_ctl_pending, &c->c_plink);
	if (ry__ctl_src_hold(c)) {
		ry__ctl_kill(c, "out of memory");
		return NULL;
	}
	return c;
}

void ry__ctl_accept(struct ry_manager *m)
{
	struct sockaddr_storage ss;
	socklen_t sl;
	int fd;

	for (;;) {
		sl = sizeof(ss);
		fd = accept4(m->m_listen_fd, (struct sockaddr *)&ss, &sl,
			     SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno != EAGAIN && errno != EWOULDBLOCK)
				break;
			return;
		}
		ry__ctl_adopt(m, fd, &ss);
	}
	/*
	 * Out of descriptors (or memory): the pending connection stays and
	 * the listening fd stays readable, so stop watching it for a while
	 * rather than spin.
	 */
	if (!m->m_listen_err_logged)
		RY_ERR("mgr",
		       "control %s: accept: %m; not accepting for 100 ms at a "
		       "time until it succeeds",
		       m->m_listen_addr);
	m->m_listen_err_logged = true;
	m->m_listen_paused = true;
	m->m_listen_resume_ns = ry__now_ns() + CTL_LISTEN_PAUSE_NS;
	ry__fd_unwatch(m, m->m_listen_fd);
}

/*
 * Dial from our control IP: the peer admits us by that source address
 * (ry__ctl_admit_source), which the kernel would otherwise choose by route (on
 * one host, the destination's own address).
 */
static void bind_source(struct ry_manager *m, int fd, int family)
{
	struct sockaddr_storage ss;
	struct ry__ip ip;
	socklen_t len;

	if (ry__ip_parse(m->m_listen_addr, &ip) || !ip.fam)
		return;
	memset(&ss, 0, sizeof(ss));
	if (family == AF_INET && ip.fam == AF_INET) {
		struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;

		if (!memcmp(ip.a, "\0\0\0\0", 4))
			return; /* listening on every address */
		s4->sin_family = AF_INET;
		memcpy(&s4->sin_addr, ip.a, 4);
		len = sizeof(*s4);
	} else if (family == AF_INET6 && ip.fam == AF_INET6) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;

		if (!memcmp(ip.a, &in6addr_any, 16))
			return;
		s6->sin6_family = AF_INET6;
		memcpy(&s6->sin6_addr, ip.a, 16);
		len = sizeof(*s6);
	} else {
		return;
	}
	if (bind(fd, (struct sockaddr *)&ss, len))
		RY_DBG("mgr", "control: bind to %s before dialing: %m",
		       m->m_listen_addr);
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
	bind_source(m, fd, ss.ss_family);
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
	ry__ctl_bind(c, p);
	p->pr_ctl = c;
	m->m_admit->as_ops->co_peer_state(p, PEER_CONNECTING);
	return 0;
}

void ry__ctl_drop_peer(struct ry_manager *m, struct ry_peer *p, const char *why)
{
	struct ry__ctl *c;

	for (c = m->m_ctls; c; c = c->c_next)
		if (!c->c_dead && c->c_peer == p) {
			ry__ctl_goodbye(c, BYE_DROPPED);
			ry__ctl_kill(c, why);
		}
}

void ry__ctl_goodbye_all(struct ry_manager *m)
{
	struct ry__ctl *c;

	for (c = m->m_ctls; c; c = c->c_next)
		ry__ctl_goodbye(c, BYE_CLOSING);
}

static bool ctl_rbuf(struct ry__ctl *c)
{
	if (c->c_rbuf)
		return true;
	c->c_rbuf = malloc(CTL_RBUF);
	if (!c->c_rbuf) {
		ry__ctl_kill(c, "out of memory");
		return false;
	}
	c->c_rcap = CTL_RBUF;
	return true;
}

/* Room left in the receive buffer; 0: the session is closed. */
static size_t ctl_room(struct ry__ctl *c)
{
	/* before admission: one HELLO, and nothing after it */
	size_t cap = c->c_admitted ? c->c_rcap : RY__CTL_HDR + CTL_MAX_FRAME;

	if (c->c_rlen >= cap) {
		ry__ctl_kill(c, "receive buffer full");
		return 0;
	}
	return cap - c->c_rlen;
}

static void ctl_read(struct ry__ctl *c)
{
	size_t room;
	ssize_t n;

	if (!ctl_rbuf(c))
		return;
	for (;;) {
		room = ctl_room(c);
		if (!room)
			return;
		n = recv(c->c_fd, c->c_rbuf + c->c_rlen, room, 0);
		if (n == 0) {
			ry__ctl_kill(c, "closed by peer");
			return;
		}
		if (n < 0) {
			if (errno == EAGAIN || errno == EINTR)
				break;
			ry__ctl_kill(c, strerror(errno));
			return;
		}
		c->c_rlen += (size_t)n;
		ry__ctl_frames(c);
		if (c->c_dead)
			return;
	}
	/* nothing half-read: no buffer while the session idles (ctl_flush) */
	if (!c->c_rlen) {
		free(c->c_rbuf);
		c->c_rbuf = NULL;
		c->c_rcap = 0;
	}
}

/* As if buf had arrived on c's socket, in as many reads as the receive
 * buffer needs: the fuzz target's way in (tests/fuzz/fuzz_ctl.c). */
void ry__ctl_feed(struct ry__ctl *c, const void *buf, size_t len)
{
	const unsigned char *p = buf;
	size_t room, n;

	if (c->c_dead || c->c_connecting || !ctl_rbuf(c))
		return;
	while (len && !c->c_dead) {
		room = ctl_room(c);
		if (!room)
			return;
		n = len < room ? len : room;
		memcpy(c->c_rbuf + c->c_rlen, p, n);
		c->c_rlen += n;
		p += n;
		len -= n;
		ry__ctl_frames(c);
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
			ry__ctl_kill(c, strerror(err));
			return;
		}
		c->c_connecting = false;
		/* for refusal logs: the other end, however we reached it */
		{
			struct sockaddr_storage ss;
			socklen_t sl = sizeof(ss);

			if (!getpeername(c->c_fd, (struct sockaddr *)&ss, &sl))
				ry__ip_from_sa(&ss, &c->c_src);
		}
		if (c->c_peer) {
			ry__ctl_ops(c)->co_peer_state(c->c_peer, PEER_HELLO);
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
