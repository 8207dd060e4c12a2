// SPDX-License-Identifier: BSD-2-Clause
/*
 * Authentication of the control channel with a pre-shared key (key_file).
 * All cryptography is libsodium's; this file only chooses the inputs.
 *
 * From the key, three subkeys (crypto_kdf, context "railyard"): one proves
 * knowledge of the key in the handshake, one derives per-session frame
 * keys, and 8 bytes of the third are the key's public id.  None is ever
 * used for anything else.
 *
 * Rotation: a reload that reads a new key makes it current and keeps the
 * previous one for key_overlap_s.  The dialer's HELLO lists the ids of
 * the keys it holds, newest first; the listener takes the first it holds
 * too and names it in HELLO_ACK, before its proof, so the choice is in
 * the transcript (and the list, in the HELLO's hash) and a man in the
 * middle cannot steer both ends to an older key.  A HELLO without ids is
 * a peer's one key, taken to be the listener's current one.  Both ends
 * then prove and derive the session's keys under that key.  Once the
 * overlap is over the previous key is wiped; sessions made under it keep
 * their own frame and data keys until they end.
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "config/config_int.h"
#include "src/manager.h"
#include "src/util/clock.h"
#include "src/util/le.h"

#define KDF_CTX "railyard"
#define KDF_PROOF 1
#define KDF_FRAME 2
#define KDF_ID 3

struct ry__authkey {
	unsigned char k_proof[RY__MAC];
	unsigned char k_frame[RY__MAC];
	unsigned char k_id[RY__KEY_ID];
};

struct ry__keyring {
	struct ry__authkey *kr_cur;
	struct ry__authkey *kr_prev; /* NULL: no overlap */
	uint64_t kr_prev_until_ns;
};

int ry__auth_load(const char *path, struct ry__authkey **k_p, char *why,
		  size_t why_len, char *hint, size_t hint_len)
{
	unsigned char id[crypto_kdf_BYTES_MIN];
	struct ry__authkey *k;
	unsigned char *psk;
	int ret;

	if (sodium_init() < 0) {
		snprintf(why, why_len, "libsodium cannot be initialised");
		hint[0] = 0;
		return -EIO;
	}
	/* locked (never swapped), guarded, and wiped by sodium_free */
	psk = sodium_malloc(RY__KEY_BYTES);
	k = sodium_malloc(sizeof(*k));
	if (!psk || !k) {
		sodium_free(psk);
		sodium_free(k);
		snprintf(why, why_len, "key_file '%s': no locked memory", path);
		snprintf(hint, hint_len, "raise RLIMIT_MEMLOCK");
		return -ENOMEM;
	}
	ret = ry__key_file_read(path, psk, why, why_len, hint, hint_len);
	if (ret) {
		sodium_free(psk);
		sodium_free(k);
		return ret;
	}
	crypto_kdf_derive_from_key(k->k_proof, RY__MAC, KDF_PROOF, KDF_CTX,
				   psk);
	crypto_kdf_derive_from_key(k->k_frame, RY__MAC, KDF_FRAME, KDF_CTX,
				   psk);
	/* a subkey of its own (crypto_kdf's shortest), cut to 8 bytes: it
	 * names the key on the wire and in logs and reveals nothing of it
	 * or of the other subkeys */
	crypto_kdf_derive_from_key(id, sizeof(id), KDF_ID, KDF_CTX, psk);
	memcpy(k->k_id, id, RY__KEY_ID);
	sodium_memzero(id, sizeof(id));
	sodium_free(psk);
	*k_p = k;
	return 0;
}

void ry__auth_key_free(struct ry__authkey *k)
{
	sodium_free(k);
}

int ry__auth_init(struct ry_manager *m)
{
	struct ry__authkey *k;
	char why[400], hint[400];
	char id[2 * RY__KEY_ID + 1];
	int ret;

	m->m_auth = NULL;
	if (!m->m_cfg.key_file[0])
		return 0;
	ret = ry__auth_load(m->m_cfg.key_file, &k, why, sizeof(why), hint,
			    sizeof(hint));
	if (ret) {
		RY_ERR("mgr", "%s%s%s%s", why, hint[0] ? " (" : "", hint,
		       hint[0] ? ")" : "");
		return ret;
	}
	m->m_auth = calloc(1, sizeof(*m->m_auth));
	if (!m->m_auth) {
		ry__auth_key_free(k);
		return -ENOMEM;
	}
	m->m_auth->kr_cur = k;
	ry__auth_ids_str(k->k_id, 1, id, sizeof(id));
	RY_INFO("mgr", "key_file: key id %s", id);
	return 0;
}

void ry__auth_fini(struct ry_manager *m)
{
	if (!m->m_auth)
		return;
	ry__auth_key_free(m->m_auth->kr_cur);
	ry__auth_key_free(m->m_auth->kr_prev);
	free(m->m_auth);
	m->m_auth = NULL;
}

void ry__auth_ids_str(const void *ids, unsigned n, char *out, size_t len)
{
	const unsigned char *id = ids;
	size_t o = 0;

	if (!len)
		return;
	out[0] = 0;
	for (unsigned i = 0; i < n && o + !!i + 2 * RY__KEY_ID + 1 <= len;
	     i++) {
		if (i)
			out[o++] = ',';
		sodium_bin2hex(out + o, len - o, id + i * RY__KEY_ID,
			       RY__KEY_ID);
		o += 2 * RY__KEY_ID;
	}
}

static void prev_drop(struct ry_manager *m, const char *why)
{
	struct ry__keyring *kr = m->m_auth;
	char id[2 * RY__KEY_ID + 1];

	ry__auth_ids_str(kr->kr_prev->k_id, 1, id, sizeof(id));
	RY_INFO("mgr", "key_file: key id %s %s; it is wiped", id, why);
	ry__auth_key_free(kr->kr_prev);
	kr->kr_prev = NULL;
	kr->kr_prev_until_ns = 0;
}

void ry__auth_rotate(struct ry_manager *m, struct ry__authkey *k)
{
	struct ry__keyring *kr = m->m_auth;
	uint64_t overlap_ns = (uint64_t)m->m_cfg.key_overlap_s * 1000000000ull;
	char ids[2][2 * RY__KEY_ID + 1];

	if (!kr || !memcmp(k->k_id, kr->kr_cur->k_id, RY__KEY_ID)) {
		ry__auth_key_free(k);
		return;
	}
	if (kr->kr_prev)
		prev_drop(m, "is replaced by a newer previous key");
	kr->kr_prev = kr->kr_cur;
	kr->kr_cur = k;
	kr->kr_prev_until_ns = ry__now_ns() + overlap_ns;
	ry__auth_ids_str(k->k_id, 1, ids[0], sizeof(ids[0]));
	ry__auth_ids_str(kr->kr_prev->k_id, 1, ids[1], sizeof(ids[1]));
	RY_INFO("mgr",
		"key_file: key id %s is current; key id %s is accepted for "
		"%u s more",
		ids[0], ids[1], m->m_cfg.key_overlap_s);
	if (!overlap_ns)
		prev_drop(m, "is no longer accepted (key_overlap_s = 0)");
}

void ry__auth_expire(struct ry_manager *m, uint64_t now)
{
	struct ry__keyring *kr = m->m_auth;

	if (kr && kr->kr_prev && now >= kr->kr_prev_until_ns)
		prev_drop(m, "is no longer accepted (key_overlap_s is over)");
}

unsigned ry__auth_ids(struct ry_manager *m, unsigned char ids[][RY__KEY_ID],
		      unsigned max)
{
	struct ry__keyring *kr = m->m_auth;
	unsigned n = 0;

	if (!kr)
		return 0;
	ry__auth_expire(m, ry__now_ns());
	if (n < max)
		memcpy(ids[n++], kr->kr_cur->k_id, RY__KEY_ID);
	if (kr->kr_prev && n < max)
		memcpy(ids[n++], kr->kr_prev->k_id, RY__KEY_ID);
	return n;
}

uint64_t ry__auth_overlap_end(const struct ry_manager *m)
{
	return m->m_auth && m->m_auth->kr_prev ? m->m_auth->kr_prev_until_ns
					       : 0;
}

const struct ry__authkey *ry__auth_key(struct ry_manager *m,
				       const unsigned char id[RY__KEY_ID])
{
	struct ry__keyring *kr = m->m_auth;

	if (!kr)
		return NULL;
	ry__auth_expire(m, ry__now_ns());
	if (!memcmp(kr->kr_cur->k_id, id, RY__KEY_ID))
		return kr->kr_cur;
	if (kr->kr_prev && !memcmp(kr->kr_prev->k_id, id, RY__KEY_ID))
		return kr->kr_prev;
	return NULL;
}

const struct ry__authkey *ry__auth_current(const struct ry_manager *m)
{
	return m->m_auth ? m->m_auth->kr_cur : NULL;
}

const unsigned char *ry__auth_key_id(const struct ry__authkey *k)
{
	return k->k_id;
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

void ry__auth_proof(const struct ry__authkey *k, bool dialer,
		    const unsigned char t[RY__MAC], unsigned char mac[RY__MAC])
{
	labelled(k->k_proof, dialer ? "dialer" : "listener", t, mac);
}

bool ry__auth_proof_ok(const struct ry__authkey *k, bool dialer,
		       const unsigned char t[RY__MAC],
		       const unsigned char mac[RY__MAC])
{
	unsigned char want[RY__MAC];
	bool ok;

	ry__auth_proof(k, dialer, t, want);
	ok = crypto_verify_32(want, mac) == 0;
	sodium_memzero(want, sizeof(want));
	return ok;
}

void ry__auth_session_keys(const struct ry__authkey *k, bool dialer,
			   const unsigned char t[RY__MAC],
			   unsigned char ktx[RY__MAC],
			   unsigned char krx[RY__MAC],
			   unsigned char kdata[RY__MAC])
{
	labelled(k->k_frame, dialer ? "d->l" : "l->d", t, ktx);
	labelled(k->k_frame, dialer ? "l->d" : "d->l", t, krx);
	labelled(k->k_frame, "data", t, kdata);
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
