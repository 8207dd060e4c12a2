/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Inside the control plane (src/ctl/): the session and what its files
 * share.  One job per file:
 *
 *   wire.c      the codec (wire.h): frames to and from bytes
 *   session.c   sockets and the session's life: listen, accept, dial,
 *               read and write buffers, close, handshake deadlines
 *   addr.c      control addresses: numeric parsing, comparison
 *   admit.c     admission: may this source speak, may this HELLO speak as
 *               the node it names, per-source bounds, the refusal log
 *   hello.c     the HELLO / HELLO_ACK / AUTH handshake and its keys
 *   dispatch.c  frames in (checked, then reported through ry__ctl_ops)
 *               and CONN / FENCE frames out
 *   reap.c      freeing closed sessions and the peer records HELLOs made
 *
 * Everything is non-blocking and driven by ry_progress(); a session that
 * misbehaves (short frame, unknown type, oversized frame) is closed, and
 * the peer redials with backoff.  A frame of another protocol version is
 * refused with a message naming both.  CONN_REJ's -errno: -ENETDOWN our
 * link of that rail is down (we connect when it is back), -EBUSY too many
 * attempts in flight on it, -EINVAL no such rail, -EAGAIN, -EIO (conn.c).
 * REFUSE is sent before closing a session refused for authentication, so
 * both ends can say why.
 *
 * Admission (ry__ctl_admit_source, ry__ctl_admit_hello): an inbound
 * session is refused at accept() unless its source may speak at all (a
 * configured or app-named peer's IP, an accept prefix, or "any") and the
 * session bounds allow it; it acts only after its HELLO is admitted.
 * Until then it may send one HELLO (and, with a key, one AUTH) and
 * nothing else, within handshake_timeout_ms.  A session we dialed is
 * admitted when its HELLO_ACK arrives: we chose the address.  Only
 * admitted sessions act, and only for the peer they were admitted as.
 *
 * Dead peers (ctl_keepalive): without a key a new incarnation is refused
 * while the old one's session lives (ry__ctl_admit_restart; with a key the
 * handshake proves it and the old session is closed), and a host that died
 * without a FIN never closes it, so every session has TCP keepalive (about
 * 13 s of silence) and TCP_USER_TIMEOUT (15 s of unacknowledged data): the
 * kernel notices, not timers of ours, and the read path closes the session
 * as for any error.
 *
 * Authentication (key_file; src/auth.c has the derivations): the dialer's
 * HELLO carries a fresh nonce; the listener answers, before deciding
 * anything, with HELLO_ACK carrying its own nonce and its proof over the
 * transcript (both HELLO bodies: names, incarnations, control addresses,
 * nonces); the dialer checks it and answers AUTH with its own proof; the
 * listener admits the session only then, and admission runs again on what
 * was proven.  The dialer's HELLO lists the ids of the keys it holds; the
 * listener picks the first it holds too and names it in HELLO_ACK (a key
 * rotated by a reload: src/auth.c), or refuses with REFUSE naming its
 * own ids when there is none.  From then on every frame in each direction
 * carries a 32-byte HMAC (appended; counted in the body length) under that
 * direction's session key over an implicit frame counter, type, version
 * and body: a bad one closes the session before the frame acts.  A node
 * with a key refuses a peer without one, and the other way round, with
 * REFUSE.  With data_mac, a connection's packet keys come from the session
 * its CONN_REQ/REP went over (ry__ctl_conn_keys), so both ends derive them
 * from one transcript.
 */
#ifndef RAILYARD_CTL_INT_H
#define RAILYARD_CTL_INT_H

#include "src/ctl/ctl.h"
#include "src/ctl/wire.h"
#include "src/manager.h"

_Static_assert(RY__MAC == RY__CTL_MAC && RY__NONCE == RY__CTL_NONCE &&
		   RY__KEY_ID == RY__CTL_KEY_ID,
	       "auth.c's sizes are the wire's");
#define CTL_MAX_FRAME RY__CTL_MAX_FRAME
#define CTL_RBUF (2 * (RY__CTL_HDR + CTL_MAX_FRAME))
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
	/* rate.c: each frame type's bucket; frames dropped since c_over_ns */
	uint64_t c_tat[CTL_NTYPES];
	uint64_t c_over, c_over_ns;
	/* m_ctls (alive and killed, until reaped); m_ctl_dead once killed */
	struct ry__ctl *c_next, **c_pprev, *c_dnext;
};

/* A session's handshake and frame keys; wiped when it is freed. */
struct ry__ctl_auth {
	unsigned char a_nonce[RY__NONCE]; /* ours */
	unsigned char a_hello[RY__MAC];	  /* hash of the HELLO body */
	unsigned char a_t[RY__MAC];	  /* transcript */
	unsigned char a_ktx[RY__MAC], a_krx[RY__MAC];
	unsigned char a_kdata[RY__MAC];	  /* data_mac keys come from it */
	unsigned char a_key[RY__KEY_ID];  /* the id of the key it uses */
	bool a_ack_id;			  /* listener: HELLO_ACK names it */
	uint64_t a_tx, a_rx;		  /* frame counters */
	struct ry__wire_hello *a_pending; /* listener: the HELLO, until AUTH */
};

/* Live inbound sessions from one source IP (ry__ctl_admit_source's
 * bound), so that an accept does not count them in a walk over every
 * session. */
struct ry__srcn {
	struct ry__hnode sn_h;
	struct ry__ip sn_ip;
	unsigned sn_n;
};

/* An address closed for flooding: refused at accept until pn_until_ns. */
struct ry__penalty {
	struct ry__ip pn_ip;
	uint64_t pn_until_ns;
	uint32_t pn_ms; /* the last back-off, doubled at a repeat */
};

struct ry__refusal {
	struct ry__ip rf_ip;
	uint64_t rf_ns;
	unsigned rf_quiet; /* refusals not logged since rf_ns */
};

/* The module's own state (m_admit, from ry__ctl_listen() to
 * ry__ctl_close_all()): the accept list, the refusal log, and the
 * manager's ops. */
struct ry__admit_state {
	const struct ry__ctl_ops *as_ops;
	bool as_any;
	unsigned as_n;
	struct ry__ip as_pfx[RY_MAX_ACCEPT];
	unsigned as_len[RY_MAX_ACCEPT];
	/* fixed size: a flood of refusals allocates nothing */
	struct ry__refusal as_refused[CTL_REFUSE_SLOTS];
	struct ry__penalty as_pen[CTL_REFUSE_SLOTS]; /* rate.c */
	uint64_t as_frames_over, as_sessions_over;
};

static inline const struct ry__ctl_ops *ry__ctl_ops(const struct ry__ctl *c)
{
	return c->c_mgr->m_admit->as_ops;
}

/* session.c */
void ry__ctl_kill(struct ry__ctl *c, const char *why);
/* c speaks for p now (NULL: for nobody) */
void ry__ctl_bind(struct ry__ctl *c, struct ry_peer *p);
/* Queue body w as a frame of type (with its MAC once the handshake is
 * done) and send what the socket takes. */
void ry__ctl_send(struct ry__ctl *c, uint16_t type, const struct ry__wbuf *w);

/* addr.c */
void ry__ip_from_sa(const struct sockaddr_storage *ss, struct ry__ip *ip);
void ry__ip_str(const struct ry__ip *ip, char *buf, size_t len);
/* ip's slot in the fixed tables of refusals and penalties (as_refused,
 * as_pen); a collision only makes two hosts share an entry */
unsigned ry__ip_slot(const struct ry__ip *ip);

/* admit.c */
int ry__ctl_admit_init(struct ry_manager *m, const struct ry__ctl_ops *ops);
int ry__ctl_src_hold(struct ry__ctl *c);
void ry__ctl_src_release(struct ry__ctl *c);
void ry__ctl_refuse_log(struct ry_manager *m, const struct ry__ip *ip,
			const char *why);
/* The refusal of session c, either way: c_src is the other end's IP. */
void ry__ctl_refused(struct ry__ctl *c, const char *why);
const char *ry__ctl_admit_source(struct ry_manager *m, const struct ry__ip *ip);
int ry__ctl_admit_hello(struct ry__ctl *c, const char *name, const char *addr,
			bool dry, struct ry_peer **p_out, char *why,
			size_t len);
int ry__ctl_admit_restart(struct ry__ctl *c, struct ry_peer *p, uint64_t node);

/* hello.c: HELLO / HELLO_ACK, AUTH and REFUSE bodies on c; 0, -EACCES
 * (refused and logged) or another -errno (a protocol error) */
int ry__ctl_on_hello(struct ry__ctl *c, const unsigned char *body, size_t blen,
		     bool reply);
int ry__ctl_on_auth(struct ry__ctl *c, const unsigned char *body, size_t n);
int ry__ctl_on_refuse(struct ry__ctl *c, const unsigned char *body, size_t n);

/* dispatch.c: handle the whole frames in c's receive buffer */
void ry__ctl_frames(struct ry__ctl *c);
/* GOODBYE on c if it is admitted (why: enum ry__ctl_goodbye) */
void ry__ctl_goodbye(struct ry__ctl *c, int why);

/* rate.c: may c act on a frame of this type now?  false: drop it (and
 * c may be closed: check c_dead) */
bool ry__ctl_rate_ok(struct ry__ctl *c, uint16_t type);
/* why ip may not open a session now, or NULL */
const char *ry__ctl_penalized(struct ry_manager *m, const struct ry__ip *ip);

/* reap.c */
void ry__ctl_free(struct ry__ctl *c);

#endif
