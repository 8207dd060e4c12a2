// SPDX-License-Identifier: BSD-2-Clause
/*
 * Path MTU probing of a connection coming up (conn.c, at the top): the
 * ladder of probe sizes posted after the small probe, what their
 * completions prove, and the reasons logged when a size is lost.  The
 * state changes they lead to are conn.c's (ry__conn_activate).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "src/conn.h"
#include "src/events.h"
#include "src/control.h"
#include "src/lrail.h"
#include "src/manager.h"
#include "src/op.h"
#include "src/peer.h"
#include "src/pool.h"
#include "src/progress.h"
#include "src/region.h"
#include "src/tunables.h"

/*
 * The path MTU a connection coming up runs at, for its up event when it
 * is below the interface's, and logged when it changed.
 */
void ry__conn_mtu_note(struct ry__conn *c, char *buf, size_t len)
{
	uint32_t ifmtu = c->cn_lrail->lr_attr.mtu;

	buf[0] = 0;
	if (!c->cn_ladder)
		return;
	if (c->cn_qp_mtu < ifmtu)
		snprintf(buf, len, "path MTU %u (interface %u)", c->cn_qp_mtu,
			 ifmtu);
	/* a warning: jumbo frames configured do not hold end to end */
	if (c->cn_qp_mtu != c->cn_mtu_said && (buf[0] || c->cn_mtu_said))
		ry__log(buf[0] ? RY_LOG_WARN : RY_LOG_INFO, "mgr",
			"rail %s: path MTU %u (interface %u), peer %s",
			c->cn_lrail->lr_cfg.name, c->cn_qp_mtu, ifmtu,
			c->cn_peer->pr_name);
	c->cn_mtu_said = c->cn_qp_mtu;
}

/*
 * The small probe round-tripped but a ladder step did not: the path drops
 * packets above some size.  The next attempt offers the largest step that
 * passed; when none did, it starts again from the interface's MTU (the
 * rail stays down, the reason naming the size that is lost).
 */
bool ry__conn_mtu_reason(struct ry__conn *c, const char *what, char *buf,
			 size_t len)
{
	uint32_t ifmtu = c->cn_lrail->lr_attr.mtu;

	if (!c->cn_ladder || !c->cn_probe_ok || c->cn_mtu_ok >= c->cn_qp_mtu)
		return false;
	/* lost, not cut short: a link going down or a peer reconnecting in
	 * the middle of the ladder says nothing about the MTU */
	if (c->cn_lrail->lr_link != RY_LINK_UP ||
	    (strcmp(what, "probe timed out") &&
	     strcmp(what, ry_wc_status_str(RY_WC_RETRY_EXCEEDED))))
		return false;
	if (c->cn_mtu_ok)
		snprintf(buf, len,
			 "probes of more than %u bytes are lost, small ones "
			 "pass: path MTU %u (interface %u), trying at %u",
			 c->cn_mtu_ok, c->cn_mtu_ok, ifmtu, c->cn_mtu_ok);
	else
		snprintf(buf, len,
			 "probes of %u bytes and more are lost, small ones "
			 "pass: path MTU below %u (interface %u)",
			 c->cn_mtu_low, c->cn_mtu_low, ifmtu);
	c->cn_mtu = c->cn_mtu_ok;
	return true;
}

/* The path MTU steps (conn.c, at the top), ascending, the QP's MTU last. */
static const uint32_t steps_ip[] = {1280, 1500, 2048, 4096, 8192, 9000};
static const uint32_t steps_ib[] = {1024, 2048, 4096};
#define RY__PMTU_STEPS 8

static unsigned ladder(const struct ry__conn *c, uint32_t *steps)
{
	const struct ry_rail_attr *a = &c->cn_lrail->lr_attr;
	const uint32_t *pl = a->mtu_hdr ? steps_ip : steps_ib;
	unsigned npl = a->mtu_hdr ? sizeof(steps_ip) / sizeof(*steps_ip)
				  : sizeof(steps_ib) / sizeof(*steps_ib);
	/* two WRs a step beside the small probe, within max_send_wr */
	unsigned room = (c->cn_lrail->lr_mgr->m_cfg.wr_per_qp + 1) / 2;
	unsigned n = 0, i;

	if (room > RY__PMTU_STEPS)
		room = RY__PMTU_STEPS;
	for (i = 0; i < npl && n + 1 < room; i++)
		if (pl[i] > a->mtu_hdr && pl[i] < c->cn_qp_mtu)
			steps[n++] = pl[i];
	steps[n++] = c->cn_qp_mtu;
	return n;
}

/*
 * Each step: a WRITE of one packet of its size into the peer's slice,
 * then a READ of as much back into our own (wr_n 1: the step's verdict).
 */
static int post_ladder(struct ry__conn *c, uint64_t now)
{
	struct ry_manager *m = c->cn_lrail->lr_mgr;
	struct ry_region *rg = m->m_probe_region;
	unsigned ri = c->cn_lrail->lr_idx;
	uint32_t steps[RY__PMTU_STEPS];
	struct ry__wr *w[2 * RY__PMTU_STEPS];
	struct ry_send_wr swr[2 * RY__PMTU_STEPS];
	unsigned n = ladder(c, steps), i, k = 0;
	int ret = -ENOMEM;

	memset(swr, 0, sizeof(swr));
	for (i = 0; i < 2 * n; i++) {
		struct ry__wr *x =
		    ry__pool_get(&c->cn_peer->pr_ctx->cx_wr_pool);

		if (!x)
			goto err;
		memset(x, 0, sizeof(*x));
		x->wr_conn = c;
		x->wr_kind = WRK_PMTU;
		x->wr_first = steps[i / 2];
		x->wr_n = i % 2;
		x->wr_post_ns = now;
		swr[k].wr_id = (uintptr_t)x;
		swr[k].opcode = i % 2 ? RY_WR_RDMA_READ : RY_WR_RDMA_WRITE;
		swr[k].sge.addr = (uintptr_t)rg->rg_addr +
				  (size_t)ri * m->m_probe_stride +
				  m->m_probe_stride / 2;
		swr[k].sge.length = steps[i / 2] - c->cn_lrail->lr_attr.mtu_hdr;
		swr[k].sge.lkey = rg->rg_mr[ri]->lkey;
		swr[k].remote_addr = c->cn_pmr.pm_addr;
		swr[k].rkey = c->cn_pmr.pm_rkey;
		w[k++] = x;
	}
	if (!c->cn_out_wrs)
		c->cn_busy_since_ns = now;
	c->cn_out_wrs += k;
	ret = ry__conn_post(c, w, swr, k, now);
	if (!ret) {
		c->cn_ladder = true;
		c->cn_mtu_low = steps[0];
		return 0;
	}
	c->cn_out_wrs -= k;
err:
	while (k--)
		ry__pool_put(&c->cn_peer->pr_ctx->cx_wr_pool, w[k]);
	return ret;
}

/* Our probe: the small SEND, then the MTU ladder when the peer takes one
 * (its slice must hold the QP's MTU). */
int ry__conn_post_probes(struct ry__conn *c, uint64_t now)
{
	struct ry_manager *m = c->cn_lrail->lr_mgr;
	int ret = ry__post_ctl_msg(c, WRK_PROBE, now);

	if (ret)
		return ret;
	c->cn_probe_out = true;
	if (m->m_probe_region && c->cn_pmr.pm_len >= c->cn_qp_mtu &&
	    c->cn_qp_mtu > c->cn_lrail->lr_attr.mtu_hdr)
		ret = post_ladder(c, now);
	return ret;
}

/* Our small probe round-tripped: ACTIVE, unless the ladder is to come. */
void ry__conn_probed(struct ry__conn *c, uint64_t now)
{
	if (c->cn_state != CONN_PROBING)
		return;
	c->cn_probe_ok = true;
	if (!c->cn_ladder)
		ry__conn_activate(c, now);
}

/* A ladder step completed; the one at the QP's MTU makes it ACTIVE. */
void ry__conn_probe_done(struct ry__wr *w, uint64_t now)
{
	struct ry__conn *c = w->wr_conn;

	if (c->cn_state != CONN_PROBING || !w->wr_n)
		return;
	if (w->wr_first > c->cn_mtu_ok)
		c->cn_mtu_ok = w->wr_first;
	if (w->wr_first >= c->cn_qp_mtu)
		ry__conn_activate(c, now);
}
