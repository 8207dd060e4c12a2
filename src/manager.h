/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The rail manager's internal structures, shared by the files in src/.
 *
 * LOCKING
 *
 *   The cold lock               m_lock, then every context's cx_lock in
 *   (ctx.c)                     order: protects every structure in this
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
 *   - ry__ctx_round (ctx.c): the context's CQs polled and what they hold
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
 *   ry__lock_and_run_leftovers() hands both to their handlers before it
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
 *   time; the cold lock raises m_cold_want while it collects the contexts'
 *   locks, and the context paths wait at the gate (ry__ctx_gate, which
 *   takes and drops m_lock) meanwhile.
 *
 *   Callbacks: with several contexts each context's completions run under
 *   its own deliver lock, so "never concurrently" (include/railyard/
 *   railyard.h) holds per context; messages and events under
 *   m_deliver_lock.  With one context, all of them under m_deliver_lock.
 *
 *   No application callback runs with a manager lock held: completions,
 *   messages and events are queued and handed out after it is dropped
 *   (ry__deliver() in deliver.c); a thread that finds a deliver lock held
 *   leaves that share to its holder (so a callback may call ry_progress()
 *   without deadlock).
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
#include "src/util/cnt.h"
#include "src/util/compiler.h"
#include "src/util/heap.h"
#include "src/util/hidx.h"
#include "src/util/list.h"
#include "src/util/log.h"
#include "src/util/queue.h"
#include "src/util/random.h"
#include "src/conn.h"
#include "src/control.h"
#include "src/lrail.h"
#include "src/op.h"
#include "src/peer.h"
#include "src/pool.h"
#include "src/progress.h"
#include "src/region.h"
#include "src/tunables.h"

#define RY__MSG_HDR 40 /* struct ry__mhdr on the wire */

#include "src/ctl/wire.h"

/* A completion the context path may not handle (LOCKING: Contexts). */
struct ry__stash {
	struct ry__lrail *st_lr;
	struct ry_wc st_wc;
};

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

struct ry_manager {
	pthread_mutex_t m_lock;
	/* progress contexts (LOCKING: Contexts); m_nctx fixed at create */
	unsigned m_nctx;
	struct ry__ctx *m_ctx; /* m_nctx of them, aligned */
	/* the context path left work to a cold round (stash, failed post) */
	atomic_bool m_cold_due;
	atomic_uint m_cold_want;    /* the cold lock waits for the cx_locks */
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
	struct ry__keyring
	    *m_auth; /* keys from key_file (auth.c); NULL: none */
	/* event fd */
	int m_epfd, m_timer_fd, m_wake_fd;
	/* m_wake_fd written by a kick and not drained yet (progress.c) */
	atomic_bool m_woken;
	bool m_timer_armed;
	struct ry__fdtag m_listen_tag, m_timer_tag, m_wake_tag;
	/* the rails' fds without a thread of their own, which are also in
	 * m_epfd (ry__lrail_watch): the context path asks it for them */
	int m_rail_epfd;
	/* rail_life.c's round (set at create): progress calls up through it,
	 * so the floors below rail_life.c never name it */
	void (*m_rail_life)(struct ry_manager *m, uint64_t now);
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
	const struct ry__conn_up *m_conn_up; /* manager.c */
	uint64_t m_fence_reqs; /* FENCE_REQ frames sent (fence.c) */
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
 * The cold lock (LOCKING: Contexts), ctx.c: m_lock, then every context's
 * lock in order; then, before it returns, the completions and failed posts
 * the context paths left (cx_stash, cx_pfail) are run through their
 * handlers (receive, WR completion, replay), so the holder never sees a WR
 * that a context path polled but did not handle.
 */
void ry__lock_and_run_leftovers(struct ry_manager *m);
void ry__unlock(struct ry_manager *m);
/* ry_rail_fault() with any of the rail's faults (tests: rtr_again) */
int ry__rail_fault(struct ry_manager *m, const char *rail,
		   const struct ry_fault *f);
/* Before taking a context's lock alone: let a cold lock that is waiting
 * for the contexts' locks have them first. */
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
/* The index of the context this thread last posted to on m; m_nctx: none. */
unsigned ry__ctx_noted(const struct ry_manager *m);
/* The context path (ctx.c): cx's completions on the given rails, then its
 * dirty peers' striping, under cx_lock alone (try: not if another thread
 * holds it).  True if it queued callbacks. */
bool ry__ctx_round(struct ry_manager *m, struct ry__ctx *cx,
		   struct ry__lrail *const *rails, unsigned nr, uint64_t now,
		   bool try);

/* manager.c: create, destroy, resources */
void ry__mgr_timing(struct ry_manager *m);
void ry__fd_watch(struct ry_manager *m, int fd, struct ry__fdtag *tag,
		  bool out);
void ry__fd_unwatch(struct ry_manager *m, int fd);
void ry__timer_arm(struct ry_manager *m);

/* op.c: where fragments [first, first + n) of op lie, as far as one piece */
static inline void ry__op_span(const struct ry__op *op, uint32_t first,
			       uint32_t n, struct ry__span *sp)
{
	if (op->op_segs)
		ry__op_span_vec(op, first, n, sp);
	else
		ry__op_span_flat(op, op->op_peer->pr_mgr->m_cfg.fragment_size,
				 first, n, sp);
}

#include "src/ctl/ctl.h"

/* timers.c */
void ry__timers_run(struct ry_manager *m, uint64_t now);
/* Every connection's timer from its fields again (timing reloaded). */
void ry__timers_reset(struct ry_manager *m, uint64_t now);

/* msg.c takes the rail message types above */
#include "src/msg.h"

#endif /* RAILYARD_MANAGER_H */
