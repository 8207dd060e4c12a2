// SPDX-License-Identifier: BSD-2-Clause
/*
 * Heartbeats.  An idle ACTIVE connection sends a small SEND every
 * heartbeat_ms; a connection with work outstanding that has seen no
 * completion (and received nothing) for timeout_ms is declared dead.  So a
 * silent unplug at the far end, which raises no local event, is noticed
 * within heartbeat_ms + timeout_ms even without traffic, and usually
 * sooner by the transport's own retry-exceeded completion.  Not in the
 * first round after a stall of our own (progress.c): the peer may not have
 * had the CPU to answer either; nor before the rail's own thread, which
 * may have lagged, has handed over what arrived (ry__rail_catch_up).
 */
#include <stdio.h>

#include "src/manager.h"

void ry__heartbeat(struct ry__conn *c, uint64_t now)
{
	struct ry_manager *m = c->cn_lrail->lr_mgr;
	uint64_t since;

	if (c->cn_out_wrs) {
		since = c->cn_last_ok_ns > c->cn_busy_since_ns
			    ? c->cn_last_ok_ns
			    : c->cn_busy_since_ns;
		if (ry__since(now, since) > m->m_timeout_ns && !m->m_hb_defer) {
			/* what a lagging rail thread has not handed over yet
			 * (it may complete, fail or revive this connection) */
			ry__rail_catch_up(c->cn_lrail, now);
			if (c->cn_state != CONN_ACTIVE || !c->cn_out_wrs)
				return;
			since = c->cn_last_ok_ns > c->cn_busy_since_ns
				    ? c->cn_last_ok_ns
				    : c->cn_busy_since_ns;
		}
		if (ry__since(now, since) > m->m_timeout_ns && !m->m_hb_defer) {
			char why[64];

			snprintf(why, sizeof(why),
				 "silent for %llu ms (heartbeat)",
				 (unsigned long long)((ry__since(now, since)) /
						      1000000));
			ry__conn_mark_failed(c, why, c->cn_last_ok_ns);
		}
		return;
	}
	since = c->cn_last_ok_ns > c->cn_last_tx_ns ? c->cn_last_ok_ns
						    : c->cn_last_tx_ns;
	if (!c->cn_hb_out && ry__since(now, since) >= m->m_hb_ns) {
		if (ry__post_ctl_msg(c, WRK_HEARTBEAT, now)) {
			ry__conn_mark_failed(c, "cannot post heartbeat", now);
			return;
		}
		c->cn_hb_out = true;
		c->cn_cnt.heartbeats++;
	}
}

uint64_t ry__heartbeat_due(const struct ry__conn *c, uint64_t now)
{
	const struct ry_manager *m = c->cn_lrail->lr_mgr;

	if (c->cn_out_wrs)
		return ry__max64(c->cn_last_ok_ns, c->cn_busy_since_ns) +
		       m->m_timeout_ns + 1;
	if (c->cn_hb_out)
		return now + m->m_hb_ns;
	return ry__max64(c->cn_last_ok_ns, c->cn_last_tx_ns) + m->m_hb_ns;
}
