/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The tcp rail's wire format: every message on a QP's TCP connection is
 * one fixed 48-byte header, all integers big-endian, then `len` bytes of
 * payload.  One accessor per field below; the pure decoder that checks a
 * whole header is ry__tcp_wire_decode (tcp_wire.c).
 *
 *   off size field
 *     0    1 version   RY__TCP_WIRE_VERSION; anything else kills the
 *                      connection
 *     1    1 opcode    enum ry__tcp_op
 *     2    1 syndrome  ACK only: enum ry__tcp_syn; 0 elsewhere
 *     3    1 rsvd      must be 0
 *     4    4 qpn       destination QPN, 24 bits
 *     8    4 psn       24 bits: one PSN per message (per WR)
 *    12    4 len       payload bytes following this header
 *    16    8 cookie    the *destination* QP's own random cookie
 *    24    8 va        WRITE, READ_REQ: remote address
 *                      HELLO: the sender's own cookie
 *    32    4 rkey      WRITE, READ_REQ: the remote key
 *                      HELLO: the sender's own QPN
 *    36    4 imm       immediate data (*_IMM)
 *    40    4 rlen      READ_REQ: bytes asked for
 *    44    4 rsvd2     must be 0
 *
 * A connection starts with HELLO from the side that connected (tcp_conn.c):
 * it names the QP it wants (qpn, cookie) and itself (va, rkey), so the
 * listener files the socket under that QP only when both pairs match what
 * the manager exchanged.  After that the stream carries requests
 * (WRITE[_IMM], SEND[_IMM], READ_REQ) one way and responses (ACK,
 * READ_RESP) the other, each in PSN order.  An ACK is cumulative: it
 * acknowledges every request up to its PSN; a READ_RESP answers its READ
 * (and, being in order, everything before it).  An ACK with a syndrome
 * other than OK is a NAK of that PSN: RNR (no receive posted: the sender
 * retries from that PSN after min_rnr_timer, the receiver drops every
 * request until the retry arrives) or a fatal one.
 */
#ifndef RAILYARD_TCP_WIRE_H
#define RAILYARD_TCP_WIRE_H

#include <endian.h>
#include <stdint.h>
#include <string.h>

#define RY__TCP_WIRE_VERSION 1
#define RY__TCP_HDR_LEN 48
/* No message carries more (a WR's length is below it too). */
#define RY__TCP_MAX_MSG (1u << 30)

enum ry__tcp_op {
	RY__TCP_OP_HELLO = 1,
	RY__TCP_OP_WRITE,
	RY__TCP_OP_WRITE_IMM,
	RY__TCP_OP_SEND,
	RY__TCP_OP_SEND_IMM,
	RY__TCP_OP_READ_REQ,
	RY__TCP_OP_READ_RESP,
	RY__TCP_OP_ACK,
	RY__TCP_OP__MAX
};

enum ry__tcp_syn {
	RY__TCP_SYN_OK = 0,
	RY__TCP_SYN_RNR,     /* no receive posted: retry later */
	RY__TCP_SYN_ACCESS,  /* rkey, bounds or access refused */
	RY__TCP_SYN_INVALID, /* request the responder cannot take */
	RY__TCP_SYN_REM_OP,  /* responder failed executing it */
	RY__TCP_SYN__MAX
};

/* A decoded header, host order. */
struct ry__tcp_msg {
	uint8_t opcode, syndrome;
	uint32_t qpn, psn, len;
	uint64_t cookie, va;
	uint32_t rkey, imm, rlen;
};

#define RY__TCP_FIELD(name, type, off, bits)                                   \
	static inline type ry__tcp_get_##name(const uint8_t *h)                \
	{                                                                      \
		uint##bits##_t v;                                              \
		memcpy(&v, h + (off), sizeof(v));                              \
		return (type)be##bits##toh(v);                                 \
	}                                                                      \
	static inline void ry__tcp_put_##name(uint8_t *h, type x)              \
	{                                                                      \
		uint##bits##_t v = htobe##bits((uint##bits##_t)x);             \
		memcpy(h + (off), &v, sizeof(v));                              \
	}

static inline uint8_t ry__tcp_get_version(const uint8_t *h)
{
	return h[0];
}
static inline void ry__tcp_put_version(uint8_t *h, uint8_t v)
{
	h[0] = v;
}
static inline uint8_t ry__tcp_get_opcode(const uint8_t *h)
{
	return h[1];
}
static inline void ry__tcp_put_opcode(uint8_t *h, uint8_t v)
{
	h[1] = v;
}
static inline uint8_t ry__tcp_get_syndrome(const uint8_t *h)
{
	return h[2];
}
static inline void ry__tcp_put_syndrome(uint8_t *h, uint8_t v)
{
	h[2] = v;
}
static inline uint8_t ry__tcp_get_rsvd(const uint8_t *h)
{
	return h[3];
}
RY__TCP_FIELD(qpn, uint32_t, 4, 32)
RY__TCP_FIELD(psn, uint32_t, 8, 32)
RY__TCP_FIELD(len, uint32_t, 12, 32)
RY__TCP_FIELD(cookie, uint64_t, 16, 64)
RY__TCP_FIELD(va, uint64_t, 24, 64)
RY__TCP_FIELD(rkey, uint32_t, 32, 32)
RY__TCP_FIELD(imm, uint32_t, 36, 32)
RY__TCP_FIELD(rlen, uint32_t, 40, 32)
RY__TCP_FIELD(rsvd2, uint32_t, 44, 32)
#undef RY__TCP_FIELD

/* Encode m into h (RY__TCP_HDR_LEN bytes): every field written. */
static inline void ry__tcp_wire_encode(uint8_t *h, const struct ry__tcp_msg *m)
{
	ry__tcp_put_version(h, RY__TCP_WIRE_VERSION);
	ry__tcp_put_opcode(h, m->opcode);
	ry__tcp_put_syndrome(h, m->syndrome);
	h[3] = 0;
	ry__tcp_put_qpn(h, m->qpn);
	ry__tcp_put_psn(h, m->psn);
	ry__tcp_put_len(h, m->len);
	ry__tcp_put_cookie(h, m->cookie);
	ry__tcp_put_va(h, m->va);
	ry__tcp_put_rkey(h, m->rkey);
	ry__tcp_put_imm(h, m->imm);
	ry__tcp_put_rlen(h, m->rlen);
	ry__tcp_put_rsvd2(h, 0);
}

/* Why a header was refused (counters and logs). */
enum ry__tcp_bad {
	RY__TCP_BAD_NONE = 0,
	RY__TCP_BAD_VERSION,
	RY__TCP_BAD_OPCODE,
	RY__TCP_BAD_RSVD,
	RY__TCP_BAD_QPN,
	RY__TCP_BAD_PSN,
	RY__TCP_BAD_LEN,
	RY__TCP_BAD_SYNDROME,
	RY__TCP_BAD__MAX
};

/*
 * Decode and check the header h (RY__TCP_HDR_LEN bytes) into *m: version,
 * opcode, reserved bytes, 24-bit QPN and PSN, a payload length the opcode
 * allows (none for HELLO, READ_REQ and ACK; at most RY__TCP_MAX_MSG), a
 * syndrome only on ACK, a READ length within RY__TCP_MAX_MSG.  Pure: no
 * state, no allocation.  0, or the enum ry__tcp_bad reason (m is then
 * undefined).  What a header names (QP, cookie, keys, bounds) is checked
 * by the receiver against its own state.
 */
enum ry__tcp_bad ry__tcp_wire_decode(const uint8_t *h, struct ry__tcp_msg *m);
extern const char *const ry__tcp_bad_names[RY__TCP_BAD__MAX];

#endif
