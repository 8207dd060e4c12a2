// SPDX-License-Identifier: BSD-2-Clause
/*
 * Metrics in the Prometheus text exposition format, version 0.0.4, with
 * names that also pass as OpenMetrics (counters end in _total, units are
 * in the names, seconds and ratios rather than nanoseconds and permille).
 *
 * The whole text is written with the cold lock held so that every family comes
 * from one instant: a scrape never sees a rail's bytes from before a
 * failover next to its failovers from after it.  Only memory is touched
 * under the lock (plus the rails' get_stats, which m_lock serialises like
 * every other rail call), so the lock is held for microseconds and no
 * application code runs under it.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "src/manager.h"

struct mw {
	char *buf;
	size_t len;
	size_t pos; /* bytes the text needs so far, even past len */
};

static void __attribute__((format(printf, 2, 3)))
put(struct mw *w, const char *fmt, ...)
{
	size_t room = w->pos < w->len ? w->len - w->pos : 0;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(room ? w->buf + w->pos : NULL, room, fmt, ap);
	va_end(ap);
	if (n > 0)
		w->pos += (size_t)n;
}

/* A label value: backslash, double quote and newline are escaped. */
static void put_label(struct mw *w, const char *name, const char *v)
{
	put(w, "%s=\"", name);
	for (; *v; v++) {
		if (*v == '\\')
			put(w, "\\\\");
		else if (*v == '"')
			put(w, "\\\"");
		else if (*v == '\n')
			put(w, "\\n");
		else
			put(w, "%c", *v);
	}
	put(w, "\"");
}

static void family(struct mw *w, const char *name, const char *type,
		   const char *help)
{
	put(w, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* name{rail="..",peer=".."} value: either label may be NULL */
static void sample_start(struct mw *w, const char *name, const char *rail,
			 const char *peer)
{
	put(w, "%s", name);
	if (!rail && !peer)
		return;
	put(w, "{");
	if (rail)
		put_label(w, "rail", rail);
	if (rail && peer)
		put(w, ",");
	if (peer)
		put_label(w, "peer", peer);
	put(w, "}");
}

static void sample_u64(struct mw *w, const char *name, const char *rail,
		       const char *peer, uint64_t v)
{
	sample_start(w, name, rail, peer);
	put(w, " %llu\n", (unsigned long long)v);
}

static void sample_f(struct mw *w, const char *name, const char *rail,
		     const char *peer, double v)
{
	sample_start(w, name, rail, peer);
	put(w, " %.9g\n", v);
}

/* The monotonic fields of struct ry_counters, as families. */
struct cfield {
	const char *suffix; /* after railyard_rail_ / railyard_peer_ */
	const char *help;
	size_t off;
	bool rail_only;
};

#define CF(f, h, r)                                                            \
	{                                                                      \
#f "_total", h, offsetof(struct ry_counters, f), r             \
	}
static const struct cfield cfields[] = {
    {"bytes_total", "Payload bytes completed.",
     offsetof(struct ry_counters, bytes), false},
    CF(fragments, "Fragments completed.", false),
    CF(work_requests, "Work requests posted (fragments, messages).", false),
    CF(messages, "Two-sided messages completed.", false),
    CF(replayed_fragments, "Fragments put back for replay on another rail.",
       false),
    CF(retransmits, "Transport retransmits.", true),
    CF(failovers, "Connection failures handled.", false),
    CF(fences, "Fences acknowledged by the peer.", false),
    CF(reconnects, "Connections (re)established.", false),
    CF(heartbeats, "Keepalives sent.", false),
};
#undef CF

static uint64_t cget(const struct ry_counters *c, const void *field)
{
	const struct cfield *f = field;

	return *(const uint64_t *)((const char *)c + f->off);
}

/*
 * The detection and resume times exist as count, sum and max per
 * connection (struct ry_counters): a summary without quantiles plus a max
 * gauge is what they can honestly be rendered as.
 */
struct tfield {
	const char *name; /* after railyard_rail_ / railyard_peer_ */
	const char *help;
	size_t count, sum, max;
};

#define TF(n, f, h)                                                            \
	{                                                                      \
		n, h, offsetof(struct ry_counters, f##_count),                 \
		    offsetof(struct ry_counters, f##_ns_total),                \
		    offsetof(struct ry_counters, f##_ns_max)                   \
	}
static const struct tfield tfields[] = {
    TF("failure_detection", detect,
       "Failure (last sign of life or link event) to detection"),
    TF("failover_resume", resume,
       "Detection to the first replayed traffic completing elsewhere"),
};
#undef TF

static uint64_t tget(const struct ry_counters *c, size_t off)
{
	return *(const uint64_t *)((const char *)c + off);
}

/*
 * The rows of one scope: the local rails (sums computed up front) or the
 * peers (summed over their connections as each family is written, so any
 * number of peers fits without an allocation under the lock).
 */
struct rows {
	struct ry_manager *m;
	bool is_rail;
	unsigned nr;
	const char *const *rnames;
	const struct ry_counters *rcnt;
};

typedef void (*row_fn)(struct mw *w, const char *fam, const char *rail,
		       const char *peer, const struct ry_counters *c,
		       const void *field);

static void each_row(struct mw *w, const struct rows *r, const char *fam,
		     row_fn fn, const void *field)
{
	struct ry_counters sum;
	struct ry_peer *p;

	if (r->is_rail) {
		for (unsigned i = 0; i < r->nr; i++)
			fn(w, fam, r->rnames[i], NULL, &r->rcnt[i], field);
		return;
	}
	for (p = r->m->m_peers; p; p = p->pr_next) {
		memset(&sum, 0, sizeof(sum));
		/* every slot: rails a reload removed keep their history */
		for (unsigned i = 0; i < r->m->m_nrails; i++)
			ry__cnt_add(&sum, &p->pr_conn[i]->cn_cnt);
		fn(w, fam, NULL, p->pr_name, &sum, field);
	}
}

static void row_counter(struct mw *w, const char *fam, const char *rail,
			const char *peer, const struct ry_counters *c,
			const void *field)
{
	sample_u64(w, fam, rail, peer, cget(c, field));
}

static void row_summary(struct mw *w, const char *fam, const char *rail,
			const char *peer, const struct ry_counters *c,
			const void *field)
{
	const struct tfield *f = field;
	char s[160];

	snprintf(s, sizeof(s), "%s_sum", fam);
	sample_f(w, s, rail, peer, tget(c, f->sum) / 1e9);
	snprintf(s, sizeof(s), "%s_count", fam);
	sample_u64(w, s, rail, peer, tget(c, f->count));
}

static void row_max(struct mw *w, const char *fam, const char *rail,
		    const char *peer, const struct ry_counters *c,
		    const void *field)
{
	const struct tfield *f = field;

	sample_f(w, fam, rail, peer, tget(c, f->max) / 1e9);
}

static void counter_families(struct mw *w, const struct rows *r)
{
	const char *scope = r->is_rail ? "rail" : "peer";
	char fam[128], help[200];

	for (size_t k = 0; k < sizeof(cfields) / sizeof(cfields[0]); k++) {
		const struct cfield *f = &cfields[k];

		if (f->rail_only && !r->is_rail)
			continue;
		snprintf(fam, sizeof(fam), "railyard_%s_%s", scope, f->suffix);
		family(w, fam, "counter", f->help);
		each_row(w, r, fam, row_counter, f);
	}
	for (size_t t = 0; t < sizeof(tfields) / sizeof(tfields[0]); t++) {
		const struct tfield *f = &tfields[t];

		snprintf(fam, sizeof(fam), "railyard_%s_%s_seconds", scope,
			 f->name);
		snprintf(help, sizeof(help), "%s, in seconds.", f->help);
		family(w, fam, "summary", help);
		each_row(w, r, fam, row_summary, f);
		snprintf(fam, sizeof(fam), "railyard_%s_%s_max_seconds", scope,
			 f->name);
		snprintf(help, sizeof(help), "Longest: %s, in seconds.",
			 f->help);
		family(w, fam, "gauge", help);
		each_row(w, r, fam, row_max, f);
	}
}

/* Transport-level statistics of a rail's provider (soft, verbs). */
struct sfield {
	const char *name, *help;
	size_t off;
};

#define SF(f, h)                                                               \
	{                                                                      \
		"railyard_rail_transport_" #f "_total", h,                     \
		    offsetof(struct ry_rail_stats, f)                          \
	}
static const struct sfield sfields[] = {
    SF(tx_bytes, "Bytes sent by the rail's transport, headers included."),
    SF(rx_bytes, "Bytes received by the rail's transport, headers included: "
		 "on a target, the peers' one-sided writes land here."),
    SF(tx_packets, "Packets sent by the rail's transport."),
    SF(rx_packets, "Packets received by the rail's transport."),
    SF(naks_sent, "NAKs sent by the rail's transport."),
    SF(naks_rcvd, "NAKs received by the rail's transport."),
    SF(rx_dropped, "Received packets that failed a check and were dropped."),
    SF(rx_empty, "Zero-length datagrams received (and dropped)."),
    SF(rx_bad_mac, "Received packets without the data_mac MAC their "
		   "connection expects, or with a wrong one (dropped)."),
    SF(port_errors, "Errors the rail's port counted (verbs: symbol, link "
		    "recovery and down, receive, link integrity, buffer "
		    "overrun, discards; soft: retransmits and bad CRCs)."),
    SF(tx_pad_bytes, "Zero bytes sent after a message's short last packet "
		     "so that the next message joins its GSO datagram "
		     "(soft rail; also in tx_bytes)."),
    SF(rx_held, "Packets that arrived ahead of a gap and were held for it "
		"to fill instead of NAKed (soft rail)."),
};
#undef SF

static void latency_histograms(struct mw *w, struct ry_manager *m);
static void failover_histograms(struct mw *w, struct ry_manager *m,
				const unsigned *slot, unsigned nr);

static void render_locked(struct ry_manager *m, struct mw *w)
{
	struct ry_counters rcnt[RY_MAX_RAILS];
	struct ry_rail_stats rst[RY_MAX_RAILS];
	bool have_st[RY_MAX_RAILS];
	const char *rnames[RY_MAX_RAILS];
	unsigned hmin[RY_MAX_RAILS];
	/* the live rails' slots (a reload leaves holes: reload.c) */
	unsigned slot[RY_MAX_RAILS];
	unsigned nr = 0, np = 0, i;
	uint64_t over, closed;
	struct rows rows;
	struct ry_peer *p;

	for (i = 0; i < m->m_nrails; i++)
		if (ry__lrail_live(&m->m_rails[i]))
			slot[nr++] = i;
	for (i = 0; i < nr; i++) {
		struct ry__lrail *lr = &m->m_rails[slot[i]];

		rnames[i] = lr->lr_cfg.name;
		rcnt[i] = lr->lr_gone;
		hmin[i] = 1000;
		pthread_mutex_lock(&lr->lr_lock);
		have_st[i] = !ry__rail_get_stats(lr->lr_rail, &rst[i]);
		pthread_mutex_unlock(&lr->lr_lock);
		if (have_st[i])
			rcnt[i].retransmits += rst[i].retransmits;
	}
	for (p = m->m_peers; p; p = p->pr_next, np++) {
		for (i = 0; i < nr; i++) {
			const struct ry__conn *c = p->pr_conn[slot[i]];

			ry__cnt_add(&rcnt[i], &c->cn_cnt);
			if (c->cn_state != CONN_UNPAIRED &&
			    c->cn_health < hmin[i])
				hmin[i] = c->cn_health;
		}
	}

	family(w, "railyard_build_info", "gauge",
	       "The library version; the value is always 1.");
	put(w, "railyard_build_info{version=\"%s\"} 1\n", ry_version());
	family(w, "railyard_rails", "gauge", "Local rails configured.");
	sample_u64(w, "railyard_rails", NULL, NULL, nr);
	family(w, "railyard_peers", "gauge", "Peers known to this node.");
	sample_u64(w, "railyard_peers", NULL, NULL, np);
	ry__ctl_pressure(m, &over, &closed);
	family(w, "railyard_control_frames_dropped_total", "counter",
	       "Control frames dropped over control_frame_rate.");
	sample_u64(w, "railyard_control_frames_dropped_total", NULL, NULL,
		   over);
	family(w, "railyard_control_sessions_flooding_total", "counter",
	       "Control sessions closed for flooding.");
	sample_u64(w, "railyard_control_sessions_flooding_total", NULL, NULL,
		   closed);
	family(w, "railyard_fence_requests_total", "counter",
	       "FENCE_REQ frames sent; one names every connection to a peer "
	       "that failed together.");
	sample_u64(w, "railyard_fence_requests_total", NULL, NULL,
		   m->m_fence_reqs);

	/* per rail */
	family(w, "railyard_rail_up", "gauge",
	       "1 when the configured rail is open, 0 when its device, port, "
	       "interface or address is missing (reason says why).");
	for (i = 0; i < m->m_nrails; i++) {
		const struct ry__lrail *lr = &m->m_rails[i];

		if (ry__lrail_live(lr)) {
			sample_u64(w, "railyard_rail_up", lr->lr_cfg.name, NULL,
				   1);
		} else if (ry__rail_life_missing(&lr->lr_life)) {
			put(w, "railyard_rail_up{");
			put_label(w, "rail", lr->lr_life.rl_cfg.name);
			put(w, ",");
			put_label(w, "reason", lr->lr_life.rl_why);
			put(w, "} 0\n");
		}
	}
	family(w, "railyard_rail_goodbyes_total", "counter",
	       "Connections closed by the peer's goodbye (not failures).");
	for (i = 0; i < nr; i++) {
		uint64_t g = m->m_rails[slot[i]].lr_goodbyes_gone;

		for (p = m->m_peers; p; p = p->pr_next)
			g += p->pr_conn[slot[i]]->cn_goodbyes;
		sample_u64(w, "railyard_rail_goodbyes_total", rnames[i], NULL,
			   g);
	}
	family(w, "railyard_rail_link_up", "gauge",
	       "1 when the rail's link is up, 0 when it is down.");
	for (i = 0; i < nr; i++)
		sample_u64(w, "railyard_rail_link_up", rnames[i], NULL,
			   m->m_rails[slot[i]].lr_link == RY_LINK_UP);
	family(w, "railyard_rail_active_connections", "gauge",
	       "Connections to peers carrying traffic on the rail.");
	for (i = 0; i < nr; i++)
		sample_u64(w, "railyard_rail_active_connections", rnames[i],
			   NULL, m->m_rails[slot[i]].lr_active);
	family(w, "railyard_rail_health_min_ratio", "gauge",
	       "Lowest health of the rail's connections, 0..1 (1 with none).");
	for (i = 0; i < nr; i++)
		sample_f(w, "railyard_rail_health_min_ratio", rnames[i], NULL,
			 hmin[i] / 1000.0);
	family(w, "railyard_rail_health", "gauge",
	       "0 ok, 1 degraded (a quarter of its share), 2 drained (new "
	       "work avoids it) by the rail's errors per packet "
	       "(error_degrade_ppm, error_drain_ppm).");
	for (i = 0; i < nr; i++)
		sample_u64(w, "railyard_rail_health", rnames[i], NULL,
			   m->m_rails[slot[i]].lr_health.rh_state);
	family(w, "railyard_rail_error_ppm", "gauge",
	       "The rail's errors per million packets in the last second's "
	       "sample.");
	for (i = 0; i < nr; i++)
		sample_u64(w, "railyard_rail_error_ppm", rnames[i], NULL,
			   m->m_rails[slot[i]].lr_health.rh_ppm);
	rows = (struct rows){m, true, nr, rnames, rcnt};
	counter_families(w, &rows);
	failover_histograms(w, m, slot, nr);
	for (size_t k = 0; k < sizeof(sfields) / sizeof(sfields[0]); k++) {
		family(w, sfields[k].name, "counter", sfields[k].help);
		for (i = 0; i < nr; i++)
			if (have_st[i])
				sample_u64(
				    w, sfields[k].name, rnames[i], NULL,
				    *(const uint64_t *)((const char *)&rst[i] +
							sfields[k].off));
	}

	/* per connection: one sample per rail the peer shares with us */
	family(
	    w, "railyard_connection_up", "gauge",
	    "1 when the connection on this rail to this peer carries traffic.");
	for (p = m->m_peers; p; p = p->pr_next)
		for (i = 0; i < nr; i++)
			if (p->pr_conn[slot[i]]->cn_state != CONN_UNPAIRED)
				sample_u64(w, "railyard_connection_up",
					   rnames[i], p->pr_name,
					   p->pr_conn[slot[i]]->cn_state ==
					       CONN_ACTIVE);
	family(w, "railyard_connection_health_ratio", "gauge",
	       "Health of the connection on this rail to this peer, 0..1.");
	for (p = m->m_peers; p; p = p->pr_next)
		for (i = 0; i < nr; i++)
			if (p->pr_conn[slot[i]]->cn_state != CONN_UNPAIRED)
				sample_f(w, "railyard_connection_health_ratio",
					 rnames[i], p->pr_name,
					 p->pr_conn[slot[i]]->cn_health /
					     1000.0);

	/* per peer: sums over the peer's connections */
	rows.is_rail = false;
	counter_families(w, &rows);
	family(w, "railyard_peer_active_connections", "gauge",
	       "Connections to the peer carrying traffic, over all rails.");
	for (p = m->m_peers; p; p = p->pr_next)
		sample_u64(w, "railyard_peer_active_connections", NULL,
			   p->pr_name, p->pr_nactive);
	family(
	    w, "railyard_peer_ready", "gauge",
	    "1 when the control channel to the peer has exchanged rail lists.");
	for (p = m->m_peers; p; p = p->pr_next)
		sample_u64(w, "railyard_peer_ready", NULL, p->pr_name,
			   p->pr_state == PEER_READY);
	family(w, "railyard_peer_operations_in_flight", "gauge",
	       "Operations posted to the peer and not yet completed.");
	for (p = m->m_peers; p; p = p->pr_next)
		sample_u64(w, "railyard_peer_operations_in_flight", NULL,
			   p->pr_name, p->pr_inflight);
	latency_histograms(w, m);
}

/* One histogram's samples; label is e.g. rail="r1" or peer="b",op="read". */
static void histogram_rows(struct mw *w, const char *fam, const char *lname,
			   const char *lval, const char *extra,
			   const struct ry__lat *l, const uint64_t *le)
{
	uint64_t cum = 0;

	for (unsigned b = 0; b <= RY__LAT_BUCKETS; b++) {
		cum += l->lt_bucket[b];
		put(w, "%s_bucket{", fam);
		put_label(w, lname, lval);
		put(w, "%s,le=", extra);
		if (b < RY__LAT_BUCKETS)
			put(w, "\"%g\"} %llu\n", le[b] / 1e9,
			    (unsigned long long)cum);
		else
			put(w, "\"+Inf\"} %llu\n", (unsigned long long)cum);
	}
	put(w, "%s_sum{", fam);
	put_label(w, lname, lval);
	put(w, "%s} %.9f\n", extra, l->lt_sum_ns / 1e9);
	put(w, "%s_count{", fam);
	put_label(w, lname, lval);
	put(w, "%s} %llu\n", extra, (unsigned long long)l->lt_count);
}

/*
 * Failover times per local rail as histograms, which Prometheus can sum
 * across nodes (histogram_quantile over sum by (le)); the per-rail and
 * per-peer summaries and max gauges above stay for existing dashboards.
 */
static void failover_histograms(struct mw *w, struct ry_manager *m,
				const unsigned *slot, unsigned nr)
{
	static const struct {
		const char *fam, *help;
	} h[RY__FO_N] = {
	    [RY__FO_DETECT] =
		{"railyard_rail_failover_detection_duration_seconds",
		 "Failure (last sign of life or link event) to "
		 "detection, per failed connection on the rail."},
	    [RY__FO_RESUME] = {"railyard_rail_failover_resume_duration_seconds",
			       "Detection to the first replayed traffic "
			       "completing elsewhere, per failover from the "
			       "rail."},
	    [RY__FO_FENCE] = {"railyard_rail_fence_duration_seconds",
			      "Detection to the peer's acknowledgement of the "
			      "fence of a failed connection on the rail."},
	};

	for (unsigned k = 0; k < RY__FO_N; k++) {
		family(w, h[k].fam, "histogram", h[k].help);
		for (unsigned i = 0; i < nr; i++) {
			const struct ry__lrail *lr = &m->m_rails[slot[i]];

			histogram_rows(w, h[k].fam, "rail", lr->lr_cfg.name, "",
				       &lr->lr_fo[k], ry__fo_le_ns);
		}
	}
}

/* Operation latency: one Prometheus histogram per peer and kind. */
static void latency_histograms(struct mw *w, struct ry_manager *m)
{
	static const char *const kinds[] = {"write", "read", "send"};
	static const char fam[] = "railyard_peer_operation_latency_seconds";
	struct ry_peer *p;

	family(w, fam, "histogram",
	       "Operations completed successfully, post to completion "
	       "callback, by kind (write includes write_notify).");
	for (p = m->m_peers; p; p = p->pr_next)
		for (unsigned k = 0; k < 3; k++) {
			char op[32];

			snprintf(op, sizeof(op), ",op=\"%s\"", kinds[k]);
			histogram_rows(w, fam, "peer", p->pr_name, op,
				       &p->pr_lat[k], ry__lat_le_ns);
		}
}

int ry_metrics_render(struct ry_manager *m, char *buf, size_t len)
{
	struct mw w = {.buf = buf, .len = len};

	if (!m || (!buf && len))
		return -EINVAL;
	ry__lock_and_run_leftovers(m);
	render_locked(m, &w);
	ry__unlock(m);
	if (w.pos > (size_t)INT32_MAX)
		return -EOVERFLOW;
	if (len && w.pos >= len)
		buf[len - 1] = 0;
	return (int)w.pos;
}
