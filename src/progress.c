// SPDX-License-Identifier: BSD-2-Clause
/*
 * Progress: ry_progress() (manual and threaded run the same one) and the
 * progress thread; each rail's events (link up and down, QP fatal) and its
 * completion queue; the completion of a work request, whose success path
 * is here and whose error path is replay's (ry__wr_failed); and delivery:
 * completions, messages and events are queued under m_lock and handed to
 * the application's callbacks only after it is dropped, so a callback may
 * call back into the manager.
 *
 * The lock order and ownership rules are in src/manager.h (LOCKING).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/epoll.h>

#include "src/manager.h"

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

struct ry_event *ry__queue_event(struct ry_manager *m, enum ry_event_type t,
				 struct ry__lrail *lr, struct ry_peer *p,
				 const char *reason, uint64_t time_ns)
{
	struct ry__delivery *dv;

	if (m->m_closing)
		return NULL;
	dv = dv_new(m, 0);
	if (!dv)
		return NULL;
	dv->dv_kind = 1;
	snprintf(dv->dv_rail, sizeof(dv->dv_rail), "%s",
		 lr ? lr->lr_cfg.name : "");
	if (p)
		snprintf(dv->dv_peer_name, sizeof(dv->dv_peer_name), "%s",
			 p->pr_name);
	snprintf(dv->dv_reason, sizeof(dv->dv_reason), "%s", reason);
	dv->dv_ev.type = t;
	dv->dv_ev.time_ns = time_ns;
	dv->dv_peer = p;
	if (p)
		p->pr_app_seen = true;
	return &dv->dv_ev;
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
	p->pr_app_seen = true;
	dv->dv_msg.type = t;
	dv->dv_msg.len = len;
	dv->dv_msg.notify = notify;
	memcpy(dv->dv_data, data, len);
	dv->dv_msg.data = dv->dv_data;
}

/* Run the application's callbacks; called without m_lock. */
int ry__deliver(struct ry_manager *m, struct ry__op *done,
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
			dv->dv_ev.peer =
			    dv->dv_peer_name[0] ? dv->dv_peer_name : NULL;
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
			ry__conn_link_failed(&p->pr_conns[lr->lr_idx],
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
			ry__conn_link_failed(c, "QP fatal error", ev->time_ns);
		break;
	}
}

void ry__poll_rail(struct ry__lrail *lr, uint64_t now)
{
	struct ry_manager *m = lr->lr_mgr;
	struct ry_wc wc[64];
	int n, i, rounds = 0;

	do {
		n = ry__rail_poll_cq(lr->lr_rail, wc, 64);
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

static void wr_succeeded(struct ry__wr *w, uint64_t now)
{
	struct ry__conn *c = w->wr_conn;
	struct ry_peer *p = c->cn_peer;
	struct ry__op *op = w->wr_op;

	c->cn_last_ok_ns = now;
	switch (w->wr_kind) {
	case WRK_FRAG:
		c->cn_cnt.bytes += w->wr_bytes;
		c->cn_cnt.fragments += w->wr_n;
		ry__conn_drained(c, w->wr_bytes, now);
		if (p->pr_resume_from_ns &&
		    w->wr_post_ns >= p->pr_resume_from_ns &&
		    c->cn_state == CONN_ACTIVE) {
			struct ry_counters *rc = &p->pr_resume_conn->cn_cnt;
			uint64_t d = ry__since(now, p->pr_resume_from_ns);

			rc->resume_count++;
			rc->resume_ns_total += d;
			if (d > rc->resume_ns_max)
				rc->resume_ns_max = d;
			p->pr_resume_from_ns = 0;
		}
		if (w->wr_replay)
			ry__conn_resumed(w, now);
		ry__op_frags_done(op, w->wr_n);
		break;
	case WRK_MSG:
		c->cn_cnt.messages++;
		c->cn_cnt.bytes += w->wr_bytes;
		if (op->op_replayed)
			ry__conn_resumed(w, now);
		ry__op_msg_done(op);
		break;
	case WRK_HEARTBEAT:
		c->cn_hb_out = false;
		break;
	case WRK_PROBE:
		if (c->cn_state == CONN_PROBING)
			ry__conn_activate(c, now);
		break;
	}
}

void ry__wr_complete(struct ry_manager *m, struct ry__wr *w,
		     const struct ry_wc *wc, uint64_t now)
{
	struct ry__conn *c = w->wr_conn;
	struct ry_peer *p = c->cn_peer;
	struct ry__op *op = w->wr_op;

	ry__list_del(&w->wr_link);
	c->cn_out_wrs--;
	c->cn_out_bytes -= w->wr_bytes;
	if (op)
		op->op_posted--;

	if (wc->status == RY_WC_SUCCESS)
		wr_succeeded(w, now);
	else
		ry__wr_failed(w, wc);
	ry__pool_put(&m->m_wr_pool, w);
	if (c->cn_state == CONN_DRAINING)
		ry__conn_drained_check(c, now);
	ry__peer_dirty(p);
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
	/*
	 * Back from a stall of our own (a starved machine, an application
	 * busy elsewhere): the peers, starved alike, may not have answered
	 * yet, so silence is not judged in this round.  Never two rounds in
	 * a row, so an application that calls us rarely still detects a dead
	 * peer, one call later.
	 */
	m->m_hb_defer =
	    m->m_last_progress_ns && !m->m_hb_deferred &&
	    ry__since(now, m->m_last_progress_ns) > m->m_timeout_ns / 2;
	m->m_hb_deferred = m->m_hb_defer;
	m->m_last_progress_ns = now;
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

		ry__rail_progress(lr->lr_rail);
		while (!ry__rail_get_event(lr->lr_rail, &rev))
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
	return ry__deliver(m, done, dv);
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
