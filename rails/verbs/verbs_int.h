/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The verbs rail's internal objects, shared by its files:
 *
 *   verbs_rail.c   open/close, query, the ops table, the rail fd, async
 *                  events and the rail's event queue
 *   verbs_mr.c     PDs (wrappers around the rail's one ibv_pd) and regions
 *   verbs_qp.c     RC QPs: create, the state machine, post_send/post_recv
 *   verbs_cq.c     CQs: create/destroy, poll (ibv_wc -> ry_wc, per-QP
 *                  send accounting, the software flush of WRs posted in
 *                  ERR), and the CQs the caller destroyed before the HCA
 *                  was done with their QPs
 *   discover.c     ports and GIDs (shared with `railyard devices`)
 *
 * Objects of one rail: one ibv_context, one ibv_pd ("one PD per device":
 * every ry_pd of the rail wraps it, so a region of any of them is usable
 * with the SRQ and every QP), one completion channel, one SRQ, and CQs:
 * the rail's own (embedded in the rail, for QPs created without one,
 * made with the first of them: the manager's QPs are all on its own) and
 * those of create_cq, every one on that channel.  A QP sends and receives
 * on one CQ, so each of its completions, an SRQ receive's included, lands
 * on the CQ it was created on.
 *
 * Threading (rails/rail.h: concurrent_qps).  The owner serialises the
 * rail's calls except post_send on a QP of a create_cq CQ and cq_poll and
 * cq_pending on such a CQ: those run beside each other on other QPs and
 * CQs and beside progress() (the manager makes them under a context's
 * lock, not the rail's).  libibverbs is thread-safe; what is ours and
 * shared is guarded by the CQ's lock: its QP hash and list, n_held,
 * and of each of its QPs the send ring (head, tail, ring,
 * hw_outstanding), base.state, err_ns, last_wqe and zombie.  Whoever
 * writes one of those holds the lock, and so does whoever reads one
 * outside the owner's serialising: post_send, poll, and progress, which
 * sets a QP to ERR on its async event and reaps zombies.  A rail-wide
 * field (zombies, port_active, the CQ lists) is progress's and the
 * serialised calls'.  Lock order: a CQ's lock is taken alone.
 *
 * Nothing here waits for the network but one call: the async fd and the
 * completion channel fd are O_NONBLOCK and only read in progress(); a QP
 * that stalls without an error is the manager's heartbeat's to catch.
 * The exception is modify_qp to RTR on RoCE, where the kernel resolves
 * the peer's MAC address before it returns (up to 1 s; see to_rtr()).
 */
#ifndef RAILYARD_VERBS_INT_H
#define RAILYARD_VERBS_INT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <infiniband/verbs.h>

#include "rails/rail.h"
#include "src/util/clock.h"
#include "src/util/compiler.h"
#include "src/util/list.h"

#define RY__VERBS_QP_BUCKETS 1024 /* qpn -> QP per CQ, for completions */
#define RY__VERBS_EVENTS 256	  /* rail event queue */
_Static_assert((RY__VERBS_EVENTS & (RY__VERBS_EVENTS - 1)) == 0,
	       "event ring size must be a power of two (ring.h)");
#define RY__VERBS_CQ_MIN 4096 /* entries of a new CQ; grows per QP */
/* entries of every CQ on a device that cannot resize them (siw) */
#define RY__VERBS_CQ_FIXED 65536
#define RY__VERBS_SRQ_WR 1024 /* receives the SRQ can hold */
#define RY__VERBS_MAX_RD 16   /* READs outstanding per QP */
/* A move to RTR slower than this is logged: the caller stood still. */
#define RY__VERBS_SLOW_RTR_NS 100000000ull
/* rdma_cm mode: how long a connect (address, route, REQ to REP) may
 * take before the rail thread gives it up. */
#define RY__VERBS_CM_WAIT_MS 1000
/* iWARP: how often a QP owing completions has its device state asked,
 * and how long after it is seen in ERR the HCA may still flush */
#define RY__VERBS_SWEEP_NS 100000000ull
/* How long a destroyed QP waits for "last WQE reached" from an HCA that
 * may not send it (rxe and mlx5 do). */
#define RY__VERBS_LAST_WQE_GRACE_NS 1000000000ull

struct ry__verbs_rail;
struct ry__verbs_cm;
struct ry__verbs_cm_conn;

/*
 * A CQ.  Its ibv_cq may outlive the ry_cq: destroy_cq with zombies still
 * attached (QPs the caller destroyed, the HCA not yet) makes it dead, and
 * progress drains it for them and destroys it with the last (verbs_cq.c).
 */
struct ry__verbs_cq {
	struct ry_cq base;
	/* guards what a poll shares with posts and progress (Threading) */
	pthread_mutex_t lock;
	struct ry__list link; /* rail->cqs or rail->dead_cqs; not the own */
	struct ry__list qps;  /* QPs on the ibv_cq, zombies included */
	struct ibv_cq *cq;    /* cq_context: this */
	/* qpn -> QP of qps, zombies included: a completion's QP */
	struct ry__verbs_qp *qp_hash[RY__VERBS_QP_BUCKETS];
	int cq_size;
	int cq_used;	/* entries promised to its QPs and the SRQ */
	unsigned n_qps; /* QPs on it the caller has not destroyed */
	/* ring entries complete (done or flushed) that poll still has to
	 * report or, for a zombie, drop */
	unsigned n_held;
	/* CQ events taken by one progress() and not yet acked */
	unsigned n_events;
	struct ry__verbs_cq *evnext;
	bool dead; /* destroyed by the caller */
};

struct ry__verbs_pd {
	struct ry_pd base;
	struct ry__list link; /* rail->pds, for teardown at close */
	unsigned refs;	      /* MRs and QPs */
};

struct ry__verbs_mr {
	struct ry_mr base;
	struct ry__list link; /* rail->mrs, for teardown at close */
	struct ibv_mr *mr;
};

/*
 * What a posted send WR needs at completion, kept in post order.  The
 * contract promises a QP's send completions in posting order, which iWARP
 * (siw) does not keep: it completes a WRITE or SEND when it is on the wire
 * and a READ posted before it only when the response is in.  So a WR the
 * HCA completed while an older one is still owed is held here (done) until
 * its turn.
 *
 * For the same reason an iWARP WRITE or SEND that completed has not
 * necessarily been placed: the peer may still refuse it.  A READ's
 * response comes after the peer took everything posted before it, so each
 * post_send on iWARP that ends in a WRITE or SEND posts a READ of 0 bytes
 * behind it (a fence, never reported), and a WRITE's or SEND's success is
 * held (unacked) until a READ after it completes: success confirms it, a
 * failure (the connection ended) makes it FLUSHED (verbs_cq.c).
 */
struct ry__verbs_swr {
	uint64_t wr_id;
	uint32_t vendor_err; /* done: the HCA's */
	uint8_t opcode;	     /* enum ry_wc_opcode */
	uint8_t status;	     /* done: enum ry_wc_status */
	bool done;	     /* the HCA completed it */
	bool flushed;	     /* posted in ERR: completed by software */
	bool fence;	     /* ours, not the caller's: never reported */
	bool unacked;	     /* success held for a READ behind it */
};

/* The wr_id of a fence: a READ of 0 bytes, iWARP only */
#define RY__VERBS_FENCE_ID 0xfe4ce0fe4ce0fe4cull

struct ry__verbs_qp {
	struct ry_qp base;
	struct ry__verbs_qp *hnext; /* cq->qp_hash chain */
	struct ry__verbs_qp *znext; /* rail->zombies */
	struct ry__verbs_cq *cq;    /* where all its completions go */
	struct ry__list cq_link;    /* cq->qps */
	bool zombie;		    /* destroyed by the caller, not yet by us */
	struct ibv_qp *qp;
	/* Send WRs posted and not yet completed, oldest first.  RC completes
	 * a send queue in order, so the head is the WR an error completion
	 * (whose wc.opcode verbs leaves undefined) belongs to. */
	struct ry__verbs_swr *ring;
	uint32_t ring_mask;	 /* ring size - 1 (a power of two) */
	uint32_t head, tail;	 /* tail - head = outstanding */
	uint32_t hw_outstanding; /* of those, owed by the HCA */
	uint32_t max_send_wr;	 /* the caller's WRs outstanding at most */
	uint32_t n_user;	 /* the caller's WRs in the ring */
	uint32_t sq_depth;	 /* max_send_wr and room for fences */
	/* iWARP: the caller moved it to ERR (what the HCA owed then is
	 * FLUSHED), and an error was reported (the first one names the
	 * failure: RY_WC_GENERAL_ERR, the rest FLUSHED) */
	bool user_err;
	bool failed;
	/* An SRQ QP may still be taking a receive when it enters ERR; the
	 * HCA says "last WQE reached" when it no longer can. */
	bool rq_live;	   /* reached RTR: may consume receives */
	bool last_wqe;	   /* IBV_EVENT_QP_LAST_WQE_REACHED seen */
	uint64_t err_ns;   /* when it entered ERR (CLOCK_MONOTONIC) */
	uint64_t swept_ns; /* iWARP: its device state last asked */
	/* rdma_cm mode (verbs_cm.c), under the rail's cm->lock */
	struct ry__verbs_qp *cm_next;
	struct rdma_cm_id *cm_id;
	uint32_t cm_rqpn;   /* the peer's QPN its CM connection names */
	uint32_t cm_sq_psn; /* the CM's starting PSN for RTS */
	struct ry__verbs_cm_conn *cm_conn; /* our connect: its target, end */
	/* iWARP: the peer rail's fence region (0: none, no fences) */
	uint32_t fence_rkey;
	uint64_t fence_addr;
	uint8_t cm_state;
	bool cm_reg;
};

struct ry__verbs_rail {
	struct ry_rail base;
	struct ibv_context *ctx;
	uint8_t port;
	int gid_index;
	union ibv_gid gid;
	uint16_t lid;
	bool ethernet; /* RoCE: GRH always */
	uint32_t mtu;  /* bytes: min(cfg->mtu, port active) */
	/* every QP's: the GRH's traffic class (RoCE: the IP header's
	 * DSCP/ECN byte) and the address vector's service level */
	uint8_t traffic_class;
	uint8_t sl;
	uint64_t rate_bps;
	struct ibv_device_attr dev_attr;
	uint32_t max_msg_size;

	struct ibv_pd *pd; /* the device's PD, see the top */
	struct ibv_comp_channel *channel;
	struct ry__verbs_cq cq; /* the rail's own; cq.cq from its first QP */
	struct ry__list cqs;	/* create_cq's, live */
	/* destroyed by the caller, still holding zombies: progress drains
	 * them and destroys each with its last zombie */
	struct ry__list dead_cqs;
	struct ibv_srq *srq;
	uint32_t srq_wr; /* receives it holds: each CQ must have room */
	int epfd;	 /* channel fd + async fd */
	bool device_fatal;
	bool cq_fixed; /* the device cannot resize CQs: made at CQ_FIXED */
	/* iWARP: what the fence READs of our peers read (a few bytes,
	 * remote read only), and where ours land */
	void *fence_buf;
	struct ibv_mr *fence_mr;
	bool iwarp;	      /* no RNR, no WRITE with immediate */
	bool port_active;     /* as the last port event said */
	uint64_t dev_checked; /* the device's uverbs node last seen */
	/* QPs the caller destroyed that the HCA still owes completions or
	 * a "last WQE reached"; they stay on their CQ until reaped. */
	struct ry__verbs_qp *zombies;

	struct ry__list pds, mrs;
	/* rdma_cm mode: the listener and its thread; NULL: manual */
	struct ry__verbs_cm *cm;

	struct ry_rail_event events[RY__VERBS_EVENTS];
	unsigned ev_head, ev_tail;
	unsigned ev_dropped;

	/* The last peer whose MAC address we asked the kernel to resolve
	 * before a move to RTR (see neigh_ready() in verbs_qp.c). */
	uint8_t primed_ip[4];
	uint64_t primed_ns;

	/* port errors from the PMA (verbs_pma.c) where sysfs has none: the
	 * last answer, when it was asked, and whether it ever answers */
	uint64_t pma_errors, pma_ns;
	bool pma_off;
};

static inline struct ry__verbs_rail *vrail(struct ry_rail *r)
{
	return container_of(r, struct ry__verbs_rail, base);
}

static inline struct ry__verbs_rail *pd_vrail(struct ry_pd *pd)
{
	return vrail(pd->rail);
}

static inline struct ry__verbs_cq *vcq(struct ry_cq *cq)
{
	return container_of(cq, struct ry__verbs_cq, base);
}

/* verbs_rail.c */
void ry__verbs_push_event(struct ry__verbs_rail *r,
			  enum ry_rail_event_type type, uint32_t qpn);

/* verbs_mr.c */
int ry__verbs_alloc_pd(struct ry_rail *rail, struct ry_pd **pd_p);
int ry__verbs_dealloc_pd(struct ry_pd *pd);
int ry__verbs_reg_mr(struct ry_pd *pd, void *addr, size_t length,
		     unsigned access, struct ry_mr **mr_p);
int ry__verbs_dereg_mr(struct ry_mr *mr);
void ry__verbs_mr_close_all(struct ry__verbs_rail *r);

/* verbs_qp.c */
int ry__verbs_create_qp(struct ry_pd *pd, const struct ry_qp_init *init,
			struct ry_qp **qp_p);
int ry__verbs_modify_qp(struct ry_qp *qp, enum ry_qp_state state,
			const struct ry_qp_attr *attr);
int ry__verbs_destroy_qp(struct ry_qp *qp);
int ry__verbs_post_send(struct ry_qp *qp, const struct ry_send_wr *wr,
			unsigned n);
int ry__verbs_post_recv(struct ry_rail *rail, const struct ry_recv_wr *wr,
			unsigned n);
/* c's QP of that number, a zombie included (under c->lock) */
struct ry__verbs_qp *ry__verbs_qp_find(struct ry__verbs_cq *c, uint32_t qpn);
/* The QP is in ERR (we moved it, or the HCA did and told us); under its
 * CQ's lock. */
void ry__verbs_qp_set_err(struct ry__verbs_qp *q);
void ry__verbs_qp_close_all(struct ry__verbs_rail *r);
void ry__verbs_qp_reap(struct ry__verbs_rail *r);
/* iWARP: complete what a dead QP's HCA will never complete (progress) */
void ry__verbs_qp_sweep(struct ry__verbs_rail *r);

/* verbs_health.c: the port's counters in sysfs, under root */
#define RY__VERBS_SYSFS "/sys/class/infiniband"
/* root/dev/ports/port/dir/name into *v: 0, or -errno (-EINVAL: not a
 * number), *v untouched */
int ry__verbs_port_counter(const char *root, const char *dev, unsigned port,
			   const char *dir, const char *name, uint64_t *v);
/* the sum of the port's error counters, -ENOENT when it has none */
int ry__verbs_port_errors(const char *root, const char *dev, unsigned port,
			  uint64_t *sum_p);

/* verbs_pma.c: the port's error counters from its PMA (PortCounters) */
/* A Get(PortCounters) of port with transaction id tid into mad (256 B). */
void ry__verbs_pma_request(uint8_t *mad, unsigned port, uint64_t tid);
/* The answer's error counters summed: 0, -EPROTO (not a PortCounters
 * answer for port), -EOPNOTSUPP (the MAD's status is an error). */
int ry__verbs_pma_parse(const uint8_t *mad, size_t len, unsigned port,
			uint64_t *sum_p);
/* Ask dev's port (its LID: 0, no PMA to ask, -ENOENT) and wait for the
 * answer (at most 0.3 s): 0, or -errno. */
int ry__verbs_pma_port_errors(const char *dev, unsigned port, uint16_t lid,
			      uint64_t *sum_p);

/* verbs_cm.c: rdma_cm mode (NULL r->cm: manual, each a no-op) */
/* Decide the rail's mode (cfg->cm, the device's transport); listen. */
int ry__verbs_cm_open(struct ry__verbs_rail *r,
		      const struct ry_rail_config *cfg);
void ry__verbs_cm_close(struct ry__verbs_rail *r);
/* create_qp: its endpoint names the listener; REQs may find it */
void ry__verbs_cm_add(struct ry__verbs_rail *r, struct ry__verbs_qp *q);
/* destroy: no REQ finds it any more; its CM connection ends */
void ry__verbs_cm_del(struct ry__verbs_rail *r, struct ry__verbs_qp *q);
void ry__verbs_cm_state(struct ry__verbs_rail *r, struct ry__verbs_qp *q,
			enum ry_qp_state s);
/* RTR through the CM: 0 or a positive errno, as to_rtr() */
int ry__verbs_cm_rtr(struct ry__verbs_rail *r, struct ry__verbs_qp *q,
		     const struct ry_qp_attr *attr);
/* RTS: the CM's sq_psn; true when the CM moved it already (iWARP) */
bool ry__verbs_cm_rts_done(struct ry__verbs_rail *r, struct ry__verbs_qp *q,
			   uint32_t *sq_psn);

/* verbs_cq.c */
/* c's lock and lists (before anything else of c, the rail's own too) */
int ry__verbs_cq_init(struct ry__verbs_rail *r, struct ry__verbs_cq *c);
/* Create c's ibv_cq on the rail's channel, armed, with room for the SRQ. */
int ry__verbs_cq_open(struct ry__verbs_rail *r, struct ry__verbs_cq *c);
int ry__verbs_poll_cq(struct ry_rail *rail, struct ry_wc *wc, int n);
int ry__verbs_create_cq(struct ry_rail *rail, struct ry_cq **cq_p);
int ry__verbs_destroy_cq(struct ry_cq *cq);
int ry__verbs_cq_poll(struct ry_cq *cq, struct ry_wc *wc, int n);
int ry__verbs_cq_pending(struct ry_cq *cq);
/* Take and drop what dead CQs hold, for their zombies (from progress). */
void ry__verbs_cq_drain_dead(struct ry__verbs_rail *r);
/* c lost its last QP: if the caller destroyed it, destroy it now. */
void ry__verbs_cq_put(struct ry__verbs_rail *r, struct ry__verbs_cq *c);
/* Destroy every CQ, the rail's own included (close, after the QPs). */
void ry__verbs_cq_close_all(struct ry__verbs_rail *r);

#endif
