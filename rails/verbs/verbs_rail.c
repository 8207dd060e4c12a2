// SPDX-License-Identifier: BSD-2-Clause
/*
 * The verbs rail: one port of an HCA (InfiniBand or RoCE, rxe included)
 * behind the rail ops table.  This file opens and closes the rail, answers
 * query, owns the rail fd and turns async events into rail events.
 *
 * The rail fd is an epoll fd over the completion channel (every CQ of the
 * rail is on it) and the device's async fd, both O_NONBLOCK: it is
 * readable while either has something for progress(), which takes the CQ
 * events, re-arms each CQ that had one and queues the async events for
 * get_event().  After progress() the caller polls its CQs until they are
 * empty: completions that arrived before the re-arm raise no event.
 *
 * Where this rail differs from the soft rail (tests/hw shows each on rxe):
 *   - QPNs and rkeys come from the HCA, not getrandom(); only the PSN is
 *     ours to randomise.  cookie is 0.
 *   - the ACK timeout is 4.096 us * 2^n, rounded up (20 ms -> 33.6 ms);
 *     retry_cnt and rnr_retry of 7 are refused (-EINVAL): "forever".
 *   - the path MTU is an IB size (256..4096): rxe on a 1500-byte netdev
 *     says 1024.
 *   - error statuses vary by HCA: rxe reports a bad lkey as FLUSHED, a
 *     receive too small as REM_OP (sender) and GENERAL_ERR (receiver).
 *   - a port event concerns the port, and a veth or cable going down
 *     takes both ends' ports down: both rails see LINK_DOWN.
 *   - destroy_qp returns at once, but the ibv_qp lives on until the HCA
 *     is done with it (verbs_qp.c); a receive completion may still name
 *     it.  close() may block while the port is down (rxe).
 *   - modify_qp to RTR waits while the kernel resolves the peer's MAC
 *     (RoCE), up to 1 s.  rxe on a veth pair always takes the whole
 *     second for a neighbour not yet cached: the ARP reply lands before
 *     ib_core queues its request, and the wakeup is lost.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/epoll.h>
#include <arpa/inet.h>

#include "rails/verbs/discover.h"
#include "rails/verbs/verbs.h"
#include "rails/verbs/verbs_int.h"
#include "src/util/log.h"
#include "src/util/ring.h"

void ry__verbs_push_event(struct ry__verbs_rail *r,
			  enum ry_rail_event_type type, uint32_t qpn)
{
	struct ry_rail_event *ev;

	if (ry__ring_full(r->ev_head, r->ev_tail, RY__VERBS_EVENTS)) {
		/* The manager stopped reading events: keep the newest,
		 * which say what the rail is now. */
		if (!r->ev_dropped++)
			RY_WARN(
			    "verbs",
			    "rail %s: event queue full, dropping the oldest",
			    r->base.name);
		r->ev_head++;
	}
	ev = &r->events[ry__ring_slot(r->ev_tail++, RY__VERBS_EVENTS)];
	ev->type = type;
	ev->qpn = qpn;
	ev->time_ns = ry__now_ns();
}

static int set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);

	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
		return -errno;
	return 0;
}

static int mtu_bytes(enum ibv_mtu m)
{
	return 128 << m;
}

/* Find the configured port; say plainly what is wrong when it cannot be
 * used, listing what exists. */
static int find_port(const struct ry_rail_config *cfg,
		     struct ry__verbs_port *out)
{
	struct ry__verbs_port *ports = NULL;
	const struct ry__verbs_port *p;
	char why[512] = "", have[256] = "";
	int n, rc = 0;

	n = ry__verbs_discover(&ports, why, sizeof(why));
	if (n < 0) {
		RY_ERR("verbs", "rail %s: device discovery failed: %s",
		       cfg->name, strerror(-n));
		return n;
	}
	if (!n) {
		RY_ERR("verbs", "rail %s: %s", cfg->name, why);
		free(ports);
		return -ENODEV;
	}
	p = ry__verbs_find(ports, n, cfg->device, (int)cfg->port);
	if (!p) {
		size_t off = 0;

		for (int i = 0; i < n && off < sizeof(have); i++)
			off += (size_t)snprintf(have + off, sizeof(have) - off,
						"%s%s port %d", i ? ", " : "",
						ports[i].device, ports[i].port);
		RY_ERR("verbs",
		       "rail %s: no RDMA device '%s' with port %u (found: %s)",
		       cfg->name, cfg->device, cfg->port, have);
		rc = -ENODEV;
	} else if (strcmp(p->state, "ACTIVE")) {
		/* INIT/ARMED with the link up: on InfiniBand nobody has
		 * configured the port, i.e. no subnet manager runs */
		bool no_sm = strcmp(p->state, "DOWN") &&
			     !strcmp(p->phys_state, "LinkUp") &&
			     !strcmp(p->link_layer, "InfiniBand");

		RY_ERR("verbs",
		       "rail %s: %s port %d is %s (physical state %s)%s",
		       cfg->name, p->device, p->port, p->state, p->phys_state,
		       no_sm ? ": is a subnet manager (opensm) running?" : "");
		rc = -ENETDOWN;
	} else {
		*out = *p;
	}
	free(ports);
	return rc;
}

static int open_by_name(const char *name, struct ibv_context **ctx_p)
{
	struct ibv_device **list;
	struct ibv_context *ctx = NULL;
	int n = 0, rc = -ENODEV;

	list = ibv_get_device_list(&n);
	if (!list)
		return errno ? -errno : -ENODEV;
	for (int i = 0; i < n; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name)) {
			errno = 0;
			ctx = ibv_open_device(list[i]);
			rc = ctx ? 0 : errno ? -errno : -ENODEV;
			break;
		}
	ibv_free_device_list(list);
	if (!rc)
		*ctx_p = ctx;
	return rc;
}

static int pick_gid(struct ry__verbs_rail *r, const struct ry_rail_config *cfg)
{
	char why[256];
	uint32_t idx;
	int rc;

	/* iWARP connects by IP through rdma_cm (verbs_cm.c): its GID is
	 * the netdev's MAC, nothing to choose; a gid_index the port does
	 * not have is refused all the same, as on every other device */
	if (r->ctx->device->transport_type == IBV_TRANSPORT_IWARP) {
		if (cfg->gid_index > 0) {
			RY_ERR("verbs",
			       "rail %s: gid_index %d: an iWARP port has only "
			       "GID 0",
			       cfg->name, cfg->gid_index);
			return -ENOENT;
		}
		return ibv_query_gid(r->ctx, r->port, 0, &r->gid) ? -EIO : 0;
	}
	rc = ry__verbs_pick_gid(r->ctx, r->port, cfg->gid_index, cfg->address,
				&idx, r->gid.raw, why, sizeof(why));
	if (rc) {
		RY_ERR("verbs", "rail %s: %s", cfg->name, why);
		return rc;
	}
	r->gid_index = (int)idx;
	return 0;
}

/* Whether the device resizes CQs (siw does not): a CQ that cannot grow
 * with its QPs is made large enough up front (verbs_cq.c). */
static bool cq_resizes(struct ry__verbs_rail *r)
{
	struct ibv_cq *cq = ibv_create_cq(r->ctx, 1, NULL, NULL, 0);
	int rc;

	if (!cq)
		return true; /* cannot tell: the first resize will */
	rc = ibv_resize_cq(cq, 2 * cq->cqe + 1);
	ibv_destroy_cq(cq);
	if (rc == EOPNOTSUPP || rc == -EOPNOTSUPP || rc == ENOSYS) {
		RY_DBG("verbs", "rail %s: the device cannot resize CQs",
		       r->base.name);
		return false;
	}
	return true;
}

/* iWARP: the region the peers' fence READs read (verbs_int.h, struct
 * ry__verbs_swr); a byte of it is all they take. */
static int fence_open(struct ry__verbs_rail *r)
{
	if (!r->iwarp)
		return 0;
	if (posix_memalign(&r->fence_buf, 64, 64))
		return -ENOMEM;
	memset(r->fence_buf, 0, 64);
	r->fence_mr =
	    ibv_reg_mr(r->pd, r->fence_buf, 64,
		       IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_READ);
	if (!r->fence_mr) {
		int rc = -errno;

		RY_ERR("verbs", "rail %s: the fence region: ibv_reg_mr: %m",
		       r->base.name);
		free(r->fence_buf);
		r->fence_buf = NULL;
		return rc;
	}
	return 0;
}

static void fence_close(struct ry__verbs_rail *r)
{
	if (r->fence_mr)
		ibv_dereg_mr(r->fence_mr);
	free(r->fence_buf);
	r->fence_mr = NULL;
	r->fence_buf = NULL;
}

static int verbs_open(const struct ry_rail_config *cfg, struct ry_rail **rail_p)
{
	struct ry__verbs_port port;
	struct ry__verbs_rail *r;
	struct ibv_port_attr pa;
	struct ibv_srq_init_attr sa = {0};
	struct epoll_event ev = {.events = EPOLLIN};
	int rc;

	rc = find_port(cfg, &port);
	if (rc)
		return rc;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->base.ops = &ry__verbs_ops;
	snprintf(r->base.name, sizeof(r->base.name), "%s", cfg->name);
	r->port = (uint8_t)port.port;
	r->traffic_class = (uint8_t)cfg->traffic_class;
	r->sl = (uint8_t)cfg->sl;
	r->rate_bps = (uint64_t)port.rate_gbps * 1000000000u;
	r->epfd = -1;
	ry__list_init(&r->pds);
	ry__list_init(&r->mrs);
	ry__list_init(&r->cqs);
	ry__list_init(&r->dead_cqs);
	rc = ry__verbs_cq_init(r, &r->cq);
	if (rc) {
		free(r);
		return rc;
	}

	rc = open_by_name(port.device, &r->ctx);
	if (rc) {
		errno = -rc;
		RY_ERR("verbs", "rail %s: cannot open %s: %m", cfg->name,
		       port.device);
		goto err_free;
	}
	r->iwarp = r->ctx->device->transport_type == IBV_TRANSPORT_IWARP;
	/* both return an errno value */
	rc = ibv_query_device(r->ctx, &r->dev_attr);
	if (!rc)
		rc = ibv_query_port(r->ctx, r->port, &pa);
	if (rc) {
		errno = rc;
		RY_ERR("verbs", "rail %s: cannot query %s port %u: %m",
		       cfg->name, port.device, r->port);
		rc = -rc;
		goto err_close;
	}
	/* Discovery read sysfs a moment ago; the device has the last word. */
	if (pa.state != IBV_PORT_ACTIVE) {
		RY_ERR("verbs", "rail %s: %s port %u is %s (physical state %s)",
		       cfg->name, port.device, r->port,
		       ibv_port_state_str(pa.state), port.phys_state);
		rc = -ENETDOWN;
		goto err_close;
	}
	r->port_active = true;
	r->ethernet = pa.link_layer == IBV_LINK_LAYER_ETHERNET;
	r->lid = pa.lid;
	r->max_msg_size = pa.max_msg_sz;
	r->mtu = (uint32_t)mtu_bytes(pa.active_mtu);
	/* a path MTU is one of 256..4096 in powers of two */
	while (cfg->mtu && r->mtu > 256 && cfg->mtu < r->mtu)
		r->mtu /= 2;
	rc = pick_gid(r, cfg);
	if (rc)
		goto err_close;

	r->pd = ibv_alloc_pd(r->ctx);
	if (!r->pd) {
		rc = -errno;
		RY_ERR("verbs", "rail %s: ibv_alloc_pd: %m", cfg->name);
		goto err_close;
	}
	r->channel = ibv_create_comp_channel(r->ctx);
	if (!r->channel) {
		rc = -errno;
		RY_ERR("verbs", "rail %s: ibv_create_comp_channel: %m",
		       cfg->name);
		goto err_pd;
	}
	sa.attr.max_wr = RY__VERBS_SRQ_WR < r->dev_attr.max_srq_wr
			     ? RY__VERBS_SRQ_WR
			     : (uint32_t)r->dev_attr.max_srq_wr;
	sa.attr.max_sge = 1;
	r->srq = ibv_create_srq(r->pd, &sa);
	if (!r->srq) {
		rc = -errno;
		RY_ERR("verbs", "rail %s: ibv_create_srq(%u): %m", cfg->name,
		       sa.attr.max_wr);
		goto err_channel;
	}
	r->cq_fixed = !cq_resizes(r);
	/* what the SRQ holds, which every CQ must have room for; the rail's
	 * own CQ is made with its first QP (ry__verbs_create_qp): an owner
	 * with CQs of its own (the manager) never has one */
	r->srq_wr = sa.attr.max_wr;

	rc = set_nonblock(r->channel->fd);
	if (!rc)
		rc = set_nonblock(r->ctx->async_fd);
	if (rc) {
		errno = -rc;
		RY_ERR("verbs", "rail %s: O_NONBLOCK: %m", cfg->name);
		goto err_srq;
	}
	r->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (r->epfd < 0) {
		rc = -errno;
		RY_ERR("verbs", "rail %s: epoll_create1: %m", cfg->name);
		goto err_srq;
	}
	ev.data.fd = r->channel->fd;
	if (epoll_ctl(r->epfd, EPOLL_CTL_ADD, r->channel->fd, &ev)) {
		rc = -errno;
		RY_ERR("verbs", "rail %s: epoll_ctl: %m", cfg->name);
		goto err_epoll;
	}
	ev.data.fd = r->ctx->async_fd;
	if (epoll_ctl(r->epfd, EPOLL_CTL_ADD, r->ctx->async_fd, &ev)) {
		rc = -errno;
		RY_ERR("verbs", "rail %s: epoll_ctl: %m", cfg->name);
		goto err_epoll;
	}
	rc = fence_open(r);
	if (rc)
		goto err_epoll;
	rc = ry__verbs_cm_open(r, cfg); /* rdma_cm mode: listen */
	if (rc) {
		fence_close(r);
		goto err_epoll;
	}
	RY_DBG("verbs", "rail %s: %s port %u, gid index %d, mtu %u, %s",
	       cfg->name, port.device, r->port, r->gid_index, r->mtu,
	       r->ethernet ? "RoCE" : "InfiniBand");
	*rail_p = &r->base;
	return 0;

err_epoll:
	close(r->epfd);
err_srq:
	ibv_destroy_srq(r->srq);
err_channel:
	ibv_destroy_comp_channel(r->channel);
err_pd:
	ibv_dealloc_pd(r->pd);
err_close:
	ibv_close_device(r->ctx);
err_free:
	pthread_mutex_destroy(&r->cq.lock);
	free(r);
	return rc;
}

/*
 * Take the CQ events (one-shot per CQ) and ask each CQ that had one for
 * the next.  Each is acked, even when reading the channel fails: a CQ
 * with an event taken and not acked could never be destroyed (libibverbs
 * waits for the ack).  Dead CQs are re-armed too: their events wake
 * progress to drain their zombies.
 */
static int drain_cq_events(struct ry__verbs_rail *r)
{
	struct ry__verbs_cq *had = NULL;
	struct ibv_cq *cq;
	void *cq_ctx;
	int rc = 0;

	while (!ibv_get_cq_event(r->channel, &cq, &cq_ctx)) {
		struct ry__verbs_cq *c = cq_ctx;

		if (!c->n_events++) {
			c->evnext = had;
			had = c;
		}
	}
	if (errno != EAGAIN && errno != EINTR) {
		rc = -errno;
		RY_ERR("verbs", "rail %s: ibv_get_cq_event: %m", r->base.name);
	}
	for (struct ry__verbs_cq *c = had; c; c = c->evnext) {
		int e;

		ibv_ack_cq_events(c->cq, c->n_events);
		c->n_events = 0;
		e = ibv_req_notify_cq(c->cq, 0);
		if (e) {
			errno = e;
			RY_ERR("verbs", "rail %s: ibv_req_notify_cq: %m",
			       r->base.name);
			if (!rc)
				rc = -e;
		}
	}
	return rc;
}

/* The GID we send from may have gone with the link (RoCE drops a netdev's
 * GIDs when it goes down and adds them back, maybe at another index).  New
 * QPs must use what the table says now. */
static void refresh_gid(struct ry__verbs_rail *r)
{
	struct ibv_gid_entry e;
	char why[256];
	uint32_t idx;
	uint8_t raw[16];
	char addr[64];

	if (!ibv_query_gid_ex(r->ctx, r->port, (uint32_t)r->gid_index, &e, 0) &&
	    !memcmp(e.gid.raw, r->gid.raw, 16))
		return;
	/* Look for the same address at any index. */
	if (r->gid.raw[10] == 0xff && r->gid.raw[11] == 0xff)
		inet_ntop(AF_INET, r->gid.raw + 12, addr, sizeof(addr));
	else
		inet_ntop(AF_INET6, r->gid.raw, addr, sizeof(addr));
	if (!ry__verbs_pick_gid(r->ctx, r->port, -1, addr, &idx, raw, why,
				sizeof(why))) {
		if ((int)idx != r->gid_index)
			RY_INFO("verbs", "rail %s: GID %s moved to index %u",
				r->base.name, addr, idx);
		r->gid_index = (int)idx;
	} else {
		RY_DBG("verbs", "rail %s: %s", r->base.name, why);
	}
}

static void handle_async(struct ry__verbs_rail *r, struct ibv_async_event *e)
{
	struct ry__verbs_qp *q;
	uint32_t qpn;
	bool zombie;

	switch (e->event_type) {
	case IBV_EVENT_PORT_ERR:
		if (e->element.port_num != r->port)
			break;
		RY_WARN("verbs", "rail %s: port %u down", r->base.name,
			r->port);
		r->port_active = false;
		ry__verbs_push_event(r, RY_RAIL_EV_LINK_DOWN, 0);
		break;
	case IBV_EVENT_PORT_ACTIVE:
		if (e->element.port_num != r->port)
			break;
		RY_INFO("verbs", "rail %s: port %u active", r->base.name,
			r->port);
		r->port_active = true;
		refresh_gid(r);
		ry__verbs_push_event(r, RY_RAIL_EV_LINK_UP, 0);
		break;
	case IBV_EVENT_GID_CHANGE:
		if (e->element.port_num == r->port)
			refresh_gid(r);
		break;
	case IBV_EVENT_QP_FATAL:
	case IBV_EVENT_QP_REQ_ERR:
	case IBV_EVENT_QP_ACCESS_ERR:
		/* ours (create_qp's qp_context), and alive: libibverbs'
		 * destroy waits for its events' acks */
		q = e->element.qp->qp_context;
		qpn = e->element.qp->qp_num;
		/* a post or a poll on another thread may be looking at it */
		pthread_mutex_lock(&q->cq->lock);
		zombie = q->zombie;
		if (!zombie)
			ry__verbs_qp_set_err(q);
		pthread_mutex_unlock(&q->cq->lock);
		if (zombie)
			break; /* the caller destroyed it already */
		RY_WARN("verbs", "rail %s: qp 0x%x: %s", r->base.name, qpn,
			ibv_event_type_str(e->event_type));
		ry__verbs_push_event(r, RY_RAIL_EV_QP_FATAL, qpn);
		break;
	case IBV_EVENT_QP_LAST_WQE_REACHED:
		q = e->element.qp->qp_context;
		pthread_mutex_lock(&q->cq->lock);
		q->last_wqe = true;
		pthread_mutex_unlock(&q->cq->lock);
		break;
	case IBV_EVENT_CQ_ERR:
	case IBV_EVENT_SRQ_ERR:
	case IBV_EVENT_DEVICE_FATAL:
		/* The SRQ serves every QP: all are gone.  A CQ is sized for
		 * all it can get, so its error (an overrun) is a sick device
		 * too, and the caller could not recover it alone: its QPs
		 * are in ERR and a new one on it would be as well.  The
		 * manager closes the rail and opens the device again by its
		 * configured name or GUID (src/rail_life.c). */
		RY_ERR("verbs", "rail %s: %s", r->base.name,
		       ibv_event_type_str(e->event_type));
		r->device_fatal = true;
		ry__verbs_push_event(r, RY_RAIL_EV_DEVICE_FATAL, 0);
		break;
	default:
		RY_DBG("verbs", "rail %s: async event %s", r->base.name,
		       ibv_event_type_str(e->event_type));
		break;
	}
}

/*
 * A device being removed (`rdma link delete`, a driver unbound) whose
 * driver cannot disassociate a user context (rxe, among others) sends no
 * event: the kernel deletes its uverbs node at once and then waits for
 * every user to close it.  So its node vanishing is our DEVICE_FATAL:
 * the manager closes the rail (which lets the removal finish) and opens
 * the device again by name when it returns.  Checked every 100 ms.
 */
static void check_removed(struct ry__verbs_rail *r)
{
	uint64_t now = ry__now_ns();

	if (r->device_fatal || now - r->dev_checked < 100000000ull)
		return;
	r->dev_checked = now;
	if (!access(r->ctx->device->dev_path, F_OK) || errno != ENOENT)
		return;
	RY_ERR("verbs", "rail %s: device %s removed (%s is gone)", r->base.name,
	       ibv_get_device_name(r->ctx->device), r->ctx->device->dev_path);
	r->device_fatal = true;
	ry__verbs_push_event(r, RY_RAIL_EV_DEVICE_FATAL, 0);
}

static int drain_async(struct ry__verbs_rail *r)
{
	struct ibv_async_event e;

	while (!ibv_get_async_event(r->ctx, &e)) {
		handle_async(r, &e);
		ibv_ack_async_event(&e);
	}
	if (errno != EAGAIN && errno != EINTR) {
		RY_ERR("verbs", "rail %s: ibv_get_async_event: %m",
		       r->base.name);
		return -errno;
	}
	return 0;
}

static int verbs_progress(struct ry_rail *rail)
{
	struct ry__verbs_rail *r = vrail(rail);
	int rc;

	rc = drain_async(r);
	check_removed(r);
	if (!rc)
		rc = drain_cq_events(r);
	if (!ry__list_empty(&r->dead_cqs))
		ry__verbs_cq_drain_dead(r);
	if (r->iwarp)
		ry__verbs_qp_sweep(r);
	if (r->zombies)
		ry__verbs_qp_reap(r);
	return rc;
}

static int verbs_fd(struct ry_rail *rail)
{
	return vrail(rail)->epfd;
}

static int verbs_get_event(struct ry_rail *rail, struct ry_rail_event *ev)
{
	struct ry__verbs_rail *r = vrail(rail);

	if (r->ev_head == r->ev_tail)
		return -EAGAIN;
	*ev = r->events[ry__ring_slot(r->ev_head++, RY__VERBS_EVENTS)];
	return 0;
}

static int verbs_query(struct ry_rail *rail, struct ry_rail_attr *attr)
{
	struct ry__verbs_rail *r = vrail(rail);
	struct ibv_port_attr pa;
	int rc = ibv_query_port(r->ctx, r->port, &pa);

	if (rc) {
		errno = rc;
		RY_ERR("verbs", "rail %s: ibv_query_port: %m", r->base.name);
		return -rc;
	}
	memset(attr, 0, sizeof(*attr));
	attr->link = pa.state == IBV_PORT_ACTIVE ? RY_LINK_UP : RY_LINK_DOWN;
	attr->mtu = r->mtu;
	if ((uint32_t)mtu_bytes(pa.active_mtu) < attr->mtu)
		attr->mtu = (uint32_t)mtu_bytes(pa.active_mtu);
	attr->rate_bps = r->rate_bps;
	attr->sends_alone = true; /* post_send rang the doorbell */
	/* libibverbs is thread-safe, our state per CQ (verbs_int.h) */
	attr->concurrent_qps = true;
	attr->no_imm = r->iwarp;
	attr->no_rnr = r->iwarp;
	attr->opaque_errors = r->iwarp;
	attr->read_unchecked = r->iwarp;
	attr->partial_writes = r->iwarp;
	memcpy(attr->local.gid, r->gid.raw, 16);
	attr->local.lid = pa.lid;
	attr->local.mtu = attr->mtu;
	attr->max_qp_wr = (uint32_t)r->dev_attr.max_qp_wr;
	attr->max_msg_size = pa.max_msg_sz;
	return 0;
}

/* Device counters from sysfs: hw_counters (rxe and most drivers) and the
 * standard IB port counters where the driver has them. */
static uint64_t read_counter(struct ry__verbs_rail *r, const char *dir,
			     const char *name)
{
	uint64_t v = 0;

	ry__verbs_port_counter(RY__VERBS_SYSFS,
			       ibv_get_device_name(r->ctx->device), r->port,
			       dir, name, &v);
	return v;
}

/*
 * No error counters in sysfs: the PMA's, asked at most once a second (the
 * metrics call get_stats too, and an answer can take a while), never
 * again once it did not answer.
 */
static uint64_t pma_errors(struct ry__verbs_rail *r)
{
	uint64_t now = ry__now_ns(), v;
	int ret;

	if (r->pma_off || (r->pma_ns && now - r->pma_ns < 1000000000ull))
		return r->pma_errors;
	r->pma_ns = now;
	ret = ry__verbs_pma_port_errors(ibv_get_device_name(r->ctx->device),
					r->port, r->ethernet ? 0 : r->lid, &v);
	if (ret) {
		r->pma_off = true;
		if (ret != -ENOENT)
			RY_INFO("verbs",
				"rail %s: port %u has no error counters in "
				"sysfs and its PMA did not answer (%s): its "
				"health comes from failures only",
				r->base.name, r->port, strerror(-ret));
	} else {
		r->pma_errors = v;
	}
	return r->pma_errors;
}

static int verbs_get_stats(struct ry_rail *rail, struct ry_rail_stats *st)
{
	struct ry__verbs_rail *r = vrail(rail);

	memset(st, 0, sizeof(*st));
	st->tx_packets = read_counter(r, "hw_counters", "sent_pkts");
	st->rx_packets = read_counter(r, "hw_counters", "rcvd_pkts");
	if (!st->tx_packets)
		st->tx_packets =
		    read_counter(r, "counters", "port_xmit_packets");
	if (!st->rx_packets)
		st->rx_packets =
		    read_counter(r, "counters", "port_rcv_packets");
	/* port_*_data counts 4-byte words */
	st->tx_bytes = 4 * read_counter(r, "counters", "port_xmit_data");
	st->rx_bytes = 4 * read_counter(r, "counters", "port_rcv_data");
	st->retransmits = read_counter(r, "hw_counters", "completer_retry_err");
	st->rnr_naks_sent = read_counter(r, "hw_counters", "send_rnr_err");
	st->naks_rcvd = read_counter(r, "hw_counters", "rcvd_seq_err");
	st->dup_rcvd = read_counter(r, "hw_counters", "duplicate_request");
	st->rx_bad_psn = read_counter(r, "hw_counters", "out_of_seq_request");
	if (ry__verbs_port_errors(RY__VERBS_SYSFS,
				  ibv_get_device_name(r->ctx->device), r->port,
				  &st->port_errors) == -ENOENT)
		st->port_errors = pma_errors(r);
	return 0;
}

static void verbs_close(struct ry_rail *rail)
{
	struct ry__verbs_rail *r = vrail(rail);

	/* the CM's thread and connections first, then QPs (they hold the
	 * CQs and SRQ), then regions, then PDs; the channel after its CQs. */
	ry__verbs_cm_close(r);
	ry__verbs_qp_close_all(r);
	ry__verbs_mr_close_all(r);
	fence_close(r);
	close(r->epfd);
	ibv_destroy_srq(r->srq);
	ry__verbs_cq_close_all(r);
	ibv_destroy_comp_channel(r->channel);
	ibv_dealloc_pd(r->pd);
	ibv_close_device(r->ctx);
	pthread_mutex_destroy(&r->cq.lock);
	free(r);
}

static int verbs_set_fault(struct ry_rail *rail, const struct ry_fault *f)
{
	return -EOPNOTSUPP;
}

static int verbs_set_link(struct ry_rail *rail, enum ry_link_state state)
{
	return -EOPNOTSUPP;
}

const struct ry_rail_ops ry__verbs_ops = {
    .name = "verbs",
    .alloc_pd = ry__verbs_alloc_pd,
    .close = verbs_close,
    .cq_pending = ry__verbs_cq_pending,
    .cq_poll = ry__verbs_cq_poll,
    .create_cq = ry__verbs_create_cq,
    .create_qp = ry__verbs_create_qp,
    .dealloc_pd = ry__verbs_dealloc_pd,
    .dereg_mr = ry__verbs_dereg_mr,
    .destroy_cq = ry__verbs_destroy_cq,
    .destroy_qp = ry__verbs_destroy_qp,
    .fd = verbs_fd,
    .get_event = verbs_get_event,
    .get_stats = verbs_get_stats,
    .modify_qp = ry__verbs_modify_qp,
    .open = verbs_open,
    .poll_cq = ry__verbs_poll_cq,
    .post_recv = ry__verbs_post_recv,
    .post_send = ry__verbs_post_send,
    .progress = verbs_progress,
    .query = verbs_query,
    .reg_mr = ry__verbs_reg_mr,
    .set_fault = verbs_set_fault,
    .set_link = verbs_set_link,
};
