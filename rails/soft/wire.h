/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The soft rail's wire format: one fixed 56-byte header in front of every
 * UDP payload segment, all integers big-endian (as RoCE).  The encoder is
 * here, inline for the transmit path; the decoder is in wire.c.
 *
 *   off size field
 *     0    1 version     RY__SOFT_WIRE_VERSION; anything else is dropped
 *     1    1 opcode      enum ry__soft_op
 *     2    1 flags       enum ry__soft_flag (FIRST/LAST/IMM/ACKREQ/RETRY)
 *     3    1 rsvd        must be 0
 *     4    4 dqpn        destination QPN, 24 bits (demultiplexing key)
 *     8    4 sqpn        source QPN, 24 bits
 *    12    4 psn         24 bits
 *    16    8 cookie      the *destination* QP's own random cookie
 *    24    8 reth_va     RETH: remote address of this packet's payload
 *                        (SEND: byte offset in the message)
 *    32    4 reth_rkey   RETH: rkey
 *    36    4 reth_len    RETH: length of the whole message / READ
 *    40    4 aeth        AETH: syndrome << 24 | MSN (24 bits)
 *    44    4 imm         immediate data
 *    48    4 paylen      payload bytes following the header; zeros
 *                        may follow them (ry__soft_may_pad)
 *    52    4 crc         CRC32C of bytes 0..51 and the payload
 *    56   24 mac         only with flag MAC (data_mac): see soft_mac.c;
 *                        the payload follows it, paylen does not count it
 *
 * Cookie scheme: create_qp draws a random 64-bit cookie for the QP, which
 * the manager hands to the peer in ry_qp_endpoint.cookie.  Every packet
 * carries the cookie of the QP it is addressed to, so a receiver compares
 * hdr.cookie with its own QP's cookie: a packet from an older connection
 * between the same peers (a different cookie) or from anyone who never saw
 * the exchange is dropped before any other work.
 *
 * ACKs are coalesced: the responder sends one ACK per QP for everything it
 * accepted in one receive batch (after any READ responses it owes), not one
 * per packet; a READ response acknowledges every PSN before its own.
 *
 * Every WRITE and READ response packet carries the address its own payload
 * goes to, so each packet is checked against the region table on its own;
 * the responder still accepts only the expected PSN.
 */
#ifndef RAILYARD_SOFT_WIRE_H
#define RAILYARD_SOFT_WIRE_H

#include <endian.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* 2: bytes after the payload on a message's last packet (GSO padding,
 * ry__soft_may_pad).  Version 1 receivers would drop them, so the two do
 * not talk: the receiver says so once (soft_net.c). */
#define RY__SOFT_WIRE_VERSION 2
/* IPv4 (20) + UDP (8) in front of our header: subtracted from the MTU. */
#define RY__SOFT_IP_UDP_HDR 28

enum ry__soft_op {
	RY__SOFT_OP_SEND = 1,
	RY__SOFT_OP_WRITE,
	RY__SOFT_OP_READ_REQ,
	RY__SOFT_OP_READ_RESP,
	RY__SOFT_OP_ACK, /* ACK or NAK, by the AETH syndrome */
	RY__SOFT_OP__MAX
};

enum ry__soft_flag {
	RY__SOFT_F_FIRST = 1u << 0,
	RY__SOFT_F_LAST = 1u << 1,
	RY__SOFT_F_IMM = 1u << 2,    /* imm is valid; LAST packets only */
	RY__SOFT_F_ACKREQ = 1u << 3, /* last of a message; ACKed per batch */
	RY__SOFT_F_RETRY = 1u << 4,  /* a retransmission (for counters) */
	RY__SOFT_F_MAC = 1u << 5,    /* a MAC follows the header (soft_mac.c) */
	RY__SOFT_F__ALL = (1u << 6) - 1,
};

/* AETH syndromes, as IB's: the top bits say ACK, RNR NAK or NAK. */
enum ry__soft_syndrome {
	RY__SOFT_SYN_ACK = 0x00,
	RY__SOFT_SYN_RNR = 0x20,
	RY__SOFT_SYN_NAK_SEQ = 0x60,
	RY__SOFT_SYN_NAK_INV_REQ = 0x61,
	RY__SOFT_SYN_NAK_REM_ACCESS = 0x62,
	RY__SOFT_SYN_NAK_REM_OP = 0x63,
};

struct ry__soft_hdr {
	uint8_t version;
	uint8_t opcode;
	uint8_t flags;
	uint8_t rsvd;
	uint32_t dqpn;
	uint32_t sqpn;
	uint32_t psn;
	uint64_t cookie;
	uint64_t reth_va;
	uint32_t reth_rkey;
	uint32_t reth_len;
	uint32_t aeth;
	uint32_t imm;
	uint32_t paylen;
	uint32_t crc;
};

_Static_assert(sizeof(struct ry__soft_hdr) == 56, "wire header is 56 bytes");
_Static_assert(offsetof(struct ry__soft_hdr, dqpn) == 4, "dqpn at 4");
_Static_assert(offsetof(struct ry__soft_hdr, sqpn) == 8, "sqpn at 8");
_Static_assert(offsetof(struct ry__soft_hdr, psn) == 12, "psn at 12");
_Static_assert(offsetof(struct ry__soft_hdr, cookie) == 16, "cookie at 16");
_Static_assert(offsetof(struct ry__soft_hdr, reth_va) == 24, "RETH at 24");
_Static_assert(offsetof(struct ry__soft_hdr, reth_rkey) == 32, "rkey at 32");
_Static_assert(offsetof(struct ry__soft_hdr, reth_len) == 36, "len at 36");
_Static_assert(offsetof(struct ry__soft_hdr, aeth) == 40, "AETH at 40");
_Static_assert(offsetof(struct ry__soft_hdr, imm) == 44, "imm at 44");
_Static_assert(offsetof(struct ry__soft_hdr, paylen) == 48, "paylen at 48");
_Static_assert(offsetof(struct ry__soft_hdr, crc) == 52, "crc at 52");

#define RY__SOFT_HDR_LEN ((uint32_t)sizeof(struct ry__soft_hdr))
/* With RY__SOFT_F_MAC: this many bytes of MAC between header and payload
 * (a 64-bit counter and a 16-byte tag; soft_mac.c). */
#define RY__SOFT_MAC_LEN 24u
#define RY__SOFT_HDR_CRC_LEN ((size_t)offsetof(struct ry__soft_hdr, crc))

/* A decoded header, host order. */
struct ry__soft_pkt {
	uint8_t opcode, flags, syndrome;
	uint32_t dqpn, sqpn, psn, msn;
	uint64_t cookie, va;
	uint32_t rkey, len, imm, paylen;
	uint32_t crc; /* as received: ry__soft_wire_crc_ok() checks it */
	const uint8_t *payload;
	const uint8_t *mac; /* RY__SOFT_MAC_LEN bytes with F_MAC, else NULL */
};

uint32_t ry__soft_crc32c(uint32_t crc, const void *buf, size_t len);

/*
 * A datagram may carry zero bytes after the payload (beyond paylen) only
 * on the last packet of a SEND, WRITE or READ response.  The sender pads
 * such a short last packet to the full segment size so that the next
 * message's packets join the same UDP GSO datagram (soft_net.c): one
 * socket buffer through the kernel for many small messages instead of
 * one each.  The padding is outside the CRC and the MAC, and ignored.
 */
static inline bool ry__soft_may_pad(uint8_t op, uint8_t flags)
{
	return (flags & RY__SOFT_F_LAST) &&
	       (op == RY__SOFT_OP_SEND || op == RY__SOFT_OP_WRITE ||
		op == RY__SOFT_OP_READ_RESP);
}

/* A request (for the responder) rather than a response (the completer). */
static inline bool ry__soft_op_is_request(uint8_t op)
{
	return op == RY__SOFT_OP_SEND || op == RY__SOFT_OP_WRITE ||
	       op == RY__SOFT_OP_READ_REQ;
}

static inline void ry__soft_hdr_encode(struct ry__soft_hdr *h,
				       const struct ry__soft_pkt *p)
{
	h->version = RY__SOFT_WIRE_VERSION;
	h->opcode = p->opcode;
	h->flags = p->flags;
	h->rsvd = 0;
	h->dqpn = htobe32(p->dqpn);
	h->sqpn = htobe32(p->sqpn);
	h->psn = htobe32(p->psn);
	h->cookie = htobe64(p->cookie);
	h->reth_va = htobe64(p->va);
	h->reth_rkey = htobe32(p->rkey);
	h->reth_len = htobe32(p->len);
	h->aeth = htobe32((uint32_t)p->syndrome << 24 | (p->msn & 0xffffff));
	h->imm = htobe32(p->imm);
	h->paylen = htobe32(p->paylen);
}

/*
 * Decode and check one datagram of len bytes (header + payload), in wire.c:
 * 0 with out filled (out->payload points into pkt), or
 *   -EMSGSIZE  shorter than the header, or paylen disagrees with len
 *   -EPROTO    a field no sender produces (version, rsvd, opcode, flags,
 *              a QPN or PSN over 24 bits, IMM off a SEND/WRITE LAST)
 *   -EBADMSG   the CRC does not match
 * *out is only meaningful on 0.  No rail or QP state is consulted.
 */
int ry__soft_wire_decode(const void *pkt, size_t len, struct ry__soft_pkt *out);
/*
 * The same in two steps, for the receive path: parse is decode without the
 * CRC (never -EBADMSG), crc_ok checks it on what parse filled.  The rail
 * looks the destination QP up between the two, so a forged packet for no
 * QP costs a lookup, not a pass over its payload.
 */
int ry__soft_wire_parse(const void *pkt, size_t len, struct ry__soft_pkt *out);
bool ry__soft_wire_crc_ok(const void *pkt, const struct ry__soft_pkt *p);

/* The CRC covers the header up to the crc field, then the payload. */
static inline void ry__soft_hdr_seal(struct ry__soft_hdr *h,
				     const void *payload, uint32_t paylen)
{
	uint32_t crc = ry__soft_crc32c(0, h, RY__SOFT_HDR_CRC_LEN);

	crc = ry__soft_crc32c(crc, payload, paylen);
	h->crc = htobe32(crc);
}

#endif /* RAILYARD_SOFT_WIRE_H */
