/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The rail manager's internal structures, shared by the files in src/.
 *
 * LOCKING
 *
 *   The cold lock               m_lock, then every context's cx_lock in
 *   (ry__lock, ry__unlock)      order: protects every structure in this
 *                               file, and is what every path takes except
 *                               the context path below.  Connection state,
 *                               the control channel, timers, replay,
 *                               fences, rails, peers' records, regions,
 *                               counters are written only under it.
 *   cx_lock (struct ry__ctx)    the context path: its own peers' operation
 *                               queues and posted WRs, its pools (ops, WRs,
 *                               replay ranges), its dirty, done and stash
 *                               lists, its CQ on each rail.  Everything
 *                               else it may only read (the cold lock's
 *                               holder holds it too, so nothing it reads
 *                               changes under it).
 *   lr_lock (struct ry__lrail)  serialises calls into one rail
 *                               (rails/rail.h asks its owner to), except
 *                               post_send and the calls on the contexts'
 *                               CQs on a rail whose attributes say
 *                               concurrent_qps (ry__lrail_free_qps).  Held
 *                               only across the call itself.
 *   m_timer_lock, m_slot_lock      leaves: peers joining m_tpeers, message
 *                               slots (taken by a context path).
 *   cx_dq_lock, m_dq_lock       leaves: the callbacks waiting to run, a
 *                               context's completions and the manager's
 *                               messages and events.
 *   cx_dl, m_deliver_lock       held by the one thread running a
 *                               context's completion callbacks (cx_dl; with
 *                               one context m_deliver_lock) or the
 *                               messages and events (m_deliver_lock).
 *   m_cb_lock                   the application's callbacks (recv, event)
 *                               registration against delivery.
 *
 *   Lock order: the deliver locks -> m_lock -> cx_lock[0..n) -> lr_lock ->
 *   provider-internal locks (the loop rail's loop_lock, a null CQ's lock)
 *   -> the log sink lock.  The leaves take nothing of ours.
 *
 * Contexts
 *
 *   A manager has m_nctx progress contexts (config contexts, default 1);
 *   a peer belongs to one for life (pr_ctx: the n-th record made to
 *   context n mod m_nctx), and each context has a CQ of its own on every
 *   rail (lr_cq[cx_idx]) that its peers' QPs report to.  With one
 *   context everything takes the cold lock, as the single m_lock was
 *   before.  With several, the data path takes only its context's lock:
 *
 *   - a post (op.c, post_lock) to a READY peer: the op from the
 *     context's pool, queued on the peer, striped (stripe.c), its WRs
 *     posted; a peer in any other state (a dial to make, a backoff to cut
 *     short) takes the cold lock;
 *   - ctx_round (progress.c): the context's CQs polled and what they hold
 *     handled, while it is a successful fragment or message WR of one of
 *     its peers on an ACTIVE connection, not part of a replay (hot_wc);
 *     then its dirty peers striped, its done ops queued for callbacks.
 *
 *   What the context path may not do it leaves to a cold round: the first
 *   completion it may not handle and the rest of that poll batch wait in
 *   cx_stash, in CQ order, and the context's CQs are not polled again
 *   until they are handed over; a post_send that fails leaves its WRs on
 *   the connection's cn_unposted and the connection on cx_pfail (nothing
 *   more is striped to it: cn_post_err).  Either sets m_cold_due.
 *   ry__lock() hands both to their handlers (cold_drain) before it
 *   returns, so the cold lock's holder never sees a WR that a context
 *   path polled but did not handle: teardown, replay and fencing see the
 *   same states they did with one lock, in the same order per QP.
 *
 *   Who runs what: an application thread's ry_progress() runs the
 *   context it last posted to (ry__ctx_note), the others now and then
 *   with trylock, and a cold round (control channel, rail events, timers,
 *   replay, what the context paths left) when m_cold_due is set or a
 *   tick has passed; one thread claims each (m_cold_ns).  A rail thread
 *   runs every context's CQ on its rails, and a cold round only for rail
 *   events or m_cold_due; the control thread runs the ticks.  A cold
 *   round's rail hand-over leaves the contexts' CQs to the context paths
 *   unless they left it work.
 *
 *   Fairness: a mutex is not fair, and a thread posting in a loop retook
 *   its context's lock ahead of a waiting cold lock for 300+ us at a
 *   time; ry__lock() raises m_cold_want while it collects the contexts'
 *   locks, and the context paths wait at the gate (ry__ctx_gate, which
 *   takes and drops m_lock) meanwhile.
 *
 *   Callbacks: with several contexts each context's completions run under
 *   its own deliver lock, so "never concurrently" (include/railyard/
 *   railyard.h) holds per context; messages and events under
 *   m_deliver_lock.  With one context, all of them under m_deliver_lock.
 *
 *   Measured (bench_core -r 4 -w 1, null rails, 2026-12-02): one thread
 *   44-45 M fragments/s; two threads with contexts 2: 71-75 M (1.6-1.7x);
 *   two threads with one context: 32 M (0.7x).
 *
 *   Kick: whoever posts to a rail sets lr_kick (unless the rail sends
 *   alone, rails/rail.h: verbs, the null rail); when the lock is dropped,
 *   ry__kick() runs that rail's progress at once in the caller's thread
 *   (no rail threads) or wakes the rail's thread (rt_wake_fd, written once
 *   per wake-up: rt_woken), so a post reaches the wire without waiting for
 *   a progress tick.  A small op (< RY__KICK_BATCH_BYTES) posted from one
 *   of the manager's own callbacks is kicked once at the end of that
 *   callback batch (ry__kick_post), so the batch's reposts share a send.
 *
 *   A rail's protocol work (the soft rail's packets, ACKs, retransmits)
 *   needs only its lr_lock, so each rail's progress runs on its own thread
 *   (progress_threads) beside the others and beside posting threads.
 *
 *   No application callback runs with a manager lock held: completions,
 *   messages and events are queued and handed out after it is dropped
 *   (ry__deliver() in progress.c); a thread that finds a deliver lock held
 *   leaves that share to its holder (so a callback may call ry_progress()
 *   without deadlock).
 *
 * OWNERSHIP
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
 *
 *   Peer records are created by the application (ry_peer_get: configured
 *   or named by address; these may be dialed) or from an admitted HELLO
 *   (pr_from_hello; never dialed: an address a HELLO claims is not ours to
 *   call).  A record from a HELLO is freed once its last control session
 *   has closed and it is disposable (ry__ctl_reap, which looks again
 *   every 100 ms at the records on m_reapq, those whose last session
 *   closed, while such a record waits; ry__peer_disposable): no
 *   operations, no connection beyond IDLE/BACKOFF, the application never
 *   named it (pr_app_seen: set by ry_peer_get) and holds no reference
 *   (pr_app_refs: ry_peer_hold() until ry_peer_release(), and each
 *   message from it from queueing until its receive callback returned;
 *   events carry only its name).  So the clients a server only hears
 *   from come and go without piling up.
 *   Otherwise it stays until the manager is destroyed.  Other records
 *   are never freed before then.  A HELLO never renames a record nor
 *   changes a configured or app-named record's address.
 *
 *   With a key_file, m_auth (sodium_malloc: locked, wiped by
 *   ry__auth_fini) holds the keys derived from it from ry__ctl_listen()
 *   until ry__ctl_close_all(); the key itself is not kept.  Each control
 *   session's handshake state and frame keys are its own and wiped when
 *   it is freed.
 */
#ifndef RAILYARD_MANAGER_H
#define RAILYARD_MANAGER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <railyard/railyard.h>

#include "rails/rail.h"
#include "src/util/clock.h"
#include "src/util/compiler.h"
#include "src/util/heap.h"
#include "src/util/hidx.h"
#include "src/util/list.h"
#include "src/util/log.h"
#include "src/util/queue.h"
#include "src/util/random.h"

#define RY__RECV_BUFS 256 /* receive buffers per rail (the SRQ) */
#define RY__MSG_SLOTS 256 /* send slots for messages per manager */
#define RY__MSG_HDR 40	  /* struct ry__mhdr on the wire */
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

/*
 * Time from t to now, 0 if t is later: stamps taken during one progress
 * call may be newer than the `now` it started with.
 */
static inline uint64_t ry__since(uint64_t now, uint64_t t)
{
	return now > t ? now - t : 0;
}

/* ---- inflight.c: bounded-chunk pools ---- */

struct ry__pool_chunk;

struct ry__pool {
	size_t pl_size; /* object size, rounded */
	unsigned pl_per_chunk;
	void *pl_free; /* free objects, linked through their first word */
	struct ry__pool_chunk *pl_chunks;
	unsigned long pl_in_use;
};

void ry__pool_init(struct ry__pool *pl, size_t size);
void ry__pool_fini(struct ry__pool *pl);
/* A new chunk's objects on the free list; false if out of memory. */
bool ry__pool_grow(struct ry__pool *pl);

/* Inline: a WR is taken and given back per fragment (stripe, completion);
 * only growing by a chunk is a call. */
static inline void *ry__pool_get(struct ry__pool *pl)
{
	void *obj = pl->pl_free;

	if (!obj) {
		if (!ry__pool_grow(pl))
			return NULL;
		obj = pl->pl_free;
	}
	pl->pl_free = *(void **)obj;
	pl->pl_in_use++;
	return obj;
}

static inline void ry__pool_put(struct ry__pool *pl, void *obj)
{
	*(void **)obj = pl->pl_free;
	pl->pl_free = obj;
	pl->pl_in_use--;
}

/* ---- mr.c ---- */

struct ry_region {
	struct ry_manager *rg_mgr;
	void *rg_addr;
	size_t rg_len;
	unsigned rg_access;   /* enum ry_mr_access */
	atomic_uint rg_users; /* ops in flight using it (any context) */
	struct ry_mr *rg_mr[RY_MAX_RAILS];
	struct ry_region *rg_next, *rg_prev;
	/* registration cache (rcache.c); rg_cached false: not the cache's */
	bool rg_cached;
	bool rg_stale;		    /* invalidated while in use: no hits */
	unsigned rg_refs;	    /* ry_mr_cache_get()s not yet put */
	struct ry_region *rg_hnext; /* rc_hash bucket */
	struct ry__list rg_lru;	    /* rc_lru, most recent last */
};

/* An unpacked descriptor. */
struct ry__desc {
	uint64_t d_node;
	uint64_t d_addr;
	uint64_t d_len;
	unsigned d_access;
	uint32_t d_mask; /* which of the owner's rails have an rkey */
	uint32_t d_rkey[RY_MAX_RAILS];
};

int ry__desc_unpack(const void *buf, size_t len, struct ry__desc *d);
int ry__region_reg(struct ry_manager *m, void *addr, size_t len,
		   unsigned access, struct ry_region **rg_p);
void ry__region_dereg(struct ry_region *rg);
struct ry__lrail;
int ry__region_reg_rail(struct ry_region *rg, struct ry__lrail *lr);
void ry__region_dereg_rail(struct ry_region *rg, struct ry__lrail *lr);

/* ---- state machines: connections change state in conn.c only ---- */

enum ry__conn_state {
	CONN_UNPAIRED = 0, /* the peer has no rail on this network */
	CONN_IDLE,	   /* paired, never connected */
	CONN_CONNECTING,   /* QP in INIT, our CONNECT_REQ sent */
	CONN_PROBING,	   /* QP in RTS, probe outstanding */
	CONN_ACTIVE,	   /* carrying traffic */
	CONN_FAILED,	   /* marked by completion handling; not yet in ERR */
	CONN_DRAINING,	   /* QP in ERR, waiting for its flushed WRs */
	CONN_BACKOFF,	   /* no QP; reconnect at cn_deadline_ns */
	CONN__MAX
};
const char *ry__conn_state_str(enum ry__conn_state s);

enum ry__peer_state {
	PEER_NEW = 0,	 /* not used yet */
	PEER_CONNECTING, /* control connection being made */
	PEER_HELLO,	 /* HELLO sent, waiting for the peer's */
	PEER_READY,	 /* rail lists exchanged */
	PEER_BACKOFF,	 /* control channel lost; redial at pr_ctl_retry_ns */
	PEER__MAX
};
const char *ry__peer_state_str(enum ry__peer_state s);

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

enum ry__wr_kind {
	WRK_FRAG = 0,
	WRK_MSG,
	WRK_HEARTBEAT,
	WRK_PROBE,
	WRK_PMTU, /* a path MTU probe step (conn.c); wr_first: its size */
};

#include "src/ctl/wire.h"

struct ry__conn;
struct ry__op;

/* Posted work: one WR on one connection. */
struct ry__wr {
	struct ry__conn *wr_conn;
	struct ry__op *wr_op;
	uint32_t wr_first; /* first fragment */
	uint32_t wr_n;	   /* fragments */
	uint32_t wr_bytes;
	uint8_t wr_kind; /* enum ry__wr_kind */
	bool wr_replay;	 /* carries replayed fragments */
	uint64_t wr_post_ns;
	struct ry__list wr_link; /* cn_posted */
};

/* Replayed fragments waiting at the head of the peer's queue. */
struct ry__range {
	struct ry__range *rn_next;
	struct ry__op *rn_op;
	uint32_t rn_first, rn_n;
};

/*
 * Operation latency, post to completion, per peer and kind: Prometheus
 * histogram buckets (upper bounds in ry__lat_le_ns, the last one +Inf).
 */
#define RY__LAT_BUCKETS 16
extern const uint64_t ry__lat_le_ns[RY__LAT_BUCKETS];
struct ry__lat {
	uint64_t lt_bucket[RY__LAT_BUCKETS + 1]; /* not cumulative */
	uint64_t lt_sum_ns, lt_count;
};
void ry__lat_add(struct ry__lat *l, uint64_t ns);

struct ry__ctx;

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

struct ry__lrail;

/* Where a peer's rail takes path MTU probes (CONNECT_REQ/REP, conn.c). */
struct ry__probe_mr {
	uint64_t pm_addr;
	uint32_t pm_rkey;
	uint32_t pm_len; /* 0: none (a peer that does not probe the MTU) */
};

struct ry__conn {
	struct ry_peer *cn_peer;
	struct ry__lrail *cn_lrail;
	int cn_ridx; /* the peer's rail index */
	enum ry__conn_state cn_state;
	struct ry_qp *cn_qp;
	struct ry_qp_endpoint cn_remote;
	uint32_t cn_attempt;
	uint64_t cn_deadline_ns; /* connect/probe timeout, backoff end */
	uint32_t cn_backoff_ms;
	uint64_t cn_last_ok_ns;	   /* last sign of life */
	uint64_t cn_busy_since_ns; /* first post after being idle */
	uint64_t cn_last_tx_ns;
	uint64_t cn_last_work_ns; /* our last data or message WR posted */
	uint64_t cn_active_ns;	  /* when it became ACTIVE */
	uint64_t cn_health_ns;	  /* last health recovery step */
	uint32_t cn_health;	  /* 0..1000 */
	uint32_t cn_weight;	  /* from the rail's rate or weight */
	uint64_t cn_share;	  /* weight * health, >= 1 */
	uint64_t cn_out_bytes;
	unsigned cn_out_wrs;
	/* bytes completed in this RY__OUT_HORIZON_NS window; per window,
	 * smoothed (stripe.c) */
	uint64_t cn_win_ns, cn_win_bytes, cn_win_prev;
	bool cn_hb_out;
	struct ry__list cn_posted; /* struct ry__wr.wr_link */
	uint64_t cn_fail_ns;	   /* last sign of life before failure */
	uint64_t cn_detect_ns;	   /* when that failure was declared */
	bool cn_resume_wait;	   /* its replayed work has not completed yet */
	bool cn_damp;	   /* it flapped: reconnect with growing backoff */
	bool cn_probe_out; /* PROBING: our probe is posted */
	bool cn_heard;	   /* PROBING: something arrived from the peer */
	/* path MTU (conn.c): what the next attempt offers (0: the
	 * interface's), this QP's, the largest step proven both ways in
	 * this attempt, the last one logged */
	uint32_t cn_mtu, cn_qp_mtu, cn_mtu_ok, cn_mtu_said;
	uint32_t cn_mtu_low; /* this attempt's smallest step */
	bool cn_probe_ok;    /* PROBING: the small probe round-tripped */
	bool cn_ladder;	     /* PROBING: the MTU probe steps are posted */
	struct ry__probe_mr cn_pmr; /* the peer rail's probe slice */
	uint64_t cn_fence_gen;	    /* fence to request for this failure */
	uint32_t cn_dead_qpn, cn_dead_rqpn;
	char cn_reason[160];
	struct ry__conn *cn_hnext; /* lr_qpn_hash */
	struct ry__conn *cn_fnext; /* m_failed */
	/* a post_send that failed under the context lock alone (stripe.c):
	 * its error and WRs, handed to the next cold round (cx_pfail) */
	int cn_post_err;
	struct ry__list cn_unposted;
	struct ry__conn *cn_pfnext;
	struct ry__heap_node cn_tnode; /* m_ctimers (timers.c) */
	/* cn_tnode's key while it is in m_ctimers, else 0: what a context
	 * path reads (the node's slot moves with other contexts' timers) */
	uint64_t cn_timer_at;
	struct ry_counters cn_cnt;
};

/* lr_qpn_hash: RY__QPN_HASH_MIN buckets at first, doubled while there are
 * more connections than buckets, up to RY__QPN_HASH_MAX (conn.c) */
#define RY__QPN_HASH_MIN 64
#define RY__QPN_HASH_MAX (1u << 20)
#define RY__RCACHE_HASH 1024 /* registration cache buckets */

struct ry__lrail {
	struct ry_manager *lr_mgr;
	unsigned lr_idx;
	struct ry_rail *lr_rail;
	struct ry_pd *lr_pd;
	/* the CQ each context's QPs report to (lr_cq[c_idx]); all NULL: the
	 * rail's own, for a provider without create_cq (LOCKING) */
	struct ry_cq *lr_cq[RY__MAX_CTX];
	struct ry_rail_config lr_cfg;
	struct ry_rail_attr lr_attr;
	enum ry_link_state lr_link;
	void *lr_recv_buf;
	struct ry_mr *lr_recv_mr;
	unsigned lr_active;	   /* ACTIVE connections */
	unsigned lr_connecting;	   /* CONNECTING or PROBING (conn.c) */
	uint64_t lr_next_start_ns; /* the last paced start given (conn.c) */
	pthread_mutex_t lr_lock;   /* calls into lr_rail (LOCKING) */
	uint64_t lr_caught_up_ns;  /* ry__rail_catch_up(): last pass */
	bool lr_polling;	   /* inside ry__poll_rail() (m_lock) */
	bool lr_always;	     /* no fd or no pending(): run it every round */
	atomic_bool lr_kick; /* posted to since the last progress */
	struct ry__rthread *lr_rt; /* its progress thread, NULL: none */
	/* connections with a QP by its number (ry__conn_by_qpn, per receive
	 * completion): 2^lr_qpn_bits buckets, lr_qpn_n entries */
	struct ry__conn **lr_qpn_hash;
	unsigned lr_qpn_bits, lr_qpn_n;
	struct ry_counters lr_gone; /* counters of peers forgotten */
};

/* A thread doing the protocol work of some rails (progress.c). */
struct ry__rthread {
	struct ry_manager *rt_mgr;
	pthread_t rt_thread;
	int rt_epfd, rt_wake_fd;
	atomic_bool rt_woken;	    /* rt_wake_fd written, not yet drained */
	bool rt_running;	    /* rt_thread created, not yet joined */
	_Atomic uint64_t rt_ran_ns; /* the start of its last round */
	bool rt_stalled; /* said to be stalled, not run since (m_lock) */
	unsigned rt_nrails;
	struct ry__lrail *rt_rails[RY_MAX_RAILS];
};

struct ry__ctl;

struct ry__rrail {
	char rr_name[RY_NAME_MAX];
	char rr_network[RY_NAME_MAX];
	struct ry_qp_endpoint rr_ep; /* gid/lid/udp_port/mtu, no QP */
};

/* An IP address and port, IPv4-mapped IPv6 unmapped (control.c). */
struct ry__ip {
	int fam; /* AF_INET, AF_INET6; 0: none */
	unsigned char a[16];
	uint16_t port;
};

/* A completion the context path may not handle (LOCKING: Contexts). */
struct ry__stash {
	struct ry__lrail *st_lr;
	struct ry_wc st_wc;
};

#define RY__STASH 64 /* one CQ poll batch */

/*
 * A progress context (LOCKING: Contexts): its peers' data path, under
 * cx_lock alone.  Aligned so that two contexts share no cache line.
 */
struct ry__ctx {
	pthread_mutex_t cx_lock;
	struct ry_manager *cx_mgr;
	unsigned cx_idx;
	struct ry__pool cx_op_pool, cx_wr_pool, cx_range_pool;
	struct ry_peer *cx_dirty;		    /* peers to stripe */
	struct ry__op *cx_done_head, *cx_done_tail; /* with a callback */
	struct ry__op *cx_poll_head, *cx_poll_tail; /* ry_poll_completions */
	/* callbacks not yet run (cx_dq_lock, a leaf), and the lock held by
	 * the one thread running them when there are several contexts */
	pthread_mutex_t cx_dq_lock, cx_dl;
	struct ry__op *cx_dq_head, *cx_dq_tail;
	/* cx_dq_head is not NULL: read first, so that a thread delivering
	 * does not write another context's locks to find its queue empty */
	atomic_bool cx_dq_any;
	/* completions left to the cold round, in CQ order; while any wait
	 * the context's CQs are not polled by the context path */
	unsigned cx_nstash;
	struct ry__stash cx_stash[RY__STASH];
	struct ry__conn *cx_pfail; /* failed posts (cn_post_err) */
} __attribute__((aligned(64)));

struct ry_peer {
	struct ry_manager *pr_mgr;
	/* pr_name, pr_addr, pr_node_name, pr_node and pr_dial are what the
	 * indexes file it under (peer_index.c): whoever changes one calls
	 * ry__peer_index(p) */
	char pr_name[RY_ADDR_MAX];
	char pr_addr[RY_ADDR_MAX];
	char pr_node_name[RY_NAME_MAX]; /* from its HELLO */
	uint64_t pr_node;		/* its incarnation id; 0 until HELLO */
	struct ry__hnode pr_ix_name, pr_ix_node_name, pr_ix_addr, pr_ix_host,
	    pr_ix_node;
	struct ry__ip pr_addr_ip; /* pr_addr parsed; fam 0: it does not parse */
	uint64_t pr_seq;	  /* creation order: newer records are first */
	/* earlier incarnations (a ring): their descriptors are refused with
	 * -ESTALE */
	uint64_t pr_past[RY__PAST];
	unsigned pr_npast; /* restarts seen; pr_past holds the last ones */
	enum ry__peer_state pr_state;
	struct ry__ctl *pr_ctl; /* where requests go */
	uint64_t pr_ctl_retry_ns;
	uint32_t pr_ctl_backoff_ms;
	bool pr_dial;	    /* we may dial pr_addr: configured or app-named */
	bool pr_from_hello; /* created from an admitted HELLO */
	bool pr_app_seen;   /* named by the application (ry_peer_get) */
	/* ry_peer_hold()s not yet released, plus messages from it queued for
	 * the receive callback and not yet handed back (m_lock) */
	unsigned pr_app_refs;
	bool pr_retired;  /* its peer section was removed by a reload */
	bool pr_gone;	  /* said GOODBYE; until its next HELLO is admitted */
	unsigned pr_nctl; /* live control sessions speaking for it */
	struct ry__list pr_rlink; /* m_reapq, or self */
	/* its rails, from its HELLO: pr_nrrails of them (malloc'd to fit: a
	 * four-rail peer's are 672 bytes where 16 were 2,688) */
	unsigned pr_nrrails;
	struct ry__rrail *pr_rrails;
	unsigned pr_nactive;
	uint64_t pr_nopath_ns; /* no ACTIVE connection since */
	/* operations */
	struct ry__list pr_ops; /* all, in post order: ry__op.op_all */
	struct ry__op *pr_waitq_head, *pr_waitq_tail;
	struct ry__op *pr_sched_head, *pr_sched_tail; /* fresh fragments */
	struct ry__op *pr_msgq_head, *pr_msgq_tail;
	struct ry__op *pr_parked_head, *pr_parked_tail;
	struct ry__range *pr_replay_head, *pr_replay_tail;
	unsigned pr_inflight;
	struct ry__ctx *pr_ctx; /* its context, for life (LOCKING) */
	bool pr_dirty;		/* on cx_dirty: stripe me */
	struct ry_peer *pr_dnext;
	struct ry__list pr_tlink; /* m_tpeers (timers.c), or self */
	bool pr_timed;		  /* on m_tpeers */
	/* fencing */
	uint64_t pr_fence_gen, pr_fence_acked;
	/* messages */
	uint64_t pr_tx_seq;		     /* last sequence assigned */
	uint64_t pr_tx_low;		     /* lowest not yet completed */
	uint64_t pr_tx_bits[RY__TXWIN / 64]; /* outstanding, ring */
	uint64_t pr_rx_base;		     /* lowest sequence not yet seen */
	uint64_t pr_rx_bits[RY__RXWIN / 64];
	/* completed operations' latency, by enum ry__op_type */
	struct ry__lat pr_lat[3];
	/* failover timing */
	uint64_t pr_resume_from_ns;
	struct ry__conn *pr_resume_conn;
	struct ry_peer *pr_next, **pr_pprev; /* m_peers */
	/*
	 * Its connections: pr_conn[i] for every rail slot i < m_nrails, NULL
	 * above.  Those of the slots there were when the record was made
	 * are pr_slots[0, pr_nslots), in the record's own allocation; a
	 * reload that adds rails allocates theirs for every record before it
	 * changes anything (reload.c).  A connection never moves: WRs, the
	 * QPN hash, the timer heap and m_failed point at it.  (It was
	 * RY_MAX_RAILS connections in every record, 10 KiB, whatever the
	 * rails: see the README's scale section for what a peer costs.)
	 */
	struct ry__conn *pr_conn[RY_MAX_RAILS];
	unsigned pr_nslots;
	struct ry__conn pr_slots[];
};

/* Handed to the application after m_lock is dropped (progress.c). */
struct ry__delivery {
	struct ry__delivery *dv_next;
	int dv_kind; /* 0 message, 1 event */
	struct ry_peer *dv_peer;
	struct ry_message dv_msg;
	struct ry_event dv_ev;
	char dv_rail[RY_NAME_MAX];
	char dv_peer_name[RY_ADDR_MAX];
	char dv_reason[128];
	unsigned char dv_data[];
};

/* epoll tags */
enum ry__fd_kind {
	FDK_LISTEN = 0,
	FDK_CTL,
	FDK_RAIL,
	FDK_TIMER,
	FDK_WAKE,
};

struct ry__fdtag {
	enum ry__fd_kind ft_kind;
	void *ft_ptr;
};

struct ry_manager {
	pthread_mutex_t m_lock;
	/* progress contexts (LOCKING: Contexts); m_nctx fixed at create */
	unsigned m_nctx;
	struct ry__ctx *m_ctx; /* m_nctx of them, aligned */
	/* the context path left work to a cold round (stash, failed post) */
	atomic_bool m_cold_due;
	atomic_uint m_cold_want; /* ry__lock() waits for the contexts' locks */
	_Atomic uint64_t m_cold_ns; /* the next cold round due by time */
	/* leaves under a context lock: timers (peers onto m_tpeers,
	 * connections' m_ctimers keys), message slots */
	pthread_mutex_t m_timer_lock, m_slot_lock;
	struct ry_config m_cfg; /* copy; m_cfg.peers owned */
	uint64_t m_node;	/* random incarnation id */
	bool m_closing;
	bool m_reloading; /* one ry_manager_reload() at a time (reload.c) */
	unsigned m_nrails;
	/* m_nrails again, for ry__kick() without m_lock (set with it) */
	atomic_uint m_nslots;
	struct ry__lrail m_rails[RY_MAX_RAILS];
	/* timing, resolved defaults */
	uint64_t m_hb_ns, m_timeout_ns, m_op_timeout_ns, m_connect_ns;
	uint64_t m_idle_hb_ns; /* max(heartbeat_ms, idle_heartbeat_ms) */
	uint64_t m_tick_ns, m_next_tick_ns;
	/* our own last progress; silence not judged this round (heartbeat.c) */
	uint64_t m_last_progress_ns;
	bool m_hb_defer, m_hb_deferred;
	uint64_t m_resumed_ns; /* the end of our last stall: silence counts
				* from here (heartbeat.c, timers.c) */
	/* control channel */
	int m_listen_fd;
	char m_listen_addr[RY_ADDR_MAX];
	struct ry__ctl *m_ctls;
	struct ry__ctl *m_ctl_dead;    /* killed, to be freed by ry__ctl_reap */
	struct ry__list m_ctl_pending; /* inbound, not admitted, oldest first */
	struct ry__hidx m_ctl_src;     /* live inbound sessions per source IP */
	/* admission and bounds (control.c) */
	unsigned m_nin;	     /* inbound sessions alive */
	unsigned m_npending; /* of those, not admitted yet */
	uint64_t m_handshake_ns;
	bool m_listen_paused; /* out of descriptors: retry at m_listen_resume_ns
			       */
	bool m_listen_err_logged;
	uint64_t m_listen_resume_ns;
	bool m_reap_peers;	 /* a HELLO-made peer lost a session */
	uint64_t m_reap_next_ns; /* reap at most every 100 ms */
	struct ry__list m_reapq; /* HELLO-made records with no live session */
	unsigned m_reaped;	 /* freed since the last malloc_trim */
	struct ry__admit_state *m_admit;
	struct ry__authkey
	    *m_auth; /* keys from key_file (auth.c); NULL: none */
	/* event fd */
	int m_epfd, m_timer_fd, m_wake_fd;
	bool m_timer_armed;
	struct ry__fdtag m_listen_tag, m_timer_tag, m_wake_tag;
	/* the rails' fds without a thread of their own, itself in m_epfd
	 * (m_rails_tag): ry_progress() runs only the rails it reports */
	int m_rail_epfd;
	struct ry__fdtag m_rails_tag;
	_Atomic uint64_t m_sweep_ns; /* next round that runs every rail */
	/* progress threads: m_thread for control and timers, m_rt[] for
	 * rails; m_thread_stop is read by them without m_lock */
	pthread_t m_thread;
	bool m_thread_on;
	atomic_bool m_thread_stop;
	unsigned m_nrt;
	struct ry__rthread m_rt[RY_MAX_RAILS];
	/* peers */
	struct ry_peer *m_peers; /* newest first */
	uint64_t m_peer_seq;
	/* m_peers by name, by node name, by control address, dialed ones
	 * by host, by incarnation; keyed with m_ix_key (peer_index.c) */
	struct ry__hidx m_ix_name, m_ix_nname, m_ix_addr, m_ix_host, m_ix_node;
	unsigned char m_ix_key[16];
	struct ry__conn *m_failed;
	/* timers (timers.c): connections by their next deadline; peers with
	 * operations to time out or a control redial to make */
	struct ry__heap m_ctimers;
	struct ry__list m_tpeers;
	/* memory */
	struct ry_region *m_regions;
	struct ry_region *m_msg_region; /* send slots */
	unsigned m_slot_free[RY__MSG_SLOTS];
	unsigned m_nslot_free;
	struct ry_region *m_ctl_region; /* heartbeat and probe headers */
	/* path MTU probe slices, one per rail, m_probe_stride apart */
	struct ry_region *m_probe_region;
	uint32_t m_probe_stride;
	/* delivery (ops: per context, cx_done and cx_poll) */
	struct ry__delivery *m_dv_head, *m_dv_tail;
	pthread_mutex_t m_dq_lock; /* m_dq_*: callbacks not yet run */
	atomic_bool m_dq_dv_any;   /* m_dq_dv_head is not NULL */
	struct ry__delivery *m_dq_dv_head, *m_dq_dv_tail;
	pthread_mutex_t m_deliver_lock;
	pthread_mutex_t m_cb_lock;
	ry_recv_fn m_recv_fn;
	void *m_recv_arg;
	ry_event_fn m_event_fn;
	void *m_event_arg;
	/* registration cache (rcache.c), under m_lock */
	struct ry__rcache {
		bool rc_init;
		size_t rc_page;
		uint64_t rc_bytes; /* registered by the cache, stale too */
		unsigned rc_entries;
		struct ry__list rc_lru; /* not stale: least recent first */
		struct ry_mr_cache_stats rc_st;
		struct ry_region *rc_hash[RY__RCACHE_HASH];
	} m_rcache;
};

/*
 * The cold lock (LOCKING: Contexts): m_lock, then every context's lock in
 * order.  ry__lock() also hands what the context path left to the cold
 * round (cx_stash, cx_pfail) to its handlers, so the holder never sees a
 * WR that a context path polled but did not handle.
 */
void ry__lock(struct ry_manager *m);
void ry__unlock(struct ry_manager *m);
/* Before taking a context's lock alone: let a cold lock that is waiting
 * for the contexts' locks have them first (ry__lock). */
static inline void ry__ctx_gate(struct ry_manager *m)
{
	if (atomic_load_explicit(&m->m_cold_want, memory_order_relaxed)) {
		pthread_mutex_lock(&m->m_lock);
		pthread_mutex_unlock(&m->m_lock);
	}
}

/* The context a thread holding only cx_lock runs for (NULL: none). */
extern _Thread_local struct ry__ctx *ry__tl_hot;
/* Work for the cold round, asked from a post (LOCKING: Contexts). */
void ry__cold_ask(struct ry_manager *m);
/* This thread posts to cx's peers: its ry_progress() runs cx first. */
void ry__ctx_note(struct ry__ctx *cx);

/* manager.c: create, destroy, resources */
void ry__mgr_timing(struct ry_manager *m);
void ry__fd_watch(struct ry_manager *m, int fd, struct ry__fdtag *tag,
		  bool out);
void ry__fd_unwatch(struct ry_manager *m, int fd);
void ry__timer_arm(struct ry_manager *m);

/* progress.c: the progress loop, completions, delivery */
/* The queued event, for the caller to add fields; NULL if not queued. */
struct ry_event *ry__queue_event(struct ry_manager *m, enum ry_event_type t,
				 struct ry__lrail *lr, struct ry_peer *p,
				 const char *reason, uint64_t time_ns);
void ry__queue_message(struct ry_manager *m, struct ry_peer *p,
		       enum ry_msg_type t, const void *data, size_t len,
		       uint64_t notify);
int ry__deliver(struct ry_manager *m);
/* The cold lock held: queue the contexts' done ops and m_dv for ry__deliver();
 * true if any. */
bool ry__deliver_queue(struct ry_manager *m);
void ry__poll_rail(struct ry__lrail *lr, uint64_t now);
/* The cold lock held: run a rail with a thread of its own now (heartbeat.c). */
void ry__rail_catch_up(struct ry__lrail *lr, uint64_t now);
/* After dropping m_lock: send what was posted (LOCKING: Kick). */
void ry__kick(struct ry_manager *m);
/* The same after posting an op of `bytes`: a small one posted from inside
 * one of m's callbacks is left to the end of the callback batch
 * (ry__deliver), so that the small operations the callbacks post leave in
 * one batch per rail. */
#define RY__KICK_BATCH_BYTES (64u << 10)
void ry__kick_post(struct ry_manager *m, uint64_t bytes);
void ry__wr_complete(struct ry_manager *m, struct ry__wr *w,
		     const struct ry_wc *wc, uint64_t now);

/* peer_index.c: lookups return the newest record that matches, as a
 * walk over m_peers from its head would */
int ry__peer_index_init(struct ry_manager *m);
void ry__peer_index_fini(struct ry_manager *m);
/* File p again after a change of what it is looked up by. */
void ry__peer_index(struct ry_peer *p);
void ry__peer_unindex(struct ry_peer *p);
/* By pr_name or pr_node_name, or by pr_addr written exactly so. */
struct ry_peer *ry__peer_find(struct ry_manager *m, const char *name,
			      const char *addr);
/* By pr_name or pr_node_name, other than except (which may be NULL). */
struct ry_peer *ry__peer_by_name(struct ry_manager *m, const char *name,
				 const struct ry_peer *except);
/* By control address however it is written (ry__addr_same). */
struct ry_peer *ry__peer_by_addr(struct ry_manager *m, const char *addr);
/* A record we dial (pr_dial) whose control address is on ip's host. */
bool ry__peer_dialed_host(struct ry_manager *m, const struct ry__ip *ip);
/* ip's key under m_ix_key: with its port, or its host only. */
uint64_t ry__ip_key(const struct ry_manager *m, const struct ry__ip *ip,
		    bool port);
/* By incarnation (pr_node), 0 never matches. */
struct ry_peer *ry__peer_by_node(struct ry_manager *m, uint64_t node);

/* control.c: addresses */
int ry__ip_parse(const char *s, struct ry__ip *ip);
bool ry__ip_same_host(const struct ry__ip *a, const struct ry__ip *b);
/* The same control address however it is written. */
bool ry__addr_same(const char *x, const char *y);

/* peer.c */
struct ry_peer *ry__peer_new(struct ry_manager *m, const char *name,
			     const char *addr, bool dial);
bool ry__peer_disposable(const struct ry_peer *p);
void ry__peer_forget(struct ry_peer *p);
void ry__peer_use(struct ry_peer *p);
/* old_node: the incarnation a new one replaces (the peer restarted), or 0 */
void ry__peer_ready(struct ry_peer *p, uint64_t old_node, bool dialer);
/* node is an earlier incarnation of p: its memory is gone */
bool ry__peer_node_stale(const struct ry_peer *p, uint64_t node);
void ry__peer_path_reason(struct ry_peer *p, uint64_t waited_ns, char *buf,
			  size_t len);
void ry__peer_ctl_lost(struct ry_peer *p, struct ry__ctl *c);
/* p said GOODBYE: its connections close as closed, not failed */
void ry__peer_goodbye(struct ry_peer *p, int why);
/* p is no longer admitted (reload): its connections fail, fenced */
void ry__peer_revoked(struct ry_peer *p);
void ry__peer_dirty(struct ry_peer *p);
void ry__peer_update_paths(struct ry_peer *p);
void ry__peer_free(struct ry_peer *p);
void ry__peer_unref(struct ry_peer *p);

/* op.c */
void ry__op_check(struct ry__op *op);
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
static inline void ry__op_span(const struct ry__op *op, uint32_t first,
			       uint32_t n, struct ry__span *sp)
{
	if (op->op_segs)
		ry__op_span_vec(op, first, n, sp);
	else
		ry__op_span_flat(op, op->op_peer->pr_mgr->m_cfg.fragment_size,
				 first, n, sp);
}

/* stripe.c */
void ry__stripe(struct ry_peer *p);
/* Bytes a connection completed, per horizon-long window (stripe.c
 * reads them); inline: once per completed WR. */
static inline void ry__conn_drained(struct ry__conn *c, uint64_t bytes,
				    uint64_t now)
{
	if (now - c->cn_win_ns >= RY__OUT_HORIZON_NS) {
		/* completions come in bursts: smooth over windows (a window
		 * with none at all, an idle spell, is not counted) */
		if (now - c->cn_win_ns < 2 * RY__OUT_HORIZON_NS)
			c->cn_win_prev =
			    c->cn_win_prev
				? (3 * c->cn_win_prev + c->cn_win_bytes) / 4
				: c->cn_win_bytes;
		c->cn_win_ns = now;
		c->cn_win_bytes = 0;
	}
	c->cn_win_bytes += bytes;
}

/* Index in cs[] of the connection a piece of `bytes` goes to, or -1. */
int ry__stripe_pick(struct ry__conn *const *cs, unsigned n, uint32_t bytes,
		    uint32_t mask, unsigned max_wrs, bool msg);
void ry__conn_update_share(struct ry__conn *c);
/* ry__stripe()'s per-call view of its ACTIVE connections, for the
 * fragment path: the same decisions as ry__stripe_pick(.., msg false). */
struct ry__lanes {
	unsigned ln_n;
	unsigned ln_max_wrs;
	bool ln_equal;	 /* every cn_share the same */
	uint32_t ln_all; /* every ln_bit */
	struct ry__conn *ln_cs[RY_MAX_RAILS];
	uint64_t ln_key[RY_MAX_RAILS]; /* outstanding bytes; ~0: not now */
	uint64_t ln_cap[RY_MAX_RAILS]; /* backlogged at this many bytes */
	uint32_t ln_bit[RY_MAX_RAILS]; /* 1 << cn_ridx */
};
void ry__lanes_init(struct ry__lanes *l, struct ry__conn *const *cs, unsigned n,
		    unsigned max_wrs);
/* After a WR was accounted to lane i's connection. */
void ry__lanes_update(struct ry__lanes *l, unsigned i);
/* Index of the lane a fragment piece of `bytes` goes to, or -1. */
int ry__lanes_pick(const struct ry__lanes *l, uint32_t bytes, uint32_t mask);

/* conn.c: connections and every change of their state */
void ry__conn_init(struct ry__conn *c, struct ry_peer *p, struct ry__lrail *lr);
/* Its timer stopped and its attempt, if any, no longer counted: the
 * record is being freed or the slot reused. */
void ry__conn_gone(struct ry__conn *c);
void ry__conn_paired(struct ry__conn *c);
void ry__conn_start(struct ry__conn *c, uint64_t now);
void ry__conn_activate(struct ry__conn *c, uint64_t now);
/* fail_ns: the failure is known to be no later than this; the last sign of
 * life on c is used when it is earlier (ry__conn_link_failed: exactly). */
void ry__conn_mark_failed(struct ry__conn *c, const char *reason,
			  uint64_t fail_ns);
void ry__conn_link_failed(struct ry__conn *c, const char *reason,
			  uint64_t fail_ns);
void ry__conn_on_probe_rx(struct ry__conn *c, uint64_t now);
void ry__conn_replayed(struct ry__conn *c);
void ry__conn_resumed(struct ry__wr *w, uint64_t now);
void ry__conn_flush(struct ry__conn *c);
void ry__conn_drained_check(struct ry__conn *c, uint64_t now);
void ry__conn_backoff(struct ry__conn *c, uint64_t now);
void ry__conn_timers(struct ry__conn *c, uint64_t now);
void ry__conn_destroy_qp(struct ry__conn *c);
struct ry__conn *ry__conn_by_qpn(struct ry__lrail *lr, uint32_t qpn);
int ry__conn_hash_add(struct ry__conn *c);
void ry__conn_hash_del(struct ry__conn *c);
int ry__conn_post(struct ry__conn *c, struct ry__wr **wrs,
		  struct ry_send_wr *swr, unsigned n, uint64_t now);
void ry__conn_on_req(struct ry_peer *p, unsigned src, unsigned dst,
		     uint32_t attempt, const struct ry_qp_endpoint *ep,
		     const struct ry__probe_mr *pm, struct ry__ctl *ctl);
void ry__conn_on_rep(struct ry_peer *p, unsigned src, unsigned dst,
		     uint32_t attempt, const struct ry_qp_endpoint *ep,
		     const struct ry__probe_mr *pm, struct ry__ctl *ctl);
int ry__probe_setup(struct ry_manager *m);
void ry__probe_mr_of(struct ry_manager *m, unsigned rail,
		     struct ry__probe_mr *pm);
void ry__conn_probed(struct ry__conn *c, uint64_t now);
void ry__conn_probe_done(struct ry__wr *w, uint64_t now);
void ry__conn_on_rej(struct ry_peer *p, unsigned src, unsigned dst,
		     uint32_t attempt, int err);
int ry__post_ctl_msg(struct ry__conn *c, enum ry__wr_kind kind, uint64_t now);

/* replay.c: the work of failed connections */
void ry__replay_run(struct ry_manager *m);
void ry__wr_failed(struct ry__wr *w, const struct ry_wc *wc);

/* fence.c */
void ry__fence_request(struct ry__conn *c);
void ry__fence_resend(struct ry_peer *p);
void ry__fence_on_req(struct ry_peer *p, struct ry__ctl *ctl, uint64_t gen,
		      unsigned src, unsigned dst, uint32_t src_qpn,
		      uint32_t dst_qpn);
/* -EPROTO for a generation never requested: the session must go */
int ry__fence_on_ack(struct ry_peer *p, uint64_t gen);
bool ry__fence_pending(const struct ry__op *op);

/* heartbeat.c */
void ry__heartbeat(struct ry__conn *c, uint64_t now);
/* When ry__heartbeat has something to do for ACTIVE c next (send or judge
 * silence); never later than that; 0: nothing until c's state changes. */
uint64_t ry__heartbeat_due(const struct ry__conn *c, uint64_t now);

/* msg.c */
int ry__recv_setup(struct ry__lrail *lr);
void ry__recv_teardown(struct ry__lrail *lr);
void ry__on_recv(struct ry__lrail *lr, const struct ry_wc *wc, uint64_t now);
int ry__msg_slots_setup(struct ry_manager *m);
unsigned ry__slot_get(struct ry_manager *m);
void ry__slot_put(struct ry_manager *m, unsigned slot);
void *ry__slot_addr(struct ry_manager *m, unsigned slot);
void ry__msg_prepare(struct ry__op *op, enum ry__mtype type, const void *data,
		     size_t len);
/*
 * The receiver's dedupe window: 1 if seq is new (and is now remembered),
 * 0 if it was seen before, -ERANGE if it lies past the window (a protocol
 * violation; the window is unchanged).  Constant time in seq.
 */
int ry__rxwin_accept(uint64_t *base, uint64_t *bits, uint64_t seq);
/* One received rail message of len bytes on c (the cold lock held): checks,
 * dedupes and queues it for delivery; a protocol violation fails c. */
void ry__msg_rx(struct ry__conn *c, const unsigned char *buf, uint32_t len,
		uint64_t now);
uint64_t ry__tx_seq_take(struct ry_peer *p);
void ry__tx_seq_done(struct ry_peer *p, uint64_t seq);
void ry__tx_seq_reset(struct ry_peer *p);

#include "src/ctl/ctl.h"

/*
 * auth.c: the control channel's pre-shared key.  The handshake and frame
 * MACs are described there and at the top of control.c.
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

/* timers.c */
void ry__timers_run(struct ry_manager *m, uint64_t now);
/* c's state or deadline changed: its timer is due again from its fields. */
void ry__conn_timer(struct ry__conn *c, uint64_t now);
/* c must be looked at by `at` at the latest (it may be earlier). */
void ry__conn_timer_by(struct ry__conn *c, uint64_t at);
void ry__conn_timer_stop(struct ry__conn *c);
/* p has operations that may time out, or a redial to make: watched every
 * tick until it has neither. */
void ry__peer_timer(struct ry_peer *p);
/* Every connection's timer from its fields again (timing reloaded). */
void ry__timers_reset(struct ry_manager *m, uint64_t now);

/* manager.c: the rail a local rail name refers to (tests, fault hooks) */
struct ry_rail *ry__mgr_rail(struct ry_manager *m, const char *name);

/*
 * Rail slots (reload.c).  m_rails[0, m_nrails) are slots; a slot whose
 * rail a reload removed is a hole (lr_rail NULL, lr_cfg zeroed) and is
 * never used again in this process, so that a descriptor a peer holds
 * never names a different rail by that index.  Every loop over m_nrails
 * skips holes where it touches the rail itself.
 */
/* A rail that takes post_send and its CQs' calls without lr_lock
 * (rails/rail.h: concurrent_qps), for QPs on a CQ of the manager's. */
static inline bool ry__lrail_free_qps(const struct ry__lrail *lr)
{
	return lr->lr_attr.concurrent_qps && lr->lr_cq[0];
}

/* post_send under lr_lock unless the rail needs none for it. */
static inline int ry__lrail_post(struct ry__lrail *lr, struct ry_qp *qp,
				 const struct ry_send_wr *swr, unsigned n)
{
	int ret;

	if (ry__lrail_free_qps(lr))
		return ry__rail_post_send(qp, swr, n);
	pthread_mutex_lock(&lr->lr_lock);
	ret = ry__rail_post_send(qp, swr, n);
	pthread_mutex_unlock(&lr->lr_lock);
	return ret;
}

static inline bool ry__lrail_live(const struct ry__lrail *lr)
{
	return lr->lr_rail != NULL;
}
/* manager.c: open slot i with rc / close it (the cold lock held for a reload)
 */
int ry__lrail_open(struct ry_manager *m, unsigned i,
		   const struct ry_rail_config *rc);
void ry__lrail_close(struct ry__lrail *lr);
/* peer.c: pair our rails with the peer's again (rails added or removed) */
void ry__peer_pair(struct ry_peer *p);

/* counters.c */
void ry__cnt_add(struct ry_counters *dst, const struct ry_counters *src);

#endif /* RAILYARD_MANAGER_H */
