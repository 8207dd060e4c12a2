// SPDX-License-Identifier: BSD-2-Clause
/*
 * Heartbeats and liveness.
 *
 *   connection                       what this end does
 *   -------------------------------  ------------------------------------
 *   work outstanding                 no completion and nothing received
 *                                    for timeout_ms: declared dead
 *   idle, carried our work within    a heartbeat SEND after heartbeat_ms
 *   the last second (RY__HB_LINGER), of quiet
 *   or the peer's control session
 *   is down
 *   idle longer, we are the lower    a heartbeat after idle_heartbeat_ms
 *   incarnation of the two nodes     (30 s; never below heartbeat_ms)
 *                                    of quiet
 *   idle longer, we are the higher   nothing: the other end sends
 *
 * So an idle connection costs one message per idle_heartbeat_ms, from one
 * end (both ends know both incarnations from the HELLOs, and the same rule
 * breaks connect races in conn.c), instead of one per heartbeat_ms from
 * each: 40,000 idle connections are 1,333 messages a second, not 8
 * million (at one a second, 40,000 cost a server half a core:
 * tests/bench/RESULTS.md, Scale).  An HCA's RC QP has no keepalive at all: an
 * idle QP whose path died is found by the first work's retry count; this is
 * that, plus a slow probe so that a dead idle path is also found, and replaced,
 * before it is needed.
 *
 * Why this is safe:
 *   - Work outstanding is judged exactly as before, on both ends: a
 *     silent far side fails the connection within timeout_ms (+ a tick)
 *     of the last sign of life, and the work is replayed on another rail.
 *     Silence only ever matters for work; an idle connection that died
 *     loses nothing by being found out later.
 *   - A connection used within the last second keeps heartbeat_ms, from
 *     the end that used it, so a path that breaks between two bursts of
 *     an application is found as fast as before (detect_far_unplug_idle).
 *   - A long-idle connection is still probed, every idle_heartbeat_ms by
 *     the lower end, which on a silent failure marks it failed: that
 *     fences and reconnects through the control channel, and the
 *     reconnect replaces the higher end's QP too ("peer reconnected").
 *     Either end that posts first on a dead connection has work
 *     outstanding: the first rule, within timeout_ms; the transport's
 *     retry count often sooner.  The price of a long interval is only
 *     that: work posted on an idle connection that died unseen waits up
 *     to timeout_ms before it is replayed elsewhere, and the window in
 *     which that can happen is idle_heartbeat_ms long.
 *   - A local link down fails every connection of the rail at once by its
 *     event.  A peer that dies loses its control session; from then on
 *     both ends heartbeat every heartbeat_ms as before (no control, no
 *     reconnect from the other end to rely on), so its connections fail
 *     and its state is released.
 *   - The ends need not agree on lingering (it only adds heartbeats) nor
 *     on idle_heartbeat_ms (the higher end never judges an idle
 *     connection's silence, only work's).  A peer of an earlier version
 *     heartbeats both ways; that only adds messages, and receiving them
 *     is harmless.
 *
 * Not judged in the first round after a stall of our own (progress.c): the
 * peer may not have had the CPU to answer either; and silence counts from
 * the end of that stall (silence_from); nor is it judged before the rail's
 * own thread, which may have lagged, has handed over what arrived
 * (ry__rail_catch_up).
 */
#include <stdio.h>

#include "src/conn.h"
#include "src/lrail.h"
#include "src/manager.h"
#include "src/peer.h"
#include "src/progress.h"
#include "src/tunables.h"

void ry__heartbeat(struct ry__conn *c, uint64_t now)
{
	struct ry_manager *m = c->cn_lrail->lr_mgr;
	uint64_t since, iv;

	if (c->cn_out_wrs) {
		since = ry__hb_silence_from(c);
		if (ry__since(now, since) > m->m_timeout_ns && !m->m_hb_defer) {
			/* what a lagging rail thread has not handed over yet
			 * (it may complete, fail or revive this connection) */
			ry__rail_catch_up(c->cn_lrail, now);
			if (c->cn_state != CONN_ACTIVE || !c->cn_out_wrs)
				return;
			since = ry__hb_silence_from(c);
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
	iv = ry__hb_interval(c, now);
	since = c->cn_last_ok_ns > c->cn_last_tx_ns ? c->cn_last_ok_ns
						    : c->cn_last_tx_ns;
	if (iv && !c->cn_hb_out && ry__since(now, since) >= iv) {
		if (ry__post_ctl_msg(c, WRK_HEARTBEAT, now)) {
			ry__conn_mark_failed(c, "cannot post heartbeat", now);
			return;
		}
		c->cn_hb_out = true;
		c->cn_cnt.heartbeats++;
	}
}
