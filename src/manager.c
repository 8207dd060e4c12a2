// SPDX-License-Identifier: BSD-2-Clause
/*
 * The rail manager: create and destroy, its config and resources (rails,
 * pools, the epoll fd with its timer and wake fds), and fault injection by
 * rail name.  The progress loop and delivery are in progress.c.
 *
 * The lock order and ownership rules are in src/manager.h (LOCKING).
 *
 * Teardown runs in phases: stop the progress thread; under the lock mark
 * the manager closing and complete every op as canceled; run those
 * callbacks without the lock; then destroy QPs, control sockets, regions
 * and rails, which revokes everything so no completion can arrive later.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>

#include <railyard/testing.h>

#include "config/config_int.h"
#include "src/conn.h"
#include "src/control.h"
#include "src/lrail.h"
#include "src/manager.h"
#include "src/msg.h"
#include "src/op.h"
#include "src/peer.h"
#include "src/pool.h"
#include "src/progress.h"
#include "src/region.h"
#include "src/tunables.h"

_Static_assert(sizeof(struct ry__mhdr) == RY__MSG_HDR, "message header");

/* A HELLO-made record that lost its last control session (ctl_ops). */
static int ctl_peer_release(struct ry_peer *p)
{
	if (ry__peer_disposable(p)) {
		ry__peer_forget(p);
		return 0;
	}
	/* it may become disposable (its connections still failing over,
	 * draining): look again, unless the application holds it */
	return p->pr_app_seen || p->pr_app_refs ? -EBUSY : -EAGAIN;
}

static void ctl_peer_state(struct ry_peer *p, int state)
{
	ry__peer_set_state(p, (enum ry__peer_state)state);
}

/* What the control plane reports goes to the peer, connection and fence
 * state machines (src/ctl/ctl.h). */
static const struct ry__ctl_ops ctl_ops = {
    .co_conn_rej = ry__conn_on_rej,
    .co_conn_rep = ry__conn_on_rep,
    .co_conn_req = ry__conn_on_req,
    .co_fence_ack = ry__fence_on_ack,
    .co_fence_req = ry__fence_on_req,
    .co_peer_goodbye = ry__peer_goodbye,
    .co_peer_lost = ry__peer_ctl_lost,
    .co_peer_revoked = ry__peer_revoked,
    .co_peer_new = ry__peer_new,
    .co_peer_rails = ry__rail_life_peer_rails,
    .co_peer_ready = ry__peer_ready,
    .co_peer_release = ctl_peer_release,
    .co_peer_state = ctl_peer_state,
    .co_probe_mr = ry__probe_mr_of,
};

/* What the connection floor asks of the floors above (src/conn.h). */
static const struct ry__conn_up conn_up = {
    .cu_poll_rail = ry__poll_rail,
    .cu_replay = ry__replay_run,
};

void ry__timer_arm(struct ry_manager *m)
{
	struct itimerspec its = {0};

	its.it_interval.tv_sec = (time_t)(m->m_tick_ns / 1000000000ull);
	its.it_interval.tv_nsec = (long)(m->m_tick_ns % 1000000000ull);
	its.it_value = its.it_interval;
	if (timerfd_settime(m->m_timer_fd, 0, &its, NULL))
		RY_ERR("mgr", "timerfd_settime: %m");
	m->m_timer_armed = true;
}

/* ---- create / destroy ---- */

/* The failover times in ns and the tick, from m_cfg (create, reload). */
void ry__mgr_timing(struct ry_manager *m)
{
	uint64_t shortest;

	m->m_hb_ns = m->m_cfg.failover.heartbeat_ms * 1000000ull;
	m->m_idle_hb_ns = ry__max64(
	    m->m_hb_ns, m->m_cfg.failover.idle_heartbeat_ms * 1000000ull);
	m->m_timeout_ns = m->m_cfg.failover.timeout_ms * 1000000ull;
	m->m_op_timeout_ns = m->m_cfg.failover.op_timeout_ms * 1000000ull;
	m->m_connect_ns = 4 * m->m_timeout_ns > 500000000ull
			      ? 4 * m->m_timeout_ns
			      : 500000000ull;
	shortest = m->m_hb_ns < m->m_timeout_ns ? m->m_hb_ns : m->m_timeout_ns;
	m->m_tick_ns = shortest / 4;
	if (m->m_tick_ns > 10000000ull)
		m->m_tick_ns = 10000000ull;
	if (m->m_tick_ns < 1000000ull)
		m->m_tick_ns = 1000000ull;
	/* a reload may have made a connection's next deadline sooner */
	ry__timers_reset(m, ry__now_ns());
}

static void log_config_error(const struct ry_config_error *e, void *arg)
{
	(void)arg;
	RY_ERR("config", "%s:%d: %s%s%s", e->file, e->line, e->message,
	       e->hint && e->hint[0] ? "; " : "", e->hint ? e->hint : "");
}

/*
 * Each tcp WR costs a header, a wake-up and an ACK on top of its bytes,
 * and the kernel already cuts the stream into segments: 256 KiB WRs spend
 * a sixth less CPU per GB than 64 KiB ones at 4 x 1 Gbit/s
 * (tests/bench/RESULTS.md).  RDMA and soft rails keep 16 pages, which
 * spreads one 1 MiB op over up to 16 rails.
 */
static uint32_t auto_frags_per_wr(const struct ry_config *c)
{
	unsigned i;

	for (i = 0; i < c->n_rails; i++)
		if (c->rails[i].provider != RY_PROVIDER_TCP)
			break;
	return c->n_rails && i == c->n_rails ? 64 : 16;
}

/*
 * A program may leave fields zero: railyard.h promises defaults for zero
 * sizes and times, a node name and a loopback control address.
 * The rest is the loader's own validation, so a config passes one set of
 * rules whether it came from a file or was built by hand.
 */
static int adopt_config(struct ry_config *c)
{
	char why[200];

	ry__opt_fill_zero(c);
	if (!c->node[0])
		snprintf(c->node, sizeof(c->node), "node-%08x",
			 (unsigned)ry__rand64());
	if (!c->control[0])
		snprintf(c->control, sizeof(c->control), "127.0.0.1:0");
	if (ry_config_validate(c, log_config_error, NULL))
		return -EINVAL;
	/* validated: it expands (validate.c tried it) */
	if (ry__config_lanes(c, why, sizeof(why))) {
		RY_ERR("config", "%s", why);
		return -EINVAL;
	}
	if (!c->frags_per_wr)
		c->frags_per_wr = auto_frags_per_wr(c);
	return 0;
}

int ry__lrail_open(struct ry_manager *m, unsigned i,
		   const struct ry_rail_config *rc)
{
	struct ry__lrail *lr = &m->m_rails[i];
	struct ry_rail *rail = NULL;
	int ret;

	lr->lr_cfg = *rc;
	ret = ry__rail_life_open(lr, &rail); /* logs why it failed */
	/* lr_rail is read under lr_lock by whoever kicks the rail */
	pthread_mutex_lock(&lr->lr_lock);
	lr->lr_rail = rail;
	pthread_mutex_unlock(&lr->lr_lock);
	if (ret)
		return ret;
	ret = ry__rail_query(lr->lr_rail, &lr->lr_attr);
	if (ret)
		return ret;
	/* leave room for a heartbeat or probe beside a full window */
	if (lr->lr_attr.max_qp_wr > 2 &&
	    m->m_cfg.wr_per_qp > lr->lr_attr.max_qp_wr - 2) {
		RY_WARN("mgr", "rail %s: wr_per_qp %u lowered to %u",
			lr->lr_cfg.name, m->m_cfg.wr_per_qp,
			lr->lr_attr.max_qp_wr - 2);
		m->m_cfg.wr_per_qp = lr->lr_attr.max_qp_wr - 2;
	}
	lr->lr_link = lr->lr_attr.link;
	ret = ry__rail_alloc_pd(lr->lr_rail, &lr->lr_pd);
	if (ret)
		return ret;
	/* a CQ per context, so that each context polls only its own */
	for (unsigned k = 0; k < m->m_nctx; k++) {
		ret = ry__rail_create_cq(lr->lr_rail, &lr->lr_cq[k]);
		if (ret == -EOPNOTSUPP && !k)
			break; /* all on the rail's own CQ */
		if (ret)
			return ret;
	}
	ret = ry__rail_fd(lr->lr_rail);
	if (ret >= 0 && lr->lr_rt) {
		/* reopened (rail_life.c) in a slot a rail thread runs; the
		 * tag rail_main() tells its rails' events by */
		int err = ry__lrail_wait_in(lr, lr->lr_rt->rt_epfd, lr);

		if (err)
			RY_ERR("mgr", "rail %s: epoll_ctl: %s", lr->lr_cfg.name,
			       strerror(-err));
	} else if (ret >= 0) {
		ry__lrail_watch(lr, true);
	}
	atomic_store_explicit(
	    &lr->lr_always,
	    ret < 0 || ry__rail_pending(lr->lr_rail) == -EOPNOTSUPP ||
		(lr->lr_cq[0] &&
		 ry__rail_cq_pending(lr->lr_cq[0]) == -EOPNOTSUPP),
	    memory_order_relaxed);
	return ry__recv_setup(lr);
}

/*
 * Close a slot's rail; every QP on it is gone and m_lock is held.  The
 * slot stays a hole (see ry__lrail_live).
 */
void ry__lrail_close(struct ry__lrail *lr)
{
	struct ry_rail *rail = lr->lr_rail;

	if (!rail)
		return;
	if (!lr->lr_rt)
		ry__lrail_watch(lr, false);
	ry__recv_teardown(lr);
	/* under lr_lock: an application thread's ry_progress() may be
	 * asking this rail's CQs whether they hold anything (rail_run) */
	pthread_mutex_lock(&lr->lr_lock);
	for (unsigned k = 0; k < RY__MAX_CTX && lr->lr_cq[k]; k++) {
		if (ry__rail_destroy_cq(lr->lr_cq[k]))
			RY_ERR("mgr", "rail %s: a QP still names its CQ",
			       lr->lr_cfg.name);
		lr->lr_cq[k] = NULL;
	}
	pthread_mutex_unlock(&lr->lr_lock);
	ry__rail_dealloc_pd(lr->lr_pd);
	pthread_mutex_lock(&lr->lr_lock);
	lr->lr_rail = NULL;
	ry__rail_close(rail);
	pthread_mutex_unlock(&lr->lr_lock);
	lr->lr_pd = NULL;
	lr->lr_active = 0;
	lr->lr_connecting = 0;
	lr->lr_link = RY_LINK_DOWN;
	atomic_store(&lr->lr_always, false);
	atomic_store(&lr->lr_kick, false);
	atomic_store(&lr->lr_left, false);
	memset(&lr->lr_cfg, 0, sizeof(lr->lr_cfg));
	memset(&lr->lr_attr, 0, sizeof(lr->lr_attr));
	free(lr->lr_qpn_hash);
	lr->lr_qpn_hash = NULL;
	lr->lr_qpn_bits = 0;
	lr->lr_qpn_n = 0;
}

static unsigned c_n(const struct ry_manager *m)
{
	unsigned n = m->m_cfg.contexts;

	return n < 1 ? 1 : n > RY__MAX_CTX ? RY__MAX_CTX : n;
}

/* The progress contexts (LOCKING: Contexts), before any rail opens. */
static int ctx_init(struct ry_manager *m)
{
	size_t sz = sizeof(struct ry__ctx) * c_n(m);

	m->m_ctx = aligned_alloc(_Alignof(struct ry__ctx), sz);
	if (!m->m_ctx)
		return -ENOMEM;
	memset(m->m_ctx, 0, sz);
	m->m_nctx = c_n(m);
	for (unsigned i = 0; i < m->m_nctx; i++) {
		struct ry__ctx *cx = &m->m_ctx[i];

		pthread_mutex_init(&cx->cx_lock, NULL);
		pthread_mutex_init(&cx->cx_dq_lock, NULL);
		pthread_mutex_init(&cx->cx_dl, NULL);
		cx->cx_mgr = m;
		cx->cx_idx = i;
		ry__pool_init(&cx->cx_op_pool, sizeof(struct ry__op));
		ry__pool_init(&cx->cx_wr_pool, sizeof(struct ry__wr));
		ry__pool_init(&cx->cx_range_pool, sizeof(struct ry__range));
	}
	return 0;
}

static void free_cfg_peers(struct ry_config *c)
{
	free(c->peers);
	c->peers = NULL;
	c->n_peers = 0;
}

static void teardown(struct ry_manager *m)
{
	struct ry_peer *p;
	struct ry__delivery *dv;
	struct ry__op *op;
	unsigned i, j;

	for (i = 0; i < m->m_nctx; i++)
		while ((op = m->m_ctx[i].cx_poll_head)) {
			ry__sq_pop_head(m->m_ctx[i].cx_poll_head,
					m->m_ctx[i].cx_poll_tail, op_q_next);
			ry__op_release(m, op);
		}
	while ((p = m->m_peers)) { /* ry__peer_free unlinks it */
		for (j = 0; j < m->m_nrails; j++)
			ry__conn_destroy_qp(p->pr_conn[j]);
		ry__peer_free(p);
	}
	ry__ctl_close_all(m);
	while ((dv = m->m_dv_head)) {
		ry__sq_pop_head(m->m_dv_head, m->m_dv_tail, dv_next);
		free(dv);
	}
	while (m->m_regions) {
		struct ry_region *rg = m->m_regions;
		bool internal = rg == m->m_msg_region || rg == m->m_ctl_region;
		bool probe = rg == m->m_probe_region; /* mapped: conn_post.c */
		void *addr = rg->rg_addr;
		size_t len = rg->rg_len;

		ry__region_dereg(rg);
		if (internal)
			free(addr);
		else if (probe)
			munmap(addr, len);
	}
	for (i = 0; i < m->m_nrails; i++)
		ry__lrail_close(&m->m_rails[i]);
	for (i = 0; i < RY_MAX_RAILS; i++)
		pthread_mutex_destroy(&m->m_rails[i].lr_lock);
	/* WRs and ranges of canceled ops were revoked with their QPs */
	for (i = 0; i < m->m_nctx; i++) {
		struct ry__ctx *cx = &m->m_ctx[i];

		cx->cx_wr_pool.pl_in_use = 0;
		cx->cx_range_pool.pl_in_use = 0;
		ry__pool_fini(&cx->cx_op_pool);
		ry__pool_fini(&cx->cx_wr_pool);
		ry__pool_fini(&cx->cx_range_pool);
		pthread_mutex_destroy(&cx->cx_lock);
		pthread_mutex_destroy(&cx->cx_dq_lock);
		pthread_mutex_destroy(&cx->cx_dl);
	}
	free(m->m_ctx);
	ry__heap_free(&m->m_ctimers); /* emptied by ry__peer_free */
	ry__peer_index_fini(m);
	ry__hidx_free(&m->m_ctl_src); /* emptied by ry__ctl_close_all */
	if (m->m_timer_fd >= 0)
		close(m->m_timer_fd);
	if (m->m_wake_fd >= 0)
		close(m->m_wake_fd);
	if (m->m_epfd >= 0)
		close(m->m_epfd);
	if (m->m_rail_epfd >= 0)
		close(m->m_rail_epfd);
	free_cfg_peers(&m->m_cfg);
	pthread_mutex_destroy(&m->m_lock);
	pthread_mutex_destroy(&m->m_dq_lock);
	pthread_mutex_destroy(&m->m_deliver_lock);
	pthread_mutex_destroy(&m->m_cb_lock);
	pthread_mutex_destroy(&m->m_timer_lock);
	pthread_mutex_destroy(&m->m_slot_lock);
	free(m);
}

int ry_manager_create(const struct ry_config *cfg, struct ry_manager **mgr_p)
{
	struct ry_config c;
	struct ry_manager *m;
	unsigned i;
	int ret;

	const char *why = "no config";

	if (!cfg || !mgr_p)
		return -EINVAL;
	if (ry__config_adopt(cfg, &c, &why)) {
		RY_ERR("mgr", "%s", why);
		return -EINVAL;
	}
	ret = adopt_config(&c);
	if (ret)
		return ret;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->m_conn_up = &conn_up;
	pthread_mutex_init(&m->m_lock, NULL);
	pthread_mutex_init(&m->m_dq_lock, NULL);
	pthread_mutex_init(&m->m_deliver_lock, NULL);
	pthread_mutex_init(&m->m_cb_lock, NULL);
	pthread_mutex_init(&m->m_timer_lock, NULL);
	pthread_mutex_init(&m->m_slot_lock, NULL);
	/* every slot's, so that a reload can add rails (reload.c); its
	 * manager and index never change, and a rail thread reads them
	 * without a lock while the control thread opens the rail again
	 * (rail_life.c) */
	for (i = 0; i < RY_MAX_RAILS; i++) {
		pthread_mutex_init(&m->m_rails[i].lr_lock, NULL);
		m->m_rails[i].lr_mgr = m;
		m->m_rails[i].lr_idx = i;
	}
	m->m_listen_fd = m->m_timer_fd = m->m_wake_fd = m->m_epfd = -1;
	m->m_rail_epfd = -1;
	m->m_cfg = c;
	m->m_cfg.peers = NULL;
	m->m_cfg.n_peers = 0;
	if (cfg->n_peers) {
		m->m_cfg.peers = calloc(cfg->n_peers, sizeof(*cfg->peers));
		if (!m->m_cfg.peers) {
			ret = -ENOMEM;
			goto err;
		}
		memcpy(m->m_cfg.peers, cfg->peers,
		       cfg->n_peers * sizeof(*cfg->peers));
		m->m_cfg.n_peers = cfg->n_peers;
	}
	m->m_node = ry__rand64() | 1;
	ry__list_init(&m->m_tpeers);
	ry__list_init(&m->m_reapq);
	ry__list_init(&m->m_ctl_pending);
	ret = ry__peer_index_init(m);
	if (!ret)
		ret = ry__hidx_init(&m->m_ctl_src);
	if (ret)
		goto err;
	ry__mgr_timing(m);
	ret = ctx_init(m);
	if (ret)
		goto err;

	m->m_epfd = epoll_create1(EPOLL_CLOEXEC);
	m->m_rail_epfd = epoll_create1(EPOLL_CLOEXEC);
	m->m_timer_fd =
	    timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	m->m_wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (m->m_epfd < 0 || m->m_rail_epfd < 0 || m->m_timer_fd < 0 ||
	    m->m_wake_fd < 0) {
		ret = -errno;
		RY_ERR("mgr", "epoll/timerfd/eventfd: %m");
		goto err;
	}
	m->m_timer_tag.ft_kind = FDK_TIMER;
	m->m_wake_tag.ft_kind = FDK_WAKE;
	ry__fd_watch(m, m->m_timer_fd, &m->m_timer_tag, false);
	ry__fd_watch(m, m->m_wake_fd, &m->m_wake_tag, false);

	m->m_nrails = m->m_cfg.n_rails;
	m->m_rail_life = ry__rail_life_run;
	for (i = 0; i < m->m_nrails; i++) {
		ret = ry__rail_life_create(m, i, &m->m_cfg.rails[i]);
		if (ret)
			goto err;
	}
	atomic_store(&m->m_nslots, m->m_nrails);
	ret = ry__msg_slots_setup(m);
	if (!ret)
		ret = ry__probe_setup(m);
	if (ret)
		goto err;
	ret = ry__ctl_listen(m, &ctl_ops);
	if (ret)
		goto err;
	ry__timer_arm(m);
	RY_INFO("mgr", "node %s: %d of %u rails open, control %s",
		m->m_cfg.node, ry_rail_count(m), m->m_nrails, m->m_listen_addr);
	if (!ry_rail_count(m))
		RY_WARN("mgr", "node %s: no rail is open; waiting for one",
			m->m_cfg.node);
	*mgr_p = m;
	return 0;

err:
	teardown(m);
	return ret;
}

int ry_manager_create_from_file(const char *path, struct ry_manager **mgr_p)
{
	struct ry_config *cfg;
	int ret;

	if (!path || !mgr_p)
		return -EINVAL;
	ret = ry_config_load(path, &cfg, log_config_error, NULL);
	if (ret) {
		RY_ERR("mgr", "%s: cannot load config: %s", path,
		       strerror(-ret));
		return ret;
	}
	/* A file is how an operator speaks: its log section counts, as it
	 * does for the CLI.  A hand-built config does not touch the
	 * process-wide log (the application may have set it itself). */
	ry_log_set_level(cfg->log.level);
	ry_log_use_syslog(cfg->log.syslog);
	ret = ry_manager_create(cfg, mgr_p);
	ry_config_free(cfg);
	return ret;
}

void ry_manager_destroy(struct ry_manager *m)
{
	struct ry__delivery *dv;
	struct ry_peer *p;

	if (!m)
		return;
	ry_progress_thread_stop(m);
	ry__lock_and_run_leftovers(m);
	m->m_closing = true;
	/* before any connection goes: the peers close theirs to us as
	 * closed, not as failed */
	ry__ctl_goodbye_all(m);
	for (p = m->m_peers; p; p = p->pr_next)
		ry__op_cancel_all(p);
	dv = m->m_dv_head;
	ry__sq_init(m->m_dv_head, m->m_dv_tail);
	ry__deliver_queue(m);
	ry__unlock(m);
	/* canceled ops' callbacks; undelivered messages are dropped */
	while (dv) {
		struct ry__delivery *next = dv->dv_next;

		free(dv);
		dv = next;
	}
	ry__deliver(m);
	teardown(m);
}

int ry_manager_control_addr(struct ry_manager *m, char *buf, size_t len)
{
	if (!m || !buf)
		return -EINVAL;
	if ((size_t)snprintf(buf, len, "%s", m->m_listen_addr) >= len)
		return -ENOSPC;
	return 0;
}

/* The keys are auth.c's; the lock is taken here, above it. */
int ry_manager_key_ids(struct ry_manager *m, char *buf, size_t len,
		       uint32_t *overlap_s)
{
	unsigned char ids[2][RY__KEY_ID];
	uint64_t end, now = ry__now_ns();
	unsigned n;

	if (!m || !buf || !len)
		return -EINVAL;
	ry__lock_and_run_leftovers(m);
	n = ry__auth_ids(m, ids, 2);
	end = ry__auth_overlap_end(m);
	ry__unlock(m);
	if (len < n * (2 * RY__KEY_ID + 1))
		return -ENOSPC;
	ry__auth_ids_str(ids, n, buf, len);
	if (overlap_s)
		*overlap_s =
		    end > now
			? (uint32_t)((end - now + 999999999ull) / 1000000000ull)
			: 0;
	return (int)n;
}

/* ---- rails by name ---- */

static struct ry__lrail *lrail(struct ry_manager *m, const char *name)
{
	unsigned i;

	for (i = 0; name && i < m->m_nrails; i++)
		if (ry__lrail_live(&m->m_rails[i]) &&
		    !strcmp(m->m_rails[i].lr_cfg.name, name))
			return &m->m_rails[i];
	return NULL;
}

struct ry_rail *ry__mgr_rail(struct ry_manager *m, const char *name)
{
	struct ry__lrail *lr = lrail(m, name);

	return lr ? lr->lr_rail : NULL;
}

/* The application sees the live rails only, numbered without holes;
 * under the lock: rails come and go by themselves (rail_life.c). */
int ry_rail_count(struct ry_manager *m)
{
	int n = 0;

	if (!m)
		return -EINVAL;
	ry__lock_and_run_leftovers(m);
	for (unsigned i = 0; i < m->m_nrails; i++)
		n += ry__lrail_live(&m->m_rails[i]);
	ry__unlock(m);
	return n;
}

const char *ry_rail_name(struct ry_manager *m, unsigned index)
{
	const char *name = NULL;

	if (!m)
		return NULL;
	ry__lock_and_run_leftovers(m);
	for (unsigned i = 0; !name && i < m->m_nrails; i++)
		if (ry__lrail_live(&m->m_rails[i]) && !index--)
			name = m->m_rails[i].lr_cfg.name;
	ry__unlock(m);
	return name;
}

int ry_rail_fault(struct ry_manager *m, const char *rail,
		  const struct ry_fault_spec *spec)
{
	struct ry_fault f = {0};

	if (!m || !spec || spec->drop < 0 || spec->drop > 1 ||
	    spec->duplicate < 0 || spec->duplicate > 1 || spec->reorder < 0 ||
	    spec->reorder > 1 || spec->corrupt < 0 || spec->corrupt > 1)
		return -EINVAL;
	f.drop_all = spec->drop_all;
	f.drop = spec->drop;
	f.duplicate = spec->duplicate;
	f.reorder = spec->reorder;
	f.corrupt = spec->corrupt;
	f.delay_us = spec->delay_us;
	return ry__rail_fault(m, rail, &f);
}

int ry__rail_fault(struct ry_manager *m, const char *rail,
		   const struct ry_fault *f)
{
	struct ry__lrail *lr;
	int ret = -ENOENT;

	ry__lock_and_run_leftovers(m);
	lr = lrail(m, rail);
	if (lr) {
		pthread_mutex_lock(&lr->lr_lock);
		ret = ry__rail_set_fault(lr->lr_rail, f);
		pthread_mutex_unlock(&lr->lr_lock);
	}
	ry__unlock(m);
	ry__kick(m);
	return ret;
}

int ry_rail_link(struct ry_manager *m, const char *rail, bool up)
{
	struct ry__lrail *lr;
	int ret;

	if (!m)
		return -EINVAL;
	ry__lock_and_run_leftovers(m);
	lr = lrail(m, rail);
	ret = -ENOENT;
	if (lr) {
		pthread_mutex_lock(&lr->lr_lock);
		ret = ry__rail_set_link(lr->lr_rail,
					up ? RY_LINK_UP : RY_LINK_DOWN);
		pthread_mutex_unlock(&lr->lr_lock);
		/* the rail reports the change as an event: let it run */
		atomic_store(&lr->lr_kick, true);
	}
	ry__unlock(m);
	ry__kick(m);
	return ret;
}
