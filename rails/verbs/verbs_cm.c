// SPDX-License-Identifier: BSD-2-Clause
/*
 * rdma_cm as a connection mode of the verbs rail (cm = rdma_cm, or auto on
 * an iWARP device).
 *
 * The manager still creates the QP, exchanges its endpoint over its control
 * channel and calls modify_qp; what changes is who brings the QP to RTR:
 *
 *   - each rail listens with librdmacm on its own address, on a port the
 *     kernel picks; the QP's endpoint carries that address (gid, as an
 *     IPv4-mapped or IPv6 address) and port (udp_port), so the peer learns
 *     both through the control channel with the rest of the endpoint;
 *   - the first side whose modify_qp(RTR) runs connects: the call starts
 *     it and answers -EAGAIN, and the rail thread resolves the peer's
 *     address and route, sends the CM's REQ with private data naming the
 *     peer's QPN (learnt over the control channel) and its own, and on
 *     the REP moves the QP to RTR with the attributes the CM gives (path,
 *     PSNs) and sends the RTU (on iWARP the CM itself moves the QP to
 *     RTS).  The owner's calls answer -EAGAIN meanwhile, then 0, or why it
 *     failed (no answer within RY__VERBS_CM_WAIT_MS: ETIMEDOUT): a fabric
 *     losing CM messages never holds the caller's thread (the manager's
 *     control thread, which serves every peer).
 *   - the other side's rail thread takes the REQ, finds the QP it names
 *     (in INIT, not yet connected), moves it to RTR and accepts; that QP's
 *     own modify_qp(RTR) later checks that the REQ came from the QPN the
 *     control channel named and returns at once.
 *
 * In the manager the side that answers a connect (CONN_REQ) reaches RTR
 * first, so it is the one that sends the CM's REQ, and the side that asked
 * has been accepted by the time its CONN_REP arrives.
 *
 * Everything else is as with manual connects: the QP's RTS carries the
 * manager's ACK timeout and retry counts (IB, RoCE), a QP in error is
 * destroyed with its cm_id (which ends the CM connection: DREQ, or the TCP
 * stream of iWARP) and the manager makes a new one.  The PSNs are the
 * CM's: the kernel draws a random 24-bit starting PSN for every cm_id
 * (rdma_cm's seq_num, get_random_bytes in __rdma_create_id), sends it in
 * the REQ (starting_psn) and REP, and rdma_init_qp_attr() hands them out
 * for RTR (rq_psn) and RTS (sq_psn); with a new QPN besides, a packet of a
 * connection that died is not accepted by its successor.  local.psn is not
 * used in this mode.
 *
 * Threading: the rail thread runs beside the owner's calls.  It touches
 * only QPs registered here (create_qp registers, destroy_qp and close
 * unregister), their cm_* fields and their ibv_qp's RTR move, all under
 * cm->lock.  The thread also destroys the cm_ids the owner is done with
 * (destroy_qp, RESET, a failed connect): rdma_destroy_id waits for the
 * kernel (a DREQ to send, the id's events to be acked) and destroy_qp
 * must return at once; the owner hands them over (bury) and wakes it.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>

#include <rdma/rdma_cma.h>

#include "rails/verbs/verbs_int.h"
#include "src/util/log.h"

#define CM_MAGIC 0x5259434du /* "RYCM" */
/* IB CM reject reason 10 (IBTA 12.6.7.2): the REQ's QP looks like one
 * still connected; the REJ's sender disconnects that one.  Asked again
 * after CM_STALE_WAIT_NS, within the connect's time. */
#define CM_REJ_STALE_CONN 10
#define CM_STALE_WAIT_NS 50000000ull

/* What a REQ carries, big-endian: which QP it wants and who asks; and
 * on iWARP (REQ and the accept's reply) where the sender's fence region
 * is, for the peer's fence READs (struct ry__verbs_swr). */
struct cm_priv {
	uint32_t magic;
	uint32_t dst_qpn;
	uint32_t src_qpn;
	uint32_t fence_rkey;
	uint64_t fence_addr;
};

/* The peer's fence region, from its REQ or its accept (iWARP). */
static void fence_from(struct ry__verbs_qp *q, const struct cm_priv *pd)
{
	if (ntohl(pd->magic) != CM_MAGIC)
		return;
	q->fence_rkey = ntohl(pd->fence_rkey);
	q->fence_addr = be64toh(pd->fence_addr);
}

static void fence_to(struct ry__verbs_rail *r, struct cm_priv *pd)
{
	if (!r->fence_mr)
		return;
	pd->fence_rkey = htonl(r->fence_mr->rkey);
	pd->fence_addr = htobe64((uint64_t)(uintptr_t)r->fence_mr->addr);
}

enum cm_qp_state {
	CMQ_NONE = 0,	/* RESET: not to be connected yet */
	CMQ_INIT,	/* in INIT: a REQ naming it may be accepted */
	CMQ_CONNECTING, /* its own REQ is out: a REQ naming it is refused
			 * (both sides at once: both fail, and retry) */
	CMQ_ACCEPTED,	/* the peer's REQ accepted: at RTR (RTS on iWARP) */
	CMQ_CONNECTED	/* we connected: the peer accepted */
};

/* Our connect of q (CMQ_CONNECTING, or just ended), under cm->lock. */
struct ry__verbs_cm_conn {
	struct sockaddr_storage dst;
	uint32_t dst_qpn;
	uint8_t retry_cnt, rnr_retry;
	uint64_t deadline, retry_at; /* retry_at: a new REQ due (stale) */
	int err;		     /* how it ended, 0: connected or not yet */
};

/* A cm_id the owner is done with, and when it was handed over. */
struct cm_dead {
	struct rdma_cm_id *id;
	uint64_t at;
};

struct ry__verbs_cm {
	pthread_mutex_t lock;
	struct rdma_event_channel *ch;
	struct rdma_cm_id *listen;
	struct sockaddr_storage addr; /* the rail's, port 0 */
	uint16_t port;		      /* the listener's, host order */
	bool iwarp;		      /* the CM moves the QP to RTS */
	int wake_fd;		      /* eventfd: ids to destroy, or stop */
	pthread_t thread;
	bool stopping;	      /* under lock */
	struct cm_dead *dead; /* to destroy, under lock */
	unsigned n_dead, cap_dead;
	struct ry__verbs_qp *qps; /* registered, cm_next */
	unsigned n_connecting;	  /* QPs in CMQ_CONNECTING, under lock */
};

static const char *addr_str(const struct sockaddr *sa, char *buf, size_t len)
{
	const void *a =
	    sa->sa_family == AF_INET
		? (const void *)&((const struct sockaddr_in *)(const void *)sa)
		      ->sin_addr
		: (const void *)&((const struct sockaddr_in6 *)(const void *)sa)
		      ->sin6_addr;

	if (!inet_ntop(sa->sa_family, a, buf, (socklen_t)len))
		snprintf(buf, len, "?");
	return buf;
}

/* A GID or endpoint address (IPv4-mapped or IPv6) as a sockaddr. */
static void gid_sockaddr(const uint8_t *gid, uint16_t port,
			 struct sockaddr_storage *ss)
{
	static const uint8_t v4[12] = {0, 0, 0, 0, 0,	 0,
				       0, 0, 0, 0, 0xff, 0xff};

	memset(ss, 0, sizeof(*ss));
	if (!memcmp(gid, v4, 12)) {
		struct sockaddr_in *s = (struct sockaddr_in *)ss;

		s->sin_family = AF_INET;
		s->sin_port = htons(port);
		memcpy(&s->sin_addr, gid + 12, 4);
	} else {
		struct sockaddr_in6 *s = (struct sockaddr_in6 *)ss;

		s->sin6_family = AF_INET6;
		s->sin6_port = htons(port);
		memcpy(&s->sin6_addr, gid, 16);
	}
}

static void sockaddr_gid(const struct sockaddr_storage *ss, uint8_t *gid)
{
	memset(gid, 0, 16);
	if (ss->ss_family == AF_INET) {
		gid[10] = gid[11] = 0xff;
		memcpy(
		    gid + 12,
		    &((const struct sockaddr_in *)(const void *)ss)->sin_addr,
		    4);
	} else {
		memcpy(
		    gid,
		    &((const struct sockaddr_in6 *)(const void *)ss)->sin6_addr,
		    16);
	}
}

static struct ry__verbs_qp *find_qpn(struct ry__verbs_cm *cm, uint32_t qpn)
{
	struct ry__verbs_qp *q = cm->qps;

	while (q && q->base.qp_num != qpn)
		q = q->cm_next;
	return q;
}

/* The fabric's class on an address vector the CM filled. */
static void class_of_service(struct ry__verbs_rail *r, struct ibv_qp_attr *a)
{
	a->ah_attr.sl = r->sl;
	if (a->ah_attr.is_global)
		a->ah_attr.grh.traffic_class = r->traffic_class;
}

/* RTR as the CM says (path, rq_psn), and the sq_psn RTS will use. */
static int cm_to_rtr(struct ry__verbs_rail *r, struct ry__verbs_qp *q,
		     struct rdma_cm_id *id)
{
	struct ibv_qp_attr a = {0};
	int mask = 0, rc;

	a.qp_state = IBV_QPS_RTR;
	rc = rdma_init_qp_attr(id, &a, &mask);
	if (rc)
		return errno;
	class_of_service(r, &a);
	/* never above the rail's MTU (its mtu option) */
	while (a.path_mtu > IBV_MTU_256 && (128u << a.path_mtu) > r->mtu)
		a.path_mtu--;
	rc = ibv_modify_qp(q->qp, &a, mask);
	if (rc)
		return rc;
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	if (rdma_init_qp_attr(id, &a, &mask))
		return errno;
	q->cm_sq_psn = a.sq_psn;
	return 0;
}

/* A REQ on the listener: accept it for the INIT QP it names (true), or
 * refuse it (false: the new cm_id is the caller's to destroy). */
static bool on_request(struct ry__verbs_rail *r, struct rdma_cm_event *ev)
{
	struct ry__verbs_cm *cm = r->cm;
	struct rdma_conn_param cp = {0};
	struct cm_priv pd = {0}, rep = {.magic = htonl(CM_MAGIC)};
	struct ry__verbs_qp *q = NULL;
	const char *why = "no such QP waiting";
	char peer[INET6_ADDRSTRLEN];
	int rc = 0;

	addr_str(rdma_get_peer_addr(ev->id), peer, sizeof(peer));
	if (ev->param.conn.private_data_len >= sizeof(pd))
		memcpy(&pd, ev->param.conn.private_data, sizeof(pd));
	RY_DBG("verbs", "rail %s: REQ from %s for qp 0x%x", r->base.name, peer,
	       ntohl(pd.dst_qpn));
	pthread_mutex_lock(&cm->lock);
	if (ntohl(pd.magic) != CM_MAGIC)
		why = "not railyard's";
	else
		q = find_qpn(cm, ntohl(pd.dst_qpn));
	if (q && q->cm_state != CMQ_INIT) {
		why = "QP not in INIT or connected already";
		q = NULL;
	}
	if (q && !cm->iwarp)
		rc = cm_to_rtr(r, q, ev->id);
	if (q && !rc) {
		cp.qp_num = q->base.qp_num;
		cp.responder_resources = ev->param.conn.initiator_depth;
		cp.initiator_depth = ev->param.conn.responder_resources;
		cp.rnr_retry_count = 7 - 1;
		fence_to(r, &rep);
		cp.private_data = &rep;
		cp.private_data_len = sizeof(rep);
		fence_from(q, &pd);
		if (rdma_accept(ev->id, &cp))
			rc = errno;
	}
	if (q && !rc) {
		q->cm_id = ev->id;
		q->cm_rqpn = ntohl(pd.src_qpn) & 0xffffff;
		q->cm_state = CMQ_ACCEPTED;
		RY_DBG("verbs", "rail %s: qp 0x%x: accepted qp 0x%x from %s",
		       r->base.name, q->base.qp_num, q->cm_rqpn, peer);
	}
	pthread_mutex_unlock(&cm->lock);
	if (q && !rc)
		return true;
	if (q) {
		errno = rc;
		RY_WARN("verbs", "rail %s: qp 0x%x: accepting %s: %m",
			r->base.name, q->base.qp_num, peer);
	} else {
		RY_DBG("verbs", "rail %s: connect from %s refused: %s",
		       r->base.name, peer, why);
	}
	rdma_reject(ev->id, NULL, 0);
	return false;
}

/* Queue a cm_id for the rail thread to destroy (lock held): never here,
 * where the thread may not have acked its last event yet. */
static void bury_locked(struct ry__verbs_cm *cm, struct rdma_cm_id *id)
{
	if (cm->n_dead == cm->cap_dead) {
		unsigned cap = cm->cap_dead ? 2 * cm->cap_dead : 16;
		void *v = realloc(cm->dead, cap * sizeof(*cm->dead));

		if (!v) {
			RY_ERR("verbs", "rdma_cm: no memory to end a "
					"connection: its cm_id is kept");
			return;
		}
		cm->dead = v;
		cm->cap_dead = cap;
	}
	cm->dead[cm->n_dead++] = (struct cm_dead){.id = id, .at = ry__now_ns()};
}

/* Hand a cm_id to the rail thread to destroy (the owner's calls). */
static void bury(struct ry__verbs_cm *cm, struct rdma_cm_id *id)
{
	uint64_t one = 1;

	pthread_mutex_lock(&cm->lock);
	bury_locked(cm, id);
	pthread_mutex_unlock(&cm->lock);
	if (write(cm->wake_fd, &one, sizeof(one)) != sizeof(one))
		RY_ERR("verbs", "waking the rdma_cm thread: %m");
}

/* The rail's port is active (or cannot be asked). */
static bool port_up(struct ry__verbs_rail *r)
{
	struct ibv_port_attr pa;

	return ibv_query_port(r->ctx, r->port, &pa) ||
	       pa.state == IBV_PORT_ACTIVE;
}

/*
 * Destroy what was buried; true when the thread is to stop.  *held: some
 * wait.  Destroying a connected cm_id sends a DREQ, one whose connect is
 * pending a REJ, and rxe (kernel 6.12) moves the port's QP1, the GSI QP
 * that carries every CM message, to ERR for good when such a message
 * finds its netdev down (`rdma res show qp`: "lqpn 1 type GSI state ERR"
 * after `ip link set veth1a down` while the rail's QPs were destroyed,
 * and the DREQ's send completed "WR flushed"): no REQ, REP or DREQ leaves
 * or is answered on that port again until the device is made anew.  A
 * message to a peer behind a dead link is lost anyway, so they wait for
 * the link.  They also wait DEAD_GRACE_NS first: a QP is often destroyed
 * because the link went (the peer fenced it, a heartbeat missed) a moment
 * before the port says so.
 */
#define DEAD_GRACE_NS 250000000ull

static bool reap_dead(struct ry__verbs_rail *r, bool *held)
{
	struct ry__verbs_cm *cm = r->cm;
	struct rdma_cm_id *ids[64];
	uint64_t v, ripe;
	unsigned n, i, kept;
	bool stop, up = true;

	if (read(cm->wake_fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		return true;
	pthread_mutex_lock(&cm->lock);
	stop = cm->stopping;
	n = cm->n_dead;
	pthread_mutex_unlock(&cm->lock);
	if (!n && !stop) {
		*held = false;
		return false;
	}
	if (!stop) {
		up = port_up(r);
		if (!up && !*held)
			RY_DBG("verbs",
			       "rail %s: rdma_cm: port down: its ended "
			       "connections wait for it",
			       r->base.name);
	}
	ripe = stop ? UINT64_MAX : ry__now_ns() - DEAD_GRACE_NS;
	do {
		n = kept = 0;
		pthread_mutex_lock(&cm->lock);
		for (i = 0; i < cm->n_dead; i++) {
			if (n < 64 && up && cm->dead[i].at <= ripe)
				ids[n++] = cm->dead[i].id;
			else
				cm->dead[kept++] = cm->dead[i];
		}
		cm->n_dead = kept;
		pthread_mutex_unlock(&cm->lock);
		for (i = 0; i < n; i++)
			rdma_destroy_id(ids[i]);
	} while (n == 64);
	*held = kept > 0;
	return stop;
}

/* How often the thread looks again while cm_ids wait. */
#define HELD_POLL_MS 50

static bool on_connect_event(struct ry__verbs_rail *r,
			     const struct rdma_cm_event *ev);
static void connect_timers(struct ry__verbs_rail *r);

/* How often the thread looks at its connects' clocks while one runs. */
#define CONNECT_POLL_MS 10

static void *cm_thread(void *arg)
{
	struct ry__verbs_rail *r = arg;
	struct ry__verbs_cm *cm = r->cm;
	struct pollfd pf[2] = {{.fd = cm->ch->fd, .events = POLLIN},
			       {.fd = cm->wake_fd, .events = POLLIN}};
	bool held = false;

	for (;;) {
		struct rdma_cm_event *ev;
		struct rdma_cm_id *drop = NULL;
		int t = held ? HELD_POLL_MS : -1;

		pthread_mutex_lock(&cm->lock);
		if (cm->n_connecting)
			t = CONNECT_POLL_MS;
		pthread_mutex_unlock(&cm->lock);
		if (poll(pf, 2, t) < 0 && errno != EINTR)
			break;
		/* every event taken is acked by now: destroying waits for
		 * nothing of ours */
		if (reap_dead(r, &held))
			break;
		while (!rdma_get_cm_event(cm->ch, &ev)) {
			if (ev->event == RDMA_CM_EVENT_CONNECT_REQUEST) {
				/* refused: ours to destroy, after the ack */
				if (!on_request(r, ev))
					drop = ev->id;
			} else if (!on_connect_event(r, ev)) {
				RY_DBG("verbs", "rail %s: rdma_cm %s",
				       r->base.name, rdma_event_str(ev->event));
			}
			rdma_ack_cm_event(ev);
			if (drop)
				rdma_destroy_id(drop);
			drop = NULL;
		}
		pthread_mutex_lock(&cm->lock);
		if (cm->n_connecting)
			connect_timers(r);
		held = held || cm->n_dead;
		pthread_mutex_unlock(&cm->lock);
	}
	return NULL;
}

static int cm_fail(struct ry__verbs_rail *r, const char *what)
{
	int rc = errno ? errno : EIO;

	RY_ERR("verbs", "rail %s: rdma_cm: %s: %s", r->base.name, what,
	       strerror(rc));
	return -rc;
}

/* The rail's address for rdma_cm: the configured one, else its GID's. */
static int rail_addr(struct ry__verbs_rail *r, const struct ry_rail_config *cfg,
		     struct sockaddr_storage *ss)
{
	uint8_t gid[16];

	if (cfg->address[0]) {
		char host[RY_ADDR_MAX];
		struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;

		snprintf(host, sizeof(host), "%s", cfg->address);
		memset(ss, 0, sizeof(*ss));
		if (inet_pton(AF_INET, host, &s4->sin_addr) == 1) {
			s4->sin_family = AF_INET;
			return 0;
		}
		if (inet_pton(AF_INET6, host, &s6->sin6_addr) == 1) {
			s6->sin6_family = AF_INET6;
			return 0;
		}
		RY_ERR("verbs", "rail %s: address '%s' is not an IP address",
		       r->base.name, cfg->address);
		return -EINVAL;
	}
	memcpy(gid, r->gid.raw, 16);
	/* RoCE: the GID is the address; IB and iWARP have none in it */
	if (!r->ethernet || gid[0] == 0xfe ||
	    r->ctx->device->transport_type == IBV_TRANSPORT_IWARP) {
		RY_ERR("verbs",
		       "rail %s: rdma_cm needs the rail's IP address (its "
		       "netdev's, or IPoIB's): set address",
		       r->base.name);
		return -EINVAL;
	}
	gid_sockaddr(gid, 0, ss);
	return 0;
}

int ry__verbs_cm_open(struct ry__verbs_rail *r,
		      const struct ry_rail_config *cfg)
{
	bool iwarp = r->ctx->device->transport_type == IBV_TRANSPORT_IWARP;
	enum ry_cm_mode mode = cfg->cm;
	struct ry__verbs_cm *cm;
	sigset_t all, old;
	const char *dev;
	char a[INET6_ADDRSTRLEN];
	int rc;

	if (mode == RY_CM_AUTO)
		mode = iwarp ? RY_CM_RDMA_CM : RY_CM_MANUAL;
	if (mode == RY_CM_MANUAL && iwarp) {
		RY_ERR("verbs",
		       "rail %s: %s is an iWARP device: its QPs connect "
		       "through rdma_cm only (set cm = rdma_cm or auto)",
		       r->base.name, ibv_get_device_name(r->ctx->device));
		return -EINVAL;
	}
	if (mode == RY_CM_MANUAL)
		return 0;
	cm = calloc(1, sizeof(*cm));
	if (!cm)
		return -ENOMEM;
	cm->iwarp = iwarp;
	cm->wake_fd = -1;
	pthread_mutex_init(&cm->lock, NULL);
	rc = rail_addr(r, cfg, &cm->addr);
	if (rc)
		goto err;
	errno = 0;
	cm->ch = rdma_create_event_channel();
	if (!cm->ch) {
		rc = cm_fail(r, "rdma_create_event_channel");
		goto err;
	}
	if (fcntl(cm->ch->fd, F_SETFL,
		  fcntl(cm->ch->fd, F_GETFL) | O_NONBLOCK) ||
	    rdma_create_id(cm->ch, &cm->listen, r, RDMA_PS_TCP)) {
		rc = cm_fail(r, "rdma_create_id");
		goto err;
	}
	addr_str((struct sockaddr *)&cm->addr, a, sizeof(a));
	if (rdma_bind_addr(cm->listen, (struct sockaddr *)&cm->addr)) {
		rc = cm_fail(r, a);
		goto err;
	}
	dev = cm->listen->verbs ? ibv_get_device_name(cm->listen->verbs->device)
				: "no device";
	if (strcmp(dev, ibv_get_device_name(r->ctx->device))) {
		RY_ERR("verbs", "rail %s: address %s belongs to %s, not %s",
		       r->base.name, a, dev,
		       ibv_get_device_name(r->ctx->device));
		rc = -EINVAL;
		goto err;
	}
	if (rdma_listen(cm->listen, 128)) {
		rc = cm_fail(r, "rdma_listen");
		goto err;
	}
	cm->port = ntohs(rdma_get_src_port(cm->listen));
	cm->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (cm->wake_fd < 0) {
		rc = cm_fail(r, "eventfd");
		goto err;
	}
	r->cm = cm;
	/* a library's thread takes no signal: the application's threads
	 * (serve's signalfd) are the ones that block and take them */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&cm->thread, NULL, cm_thread, r);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc) {
		r->cm = NULL;
		errno = rc;
		rc = cm_fail(r, "pthread_create");
		goto err;
	}
	RY_DBG("verbs", "rail %s: rdma_cm listening on %s port %u%s",
	       r->base.name, a, cm->port, iwarp ? " (iWARP)" : "");
	return 0;
err:
	if (cm->wake_fd >= 0)
		close(cm->wake_fd);
	if (cm->listen)
		rdma_destroy_id(cm->listen);
	if (cm->ch)
		rdma_destroy_event_channel(cm->ch);
	pthread_mutex_destroy(&cm->lock);
	free(cm);
	return rc;
}

void ry__verbs_cm_close(struct ry__verbs_rail *r)
{
	struct ry__verbs_cm *cm = r->cm;
	uint64_t one = 1;

	if (!cm)
		return;
	pthread_mutex_lock(&cm->lock);
	cm->stopping = true;
	pthread_mutex_unlock(&cm->lock);
	if (write(cm->wake_fd, &one, sizeof(one)) != sizeof(one))
		RY_ERR("verbs", "rail %s: stopping the rdma_cm thread: %m",
		       r->base.name);
	pthread_join(cm->thread, NULL);
	while (cm->n_dead) /* buried after it stopped */
		rdma_destroy_id(cm->dead[--cm->n_dead].id);
	free(cm->dead);
	while (cm->qps) {
		struct ry__verbs_qp *q = cm->qps;

		cm->qps = q->cm_next;
		if (q->cm_id)
			rdma_destroy_id(q->cm_id);
		q->cm_id = NULL;
		q->cm_reg = false;
		free(q->cm_conn);
		q->cm_conn = NULL;
	}
	rdma_destroy_id(cm->listen);
	rdma_destroy_event_channel(cm->ch);
	close(cm->wake_fd);
	pthread_mutex_destroy(&cm->lock);
	free(cm);
	r->cm = NULL;
}

void ry__verbs_cm_add(struct ry__verbs_rail *r, struct ry__verbs_qp *q)
{
	struct ry__verbs_cm *cm = r->cm;

	sockaddr_gid(&cm->addr, q->base.local.gid);
	q->base.local.udp_port = cm->port;
	pthread_mutex_lock(&cm->lock);
	q->cm_next = cm->qps;
	cm->qps = q;
	q->cm_reg = true;
	pthread_mutex_unlock(&cm->lock);
}

/* Off the registry, its CM connection ended (destroy, close). */
void ry__verbs_cm_del(struct ry__verbs_rail *r, struct ry__verbs_qp *q)
{
	struct ry__verbs_cm *cm = r->cm;
	struct rdma_cm_id *id;

	if (!cm || !q->cm_reg)
		return;
	pthread_mutex_lock(&cm->lock);
	for (struct ry__verbs_qp **pp = &cm->qps; *pp; pp = &(*pp)->cm_next)
		if (*pp == q) {
			*pp = q->cm_next;
			break;
		}
	q->cm_reg = false;
	id = q->cm_id;
	q->cm_id = NULL;
	if (q->cm_state == CMQ_CONNECTING)
		cm->n_connecting--;
	q->cm_state = CMQ_NONE;
	free(q->cm_conn);
	q->cm_conn = NULL;
	pthread_mutex_unlock(&cm->lock);
	if (id)
		bury(cm, id);
}

/* The QP's state moved (modify_qp): INIT opens it to a REQ, RESET ends
 * its CM connection (a new one needs a new cm_id). */
void ry__verbs_cm_state(struct ry__verbs_rail *r, struct ry__verbs_qp *q,
			enum ry_qp_state s)
{
	struct ry__verbs_cm *cm = r->cm;
	struct rdma_cm_id *id = NULL;

	if (!cm || (s != RY_QPS_INIT && s != RY_QPS_RESET))
		return;
	pthread_mutex_lock(&cm->lock);
	if (s == RY_QPS_RESET) {
		id = q->cm_id;
		q->cm_id = NULL;
		if (q->cm_state == CMQ_CONNECTING)
			cm->n_connecting--;
		q->cm_state = CMQ_NONE;
		if (q->cm_conn)
			q->cm_conn->err = 0;
	} else if (q->cm_state == CMQ_NONE) {
		q->cm_state = CMQ_INIT;
	}
	pthread_mutex_unlock(&cm->lock);
	if (id)
		bury(cm, id);
}

static struct ry__verbs_qp *find_id(struct ry__verbs_cm *cm,
				    const struct rdma_cm_id *id)
{
	struct ry__verbs_qp *q = cm->qps;

	while (q && q->cm_id != id)
		q = q->cm_next;
	return q;
}

/* A new cm_id for q's connect, resolving the peer's address (lock held;
 * its events come to the rail thread, which takes the lock first). */
static int connect_begin(struct ry__verbs_rail *r, struct ry__verbs_qp *q)
{
	struct ry__verbs_cm *cm = r->cm;
	struct sockaddr_storage src = cm->addr;
	struct rdma_cm_id *id;
	uint8_t tos = r->traffic_class;

	if (rdma_create_id(cm->ch, &id, r, RDMA_PS_TCP))
		return errno;
	if (rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_TOS, &tos,
			    sizeof(tos)) ||
	    rdma_resolve_addr(id, (struct sockaddr *)&src,
			      (struct sockaddr *)&q->cm_conn->dst,
			      RY__VERBS_CM_WAIT_MS / 2)) {
		int rc = errno;

		rdma_destroy_id(id); /* no event of it taken yet */
		return rc;
	}
	q->cm_id = id;
	return 0;
}

/* q's connect ended with rc (lock held): its cm_id goes, it may be asked
 * for again from INIT. */
static void connect_end(struct ry__verbs_rail *r, struct ry__verbs_qp *q,
			int rc)
{
	struct ry__verbs_cm *cm = r->cm;

	if (q->cm_id) {
		bury_locked(cm, q->cm_id);
		q->cm_id = NULL;
	}
	q->cm_conn->err = rc;
	q->cm_state = CMQ_INIT;
	cm->n_connecting--;
	errno = rc;
	RY_WARN("verbs", "rail %s: qp 0x%x: rdma_cm connect to qp 0x%x: %m",
		r->base.name, q->base.qp_num, q->cm_conn->dst_qpn);
}

/* The next step of q's connect on event ev (lock held). */
static void connect_step(struct ry__verbs_rail *r, struct ry__verbs_qp *q,
			 const struct rdma_cm_event *ev)
{
	struct ry__verbs_cm *cm = r->cm;
	struct ry__verbs_cm_conn *cc = q->cm_conn;
	struct rdma_conn_param cp = {0};
	struct cm_priv pd = {.magic = htonl(CM_MAGIC),
			     .dst_qpn = htonl(cc->dst_qpn),
			     .src_qpn = htonl(q->base.qp_num)},
		       rep = {0};
	uint8_t rd = r->dev_attr.max_qp_rd_atom < RY__VERBS_MAX_RD
			 ? (uint8_t)r->dev_attr.max_qp_rd_atom
			 : RY__VERBS_MAX_RD;
	int rc = 0;

	switch (ev->event) {
	case RDMA_CM_EVENT_ADDR_RESOLVED:
		if (rdma_resolve_route(q->cm_id, RY__VERBS_CM_WAIT_MS / 2))
			rc = errno;
		break;
	case RDMA_CM_EVENT_ROUTE_RESOLVED:
		fence_to(r, &pd);
		cp.private_data = &pd;
		cp.private_data_len = sizeof(pd);
		cp.qp_num = q->base.qp_num;
		cp.responder_resources = rd;
		cp.initiator_depth = rd;
		cp.retry_count = cc->retry_cnt;
		cp.rnr_retry_count = cc->rnr_retry;
		cp.flow_control = 1;
		if (rdma_connect(q->cm_id, &cp))
			rc = errno;
		break;
	case RDMA_CM_EVENT_CONNECT_RESPONSE:
	case RDMA_CM_EVENT_ESTABLISHED:
		/* an external QP: IB/RoCE stop at the REP for us to move it;
		 * the iWARP CM moves it to RTS itself and says ESTABLISHED */
		if (ev->param.conn.private_data &&
		    ev->param.conn.private_data_len >= sizeof(rep)) {
			memcpy(&rep, ev->param.conn.private_data, sizeof(rep));
			fence_from(q, &rep);
		}
		if (!cm->iwarp) {
			if (ev->event != RDMA_CM_EVENT_CONNECT_RESPONSE)
				return; /* the RTU's echo: connected already */
			rc = cm_to_rtr(r, q, q->cm_id);
			if (!rc && rdma_establish(q->cm_id))
				rc = errno;
		}
		if (!rc) {
			q->cm_rqpn = cc->dst_qpn & 0xffffff;
			q->cm_state = CMQ_CONNECTED;
			cm->n_connecting--;
			RY_DBG(
			    "verbs",
			    "rail %s: qp 0x%x: connected to qp 0x%x port %u",
			    r->base.name, q->base.qp_num, q->cm_rqpn,
			    ntohs(((struct sockaddr_in *)&cc->dst)->sin_port));
			return;
		}
		break;
	case RDMA_CM_EVENT_REJECTED:
		RY_DBG("verbs", "rail %s: qp 0x%x: rdma_cm REJ (status %d)",
		       r->base.name, q->base.qp_num, ev->status);
		/* the peer's CM still holds this QP number's last connection
		 * (a QP reset and connected again before its DREQ was done):
		 * it ends that one now, and a new REQ in a moment is taken */
		if (ev->status == CM_REJ_STALE_CONN &&
		    ry__now_ns() + CM_STALE_WAIT_NS < cc->deadline) {
			bury_locked(cm, q->cm_id);
			q->cm_id = NULL;
			cc->retry_at = ry__now_ns() + CM_STALE_WAIT_NS;
			return;
		}
		rc = ECONNREFUSED;
		break;
	case RDMA_CM_EVENT_ADDR_ERROR:
	case RDMA_CM_EVENT_ROUTE_ERROR:
	case RDMA_CM_EVENT_UNREACHABLE:
		rc = EHOSTUNREACH;
		break;
	default:
		RY_WARN("verbs", "rail %s: qp 0x%x: rdma_cm %s (status %d)",
			r->base.name, q->base.qp_num, rdma_event_str(ev->event),
			ev->status);
		rc = EPROTO;
		break;
	}
	if (rc)
		connect_end(r, q, rc);
}

/* The connects' clocks (lock held): a stale REJ's new REQ, deadlines. */
static void connect_timers(struct ry__verbs_rail *r)
{
	struct ry__verbs_cm *cm = r->cm;
	uint64_t now = ry__now_ns();
	int rc;

	for (struct ry__verbs_qp *q = cm->qps; q; q = q->cm_next) {
		struct ry__verbs_cm_conn *cc = q->cm_conn;

		if (q->cm_state != CMQ_CONNECTING || !cc)
			continue;
		if (now >= cc->deadline) {
			connect_end(r, q, ETIMEDOUT);
		} else if (cc->retry_at && now >= cc->retry_at) {
			cc->retry_at = 0;
			rc = connect_begin(r, q);
			if (rc)
				connect_end(r, q, rc);
		}
	}
}

/* An event of one of our own connects: true when it was one. */
static bool on_connect_event(struct ry__verbs_rail *r,
			     const struct rdma_cm_event *ev)
{
	struct ry__verbs_cm *cm = r->cm;
	struct ry__verbs_qp *q;

	pthread_mutex_lock(&cm->lock);
	q = find_id(cm, ev->id);
	if (q && q->cm_state == CMQ_CONNECTING)
		connect_step(r, q, ev);
	pthread_mutex_unlock(&cm->lock);
	return q != NULL;
}

/* Start q's connect to the peer's QP named in attr (lock held). */
static int connect_start(struct ry__verbs_rail *r, struct ry__verbs_qp *q,
			 const struct ry_qp_attr *attr)
{
	struct ry__verbs_cm *cm = r->cm;
	struct ry__verbs_cm_conn *cc = q->cm_conn;
	uint64_t one = 1;
	int rc;

	if (!attr->remote.udp_port)
		return EINVAL; /* the peer's rail does not use rdma_cm */
	if (!port_up(r))
		return ENETDOWN; /* a REQ now could cost the port its QP1 */
	if (!cc) {
		cc = calloc(1, sizeof(*cc));
		if (!cc)
			return ENOMEM;
		q->cm_conn = cc;
	}
	memset(cc, 0, sizeof(*cc));
	gid_sockaddr(attr->remote.gid, attr->remote.udp_port, &cc->dst);
	cc->dst_qpn = attr->remote.qpn;
	cc->retry_cnt = (uint8_t)(attr->retry_cnt > 6 ? 6 : attr->retry_cnt);
	cc->rnr_retry = (uint8_t)(attr->rnr_retry > 6 ? 6 : attr->rnr_retry);
	cc->deadline = ry__now_ns() + RY__VERBS_CM_WAIT_MS * 1000000ull;
	rc = connect_begin(r, q);
	if (rc)
		return rc;
	q->cm_state = CMQ_CONNECTING;
	cm->n_connecting++;
	/* the thread's poll learns of a deadline to keep */
	if (write(cm->wake_fd, &one, sizeof(one)) != sizeof(one))
		RY_ERR("verbs", "waking the rdma_cm thread: %m");
	return EAGAIN;
}

/*
 * RTR through the CM: 0 or a positive errno, as to_rtr().  The first call
 * on a QP in INIT starts its connect and answers EAGAIN; the rail thread
 * drives it (address, route, REQ, REP, RTR, RTU) and the calls after
 * answer EAGAIN until it ended: 0 once connected, or why it failed (the
 * QP back in INIT).  The caller's thread never waits for the network.
 */
int ry__verbs_cm_rtr(struct ry__verbs_rail *r, struct ry__verbs_qp *q,
		     const struct ry_qp_attr *attr)
{
	struct ry__verbs_cm *cm = r->cm;
	int rc;

	pthread_mutex_lock(&cm->lock);
	switch (q->cm_state) {
	case CMQ_INIT:
		if (q->cm_conn && q->cm_conn->err &&
		    q->cm_conn->dst_qpn == attr->remote.qpn) {
			rc = q->cm_conn->err; /* said once */
			q->cm_conn->err = 0;
			q->cm_conn->dst_qpn = 0;
		} else {
			rc = connect_start(r, q, attr);
		}
		break;
	case CMQ_CONNECTING:
		rc = EAGAIN;
		break;
	case CMQ_CONNECTED:
	case CMQ_ACCEPTED:
		/* the connection must be with the QP the control channel
		 * named */
		rc = q->cm_rqpn == (attr->remote.qpn & 0xffffff) ? 0
								 : ECONNREFUSED;
		if (rc)
			RY_WARN("verbs",
				"rail %s: qp 0x%x: connected by qp 0x%x, not "
				"the peer's 0x%x",
				r->base.name, q->base.qp_num, q->cm_rqpn,
				attr->remote.qpn);
		break;
	default:
		rc = EINVAL;
		break;
	}
	pthread_mutex_unlock(&cm->lock);
	return rc;
}

bool ry__verbs_cm_rts_done(struct ry__verbs_rail *r, struct ry__verbs_qp *q,
			   uint32_t *sq_psn)
{
	/* the rail thread wrote it when it accepted */
	pthread_mutex_lock(&r->cm->lock);
	*sq_psn = q->cm_sq_psn;
	pthread_mutex_unlock(&r->cm->lock);
	return r->cm->iwarp;
}
