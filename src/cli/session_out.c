// SPDX-License-Identifier: BSD-2-Clause
/*
 * A session's results: the summary figures, the report of its events,
 * and its JSON and text output (session.h).
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/cli/json.h"
#include "src/cli/session.h"
#include "src/cli/session_int.h"

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

void cli_session_result(const struct cli_session *s,
			struct cli_session_result *r)
{
	uint64_t n = s->n_lat < LAT_SAMPLES ? s->n_lat : LAT_SAMPLES;

	memset(r, 0, sizeof(*r));
	r->ops_ok = s->ops_ok;
	r->ops_failed = s->ops_failed;
	r->ops_stale = s->ops_stale;
	r->restarts = s->n_restarts;
	r->resumed = !s->resume_wait;
	r->bytes = s->bytes;
	r->verify_errors = s->verify_errors;
	r->ops_laid = s->ops_laid;
	r->seconds = s->t_stop > s->t0 ? s->t_stop - s->t0 : 0;
	r->gbit_per_s =
	    r->seconds > 0 ? (double)r->bytes * 8 / r->seconds / 1e9 : 0;
	snprintf(r->first_error, sizeof(r->first_error), "%s", s->first_error);
	if (n) {
		double *v = malloc(n * sizeof(*v)), sum = 0;

		if (v) {
			memcpy(v, s->lat, n * sizeof(*v));
			qsort(v, n, sizeof(*v), cmp_double);
			for (uint64_t i = 0; i < n; i++)
				sum += v[i];
			r->lat_avg_us = sum / (double)n;
			r->lat_p50_us = v[n / 2];
			r->lat_p99_us = v[(n * 99) / 100];
			r->lat_max_us = s->lat_max;
			free(v);
		}
	}
}

const struct cli_report *cli_session_report(const struct cli_session *s)
{
	return &s->report;
}

void cli_session_json(const struct cli_session *s, FILE *out)
{
	struct cli_session_result r;
	const struct cli_report *rep = &s->report;

	cli_session_result(s, &r);
	fprintf(out, "{\"peer\":");
	cli_json_str(out, ry_peer_name(s->peer));
	/* the start on the wall clock, to line events up with outside ones */
	fprintf(out, ",\"start_unix\":%.4f", s->t0_unix);
	/* and on CLOCK_MONOTONIC, the clock of the log lines' [prefix] */
	fprintf(out, ",\"start_mono\":%.6f", s->t0);
	fprintf(
	    out,
	    ",\"size\":%zu,\"depth\":%u,\"ops_in_flight\":%u,\"ops_ok\":"
	    "%" PRIu64 ",\"ops_failed\":%" PRIu64 ",\"bytes\":%" PRIu64
	    ",\"seconds\":%.3f,\"gbit_per_s\":%.3f,\"verify_errors\":%" PRIu64
	    ",\"latency_us\":{\"avg\":%.1f,\"p50\":%.1f,\"p99\":%.1f"
	    ",\"max\":%.1f},\"first_error\":",
	    s->o.size, s->o.depth, s->o.ops_in_flight, r.ops_ok, r.ops_failed,
	    r.bytes, r.seconds, r.gbit_per_s, r.verify_errors, r.lat_avg_us,
	    r.lat_p50_us, r.lat_p99_us, r.lat_max_us);
	cli_json_str(out, r.first_error);
	/* the peer's restarts: ops_stale failed only because their target
	 * died with the old incarnation */
	fprintf(out, ",\"ops_laid\":%" PRIu64, r.ops_laid);
	fprintf(out, ",\"ops_stale\":%" PRIu64 ",\"restarts\":[", r.ops_stale);
	for (unsigned i = 0; i < s->n_restarts; i++) {
		const struct restart *rs = &s->restarts[i];

		fprintf(out,
			"%s{\"t\":%.3f,\"old_incarnation\":\"%016" PRIx64
			"\",\"new_incarnation\":\"%016" PRIx64
			"\",\"stale_ops\":%" PRIu64 ",\"resumed_t\":",
			i ? "," : "", rs->t, rs->old_inc, rs->new_inc,
			rs->stale_ops);
		if (rs->t_resumed >= 0)
			fprintf(out, "%.3f}", rs->t_resumed);
		else
			fprintf(out, "null}");
	}
	fprintf(out, "],\"rails\":[");
	for (unsigned i = 0; i < s->n_rails; i++) {
		const struct rail_track *rt = &s->rails[i];
		struct ry_rail_info info = {0};
		struct ry_counters c = {0};

		ry_rail_counters(s->mgr, rt->name, &c);
		ry_rail_info(s->mgr, rt->name, &info);
		fprintf(out, "%s{\"name\":", i ? "," : "");
		cli_json_str(out, rt->name);
		fprintf(out,
			",\"state\":\"%s\",\"bytes\":%" PRIu64
			",\"fragments\":%" PRIu64 ",\"work_requests\":%" PRIu64
			",\"replayed\":%" PRIu64 ",\"failovers\":%" PRIu64
			",\"retransmits\":%" PRIu64 ",\"fences\":%" PRIu64
			",\"reconnects\":%" PRIu64 "}",
			info.link_up && info.peers_active ? "up" : "down",
			c.bytes - rt->at_start.bytes,
			c.fragments - rt->at_start.fragments,
			c.work_requests - rt->at_start.work_requests,
			c.replayed_fragments - rt->at_start.replayed_fragments,
			c.failovers - rt->at_start.failovers,
			c.retransmits - rt->at_start.retransmits,
			c.fences - rt->at_start.fences,
			c.reconnects - rt->at_start.reconnects);
	}
	fprintf(out, "],\"events\":[");
	for (unsigned e = 0; e < rep->n_events; e++) {
		const struct cli_report_event *ev = &rep->events[e];

		fprintf(out, "%s{\"t\":%.3f,\"rail\":", e ? "," : "", ev->t);
		cli_json_str(out, ev->rail);
		fprintf(out, ",\"event\":\"%s\",\"detect_ms\":", ev->event);
		if (ev->detect_ms >= 0)
			fprintf(out, "%.2f", ev->detect_ms);
		else
			fprintf(out, "null");
		fprintf(out, ",\"resume_ms\":");
		if (ev->resume_ms >= 0)
			fprintf(out, "%.2f", ev->resume_ms);
		else
			fprintf(out, "null");
		fprintf(out, ",\"fail_t\":");
		if (ev->fail_t >= 0)
			fprintf(out, "%.4f", ev->fail_t);
		else
			fprintf(out, "null");
		if (ev->reason[0]) {
			fprintf(out, ",\"reason\":");
			cli_json_str(out, ev->reason);
		}
		fprintf(out, "}");
	}
	fprintf(out, "],\"samples\":[");
	for (unsigned i = 0; i < rep->n_samples; i++) {
		const struct cli_report_sample *smp = &rep->samples[i];
		double total = 0;

		fprintf(out, "%s{\"t\":%.3f,\"rails\":{", i ? "," : "", smp->t);
		for (unsigned k = 0; k < rep->n_rails; k++) {
			fprintf(out, "%s", k ? "," : "");
			cli_json_str(out, rep->rails[k]);
			fprintf(out, ":%.3f", smp->mbyte_s[k]);
			total += smp->mbyte_s[k];
		}
		fprintf(out, "},\"total_mbyte_s\":%.3f}", total);
	}
	fprintf(out, "]}\n");
}

/*
 * Whether the rail of down event e replayed anything before its next down
 * (the per-second "replay" marks: coarse, but only for a down the library
 * reported no resume for).
 */
static bool replayed_after(const struct cli_report *rep, unsigned e)
{
	const struct cli_report_event *d = &rep->events[e];
	double until = 1e300;

	for (unsigned i = e + 1; i < rep->n_events; i++)
		if (!strcmp(rep->events[i].rail, d->rail) &&
		    !strcmp(rep->events[i].event, "down")) {
			until = rep->events[i].t;
			break;
		}
	for (unsigned i = 0; i < rep->n_events; i++) {
		const struct cli_report_event *r = &rep->events[i];

		if (!strcmp(r->event, "replay") && !strcmp(r->rail, d->rail) &&
		    r->t >= d->t && r->t <= until + 1.0)
			return true;
	}
	return false;
}

void cli_session_summary(const struct cli_session *s, FILE *out)
{
	struct cli_session_result r;
	const struct cli_report *rep = &s->report;
	uint64_t replayed = 0;

	cli_session_result(s, &r);
	for (unsigned i = 0; i < s->n_rails; i++) {
		struct ry_counters c = {0};

		ry_rail_counters(s->mgr, s->rails[i].name, &c);
		replayed += c.replayed_fragments -
			    s->rails[i].at_start.replayed_fragments;
	}
	fprintf(out,
		"\n%.1f s, %" PRIu64 " operations ok, %" PRIu64 " failed, "
		"%.1f MB moved (%.2f Gbit/s), %" PRIu64 " bytes corrupted, "
		"%" PRIu64 " fragments replayed\n",
		r.seconds, r.ops_ok, r.ops_failed, (double)r.bytes / 1e6,
		r.gbit_per_s, r.verify_errors, replayed);
	fprintf(
	    out,
	    "latency per operation: avg %.0f us, p50 %.0f us, p99 %.0f us\n",
	    r.lat_avg_us, r.lat_p50_us, r.lat_p99_us);
	if (r.ops_laid)
		fprintf(out,
			"%" PRIu64 " slices written first, to be read (not "
			"counted above)\n",
			r.ops_laid);
	for (unsigned e = 0; e < rep->n_events; e++) {
		const struct cli_report_event *ev = &rep->events[e];

		if (strcmp(ev->event, "down"))
			continue;
		fprintf(out, "  %8.3f s  %s down: detected in ", ev->t,
			ev->rail);
		if (ev->detect_ms >= 0)
			fprintf(out, "%.1f ms", ev->detect_ms);
		else
			fprintf(out, "?");
		if (ev->resume_ms >= 0)
			fprintf(out, ", traffic resumed %.1f ms later\n",
				ev->resume_ms);
		else if (replayed_after(rep, e))
			fprintf(out, ", replayed work did not complete\n");
		else
			fprintf(out, " (no replay needed)\n");
	}
	for (unsigned i = 0; i < s->n_restarts; i++) {
		const struct restart *rs = &s->restarts[i];

		fprintf(out,
			"peer restarted at t=%.3f s, %" PRIu64
			" operations failed because their target died, ",
			rs->t, rs->stale_ops);
		if (rs->t_resumed >= 0)
			fprintf(out, "resumed at t=%.3f s\n", rs->t_resumed);
		else
			fprintf(out, "not resumed before the end\n");
	}
	if (r.first_error[0])
		fprintf(out, "first failure: %s\n", r.first_error);
	fprintf(out, "verdict: %s\n",
		r.verify_errors ? "DATA CORRUPTED"
		: r.ops_failed	? "operations FAILED"
		: s->n_restarts ? "nothing lost but the operations aimed at "
				  "the restarted peer's old memory"
				: "nothing lost");
}
