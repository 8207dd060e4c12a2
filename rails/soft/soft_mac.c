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
 * packet then carries, between header and payload (flag MAC), 24 bytes:
 *
 *   le64 n      the sender's transmission counter: +1 for every packet
 *               the QP sends (a retransmission too)
 *   tag         ChaCha20-Poly1305 (IETF, libsodium's AEAD) under the
 *               direction's key with nonce le64 n || 0, an empty message
 *               and as additional data: le64 xpsn || header bytes 0..39
 *               || payload
 *
 * and the receiver drops a packet whose MAC is missing or wrong (counted as
 * rx_bad_mac) after the QPN/cookie lookup and the CRC, before the responder
 * or the completer sees it.  The header bytes cover opcode, flags (the MAC
 * flag too: stripping it is a bad MAC, not a packet without one), syndrome,
 * destination QPN, PSN, payload length, cookie, RETH, and the immediate or
 * MSN.
 *
 * The nonce is the transmission counter, not QPN, PSN and direction: an
 * AEAD (Poly1305 inside) must never authenticate two different messages
 * under one nonce, and packets with one PSN differ: a READ response sent
 * again reads the memory again (which may have changed), ACKs repeat a PSN
 * with another MSN or syndrome, and PSNs wrap every 2^24 packets.  A 64-bit
 * counter under a key that lives for one connection never repeats.  The
 * receiver keeps no state about n: the nonce need only be unique for what
 * the key holder sends, and a forger's choice of n buys nothing (the AEAD's
 * forgery bound holds for any nonce it picks).  BLAKE2b keyed (a PRF, no
 * nonce) was measured first: 2-4 times slower per byte here.
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
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "rails/soft/soft.h"
#include "rails/soft/soft_int.h"

#define AD_HDR (8 + RY__SOFT_HDR_CRC_LEN) /* xpsn and header bytes */
#define AD_MAX (AD_HDR + RY__SOFT_RX_BUF)

/* The AEAD takes its additional data in one piece: xpsn, header and
 * payload are gathered into ad (AD_MAX bytes); its length. */
static size_t gather(uint8_t *ad, uint64_t xpsn, const void *hdr,
		     const void *payload, uint32_t paylen)
{
	for (int i = 0; i < 8; i++)
		ad[i] = (uint8_t)(xpsn >> (8 * i));
	memcpy(ad + 8, hdr, RY__SOFT_HDR_CRC_LEN);
	if (paylen)
		memcpy(ad + AD_HDR, payload, paylen);
	return AD_HDR + paylen;
}

static void mac_with(uint8_t *ad, const uint8_t key[RY_QP_MAC_KEY], uint64_t n,
		     uint64_t xpsn, const void *hdr, const void *payload,
		     uint32_t paylen, uint8_t mac[RY__SOFT_MAC_LEN])
{
	uint8_t nonce[crypto_aead_chacha20poly1305_IETF_NPUBBYTES] = {0};
	uint8_t none[1] = {0}; /* the empty message, its empty ciphertext */
	size_t adlen = gather(ad, xpsn, hdr, payload, paylen);
	unsigned long long maclen;

	for (int i = 0; i < 8; i++)
		nonce[i] = (uint8_t)(n >> (8 * i));
	memcpy(mac, nonce, 8);
	crypto_aead_chacha20poly1305_ietf_encrypt_detached(
	    none, mac + 8, &maclen, none, 0, ad, adlen, NULL, nonce, key);
}

void ry__soft_mac_compute(const uint8_t key[RY_QP_MAC_KEY], uint64_t n,
			  uint64_t xpsn, const void *hdr, const void *payload,
			  uint32_t paylen, uint8_t mac[RY__SOFT_MAC_LEN])
{
	uint8_t *ad = malloc(AD_MAX);

	if (!ad)
		abort(); /* tests only */
	mac_with(ad, key, n, xpsn, hdr, payload, paylen, mac);
	free(ad);
}

/* The xpsn of psn in the space whose highest xpsn so far is *top. */
static uint64_t xpsn(uint64_t top, uint32_t psn)
{
	return top + (uint64_t)(int64_t)ry__soft_psn_cmp(
			 psn, (uint32_t)top & RY__SOFT_PSN_MASK);
}

int ry__soft_mac_rtr(struct ry__soft_qp *qp, const struct ry_qp_attr *attr)
{
	struct ry__soft_rail *r = qp_rail(qp);
	struct ry__soft_mac *m = &qp->mac;

	ry__soft_mac_wipe(qp);
	if (!attr->mac)
		return 0;
	/* picks the fastest implementations; safe to call again */
	if (sodium_init() < 0)
		return -EIO;
	if (!r->mac_ad && !(r->mac_ad = malloc(AD_MAX)))
		return -ENOMEM;
	m->on = true;
	memcpy(m->ktx, attr->mac_tx, sizeof(m->ktx));
	memcpy(m->krx, attr->mac_rx, sizeof(m->krx));
	/* ours start at our first PSN, the peer's at its */
	m->tx_req = m->rx_resp = RY__SOFT_XPSN_BASE + qp->base.local.psn;
	m->rx_req = m->tx_resp = RY__SOFT_XPSN_BASE + attr->remote.psn;
	return 0;
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
	mac_with(qp_rail(qp)->mac_ad, qp->mac.ktx, qp->mac.tx_n++, x, h,
		 payload, p->paylen, mac);
}

bool ry__soft_mac_ok(struct ry__soft_qp *qp, const uint8_t *buf,
		     const struct ry__soft_pkt *p)
{
	uint8_t nonce[crypto_aead_chacha20poly1305_IETF_NPUBBYTES] = {0};
	uint8_t *ad = qp_rail(qp)->mac_ad;
	uint8_t none[1] = {0};
	uint64_t *top, x;
	size_t adlen;

	if (!qp->mac.on || !p->mac)
		return !qp->mac.on && !p->mac;
	top = ry__soft_op_is_request(p->opcode) ? &qp->mac.rx_req
						: &qp->mac.rx_resp;
	x = xpsn(*top, p->psn);
	memcpy(nonce, p->mac, 8);
	adlen = gather(ad, x, buf, p->payload, p->paylen);
	/* constant time inside libsodium */
	if (crypto_aead_chacha20poly1305_ietf_decrypt_detached(
		none, NULL, none, 0, p->mac + 8, ad, adlen, nonce, qp->mac.krx))
		return false;
	if (x > *top)
		*top = x;
	return true;
}
