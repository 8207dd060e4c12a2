/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * What a drill leaves behind: a CSV of per-rail throughput over time and an
 * SVG plot of it with the events (down, replay, fence, reconnect, up)
 * marked.  Plain data in, files out: no manager involved, so it is tested
 * on its own.
 */
#ifndef RAILYARD_CLI_REPORT_H
#define RAILYARD_CLI_REPORT_H

#include <stdint.h>
#include <stdio.h>

#define CLI_REPORT_MAX_RAILS 16

struct cli_report_sample {
	double t;			      /* seconds since start */
	double mbyte_s[CLI_REPORT_MAX_RAILS]; /* per rail, MB/s (1e6) */
};

struct cli_report_event {
	double t;
	char rail[64];
	char event[16]; /* down, replay, fence, reconnect, up, ... */
	/* down: failure start to declaration; resume: declaration to the
	 * first replayed work completing (< 0: not applicable or unknown) */
	double detect_ms;
	double resume_ms;
	double fail_t;	    /* down: when the failure began; < 0: n/a */
	uint64_t detect_ns; /* down, resume: the library's key for it */
	char reason[96];    /* the library's, e.g. "path MTU 1500 (...)" */
};

struct cli_report {
	char title[128];
	unsigned n_rails;
	char rails[CLI_REPORT_MAX_RAILS][64];
	unsigned n_samples, cap_samples;
	struct cli_report_sample *samples;
	unsigned n_events, cap_events;
	struct cli_report_event *events;
};

int cli_report_add_sample(struct cli_report *r,
			  const struct cli_report_sample *s);
int cli_report_add_event(struct cli_report *r,
			 const struct cli_report_event *e);
void cli_report_free(struct cli_report *r);

/* t,<rail>... rows, then a blank line and t,rail,event,detect_ms,resume_ms */
int cli_report_write_csv(const struct cli_report *r, FILE *out);
/* A self-contained SVG: one line per rail, total, events as markers. */
int cli_report_write_svg(const struct cli_report *r, FILE *out);

#endif
