/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The wire formats the manager speaks, and nothing else: the control
 * protocol between managers (TCP) and the header of a rail message.  A pure
 * codec: no sockets, no manager state; every length and count read is
 * checked against what the buffer holds.  The library (src/ctl/), the
 * scale emulator and the test programs all encode and decode through it.
 *
 * Control framing: u32 body length, u16 type, u16 version
 * (RY__CTL_VERSION), body; little-endian.  Bodies:
 *
 *   HELLO / HELLO_ACK  u64 node incarnation, str node name, str control
 *                      address, u8 n, n x { str rail, str network,
 *                      endpoint }, u8 auth (bit 0: key_file, bit 1:
 *                      data_mac, only with bit 0), and with a key:
 *                      32-byte nonce, then optionally key ids (HELLO:
 *                      the dialer's, newest first; HELLO_ACK: exactly
 *                      one, the key the listener chose; absent: "my one
 *                      key"), and in HELLO_ACK the listener's 32-byte
 *                      proof last
 *   AUTH               32-byte proof: the dialer's, after HELLO_ACK
 *   REFUSE             u8 why (enum ry__ctl_refusal), then optionally
 *                      key ids: the sender's (REF_NO_COMMON_KEY)
 *   CONN_REQ / REP     u8 sender's rail, u8 receiver's rail, u32 attempt,
 *                      endpoint, then u64 addr, u32 rkey, u32 len: the
 *                      sender rail's path MTU probe slice (absent: none)
 *   CONN_REJ           u8, u8, u32 attempt, i32 -errno
 *   FENCE_REQ          u64 gen, pair, then optional: u8 k, k x pair
 *                      (1 <= k < RY__WIRE_FENCE_PAIRS; nothing after);
 *                      pair = u8 sender's rail, u8 receiver's rail, u32
 *                      sender's dead QPN, u32 receiver's QPN on it.  The
 *                      list goes only to a peer whose FENCE_ACK carried
 *                      RY__FENCE_CAP_PAIRS: an older one reads the first
 *                      pair alone and would acknowledge the rest unfenced
 *   FENCE_ACK          u64 gen, then optional: u8 caps (RY__FENCE_CAP_*;
 *                      absent: 0).  Every session starts with one of
 *                      generation 0 each way, which acknowledges nothing
 *                      and tells the caps
 *   GOODBYE            u64 sender's incarnation, u8 why (enum
 *                      ry__ctl_goodbye): the sender is leaving on
 *                      purpose; the receiver closes its connections to it
 *                      as closed, not failed
 *
 *   key ids = u8 n (1..RY__CTL_KEY_IDS), n x 8 bytes (src/auth.c: a
 *   one-way function of a key, never the key)
 *   str = u16 length + bytes; endpoint = u32 qpn, u32 psn, u64 cookie,
 *   16 bytes gid, u16 lid, u16 udp_port, u32 mtu.
 *
 * With a key every frame after the handshake carries a 32-byte MAC,
 * appended and counted in the body length (src/auth.c); the codec sees
 * bodies without it.
 */
#ifndef RAILYARD_CTL_WIRE_H
#define RAILYARD_CTL_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <railyard/railyard.h>

#include "rails/rail.h"

/* The one definition of the control protocol's version. */
#define RY__CTL_VERSION 2
#define RY__CTL_HDR 8	  /* frame header */
#define RY__CTL_NONCE 32  /* handshake nonce */
#define RY__CTL_MAC 32	  /* proofs and frame MACs */
#define RY__CTL_EP_LEN 40 /* endpoint */
#define RY__CTL_KEY_ID 8  /* a key id */
#define RY__CTL_KEY_IDS 8 /* key ids in one list, at most */
/* The largest legitimate frame body: a HELLO with every rail, names and
 * addresses at their longest (a str of cap - 1 bytes or more is refused). */
#define RY__CTL_STR_MAX(cap) (2 + (cap)-1)
#define RY__CTL_MAX_FRAME                                                      \
	(8 + RY__CTL_STR_MAX(RY_NAME_MAX) + RY__CTL_STR_MAX(RY_ADDR_MAX) + 1 + \
	 RY_MAX_RAILS * (2 * RY__CTL_STR_MAX(RY_NAME_MAX) + RY__CTL_EP_LEN) +  \
	 1 + RY__CTL_NONCE + 1 + RY__CTL_KEY_IDS * RY__CTL_KEY_ID +            \
	 2 * RY__CTL_MAC)

/* Control frame types, one list: the numbers are the wire's. */
enum ry__ctl_type {
	CTL_HELLO = 1,
	CTL_HELLO_ACK = 2,
	CTL_CONN_REQ = 3,
	CTL_CONN_REP = 4,
	CTL_CONN_REJ = 5,
	CTL_FENCE_REQ = 6,
	CTL_FENCE_ACK = 7,
	CTL_AUTH = 8,
	CTL_REFUSE = 9,
	CTL_GOODBYE = 10,
	CTL_NTYPES /* one past the last */
};

/* Why a GOODBYE was sent. */
enum ry__ctl_goodbye {
	BYE_CLOSING = 1, /* the sender's manager is being destroyed */
	BYE_DROPPED,	 /* the sender ends this session on purpose (a
			  * reload removed the receiver from its config) */
};

/* Why a REFUSE was sent. */
enum ry__ctl_refusal {
	REF_KEY_DIFFERS = 1, /* a proof did not verify */
	REF_KEY_REQUIRED,    /* the sender has a key; the other end sent none */
	REF_NO_KEY,	     /* the sender has no key; the other end has one */
	REF_DATA_MAC,	     /* the two ends' data_mac settings differ */
	REF_NO_COMMON_KEY,   /* no key id in common (the sender's ids follow) */
};

struct ry__ctl_hdr {
	uint32_t h_len; /* body bytes, a MAC included */
	uint16_t h_type;
	uint16_t h_ver;
};

/* A frame header of this protocol version into b[RY__CTL_HDR]. */
void ry__ctl_hdr_put(void *b, uint32_t len, uint16_t type);
void ry__ctl_hdr_get(const void *b, struct ry__ctl_hdr *h);

/* ---- fields: a writer that marks itself bad instead of overflowing,
 * a reader that marks itself bad instead of reading past the end ---- */

struct ry__wbuf {
	unsigned char *b;
	size_t cap, n;
	bool bad;
};

void ry__wbuf_init(struct ry__wbuf *w, void *b, size_t cap);
void ry__w_bytes(struct ry__wbuf *w, const void *p, size_t n);
void ry__w_u8(struct ry__wbuf *w, uint8_t v);
void ry__w_u16(struct ry__wbuf *w, uint16_t v);
void ry__w_u32(struct ry__wbuf *w, uint32_t v);
void ry__w_u64(struct ry__wbuf *w, uint64_t v);
void ry__w_str(struct ry__wbuf *w, const char *s);
void ry__w_ep(struct ry__wbuf *w, const struct ry_qp_endpoint *ep);

struct ry__rbuf {
	const unsigned char *p;
	size_t n;
	bool bad;
};

void ry__rbuf_init(struct ry__rbuf *r, const void *p, size_t n);
void ry__r_bytes(struct ry__rbuf *r, void *out, size_t n);
uint8_t ry__r_u8(struct ry__rbuf *r);
uint16_t ry__r_u16(struct ry__rbuf *r);
uint32_t ry__r_u32(struct ry__rbuf *r);
uint64_t ry__r_u64(struct ry__rbuf *r);
/* A str of fewer than cap bytes into out[cap] as a C string (up to its
 * first NUL), the rest of out zeroed. */
void ry__r_str(struct ry__rbuf *r, char *out, size_t cap);
void ry__r_ep(struct ry__rbuf *r, struct ry_qp_endpoint *ep);

/* ---- frame bodies ---- */

struct ry__wire_rail {
	char wr_name[RY_NAME_MAX];
	char wr_network[RY_NAME_MAX];
	struct ry_qp_endpoint wr_ep;
};

/* HELLO and HELLO_ACK. */
struct ry__wire_hello {
	uint64_t wh_node; /* never 0 */
	char wh_name[RY_NAME_MAX];
	char wh_addr[RY_ADDR_MAX];
	unsigned wh_n;
	struct ry__wire_rail wh_rail[RY_MAX_RAILS];
	bool wh_auth, wh_data_mac; /* data_mac only with auth */
	unsigned char wh_nonce[RY__CTL_NONCE];
	unsigned char wh_proof[RY__CTL_MAC]; /* HELLO_ACK with auth */
	/* with auth: HELLO, the dialer's key ids (newest first); HELLO_ACK,
	 * 1 and the chosen one; 0: none sent (a peer that has one key) */
	unsigned wh_nids;
	unsigned char wh_ids[RY__CTL_KEY_IDS][RY__CTL_KEY_ID];
};

/*
 * The body up to and including the nonce; with_proof appends wh_proof
 * (a HELLO_ACK's proof covers the bytes before it, so the library appends
 * it itself with ry__w_bytes once it has them).
 */
void ry__wire_hello_put(struct ry__wbuf *w, const struct ry__wire_hello *h,
			bool with_proof);
/* reply: a HELLO_ACK, whose proof ends the body.  0 or -EBADMSG. */
int ry__wire_hello_get(const void *body, size_t n, bool reply,
		       struct ry__wire_hello *h);

/* CONN_REQ, CONN_REP, CONN_REJ. */
struct ry__wire_conn {
	uint8_t wc_src, wc_dst; /* sender's rail, receiver's rail */
	uint32_t wc_attempt;
	int32_t wc_err;		     /* CONN_REJ only */
	struct ry_qp_endpoint wc_ep; /* REQ and REP only */
	uint64_t wc_pm_addr;	     /* probe slice, REQ and REP; 0: none */
	uint32_t wc_pm_rkey, wc_pm_len;
	/* Trailing, optional (a peer without them sends none and they read
	 * as 0): a REQ's RY__CONN_F_* flags, a REJ's retry-after in ms
	 * (0: none given). */
	uint32_t wc_flags;
	uint32_t wc_retry_ms;
};

/* A CONN_* body's bytes at most (a REQ: 66). */
#define RY__WIRE_CONN_MAX 96

/* CONN_REQ: the sender has operations waiting for the receiver (or the
 * application holds it): it is served first when attempts are scarce. */
#define RY__CONN_F_WORK 1u

void ry__wire_conn_put(struct ry__wbuf *w, uint16_t type,
		       const struct ry__wire_conn *c);
/* 0 or -EBADMSG (short, or a rail index of RY_MAX_RAILS or more). */
int ry__wire_conn_get(const void *body, size_t n, uint16_t type,
		      struct ry__wire_conn *c);

/* FENCE_REQ: pairs at most, one a connection: a peer has at most
 * RY_MAX_RAILS connections, so one request names all it owes. */
#define RY__WIRE_FENCE_PAIRS RY_MAX_RAILS
/* FENCE_ACK caps: the sender handles a FENCE_REQ's whole pair list. */
#define RY__FENCE_CAP_PAIRS 1u

/* One dead connection: the sender's rail and QPN, the receiver's. */
struct ry__wire_fence_pair {
	uint8_t fp_src, fp_dst;
	uint32_t fp_src_qpn, fp_dst_qpn;
};

/* FENCE_REQ (wf_gen, wf_n pairs), FENCE_ACK (wf_gen, wf_caps). */
struct ry__wire_fence {
	uint64_t wf_gen;
	unsigned wf_n; /* 1 to RY__WIRE_FENCE_PAIRS */
	struct ry__wire_fence_pair wf_pair[RY__WIRE_FENCE_PAIRS];
	uint8_t wf_caps;
};

/* A FENCE_REQ's body bytes at most. */
#define RY__WIRE_FENCE_MAX (8 + 1 + 10 * RY__WIRE_FENCE_PAIRS)

/* A REQ of no pairs or too many marks w bad. */
void ry__wire_fence_put(struct ry__wbuf *w, bool ack,
			const struct ry__wire_fence *f);
/* 0 or -EBADMSG: short, a rail index of RY_MAX_RAILS or more, a pair
 * count of 0 or past RY__WIRE_FENCE_PAIRS or past the body, bytes after
 * the last pair. */
int ry__wire_fence_get(const void *body, size_t n, bool ack,
		       struct ry__wire_fence *f);

/* AUTH: exactly one proof. */
void ry__wire_auth_put(struct ry__wbuf *w, const unsigned char *proof);
int ry__wire_auth_get(const void *body, size_t n,
		      unsigned char proof[RY__CTL_MAC]);

/* GOODBYE. */
struct ry__wire_goodbye {
	uint64_t wg_node; /* the sender's incarnation */
	uint8_t wg_why;	  /* enum ry__ctl_goodbye */
};

void ry__wire_goodbye_put(struct ry__wbuf *w, const struct ry__wire_goodbye *g);
/* 0 or -EBADMSG (short or long, or a reason this version does not know:
 * an unknown reason is not a goodbye to act on). */
int ry__wire_goodbye_get(const void *body, size_t n,
			 struct ry__wire_goodbye *g);

/* REFUSE: the reason; an empty body reads as 0 (no reason given). */
void ry__wire_refuse_put(struct ry__wbuf *w, uint8_t why);
uint8_t ry__wire_refuse_get(const void *body, size_t n);
/* A REFUSE's key ids after the reason: n of them (0: none given) or
 * -EBADMSG (a count past the body, or bytes after the list). */
int ry__wire_refuse_ids(const void *body, size_t n,
			unsigned char ids[RY__CTL_KEY_IDS][RY__CTL_KEY_ID]);

/* A key id list (n of 1..RY__CTL_KEY_IDS; else the writer is bad). */
void ry__w_key_ids(struct ry__wbuf *w,
		   const unsigned char (*ids)[RY__CTL_KEY_ID], unsigned n);

/*
 * A header and body[n] as one frame into out[cap] (no MAC): its length, or
 * -EMSGSIZE if it does not fit.
 */
int ry__wire_frame(void *out, size_t cap, uint16_t type, const void *body,
		   size_t n);

/* ---- rail messages: the header in front of every message a rail
 * carries between managers (msg.c, heartbeat.c, conn.c's probes) ---- */

/* Rail message types (struct ry__mhdr.mh_type). */
enum ry__mtype {
	MT_HEARTBEAT = 1,
	MT_PROBE,
	MT_DATA,
	MT_NOTIFY,
};

/* Fields little-endian on the wire. */
struct ry__mhdr {
	uint32_t mh_magic;
	uint16_t mh_type;
	uint16_t mh_flags;
	uint64_t mh_seq;
	uint64_t mh_node;
	uint64_t mh_notify;
	uint32_t mh_len;
	uint32_t mh_rsvd;
};
#define RY__MH_MAGIC 0x52594d47u /* "RYMG" */

/* A header in wire order into b[sizeof(struct ry__mhdr)]; mh_seq 0 (the
 * sender stamps it when it first posts the message). */
void ry__mhdr_put(void *b, uint16_t type, uint64_t node, uint64_t notify,
		  uint32_t len);

#endif
