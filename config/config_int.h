/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Internals of the config loader, shared by its files:
 *
 *   scan.c      our own pass over the text: exact line of every option and
 *               section, unbalanced braces, unterminated strings, unknown
 *               options and duplicate names (libconfuse stops at the first
 *               problem and its line numbers run one token ahead)
 *   schema.c    the libconfuse schema and value parsers (sizes, rates)
 *   load.c      read the file, scan, parse, convert to struct ry_config
 *   validate.c  the checks on the converted config, with fix hints
 *   print.c     the effective config in config-file syntax
 */
#ifndef RAILYARD_CONFIG_INT_H
#define RAILYARD_CONFIG_INT_H

#include <confuse.h>

#include <railyard/config.h>

/* Where an option was assigned: section path ("", "rail", "rail.fault",
 * "failover", ...), the index of the enclosing top-level multi-section
 * instance (rail 0, rail 1, ...), the option and its line. */
struct ry__site {
	char path[32];
	int index;
	char name[40];
	int line;
};

/* Where a section was opened. */
struct ry__sec_site {
	char path[32];
	char title[RY_NAME_MAX];
	int index;
	int line;
};

/* Collects problems and the line map while one file is loaded. */
/* A problem held back so that all of a file's come out in line order. */
struct ry__problem {
	int line;
	char message[320];
	char hint[200];
};

struct ry__loader {
	const char *file;
	struct ry__problem *probs;
	unsigned n_probs, cap_probs;
	ry_config_report_fn report;
	void *arg;
	int errors;
	struct ry__site *sites;
	unsigned n_sites, cap_sites;
	struct ry__sec_site *secs;
	unsigned n_secs, cap_secs;
};

void ry__cfg_report(struct ry__loader *ld, int line, const char *hint,
		    const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Pass the held problems to the report callback, sorted by line. */
void ry__cfg_flush(struct ry__loader *ld);

/* Returns the number of problems found (0: fit for libconfuse). */
int ry__cfg_scan(struct ry__loader *ld, const char *text, cfg_opt_t *root);

/* Line of option `name` in section `path` instance `index`; falls back to
 * the section's line, then 0. */
int ry__cfg_line(const struct ry__loader *ld, const char *path, int index,
		 const char *name);
/* Line of the last assignment of `name` at or before `before`. */
int ry__cfg_line_before(const struct ry__loader *ld, const char *name,
			int before);

cfg_opt_t *ry__cfg_schema(void);

/* Checks shared by ry_config_validate() and the loader; ld may be NULL
 * for a config built by hand (then lines are the structs' own). */
int ry__cfg_validate(const struct ry_config *cfg, struct ry__loader *ld);

/* Parsers shared with validation and the CLI. */
int ry__parse_size(const char *s, uint64_t *out);
int ry__parse_rate(const char *s, uint64_t *out_bps);
int ry__parse_hostport(const char *s, bool need_port, char *host,
		       size_t host_len, uint16_t *port);

/* Thread-local loader for libconfuse callbacks, which carry no user arg. */
extern _Thread_local struct ry__loader *ry__cur_loader;

#endif
