// SPDX-License-Identifier: BSD-2-Clause
/*
 * Posting on a connection: WRs handed to its rail (ry__conn_post), the
 * control messages of the connection itself (heartbeats, probes), and the
 * path MTU probe slices that a peer's probes write into.  No state change
 * is made here (conn.c makes them all).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

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
#include "src/util/random.h"

/*
 * The probe slices' memory, mapped at a random address: every peer learns
 * where it is (CONNECT_REQ/REP), and an address in the heap or beside the
 * libraries would tell a hostile one where those are.  The address is a
 * hint only, no MAP_FIXED*: the kernel takes it when the range is free,
 * and a sanitizer that moves hints outside its application memory (TSan
 * makes them 0, which MAP_FIXED_NOREPLACE would map as root) is left to
 * the kernel's choice, as after eight places taken.
 */
static void *probe_map(size_t len)
{
	void *p;

	for (unsigned i = 0; i < 8; i++) {
		/* page-aligned, between 1 TiB and 64 TiB: user space on
		 * every x86-64 and arm64 kernel with 48-bit addresses */
		uintptr_t want =
		    ((uintptr_t)1 << 40) +
		    (uintptr_t)(ry__rand64() % (63ull << 40) & ~0xfffull);

		p = mmap((void *)want, len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (p == MAP_FAILED)
			break;
		if (p == (void *)want)
			return p;
		munmap(p, len);
	}
	p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		 -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

int ry__probe_setup(struct ry_manager *m)
{
	uint32_t stride = 0;
	unsigned i;
	void *buf;
	int ret;

	for (i = 0; i < m->m_nrails; i++) {
		if (m->m_rails[i].lr_attr.mtu > stride)
			stride = m->m_rails[i].lr_attr.mtu;
		/* not open yet (rail_life.c): room for the largest step */
		if (ry__rail_life_missing(&m->m_rails[i].lr_life) &&
		    stride < 9000)
			stride = 9000;
	}
	/* the peer's half, then ours (the WRITE source, the READ target);
	 * a slice for every slot, so that a rail a reload adds has one too
	 * (one with a larger MTU than these gets no ladder: pm_len).  Each
	 * rail's MR covers its own slice only: its peers' probes reach
	 * nothing else. */
	stride = 2 * ((stride + 63) & ~63u);
	buf = probe_map((size_t)RY_MAX_RAILS * stride);
	if (!buf)
		return -ENOMEM;
	ret = ry__region_reg_slices(m, buf, stride,
				    RY_MR_REMOTE_WRITE | RY_MR_REMOTE_READ,
				    &m->m_probe_region);
	if (ret) {
		munmap(buf, (size_t)RY_MAX_RAILS * stride);
		return ret;
	}
	m->m_probe_stride = stride;
	return 0;
}

void ry__probe_mr_of(struct ry_manager *m, unsigned rail,
		     struct ry__probe_mr *pm)
{
	struct ry_region *rg = m->m_probe_region;

	memset(pm, 0, sizeof(*pm));
	if (!rg || rail >= RY_MAX_RAILS)
		return;
	pm->pm_addr = (uintptr_t)rg->rg_addr + (size_t)rail * m->m_probe_stride;
	pm->pm_rkey = rg->rg_mr[rail]->rkey;
	pm->pm_len = m->m_probe_stride / 2;
}

int ry__conn_post(struct ry__conn *c, struct ry__wr **wrs,
		  struct ry_send_wr *swr, unsigned n, uint64_t now)
{
	struct ry_manager *m = c->cn_lrail->lr_mgr;
	/* every WR of the QP's before these completed and polled */
	bool idle = ry__list_empty(&c->cn_posted);
	unsigned i;
	int ret;

	ret = ry__lrail_post(c->cn_lrail, c->cn_qp, swr, n);
	if (ret)
		return ret;
	/* a rail that sends alone (an HCA) has nothing for progress to do
	 * now: its completion will raise its fd, and waking its thread here
	 * would only have it take m_lock for an empty CQ; tcp sends alone
	 * what it is given on an idle QP (sends_idle) */
	if (!c->cn_lrail->lr_attr.sends_alone &&
	    !(idle && c->cn_lrail->lr_attr.sends_idle))
		atomic_store_explicit(&c->cn_lrail->lr_kick, true,
				      memory_order_relaxed);
	for (i = 0; i < n; i++) {
		ry__list_add_tail(&c->cn_posted, &wrs[i]->wr_link);
	}
	c->cn_last_tx_ns = now;
	if (wrs[0]->wr_kind == WRK_FRAG || wrs[0]->wr_kind == WRK_MSG)
		c->cn_last_work_ns = now; /* heartbeat.c: lingers */
	c->cn_cnt.work_requests += n;
	/* Work on an idle connection starts its liveness clock, and once it
	 * completes a heartbeat may be due heartbeat_ms later: both maybe
	 * sooner than its timer (timers.c, heartbeat.c).  A busy one's timer
	 * is that early already: one comparison. */
	if (c->cn_state == CONN_ACTIVE)
		ry__conn_timer_by(
		    c, now + ry__min64(m->m_hb_ns, m->m_timeout_ns + 1));
	return 0;
}

int ry__post_ctl_msg(struct ry__conn *c, enum ry__wr_kind kind, uint64_t now)
{
	struct ry_manager *m = c->cn_lrail->lr_mgr;
	struct ry_region *rg = m->m_ctl_region;
	struct ry__wr *w = ry__pool_get(&c->cn_peer->pr_ctx->cx_wr_pool);
	struct ry_send_wr swr = {0};
	int ret;

	if (!w)
		return -ENOMEM;
	memset(w, 0, sizeof(*w));
	w->wr_conn = c;
	w->wr_kind = (uint8_t)kind;
	w->wr_post_ns = now;
	swr.wr_id = (uintptr_t)w;
	swr.opcode = RY_WR_SEND;
	swr.sge.addr = (uintptr_t)rg->rg_addr +
		       (kind == WRK_PROBE ? sizeof(struct ry__mhdr) : 0);
	swr.sge.length = RY__MSG_HDR;
	swr.sge.lkey = rg->rg_mr[c->cn_lrail->lr_idx]->lkey;
	if (!c->cn_out_wrs)
		c->cn_busy_since_ns = now;
	c->cn_out_wrs++;
	ret = ry__conn_post(c, &w, &swr, 1, now);
	if (ret) {
		c->cn_out_wrs--;
		ry__pool_put(&c->cn_peer->pr_ctx->cx_wr_pool, w);
	}
	return ret;
}
