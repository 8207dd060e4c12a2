/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A rail as the manager holds it: the provider's rail, its PD, CQs and
 * receive ring, its connections by QP number, and the thread that runs it.
 *
 *   A rail's protocol work (the soft rail's packets, ACKs, retransmits)
 *   needs only its lr_lock, so each rail's progress runs on its own thread
 *   (progress_threads) beside the others and beside posting threads.
 */
#ifndef RAILYARD_LRAIL_H
#define RAILYARD_LRAIL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include <railyard/railyard.h>

#include "rails/rail.h"
#include "src/hist.h"
#include "src/rail_health.h"
#include "src/rail_life.h"
#include "src/tunables.h"

struct ry_manager;
struct ry__conn;
struct ry__rthread;

/* What an event of the manager's epoll set (m_epfd) names: data.ptr. */
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
	uint64_t lr_next_start_ns; /* the last paced start (conn_pace.c) */
	/* the attempt gate's retry-after feedback (conn_pace.c): refusals
	 * and attempts ended since lr_gate_win_ns */
	uint64_t lr_gate_win_ns, lr_gate_refused, lr_gate_done;
	uint32_t lr_gate_retry_ms;
	pthread_mutex_t lr_lock;  /* calls into lr_rail (LOCKING) */
	uint64_t lr_caught_up_ns; /* ry__rail_catch_up(): last pass */
	bool lr_polling;	  /* inside ry__poll_rail() (m_lock) */
	/* no fd or no pending(): run it every round; set when the rail opens,
	 * which may be in a slot a rail thread is already running */
	atomic_bool lr_always;
	bool lr_unpaired_said; /* a peer without its network was logged */
	atomic_bool lr_kick;   /* posted to since the last progress */
	/* a kick's progress left completions or events: the next round
	 * takes them (the rail's fd need not say so, rails/rail.h) */
	atomic_bool lr_left;
	struct ry__rthread *lr_rt; /* its progress thread, NULL: none */
	struct ry__fdtag lr_tag;   /* its fd in m_epfd (ry__lrail_watch) */
	/* connections with a QP by its number (ry__conn_by_qpn, per receive
	 * completion): 2^lr_qpn_bits buckets, lr_qpn_n entries */
	struct ry__conn **lr_qpn_hash;
	unsigned lr_qpn_bits, lr_qpn_n;
	struct ry_counters lr_gone;   /* counters of peers forgotten */
	uint64_t lr_goodbyes_gone;    /* and their cn_goodbyes */
	struct ry__rlife lr_life;     /* absent, present, gone (rail_life.c) */
	struct ry__rhealth lr_health; /* error rate (rail_health.c) */
	struct ry__lat lr_fo[RY__FO_N]; /* failover times (hist.h) */
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
/* fd.c: put the rail's fd in the manager's epoll sets, or take it out (a
 * rail without a thread of its own, m_lock held). */
void ry__lrail_watch(struct ry__lrail *lr, bool on);
int ry__lrail_wait_in(struct ry__lrail *lr, int epfd, void *tag);
void ry__lrail_wait_out(struct ry__lrail *lr, int epfd);
/* reload.c: fail a rail's connections over, then close it (rail_life.c) */
void ry__rail_remove(struct ry_manager *m, struct ry__lrail *lr,
		     uint64_t drain_ns, const char *why);

#endif /* RAILYARD_LRAIL_H */
