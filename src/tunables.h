/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The manager's limits and constants: sizes of rings, windows and pools
 * that are fixed at build time.
 */
#ifndef RAILYARD_TUNABLES_H
#define RAILYARD_TUNABLES_H

#include <stdint.h>

#include <railyard/railyard.h>

#define RY__RECV_BUFS 256 /* receive buffers per rail (the SRQ) */
#define RY__MSG_SLOTS 256 /* send slots for messages per manager */
#define RY__MSG_BUF (RY_MSG_MAX + 64)
/* Message windows, in sequences (msg.c): the receiver's dedupe window
 * leaves room above the sender's for every receive buffer of every rail. */
#define RY__TXWIN 512
#define RY__RXWIN 8192
_Static_assert(RY__RXWIN >= RY__TXWIN + RY__RECV_BUFS * RY_MAX_RAILS,
	       "receive window smaller than sender window + receive buffers");
#define RY__PAST 8	  /* earlier incarnations of a peer remembered */
#define RY__POST_BATCH 32 /* WRs handed to one post_send call */
#define RY__MAX_CTX 16	  /* progress contexts (config: contexts) */
/* No more fragments for a connection holding twice what it completed in
 * the last window this long (stripe.c), unless under RY__OUT_MIN bytes. */
#define RY__OUT_HORIZON_NS 8000000ull
#define RY__OUT_MIN (128u << 10)
/* A FENCE_REQ unacknowledged this long is sent again (fence.c), the wait
 * doubled at each resend up to the max. */
#define RY__FENCE_RESEND_MIN_NS 250000000ull
#define RY__FENCE_RESEND_MAX_NS 4000000000ull

/*
 * Time from t to now, 0 if t is later: stamps taken during one progress
 * call may be newer than the `now` it started with.
 */
static inline uint64_t ry__since(uint64_t now, uint64_t t)
{
	return now > t ? now - t : 0;
}

/* lr_qpn_hash: RY__QPN_HASH_MIN buckets at first, doubled while there are
 * more connections than buckets, up to RY__QPN_HASH_MAX (conn.c) */
#define RY__QPN_HASH_MIN 64
#define RY__QPN_HASH_MAX (1u << 20)
#define RY__RCACHE_HASH 1024 /* registration cache buckets */
#define RY__STASH 64	     /* one CQ poll batch (struct ry__ctx.cx_stash) */

#endif /* RAILYARD_TUNABLES_H */
