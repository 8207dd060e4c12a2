// SPDX-License-Identifier: BSD-2-Clause
/*
 * What a session hears from the manager: rail and peer events (the
 * report's timeline, per rail) and the messages the peer sends.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/cli/session.h"
#include "src/cli/session_int.h"

static const char *event_name(enum ry_event_type t, struct rail_track *rt)
{
	switch (t) {
	case RY_EV_RAIL_DOWN:
		return "link-down";
	case RY_EV_RAIL_UP:
		return "link-up";
	case RY_EV_CONN_DOWN:
		return "down";
	case RY_EV_CONN_UP:
		if (!rt || !rt->connected_once)
			return "connect";
		return "up";
	case RY_EV_CONN_RESUMED:
		return "resume";
	case RY_EV_PEER_UP:
		return "peer-up";
	case RY_EV_PEER_DOWN:
		return "peer-down";
	case RY_EV_PEER_RESTARTED:
		return "peer-restarted";
	case RY_EV_RAIL_GONE:
		return "rail-gone";
	case RY_EV_RAIL_BACK:
		return "rail-back";
	case RY_EV_RAIL_HEALTH:
		return "rail-health";
	}
	return "?";
}

static struct rail_track *track_of(struct cli_session *s, const char *rail)
{
	for (unsigned i = 0; i < s->n_rails; i++)
		if (rail && !strcmp(s->rails[i].name, rail))
			return &s->rails[i];
	return NULL;
}

struct cli_report_event *cli__session_add_event(struct cli_session *s, double t,
						const char *rail,
						const char *what)
{
	struct cli_report_event e = {
	    .t = t, .detect_ms = -1, .resume_ms = -1, .fail_t = -1};

	snprintf(e.rail, sizeof(e.rail), "%s", rail ? rail : "");
	snprintf(e.event, sizeof(e.event), "%s", what);
	if (s->report.n_events >= MAX_EVENTS ||
	    cli_report_add_event(&s->report, &e))
		return NULL;
	return &s->report.events[s->report.n_events - 1];
}

/* A CLOCK_MONOTONIC stamp as seconds since the run's start. */
static double rel_t(const struct cli_session *s, uint64_t ns)
{
	return s->t0 == 0 ? 0 : (double)ns / 1e9 - s->t0;
}

/* The down event a RY_EV_CONN_RESUMED belongs to. */
static struct cli_report_event *down_of(struct cli_session *s,
					const struct ry_event *ev)
{
	for (unsigned i = s->report.n_events; i-- > 0;) {
		struct cli_report_event *e = &s->report.events[i];

		if (!strcmp(e->event, "down") && !strcmp(e->rail, ev->rail) &&
		    e->detect_ns == ev->detect_ns)
			return e;
	}
	return NULL;
}

/*
 * The peer's lifecycle.  A restart took the target region with it: ask
 * the new incarnation for its own at once (cli_session_run() asks again
 * every second until it comes), post nothing meanwhile, and forget slices
 * written to the old one.
 */
static void on_peer_event(struct cli_session *s, const struct ry_event *ev,
			  double t, const char *name)
{
	struct restart *r;

	if (!ev->peer || strcmp(ev->peer, ry_peer_name(s->peer)))
		return;
	cli__session_add_event(s, t, "", name);
	if (ev->type == RY_EV_PEER_RESTARTED) {
		if (s->n_restarts < MAX_RESTARTS) {
			r = &s->restarts[s->n_restarts++];
			r->t = t;
			r->t_resumed = -1;
			r->old_inc = ev->old_incarnation;
			r->new_inc = ev->new_incarnation;
			r->stale_ops = s->stale_early;
			s->stale_early = 0;
		}
		s->gen++;
		s->have_target = false;
		s->resume_wait = true;
		s->next_hello = 0;
		s->refetch_since = cli__now_s();
		for (unsigned i = 0; i < s->o.depth; i++)
			if (s->slots[i].phase == FULL)
				s->slots[i].phase = IDLE;
	}
	if (!s->o.live || ev->type == RY_EV_PEER_UP)
		return;
	if (ev->type == RY_EV_PEER_DOWN)
		fprintf(s->o.live, "%s%8.3f s  peer %s: %s\n",
			s->o.live_tty ? "\r\033[K" : "", t, ev->peer,
			ev->reason);
	else
		fprintf(s->o.live,
			"%s%8.3f s  peer %s restarted (incarnation %016" PRIx64
			" -> %016" PRIx64 "): operations aimed at its old "
			"memory fail; asking for its new target\n",
			s->o.live_tty ? "\r\033[K" : "", t, ev->peer,
			ev->old_incarnation, ev->new_incarnation);
}

/*
 * Each down event carries its own times from the library: detection from
 * the failure's start (the link event, or the last sign of life), resume
 * from the declaration to the first replayed work completing.
 */
void cli__session_on_event(const struct ry_event *ev, void *arg)
{
	struct cli_session *s = arg;
	struct rail_track *rt = track_of(s, ev->rail);
	const char *name = event_name(ev->type, rt);
	struct cli_report_event *e, *d = NULL;
	double t = rel_t(s, ev->time_ns);
	char extra[96] = "";

	if (ev->type == RY_EV_PEER_UP || ev->type == RY_EV_PEER_DOWN ||
	    ev->type == RY_EV_PEER_RESTARTED) {
		on_peer_event(s, ev, t, name);
		return;
	}
	e = cli__session_add_event(s, t, ev->rail, name);
	/* after add_event: it may move the events (realloc) */
	if (ev->type == RY_EV_CONN_RESUMED)
		d = down_of(s, ev);
	if (e && ev->reason)
		snprintf(e->reason, sizeof(e->reason), "%s", ev->reason);
	if (e && ev->type == RY_EV_CONN_DOWN && ev->detect_ns) {
		e->detect_ns = ev->detect_ns;
		e->fail_t = rel_t(s, ev->fail_ns);
		e->detect_ms = (double)(ev->detect_ns - ev->fail_ns) / 1e6;
		snprintf(extra, sizeof(extra), " (detected in %.1f ms)",
			 e->detect_ms);
	}
	if (e && ev->type == RY_EV_CONN_RESUMED) {
		e->detect_ns = ev->detect_ns;
		e->resume_ms = (double)(ev->time_ns - ev->detect_ns) / 1e6;
		if (d)
			d->resume_ms = e->resume_ms;
		snprintf(extra, sizeof(extra),
			 " %.1f ms after the down was detected", e->resume_ms);
	}
	if (rt && ev->type == RY_EV_CONN_UP) {
		rt->connected_once = true;
		/* the same region, packed again by the peer after a reload
		 * that added the rail; same answer otherwise, at the cost of
		 * one message per connection up */
		if (ev->peer && !strcmp(ev->peer, ry_peer_name(s->peer)) &&
		    s->t0 > 0)
			s->refresh = true;
	}
	/* a rail's first connection is the start, not news */
	if (s->o.live && strcmp(name, "connect"))
		fprintf(s->o.live, "%s%8.3f s  %s %s%s%s%s\n",
			s->o.live_tty ? "\r\033[K" : "", t, ev->rail,
			ev->type == RY_EV_CONN_RESUMED ? "traffic resumed"
						       : name,
			ev->reason && *ev->reason ? ": " : "",
			ev->reason ? ev->reason : "", extra);
}

void cli__session_on_recv(struct ry_peer *from, const struct ry_message *m,
			  void *arg)
{
	struct cli_session *s = arg;
	size_t tag = strlen(CLI_SESSION_DESC_TAG);
	size_t rtag = strlen(CLI_SESSION_REFUSED_TAG);

	if (m->type == RY_MSG_DATA && m->len > rtag &&
	    !memcmp(m->data, CLI_SESSION_REFUSED_TAG, rtag)) {
		size_t n = m->len - rtag;

		if (n >= sizeof(s->refused))
			n = sizeof(s->refused) - 1;
		memcpy(s->refused, (const char *)m->data + rtag, n);
		s->refused[n] = 0;
		return;
	}
	if (m->type != RY_MSG_DATA || m->len <= tag ||
	    memcmp(m->data, CLI_SESSION_DESC_TAG, tag) ||
	    m->len - tag > sizeof(s->desc))
		return;
	if (ry_desc_check((const uint8_t *)m->data + tag, m->len - tag) ||
	    ry_desc_live(s->peer, (const uint8_t *)m->data + tag,
			 m->len - tag) == -ESTALE)
		return;
	memcpy(s->desc, (const uint8_t *)m->data + tag, m->len - tag);
	s->desc_len = m->len - tag;
	s->have_target = true;
}
