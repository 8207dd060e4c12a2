/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Peers: a record per remote manager, its state machine (changed only
 * through ry__peer_set_state, peer.c), its rails and its indexes.
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
 */
#ifndef RAILYARD_PEER_H
#define RAILYARD_PEER_H

#include <stdbool.h>
#include <stdint.h>

#include <railyard/railyard.h>

#include "src/conn.h"
#include "src/hist.h"
#include "src/tunables.h"
#include "src/util/hidx.h"
#include "src/util/list.h"

struct ry_manager;
struct ry__ctx;
struct ry__ctl;
struct ry__op;
struct ry__range;

enum ry__peer_state {
	PEER_NEW = 0,	 /* not used yet */
	PEER_CONNECTING, /* control connection being made */
	PEER_HELLO,	 /* HELLO sent, waiting for the peer's */
	PEER_READY,	 /* rail lists exchanged */
	PEER_BACKOFF,	 /* control channel lost; redial at pr_ctl_retry_ns */
	PEER__MAX
};
const char *ry__peer_state_str(enum ry__peer_state s);
/* Every change of a peer's state goes through here (peer.c). */
void ry__peer_set_state(struct ry_peer *p, enum ry__peer_state s);

struct ry__ctx;

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
	/* its rails, from its HELLO: pr_nrrails of them (malloc'd to fit:
	 * a four-rail peer's are 672 bytes, RY_MAX_RAILS of them 2,688) */
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
	/* fencing (fence.c): the last generation taken, acknowledged, and
	 * requested over the current session; the caps the incarnation
	 * pr_fence_caps_node said it has */
	uint64_t pr_fence_gen, pr_fence_acked, pr_fence_sent;
	uint64_t pr_fence_caps_node;
	unsigned pr_fence_caps;
	/* an unacknowledged request is asked again then, after a wait
	 * doubled at each resend (ry__fence_tick) */
	uint64_t pr_fence_retry_ns, pr_fence_wait_ns;
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
	 * QPN hash, the timer heap and m_failed point at it.
	 * (tests/bench/RESULTS.md, Scale, says what a peer costs.)
	 */
	struct ry__conn *pr_conn[RY_MAX_RAILS];
	unsigned pr_nslots;
	struct ry__conn pr_slots[];
};

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

/* peer.c */
struct ry_peer *ry__peer_new(struct ry_manager *m, const char *name,
			     const char *addr, bool dial);
bool ry__peer_disposable(const struct ry_peer *p);
void ry__peer_forget(struct ry_peer *p);
void ry__peer_use(struct ry_peer *p);
/* node is an earlier incarnation of p: its memory is gone */
bool ry__peer_node_stale(const struct ry_peer *p, uint64_t node);
void ry__peer_path_reason(struct ry_peer *p, uint64_t waited_ns, char *buf,
			  size_t len);
void ry__peer_ctl_lost(struct ry_peer *p, struct ry__ctl *c);
void ry__peer_dirty(struct ry_peer *p);
void ry__peer_update_paths(struct ry_peer *p);
/* Fence generations (fence.c has the protocol).  p's current incarnation
 * reads a FENCE_REQ's whole pair list. */
bool ry__peer_fence_pairs(const struct ry_peer *p);
/* Generations up to this one are requested over the current session. */
uint64_t ry__peer_fence_requested(const struct ry_peer *p);
/* The generation a connection failing now takes. */
uint64_t ry__peer_fence_gen(struct ry_peer *p);
void ry__peer_free(struct ry_peer *p);
void ry__peer_unref(struct ry_peer *p);

/* A peer event (RY_EV_PEER_*), naming p but holding no pointer to it. */
void ry__peer_event(struct ry_peer *p, enum ry_event_type t, const char *reason,
		    uint64_t old_node, uint64_t new_node);

/* peer_life.c: the control plane's reports of a peer's life */
/* old_node: the incarnation a new one replaces (the peer restarted), or 0 */
void ry__peer_ready(struct ry_peer *p, uint64_t old_node, bool dialer);
/* p said GOODBYE: its connections close as closed, not failed */
void ry__peer_goodbye(struct ry_peer *p, int why);
/* p is no longer admitted (reload): its connections fail, fenced */
void ry__peer_revoked(struct ry_peer *p);
/* pair our rails with the peer's again (rails added or removed) */
void ry__peer_pair(struct ry_peer *p);

/* timers.c */
/* p has operations that may time out, or a redial to make: watched every
 * tick until it has neither. */
void ry__peer_timer(struct ry_peer *p);

#endif /* RAILYARD_PEER_H */
