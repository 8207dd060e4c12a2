// SPDX-License-Identifier: BSD-2-Clause
/*
 * The soft rail's header decoder: the inverse of ry__soft_hdr_encode() and
 * ry__soft_hdr_seal() in wire.h.  A pure function of the bytes (no rail or
 * QP state), so the fuzzer and the wire tests can drive it on its own; what
 * needs a QP (QPN lookup, cookie, peer, PMTU) is soft_net.c's.
 */
#include <errno.h>
#include <string.h>

#include "rails/soft/psn.h"
#include "rails/soft/wire.h"

int ry__soft_wire_parse(const void *pkt, size_t len, struct ry__soft_pkt *out)
{
	const uint8_t *buf = pkt;
	struct ry__soft_hdr h;
	uint32_t hlen = RY__SOFT_HDR_LEN, paylen, word;
	uint64_t v;

	if (len < RY__SOFT_HDR_LEN)
		return -EMSGSIZE;
	/* GRO segments and held packets sit at any alignment. */
	memcpy(&h, buf, sizeof(h));
	if (h.flags & RY__SOFT_F_MAC)
		hlen += RY__SOFT_MAC_LEN;
	paylen = be16toh(h.paylen);
	/* bytes after the payload: GSO padding, where it is allowed */
	if (len < hlen || paylen > len - hlen ||
	    (paylen != len - hlen && !ry__soft_may_pad(h.opcode, h.flags)))
		return -EMSGSIZE;
	if (h.version != RY__SOFT_WIRE_VERSION || !h.opcode ||
	    h.opcode >= RY__SOFT_OP__MAX || (h.flags & ~RY__SOFT_F__ALL) ||
	    (h.syndrome && h.opcode != RY__SOFT_OP_ACK))
		return -EPROTO;
	out->opcode = h.opcode;
	out->flags = h.flags;
	out->syndrome = h.syndrome;
	out->dqpn = ry__soft_get24(h.dqpn);
	out->psn = ry__soft_get24(h.psn);
	memcpy(&v, h.cookie, sizeof(v));
	out->cookie = be64toh(v);
	memcpy(&v, h.reth_va, sizeof(v));
	out->va = be64toh(v);
	out->rkey = be32toh(h.reth_rkey);
	out->len = be32toh(h.reth_len);
	word = be32toh(h.imm_msn);
	out->msn = out->imm = 0;
	if (ry__soft_op_has_msn(h.opcode))
		out->msn = word;
	else
		out->imm = word;
	out->paylen = paylen;
	out->payload = buf + hlen;
	out->mac = hlen > RY__SOFT_HDR_LEN ? buf + RY__SOFT_HDR_LEN : NULL;
	out->crc = be32toh(h.crc);
	if (out->msn & ~RY__SOFT_PSN_MASK)
		return -EPROTO;
	/* IMM only on a LAST packet of a SEND or WRITE, and an immediate
	 * only with IMM: the word is an MSN's or nothing's elsewhere. */
	if ((out->flags & RY__SOFT_F_IMM) &&
	    (!(out->flags & RY__SOFT_F_LAST) ||
	     (out->opcode != RY__SOFT_OP_SEND &&
	      out->opcode != RY__SOFT_OP_WRITE)))
		return -EPROTO;
	if (out->imm && !(out->flags & RY__SOFT_F_IMM))
		return -EPROTO;
	return 0;
}

bool ry__soft_wire_crc_ok(const void *pkt, const struct ry__soft_pkt *p)
{
	uint32_t crc = ry__soft_crc32c(0, pkt, RY__SOFT_HDR_CRC_LEN);

	return ry__soft_crc32c(crc, p->payload, p->paylen) == p->crc;
}

int ry__soft_wire_decode(const void *pkt, size_t len, struct ry__soft_pkt *out)
{
	int rc = ry__soft_wire_parse(pkt, len, out);

	if (!rc && !ry__soft_wire_crc_ok(pkt, out))
		rc = -EBADMSG;
	return rc;
}
