// SPDX-License-Identifier: BSD-2-Clause
/*
 * Authentication of the control channel with a pre-shared key (key_file).
 * All cryptography is libsodium's; this file only chooses the inputs.
 *
 * From the key, two subkeys (crypto_kdf, context "railyard"): one proves
 * knowledge of the key in the handshake, one derives per-session frame
 * keys.  Neither is ever used for anything else.
 *
 *   transcript t = BLAKE2b-256("railyard ctl v2" || BLAKE2b-256(HELLO body)
 *                              || le32 n || HELLO_ACK body without its MAC)
 *   listener's proof = HMAC-SHA512/256(k_proof, "listener" || t)
 *   dialer's proof   = HMAC-SHA512/256(k_proof, "dialer"   || t)
 *   frame key, per direction = HMAC-SHA512/256(k_frame, "d->l" | "l->d" || t)
 *   data key of the session  = HMAC-SHA512/256(k_frame, "data" || t)
 *   a connection's data_mac key for packets from A to B =
 *       BLAKE2b-256(key = data key, "railyard data v1" || ep(A) || ep(B)),
 *       ep = le32 QPN || le32 first PSN || le64 cookie, as exchanged in
 *       CONN_REQ/REP over that session
 *
 * A connection's keys are new whenever one of its QPs is (the cookies are
 * fresh random 64-bit numbers) and whenever the session is (t has fresh
 * nonces), so nothing captured from an earlier connection verifies on a
 * later one; the order of the endpoints makes the two directions' keys
 * differ, so a packet cannot be reflected back to its sender.
 *
 * Both bodies carry the sender's incarnation, node name, control address
 * and a fresh 32-byte nonce, so a proof is good for one session only and
 * names both ends.  The labels keep a proof from being reflected back to
 * its sender as the other direction's.
 */
#include <errno.h>
#include <string.h>

#include <sodium.h>

#include "config/config_int.h"
#include "src/manager.h"
#include "src/util/le.h"

#define KDF_CTX "railyard"
#define KDF_PROOF 1
#define KDF_FRAME 2

struct ry__authkey {
	unsigned char k_proof[RY__MAC];
	unsigned char k_frame[RY__MAC];
};

int ry__auth_init(struct ry_manager *m)
{
	unsigned char *psk;
	char why[400], hint[400];
	int ret;

	m->m_auth = NULL;
	if (!m->m_cfg.key_file[0])
		return 0;
	if (sodium_init() < 0) {
		RY_ERR("mgr", "libsodium cannot be initialised");
		return -EIO;
	}
	/* locked (never swapped), guarded, and wiped by sodium_free */
	psk = sodium_malloc(RY__KEY_BYTES);
	m->m_auth = sodium_malloc(sizeof(*m->m_auth));
	if (!psk || !m->m_auth) {
		sodium_free(psk);
		sodium_free(m->m_auth);
		m->m_auth = NULL;
		return -ENOMEM;
	}
	ret = ry__key_file_read(m->m_cfg.key_file, psk, why, sizeof(why), hint,
				sizeof(hint));
	if (ret) {
		RY_ERR("mgr", "%s (%s)", why, hint);
		sodium_free(psk);
		ry__auth_fini(m);
		return ret;
	}
	crypto_kdf_derive_from_key(m->m_auth->k_proof, RY__MAC, KDF_PROOF,
				   KDF_CTX, psk);
	crypto_kdf_derive_from_key(m->m_auth->k_frame, RY__MAC, KDF_FRAME,
				   KDF_CTX, psk);
	sodium_free(psk);
	return 0;
}

void ry__auth_fini(struct ry_manager *m)
{
	sodium_free(m->m_auth);
	m->m_auth = NULL;
}

void ry__auth_nonce(unsigned char n[RY__NONCE])
{
	randombytes_buf(n, RY__NONCE);
}

void ry__auth_hash_hello(const void *body, size_t n, unsigned char h[RY__MAC])
{
	crypto_generichash(h, RY__MAC, body, n, NULL, 0);
}

void ry__auth_transcript(const unsigned char hello_h[RY__MAC], const void *ack,
			 size_t n, unsigned char t[RY__MAC])
{
	static const char label[] = "railyard ctl v2";
	crypto_generichash_state st;
	unsigned char len[4];

	ry__put_le32(len, (uint32_t)n);
	crypto_generichash_init(&st, NULL, 0, RY__MAC);
	crypto_generichash_update(&st, (const void *)label, sizeof(label));
	crypto_generichash_update(&st, hello_h, RY__MAC);
	crypto_generichash_update(&st, len, sizeof(len));
	crypto_generichash_update(&st, ack, n);
	crypto_generichash_final(&st, t, RY__MAC);
}

static void labelled(const unsigned char *key, const char *label,
		     const unsigned char t[RY__MAC], unsigned char out[RY__MAC])
{
	crypto_auth_hmacsha512256_state st;

	crypto_auth_hmacsha512256_init(&st, key, RY__MAC);
	crypto_auth_hmacsha512256_update(&st, (const void *)label,
					 strlen(label) + 1);
	crypto_auth_hmacsha512256_update(&st, t, RY__MAC);
	crypto_auth_hmacsha512256_final(&st, out);
	sodium_memzero(&st, sizeof(st));
}

void ry__auth_proof(const struct ry_manager *m, bool dialer,
		    const unsigned char t[RY__MAC], unsigned char mac[RY__MAC])
{
	labelled(m->m_auth->k_proof, dialer ? "dialer" : "listener", t, mac);
}

bool ry__auth_proof_ok(const struct ry_manager *m, bool dialer,
		       const unsigned char t[RY__MAC],
		       const unsigned char mac[RY__MAC])
{
	unsigned char want[RY__MAC];
	bool ok;

	ry__auth_proof(m, dialer, t, want);
	ok = crypto_verify_32(want, mac) == 0;
	sodium_memzero(want, sizeof(want));
	return ok;
}

void ry__auth_session_keys(const struct ry_manager *m, bool dialer,
			   const unsigned char t[RY__MAC],
			   unsigned char ktx[RY__MAC],
			   unsigned char krx[RY__MAC],
			   unsigned char kdata[RY__MAC])
{
	labelled(m->m_auth->k_frame, dialer ? "d->l" : "l->d", t, ktx);
	labelled(m->m_auth->k_frame, dialer ? "l->d" : "d->l", t, krx);
	labelled(m->m_auth->k_frame, "data", t, kdata);
}

static void conn_key(const unsigned char kdata[RY__MAC],
		     const struct ry_qp_endpoint *from,
		     const struct ry_qp_endpoint *to,
		     unsigned char k[RY_QP_MAC_KEY])
{
	static const char label[] = "railyard data v1";
	unsigned char ep[2][16];
	crypto_generichash_blake2b_state st;

	ry__put_le32(ep[0], from->qpn);
	ry__put_le32(ep[0] + 4, from->psn);
	ry__put_le64(ep[0] + 8, from->cookie);
	ry__put_le32(ep[1], to->qpn);
	ry__put_le32(ep[1] + 4, to->psn);
	ry__put_le64(ep[1] + 8, to->cookie);
	crypto_generichash_blake2b_init(&st, kdata, RY__MAC, RY_QP_MAC_KEY);
	crypto_generichash_blake2b_update(&st, (const void *)label,
					  sizeof(label));
	crypto_generichash_blake2b_update(&st, (const void *)ep, sizeof(ep));
	crypto_generichash_blake2b_final(&st, k, RY_QP_MAC_KEY);
	sodium_memzero(&st, sizeof(st));
}

void ry__auth_conn_keys(const unsigned char kdata[RY__MAC],
			const struct ry_qp_endpoint *loc,
			const struct ry_qp_endpoint *rem,
			unsigned char ktx[RY_QP_MAC_KEY],
			unsigned char krx[RY_QP_MAC_KEY])
{
	conn_key(kdata, loc, rem, ktx);
	conn_key(kdata, rem, loc, krx);
}

/* The counter is implicit: TCP delivers in order, so a replayed,
 * dropped or reordered frame fails its MAC. */
void ry__auth_frame_mac(const unsigned char k[RY__MAC], uint64_t ctr,
			uint16_t type, uint16_t ver, const void *body, size_t n,
			unsigned char mac[RY__MAC])
{
	crypto_auth_hmacsha512256_state st;
	unsigned char hdr[16];

	ry__put_le64(hdr, ctr);
	ry__put_le16(hdr + 8, type);
	ry__put_le16(hdr + 10, ver);
	ry__put_le32(hdr + 12, (uint32_t)n);
	crypto_auth_hmacsha512256_init(&st, k, RY__MAC);
	crypto_auth_hmacsha512256_update(&st, hdr, sizeof(hdr));
	crypto_auth_hmacsha512256_update(&st, body, n);
	crypto_auth_hmacsha512256_final(&st, mac);
	sodium_memzero(&st, sizeof(st));
}

bool ry__auth_frame_ok(const unsigned char k[RY__MAC], uint64_t ctr,
		       uint16_t type, uint16_t ver, const void *body, size_t n,
		       const unsigned char mac[RY__MAC])
{
	unsigned char want[RY__MAC];
	bool ok;

	ry__auth_frame_mac(k, ctr, type, ver, body, n, want);
	ok = crypto_verify_32(want, mac) == 0;
	sodium_memzero(want, sizeof(want));
	return ok;
}
