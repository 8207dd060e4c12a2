// SPDX-License-Identifier: BSD-2-Clause
/* Control frames in (checked, then reported through ry__ctl_ops) and the
 * connection and fence frames out. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "src/ctl/ctl_int.h"

static int dispatch(struct ry__ctl *c, uint16_t type, const unsigned char *body,
		    size_t n)
{
	const struct ry__ctl_ops *ops = ry__ctl_ops(c);
	struct ry_peer *p = c->c_peer;
	struct ry__wire_goodbye wg;
	struct ry__wire_fence wf;
	struct ry__wire_conn wc;
	struct ry__probe_mr pm;

	if (type == CTL_HELLO || type == CTL_HELLO_ACK)
		return ry__ctl_on_hello(c, body, n, type == CTL_HELLO_ACK);
	if (type == CTL_AUTH)
		return ry__ctl_on_auth(c, body, n);
	if (type == CTL_REFUSE)
		return ry__ctl_on_refuse(c, body, n);
	/* only an admitted session acts, and for its own peer only */
	if (!p || !c->c_admitted || !p->pr_node)
		return -EPROTO;
	switch (type) {
	case CTL_CONN_REQ:
	case CTL_CONN_REP:
	case CTL_CONN_REJ:
		if (ry__wire_conn_get(body, n, type, &wc))
			return -EBADMSG;
		pm.pm_addr = wc.wc_pm_addr;
		pm.pm_rkey = wc.wc_pm_rkey;
		pm.pm_len = wc.wc_pm_len;
		if (type == CTL_CONN_REQ)
			ops->co_conn_req(p, wc.wc_src, wc.wc_dst, wc.wc_attempt,
					 &wc.wc_ep, &pm, wc.wc_flags, c);
		else if (type == CTL_CONN_REP)
			ops->co_conn_rep(p, wc.wc_src, wc.wc_dst, wc.wc_attempt,
					 &wc.wc_ep, &pm, c);
		else
			ops->co_conn_rej(p, wc.wc_src, wc.wc_dst, wc.wc_attempt,
					 wc.wc_err, wc.wc_retry_ms);
		return 0;
	case CTL_FENCE_REQ:
	case CTL_FENCE_ACK:
		if (ry__wire_fence_get(body, n, type == CTL_FENCE_ACK, &wf))
			return -EBADMSG;
		if (type == CTL_FENCE_ACK)
			return ops->co_fence_ack(p, wf.wf_gen, wf.wf_caps);
		ops->co_fence_req(p, c, &wf);
		return 0;
	case CTL_GOODBYE:
		/* only the incarnation this session was admitted as may
		 * take its leave */
		if (ry__wire_goodbye_get(body, n, &wg) ||
		    wg.wg_node != p->pr_node)
			return -EBADMSG;
		ops->co_peer_goodbye(p, wg.wg_why);
		return 0;
	}
	return -EPROTO;
}

/* Handle the whole frames in the receive buffer (ctl_read, ry__ctl_feed). */
void ry__ctl_frames(struct ry__ctl *c)
{
	while (c->c_rlen >= RY__CTL_HDR && !c->c_dead) {
		struct ry__ctl_hdr h;
		const unsigned char *body;
		uint32_t len;
		uint16_t type, ver;
		size_t n;
		int ret;

		ry__ctl_hdr_get(c->c_rbuf, &h);
		len = h.h_len;
		type = h.h_type;
		ver = h.h_ver;
		if (ver != RY__CTL_VERSION) {
			char why[160];

			snprintf(why, sizeof(why),
				 "control protocol version %u, this "
				 "node speaks %u: run the same "
				 "railyard version on both",
				 ver, RY__CTL_VERSION);
			ry__ctl_refused(c, why);
			ry__ctl_kill(c, "protocol version mismatch");
			return;
		}
		if (len > CTL_MAX_FRAME || (c->c_mac_on && len < RY__MAC) ||
		    (!c->c_admitted && type != CTL_HELLO &&
		     type != CTL_HELLO_ACK && type != CTL_AUTH &&
		     type != CTL_REFUSE)) {
			if (c->c_inbound && !c->c_admitted)
				ry__ctl_refuse_log(c->c_mgr, &c->c_src,
						   "bad or oversized frame "
						   "before HELLO");
			ry__ctl_kill(c, "bad frame");
			return;
		}
		if (c->c_rlen < RY__CTL_HDR + len)
			break;
		body = c->c_rbuf + RY__CTL_HDR;
		n = len;
		if (c->c_mac_on) {
			struct ry__ctl_auth *a = c->c_auth;

			n -= RY__MAC;
			if (!ry__auth_frame_ok(a->a_krx, a->a_rx++, type, ver,
					       body, n, body + n)) {
				/* forged, replayed or reordered */
				RY_WARN("mgr",
					"control frame type %u with a "
					"bad MAC%s%s: session closed",
					type, c->c_peer ? " from peer " : "",
					c->c_peer ? c->c_peer->pr_name : "");
				ry__ctl_kill(c, "bad MAC");
				return;
			}
		}
		if (!c->c_admitted || ry__ctl_rate_ok(c, type))
			ret = dispatch(c, type, body, n);
		else if (c->c_dead) /* closed for flooding */
			return;
		else /* over its rate: dropped before it acts */
			ret = 0;
		if (ret == -EACCES) { /* logged by admission */
			ry__ctl_kill(c, "refused");
			return;
		}
		if (ret) {
			RY_WARN("mgr", "control message type %u: %s", type,
				strerror(-ret));
			ry__ctl_kill(c, "protocol error");
			return;
		}
		if (type == CTL_GOODBYE) { /* nothing follows a goodbye */
			ry__ctl_kill(c, "the peer said goodbye");
			return;
		}
		memmove(c->c_rbuf, c->c_rbuf + RY__CTL_HDR + len,
			c->c_rlen - RY__CTL_HDR - len);
		c->c_rlen -= RY__CTL_HDR + len;
	}
}

void ry__ctl_send_conn(struct ry__ctl *c, int type, unsigned src, unsigned dst,
		       uint32_t attempt, const struct ry_qp_endpoint *ep,
		       int err, uint32_t aux)
{
	struct ry__wire_conn wc = {
	    .wc_src = (uint8_t)src,
	    .wc_dst = (uint8_t)dst,
	    .wc_attempt = attempt,
	    .wc_err = err,
	    .wc_flags = type == CTL_CONN_REQ ? aux : 0,
	    .wc_retry_ms = type == CTL_CONN_REJ ? aux : 0,
	};
	unsigned char b[RY__WIRE_CONN_MAX];
	struct ry__wbuf w;

	if (type != CTL_CONN_REJ) {
		struct ry__probe_mr pm;

		wc.wc_ep = *ep;
		/* where this rail takes path MTU probes (conn.c) */
		ry__ctl_ops(c)->co_probe_mr(c->c_mgr, src, &pm);
		wc.wc_pm_addr = pm.pm_addr;
		wc.wc_pm_rkey = pm.pm_rkey;
		wc.wc_pm_len = pm.pm_len;
	}
	ry__wbuf_init(&w, b, sizeof(b));
	ry__wire_conn_put(&w, (uint16_t)type, &wc);
	ry__ctl_send(c, (uint16_t)type, &w);
}

void ry__ctl_send_fence(struct ry__ctl *c, bool ack,
			const struct ry__wire_fence *wf)
{
	unsigned char b[RY__WIRE_FENCE_MAX];
	struct ry__wbuf w;

	ry__wbuf_init(&w, b, sizeof(b));
	ry__wire_fence_put(&w, ack, wf);
	ry__ctl_send(c, ack ? CTL_FENCE_ACK : CTL_FENCE_REQ, &w);
}

void ry__ctl_goodbye(struct ry__ctl *c, int why)
{
	struct ry__wire_goodbye wg = {
	    .wg_node = c->c_mgr->m_node,
	    .wg_why = (uint8_t)why,
	};
	unsigned char b[16];
	struct ry__wbuf w;

	if (c->c_dead || !c->c_admitted)
		return;
	ry__wbuf_init(&w, b, sizeof(b));
	ry__wire_goodbye_put(&w, &wg);
	ry__ctl_send(c, CTL_GOODBYE, &w);
}
