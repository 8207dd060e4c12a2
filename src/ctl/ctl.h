/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The control plane: TCP sessions between managers for rail discovery, QP
 * connection parameters and fences (src/ctl/).  This header is the whole
 * of what the rest of the manager sees of it; the session is opaque.
 *
 * The module sits above peers and connections and below progress: the
 * manager hands it a struct ry__ctl_ops when it starts listening, and the
 * module reports through it what the other managers said (a peer's HELLO
 * admitted, a session lost, CONN and FENCE frames) instead of calling up
 * into conn.c, fence.c or peer_life.c.  It looks peer records up itself
 * (peer_index.c) to decide admission; it has them made and freed through
 * the ops.
 *
 * Everything runs under the manager's cold lock, driven by ry_progress().
 */
#ifndef RAILYARD_CTL_CTL_H
#define RAILYARD_CTL_CTL_H

#include <stdbool.h>
#include <stdint.h>

#include "src/ctl/wire.h"

struct ry_manager;
struct ry_peer;
struct ry_qp_attr;
struct ry__ctl;
struct ry__probe_mr;
struct sockaddr_storage;

/* What the control plane reports to the layers above it, and the peer
 * records it asks them for. */
struct ry__ctl_ops {
	/* a record for a node admission let in (dial: we may dial it, a
	 * configured peer); NULL if out of memory */
	struct ry_peer *(*co_peer_new)(struct ry_manager *m, const char *name,
				       const char *addr, bool dial);
	/* p, made from a HELLO, has no live session left: free it if
	 * nothing else holds it.  0 freed (unlinked from m_reapq), -EAGAIN
	 * not yet (its connections still drain: ask again later), -EBUSY
	 * the application holds it (ry__peer_unref() puts it back on
	 * m_reapq when it lets go) */
	int (*co_peer_release)(struct ry_peer *p);
	/* p's HELLO (dialer: the HELLO_ACK to ours) was admitted and its
	 * rails and incarnation recorded; old_node: the incarnation it
	 * replaces, 0 if none */
	void (*co_peer_ready)(struct ry_peer *p, uint64_t old_node,
			      bool dialer);
	/* p's HELLO names these rails (their endpoints, n of them) and is
	 * about to replace the ones recorded; NULL: nothing to tell */
	void (*co_peer_rails)(struct ry_peer *p,
			      const struct ry_qp_endpoint *ep, unsigned n);
	/* p's control session moved on: PEER_CONNECTING (we are dialing
	 * it), PEER_HELLO (connected, our HELLO sent) */
	void (*co_peer_state)(struct ry_peer *p, int state);
	/* p's manager said GOODBYE (why: enum ry__ctl_goodbye): it leaves on
	 * purpose; its session closes next */
	void (*co_peer_goodbye)(struct ry_peer *p, int why);
	/* p's admission was withdrawn (a reload removed the accept prefix
	 * its session came in through): its connections fail now, fenced
	 * over the session before it closes */
	void (*co_peer_revoked)(struct ry_peer *p);
	/* session c, which spoke for p, is closed */
	void (*co_peer_lost)(struct ry_peer *p, struct ry__ctl *c);
	/* CONN_REQ / CONN_REP from p over c: its rail src, our rail dst */
	void (*co_conn_req)(struct ry_peer *p, unsigned src, unsigned dst,
			    uint32_t attempt, const struct ry_qp_endpoint *ep,
			    const struct ry__probe_mr *pm, uint32_t flags,
			    struct ry__ctl *c);
	void (*co_conn_rep)(struct ry_peer *p, unsigned src, unsigned dst,
			    uint32_t attempt, const struct ry_qp_endpoint *ep,
			    const struct ry__probe_mr *pm, struct ry__ctl *c);
	/* CONN_REJ: err is the peer's -errno; retry_ms its retry-after
	 * (0: none) */
	void (*co_conn_rej)(struct ry_peer *p, unsigned src, unsigned dst,
			    uint32_t attempt, int err, uint32_t retry_ms);
	/* FENCE_REQ: for each pair, p's QP fp_src_qpn on its rail fp_src
	 * died; ours on fp_dst is fp_dst_qpn */
	void (*co_fence_req)(struct ry_peer *p, struct ry__ctl *c,
			     const struct ry__wire_fence *wf);
	/* FENCE_ACK and the caps it carries (RY__FENCE_CAP_*); nonzero: a
	 * protocol violation (the session closes) */
	int (*co_fence_ack)(struct ry_peer *p, uint64_t gen, unsigned caps);
	/* the path MTU probe slice of our rail `rail`, sent in CONN_REQ/REP */
	void (*co_probe_mr)(struct ry_manager *m, unsigned rail,
			    struct ry__probe_mr *pm);
};

/* session.c: the listening socket, dialing, events */
int ry__ctl_listen(struct ry_manager *m, const struct ry__ctl_ops *ops);
void ry__ctl_accept(struct ry_manager *m);
int ry__ctl_dial(struct ry_peer *p);
void ry__ctl_io(struct ry__ctl *c, uint32_t events);
/* Sessions that never said HELLO; the listening fd after EMFILE. */
void ry__ctl_timers(struct ry_manager *m, uint64_t now);
bool ry__ctl_alive(const struct ry__ctl *c);
/* GOODBYE on every admitted session, before the manager closes them
 * (ry_manager_destroy) */
void ry__ctl_goodbye_all(struct ry_manager *m);
/* close every session speaking for p, with a GOODBYE first */
void ry__ctl_drop_peer(struct ry_manager *m, struct ry_peer *p,
		       const char *why);

/* reap.c: free closed sessions and HELLO-made peers left without one;
 * everything at teardown */
void ry__ctl_reap(struct ry_manager *m);
void ry__ctl_close_all(struct ry_manager *m);

/* hello.c: the handshake */
void ry__ctl_send_hello(struct ry__ctl *c, bool reply);
/* tell every admitted session our rail list again (after a reload) */
void ry__ctl_announce(struct ry_manager *m);
/* data_mac: set attr->mac and the connection's keys (loc: our endpoint,
 * rem: the peer's) from c, the authenticated session the CONN_REQ/REP
 * went over, so both ends derive the same; -EPERM without one. */
int ry__ctl_conn_keys(const struct ry__ctl *c, const struct ry_qp_endpoint *loc,
		      const struct ry_qp_endpoint *rem,
		      struct ry_qp_attr *attr);

/* rate.c: control frames dropped over the rate, sessions closed for it */
void ry__ctl_pressure(const struct ry_manager *m, uint64_t *frames,
		      uint64_t *sessions);

/* admit.c: parse the accept list again after a reload */
int ry__ctl_admit_reload(struct ry_manager *m);

/* dispatch.c: frames for a connection (type CTL_CONN_*; err for REJ; aux:
 * a REQ's RY__CONN_F_* flags, a REJ's retry-after in ms) and fences */
void ry__ctl_send_conn(struct ry__ctl *c, int type, unsigned src, unsigned dst,
		       uint32_t attempt, const struct ry_qp_endpoint *ep,
		       int err, uint32_t aux);
void ry__ctl_send_fence(struct ry__ctl *c, bool ack,
			const struct ry__wire_fence *wf);

/* Internal entry points for tests and the fuzz target (fuzz_ctl.c). */
struct ry__ctl *ry__ctl_adopt(struct ry_manager *m, int fd,
			      const struct sockaddr_storage *ss);
void ry__ctl_feed(struct ry__ctl *c, const void *buf, size_t len);
unsigned ry__ctl_sessions(const struct ry_manager *m, int *fd, bool *inbound,
			  unsigned max);

#endif
