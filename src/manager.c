// SPDX-License-Identifier: BSD-2-Clause
/*
 * The rail manager: create and destroy, the progress engine (manual and
 * threaded run the same ry_progress()), the event fd, delivery of
 * callbacks outside the lock, and fault injection by rail name.
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
#include <sys/eventfd.h>
#include <sys/timerfd.h>

#include "config/config_int.h"
#include "src/manager.h"

_Static_assert(sizeof(struct ry__mhdr) == RY__MSG_HDR, "message header");

/* ---- fds ---- */

void ry__fd_watch(struct ry_manager *m, int fd, struct ry__fdtag *tag, bool out)
{
	struct epoll_event ev = {
	    .events = EPOLLIN | (out ? EPOLLOUT : 0),
	    .data.ptr = tag,
	};

	if (epoll_ctl(m->m_epfd, EPOLL_CTL_MOD, fd, &ev) && errno == ENOENT &&
	    epoll_ctl(m->m_epfd, EPOLL_CTL_ADD, fd, &ev))
		RY_ERR("mgr", "epoll_ctl add fd %d: %m", fd);
}

void ry__fd_unwatch(struct ry_manager *m, int fd)
{
	epoll_ctl(m->m_epfd, EPOLL_CTL_DEL, fd, NULL);
}

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

static void drain_fd(int fd)
{
	uint64_t v;

	if (read(fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		RY_DBG("mgr", "read fd %d: %m", fd);
}

/* ---- delivery ---- */

static struct ry__delivery *dv_new(struct ry_manager *m, size_t extra)
{
	struct ry__delivery *dv = calloc(1, sizeof(*dv) + extra);

	if (!dv)
		return NULL;
	ry__sq_push_tail(m->m_dv_head, m->m_dv_tail, dv, dv_next);
	return dv;
}

void ry__queue_event(struct ry_manager *m, enum ry_event_type t,
		     struct ry__lrail *lr, struct ry_peer *p,
		     const char *reason, uint64_t time_ns)
{
	struct ry__delivery *dv;

	if (m->m_closing)
		return;
	dv = dv_new(m, 0);
	if (!dv)
		return;
	dv->dv_kind = 1;
	snprintf(dv->dv_rail, sizeof(dv->dv_rail), "%s", lr->lr_cfg.name);
	if (p)
		snprintf(dv->dv_peer_name, sizeof(dv->dv_peer_name), "%s",
			 p->pr_name);
	snprintf(dv->dv_reason, sizeof(dv->dv_reason), "%s", reason);
	dv->dv_ev.type = t;
	dv->dv_ev.time_ns = time_ns;
	dv->dv_peer = p;
}

void ry__queue_message(struct ry_manager *m, struct ry_peer *p,
		       enum ry_msg_type t, const void *data, size_t len,
		       uint64_t notify)
{
	struct ry__delivery *dv = dv_new(m, len);

	if (!dv) {
		RY_ERR("mgr", "peer %s: message dropped: out of memory",
		       p->pr_name);
		return;
	}
	dv->dv_kind = 0;
	dv->dv_peer = p;
	dv->dv_msg.type = t;
	dv->dv_msg.len = len;
	dv->dv_msg.notify = notify;
	memcpy(dv->dv_data, data, len);
	dv->dv_msg.data = dv->dv_data;
}

/* Run the application's callbacks; called without m_lock. */
static int deliver(struct ry_manager *m, struct ry__op *done,
		   struct ry__delivery *dv)
{
	struct ry_completion cpl;
	struct ry__op *op, *first = done;
	ry_recv_fn rfn;
	ry_event_fn efn;
	void *rarg, *earg;
	int n = 0;

	for (op = done; op; op = op->op_q_next) {
		ry__op_fill(&cpl, op);
		op->op_cb(&cpl, op->op_ctx);
		n++;
	}
	if (first) {
		pthread_mutex_lock(&m->m_lock);
		while ((op = first)) {
			first = op->op_q_next;
			ry__op_release(m, op);
		}
		pthread_mutex_unlock(&m->m_lock);
	}
	if (!dv)
		return n;
	pthread_mutex_lock(&m->m_cb_lock);
	rfn = m->m_recv_fn;
	rarg = m->m_recv_arg;
	efn = m->m_event_fn;
	earg = m->m_event_arg;
	pthread_mutex_unlock(&m->m_cb_lock);
	while (dv) {
		struct ry__delivery *next = dv->dv_next;

		if (dv->dv_kind == 0 && rfn) {
			rfn(dv->dv_peer, &dv->dv_msg, rarg);
			n++;
		} else if (dv->dv_kind == 1 && efn) {
			dv->dv_ev.rail = dv->dv_rail;
			dv->dv_ev.peer = dv->dv_peer ? dv->dv_peer_name : NULL;
			dv->dv_ev.reason = dv->dv_reason;
			efn(&dv->dv_ev, earg);
		}
		free(dv);
		dv = next;
	}
	return n;
}

void ry_set_recv_cb(struct ry_manager *m, ry_recv_fn fn, void *arg)
{
	if (!m)
		return;
	pthread_mutex_lock(&m->m_cb_lock);
	m->m_recv_fn = fn;
	m->m_recv_arg = arg;
	pthread_mutex_unlock(&m->m_cb_lock);
}

void ry_set_event_cb(struct ry_manager *m, ry_event_fn fn, void *arg)
{
	if (!m)
		return;
	pthread_mutex_lock(&m->m_cb_lock);
	m->m_event_fn = fn;
	m->m_event_arg = arg;
	pthread_mutex_unlock(&m->m_cb_lock);
}

/* ---- progress ---- */

static void rail_event(struct ry__lrail *lr, const struct ry_rail_event *ev,
		       uint64_t now)
{
	struct ry_manager *m = lr->lr_mgr;
	struct ry_peer *p;
	struct ry__conn *c;

	switch (ev->type) {
	case RY_RAIL_EV_LINK_DOWN:
	case RY_RAIL_EV_DEVICE_FATAL:
		if (lr->lr_link == RY_LINK_DOWN)
			break;
		lr->lr_link = RY_LINK_DOWN;
		RY_WARN("mgr", "rail %s: link down", lr->lr_cfg.name);
		for (p = m->m_peers; p; p = p->pr_next)
			ry__conn_mark_failed(&p->pr_conns[lr->lr_idx],
					     "local link down", ev->time_ns);
		ry__queue_event(m, RY_EV_RAIL_DOWN, lr, NULL, "link down",
				ev->time_ns);
		break;
	case RY_RAIL_EV_LINK_UP:
		if (lr->lr_link == RY_LINK_UP)
			break;
		lr->lr_link = RY_LINK_UP;
		RY_INFO("mgr", "rail %s: link up", lr->lr_cfg.name);
		for (p = m->m_peers; p; p = p->pr_next) {
			c = &p->pr_conns[lr->lr_idx];
			if (c->cn_state == CONN_BACKOFF)
				c->cn_deadline_ns =
				    now + ry__rand64() % (m->m_tick_ns + 1);
			c->cn_backoff_ms = m->m_cfg.failover.reconnect_min_ms;
		}
		ry__queue_event(m, RY_EV_RAIL_UP, lr, NULL, "", ev->time_ns);
		break;
	case RY_RAIL_EV_QP_FATAL:
		c = ry__conn_by_qpn(lr, ev->qpn);
		if (c)
			ry__conn_mark_failed(c, "QP fatal error", ev->time_ns);
		break;
	}
}

void ry__poll_rail(struct ry__lrail *lr, uint64_t now)
{
	struct ry_manager *m = lr->lr_mgr;
	struct ry_wc wc[64];
	int n, i, rounds = 0;

	do {
		n = ry_rail_poll_cq(lr->lr_rail, wc, 64);
		for (i = 0; i < n; i++) {
			if (wc[i].opcode == RY_WC_RECV ||
			    wc[i].opcode == RY_WC_RECV_RDMA_IMM)
				ry__on_recv(lr, &wc[i], now);
			else
				ry__wr_complete(
				    m, (struct ry__wr *)(uintptr_t)wc[i].wr_id,
				    &wc[i], now);
		}
	} while (n == 64 && ++rounds < 64);
}

static int progress_locked(struct ry_manager *m, struct ry__op **done,
			   struct ry__delivery **dv)
{
	struct epoll_event evs[32];
	struct ry_rail_event rev;
	struct ry_peer *p;
	uint64_t now;
	unsigned i;
	int n;

	now = ry__now_ns();
	n = epoll_wait(m->m_epfd, evs, 32, 0);
	for (i = 0; n > 0 && i < (unsigned)n; i++) {
		struct ry__fdtag *t = evs[i].data.ptr;

		switch (t->ft_kind) {
		case FDK_LISTEN:
			ry__ctl_accept(m);
			break;
		case FDK_CTL:
			ry__ctl_io(t->ft_ptr, evs[i].events);
			break;
		case FDK_TIMER:
			drain_fd(m->m_timer_fd);
			break;
		case FDK_WAKE:
			drain_fd(m->m_wake_fd);
			break;
		case FDK_RAIL:
			break; /* every rail is polled below */
		}
	}
	for (i = 0; i < m->m_nrails; i++) {
		struct ry__lrail *lr = &m->m_rails[i];

		ry_rail_progress(lr->lr_rail);
		while (!ry_rail_get_event(lr->lr_rail, &rev))
			rail_event(lr, &rev, now);
		ry__poll_rail(lr, now);
	}
	ry__replay_run(m);
	if (now >= m->m_next_tick_ns) {
		m->m_next_tick_ns = now + m->m_tick_ns;
		ry__timers_run(m, now);
		ry__replay_run(m);
	}
	while ((p = m->m_dirty)) {
		m->m_dirty = p->pr_dnext;
		p->pr_dirty = false;
		ry__stripe(p);
	}
	ry__ctl_reap(m);
	*done = m->m_done_head;
	ry__sq_init(m->m_done_head, m->m_done_tail);
	*dv = m->m_dv_head;
	ry__sq_init(m->m_dv_head, m->m_dv_tail);
	return 0;
}

int ry_progress(struct ry_manager *m)
{
	struct ry__delivery *dv;
	struct ry__op *done;

	if (!m)
		return -EINVAL;
	pthread_mutex_lock(&m->m_lock);
	if (m->m_closing) {
		pthread_mutex_unlock(&m->m_lock);
		return -ESHUTDOWN;
	}
	progress_locked(m, &done, &dv);
	pthread_mutex_unlock(&m->m_lock);
	if (!done && !dv)
		return 0;
	return deliver(m, done, dv);
}

int ry_event_fd(struct ry_manager *m)
{
	return m ? m->m_epfd : -EINVAL;
}

static void *progress_main(void *arg)
{
	struct ry_manager *m = arg;
	struct epoll_event ev;
	int ms = (int)(m->m_tick_ns / 1000000) + 1;

	for (;;) {
		pthread_mutex_lock(&m->m_lock);
		if (m->m_thread_stop) {
			pthread_mutex_unlock(&m->m_lock);
			break;
		}
		pthread_mutex_unlock(&m->m_lock);
		epoll_wait(m->m_epfd, &ev, 1, ms);
		ry_progress(m);
	}
	return NULL;
}

int ry_progress_thread_start(struct ry_manager *m)
{
	int ret;

	if (!m)
		return -EINVAL;
	pthread_mutex_lock(&m->m_lock);
	if (m->m_thread_on) {
		pthread_mutex_unlock(&m->m_lock);
		return -EALREADY;
	}
	m->m_thread_stop = false;
	ret = -pthread_create(&m->m_thread, NULL, progress_main, m);
	if (!ret)
		m->m_thread_on = true;
	pthread_mutex_unlock(&m->m_lock);
	return ret;
}

void ry_progress_thread_stop(struct ry_manager *m)
{
	uint64_t one = 1;

	if (!m)
		return;
	pthread_mutex_lock(&m->m_lock);
	if (!m->m_thread_on) {
		pthread_mutex_unlock(&m->m_lock);
		return;
	}
	m->m_thread_stop = true;
	pthread_mutex_unlock(&m->m_lock);
	if (write(m->m_wake_fd, &one, sizeof(one)) < 0)
		RY_DBG("mgr", "wake: %m");
	pthread_join(m->m_thread, NULL);
	pthread_mutex_lock(&m->m_lock);
	m->m_thread_on = false;
	pthread_mutex_unlock(&m->m_lock);
}

/* ---- create / destroy ---- */

static void log_config_error(const struct ry_config_error *e, void *arg)
{
	(void)arg;
	RY_ERR("config", "%s:%d: %s%s%s", e->file, e->line, e->message,
	       e->hint && e->hint[0] ? "; " : "", e->hint ? e->hint : "");
}

/*
 * A program may hand over a struct it zeroed: railyard.h promises defaults
 * for zero sizes and times, a node name and a loopback control address.
 * The rest is the loader's own validation, so a config passes one set of
 * rules whether it came from a file or was built by hand.
 */
static int adopt_config(struct ry_config *c)
{
	ry__opt_fill_zero(c);
	if (!c->node[0])
		snprintf(c->node, sizeof(c->node), "node-%08x",
			 (unsigned)ry__rand64());
	if (!c->control[0])
		snprintf(c->control, sizeof(c->control), "127.0.0.1:0");
	return ry_config_validate(c, log_config_error, NULL) ? -EINVAL : 0;
}

static int open_rail(struct ry_manager *m, unsigned i)
{
	struct ry__lrail *lr = &m->m_rails[i];
	int ret;

	lr->lr_mgr = m;
	lr->lr_idx = i;
	lr->lr_cfg = m->m_cfg.rails[i];
	ret = ry__rail_open(&lr->lr_cfg, &lr->lr_rail);
	if (ret) {
		RY_ERR("mgr", "rail %s: open: %s", lr->lr_cfg.name,
		       strerror(-ret));
		return ret;
	}
	ret = ry_rail_query(lr->lr_rail, &lr->lr_attr);
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
	ret = ry_rail_alloc_pd(lr->lr_rail, &lr->lr_pd);
	if (ret)
		return ret;
	m->m_rail_tag[i].ft_kind = FDK_RAIL;
	m->m_rail_tag[i].ft_ptr = lr;
	ret = ry_rail_fd(lr->lr_rail);
	if (ret >= 0)
		ry__fd_watch(m, ret, &m->m_rail_tag[i], false);
	return ry__recv_setup(lr);
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

	while ((op = m->m_poll_head)) {
		ry__sq_pop_head(m->m_poll_head, m->m_poll_tail, op_q_next);
		ry__op_release(m, op);
	}
	while ((p = m->m_peers)) {
		m->m_peers = p->pr_next;
		for (j = 0; j < m->m_nrails; j++)
			ry__conn_destroy_qp(&p->pr_conns[j]);
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
		void *addr = rg->rg_addr;

		ry__region_dereg(rg);
		if (internal)
			free(addr);
	}
	for (i = 0; i < m->m_nrails; i++) {
		struct ry__lrail *lr = &m->m_rails[i];

		if (!lr->lr_rail)
			continue;
		ry__recv_teardown(lr);
		ry_rail_dealloc_pd(lr->lr_pd);
		ry_rail_close(lr->lr_rail);
	}
	/* WRs and ranges of canceled ops were revoked with their QPs */
	m->m_wr_pool.pl_in_use = 0;
	m->m_range_pool.pl_in_use = 0;
	ry__pool_fini(&m->m_op_pool);
	ry__pool_fini(&m->m_wr_pool);
	ry__pool_fini(&m->m_range_pool);
	if (m->m_timer_fd >= 0)
		close(m->m_timer_fd);
	if (m->m_wake_fd >= 0)
		close(m->m_wake_fd);
	if (m->m_epfd >= 0)
		close(m->m_epfd);
	free_cfg_peers(&m->m_cfg);
	pthread_mutex_destroy(&m->m_lock);
	pthread_mutex_destroy(&m->m_cb_lock);
	free(m);
}

int ry_manager_create(const struct ry_config *cfg, struct ry_manager **mgr_p)
{
	struct ry_config c;
	struct ry_manager *m;
	uint64_t shortest;
	unsigned i;
	int ret;

	if (!cfg || !mgr_p)
		return -EINVAL;
	c = *cfg;
	ret = adopt_config(&c);
	if (ret)
		return ret;
	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	pthread_mutex_init(&m->m_lock, NULL);
	pthread_mutex_init(&m->m_cb_lock, NULL);
	m->m_listen_fd = m->m_timer_fd = m->m_wake_fd = m->m_epfd = -1;
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
	m->m_hb_ns = m->m_cfg.failover.heartbeat_ms * 1000000ull;
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
	ry__pool_init(&m->m_op_pool, sizeof(struct ry__op));
	ry__pool_init(&m->m_wr_pool, sizeof(struct ry__wr));
	ry__pool_init(&m->m_range_pool, sizeof(struct ry__range));

	m->m_epfd = epoll_create1(EPOLL_CLOEXEC);
	m->m_timer_fd =
	    timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	m->m_wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (m->m_epfd < 0 || m->m_timer_fd < 0 || m->m_wake_fd < 0) {
		ret = -errno;
		RY_ERR("mgr", "epoll/timerfd/eventfd: %m");
		goto err;
	}
	m->m_timer_tag.ft_kind = FDK_TIMER;
	m->m_wake_tag.ft_kind = FDK_WAKE;
	ry__fd_watch(m, m->m_timer_fd, &m->m_timer_tag, false);
	ry__fd_watch(m, m->m_wake_fd, &m->m_wake_tag, false);

	m->m_nrails = m->m_cfg.n_rails;
	for (i = 0; i < m->m_nrails; i++) {
		ret = open_rail(m, i);
		if (ret)
			goto err;
	}
	ret = ry__msg_slots_setup(m);
	if (ret)
		goto err;
	ret = ry__ctl_listen(m);
	if (ret)
		goto err;
	ry__timer_arm(m);
	RY_INFO("mgr", "node %s: %u rails, control %s", m->m_cfg.node,
		m->m_nrails, m->m_listen_addr);
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
	ret = ry_manager_create(cfg, mgr_p);
	ry_config_free(cfg);
	return ret;
}

void ry_manager_destroy(struct ry_manager *m)
{
	struct ry__delivery *dv;
	struct ry__op *done;
	struct ry_peer *p;

	if (!m)
		return;
	ry_progress_thread_stop(m);
	pthread_mutex_lock(&m->m_lock);
	m->m_closing = true;
	for (p = m->m_peers; p; p = p->pr_next)
		ry__op_cancel_all(p);
	done = m->m_done_head;
	ry__sq_init(m->m_done_head, m->m_done_tail);
	dv = m->m_dv_head;
	ry__sq_init(m->m_dv_head, m->m_dv_tail);
	pthread_mutex_unlock(&m->m_lock);
	/* canceled ops' callbacks; undelivered messages are dropped */
	while (dv) {
		struct ry__delivery *next = dv->dv_next;

		free(dv);
		dv = next;
	}
	deliver(m, done, NULL);
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

/* ---- rails by name ---- */

static struct ry__lrail *lrail(struct ry_manager *m, const char *name)
{
	unsigned i;

	for (i = 0; name && i < m->m_nrails; i++)
		if (!strcmp(m->m_rails[i].lr_cfg.name, name))
			return &m->m_rails[i];
	return NULL;
}

struct ry_rail *ry__mgr_rail(struct ry_manager *m, const char *name)
{
	struct ry__lrail *lr = lrail(m, name);

	return lr ? lr->lr_rail : NULL;
}

int ry_rail_count(struct ry_manager *m)
{
	return m ? (int)m->m_nrails : -EINVAL;
}

const char *ry_rail_name(struct ry_manager *m, unsigned index)
{
	return m && index < m->m_nrails ? m->m_rails[index].lr_cfg.name : NULL;
}

int ry_rail_fault(struct ry_manager *m, const char *rail,
		  const struct ry_fault_spec *spec)
{
	struct ry_fault f = {0};
	struct ry__lrail *lr;
	int ret;

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
	pthread_mutex_lock(&m->m_lock);
	lr = lrail(m, rail);
	ret = lr ? ry_rail_set_fault(lr->lr_rail, &f) : -ENOENT;
	pthread_mutex_unlock(&m->m_lock);
	return ret;
}

int ry_rail_link(struct ry_manager *m, const char *rail, bool up)
{
	struct ry__lrail *lr;
	int ret;

	if (!m)
		return -EINVAL;
	pthread_mutex_lock(&m->m_lock);
	lr = lrail(m, rail);
	ret = lr ? ry_rail_set_link(lr->lr_rail, up ? RY_LINK_UP : RY_LINK_DOWN)
		 : -ENOENT;
	pthread_mutex_unlock(&m->m_lock);
	return ret;
}
