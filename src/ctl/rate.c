// SPDX-License-Identifier: BSD-2-Clause
/*
 * Admitted sessions are bounded too: each frame type of each session has a
 * token bucket (control_frame_rate a second, control_frame_burst at once;
 * kept as a GCRA "theoretical arrival time", one u64 a type).  A frame
 * beyond it is dropped before it acts, counted, and logged at most once
 * every 10 s a session.  A session that drops another burst's worth within
 * those 10 s is flooding, not bursting: it is closed with the reason named,
 * and an inbound one's address is refused at accept for a back-off that
 * doubles at each repeat (2 s to 60 s) and is forgotten after a quiet
 * minute.  A legitimate peer sends a few frames a connection attempt and
 * one FENCE_REQ a failure event, so the defaults (100/s, 200) never touch
 * it.  Were one dropped, a CONN_REQ is sent again at the next attempt and
 * a FENCE_REQ after a back-off (fence.c, ry__fence_tick).
 */
#include <stdio.h>

#include "src/ctl/ctl_int.h"

#define RATE_LOG_NS 10000000000ull
#define PEN_MIN_MS 2000u
#define PEN_MAX_MS 60000u
#define PEN_FORGET_NS 60000000000ull

const char *ry__ctl_penalized(struct ry_manager *m, const struct ry__ip *ip)
{
	struct ry__penalty *pn = &m->m_admit->as_pen[ry__ip_slot(ip)];

	if (pn->pn_until_ns && ry__ip_same_host(&pn->pn_ip, ip) &&
	    ry__now_ns() < pn->pn_until_ns)
		return "backing off after flooding control frames";
	return NULL;
}

static uint32_t penalize(struct ry__ctl *c, uint64_t now)
{
	struct ry__penalty *pn =
	    &c->c_mgr->m_admit->as_pen[ry__ip_slot(&c->c_src)];
	uint32_t ms = PEN_MIN_MS;

	if (pn->pn_until_ns && ry__ip_same_host(&pn->pn_ip, &c->c_src) &&
	    now < pn->pn_until_ns + PEN_FORGET_NS)
		ms = pn->pn_ms >= PEN_MAX_MS / 2 ? PEN_MAX_MS : 2 * pn->pn_ms;
	pn->pn_ip = c->c_src;
	pn->pn_ms = ms;
	pn->pn_until_ns = now + ms * 1000000ull;
	return ms;
}

bool ry__ctl_rate_ok(struct ry__ctl *c, uint16_t type)
{
	struct ry_manager *m = c->c_mgr;
	struct ry__admit_state *as = m->m_admit;
	uint64_t now = ry__now_ns();
	uint64_t step = 1000000000ull / m->m_cfg.control_frame_rate;
	uint64_t room = (uint64_t)m->m_cfg.control_frame_burst * step;
	uint64_t *tat = &c->c_tat[type < CTL_NTYPES ? type : 0];
	const char *who = c->c_peer ? c->c_peer->pr_name : "?";
	char why[160];

	if (*tat < now)
		*tat = now;
	if (*tat - now < room) {
		*tat += step;
		return true;
	}
	as->as_frames_over++;
	if (!c->c_over_ns || ry__since(now, c->c_over_ns) >= RATE_LOG_NS) {
		if (c->c_over)
			RY_WARN("mgr",
				"peer %s: control frames of type %u above %u/s "
				"(burst %u): dropping them (%llu dropped in "
				"the last 10 s)",
				who, type, m->m_cfg.control_frame_rate,
				m->m_cfg.control_frame_burst,
				(unsigned long long)c->c_over);
		else
			RY_WARN("mgr",
				"peer %s: control frames of type %u above %u/s "
				"(burst %u): dropping them",
				who, type, m->m_cfg.control_frame_rate,
				m->m_cfg.control_frame_burst);
		c->c_over_ns = now;
		c->c_over = 0;
	}
	if (++c->c_over <= m->m_cfg.control_frame_burst)
		return false;
	as->as_sessions_over++;
	if (c->c_inbound)
		snprintf(why, sizeof(why),
			 "control frames above control_frame_rate %u/s: "
			 "session closed, its address refused for %u ms",
			 m->m_cfg.control_frame_rate, penalize(c, now));
	else
		snprintf(why, sizeof(why),
			 "control frames above control_frame_rate %u/s: "
			 "session closed",
			 m->m_cfg.control_frame_rate);
	RY_WARN("mgr", "peer %s: %s", who, why);
	ry__ctl_kill(c, "control frame flood");
	return false;
}

void ry__ctl_pressure(const struct ry_manager *m, uint64_t *frames,
		      uint64_t *sessions)
{
	const struct ry__admit_state *as = m->m_admit;

	*frames = as ? as->as_frames_over : 0;
	*sessions = as ? as->as_sessions_over : 0;
}
