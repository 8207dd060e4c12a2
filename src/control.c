// SPDX-License-Identifier: BSD-2-Clause
/*
 * The control channel: TCP between managers, for rail discovery, QP
 * connection parameters and fences.  Everything is non-blocking and driven
 * by ry_progress(); a socket that misbehaves (short frame, unknown type,
 * oversized frame) is closed, and the peer redials with backoff.
 *
 * Framing: u32 body length, u16 type, u16 version (2), body; little-endian.
 * A frame of another version is refused with a message naming both.
 *
 *   HELLO / HELLO_ACK  u64 node incarnation, str node name, str control
 *                      address, u8 n, n x { str rail, str network,
 *                      endpoint }, u8 auth (bit 0: key_file, bit 1:
 *                      data_mac, only with bit 0), and with a key:
 *                      32-byte nonce, and in HELLO_ACK the listener's
 *                      32-byte proof   -- the dialer sends HELLO, the
 *                      listener answers HELLO_ACK: rail lists exchanged
 *   AUTH               32-byte proof: the dialer's, after HELLO_ACK
 *   REFUSE             u8 why (enum refusal): sent before closing a
 *                      session refused for authentication, so both ends
 *                      can say why
 *   CONN_REQ / REP     u8 sender's rail, u8 receiver's rail, u32 attempt,
 *                      endpoint     -- QPN, PSN, cookie, GID, LID, port, MTU
 *                      u64 addr, u32 rkey, u32 len -- the sender rail's
 *                      path MTU probe slice (conn.c; absent: no probes)
 *   CONN_REJ           u8, u8, u32 attempt, i32 -errno: -ENETDOWN our
 *                      link of that rail is down (we connect when it is
 *                      back), -EBUSY too many attempts in flight on it,
 *                      -EINVAL no such rail, -EAGAIN, -EIO (conn.c)
 *   FENCE_REQ          u64 gen, u8 sender's rail, u8 receiver's rail,
 *                      u32 sender's dead QPN, u32 receiver's QPN on it
 *   FENCE_ACK          u64 gen  -- sent after that QP is in ERR
 *
 *   str = u16 length + bytes; endpoint = u32 qpn, u32 psn, u64 cookie,
 *   16 bytes gid, u16 lid, u16 udp_port, u32 mtu.
 *
 * Admission (admit_source, admit_hello): an inbound session is refused at
 * accept() unless its source may speak at all (a configured or app-named
 * peer's IP, an accept prefix, or "any") and the session bounds allow it;
 * it acts only after its HELLO is admitted by admit_hello().  Until then it
 * may send one HELLO (and, with a key, one AUTH) and nothing else, within
 * handshake_timeout_ms.  A
 * session we dialed is admitted when its HELLO_ACK arrives: we chose the
 * address.  Only admitted sessions act, and only for the peer they were
 * admitted as.
 *
 * Dead peers (ctl_keepalive): without a key a new incarnation is refused
 * while the old one's session lives (admit_restart; with a key the
 * handshake proves it and the old session is closed), and a host that
 * died without a FIN never closes it, so every session has TCP keepalive (about
 * 13 s of silence) and TCP_USER_TIMEOUT (15 s of unacknowledged data): the
 * kernel notices, not timers of ours, and the read path closes the session as
 * for any error.
 *
 * Authentication (key_file; auth.c has the derivations): the dialer's HELLO
 * carries a fresh nonce; the listener answers, before deciding anything,
 * with HELLO_ACK carrying its own nonce and its proof over the transcript
 * (both HELLO bodies: names, incarnations, control addresses, nonces); the
 * dialer checks it and answers AUTH with its own proof; the listener
 * admits the session only then, and admit_hello() runs again on what was
 * proven.  From then on every frame in each direction carries a 32-byte
 * HMAC (appended; counted in the body length) under that direction's
 * session key over an implicit frame counter, type, version and body: a
 * bad one closes the session before the frame acts.  A node with a key
 * refuses a peer without one, and the other way round, with REFUSE.
 * With data_mac, a connection's packet keys come from the session its
 * CONN_REQ/REP went over (ry__ctl_conn_keys), so both ends derive them
 * from one transcript.
 */
#include <endian.h>
#include <errno.h>
#include <malloc.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include <sodium.h>

#include "config/config_int.h"
#include "src/util/le.h"
#include "src/manager.h"

#define CTL_VERSION 2
#define CTL_EP_LEN 40 /* endpoint on the wire */
/* The largest legitimate frame body: a HELLO with every rail, names and
 * addresses at their longest (r_str refuses cap - 1 and more). */
#define CTL_STR_MAX(cap) (2 + (cap)-1)
#define CTL_MAX_FRAME                                                          \
	(8 + CTL_STR_MAX(RY_NAME_MAX) + CTL_STR_MAX(RY_ADDR_MAX) + 1 +         \
	 RY_MAX_RAILS * (2 * CTL_STR_MAX(RY_NAME_MAX) + CTL_EP_LEN) + 1 +      \
	 RY__NONCE + 2 * RY__MAC)
#define CTL_RBUF (2 * (8 + CTL_MAX_FRAME))
/* Replies pile up here when the other end does not read. */
#define CTL_WBUF_MAX (256u << 10)
#define CTL_REFUSE_SLOTS 64
#define CTL_REFUSE_QUIET_NS 10000000000ull
#define CTL_LISTEN_PAUSE_NS 100000000ull
/* Dead-peer detection (ctl_keepalive); tests/manager/test_admission.c
 * checks them on live sessions. */
#define CTL_KEEP_IDLE_S 5
#define CTL_KEEP_INTVL_S 2
#define CTL_KEEP_CNT 4
#define CTL_USER_TIMEOUT_MS 15000u

struct ry__ctl {
	struct ry_manager *c_mgr;
	int c_fd;
	bool c_connecting;
	bool c_dead;
	bool c_inbound;	 /* accepted, not dialed */
	bool c_admitted; /* may act for c_peer */
	struct ry__ip c_src;
	struct ry__srcn *c_srcn; /* inbound and alive: its source's count */
	struct ry__list c_plink; /* m_ctl_pending while not admitted */
	uint64_t c_born_ns;
	char c_claim[RY_ADDR_MAX]; /* the control address its HELLO claimed */
	struct ry_peer *c_peer;
	struct ry__fdtag c_tag;
	unsigned char *c_rbuf;
	size_t c_rlen, c_rcap;
	unsigned char *c_wbuf;
	size_t c_wlen, c_woff, c_wcap;
	bool c_want_out;
	struct ry__ctl_auth *c_auth; /* with a key only */
	bool c_mac_on;		     /* every frame carries a MAC now */
	/* m_ctls (alive and killed, until reaped); m_ctl_dead once killed */
	struct ry__ctl *c_next, **c_pprev, *c_dnext;
};

/* Live inbound sessions from one source IP (admit_source's bound), so
 * that an accept does not count them in a walk over every session. */
struct ry__srcn {
	struct ry__hnode sn_h;
	struct ry__ip sn_ip;
	unsigned sn_n;
};

static uint64_t src_key(const struct ry_manager *m, const struct ry__ip *ip)
{
	return ry__ip_key(m, ip, false);
}

static struct ry__srcn *src_find(struct ry_manager *m, const struct ry__ip *ip)
{
	struct ry__hnode *x;
	struct ry__srcn *sn;

	ry__hidx_for_each(x, &m->m_ctl_src, src_key(m, ip))
	{
		sn = container_of(x, struct ry__srcn, sn_h);
		if (ry__ip_same_host(&sn->sn_ip, ip))
			return sn;
	}
	return NULL;
}

/* Count inbound session c against its source; -ENOMEM. */
static int src_hold(struct ry__ctl *c)
{
	struct ry_manager *m = c->c_mgr;
	struct ry__srcn *sn = src_find(m, &c->c_src);

	if (!sn) {
		sn = calloc(1, sizeof(*sn));
		if (!sn)
			return -ENOMEM;
		sn->sn_ip = c->c_src;
		sn->sn_ip.port = 0;
		ry__hidx_add(&m->m_ctl_src, &sn->sn_h, src_key(m, &c->c_src));
	}
	sn->sn_n++;
	c->c_srcn = sn;
	return 0;
}

static void src_release(struct ry__ctl *c)
{
	struct ry__srcn *sn = c->c_srcn;

	if (!sn)
		return;
	c->c_srcn = NULL;
	if (--sn->sn_n)
		return;
	ry__hidx_del(&c->c_mgr->m_ctl_src, &sn->sn_h);
	free(sn);
}

/* c speaks for p now (NULL: for nobody); p->pr_nctl counts live sessions
 * bound to it, and a HELLO-made record that loses its last one waits on
 * m_reapq to be freed (ry__ctl_reap). */
static void ctl_bind(struct ry__ctl *c, struct ry_peer *p)
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

/* What a HELLO or HELLO_ACK says. */
struct hello {
	uint64_t node;
	char name[RY_NAME_MAX], addr[RY_ADDR_MAX];
	unsigned n;
	struct ry__rrail rr[RY_MAX_RAILS];
	bool auth, data_mac;
	unsigned char nonce[RY__NONCE], proof[RY__MAC];
};

/* A session's handshake and frame keys; wiped when it is freed. */
struct ry__ctl_auth {
	unsigned char a_nonce[RY__NONCE]; /* ours */
	unsigned char a_hello[RY__MAC];	  /* hash of the HELLO body */
	unsigned char a_t[RY__MAC];	  /* transcript */
	unsigned char a_ktx[RY__MAC], a_krx[RY__MAC];
	unsigned char a_kdata[RY__MAC]; /* data_mac keys come from it */
	uint64_t a_tx, a_rx;		/* frame counters */
	struct hello *a_pending;	/* listener: the HELLO, until AUTH */
};

enum refusal {
	REF_KEY_DIFFERS = 1, /* a proof did not verify */
	REF_KEY_REQUIRED,    /* the sender has a key; the other end sent none */
	REF_NO_KEY,	     /* the sender has no key; the other end has one */
	REF_DATA_MAC,	     /* the two ends' data_mac settings differ */
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
		src_release(c);
		if (!c->c_admitted) {
			m->m_npending--;
			ry__list_del(&c->c_plink);
		}
	}
	ry__fd_unwatch(m, c->c_fd);
	if (c->c_peer)
		ry__peer_ctl_lost(c->c_peer, c);
	ctl_bind(c, NULL);
}

bool ry__ctl_alive(const struct ry__ctl *c)
{
	return c && !c->c_dead && !c->c_connecting;
}

int ry__ctl_conn_keys(const struct ry__ctl *c, const struct ry_qp_endpoint *loc,
		      const struct ry_qp_endpoint *rem, struct ry_qp_attr *attr)
{
	if (!ry__ctl_alive(c) || !c->c_admitted || !c->c_mac_on || !c->c_auth)
		return -EPERM;
	ry__auth_conn_keys(c->c_auth->a_kdata, loc, rem, attr->mac_tx,
			   attr->mac_rx);
	attr->mac = true;
	return 0;
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
			ctl_kill(c, strerror(errno));
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

static void ctl_send(struct ry__ctl *c, uint16_t type, const struct wbuf *w)
{
	unsigned char hdr[8];
	size_t tag = c && c->c_mac_on ? RY__MAC : 0;
	uint32_t len = htole32((uint32_t)(w->n + tag));
	uint16_t t = htole16(type), v = htole16(CTL_VERSION);
	size_t need;

	if (!c || c->c_dead || w->bad)
		return;
	need = c->c_wlen + sizeof(hdr) + w->n + tag;
	if (need > c->c_wcap) {
		size_t cap = c->c_wcap ? c->c_wcap : 4096;
		unsigned char *nb;

		if (need > CTL_WBUF_MAX) {
			ctl_kill(c, "the other end does not read");
			return;
		}
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
	if (tag)
		ry__auth_frame_mac(c->c_auth->a_ktx, c->c_auth->a_tx++, type,
				   CTL_VERSION, w->b, w->n,
				   c->c_wbuf + c->c_wlen + sizeof(hdr) + w->n);
	c->c_wlen += sizeof(hdr) + w->n + tag;
	if (!c->c_connecting)
		ctl_flush(c);
}

/*
 * A peer host that dies without a FIN leaves its session open, and a new
 * incarnation is refused while it is (admit_restart): the kernel probes an
 * idle session and closes it after CTL_KEEP_IDLE_S + CTL_KEEP_CNT *
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

/* ---- admission ---- */

struct ry__refusal {
	struct ry__ip rf_ip;
	uint64_t rf_ns;
	unsigned rf_quiet; /* refusals not logged since rf_ns */
};

struct ry__admit_state {
	bool as_any;
	unsigned as_n;
	struct ry__ip as_pfx[RY_MAX_ACCEPT];
	unsigned as_len[RY_MAX_ACCEPT];
	/* fixed size: a flood of refusals allocates nothing */
	struct ry__refusal as_refused[CTL_REFUSE_SLOTS];
};

static void ip_unmap(struct ry__ip *ip)
{
	static const unsigned char mapped[12] = {0, 0, 0, 0, 0,	   0,
						 0, 0, 0, 0, 0xff, 0xff};

	if (ip->fam == AF_INET6 && !memcmp(ip->a, mapped, 12)) {
		memmove(ip->a, ip->a + 12, 4);
		memset(ip->a + 4, 0, 12);
		ip->fam = AF_INET;
	}
}

static void ip_from_sa(const struct sockaddr_storage *ss, struct ry__ip *ip)
{
	memset(ip, 0, sizeof(*ip));
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *s4 = (const void *)ss;

		ip->fam = AF_INET;
		memcpy(ip->a, &s4->sin_addr, 4);
		ip->port = ntohs(s4->sin_port);
	} else if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const void *)ss;

		ip->fam = AF_INET6;
		memcpy(ip->a, &s6->sin6_addr, 16);
		ip->port = ntohs(s6->sin6_port);
		ip_unmap(ip);
	}
}

/* "ip:port" or "[v6]:port", numeric only: what a HELLO claims must never
 * make us ask a resolver. */
int ry__ip_parse(const char *s, struct ry__ip *ip)
{
	const char *colon = strrchr(s, ':');
	char host[RY_ADDR_MAX], *end;
	unsigned long port;
	size_t hl;

	memset(ip, 0, sizeof(*ip));
	if (!colon)
		return -EINVAL;
	hl = (size_t)(colon - s);
	if (hl >= sizeof(host))
		return -EINVAL;
	memcpy(host, s, hl);
	host[hl] = 0;
	if (host[0] == '[') {
		if (hl < 2 || host[hl - 1] != ']')
			return -EINVAL;
		host[hl - 1] = 0;
		memmove(host, host + 1, hl - 1);
	}
	errno = 0;
	port = strtoul(colon + 1, &end, 10);
	if (errno || end == colon + 1 || *end || port > 65535)
		return -EINVAL;
	ip->port = (uint16_t)port;
	if (inet_pton(AF_INET, host, ip->a) == 1)
		ip->fam = AF_INET;
	else if (inet_pton(AF_INET6, host, ip->a) == 1)
		ip->fam = AF_INET6;
	else
		return -EINVAL;
	ip_unmap(ip);
	return 0;
}

bool ry__ip_same_host(const struct ry__ip *a, const struct ry__ip *b)
{
	return a->fam && a->fam == b->fam &&
	       !memcmp(a->a, b->a, a->fam == AF_INET ? 4 : 16);
}

bool ry__addr_same(const char *x, const char *y)
{
	struct ry__ip a, b;

	if (ry__ip_parse(x, &a) || ry__ip_parse(y, &b))
		return !strcmp(x, y);
	return ry__ip_same_host(&a, &b) && a.port == b.port;
}

static void ip_str(const struct ry__ip *ip, char *buf, size_t len)
{
	if (!ip->fam || !inet_ntop(ip->fam, ip->a, buf, (socklen_t)len))
		snprintf(buf, len, "?");
}

static bool accept_match(const struct ry_manager *m, const struct ry__ip *ip)
{
	const struct ry__admit_state *as = m->m_admit;
	unsigned i, bits, full;

	if (as->as_any)
		return true;
	for (i = 0; i < as->as_n; i++) {
		if (as->as_pfx[i].fam != ip->fam)
			continue;
		bits = as->as_len[i];
		full = bits / 8;
		if (memcmp(as->as_pfx[i].a, ip->a, full))
			continue;
		if (bits % 8) {
			unsigned char mask =
			    (unsigned char)(0xff << (8 - bits % 8));

			if ((as->as_pfx[i].a[full] ^ ip->a[full]) & mask)
				continue;
		}
		return true;
	}
	return false;
}

/* The accept list into as (its refusal log is kept). */
static void admit_parse(struct ry_manager *m, struct ry__admit_state *as)
{
	unsigned i;

	as->as_any = false;
	as->as_n = 0;
	for (i = 0; i < m->m_cfg.accept.n && i < RY_MAX_ACCEPT; i++) {
		struct ry__ip *ip = &as->as_pfx[as->as_n];

		/* validated already: ry_config_validate */
		if (ry__parse_prefix(m->m_cfg.accept.s[i], &ip->fam, ip->a,
				     &as->as_len[as->as_n]))
			continue;
		if (!ip->fam)
			as->as_any = true;
		else
			as->as_n++;
	}
	if (as->as_any)
		RY_WARN("mgr",
			"accept = any: every node that reaches %s is "
			"admitted (unsafe outside a lab)",
			m->m_cfg.control);
	m->m_handshake_ns = m->m_cfg.handshake_timeout_ms * 1000000ull;
}

static int admit_init(struct ry_manager *m)
{
	struct ry__admit_state *as = calloc(1, sizeof(*as));

	if (!as)
		return -ENOMEM;
	admit_parse(m, as);
	m->m_admit = as;
	return 0;
}

/* m_cfg's accept list and handshake timeout changed (reload.c). */
int ry__ctl_admit_reload(struct ry_manager *m)
{
	if (!m->m_admit)
		return 0;
	admit_parse(m, m->m_admit);
	return 0;
}

/* Logged once per source per CTL_REFUSE_QUIET_NS: a flood of refusals
 * must not become a flood of log lines. */
static void refuse_log_dir(struct ry_manager *m, const struct ry__ip *ip,
			   bool inbound, const char *why)
{
	struct ry__admit_state *as = m->m_admit;
	uint64_t now = ry__now_ns(), h = 1469598103934665603ull;
	struct ry__refusal *r;
	char host[INET6_ADDRSTRLEN];
	unsigned i;

	for (i = 0; i < 16; i++)
		h = (h ^ ip->a[i]) * 1099511628211ull;
	r = &as->as_refused[h % CTL_REFUSE_SLOTS];
	if (r->rf_ns && ry__ip_same_host(&r->rf_ip, ip) &&
	    ry__since(now, r->rf_ns) < CTL_REFUSE_QUIET_NS) {
		r->rf_quiet++;
		return;
	}
	ip_str(ip, host, sizeof(host));
	if (r->rf_quiet && ry__ip_same_host(&r->rf_ip, ip))
		RY_WARN("mgr",
			"control session %s %s refused: %s (%u more refused "
			"in the last 10 s)",
			inbound ? "from" : "to", host, why, r->rf_quiet);
	else
		RY_WARN("mgr", "control session %s %s refused: %s",
			inbound ? "from" : "to", host, why);
	r->rf_ip = *ip;
	r->rf_ns = now;
	r->rf_quiet = 0;
}

static void refuse_log(struct ry_manager *m, const struct ry__ip *ip,
		       const char *why)
{
	refuse_log_dir(m, ip, true, why);
}

/* The refusal of session c, either way: c_src is the other end's IP. */
static void ctl_refuse_log(struct ry__ctl *c, const char *why)
{
	refuse_log_dir(c->c_mgr, &c->c_src, c->c_inbound, why);
}

/* May this source open a session at all?  Decided at accept(), before
 * anything is allocated. */
static const char *admit_source(struct ry_manager *m, const struct ry__ip *ip)
{
	const struct ry__srcn *sn = src_find(m, ip);
	struct ry__ip pip;
	unsigned i;

	if (m->m_nin >= m->m_cfg.max_sessions)
		return "max_sessions reached";
	if (sn && sn->sn_n >= m->m_cfg.max_sessions_per_source)
		return "max_sessions_per_source reached";
	if (accept_match(m, ip))
		return NULL;
	for (i = 0; i < m->m_cfg.n_peers; i++)
		if (!ry__ip_parse(m->m_cfg.peers[i].address, &pip) &&
		    ry__ip_same_host(&pip, ip))
			return NULL;
	if (ry__peer_dialed_host(m, ip))
		return NULL;
	return "not a configured peer's address and not in accept";
}

/* Another live session bound to p. */
static bool ctl_bound(const struct ry_peer *p, const struct ry__ctl *except)
{
	unsigned mine = except && !except->c_dead && except->c_peer == p;

	return p->pr_nctl > mine;
}

/*
 * The one decision: may inbound session c speak as the node its HELLO
 * describes (name, claimed control address)?  0 with the peer record it
 * speaks for (found or made), or -EACCES with why; a refusal changes
 * nothing.
 *
 * A node named by a peer section (or by the application, with an address)
 * is known by its control address: it is admitted only from that
 * address's IP and only claiming that address, and nobody else may claim
 * its name or address.  Any other node is admitted only from an accept
 * prefix, under a name and address no live session or named peer holds.
 *
 * dry: decide only, change nothing; *p_out is the record it would speak
 * for if there is one, else NULL (with a key, a HELLO is
 * checked before the listener's proof is sent and decided for real once
 * the dialer has proven the key).
 */
static int admit_hello(struct ry__ctl *c, const char *name, const char *addr,
		       bool dry, struct ry_peer **p_out, char *why, size_t len)
{
	struct ry_manager *m = c->c_mgr;
	const struct ry_peer_config *ea = NULL, *en = NULL, *e;
	struct ry_peer *p, *rn = NULL, *ra = NULL;
	struct ry__ip ip;
	unsigned i;

	/* with a key, a real (!dry) call comes only after the proof */
	for (i = 0; i < m->m_cfg.n_peers; i++) {
		const struct ry_peer_config *pc = &m->m_cfg.peers[i];

		if (!ea && ry__addr_same(pc->address, addr))
			ea = pc;
		if (!en && !strcmp(pc->name, name))
			en = pc;
	}
	rn = ry__peer_by_name(m, name, NULL);
	ra = ry__peer_by_addr(m, addr);
	if (ea || en) {
		e = ea ? ea : en;
		if (!ea) {
			snprintf(why, len,
				 "HELLO claims configured peer %s's name with "
				 "control address %s (configured: %s)",
				 e->name, addr, e->address);
			return -EACCES;
		}
		if (en && en != ea) {
			snprintf(why, len,
				 "HELLO claims peer %s's address and peer %s's "
				 "name",
				 ea->name, en->name);
			return -EACCES;
		}
		if (ry__ip_parse(e->address, &ip) ||
		    !ry__ip_same_host(&ip, &c->c_src)) {
			snprintf(why, len,
				 "HELLO claims configured peer %s (%s) from "
				 "another address",
				 e->name, e->address);
			return -EACCES;
		}
		if (rn && ra && rn != ra) {
			snprintf(why, len,
				 "HELLO claims peer %s's name and peer %s's "
				 "address",
				 rn->pr_name, ra->pr_name);
			return -EACCES;
		}
		if (dry) {
			*p_out = ra;
			return 0;
		}
		p = ra;
		if (!p)
			p = ry__peer_new(m, e->name, e->address, true);
		if (!p)
			return -ENOMEM;
		*p_out = p;
		return 0;
	}
	if ((ra && ra->pr_dial) || (rn && rn->pr_dial)) {
		e = NULL;
		p = ra && ra->pr_dial ? ra : rn;
		if ((ra && rn && ra != rn) || p != ra ||
		    ry__ip_parse(p->pr_addr, &ip) ||
		    !ry__ip_same_host(&ip, &c->c_src)) {
			snprintf(why, len,
				 "HELLO claims peer %s (%s) from another "
				 "address or under another name",
				 p->pr_name, p->pr_addr);
			return -EACCES;
		}
		*p_out = p;
		return 0;
	}
	if (!accept_match(m, &c->c_src)) {
		snprintf(why, len,
			 "node %s (%s) is not a configured peer and its "
			 "address is not in accept",
			 name, addr);
		return -EACCES;
	}
	if (rn && ctl_bound(rn, c)) {
		snprintf(why, len, "node name %s is in use by a live session",
			 name);
		return -EACCES;
	}
	if (ra && ra != rn && ctl_bound(ra, c)) {
		snprintf(why, len, "control address %s is in use by peer %s",
			 addr, ra->pr_name);
		return -EACCES;
	}
	if (dry) {
		*p_out = rn;
		return 0;
	}
	p = rn;
	if (!p) {
		p = ry__peer_new(m, name, addr, false);
		if (!p)
			return -ENOMEM;
		p->pr_from_hello = true;
	}
	/* a departed node's claim: its record keeps its name */
	if (ra && ra != rn) {
		ra->pr_addr[0] = 0;
		ry__peer_index(ra);
	}
	snprintf(p->pr_addr, sizeof(p->pr_addr), "%s", addr);
	ry__peer_index(p);
	*p_out = p;
	return 0;
}

/* Sessions that never said HELLO; the listening fd after EMFILE. */
void ry__ctl_timers(struct ry_manager *m, uint64_t now)
{
	struct ry__ctl *c;

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
		refuse_log(m, &c->c_src,
			   c->c_auth && c->c_auth->a_pending
			       ? "no AUTH (proof of the key) within "
				 "handshake_timeout_ms"
			       : "no HELLO within handshake_timeout_ms");
		ctl_kill(c, "handshake timeout");
	}
}

int ry__ctl_listen(struct ry_manager *m)
{
	const char *addr =
	    m->m_cfg.control[0] ? m->m_cfg.control : "127.0.0.1:0";
	struct sockaddr_storage ss;
	socklen_t len;
	char host[64];
	int fd, one = 1, ret;

	ret = admit_init(m);
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

	ip_from_sa(ss, &ip);
	why = admit_source(m, &ip);
	if (why) {
		refuse_log(m, &ip, why);
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
	if (src_hold(c)) {
		ctl_kill(c, "out of memory");
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
 * (admit_source), which the kernel would otherwise choose by route (on one
 * host, the destination's own address).
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
	ctl_bind(c, p);
	p->pr_ctl = c;
	p->pr_state = PEER_CONNECTING;
	return 0;
}

void ry__ctl_send_hello(struct ry__ctl *c, bool reply)
{
	struct ry_manager *m = c->c_mgr;
	struct ry__ctl_auth *a = c->c_auth;
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
	w_u8(w, a ? 1 | (m->m_cfg.data_mac ? 2 : 0) : 0);
	if (a) {
		ry__auth_nonce(a->a_nonce);
		w_bytes(w, a->a_nonce, RY__NONCE);
		if (!reply) {
			ry__auth_hash_hello(w->b, w->n, a->a_hello);
		} else if (!w->bad) {
			unsigned char proof[RY__MAC];

			ry__auth_transcript(a->a_hello, w->b, w->n, a->a_t);
			ry__auth_proof(m, false, a->a_t, proof);
			w_bytes(w, proof, RY__MAC);
			ry__auth_session_keys(m, false, a->a_t, a->a_ktx,
					      a->a_krx, a->a_kdata);
		}
	}
	ctl_send(c, reply ? CTL_HELLO_ACK : CTL_HELLO, w);
	free(w);
}

/*
 * Our rail list changed (reload.c): say HELLO again on every admitted
 * session (the listener's side answers with HELLO_ACK, as in the
 * handshake; hello_apply() pairs again).  With a key the handshake is
 * once per session, so those sessions are closed instead: the peer (or
 * we) dials again and the new handshake carries the new list.
 */
void ry__ctl_announce(struct ry_manager *m)
{
	struct ry__ctl *c;

	for (c = m->m_ctls; c; c = c->c_next) {
		if (c->c_dead || !c->c_admitted)
			continue;
		if (c->c_auth)
			ctl_kill(c, "rails changed by a reload; handshake "
				    "again");
		else
			ry__ctl_send_hello(c, c->c_inbound);
	}
}

void ry__ctl_drop_peer(struct ry_manager *m, struct ry_peer *p, const char *why)
{
	struct ry__ctl *c;

	for (c = m->m_ctls; c; c = c->c_next)
		if (!c->c_dead && c->c_peer == p)
			ctl_kill(c, why);
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
	if (type == CTL_CONN_REJ) {
		w_u32(w, (uint32_t)err);
	} else {
		struct ry__probe_mr pm;

		w_ep(w, ep);
		/* where this rail takes path MTU probes (conn.c) */
		ry__probe_mr_of(c->c_mgr, src, &pm);
		w_u64(w, pm.pm_addr);
		w_u32(w, pm.pm_rkey);
		w_u32(w, pm.pm_len);
	}
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

/* Printable, no spaces: it goes into logs and status output. */
static bool valid_name(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if ((unsigned char)*s < 0x21 || (unsigned char)*s > 0x7e)
			return false;
	return true;
}

/* A record other than p known by this node name. */
static bool name_taken(struct ry_manager *m, const struct ry_peer *p,
		       const char *name)
{
	return ry__peer_by_name(m, name, p) != NULL;
}

/* Tell the other end why before closing (unauthenticated: an on-path
 * attacker could forge it, but such a one can close the session anyway). */
static int auth_refuse(struct ry__ctl *c, enum refusal code, const char *why)
{
	struct wbuf w = {.n = 0};

	ctl_refuse_log(c, why);
	w_u8(&w, (uint8_t)code);
	ctl_send(c, CTL_REFUSE, &w);
	return -EACCES;
}

static int parse_hello(struct rbuf *r, bool reply, struct hello *h)
{
	unsigned i;
	uint8_t auth;

	h->node = r_u64(r);
	r_str(r, h->name, sizeof(h->name));
	r_str(r, h->addr, sizeof(h->addr));
	h->n = r_u8(r);
	if (h->n > RY_MAX_RAILS || !h->node)
		return -EBADMSG;
	for (i = 0; i < h->n; i++) {
		r_str(r, h->rr[i].rr_name, sizeof(h->rr[i].rr_name));
		r_str(r, h->rr[i].rr_network, sizeof(h->rr[i].rr_network));
		r_ep(r, &h->rr[i].rr_ep);
	}
	auth = r_u8(r);
	if (auth > 3 || auth == 2)
		return -EBADMSG;
	h->auth = auth & 1;
	h->data_mac = auth & 2;
	if (h->auth) {
		r_bytes(r, h->nonce, RY__NONCE);
		if (reply)
			r_bytes(r, h->proof, RY__MAC);
		/* the proof must be the last RY__MAC bytes: nothing after */
		if (r->n)
			return -EBADMSG;
	}
	return r->bad ? -EBADMSG : 0;
}

/*
 * A HELLO with a new incarnation of a peer whose session is still alive:
 * the old process died and its session has not closed yet (a host that
 * vanished without a FIN), or someone else claims to be the peer.  With a
 * key the claim is proven by the handshake (the dry check before the
 * proof lets it on; the real one after it admits it, and hello_apply()
 * kills the old session).  Without one, address admission cannot tell a
 * restart from an impersonator on the peer's host, so it is refused while
 * the old session lives; the old session is probed at once (keepalive
 * after 1 s, twice, 3 s for data unacknowledged) so that it closes within
 * about 3 s if its host is gone and the peer's next dial is admitted.
 */
static int admit_restart(struct ry__ctl *c, struct ry_peer *p, uint64_t node)
{
	struct ry_manager *m = c->c_mgr;
	int one = 1, two = 2;
	unsigned ut = 3000;
	struct ry__ctl *o;
	char why[320];

	if (!p || !p->pr_node || p->pr_node == node || !ctl_bound(p, c) ||
	    m->m_auth)
		return 0;
	for (o = m->m_ctls; o; o = o->c_next) {
		if (o == c || o->c_dead || o->c_peer != p)
			continue;
		setsockopt(o->c_fd, IPPROTO_TCP, TCP_KEEPIDLE, &one,
			   sizeof(one));
		setsockopt(o->c_fd, IPPROTO_TCP, TCP_KEEPINTVL, &one,
			   sizeof(one));
		setsockopt(o->c_fd, IPPROTO_TCP, TCP_KEEPCNT, &two,
			   sizeof(two));
		setsockopt(o->c_fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &ut,
			   sizeof(ut));
	}
	snprintf(why, sizeof(why),
		 "HELLO claims a new incarnation of peer %s while its session "
		 "is alive (probing that session; a restarted peer is "
		 "admitted once it closes)",
		 p->pr_name);
	refuse_log(m, &c->c_src, why);
	return -EACCES;
}

/* Act on a HELLO or HELLO_ACK that admission (and the key) allowed. */
static int hello_apply(struct ry__ctl *c, const struct hello *h, bool reply)
{
	struct ry_manager *m = c->c_mgr;
	char why[320];
	struct ry_peer *p;
	uint64_t old_node;
	bool fresh;
	int ret;

	if (!c->c_admitted) {
		if (c->c_inbound) {
			ret = admit_hello(c, h->name, h->addr, false, &p, why,
					  sizeof(why));
			if (ret == -EACCES)
				refuse_log(m, &c->c_src, why);
			if (ret)
				return ret;
			ret = admit_restart(c, p, h->node);
			if (ret)
				return ret;
			ctl_bind(c, p);
			m->m_npending--;
			ry__list_del(&c->c_plink);
		}
		/* a session we dialed: we chose the address */
		c->c_admitted = true;
		snprintf(c->c_claim, sizeof(c->c_claim), "%s", h->addr);
		p = c->c_peer;
		if (!ry__ctl_alive(p->pr_ctl))
			p->pr_ctl = c;
	} else if (strcmp(h->addr, c->c_claim)) {
		return -EPROTO; /* one session speaks for one node */
	}
	p = c->c_peer;
	ry__rail_life_peer_rails(p, h->rr, h->n); /* its rails came back */
	if (h->n != p->pr_nrrails) {
		/* before anything changes: a refusal leaves the record as
		 * it was */
		struct ry__rrail *rr =
		    h->n ? realloc(p->pr_rrails, h->n * sizeof(*rr)) : NULL;

		if (h->n && !rr)
			return -ENOMEM;
		if (!h->n)
			free(p->pr_rrails);
		p->pr_rrails = rr;
		p->pr_nrrails = h->n;
	}
	if (!name_taken(m, p, h->name)) {
		snprintf(p->pr_node_name, sizeof(p->pr_node_name), "%s",
			 h->name);
		ry__peer_index(p);
	}
	old_node = p->pr_node && p->pr_node != h->node ? p->pr_node : 0;
	fresh = old_node != 0;
	if (fresh && p->pr_ctl != c) {
		/* the old incarnation's session speaks for nobody now */
		struct ry__ctl *old = p->pr_ctl;

		p->pr_ctl = c;
		if (old)
			ctl_kill(old, "the peer restarted");
	}
	p->pr_node = h->node;
	ry__peer_index(p);
	if (h->n)
		memcpy(p->pr_rrails, h->rr, h->n * sizeof(h->rr[0]));
	/* with a key the listener's HELLO_ACK went out before AUTH */
	if (!reply && !c->c_auth)
		ry__ctl_send_hello(c, true);
	ry__peer_ready(p, old_node, reply);
	return 0;
}

static int on_hello(struct ry__ctl *c, struct rbuf *r, bool reply)
{
	struct ry_manager *m = c->c_mgr;
	struct ry__ctl_auth *a = c->c_auth;
	const unsigned char *body = r->p;
	size_t blen = r->n;
	struct hello *h = malloc(sizeof(*h));
	struct ry_peer *p;
	char why[320];
	int ret;

	if (!h)
		return -ENOMEM;
	ret = parse_hello(r, reply, h);
	if (ret)
		goto out;
	ret = -EPROTO;
	/* the dialer says HELLO, the listener answers HELLO_ACK */
	if (reply == c->c_inbound || !valid_name(h->name))
		goto out;
	/* with a key, the handshake is once per session */
	if (a && (c->c_admitted || a->a_pending))
		goto out;
	ret = -ELOOP;
	if (h->node == m->m_node)
		goto out; /* dialed ourselves */
	if (!a && h->auth) {
		ret = auth_refuse(c, REF_NO_KEY,
				  "the peer uses key_file; this node has "
				  "none (give both the same key_file)");
		goto out;
	}
	if (a && !h->auth) {
		ret = auth_refuse(c, REF_KEY_REQUIRED,
				  "peer sent no authentication; this node "
				  "requires key_file");
		goto out;
	}
	/* the two would connect, and every data packet would be dropped */
	if (a && h->data_mac != m->m_cfg.data_mac) {
		ret = auth_refuse(c, REF_DATA_MAC,
				  m->m_cfg.data_mac
				      ? "the peer has data_mac off; this node "
					"has it on (set it alike on every node)"
				      : "the peer has data_mac on; this node "
					"has it off (set it alike on every "
					"node)");
		goto out;
	}
	if (!a) {
		ret = hello_apply(c, h, reply);
		goto out;
	}
	if (c->c_inbound) {
		/* decide nothing yet; refuse early what could never pass */
		ret = admit_hello(c, h->name, h->addr, true, &p, why,
				  sizeof(why));
		if (ret == -EACCES)
			refuse_log(m, &c->c_src, why);
		if (!ret)
			ret = admit_restart(c, p, h->node);
		if (ret)
			goto out;
		ry__auth_hash_hello(body, blen, a->a_hello);
		a->a_pending = h;
		h = NULL;
		ry__ctl_send_hello(c, true);
		return 0;
	}
	ry__auth_transcript(a->a_hello, body, blen - RY__MAC, a->a_t);
	if (!ry__auth_proof_ok(m, false, a->a_t, h->proof)) {
		ret = auth_refuse(c, REF_KEY_DIFFERS,
				  "authentication failed: the peer's key "
				  "differs");
		goto out;
	}
	{
		struct wbuf w = {.n = 0};
		unsigned char proof[RY__MAC];

		ry__auth_proof(m, true, a->a_t, proof);
		w_bytes(&w, proof, RY__MAC);
		ctl_send(c, CTL_AUTH, &w);
	}
	ry__auth_session_keys(m, true, a->a_t, a->a_ktx, a->a_krx, a->a_kdata);
	c->c_mac_on = true;
	ret = hello_apply(c, h, reply);
out:
	free(h);
	return ret;
}

/* The listener's last handshake step: the dialer's proof. */
static int on_auth(struct ry__ctl *c, struct rbuf *r)
{
	struct ry__ctl_auth *a = c->c_auth;
	unsigned char proof[RY__MAC];
	struct hello *h;
	int ret;

	if (!a || !c->c_inbound || c->c_admitted || !a->a_pending)
		return -EPROTO;
	r_bytes(r, proof, RY__MAC);
	if (r->bad || r->n)
		return -EBADMSG;
	if (!ry__auth_proof_ok(c->c_mgr, true, a->a_t, proof))
		return auth_refuse(c, REF_KEY_DIFFERS,
				   "authentication failed: the peer's key "
				   "differs");
	h = a->a_pending;
	a->a_pending = NULL;
	c->c_mac_on = true;
	ret = hello_apply(c, h, false);
	free(h);
	return ret;
}

/* The other end refused us and says why. */
static int on_refuse(struct ry__ctl *c, struct rbuf *r)
{
	uint8_t code = r_u8(r);

	if (c->c_admitted)
		return -EPROTO;
	switch (code) {
	case REF_KEY_DIFFERS:
		ctl_refuse_log(c, "authentication failed: the peer's key "
				  "differs");
		break;
	case REF_KEY_REQUIRED:
		ctl_refuse_log(c, "authentication failed: the peer requires "
				  "key_file; this node has none");
		break;
	case REF_NO_KEY:
		ctl_refuse_log(c, "authentication failed: the peer has no "
				  "key_file; this node requires one");
		break;
	case REF_DATA_MAC:
		ctl_refuse_log(c, "data_mac differs between the nodes (set it "
				  "alike on every node)");
		break;
	default:
		ctl_refuse_log(c, "refused by the peer");
	}
	return -EACCES;
}

static int dispatch(struct ry__ctl *c, uint16_t type, struct rbuf *r)
{
	struct ry_qp_endpoint ep;
	struct ry__probe_mr pm;
	struct ry_peer *p = c->c_peer;
	unsigned src, dst;
	uint32_t attempt, q1, q2;
	uint64_t gen;
	int err = 0;

	if (type == CTL_HELLO || type == CTL_HELLO_ACK)
		return on_hello(c, r, type == CTL_HELLO_ACK);
	if (type == CTL_AUTH)
		return on_auth(c, r);
	if (type == CTL_REFUSE)
		return on_refuse(c, r);
	/* only an admitted session acts, and for its own peer only */
	if (!p || !c->c_admitted || !p->pr_node)
		return -EPROTO;
	switch (type) {
	case CTL_CONN_REQ:
	case CTL_CONN_REP:
	case CTL_CONN_REJ:
		src = r_u8(r);
		dst = r_u8(r);
		attempt = r_u32(r);
		memset(&pm, 0, sizeof(pm));
		if (type == CTL_CONN_REJ) {
			err = (int)r_u32(r);
		} else {
			r_ep(r, &ep);
			/* a peer that does not probe the MTU sends none */
			if (r->n >= 16) {
				pm.pm_addr = r_u64(r);
				pm.pm_rkey = r_u32(r);
				pm.pm_len = r_u32(r);
			}
		}
		if (r->bad || src >= RY_MAX_RAILS || dst >= RY_MAX_RAILS)
			return -EBADMSG;
		if (type == CTL_CONN_REQ)
			ry__conn_on_req(p, src, dst, attempt, &ep, &pm, c);
		else if (type == CTL_CONN_REP)
			ry__conn_on_rep(p, src, dst, attempt, &ep, &pm, c);
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
		return ry__fence_on_ack(p, gen);
	}
	return -EPROTO;
}

static bool ctl_rbuf(struct ry__ctl *c)
{
	if (c->c_rbuf)
		return true;
	c->c_rbuf = malloc(CTL_RBUF);
	if (!c->c_rbuf) {
		ctl_kill(c, "out of memory");
		return false;
	}
	c->c_rcap = CTL_RBUF;
	return true;
}

/* Room left in the receive buffer; 0: the session is closed. */
static size_t ctl_room(struct ry__ctl *c)
{
	/* before admission: one HELLO, and nothing after it */
	size_t cap = c->c_admitted ? c->c_rcap : 8 + CTL_MAX_FRAME;

	if (c->c_rlen >= cap) {
		ctl_kill(c, "receive buffer full");
		return 0;
	}
	return cap - c->c_rlen;
}

/* Handle the whole frames in the receive buffer (ctl_read, ry__ctl_feed). */
static void ctl_frames(struct ry__ctl *c)
{
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
		ver = le16toh(ver);
		if (ver != CTL_VERSION) {
			char why[160];

			snprintf(why, sizeof(why),
				 "control protocol version %u, this "
				 "node speaks %u: run the same "
				 "railyard version on both",
				 ver, CTL_VERSION);
			ctl_refuse_log(c, why);
			ctl_kill(c, "protocol version mismatch");
			return;
		}
		if (len > CTL_MAX_FRAME || (c->c_mac_on && len < RY__MAC) ||
		    (!c->c_admitted && type != CTL_HELLO &&
		     type != CTL_HELLO_ACK && type != CTL_AUTH &&
		     type != CTL_REFUSE)) {
			if (c->c_inbound && !c->c_admitted)
				refuse_log(c->c_mgr, &c->c_src,
					   "bad or oversized frame "
					   "before HELLO");
			ctl_kill(c, "bad frame");
			return;
		}
		if (c->c_rlen < 8 + len)
			break;
		r.p = c->c_rbuf + 8;
		r.n = len;
		r.bad = false;
		if (c->c_mac_on) {
			struct ry__ctl_auth *a = c->c_auth;

			r.n -= RY__MAC;
			if (!ry__auth_frame_ok(a->a_krx, a->a_rx++, type, ver,
					       r.p, r.n, r.p + r.n)) {
				/* forged, replayed or reordered */
				RY_WARN("mgr",
					"control frame type %u with a "
					"bad MAC%s%s: session closed",
					type, c->c_peer ? " from peer " : "",
					c->c_peer ? c->c_peer->pr_name : "");
				ctl_kill(c, "bad MAC");
				return;
			}
		}
		ret = dispatch(c, type, &r);
		if (ret == -EACCES) { /* logged by admission */
			ctl_kill(c, "refused");
			return;
		}
		if (ret) {
			RY_WARN("mgr", "control message type %u: %s", type,
				strerror(-ret));
			ctl_kill(c, "protocol error");
			return;
		}
		memmove(c->c_rbuf, c->c_rbuf + 8 + len, c->c_rlen - 8 - len);
		c->c_rlen -= 8 + len;
	}
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
		ctl_frames(c);
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
		ctl_frames(c);
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
		/* for refusal logs: the other end, however we reached it */
		{
			struct sockaddr_storage ss;
			socklen_t sl = sizeof(ss);

			if (!getpeername(c->c_fd, (struct sockaddr *)&ss, &sl))
				ip_from_sa(&ss, &c->c_src);
		}
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
	if (c->c_auth) {
		free(c->c_auth->a_pending);
		sodium_memzero(c->c_auth, sizeof(*c->c_auth));
		free(c->c_auth);
	}
	close(c->c_fd);
	free(c->c_rbuf);
	free(c->c_wbuf);
	free(c);
}

/*
 * Peers freed by the reaper since memory was last given back.  When many
 * clients leave at once (a rack powered off), their records, QPs and
 * sessions were allocated together and are freed together; glibc keeps
 * such holes in the heap for reuse, so the process would stay as large
 * as at its peak.  malloc_trim() hands the free pages back (a few ms on a
 * heap of hundreds of MB, and only after a mass departure).
 */
#define REAP_TRIM_PEERS 64

static void reaped(struct ry_manager *m, unsigned n, bool more)
{
	m->m_reaped += n;
	/* once the wave is over: while records still drain, the next pass
	 * (100 ms) frees more */
	if (more || m->m_reaped < REAP_TRIM_PEERS)
		return;
	m->m_reaped = 0;
#ifdef __GLIBC__
	malloc_trim(0);
#endif
}

void ry__ctl_reap(struct ry_manager *m)
{
	struct ry__list *pos, *next;
	struct ry_peer *p;
	struct ry__ctl *c;
	bool again = false;
	unsigned freed = 0;

	while ((c = m->m_ctl_dead)) {
		m->m_ctl_dead = c->c_dnext;
		*c->c_pprev = c->c_next;
		if (c->c_next)
			c->c_next->c_pprev = c->c_pprev;
		ctl_free(c);
	}
	if (!m->m_reap_peers || ry__now_ns() < m->m_reap_next_ns)
		return;
	/*
	 * Records made from HELLOs must not pile up (manager.h).  A record
	 * whose sessions are gone may not be disposable yet (its connections
	 * still failing over, draining): look again, at most every 100 ms,
	 * until every such record is gone.  Only the records on m_reapq
	 * (their last session closed; ctl_bind) are looked at, whatever the
	 * number of sessions and peers.
	 */
	m->m_reap_peers = false;
	m->m_reap_next_ns = ry__now_ns() + 100000000ull;
	ry__list_for_each_safe(pos, next, &m->m_reapq) {
		p = ry__list_entry(pos, struct ry_peer, pr_rlink);
		if (ry__peer_disposable(p)) {
			ry__peer_forget(p); /* unlinks it */
			freed++;
		} else if (!p->pr_app_seen && !p->pr_app_refs) {
			/* it may become disposable: look again (not while
			 * the application holds it: ry__peer_unref() says
			 * when it lets go) */
			again = true;
		}
	}
	m->m_reap_peers = again;
	reaped(m, freed, again);
}

void ry__ctl_close_all(struct ry_manager *m)
{
	struct ry__ctl *c;

	while ((c = m->m_ctls)) {
		m->m_ctls = c->c_next;
		/* the peer records are gone already (teardown) */
		if (!c->c_dead) {
			ry__fd_unwatch(m, c->c_fd);
			src_release(c);
			ry__list_del(&c->c_plink);
		}
		ctl_free(c);
	}
	m->m_ctl_dead = NULL;
	if (m->m_listen_fd >= 0) {
		ry__fd_unwatch(m, m->m_listen_fd);
		close(m->m_listen_fd);
		m->m_listen_fd = -1;
	}
	free(m->m_admit);
	m->m_admit = NULL;
	ry__auth_fini(m);
}
