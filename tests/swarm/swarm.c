// SPDX-License-Identifier: BSD-2-Clause
/*
 * ry-swarm: emulate many client nodes against one `railyard serve`,
 * from one process, to see what the server does with thousands of peers.
 *
 * Each emulated node is what the server sees of a real one: its own
 * control session (TCP, HELLO with its own node name, incarnation and
 * control address, then CONN_REQ per rail), and one reliable-connected QP
 * per rail that answers the server's probes and heartbeats, sends its own
 * heartbeats when idle (as src/heartbeat.c does for a long-idle
 * connection: only the lower incarnation of the two ends sends them),
 * acknowledges fences and reconnects after a failure.  What makes it cheap: the
 * nodes share soft rails, one per rail network for every --group nodes (one UDP
 * socket each, a shared receive queue), so a node costs one TCP socket, four
 * soft QPs of 4 work requests (about 1.2 KiB each), a 1 KiB receive buffer for
 * its session and this file's bookkeeping: about 7 KiB in all, not a manager's
 * 5 MiB and 24 fds.  The node moves no data of its own: run `railyard bench
 * --verify` beside it for that (tests/bench/scale.sh does).
 *
 * The control frames go through the protocol's codec (src/ctl/wire.h; no
 * key_file).  Only the QP verbs come from the library (rails/rail.h over
 * the soft provider).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include "rails/rail.h"
#include "src/ctl/wire.h"

/* Exit codes, as the railyard tool's. */
enum { RY_EXIT_OK = 0, RY_EXIT_FAIL = 1, RY_EXIT_USAGE = 2 };

static const char usage_text[] =
    "usage: ry-swarm --server ADDR:PORT --rail NETWORK=IP [--rail ...]\n"
    "                [--nodes N] [--source IP] [--rate N]\n"
    "                [--heartbeat-ms MS] [--idle-heartbeat-ms MS]\n"
    "                [--group N] [--duration S] [--kill N]\n"
    "                [--status-file PATH] [--json]\n"
    "\n"
    "Emulate N client nodes against one `railyard serve` at ADDR:PORT\n"
    "(its control address).  Each node has its own control session, name\n"
    "(swarm-PID-I), incarnation and control address (SOURCE:20000+I, never\n"
    "listened on), and one connection per --rail: the rail networks of the\n"
    "server to pair with and the local IP to use for each (up to 8).  The\n"
    "nodes connect (at most --rate new nodes a second, default 2000), then\n"
    "idle: they answer probes, heartbeats and fences and reconnect a rail\n"
    "that fails, as a real node does, and send a heartbeat on every idle\n"
    "connection every max(--heartbeat-ms, --idle-heartbeat-ms) (defaults\n"
    "1000 and 30000, as the server's heartbeat_ms and idle_heartbeat_ms\n"
    "should be; --heartbeat-ms 0: never) where their incarnation is the\n"
    "lower of the two, as a real node does once a connection has been\n"
    "idle for a second.  They move no data; run `railyard bench --verify`\n"
    "beside the swarm for that.\n"
    "\n"
    "Cost per node: one TCP socket and four soft-rail QPs (about 7 KiB);\n"
    "every --group nodes (default 256) share one soft rail per network\n"
    "(a UDP socket and about 5 fds, about 1.5 MiB).  RLIMIT_NOFILE is\n"
    "raised as far as the hard limit allows.  The server must admit the\n"
    "nodes: "
    "accept = {\"PREFIX\"} covering SOURCE and max_sessions_per_source >= N\n"
    "(they all come from one address).\n"
    "\n"
    "A progress line every second on stderr: nodes admitted, connections\n"
    "up per rail, failures.  --status-file PATH: the same as JSON,\n"
    "rewritten every 100 ms (for scripts that pull a rail and wait for it\n"
    "to come back).  Runs --duration S seconds after every connection is\n"
    "up (default 0: until SIGINT/SIGTERM), then closes every session.\n"
    "--json: the result as one JSON object on stdout.\n"
    "SIGUSR1 kills the last --kill nodes still alive (default a tenth of\n"
    "them) at once, as kill -9 of their processes would look to the\n"
    "server: their sessions close, their QPs vanish, they never return.\n"
    "Exit codes: 0 every connection came up, 1 otherwise or cannot\n"
    "start, 2 usage error.\n";

#define MAXR 8
#define RBUF 1024
#define RECV_BUFS 1024
#define RECV_LEN 256
#define QP_WR 4
#define MH_LEN sizeof(struct ry__mhdr)

enum cstate { C_IDLE = 0, C_REQ, C_PROBING, C_ACTIVE, C_BACKOFF };
/* N_DEAD: killed by SIGUSR1, never dialed again */
enum nstate { N_WAIT = 0, N_DIALING, N_HELLO, N_READY, N_DOWN, N_DEAD };

struct tag {
	int kind; /* 0 node, 1 rail */
};

struct node;

struct conn {
	struct ry_qp *qp;
	struct conn *hnext;
	uint8_t st;   /* enum cstate */
	uint8_t ridx; /* the server's rail it pairs with (0xff none) */
	bool passive; /* the server's CONN_REQ: probe when it probes */
	bool probe_out, hb_out;
	uint32_t attempt;
	uint64_t deadline, last_tx, last_rx;
};

struct node {
	struct tag tag;
	int fd;
	uint8_t st; /* enum nstate */
	bool want_out;
	uint16_t rlen;
	uint32_t idx;
	uint64_t inc, srv_inc;
	uint64_t next_ns;
	unsigned char *rbuf; /* RBUF while a session is open */
	struct conn c[MAXR];
};

struct srail {
	struct tag tag;
	struct ry_rail *r;
	struct ry_pd *pd;
	struct ry_mr *mr;
	unsigned char *buf; /* 2 headers, then RECV_BUFS receive buffers */
	struct ry_rail_attr attr;
	unsigned ri;
	bool dirty; /* work posted: progress it before sleeping */
	struct conn *hash[1024];
};

struct swarm {
	unsigned n, nr, group, rate;
	unsigned kill, killed; /* SIGUSR1 kills kill more nodes */
	char net[MAXR][64], ip[MAXR][64];
	struct sockaddr_in srv;
	char source[64];
	uint64_t hb_ns;	     /* 0: no heartbeats */
	uint64_t idle_hb_ns; /* max(--heartbeat-ms, --idle-heartbeat-ms) */
	double duration;
	const char *status_file;
	bool json;
	int ep;
	struct node *nodes;
	struct srail *rails; /* ngroups x nr */
	unsigned ngroups;
	/* counts */
	unsigned ready, active[MAXR];
	uint64_t conn_fail, ctl_lost, rejects, fences, hb_sent, dials;
	double t0, t_all;
};

static volatile sig_atomic_t stop, kill_req;

static void on_sig(int s)
{
	(void)s;
	stop = 1;
}

static void on_usr1(int s)
{
	(void)s;
	kill_req = 1;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t rnd64(void)
{
	uint64_t v = 0;

	while (!v)
		v = ((uint64_t)random() << 40) ^ ((uint64_t)random() << 20) ^
		    (uint64_t)random();
	return v;
}

/* ---- nodes and connections ---- */

static struct srail *rail_of(struct swarm *sw, const struct node *nd,
			     unsigned ri)
{
	return &sw->rails[(nd->idx / sw->group) * sw->nr + ri];
}

static struct node *node_of(struct swarm *sw, const struct conn *c,
			    unsigned *ri)
{
	/* conns live inside nodes: find which by address */
	size_t off = (size_t)((const char *)c - (const char *)sw->nodes);
	struct node *nd = &sw->nodes[off / sizeof(struct node)];

	*ri = (unsigned)(c - nd->c);
	return nd;
}

static unsigned hbucket(uint32_t qpn)
{
	return (qpn * 2654435761u) >> 22 & 1023;
}

static void send_conn(struct swarm *sw, struct node *nd, uint16_t type,
		      const struct ry__wire_conn *wc);

static void conn_drop(struct swarm *sw, struct node *nd, unsigned ri,
		      uint64_t now, bool failed)
{
	struct conn *c = &nd->c[ri];
	struct srail *sr = rail_of(sw, nd, ri);

	if (c->st == C_ACTIVE)
		sw->active[ri]--;
	if (failed && c->st == C_ACTIVE)
		sw->conn_fail++;
	if (c->qp) {
		struct conn **pp = &sr->hash[hbucket(c->qp->qp_num)];

		for (; *pp; pp = &(*pp)->hnext)
			if (*pp == c) {
				*pp = c->hnext;
				break;
			}
		ry__rail_destroy_qp(c->qp);
		c->qp = NULL;
	}
	c->st = nd->st == N_READY ? C_BACKOFF : C_IDLE;
	/* 100 ms to 200 ms, as reconnect_min_ms with jitter */
	c->deadline = now + 100000000ull + (uint64_t)random() % 100000000ull;
	c->probe_out = c->hb_out = c->passive = false;
}

static int conn_qp(struct swarm *sw, struct node *nd, unsigned ri)
{
	struct conn *c = &nd->c[ri];
	struct srail *sr = rail_of(sw, nd, ri);
	struct ry_qp_init init = {.max_send_wr = QP_WR, .context = c};
	struct ry_qp_attr attr = {
	    .access = RY_ACCESS_LOCAL_WRITE | RY_ACCESS_REMOTE_WRITE |
		      RY_ACCESS_REMOTE_READ,
	};
	struct conn **b;

	if (ry__rail_create_qp(sr->pd, &init, &c->qp))
		return -1;
	if (ry__rail_modify_qp(c->qp, RY_QPS_INIT, &attr)) {
		ry__rail_destroy_qp(c->qp);
		c->qp = NULL;
		return -1;
	}
	b = &sr->hash[hbucket(c->qp->qp_num)];
	c->hnext = *b;
	*b = c;
	return 0;
}

static void local_ep(struct srail *sr, struct conn *c,
		     struct ry_qp_endpoint *ep)
{
	*ep = c->qp->local;
	ep->qpn = c->qp->qp_num;
	if (!ep->udp_port) {
		memcpy(ep->gid, sr->attr.local.gid, 16);
		ep->udp_port = sr->attr.local.udp_port;
	}
	if (!ep->mtu)
		ep->mtu = sr->attr.mtu;
}

static int to_rts(struct srail *sr, struct conn *c,
		  const struct ry_qp_endpoint *rem)
{
	struct ry_qp_attr attr = {
	    .remote = *rem,
	    .mtu =
		rem->mtu && rem->mtu < sr->attr.mtu ? rem->mtu : sr->attr.mtu,
	    .ack_timeout_us = 20000,
	    .retry_cnt = 5,
	    .rnr_retry = 6,
	    .min_rnr_timer_us = 1000,
	    .max_rd_atomic = 16,
	};

	if (ry__rail_modify_qp(c->qp, RY_QPS_RTR, &attr))
		return -1;
	return ry__rail_modify_qp(c->qp, RY_QPS_RTS, &attr) ? -1 : 0;
}

static int post_ctl(struct swarm *sw, struct node *nd, unsigned ri, int type,
		    uint64_t now)
{
	struct conn *c = &nd->c[ri];
	struct srail *sr = rail_of(sw, nd, ri);
	struct ry_send_wr wr = {
	    .wr_id = (uintptr_t)c,
	    .opcode = RY_WR_SEND,
	    .sge = {.addr =
			(uintptr_t)sr->buf + (type == MT_PROBE ? MH_LEN : 0),
		    .length = MH_LEN,
		    .lkey = sr->mr->lkey},
	};

	if (ry__rail_post_send(c->qp, &wr, 1))
		return -1;
	sr->dirty = true;
	c->last_tx = now;
	return 0;
}

static void conn_start(struct swarm *sw, struct node *nd, unsigned ri,
		       uint64_t now)
{
	struct conn *c = &nd->c[ri];
	struct ry__wire_conn wc = {.wc_src = (uint8_t)ri};

	if (c->ridx == 0xff)
		return;
	if (conn_qp(sw, nd, ri)) {
		conn_drop(sw, nd, ri, now, false);
		return;
	}
	local_ep(rail_of(sw, nd, ri), c, &wc.wc_ep);
	c->attempt++;
	c->st = C_REQ;
	c->passive = false;
	c->deadline = now + 2000000000ull;
	wc.wc_dst = c->ridx;
	wc.wc_attempt = c->attempt;
	send_conn(sw, nd, CTL_CONN_REQ, &wc);
}

static void conn_activate(struct swarm *sw, struct node *nd, unsigned ri,
			  uint64_t now)
{
	struct conn *c = &nd->c[ri];
	unsigned i, all = 0;

	c->st = C_ACTIVE;
	c->last_rx = now;
	/* a random phase: nodes that came up together do not all beat at
	 * once, as real ones started at different times do not */
	if (sw->hb_ns)
		c->last_tx = now - (uint64_t)random() % sw->idle_hb_ns;
	sw->active[ri]++;
	for (i = 0; i < sw->nr; i++)
		all += sw->active[i];
	if (all == sw->n * sw->nr && !sw->t_all)
		sw->t_all = (double)now / 1e9;
}

/* ---- the control session ---- */

static void node_end(struct swarm *sw, struct node *nd, uint64_t now,
		     bool killed)
{
	unsigned ri;

	if (nd->st == N_DEAD)
		return; /* gone for good (the exit closes every node) */
	if (nd->st == N_READY)
		sw->ready--;
	if (nd->st >= N_DIALING && nd->st <= N_READY && !killed)
		sw->ctl_lost++;
	nd->st = N_DOWN;
	for (ri = 0; ri < sw->nr; ri++)
		conn_drop(sw, nd, ri, now, !killed);
	if (nd->fd >= 0) {
		epoll_ctl(sw->ep, EPOLL_CTL_DEL, nd->fd, NULL);
		close(nd->fd);
	}
	nd->fd = -1;
	free(nd->rbuf);
	nd->rbuf = NULL;
	nd->rlen = 0;
	nd->want_out = false;
	nd->next_ns = now + 1000000000ull + (uint64_t)random() % 1000000000ull;
	if (killed)
		nd->st = N_DEAD;
}

static void node_close(struct swarm *sw, struct node *nd, uint64_t now)
{
	node_end(sw, nd, now, false);
}

/*
 * SIGUSR1: the last --kill nodes still alive die at once, as kill -9 of
 * their processes would look to the server: the control session closes
 * (FIN), their QPs vanish without a word (what reaches them is dropped
 * as to an unknown QPN), and they never come back.  The server must
 * notice, release them, and keep serving the rest.
 */
static void kill_nodes(struct swarm *sw, uint64_t now)
{
	unsigned done = 0;

	for (unsigned i = sw->n; i-- > 0 && done < sw->kill;) {
		struct node *nd = &sw->nodes[i];

		if (nd->st == N_DEAD)
			continue;
		node_end(sw, nd, now, true);
		done++;
	}
	sw->killed += done;
	fprintf(stderr, "swarm: killed %u nodes (%u in all)\n", done,
		sw->killed);
}

static void send_frame(struct swarm *sw, struct node *nd, uint16_t type,
		       const struct ry__wbuf *w)
{
	unsigned char f[RY__CTL_HDR + RY__CTL_MAX_FRAME];
	int n =
	    w->bad ? -EMSGSIZE : ry__wire_frame(f, sizeof(f), type, w->b, w->n);
	ssize_t sent;

	if (nd->fd < 0 || n < 0)
		return;
	/* frames are small and rare: a full socket buffer is a dead server */
	sent = send(nd->fd, f, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT);
	if (sent != n)
		node_close(sw, nd, now_ns());
}

static void send_conn(struct swarm *sw, struct node *nd, uint16_t type,
		      const struct ry__wire_conn *wc)
{
	unsigned char b[RY__WIRE_CONN_MAX];
	struct ry__wbuf w;

	ry__wbuf_init(&w, b, sizeof(b));
	ry__wire_conn_put(&w, type, wc);
	send_frame(sw, nd, type, &w);
}

static void send_hello(struct swarm *sw, struct node *nd)
{
	static struct ry__wire_hello h;
	static unsigned char b[RY__CTL_MAX_FRAME];
	struct ry__wbuf w;
	unsigned ri;

	memset(&h, 0, sizeof(h));
	h.wh_node = nd->inc;
	snprintf(h.wh_name, sizeof(h.wh_name), "swarm-%d-%u", (int)getpid(),
		 nd->idx);
	snprintf(h.wh_addr, sizeof(h.wh_addr), "%s:%u", sw->source,
		 20000 + nd->idx % 40000);
	h.wh_n = sw->nr;
	for (ri = 0; ri < sw->nr; ri++) {
		struct ry__wire_rail *wr = &h.wh_rail[ri];

		snprintf(wr->wr_name, sizeof(wr->wr_name), "s%u", ri);
		snprintf(wr->wr_network, sizeof(wr->wr_network), "%s",
			 sw->net[ri]);
		wr->wr_ep = rail_of(sw, nd, ri)->attr.local;
	}
	/* no key */
	ry__wbuf_init(&w, b, sizeof(b));
	ry__wire_hello_put(&w, &h, false);
	nd->st = N_HELLO;
	send_frame(sw, nd, CTL_HELLO, &w);
}

static int on_hello_ack(struct swarm *sw, struct node *nd,
			const unsigned char *body, size_t n, uint64_t now)
{
	static struct ry__wire_hello h;
	unsigned i, ri;

	if (nd->st != N_HELLO || ry__wire_hello_get(body, n, true, &h))
		return -1;
	nd->srv_inc = h.wh_node;
	for (ri = 0; ri < sw->nr; ri++)
		nd->c[ri].ridx = 0xff;
	for (i = 0; i < h.wh_n; i++)
		for (ri = 0; ri < sw->nr; ri++)
			if (!strcmp(h.wh_rail[i].wr_network, sw->net[ri]) &&
			    nd->c[ri].ridx == 0xff)
				nd->c[ri].ridx = (uint8_t)i;
	nd->st = N_READY;
	sw->ready++;
	for (ri = 0; ri < sw->nr; ri++)
		conn_start(sw, nd, ri, now);
	return 0;
}

/* The server's CONN_REQ (it reconnects a rail that failed). */
static void on_conn_req(struct swarm *sw, struct node *nd, unsigned src,
			unsigned ri, uint32_t attempt,
			const struct ry_qp_endpoint *rep, uint64_t now)
{
	struct conn *c = &nd->c[ri];
	struct srail *sr = rail_of(sw, nd, ri);
	struct ry__wire_conn wc = {.wc_src = (uint8_t)ri,
				   .wc_dst = (uint8_t)src,
				   .wc_attempt = attempt};
	int err = 0;

	if (ri >= sw->nr || c->ridx != src) {
		err = -EINVAL;
	} else if (c->st == C_REQ && nd->inc > nd->srv_inc) {
		return; /* ours wins */
	} else {
		if (c->qp)
			conn_drop(sw, nd, ri, now, true);
		if (conn_qp(sw, nd, ri) || to_rts(sr, c, rep)) {
			conn_drop(sw, nd, ri, now, false);
			err = -EAGAIN;
		}
	}
	if (err) {
		wc.wc_err = err;
		send_conn(sw, nd, CTL_CONN_REJ, &wc);
		return;
	}
	local_ep(sr, c, &wc.wc_ep);
	c->st = C_PROBING;
	c->passive = true;
	c->probe_out = false;
	c->deadline = now + 2000000000ull;
	send_conn(sw, nd, CTL_CONN_REP, &wc);
}

static int dispatch(struct swarm *sw, struct node *nd, unsigned type,
		    const unsigned char *body, size_t n, uint64_t now)
{
	struct ry__wire_fence wf;
	struct ry__wire_conn wc;
	unsigned src, dst;
	uint32_t attempt, err;
	struct conn *c;

	if (type == CTL_HELLO_ACK)
		return on_hello_ack(sw, nd, body, n, now);
	if (nd->st != N_READY)
		return -1;
	switch (type) {
	case CTL_CONN_REQ:
	case CTL_CONN_REP:
	case CTL_CONN_REJ:
		if (ry__wire_conn_get(body, n, (uint16_t)type, &wc) ||
		    wc.wc_dst >= sw->nr)
			return -1;
		src = wc.wc_src;
		dst = wc.wc_dst;
		attempt = wc.wc_attempt;
		err = (uint32_t)wc.wc_err;
		c = &nd->c[dst];
		if (type == CTL_CONN_REQ) {
			on_conn_req(sw, nd, src, dst, attempt, &wc.wc_ep, now);
			return 0;
		}
		if (c->st != C_REQ || c->attempt != attempt || c->ridx != src)
			return 0;
		if (type == CTL_CONN_REJ) {
			sw->rejects++;
			conn_drop(sw, nd, dst, now, false);
			/* as a real node does (src/conn.c): the server's
			 * link is down and it connects when it is back: ask
			 * again only after about reconnect_max_ms (5 s);
			 * busy with other nodes' attempts: after a half to
			 * one and a half times its retry-after (at most 5 s),
			 * or within 1 s if it gave none */
			if (err == (uint32_t)-ENETDOWN) {
				c->deadline =
				    now + 2500000000ull +
				    (uint64_t)random() % 5000000000ull;
			} else if (err == (uint32_t)-EBUSY && wc.wc_retry_ms) {
				uint64_t ns =
				    (wc.wc_retry_ms < 5000 ? wc.wc_retry_ms
							   : 5000) *
				    1000000ull;

				c->deadline = now + ns / 2 +
					      (uint64_t)random() % (ns + 1);
			} else if (err == (uint32_t)-EBUSY) {
				c->deadline =
				    now + 100000000ull +
				    (uint64_t)random() % 1000000000ull;
			}
			return 0;
		}
		if (to_rts(rail_of(sw, nd, dst), c, &wc.wc_ep) ||
		    post_ctl(sw, nd, dst, MT_PROBE, now)) {
			conn_drop(sw, nd, dst, now, false);
			return 0;
		}
		c->st = C_PROBING;
		c->probe_out = true;
		c->deadline = now + 2000000000ull;
		return 0;
	case CTL_FENCE_REQ:
		if (ry__wire_fence_get(body, n, false, &wf))
			return -1;
		sw->fences++;
		/* our QPs of those connections go to ERR before the ack */
		for (unsigned i = 0; i < wf.wf_n; i++) {
			dst = wf.wf_pair[i].fp_dst;
			if (dst < sw->nr && nd->c[dst].qp &&
			    nd->c[dst].qp->qp_num == wf.wf_pair[i].fp_dst_qpn) {
				ry__rail_modify_qp(nd->c[dst].qp, RY_QPS_ERR,
						   NULL);
				conn_drop(sw, nd, dst, now, true);
			}
		}
		{
			unsigned char b[16];
			struct ry__wbuf w;

			wf.wf_caps = RY__FENCE_CAP_PAIRS;
			ry__wbuf_init(&w, b, sizeof(b));
			ry__wire_fence_put(&w, true, &wf);
			send_frame(sw, nd, CTL_FENCE_ACK, &w);
		}
		return 0;
	case CTL_FENCE_ACK:
		return 0;
	}
	return -1;
}

static void node_read(struct swarm *sw, struct node *nd, uint64_t now)
{
	for (;;) {
		ssize_t got = recv(nd->fd, nd->rbuf + nd->rlen, RBUF - nd->rlen,
				   MSG_DONTWAIT);
		size_t off = 0;

		if (got == 0 || (got < 0 && errno != EAGAIN &&
				 errno != EWOULDBLOCK && errno != EINTR)) {
			node_close(sw, nd, now);
			return;
		}
		if (got < 0)
			return;
		nd->rlen = (uint16_t)(nd->rlen + got);
		while (nd->rlen - off >= RY__CTL_HDR) {
			const unsigned char *f = nd->rbuf + off;
			struct ry__ctl_hdr h;
			uint32_t len;

			ry__ctl_hdr_get(f, &h);
			len = h.h_len;
			if (len > RBUF - RY__CTL_HDR) {
				node_close(sw, nd, now);
				return;
			}
			if (nd->rlen - off < RY__CTL_HDR + len)
				break;
			if (dispatch(sw, nd, h.h_type, f + RY__CTL_HDR, len,
				     now)) {
				node_close(sw, nd, now);
				return;
			}
			if (nd->fd < 0)
				return;
			off += RY__CTL_HDR + len;
		}
		memmove(nd->rbuf, nd->rbuf + off, nd->rlen - off);
		nd->rlen = (uint16_t)(nd->rlen - off);
	}
}

static void node_dial(struct swarm *sw, struct node *nd, uint64_t now)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	struct epoll_event ev = {.events = EPOLLIN | EPOLLOUT, .data.ptr = nd};
	int one = 1, fd;

	nd->inc = rnd64(); /* a new process each time, as a real restart */
	fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	nd->rbuf = malloc(RBUF);
	if (fd < 0 || !nd->rbuf) {
		if (fd >= 0)
			close(fd);
		nd->fd = -1;
		node_close(sw, nd, now);
		return;
	}
	nd->fd = fd;
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if (sw->source[0] && inet_pton(AF_INET, sw->source, &sa.sin_addr) == 1)
		bind(fd, (struct sockaddr *)&sa, sizeof(sa));
	sw->dials++;
	if (connect(fd, (struct sockaddr *)&sw->srv, sizeof(sw->srv)) &&
	    errno != EINPROGRESS) {
		node_close(sw, nd, now);
		return;
	}
	nd->st = N_DIALING;
	nd->want_out = true;
	nd->next_ns = now + 5000000000ull; /* handshake deadline */
	epoll_ctl(sw->ep, EPOLL_CTL_ADD, fd, &ev);
}

static void node_io(struct swarm *sw, struct node *nd, uint32_t events,
		    uint64_t now)
{
	if (nd->fd < 0) /* closed earlier in this batch of events */
		return;
	if (nd->st == N_DIALING) {
		int err = 0;
		socklen_t l = sizeof(err);

		if (!(events & (EPOLLOUT | EPOLLERR | EPOLLHUP)))
			return;
		getsockopt(nd->fd, SOL_SOCKET, SO_ERROR, &err, &l);
		if (err) {
			node_close(sw, nd, now);
			return;
		}
		struct epoll_event ev = {.events = EPOLLIN, .data.ptr = nd};

		epoll_ctl(sw->ep, EPOLL_CTL_MOD, nd->fd, &ev);
		nd->want_out = false;
		send_hello(sw, nd);
		return;
	}
	if (events & (EPOLLIN | EPOLLERR | EPOLLHUP))
		node_read(sw, nd, now);
}

/* ---- rails ---- */

static struct conn *conn_by_qpn(struct srail *sr, uint32_t qpn)
{
	struct conn *c = sr->hash[hbucket(qpn)];

	while (c && (!c->qp || c->qp->qp_num != qpn))
		c = c->hnext;
	return c;
}

static void repost(struct srail *sr, uint64_t i)
{
	struct ry_recv_wr rwr = {
	    .wr_id = i,
	    .sge = {.addr = (uintptr_t)sr->buf + 2 * MH_LEN + i * RECV_LEN,
		    .length = RECV_LEN,
		    .lkey = sr->mr->lkey},
	};

	ry__rail_post_recv(sr->r, &rwr, 1);
}

static void rail_poll(struct swarm *sw, struct srail *sr, uint64_t now)
{
	struct ry_wc wc[64];
	int n, i;

	sr->dirty = false;
	ry__rail_progress(sr->r);
	while ((n = ry__rail_poll_cq(sr->r, wc, 64)) > 0) {
		for (i = 0; i < n; i++) {
			struct conn *c;
			struct node *nd;
			unsigned ri;

			if (wc[i].opcode == RY_WC_RECV) {
				repost(sr, wc[i].wr_id);
				c = conn_by_qpn(sr, wc[i].qp_num);
				if (!c || wc[i].status != RY_WC_SUCCESS)
					continue;
				nd = node_of(sw, c, &ri);
				c->last_rx = now;
				if (c->st == C_PROBING && c->passive &&
				    !c->probe_out) {
					if (post_ctl(sw, nd, ri, MT_PROBE, now))
						conn_drop(sw, nd, ri, now,
							  false);
					else
						c->probe_out = true;
				}
				continue;
			}
			c = (struct conn *)(uintptr_t)wc[i].wr_id;
			if (!c || !c->qp || c->qp->qp_num != wc[i].qp_num)
				continue; /* a QP we already dropped */
			nd = node_of(sw, c, &ri);
			if (wc[i].status != RY_WC_SUCCESS) {
				conn_drop(sw, nd, ri, now, true);
				continue;
			}
			c->hb_out = false;
			if (c->st == C_PROBING)
				conn_activate(sw, nd, ri, now);
		}
	}
}

static int rails_open(struct swarm *sw)
{
	unsigned g, ri;

	sw->ngroups = (sw->n + sw->group - 1) / sw->group;
	sw->rails = calloc((size_t)sw->ngroups * sw->nr, sizeof(*sw->rails));
	if (!sw->rails)
		return -ENOMEM;
	for (g = 0; g < sw->ngroups; g++)
		for (ri = 0; ri < sw->nr; ri++) {
			struct srail *sr = &sw->rails[g * sw->nr + ri];
			struct ry_rail_config rc = {.provider =
							RY_PROVIDER_SOFT};
			size_t len = 2 * MH_LEN + RECV_BUFS * RECV_LEN;
			struct epoll_event ev = {.events = EPOLLIN,
						 .data.ptr = sr};
			int ret;

			sr->tag.kind = 1;
			sr->ri = ri;
			snprintf(rc.name, sizeof(rc.name), "s%u.%u", g, ri);
			snprintf(rc.network, sizeof(rc.network), "%s",
				 sw->net[ri]);
			snprintf(rc.address, sizeof(rc.address), "%s",
				 sw->ip[ri]);
			rc.weight = 1;
			ret = ry__rail_open(&rc, &sr->r);
			if (ret) {
				fprintf(stderr,
					"ry-swarm: cannot open a soft "
					"rail on %s: %s\n",
					sw->ip[ri], strerror(-ret));
				return ret;
			}
			sr->buf = calloc(1, len);
			if (!sr->buf)
				return -ENOMEM;
			for (unsigned t = 0; t < 2; t++) {
				unsigned char *h = sr->buf + t * MH_LEN;

				ry__mhdr_put(h, t ? MT_PROBE : MT_HEARTBEAT, 0,
					     0, 0);
			}
			if ((ret = ry__rail_query(sr->r, &sr->attr)) ||
			    (ret = ry__rail_alloc_pd(sr->r, &sr->pd)) ||
			    (ret = ry__rail_reg_mr(sr->pd, sr->buf, len,
						   RY_ACCESS_LOCAL_WRITE,
						   &sr->mr))) {
				fprintf(stderr,
					"ry-swarm: soft rail setup: "
					"%s\n",
					strerror(-ret));
				return ret;
			}
			for (unsigned i = 0; i < RECV_BUFS; i++)
				repost(sr, i);
			epoll_ctl(sw->ep, EPOLL_CTL_ADD, ry__rail_fd(sr->r),
				  &ev);
		}
	return 0;
}

static void rails_close(struct swarm *sw)
{
	for (unsigned i = 0; sw->rails && i < sw->ngroups * sw->nr; i++) {
		struct srail *sr = &sw->rails[i];

		if (sr->mr)
			ry__rail_dereg_mr(sr->mr);
		if (sr->pd)
			ry__rail_dealloc_pd(sr->pd);
		if (sr->r)
			ry__rail_close(sr->r);
		free(sr->buf);
	}
	free(sw->rails);
}

/* ---- timers, output ---- */

static void tick(struct swarm *sw, uint64_t now, unsigned *budget)
{
	for (unsigned i = 0; i < sw->n; i++) {
		struct node *nd = &sw->nodes[i];

		if (nd->st == N_DEAD)
			continue;
		if (nd->st == N_WAIT || nd->st == N_DOWN) {
			if (now >= nd->next_ns && *budget && !stop) {
				(*budget)--;
				node_dial(sw, nd, now);
			}
			continue;
		}
		if (nd->st != N_READY) {
			if (now >= nd->next_ns)
				node_close(sw, nd, now); /* no HELLO_ACK */
			continue;
		}
		for (unsigned ri = 0; ri < sw->nr; ri++) {
			struct conn *c = &nd->c[ri];

			switch (c->st) {
			case C_BACKOFF:
			case C_IDLE:
				if (now >= c->deadline)
					conn_start(sw, nd, ri, now);
				break;
			case C_REQ:
			case C_PROBING:
				if (now >= c->deadline)
					conn_drop(sw, nd, ri, now, false);
				break;
			case C_ACTIVE: {
				uint64_t since = c->last_tx > c->last_rx
						     ? c->last_tx
						     : c->last_rx;

				/* the lower incarnation heartbeats, every
				 * idle_heartbeat_ms (src/heartbeat.c) */
				if (sw->hb_ns && !c->hb_out &&
				    nd->inc < nd->srv_inc &&
				    now - since >= sw->idle_hb_ns) {
					if (post_ctl(sw, nd, ri, MT_HEARTBEAT,
						     now))
						conn_drop(sw, nd, ri, now,
							  true);
					else {
						c->hb_out = true;
						sw->hb_sent++;
					}
				}
				break;
			}
			}
		}
	}
}

static unsigned total_active(const struct swarm *sw)
{
	unsigned all = 0;

	for (unsigned ri = 0; ri < sw->nr; ri++)
		all += sw->active[ri];
	return all;
}

static void status_json(const struct swarm *sw, FILE *f, double t)
{
	fprintf(f,
		"{\"t\": %.3f, \"nodes\": %u, \"ready\": %u, "
		"\"connections\": %u, \"active\": [",
		t, sw->n, sw->ready, total_active(sw));
	for (unsigned ri = 0; ri < sw->nr; ri++)
		fprintf(f, "%s%u", ri ? ", " : "", sw->active[ri]);
	fprintf(f,
		"], \"connect_s\": %.3f, \"conn_failures\": %" PRIu64
		", \"sessions_lost\": %" PRIu64 ", \"rejects\": %" PRIu64
		", \"fences\": %" PRIu64 ", \"heartbeats_sent\": %" PRIu64
		", \"dials\": %" PRIu64 ", \"killed\": %u",
		sw->t_all ? sw->t_all - sw->t0 : -1.0, sw->conn_fail,
		sw->ctl_lost, sw->rejects, sw->fences, sw->hb_sent, sw->dials,
		sw->killed);
	{
		struct ry_rail_stats sum = {0}, st;

		for (unsigned i = 0; i < sw->ngroups * sw->nr; i++) {
			if (!sw->rails[i].r ||
			    ry__rail_get_stats(sw->rails[i].r, &st))
				continue;
			sum.tx_packets += st.tx_packets;
			sum.rx_packets += st.rx_packets;
			sum.retransmits += st.retransmits;
			sum.rnr_naks_sent += st.rnr_naks_sent;
			sum.rx_dropped += st.rx_dropped;
			sum.rx_bad_qpn += st.rx_bad_qpn;
			sum.dup_rcvd += st.dup_rcvd;
		}
		fprintf(
		    f,
		    ", \"rails\": {\"tx_packets\": %" PRIu64
		    ", \"rx_packets\": %" PRIu64 ", \"retransmits\": %" PRIu64
		    ", \"rnr_naks_sent\": %" PRIu64 ", \"rx_dropped\": %" PRIu64
		    ", \"rx_bad_qpn\": %" PRIu64 ", \"dup_rcvd\": %" PRIu64
		    "}}\n",
		    sum.tx_packets, sum.rx_packets, sum.retransmits,
		    sum.rnr_naks_sent, sum.rx_dropped, sum.rx_bad_qpn,
		    sum.dup_rcvd);
	}
}

static void write_status(const struct swarm *sw, double t)
{
	char tmp[4096];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.tmp", sw->status_file);
	f = fopen(tmp, "w");
	if (!f)
		return;
	status_json(sw, f, t);
	if (fclose(f) == 0)
		rename(tmp, sw->status_file);
}

static void raise_nofile(unsigned want)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		return;
	if (rl.rlim_cur >= want)
		return;
	rl.rlim_cur = want < rl.rlim_max ? want : rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_max < want) {
		rl.rlim_max = rl.rlim_cur = want;
		setrlimit(RLIMIT_NOFILE, &rl); /* root may raise the hard one */
	}
}

static int parse_args(struct swarm *sw, int argc, char **argv)
{
	char host[64];
	unsigned port;
	int i;

	sw->n = 100;
	sw->group = 256;
	sw->rate = 2000;
	sw->hb_ns = 1000000000ull;
	sw->idle_hb_ns = 30000000000ull;
	for (i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			fputs(usage_text, stdout);
			exit(RY_EXIT_OK);
		}
		if (!strcmp(a, "--json")) {
			sw->json = true;
			continue;
		}
		if (!v)
			goto bad;
		i++;
		if (!strcmp(a, "--server")) {
			if (sscanf(v, "%63[^:]:%u", host, &port) != 2 ||
			    port > 65535 ||
			    inet_pton(AF_INET, host, &sw->srv.sin_addr) != 1)
				goto badv;
			sw->srv.sin_family = AF_INET;
			sw->srv.sin_port = htons((uint16_t)port);
		} else if (!strcmp(a, "--rail")) {
			const char *eq = strchr(v, '=');
			struct in_addr ia;

			if (sw->nr == MAXR || !eq || eq == v ||
			    (size_t)(eq - v) >= sizeof(sw->net[0]) ||
			    inet_pton(AF_INET, eq + 1, &ia) != 1)
				goto badv;
			memcpy(sw->net[sw->nr], v, (size_t)(eq - v));
			snprintf(sw->ip[sw->nr], sizeof(sw->ip[0]), "%s",
				 eq + 1);
			sw->nr++;
		} else if (!strcmp(a, "--source")) {
			struct in_addr ia;

			if (inet_pton(AF_INET, v, &ia) != 1)
				goto badv;
			snprintf(sw->source, sizeof(sw->source), "%s", v);
		} else if (!strcmp(a, "--status-file")) {
			sw->status_file = v;
		} else {
			char *end;
			double d = strtod(v, &end);

			if (*end || d < 0 || d > 1e7)
				goto badv;
			if (!strcmp(a, "--nodes") && d >= 1 && d <= 100000)
				sw->n = (unsigned)d;
			else if (!strcmp(a, "--rate") && d >= 1)
				sw->rate = (unsigned)d;
			else if (!strcmp(a, "--group") && d >= 1 && d <= 4096)
				sw->group = (unsigned)d;
			else if (!strcmp(a, "--heartbeat-ms") && d >= 0)
				sw->hb_ns = (uint64_t)(d * 1e6);
			else if (!strcmp(a, "--idle-heartbeat-ms") && d >= 1)
				sw->idle_hb_ns = (uint64_t)(d * 1e6);
			else if (!strcmp(a, "--kill") && d >= 1 && d <= 100000)
				sw->kill = (unsigned)d;
			else if (!strcmp(a, "--duration"))
				sw->duration = d;
			else
				goto badv;
		}
		continue;
	badv:
		fprintf(stderr, "ry-swarm: bad value for %s: '%s'\n", a, v);
		return -1;
	}
	if (!sw->srv.sin_family || !sw->nr) {
		fprintf(stderr,
			"ry-swarm: --server and at least one --rail are "
			"required\n");
		return -1;
	}
	if (!sw->source[0]) {
		struct sockaddr_in *s = &sw->srv;

		inet_ntop(AF_INET, &s->sin_addr, sw->source,
			  sizeof(sw->source));
	}
	if (sw->idle_hb_ns < sw->hb_ns)
		sw->idle_hb_ns = sw->hb_ns;
	if (!sw->kill)
		sw->kill = sw->n / 10 ? sw->n / 10 : 1;
	return 0;
bad:
	fprintf(stderr, "ry-swarm: unknown option or missing value: %s\n",
		argv[i]);
	return -1;
}

int main(int argc, char **argv)
{
	struct swarm sw = {0};
	struct epoll_event evs[256];
	uint64_t last_tick = 0, last_line = 0, last_status = 0, t_end = 0;
	unsigned budget = 0, i;
	int ret = RY_EXIT_FAIL;

	if (parse_args(&sw, argc, argv)) {
		fputs(usage_text, stderr);
		return RY_EXIT_USAGE;
	}
	srandom((unsigned)(now_ns() ^ (uint64_t)getpid()));
	signal(SIGINT, on_sig);
	signal(SIGTERM, on_sig);
	signal(SIGUSR1, on_usr1);
	signal(SIGPIPE, SIG_IGN);
	raise_nofile(sw.n + 64 + 8 * sw.nr * (sw.n / sw.group + 1));
	sw.ep = epoll_create1(EPOLL_CLOEXEC);
	sw.nodes = calloc(sw.n, sizeof(*sw.nodes));
	if (sw.ep < 0 || !sw.nodes)
		goto out;
	for (i = 0; i < sw.n; i++) {
		sw.nodes[i].idx = i;
		sw.nodes[i].fd = -1;
	}
	if (rails_open(&sw))
		goto out;
	sw.t0 = (double)now_ns() / 1e9;
	while (!stop) {
		uint64_t now = now_ns();
		int n = epoll_wait(sw.ep, evs, 256, 5);

		now = now_ns();
		for (int k = 0; k < n; k++) {
			struct tag *t = evs[k].data.ptr;

			if (t->kind == 1)
				rail_poll(&sw, (struct srail *)t, now);
			else
				node_io(&sw, (struct node *)t, evs[k].events,
					now);
		}
		for (i = 0; i < sw.ngroups * sw.nr; i++)
			if (sw.rails[i].dirty)
				rail_poll(&sw, &sw.rails[i], now);
		if (kill_req) { /* after this batch of events */
			kill_req = 0;
			kill_nodes(&sw, now);
		}
		if (now - last_tick >= 10000000ull) {
			/* --rate new sessions a second, in 10 ms steps */
			budget = sw.rate / 100 ? sw.rate / 100 : 1;
			tick(&sw, now, &budget);
			last_tick = now;
		}
		if (sw.status_file && now - last_status >= 100000000ull) {
			write_status(&sw, (double)now / 1e9 - sw.t0);
			last_status = now;
		}
		if (now - last_line >= 1000000000ull) {
			fprintf(stderr,
				"%8.1f s  nodes %u/%u  connections %u/%u  "
				"(per rail",
				(double)now / 1e9 - sw.t0, sw.ready, sw.n,
				total_active(&sw), sw.n * sw.nr);
			for (unsigned ri = 0; ri < sw.nr; ri++)
				fprintf(stderr, " %u", sw.active[ri]);
			fprintf(stderr,
				")  failures %" PRIu64
				"  sessions lost %" PRIu64 "\n",
				sw.conn_fail, sw.ctl_lost);
			last_line = now;
		}
		if (sw.t_all && sw.duration > 0 && !t_end)
			t_end = now + (uint64_t)(sw.duration * 1e9);
		if (t_end && now >= t_end)
			break;
	}
	ret = sw.t_all ? RY_EXIT_OK : RY_EXIT_FAIL;
	if (sw.json)
		status_json(&sw, stdout, (double)now_ns() / 1e9 - sw.t0);
	if (sw.status_file)
		write_status(&sw, (double)now_ns() / 1e9 - sw.t0);
out:
	stop = 1;
	for (i = 0; sw.nodes && i < sw.n; i++)
		node_close(&sw, &sw.nodes[i], now_ns());
	rails_close(&sw);
	free(sw.nodes);
	if (sw.ep >= 0)
		close(sw.ep);
	return ret;
}
