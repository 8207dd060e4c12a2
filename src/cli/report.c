// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "src/cli/report.h"

static int grow(void **v, unsigned *cap, unsigned n, size_t elem)
{
	void *p;
	unsigned c;

	if (n < *cap)
		return 0;
	c = *cap ? *cap * 2 : 64;
	p = realloc(*v, c * elem);
	if (!p)
		return -ENOMEM;
	*v = p;
	*cap = c;
	return 0;
}

int cli_report_add_sample(struct cli_report *r,
			  const struct cli_report_sample *s)
{
	if (grow((void **)&r->samples, &r->cap_samples, r->n_samples,
		 sizeof(*s)))
		return -ENOMEM;
	r->samples[r->n_samples++] = *s;
	return 0;
}

int cli_report_add_event(struct cli_report *r, const struct cli_report_event *e)
{
	if (grow((void **)&r->events, &r->cap_events, r->n_events, sizeof(*e)))
		return -ENOMEM;
	r->events[r->n_events++] = *e;
	return 0;
}

void cli_report_free(struct cli_report *r)
{
	free(r->samples);
	free(r->events);
	r->samples = NULL;
	r->events = NULL;
	r->n_samples = r->cap_samples = r->n_events = r->cap_events = 0;
}

int cli_report_write_csv(const struct cli_report *r, FILE *out)
{
	fprintf(out, "t_s");
	for (unsigned i = 0; i < r->n_rails; i++)
		fprintf(out, ",%s_MBps", r->rails[i]);
	fprintf(out, ",total_MBps\n");
	for (unsigned s = 0; s < r->n_samples; s++) {
		double total = 0;

		fprintf(out, "%.3f", r->samples[s].t);
		for (unsigned i = 0; i < r->n_rails; i++) {
			fprintf(out, ",%.3f", r->samples[s].mbyte_s[i]);
			total += r->samples[s].mbyte_s[i];
		}
		fprintf(out, ",%.3f\n", total);
	}
	fprintf(out, "\nt_s,rail,event,detect_ms,resume_ms\n");
	for (unsigned e = 0; e < r->n_events; e++) {
		const struct cli_report_event *ev = &r->events[e];

		fprintf(out, "%.3f,%s,%s,", ev->t, ev->rail, ev->event);
		if (ev->detect_ms >= 0)
			fprintf(out, "%.1f", ev->detect_ms);
		fprintf(out, ",");
		if (ev->resume_ms >= 0)
			fprintf(out, "%.1f", ev->resume_ms);
		fprintf(out, "\n");
	}
	return ferror(out) ? -EIO : 0;
}

static void xml_text(FILE *out, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '<':
			fputs("&lt;", out);
			break;
		case '>':
			fputs("&gt;", out);
			break;
		case '&':
			fputs("&amp;", out);
			break;
		case '"':
			fputs("&quot;", out);
			break;
		default:
			fputc(*s, out);
		}
	}
}

/* A tick step of 1, 2 or 5 times a power of ten giving about n ticks. */
static double nice_step(double range, int n)
{
	double raw = range / n, p = 1;

	while (p * 10 <= raw)
		p *= 10;
	while (p > raw && p > 1e-9)
		p /= 10;
	if (raw <= p)
		return p;
	if (raw <= 2 * p)
		return 2 * p;
	if (raw <= 5 * p)
		return 5 * p;
	return 10 * p;
}

static const char *const colours[] = {"#1f77b4", "#ff7f0e", "#2ca02c",
				      "#d62728", "#9467bd", "#8c564b",
				      "#e377c2", "#7f7f7f"};

static const char *event_colour(const char *ev)
{
	if (!strcmp(ev, "down"))
		return "#d62728";
	if (!strcmp(ev, "up"))
		return "#2ca02c";
	return "#7f7f7f";
}

int cli_report_write_svg(const struct cli_report *r, FILE *out)
{
	const double W = 900, H = 420, L = 70, R = 150, T = 40, B = 50;
	const double pw = W - L - R, ph = H - T - B;
	double tmax = 1, ymax = 1, step;

	for (unsigned s = 0; s < r->n_samples; s++) {
		double total = 0;

		if (r->samples[s].t > tmax)
			tmax = r->samples[s].t;
		for (unsigned i = 0; i < r->n_rails; i++)
			total += r->samples[s].mbyte_s[i];
		if (total > ymax)
			ymax = total;
	}
	for (unsigned e = 0; e < r->n_events; e++)
		if (r->events[e].t > tmax)
			tmax = r->events[e].t;
	ymax *= 1.1;

#define X(t) (L + (t) / tmax * pw)
#define Y(v) (T + ph - (v) / ymax * ph)
	fprintf(out,
		"<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" "
		"height=\"%.0f\" "
		"viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\" "
		"font-size=\"12\">\n"
		"<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
		W, H, W, H);
	fprintf(out, "<text x=\"%.0f\" y=\"22\" font-size=\"15\">", L);
	xml_text(out, r->title);
	fprintf(out, "</text>\n");
	/* axes and grid */
	step = nice_step(ymax, 5);
	for (double v = 0; v <= ymax; v += step)
		fprintf(out,
			"<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
			"stroke=\"#ddd\"/>"
			"<text x=\"%.1f\" y=\"%.1f\" "
			"text-anchor=\"end\">%g</text>\n",
			L, Y(v), L + pw, Y(v), L - 6, Y(v) + 4, v);
	step = nice_step(tmax, 10);
	for (double t = 0; t <= tmax + 1e-9; t += step)
		fprintf(out,
			"<text x=\"%.1f\" y=\"%.1f\" "
			"text-anchor=\"middle\">%g</text>\n",
			X(t), T + ph + 18, t);
	fprintf(out,
		"<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" "
		"fill=\"none\" stroke=\"#333\"/>\n"
		"<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">time "
		"(s)</text>\n"
		"<text transform=\"translate(16,%.1f) rotate(-90)\" "
		"text-anchor=\"middle\">MB/s</text>\n",
		L, T, pw, ph, L + pw / 2, H - 12, T + ph / 2);
	/* events: a dashed vertical line each, labelled */
	for (unsigned e = 0; e < r->n_events; e++) {
		const struct cli_report_event *ev = &r->events[e];

		fprintf(
		    out,
		    "<g class=\"event\"><line x1=\"%.1f\" y1=\"%.1f\" "
		    "x2=\"%.1f\" y2=\"%.1f\" "
		    "stroke=\"%s\" stroke-dasharray=\"4,3\"/>"
		    "<text x=\"%.1f\" y=\"%.1f\" fill=\"%s\" font-size=\"10\">",
		    X(ev->t), T, X(ev->t), T + ph, event_colour(ev->event),
		    X(ev->t) + 3, T + 12 + 11.0 * (e % 4),
		    event_colour(ev->event));
		xml_text(out, ev->rail);
		fputc(' ', out);
		xml_text(out, ev->event);
		fprintf(out, "</text></g>\n");
	}
	/* one line per rail, then the total */
	for (unsigned i = 0; i <= r->n_rails; i++) {
		const char *c = i < r->n_rails ? colours[i % 8] : "#000";

		fprintf(out,
			"<polyline class=\"rail\" fill=\"none\" stroke=\"%s\" "
			"stroke-width=\"%s\" points=\"",
			c, i < r->n_rails ? "1.5" : "2.5");
		for (unsigned s = 0; s < r->n_samples; s++) {
			double v = 0;

			if (i < r->n_rails) {
				v = r->samples[s].mbyte_s[i];
			} else {
				for (unsigned k = 0; k < r->n_rails; k++)
					v += r->samples[s].mbyte_s[k];
			}
			fprintf(out, "%.1f,%.1f ", X(r->samples[s].t), Y(v));
		}
		fprintf(out, "\"/>\n");
		fprintf(out,
			"<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
			"stroke=\"%s\" stroke-width=\"3\"/>"
			"<text x=\"%.1f\" y=\"%.1f\">",
			L + pw + 12, T + 10 + 18.0 * i, L + pw + 32,
			T + 10 + 18.0 * i, c, L + pw + 38, T + 14 + 18.0 * i);
		xml_text(out, i < r->n_rails ? r->rails[i] : "total");
		fprintf(out, "</text>\n");
	}
	fprintf(out, "</svg>\n");
#undef X
#undef Y
	return ferror(out) ? -EIO : 0;
}
