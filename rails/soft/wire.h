/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The soft rail's wire format: one fixed 44-byte header in front of every
 * UDP payload segment, all integers big-endian (as RoCE).  The encoder is
 * here, inline for the transmit path; the decoder is in wire.c.
 *
 *   off size field
 *     0    1 version     RY__SOFT_WIRE_VERSION; anything else is dropped
 *     1    1 opcode      enum ry__soft_op
 *     2    1 flags       enum ry__soft_flag (FIRST/LAST/IMM/ACKREQ/RETRY)
 *     3    1 syndrome    AETH syndrome on an ACK; 0 on everything else
 *     4    3 dqpn        destination QPN (demultiplexing key)
 *     7    3 psn
 *    10    2 paylen      payload bytes following the header; zeros
 *                        may follow them (ry__soft_may_pad)
 *    12    4 reth_rkey   RETH: rkey
 *    16    8 cookie      the *destination* QP's own random cookie
 *    24    8 reth_va     RETH: remote address of this packet's payload
 *                        (SEND: byte offset in the message)
 *    32    4 reth_len    RETH: length of the whole message / READ
 *    36    4 imm_msn     SEND or WRITE: the immediate (flag IMM, LAST only;
 *                        else 0); ACK and READ response: the AETH's MSN,
 *                        24 bits; READ request: 0
 *    40    4 crc         CRC32C of bytes 0..39 and the payload
 *    44   24 mac         only with flag MAC (data_mac): see soft_mac.c;
 *                        the payload follows it, paylen does not count it
 *
 * Every byte of it is paid per packet: at MTU 1500 a packet carries 1428
 * payload bytes behind 86 of headers (Ethernet, IP, UDP, this), so a
 * 64 KiB WRITE is 46 packets.  No packet needs both an immediate and an
 * MSN, so they share a word; there is no source QPN, because the cookie
 * (known only to the QP it was handed to) and the source address already
 * say who sent a packet.
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
#include <string.h>

/* 3: the 44-byte header above.  Nodes of other versions (2: a 56-byte
 * header; 1: no GSO padding) do not talk to it: the receiver says so
 * once (soft_net.c). */
#define RY__SOFT_WIRE_VERSION 3
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

/* Alignment 4 at most, so no padding: the 64-bit fields are bytes. */
struct ry__soft_hdr {
	uint8_t version;
	uint8_t opcode;
	uint8_t flags;
	uint8_t syndrome;
	uint8_t dqpn[3];
	uint8_t psn[3];
	uint16_t paylen;
	uint32_t reth_rkey;
	uint8_t cookie[8];
	uint8_t reth_va[8];
	uint32_t reth_len;
	uint32_t imm_msn;
	uint32_t crc;
};

_Static_assert(sizeof(struct ry__soft_hdr) == 44, "wire header is 44 bytes");
_Static_assert(offsetof(struct ry__soft_hdr, dqpn) == 4, "dqpn at 4");
_Static_assert(offsetof(struct ry__soft_hdr, psn) == 7, "psn at 7");
_Static_assert(offsetof(struct ry__soft_hdr, paylen) == 10, "paylen at 10");
_Static_assert(offsetof(struct ry__soft_hdr, reth_rkey) == 12, "rkey at 12");
_Static_assert(offsetof(struct ry__soft_hdr, cookie) == 16, "cookie at 16");
_Static_assert(offsetof(struct ry__soft_hdr, reth_va) == 24, "va at 24");
_Static_assert(offsetof(struct ry__soft_hdr, reth_len) == 32, "len at 32");
_Static_assert(offsetof(struct ry__soft_hdr, imm_msn) == 36, "imm at 36");
_Static_assert(offsetof(struct ry__soft_hdr, crc) == 40, "crc at 40");

#define RY__SOFT_HDR_LEN ((uint32_t)sizeof(struct ry__soft_hdr))
/* With RY__SOFT_F_MAC: this many bytes of MAC between header and payload
 * (a 64-bit counter and a 16-byte tag; soft_mac.c). */
#define RY__SOFT_MAC_LEN 24u
#define RY__SOFT_HDR_CRC_LEN ((size_t)offsetof(struct ry__soft_hdr, crc))

/* A decoded header, host order. */
struct ry__soft_pkt {
	uint8_t opcode, flags, syndrome;
	uint32_t dqpn, psn, msn;
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

/* An ACK or a READ response carries an MSN in imm_msn, not an immediate. */
static inline bool ry__soft_op_has_msn(uint8_t op)
{
	return op == RY__SOFT_OP_ACK || op == RY__SOFT_OP_READ_RESP;
}

static inline void ry__soft_put24(uint8_t b[3], uint32_t v)
{
	b[0] = (uint8_t)(v >> 16);
	b[1] = (uint8_t)(v >> 8);
	b[2] = (uint8_t)v;
}

static inline uint32_t ry__soft_get24(const uint8_t b[3])
{
	return (uint32_t)b[0] << 16 | (uint32_t)b[1] << 8 | b[2];
}

static inline void ry__soft_hdr_encode(struct ry__soft_hdr *h,
				       const struct ry__soft_pkt *p)
{
	uint64_t cookie = htobe64(p->cookie), va = htobe64(p->va);

	h->version = RY__SOFT_WIRE_VERSION;
	h->opcode = p->opcode;
	h->flags = p->flags;
	h->syndrome = p->syndrome;
	ry__soft_put24(h->dqpn, p->dqpn);
	ry__soft_put24(h->psn, p->psn);
	h->paylen = htobe16((uint16_t)p->paylen);
	h->reth_rkey = htobe32(p->rkey);
	memcpy(h->cookie, &cookie, sizeof(cookie));
	memcpy(h->reth_va, &va, sizeof(va));
	h->reth_len = htobe32(p->len);
	h->imm_msn = htobe32(ry__soft_op_has_msn(p->opcode) ? p->msn : p->imm);
}

/*
 * Decode and check one datagram of len bytes (header + payload), in wire.c:
 * 0 with out filled (out->payload points into pkt), or
 *   -EMSGSIZE  shorter than the header, or paylen disagrees with len
 *   -EPROTO    a field no sender produces (version, opcode, flags, a
 *              syndrome off an ACK, an MSN over 24 bits, IMM off a
 *              SEND/WRITE LAST, an immediate without IMM)
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
