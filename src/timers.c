// SPDX-License-Identifier: BSD-2-Clause
/*
 * Every timer of the rail manager, in one place.  None has its own timer
 * object: ry_progress() runs this walk once per tick (m_tick_ns, a quarter
 * of the shortest failover interval, at most 10 ms), and a periodic timerfd
 * in the event fd wakes epoll users and the progress thread at that tick.
 *
 *   timer           per            fires after             action
 *   --------------  -------------  ----------------------  -----------------
 *   heartbeat       ACTIVE conn    heartbeat_ms idle       keepalive SEND
 *   liveness        conn with WRs  timeout_ms without a    mark failed
 *                   outstanding    completion or receive
 *   connect         CONNECTING     m_connect_ns            backoff
 *   probe           PROBING        m_connect_ns            mark failed
 *   reconnect       BACKOFF conn   reconnect_min..max_ms,  connect (if link
 *                                  doubling, +-50% jitter  and control up)
 *   health          ACTIVE conn    every 100 ms            health += 50
 *   backoff reset   ACTIVE conn    1 s up                  backoff = min
 *   op timeout      op, no path    op_timeout_ms           fail ETIMEDOUT
 *   fence timeout   FENCING op     op_timeout_ms           fail ETIMEDOUT
 *   control redial  BACKOFF peer   reconnect backoff       dial again
 *   handshake       inbound ctl    handshake_timeout_ms    close it
 *                   not admitted
 *   listen resume   listen fd off  100 ms after EMFILE     watch it again
 *
 * The transport's own timers (ack timeout, retry count, RNR) live in the
 * rail provider; the manager only configures them at RTS.
 */
#include "src/manager.h"

void ry__timers_run(struct ry_manager *m, uint64_t now)
{
	struct ry_peer *p;
	unsigned i;

	ry__ctl_timers(m, now);
	for (p = m->m_peers; p; p = p->pr_next) {
		if (p->pr_state == PEER_BACKOFF && p->pr_dial &&
		    now >= p->pr_ctl_retry_ns) {
			if (ry__ctl_dial(p)) {
				p->pr_state = PEER_NEW;
				ry__peer_use(p); /* back to backoff */
			}
		}
		for (i = 0; i < m->m_nrails; i++)
			ry__conn_timers(&p->pr_conns[i], now);
		ry__ops_timeouts(p, now);
	}
}
