/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Internals of the config loader, shared by its files:
 *
 *   scan.c      our own pass over the text: exact line of every option and
 *               section, unbalanced braces, unterminated strings, unknown
 *               options and duplicate names (libconfuse stops at the first
 *               problem and its line numbers run one token ahead)
 *   options.c   the option table: one row per option drives the schema,
 *               conversion, defaults, range checks and the printer
 *   schema.c    the libconfuse schema built from the table; value parsers
 *   load.c      read the file, scan, parse, convert to struct ry_config
 *   validate.c  the checks on the converted config, with fix hints
 *   print.c     the effective config in config-file syntax
 */
#ifndef RAILYARD_CONFIG_INT_H
#define RAILYARD_CONFIG_INT_H

#include <confuse.h>
#include <stddef.h>
#include <string.h>

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

/*
 * ry_config_load() without the checks of validate.c: the file parses and
 * every value has its type and range, but the whole need not hold
 * together (a key_file that cannot be read, say).  For commands that need
 * only a few options of a node's file, such as `railyard status -c`,
 * which needs its node name while the key is being fixed.
 */
int ry__config_load_lax(const char *path, struct ry_config **cfg_p,
			ry_config_report_fn report, void *arg);

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

#define RY__KEY_BYTES 32
/*
 * Read a key_file: 32 raw bytes, or 64 hex digits and an optional newline;
 * a regular file no group or other may access.  0 with the key, or -errno
 * with what is wrong (why) and how to fix it (hint).  Shared by
 * check-config and the manager so they cannot disagree.
 */
int ry__key_file_read(const char *path, unsigned char key[RY__KEY_BYTES],
		      char *why, size_t why_len, char *hint, size_t hint_len);

/*
 * The option table.  Each row names one option of one section and where
 * its value lives; sections are "" (top level), "rail", "rail.fault",
 * "failover", "peer" and "log".  Top level, failover and log rows are
 * offsets into struct ry_config; rail rows into struct ry_rail_config;
 * peer rows into struct ry_peer_config.
 */
enum ry__opt_type {
	RY__OPT_STR,	  /* char[] */
	RY__OPT_INT,	  /* uint32_t, int32_t if min < 0, uint64_t by size */
	RY__OPT_SIZE,	  /* as INT, written with K, M, G */
	RY__OPT_BOOL,	  /* bool, yes/no */
	RY__OPT_PROB,	  /* double */
	RY__OPT_RATE,	  /* uint64_t bits per second, written "25G" */
	RY__OPT_PROVIDER, /* enum ry_provider; converted by load.c */
	RY__OPT_LEVEL,	  /* enum ry_log_level; converted by load.c */
	RY__OPT_LIST,	  /* struct ry_str_list; checked by validate.c */
	RY__OPT_CM,	  /* enum ry_cm_mode */
};

enum {
	/* a hand-built 0 takes the default (ry_manager_create) */
	RY__OPT_ZERO_DEFAULT = 1 << 0,
	/* 0 is allowed besides min..max */
	RY__OPT_ZERO_OK = 1 << 1,
	/* range checked by code beside the table (validate.c), with its own
	 * message; min and max are still the true bounds */
	RY__OPT_OWN_CHECK = 1 << 2,
	/* printed on verbs rails only */
	RY__OPT_VERBS = 1 << 3,
	/* range checked on verbs rails only (soft rails ignore it) */
	RY__OPT_VERBS_CHECK = 1 << 5,
	/* not printed when empty */
	RY__OPT_OMIT_EMPTY = 1 << 4,
};

struct ry__opt {
	const char *sec;
	const char *name;
	enum ry__opt_type type;
	size_t off;
	size_t size;
	const char *def; /* as written in the file; NULL: none or computed */
	long long min, max;
	unsigned flags;
	const char *unit; /* for the reader of etc/railyard.conf */
	const char *hint; /* the fix for an out-of-range value */
};

extern const struct ry__opt ry__opts[];
extern const unsigned ry__n_opts;

#define RY__OPT_FOREACH(o, section)                                            \
	for (const struct ry__opt *o = ry__opts; o < ry__opts + ry__n_opts;    \
	     o++)                                                              \
		if (!strcmp(o->sec, section))

/* Store the table's defaults of one section into base. */
void ry__opt_defaults(const char *sec, void *base);
/* Expand each soft and tcp rail into c->lanes rails (lanes.c); 0, or
 * -EINVAL with why said. */
int ry__config_lanes(struct ry_config *c, char *why, size_t len);
/* Give every RY__OPT_ZERO_DEFAULT field that is 0 its default. */
void ry__opt_fill_zero(struct ry_config *cfg);
static inline void *ry__opt_field(const struct ry__opt *o, const void *base)
{
	return (char *)base + o->off;
}

/* An integer option's value, widened. */
long long ry__opt_int(const struct ry__opt *o, const void *field);
double ry__opt_prob(const struct ry__opt *o, const void *field);
/* Store a parsed integer; one that does not fit the field is stored as a
 * value outside min..max, so validation reports it with its line. */
void ry__opt_set_int(const struct ry__opt *o, void *field, long long v);
/* Parse a value as written in a file (a default, an example). */
int ry__opt_parse(const struct ry__opt *o, const char *text, void *field);

/* Checks shared by ry_config_validate() and the loader; ld may be NULL
 * for a config built by hand (then lines are the structs' own). */
int ry__cfg_validate(const struct ry_config *cfg, struct ry__loader *ld);

/*
 * Copy an application's config into *out, a struct of this library's
 * layout: fields its program did not have take their defaults.  Returns 0,
 * or -EINVAL with *why_p saying what is wrong with its layout (layout.c).
 */
int ry__config_adopt(const struct ry_config *in, struct ry_config *out,
		     const char **why_p);

/* Parsers shared with validation and the CLI. */
int ry__parse_size(const char *s, uint64_t *out);
int ry__parse_rate(const char *s, uint64_t *out_bps);
int ry__parse_hostport(const char *s, bool need_port, char *host,
		       size_t host_len, uint16_t *port);
/* "ip/len" (IPv4 or IPv6) into family, 16 address bytes and prefix
 * length; "any" gives family 0.  -EINVAL if it does not parse. */
int ry__parse_prefix(const char *s, int *family, unsigned char addr[16],
		     unsigned *len);

/* Thread-local loader for libconfuse callbacks, which carry no user arg. */
extern _Thread_local struct ry__loader *ry__cur_loader;

#endif
