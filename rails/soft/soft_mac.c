// SPDX-License-Identifier: BSD-2-Clause
/*
 * data_mac: a keyed MAC on every packet of a QP, for networks where an
 * on-path attacker is in scope.  Without it, a packet is taken when it
 * names a QP, its cookie and its peer's address: the cookie is a bearer
 * token sent in the clear, so whoever sees one packet can forge the rest.
 *
 * The keys are the connection's own: the manager derives them from its
 * authenticated control session and both endpoints (src/auth.c) and hands
 * them over at RTR (ry_qp_attr.mac_tx/mac_rx); one per direction.  Every
 * packet then carries, between header and payload (flag MAC),
 *
 *   mac = BLAKE2b-128(key = the sender's direction key,
 *                     le64 xpsn || header bytes 0..51 || payload)
 *
 * and the receiver drops a packet whose MAC is missing or wrong (counted as
 * rx_bad_mac) after the QPN/cookie lookup and the CRC, before the responder
 * or the completer sees it.  The header bytes cover opcode, flags (the MAC
 * flag too: stripping it is a bad MAC, not a packet without one), QPNs,
 * PSN, cookie, RETH, AETH, immediate and payload length.
 *
 * Why a keyed hash and not Poly1305 with a nonce from QPN, PSN and
 * direction: a one-time authenticator must never see two different
 * messages under one nonce, and here it would: a READ response sent again
 * reads the memory again (which may have changed), ACKs repeat a PSN with
 * another MSN or syndrome, and PSNs wrap every 2^24 packets.  BLAKE2b keyed
 * is a PRF: the same input always gives the same MAC and different inputs
 * reveal nothing about each other, so retransmissions are harmless.
 *
 * xpsn, the extended PSN: the 24-bit PSN wraps every 16 M packets (seconds
 * at line rate), so a packet captured one wrap ago would carry the very PSN
 * the receiver expects now.  Both ends therefore count wraps: each PSN
 * space (this QP's requests and the responses to them; the peer's requests
 * and our responses) starts at xpsn RY__SOFT_XPSN_BASE + its first PSN,
 * and a PSN is placed at the xpsn nearest the highest one seen so far in
 * its space (sent, or received with a good MAC: a forger cannot move it).
 * Everything legitimate lies within the PSN window (2^22) of that, well
 * inside the 2^23 that "nearest" resolves; an old packet from an earlier
 * wrap is placed in the current one, under which its MAC was not made.
 *
 * Replay: inside one connection a captured packet replayed within the
 * current window verifies, and is what the transport already handles: a
 * duplicate (re-ACKed, a READ re-executed for its own requester) or out of
 * window (dropped).  Across connections nothing verifies: a reconnect
 * means new QPs, new cookies and so new keys, and a new control session
 * new ones again.
 */
#include <string.h>

#include <sodium.h>

#include "rails/soft/soft.h"
#include "rails/soft/soft_int.h"

void ry__soft_mac_compute(const uint8_t key[RY_QP_MAC_KEY], uint64_t xpsn,
			  const void *hdr, const void *payload, uint32_t paylen,
			  uint8_t mac[RY__SOFT_MAC_LEN])
{
	crypto_generichash_blake2b_state st;
	uint8_t x[8];

	for (int i = 0; i < 8; i++)
		x[i] = (uint8_t)(xpsn >> (8 * i));
	crypto_generichash_blake2b_init(&st, key, RY_QP_MAC_KEY,
					RY__SOFT_MAC_LEN);
	crypto_generichash_blake2b_update(&st, x, sizeof(x));
	crypto_generichash_blake2b_update(&st, hdr, RY__SOFT_HDR_CRC_LEN);
	if (paylen)
		crypto_generichash_blake2b_update(&st, payload, paylen);
	crypto_generichash_blake2b_final(&st, mac, RY__SOFT_MAC_LEN);
}

/* The xpsn of psn in the space whose highest xpsn so far is *top. */
static uint64_t xpsn(uint64_t top, uint32_t psn)
{
	return top + (uint64_t)(int64_t)ry__soft_psn_cmp(
			 psn, (uint32_t)top & RY__SOFT_PSN_MASK);
}

void ry__soft_mac_rtr(struct ry__soft_qp *qp, const struct ry_qp_attr *attr)
{
	struct ry__soft_mac *m = &qp->mac;

	ry__soft_mac_wipe(qp);
	if (!attr->mac)
		return;
	m->on = true;
	memcpy(m->ktx, attr->mac_tx, sizeof(m->ktx));
	memcpy(m->krx, attr->mac_rx, sizeof(m->krx));
	/* ours start at our first PSN, the peer's at its */
	m->tx_req = m->rx_resp = RY__SOFT_XPSN_BASE + qp->base.local.psn;
	m->rx_req = m->tx_resp = RY__SOFT_XPSN_BASE + attr->remote.psn;
	qp_rail(qp)->mac_any = true;
}

void ry__soft_mac_wipe(struct ry__soft_qp *qp)
{
	sodium_memzero(&qp->mac, sizeof(qp->mac));
}

void ry__soft_mac_sign(struct ry__soft_qp *qp, const struct ry__soft_hdr *h,
		       const struct ry__soft_pkt *p, const void *payload,
		       uint8_t mac[RY__SOFT_MAC_LEN])
{
	uint64_t *top = ry__soft_op_is_request(p->opcode) ? &qp->mac.tx_req
							  : &qp->mac.tx_resp;
	uint64_t x = xpsn(*top, p->psn);

	if (x > *top)
		*top = x;
	ry__soft_mac_compute(qp->mac.ktx, x, h, payload, p->paylen, mac);
}

bool ry__soft_mac_ok(struct ry__soft_qp *qp, const uint8_t *buf,
		     const struct ry__soft_pkt *p)
{
	uint64_t *top, x;
	uint8_t want[RY__SOFT_MAC_LEN];

	if (!qp->mac.on || !p->mac)
		return !qp->mac.on && !p->mac;
	top = ry__soft_op_is_request(p->opcode) ? &qp->mac.rx_req
						: &qp->mac.rx_resp;
	x = xpsn(*top, p->psn);
	ry__soft_mac_compute(qp->mac.krx, x, buf, p->payload, p->paylen, want);
	if (crypto_verify_16(want, p->mac))
		return false;
	if (x > *top)
		*top = x;
	return true;
}
