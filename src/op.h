/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Operations: what the application posts, cut into fragments that the
 * stripe spreads over connections; replay and fencing of the fragments of
 * failed connections.
 *
 *   A fragment is in exactly one place: queued (an op's fresh range
 *   [op_next_frag, op_nfrags) or a struct ry__range on the peer's replay
 *   list), posted (inside one struct ry__wr on one connection), or done
 *   (counted in op_done_frags).  Whoever takes a fragment out of a place
 *   puts it in the next one; the op completes when op_done_frags reaches
 *   op_nfrags and no message of it is outstanding.
 *
 *   Replay and teardown never happen while a completion is being handled:
 *   completion handling marks a connection CONN_FAILED
 *   (ry__conn_mark_failed); ry__replay_run() moves it to ERR, fences and
 *   drains it later in the same progress call.  Every connection state
 *   change is made in conn.c.
 */
#ifndef RAILYARD_OP_H
#define RAILYARD_OP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <railyard/railyard.h>

#include "src/conn.h"
#include "src/util/list.h"

struct ry_peer;
struct ry_manager;
struct ry_region;
struct ry__ctx;
struct ry__ctl;

enum ry__op_type {
	OP_WRITE = 0,
	OP_READ,
	OP_SEND,
};

enum ry__op_state {
	OPS_WAITING = 0, /* beyond ops_in_flight: on pr_waitq */
	OPS_RUNNING,	 /* fragments queued, posted or done */
	OPS_FENCING,	 /* all fragments done; waiting for the fence ack */
	OPS_MESSAGE,	 /* its message (send/notify) queued or posted */
	OPS_DONE,	 /* completed; on a delivery list */
};
const char *ry__op_state_str(enum ry__op_state s);

/* Replayed fragments waiting at the head of the peer's queue. */
struct ry__range {
	struct ry__range *rn_next;
	struct ry__op *rn_op;
	uint32_t rn_first, rn_n;
};

struct ry__op {
	struct ry_peer *op_peer;
	struct ry__ctx *op_cx; /* its peer's context: the pool it is from */
	enum ry__op_type op_type;
	enum ry__op_state op_state;
	struct ry_region *op_region;
	size_t op_local_off;
	size_t op_len;
	uint64_t op_raddr;
	uint32_t op_rmask; /* peer rails with an rkey */
	uint32_t op_rkey[RY_MAX_RAILS];
	uint64_t op_rnode; /* the descriptor's owner */
	uint32_t op_nfrags;
	uint32_t op_next_frag; /* fresh fragments start here */
	uint32_t op_done_frags;
	uint32_t op_posted; /* WRs of this op posted */
	bool op_replayed;
	bool op_notify;
	uint64_t op_fence_gen; /* peer fence this op must wait for */
	uint64_t op_wait_ns;   /* waiting for a path since */
	uint64_t op_post_ns;   /* posted by the application */
	/* the message phase (OP_SEND, and a write's notification) */
	uint64_t op_seq;
	uint64_t op_notify_val;
	unsigned op_slot; /* send slot, or ~0u */
	uint32_t op_msg_len;
	ry_complete_fn op_cb;
	void *op_ctx;
	enum ry_status op_status;
	char op_reason[192];
	struct ry__list op_all;	  /* pr_ops: all of the peer's */
	struct ry__op *op_q_next; /* pr_waitq, pr_sched, pr_msgq, done */
	bool op_on_sched;
	bool op_on_msgq;
	bool op_parked; /* on pr_parked: unknown incarnation */
	/* vectored ops (op.c): NULL for one local region (op_region) */
	struct ry__seg *op_segs;
	uint32_t op_nsegs;
};

/*
 * A vectored op's pieces: one local range and the remote range it maps to.
 * Fragments are counted per piece and never cross one, so a fragment is
 * always one SGE (rails take one per WR).
 */
struct ry__seg {
	struct ry_region *sg_mr;
	size_t sg_off;	  /* in sg_mr */
	uint64_t sg_roff; /* from op_raddr */
	uint64_t sg_len;
	uint32_t sg_first; /* its first fragment */
};

/* Where fragments [first, first + n) of an op lie, as far as one piece. */
struct ry__span {
	struct ry_region *sp_mr;
	size_t sp_loff;	  /* in sp_mr */
	uint64_t sp_roff; /* from op_raddr */
	uint32_t sp_bytes;
	uint32_t sp_n; /* fragments, <= n */
};

/* op.c */
void ry__op_check(struct ry__op *op);
/* A fresh op from p's context pool (NULL: out of memory). */
struct ry__op *ry__op_new(struct ry_peer *p, enum ry__op_type type,
			  ry_complete_fn cb, void *ctx);
/* op onto p's lists: started, or waiting for a slot among ops_in_flight. */
void ry__op_enqueue(struct ry_peer *p, struct ry__op *op);
/* n fragments of op are done; inline, as most are not its last (for
 * those ry__op_check() would return at once). */
static inline void ry__op_frags_done(struct ry__op *op, uint32_t n)
{
	op->op_done_frags += n;
	if (op->op_state != OPS_RUNNING || op->op_done_frags >= op->op_nfrags)
		ry__op_check(op);
}
void ry__op_fail(struct ry__op *op, enum ry_status st, const char *reason);
void ry__op_msg_done(struct ry__op *op);
void ry__ops_timeouts(struct ry_peer *p, uint64_t now);
void ry__op_cancel_all(struct ry_peer *p);
void ry__msgq_push(struct ry_peer *p, struct ry__op *op, bool head);
void ry__sched_push(struct ry_peer *p, struct ry__op *op);
void ry__op_release(struct ry_manager *m, struct ry__op *op);
void ry__op_park(struct ry_peer *p, struct ry__op *op);
void ry__op_unpark_all(struct ry_peer *p);
void ry__op_fill(struct ry_completion *c, const struct ry__op *op);
/* The first piece of fragments [first, first + n): sp->sp_n of them. */
void ry__op_span_vec(const struct ry__op *op, uint32_t first, uint32_t n,
		     struct ry__span *sp);
/* The same for an op of one region (no op_segs), fragments of fs bytes:
 * the scheduler's hot path (stripe.c's fresh_run calls it directly). */
static inline void ry__op_span_flat(const struct ry__op *op, uint64_t fs,
				    uint32_t first, uint32_t n,
				    struct ry__span *sp)
{
	uint64_t off = (uint64_t)first * fs, end = off + (uint64_t)n * fs;

	if (end > op->op_len)
		end = op->op_len;
	sp->sp_mr = op->op_region;
	sp->sp_loff = op->op_local_off + off;
	sp->sp_roff = off;
	sp->sp_bytes = (uint32_t)(end - off);
	sp->sp_n = n;
}

/* stripe.c */
void ry__stripe(struct ry_peer *p);
/* Index in cs[] of the connection a piece of `bytes` goes to, or -1. */
int ry__stripe_pick(struct ry__conn *const *cs, unsigned n, uint32_t bytes,
		    uint32_t mask, unsigned max_wrs, bool msg);
/* ry__stripe()'s per-call view of its ACTIVE connections, for the
 * fragment path: the same decisions as ry__stripe_pick(.., msg false). */
struct ry__choice {
	unsigned ln_n;
	unsigned ln_max_wrs;
	bool ln_equal;	 /* every cn_share the same */
	uint32_t ln_all; /* every ln_bit */
	struct ry__conn *ln_cs[RY_MAX_RAILS];
	uint64_t ln_key[RY_MAX_RAILS]; /* outstanding bytes; ~0: not now */
	uint64_t ln_cap[RY_MAX_RAILS]; /* backlogged at this many bytes */
	uint32_t ln_bit[RY_MAX_RAILS]; /* 1 << cn_ridx */
};
void ry__choice_init(struct ry__choice *l, struct ry__conn *const *cs,
		     unsigned n, unsigned max_wrs);
/* After a WR was accounted to connection i. */
void ry__choice_update(struct ry__choice *l, unsigned i);
/* Index of the connection a fragment piece of `bytes` goes to, or -1. */
int ry__choice_pick(const struct ry__choice *l, uint32_t bytes, uint32_t mask);

/* replay.c: the work of failed connections */
void ry__replay_run(struct ry_manager *m);
void ry__wr_failed(struct ry__wr *w, const struct ry_wc *wc);

/* fence.c */
struct ry__wire_fence;
/* c failed: its peer is asked to fence every dead pair it is owed. */
void ry__fence_request(struct ry__conn *c);
/* p's control session is (back) up: caps, and every fence still owed */
void ry__fence_resend(struct ry_peer *p);
/* Each tick while p is watched: a request unacknowledged for too long is
 * sent again. */
void ry__fence_tick(struct ry_peer *p, uint64_t now);
void ry__fence_on_req(struct ry_peer *p, struct ry__ctl *ctl,
		      const struct ry__wire_fence *wf);
/* -EPROTO for a generation never requested: the session must go */
int ry__fence_on_ack(struct ry_peer *p, uint64_t gen, unsigned caps);
bool ry__fence_pending(const struct ry__op *op);

#endif /* RAILYARD_OP_H */
