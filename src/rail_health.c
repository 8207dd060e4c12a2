// SPDX-License-Identifier: BSD-2-Clause
/*
 * A rail's health from its error counters.
 *
 * Port error counters (symbol errors, link integrity, receive errors,
 * buffer overruns: rails/verbs/verbs_health.c) rise on a failing cable or
 * transceiver before the link dies; the soft rail's retransmits and bad
 * CRCs say the same of its path.  Once a second each open rail's errors
 * are divided by the packets it moved (at least RY__HEALTH_MIN_PKTS, so a
 * few errors on an idle port weigh little):
 *
 *   ok        -> degraded  two samples in a row at or over
 *                          error_degrade_ppm: a quarter of its share
 *                          (conn.c ry__conn_update_share);
 *   any       -> drained   two in a row at or over error_drain_ppm: new
 *                          work avoids it while another rail to the peer
 *                          can take it (standby.c); its connections stay
 *                          up, heartbeats and probes go on, work on it
 *                          completes;
 *   degraded,
 *   drained   -> ok        error_quiet_ms of samples each under
 *                          error_degrade_ppm of at least
 *                          RY__HEALTH_MIN_QUIET packets really moved (no
 *                          floor: a drained rail carries little, and
 *                          silence is no evidence).  A drained rail's
 *                          connections to peers with operations under way
 *                          keep heartbeat_ms heartbeats (timers.c), so
 *                          there is evidence: on soft, a lost heartbeat is
 *                          retransmitted, and counts.
 *
 * Two in a row, because one second of errors is a burst: a cable pulled
 * shows as retransmits (or a port's link_downed) in the sample in which
 * it is detected, and in the next the rail carries nothing, so a rail
 * that comes back from a pull does not come back degraded.  A cable that
 * keeps flapping, or a path that loses enough to fail connections again
 * and again, is drained.  A sample taken while the rail's link is down
 * is not judged.
 *
 * The cold lock held throughout; get_stats under the rail's lr_lock, as
 * the metrics take it.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "src/conn.h"
#include "src/events.h"
#include "src/lrail.h"
#include "src/manager.h"
#include "src/peer.h"
#include "src/progress.h"

#define SAMPLE_NS 1000000000ull
#define RY__HEALTH_MIN_PKTS 10000u
#define RY__HEALTH_MIN_QUIET 50u

void ry__rail_health_reset(struct ry__rhealth *rh)
{
	memset(rh, 0, sizeof(*rh));
}

const char *ry_rail_health_str(enum ry_rail_health_state state)
{
	switch (state) {
	case RY_RAIL_OK:
		return "ok";
	case RY_RAIL_DEGRADED:
		return "degraded";
	case RY_RAIL_DRAINED:
		return "drained";
	}
	return "?";
}

static void set_state(struct ry_manager *m, struct ry__lrail *lr,
		      enum ry_rail_health_state to, uint64_t errs,
		      uint64_t pkts, uint64_t now)
{
	struct ry__rhealth *rh = &lr->lr_health;
	const struct ry_config *cfg = &m->m_cfg;
	char why[160];
	struct ry_peer *p;

	rh->rh_state = to;
	rh->rh_changes++;
	rh->rh_streak = 0;
	if (to == RY_RAIL_OK) {
		snprintf(why, sizeof(why),
			 "ok: under %u errors per million packets for %u ms",
			 cfg->error_degrade_ppm, cfg->error_quiet_ms);
		RY_INFO("mgr", "rail %s: %s; back to its full share",
			lr->lr_cfg.name, why);
	} else {
		snprintf(why, sizeof(why),
			 "%s: %u errors per million packets (%llu errors in "
			 "%llu packets the last second)",
			 ry_rail_health_str(to), rh->rh_ppm,
			 (unsigned long long)errs, (unsigned long long)pkts);
		RY_WARN("mgr", "rail %s: %s; %s", lr->lr_cfg.name, why,
			to == RY_RAIL_DRAINED
			    ? "new work avoids it while another rail can take "
			      "it, its connections stay up"
			    : "its share of the stripe lowered to a quarter");
	}
	ry__queue_event(m, RY_EV_RAIL_HEALTH, lr, NULL, why, now);
	for (p = m->m_peers; p; p = p->pr_next) {
		struct ry__conn *c = p->pr_conn[lr->lr_idx];

		ry__conn_update_share(c);
		ry__conn_timer(c, now); /* heartbeats: see the top */
		ry__peer_dirty(p);
	}
}

static void sample(struct ry_manager *m, struct ry__lrail *lr, uint64_t now)
{
	struct ry__rhealth *rh = &lr->lr_health;
	const struct ry_config *cfg = &m->m_cfg;
	enum ry_rail_health_state level = RY_RAIL_OK;
	struct ry_rail_stats st;
	uint64_t pkts, derr, moved, dpkt;
	int ret;

	pthread_mutex_lock(&lr->lr_lock);
	ret =
	    lr->lr_life.rl_busy ? -EBUSY : ry__rail_get_stats(lr->lr_rail, &st);
	pthread_mutex_unlock(&lr->lr_lock);
	if (ret)
		return;
	pkts = st.tx_packets + st.rx_packets;
	if (!rh->rh_primed || lr->lr_link != RY_LINK_UP ||
	    st.port_errors < rh->rh_errs || pkts < rh->rh_pkts) {
		/* not a sample to judge by (see the top) */
		rh->rh_primed = true;
		rh->rh_streak = 0;
		rh->rh_quiet_ns = 0;
		goto keep;
	}
	derr = st.port_errors - rh->rh_errs;
	moved = pkts - rh->rh_pkts;
	dpkt = moved < RY__HEALTH_MIN_PKTS ? RY__HEALTH_MIN_PKTS : moved;
	rh->rh_ppm =
	    derr >= dpkt ? 1000000u : (uint32_t)(derr * 1000000u / dpkt);
	if (cfg->error_drain_ppm && rh->rh_ppm >= cfg->error_drain_ppm)
		level = RY_RAIL_DRAINED;
	else if (cfg->error_degrade_ppm && rh->rh_ppm >= cfg->error_degrade_ppm)
		level = RY_RAIL_DEGRADED;
	if (level > rh->rh_state) {
		if (++rh->rh_streak >= 2)
			set_state(m, lr, level, derr, moved, now);
	} else {
		rh->rh_streak = 0;
	}
	/* quiet: a rate under the mark over packets that were really sent
	 * (no floor); too few packets say nothing either way */
	if (level != RY_RAIL_OK || moved < RY__HEALTH_MIN_QUIET ||
	    derr * 1000000u >= (uint64_t)cfg->error_degrade_ppm * moved) {
		rh->rh_quiet_ns = 0;
	} else {
		if (!rh->rh_quiet_ns)
			rh->rh_quiet_ns = now - SAMPLE_NS;
		if (rh->rh_state != RY_RAIL_OK &&
		    now - rh->rh_quiet_ns >=
			(uint64_t)cfg->error_quiet_ms * 1000000ull)
			set_state(m, lr, RY_RAIL_OK, 0, 0, now);
	}
keep:
	rh->rh_errs = st.port_errors;
	rh->rh_pkts = pkts;
}

void ry__rail_health_run(struct ry_manager *m, uint64_t now)
{
	for (unsigned i = 0; i < m->m_nrails; i++) {
		struct ry__lrail *lr = &m->m_rails[i];

		if (!ry__lrail_live(lr) || now < lr->lr_health.rh_next_ns)
			continue;
		lr->lr_health.rh_next_ns = now + SAMPLE_NS;
		sample(m, lr, now);
	}
}

int ry_rail_health(struct ry_manager *m, const char *rail,
		   struct ry_rail_health *out)
{
	int ret = -ENOENT;

	if (!m || !rail || !out)
		return -EINVAL;
	ry__lock_and_run_leftovers(m);
	for (unsigned i = 0; i < m->m_nrails; i++) {
		const struct ry__lrail *lr = &m->m_rails[i];

		if (!ry__lrail_live(lr) || strcmp(lr->lr_cfg.name, rail))
			continue;
		out->state = lr->lr_health.rh_state;
		out->error_ppm = lr->lr_health.rh_ppm;
		out->changes = lr->lr_health.rh_changes;
		out->errors = lr->lr_health.rh_errs;
		out->packets = lr->lr_health.rh_pkts;
		ret = 0;
		break;
	}
	ry__unlock(m);
	return ret;
}
