/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Control addresses (ctl/addr.c) and the control channel's pre-shared
 * key (auth.c); the control plane itself is src/ctl/ctl.h.
 *
 *   With a key_file, m_auth (sodium_malloc: locked, wiped by
 *   ry__auth_fini) holds the keys derived from it from ry__ctl_listen()
 *   until ry__ctl_close_all(); the key itself is not kept.  Each control
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
struct ry__authkey;
/* Loads key_file, if set, into locked memory; 0 or -errno (logged). */
int ry__auth_init(struct ry_manager *m);
void ry__auth_fini(struct ry_manager *m); /* wipes the keys */
void ry__auth_nonce(unsigned char n[RY__NONCE]);
void ry__auth_hash_hello(const void *body, size_t n, unsigned char h[RY__MAC]);
void ry__auth_transcript(const unsigned char hello_h[RY__MAC], const void *ack,
			 size_t n, unsigned char t[RY__MAC]);
void ry__auth_proof(const struct ry_manager *m, bool dialer,
		    const unsigned char t[RY__MAC], unsigned char mac[RY__MAC]);
bool ry__auth_proof_ok(const struct ry_manager *m, bool dialer,
		       const unsigned char t[RY__MAC],
		       const unsigned char mac[RY__MAC]);
void ry__auth_session_keys(const struct ry_manager *m, bool dialer,
			   const unsigned char t[RY__MAC],
			   unsigned char ktx[RY__MAC],
			   unsigned char krx[RY__MAC],
			   unsigned char kdata[RY__MAC]);
/* data_mac: a connection's two data-path keys from its session's kdata. */
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
