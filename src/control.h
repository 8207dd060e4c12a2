/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Control addresses (ctl/addr.c) and the control channel's pre-shared
 * key (auth.c); the control plane itself is src/ctl/ctl.h.
 *
 *   With a key_file, m_auth (sodium_malloc: locked, wiped by
 *   ry__auth_fini) holds the keys derived from it from ry__ctl_listen()
 *   until ry__ctl_close_all(); the key itself is not kept.  A reload
 *   that reads a new key keeps the previous one for key_overlap_s
 *   (ry__auth_rotate, ry__auth_expire).  Each control
 *   session's handshake state and frame keys are its own and wiped when
 *   it is freed.
 */
#ifndef RAILYARD_CONTROL_H
#define RAILYARD_CONTROL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <railyard/railyard.h>

#include "rails/rail.h"

struct ry_manager;
struct ry_peer;
struct ry__ctl;
struct ry__ip;

/* ctl/addr.c: addresses */
int ry__ip_parse(const char *s, struct ry__ip *ip);
bool ry__ip_same_host(const struct ry__ip *a, const struct ry__ip *b);
/* The same control address however it is written. */
bool ry__addr_same(const char *x, const char *y);

/*
 * auth.c: the control channel's pre-shared key.  The handshake and frame
 * MACs are described there and in src/ctl/hello.c.
 */
#define RY__NONCE 32
#define RY__MAC 32
#define RY__KEY_ID 8 /* a key's public id (wire: RY__CTL_KEY_ID) */
/* One key's derived subkeys and id (sodium_malloc'd, wiped when freed). */
struct ry__authkey;
/* m_auth: the current key and, for key_overlap_s after a reload changed
 * it, the previous one. */
struct ry__keyring;
/* Loads key_file, if set, into locked memory; 0 or -errno (logged). */
int ry__auth_init(struct ry_manager *m);
void ry__auth_fini(struct ry_manager *m); /* wipes the keys */
/* Reads path into a new key *k_p; 0, or -errno with why and hint set. */
int ry__auth_load(const char *path, struct ry__authkey **k_p, char *why,
		  size_t why_len, char *hint, size_t hint_len);
void ry__auth_key_free(struct ry__authkey *k); /* wipes it; NULL: no-op */
/* k (owned from here on) becomes the current key; the current one stays
 * accepted for m_cfg.key_overlap_s.  A k with the current key's id is
 * the same key: freed, nothing changes.  The cold lock. */
void ry__auth_rotate(struct ry_manager *m, struct ry__authkey *k);
/* Wipes the previous key once its overlap is over (ry__ctl_timers). */
void ry__auth_expire(struct ry_manager *m, uint64_t now);
/* The ids of the keys held, newest first: how many (0: no key). */
unsigned ry__auth_ids(struct ry_manager *m, unsigned char ids[][RY__KEY_ID],
		      unsigned max);
/* When the previous key stops being accepted (ry__now_ns clock); 0: none
 * held. */
uint64_t ry__auth_overlap_end(const struct ry_manager *m);
/* The key held with this id, or NULL (none, or its overlap is over). */
const struct ry__authkey *ry__auth_key(struct ry_manager *m,
				       const unsigned char id[RY__KEY_ID]);
const struct ry__authkey *ry__auth_current(const struct ry_manager *m);
const unsigned char *ry__auth_key_id(const struct ry__authkey *k);
/* n ids of RY__KEY_ID bytes, back to back, as "0123456789abcdef,..."
 * into out[len] */
void ry__auth_ids_str(const void *ids, unsigned n, char *out, size_t len);
void ry__auth_nonce(unsigned char n[RY__NONCE]);
void ry__auth_hash_hello(const void *body, size_t n, unsigned char h[RY__MAC]);
void ry__auth_transcript(const unsigned char hello_h[RY__MAC], const void *ack,
			 size_t n, unsigned char t[RY__MAC]);
void ry__auth_proof(const struct ry__authkey *k, bool dialer,
		    const unsigned char t[RY__MAC], unsigned char mac[RY__MAC]);
bool ry__auth_proof_ok(const struct ry__authkey *k, bool dialer,
		       const unsigned char t[RY__MAC],
		       const unsigned char mac[RY__MAC]);
void ry__auth_session_keys(const struct ry__authkey *k, bool dialer,
			   const unsigned char t[RY__MAC],
			   unsigned char ktx[RY__MAC],
			   unsigned char krx[RY__MAC],
			   unsigned char kdata[RY__MAC]);
void ry__auth_conn_keys(const unsigned char kdata[RY__MAC],
			const struct ry_qp_endpoint *loc,
			const struct ry_qp_endpoint *rem,
			unsigned char ktx[RY_QP_MAC_KEY],
			unsigned char krx[RY_QP_MAC_KEY]);
void ry__auth_frame_mac(const unsigned char k[RY__MAC], uint64_t ctr,
			uint16_t type, uint16_t ver, const void *body, size_t n,
			unsigned char mac[RY__MAC]);
bool ry__auth_frame_ok(const unsigned char k[RY__MAC], uint64_t ctr,
		       uint16_t type, uint16_t ver, const void *body, size_t n,
		       const unsigned char mac[RY__MAC]);

#endif /* RAILYARD_CONTROL_H */
