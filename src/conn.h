/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Connections: one per peer and rail slot, their state machine and the
 * work posted on them.  Every connection state change is made in conn.c.
 */
#ifndef RAILYARD_CONN_H
#define RAILYARD_CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <railyard/railyard.h>

#include "rails/rail.h"
#include "src/tunables.h"
#include "src/util/heap.h"
#include "src/util/list.h"

struct ry_peer;
struct ry_manager;
struct ry__lrail;
struct ry__op;
struct ry__ctl;

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

enum ry__wr_kind {
	WRK_FRAG = 0,
	WRK_MSG,
	WRK_HEARTBEAT,
	WRK_PROBE,
	WRK_PMTU, /* a path MTU probe step (conn.c); wr_first: its size */
};

struct ry__conn;

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

/*
 * The two things the connection floor (conn.c) needs done by the floors
 * above it, which it may not call (README, floors); the manager registers
 * them (manager.c, m_conn_up).  Both are asked for only when a QP must be
 * replaced at once: a CONNECT_REQ from the peer for a pair we still hold,
 * or a QP destroyed outside a poll of its rail.
 */
struct ry__conn_up {
	/* Hand over what lr's CQs hold (completion.c, ry__poll_rail): a QP
	 * about to go still finds its connection by number, and a draining
	 * one sees its flushed WRs. */
	void (*cu_poll_rail)(struct ry__lrail *lr, uint64_t now);
	/* The connections marked FAILED to ERR, fenced, now (replay.c,
	 * ry__replay_run), not later in the progress call. */
	void (*cu_replay)(struct ry_manager *m);
};

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
	uint32_t cn_unanswered; /* attempts in a row the peer never answered */
	uint64_t cn_work_ns;	/* the peer's last CONN_REQ with work waiting */
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
	/* CONNECTING with the rail still taking the QP to RTR (-EAGAIN:
	 * rdma_cm's handshake, the peer's MAC being resolved): asked again
	 * at cn_rts_poll_ns; the asker's side (a CONN_REP came) or the
	 * answerer's (the peer's CONN_REQ, its rail and attempt, owed a
	 * CONN_REP over cn_rts_ctl) */
	bool cn_rts_wait, cn_rts_asker;
	uint64_t cn_rts_poll_ns;
	unsigned cn_rts_src;
	uint32_t cn_rts_attempt;
	const struct ry__ctl *cn_rts_ctl;
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
	/* closed by the peer's GOODBYE, not failed (not in ry_counters: the
	 * public struct stays as released; metrics.c reports it, with
	 * lr_goodbyes_gone for the records forgotten) */
	uint64_t cn_goodbyes;
};

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

/* conn.c: connections and every change of their state */
void ry__conn_init(struct ry__conn *c, struct ry_peer *p, struct ry__lrail *lr);
/* c afresh on lr (a rail removed or come back), keeping the peer's totals
 * on it, its pairing and the fence its dead pair is owed (fence.c) */
void ry__conn_renew(struct ry__conn *c, struct ry_peer *p,
		    struct ry__lrail *lr);
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
		     const struct ry__probe_mr *pm, uint32_t flags,
		     struct ry__ctl *ctl);
void ry__conn_on_rep(struct ry_peer *p, unsigned src, unsigned dst,
		     uint32_t attempt, const struct ry_qp_endpoint *ep,
		     const struct ry__probe_mr *pm, struct ry__ctl *ctl);
int ry__probe_setup(struct ry_manager *m);
void ry__probe_mr_of(struct ry_manager *m, unsigned rail,
		     struct ry__probe_mr *pm);
/* pmtu.c: path MTU probing */
/* Our probe: the small SEND, then the MTU ladder when the peer takes one. */
int ry__conn_post_probes(struct ry__conn *c, uint64_t now);
/* The path MTU c comes up at, in buf for its up event when below the
 * interface's (logged when it changed). */
void ry__conn_mtu_note(struct ry__conn *c, char *buf, size_t len);
/* A failed attempt that lost only the larger probes: the reason in buf and
 * the next attempt's MTU set; false if that is not why it failed. */
bool ry__conn_mtu_reason(struct ry__conn *c, const char *what, char *buf,
			 size_t len);
void ry__conn_probed(struct ry__conn *c, uint64_t now);
void ry__conn_probe_done(struct ry__wr *w, uint64_t now);

/* conn_pace.c: when a connection tries again (conn.c moves it) */
/* Work waits on c's peer (ours or, lately, its): c comes first. */
bool ry__conn_work(const struct ry__conn *c, uint64_t now);
/* now plus a half to one and a half times ns */
uint64_t ry__conn_jittered(uint64_t now, uint64_t ns);
/* When c, failed or refused or unanswered, tries again (flap damping). */
uint64_t ry__conn_backoff_at(struct ry__conn *c, uint64_t now);
/* Attempts in flight a rail takes before it refuses (-EBUSY). */
unsigned ry__conn_gate_room(bool work);
/* 0: c may start its attempt now; else when its turn at the gate is. */
uint64_t ry__conn_gate_wait(struct ry__conn *c, uint64_t now);
/* The retry-after of a refusal for want of attempts, in ms. */
uint32_t ry__conn_gate_retry_ms(struct ry__lrail *lr, bool work, uint64_t now);
/* c's CONN_REQ was refused with err (-ENETDOWN or -EBUSY): c's deadline
 * and reason. */
void ry__conn_refused_wait(struct ry__conn *c, int err, uint32_t retry_ms,
			   uint64_t now);
void ry__conn_on_rej(struct ry_peer *p, unsigned src, unsigned dst,
		     uint32_t attempt, int err, uint32_t retry_ms);
int ry__post_ctl_msg(struct ry__conn *c, enum ry__wr_kind kind, uint64_t now);

/* heartbeat.c: judge c's silence, send its heartbeat (ry__timers_run) */
void ry__heartbeat(struct ry__conn *c, uint64_t now);
/* timers.c: heartbeat timing */
/* When ry__heartbeat has something to do for ACTIVE c next (send or judge
 * silence); never later than that; 0: nothing until c's state changes. */
uint64_t ry__heartbeat_due(const struct ry__conn *c, uint64_t now);
/* How long c may be quiet before this end sends a heartbeat; 0: never. */
uint64_t ry__hb_interval(const struct ry__conn *c, uint64_t now);
/* Where c's silence starts. */
uint64_t ry__hb_silence_from(const struct ry__conn *c);

/* timers.c */
/* c's state or deadline changed: its timer is due again from its fields. */
void ry__conn_timer(struct ry__conn *c, uint64_t now);
/* c must be looked at by `at` at the latest (it may be earlier). */
void ry__conn_timer_by(struct ry__conn *c, uint64_t at);
void ry__conn_timer_stop(struct ry__conn *c);

/* stripe.c: a connection's share of the stripe from its weight and health */
void ry__conn_update_share(struct ry__conn *c);

#endif /* RAILYARD_CONN_H */
