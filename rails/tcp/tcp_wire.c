// SPDX-License-Identifier: BSD-2-Clause
/* The tcp rail's header decoder: pure, so the fuzzer drives it alone. */
#include "rails/tcp/tcp_wire.h"

const char *const ry__tcp_bad_names[RY__TCP_BAD__MAX] = {
    [RY__TCP_BAD_NONE] = "ok",	     [RY__TCP_BAD_VERSION] = "wire version",
    [RY__TCP_BAD_OPCODE] = "opcode", [RY__TCP_BAD_RSVD] = "reserved bits",
    [RY__TCP_BAD_QPN] = "qpn",	     [RY__TCP_BAD_PSN] = "psn",
    [RY__TCP_BAD_LEN] = "length",    [RY__TCP_BAD_SYNDROME] = "syndrome",
};

enum ry__tcp_bad ry__tcp_wire_decode(const uint8_t *h, struct ry__tcp_msg *m)
{
	if (ry__tcp_get_version(h) != RY__TCP_WIRE_VERSION)
		return RY__TCP_BAD_VERSION;
	m->opcode = ry__tcp_get_opcode(h);
	if (m->opcode < RY__TCP_OP_HELLO || m->opcode >= RY__TCP_OP__MAX)
		return RY__TCP_BAD_OPCODE;
	if (ry__tcp_get_rsvd(h) || ry__tcp_get_rsvd2(h))
		return RY__TCP_BAD_RSVD;
	m->syndrome = ry__tcp_get_syndrome(h);
	m->qpn = ry__tcp_get_qpn(h);
	m->psn = ry__tcp_get_psn(h);
	m->len = ry__tcp_get_len(h);
	m->cookie = ry__tcp_get_cookie(h);
	m->va = ry__tcp_get_va(h);
	m->rkey = ry__tcp_get_rkey(h);
	m->imm = ry__tcp_get_imm(h);
	m->rlen = ry__tcp_get_rlen(h);
	if (!m->qpn || m->qpn > 0xffffff)
		return RY__TCP_BAD_QPN;
	if (m->psn > 0xffffff)
		return RY__TCP_BAD_PSN;
	if (m->syndrome && m->opcode != RY__TCP_OP_ACK)
		return RY__TCP_BAD_SYNDROME;
	if (m->syndrome >= RY__TCP_SYN__MAX)
		return RY__TCP_BAD_SYNDROME;
	if (m->len > RY__TCP_MAX_MSG || m->rlen > RY__TCP_MAX_MSG)
		return RY__TCP_BAD_LEN;
	switch (m->opcode) {
	case RY__TCP_OP_HELLO:
		/* the sender's QPN rides in rkey */
		if (m->len || m->rlen || !m->rkey || m->rkey > 0xffffff)
			return m->len || m->rlen ? RY__TCP_BAD_LEN
						 : RY__TCP_BAD_QPN;
		break;
	case RY__TCP_OP_READ_REQ:
		if (m->len)
			return RY__TCP_BAD_LEN;
		break;
	case RY__TCP_OP_ACK:
		if (m->len || m->rlen)
			return RY__TCP_BAD_LEN;
		break;
	default:
		if (m->rlen)
			return RY__TCP_BAD_LEN;
		break;
	}
	return RY__TCP_BAD_NONE;
}
