// SPDX-License-Identifier: BSD-2-Clause
/*
 * The one libconfuse schema for railyard.conf, built from the option table
 * (options.c): the sections are here, their options and defaults there.
 *
 * Values go through our own parse callbacks so that a wrong type gets our
 * message and hint, not libconfuse's, and sizes and rates take units.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <arpa/inet.h>

#include "config/config_int.h"

_Thread_local struct ry__loader *ry__cur_loader;

/* Report from inside a libconfuse callback; libconfuse's line is one token
 * ahead, so find the assignment of this option at or before it. */
static void cb_error(cfg_t *cfg, cfg_opt_t *opt, const char *hint,
		     const char *fmt, const char *value)
{
	struct ry__loader *ld = ry__cur_loader;
	int line;

	if (!ld)
		return;
	line = ry__cfg_line_before(ld, opt->name, cfg->line);
	ry__cfg_report(ld, line, hint, fmt, opt->name, value);
}

static int parse_long(const char *s, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 0);
	if (errno || end == s || *end)
		return -EINVAL;
	*out = v;
	return 0;
}

static int int_cb(cfg_t *cfg, cfg_opt_t *opt, const char *value, void *result)
{
	long v;

	if (parse_long(value, &v)) {
		cb_error(cfg, opt, "write a whole number, e.g. 10",
			 "%s: '%s' is not a whole number", value);
		return -1;
	}
	*(long *)result = v;
	return 0;
}

int ry__parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;
	unsigned shift = 0;

	while (isspace((unsigned char)*s))
		s++;
	if (*s == '-' || !isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -ERANGE;
	switch (toupper((unsigned char)*end)) {
	case 'K':
		shift = 10;
		end++;
		break;
	case 'M':
		shift = 20;
		end++;
		break;
	case 'G':
		shift = 30;
		end++;
		break;
	default:
		break;
	}
	if (shift && (*end == 'i' || *end == 'I'))
		end++;
	if (shift && (*end == 'B' || *end == 'b'))
		end++;
	if (*end)
		return -EINVAL;
	if (v > (UINT64_MAX >> shift))
		return -ERANGE;
	*out = (uint64_t)v << shift;
	return 0;
}

static int size_cb(cfg_t *cfg, cfg_opt_t *opt, const char *value, void *result)
{
	uint64_t v;

	if (ry__parse_size(value, &v) || v > LONG_MAX) {
		cb_error(cfg, opt,
			 "write bytes as a number with an optional K, M or G "
			 "(4096, 4K, 1M)",
			 "%s: '%s' is not a size", value);
		return -1;
	}
	*(long *)result = (long)v;
	return 0;
}

int ry__parse_rate(const char *s, uint64_t *out_bps)
{
	char *end;
	double v;
	double mul = 1;

	while (isspace((unsigned char)*s))
		s++;
	if (!isdigit((unsigned char)*s))
		return -EINVAL;
	errno = 0;
	v = strtod(s, &end);
	if (errno || v < 0)
		return -EINVAL;
	while (*end == ' ')
		end++;
	switch (*end) {
	case 'k':
	case 'K':
		mul = 1e3;
		end++;
		break;
	case 'M':
		mul = 1e6;
		end++;
		break;
	case 'G':
		mul = 1e9;
		end++;
		break;
	case 'T':
		mul = 1e12;
		end++;
		break;
	default:
		break;
	}
	/* accept "G", "Gbit", "Gbit/s", "Gb/s", "Gbps" */
	if (!strcmp(end, "bit") || !strcmp(end, "bit/s") ||
	    !strcmp(end, "b/s") || !strcmp(end, "bps"))
		end += strlen(end);
	if (*end || v * mul > 1e15)
		return -EINVAL;
	*out_bps = (uint64_t)(v * mul);
	return 0;
}

static int rate_cb(cfg_t *cfg, cfg_opt_t *opt, const char *value, void *result)
{
	uint64_t v;

	if (ry__parse_rate(value, &v)) {
		cb_error(cfg, opt,
			 "write bits per second with an optional unit: 0 "
			 "(measure), 25G, 100Gbit/s",
			 "%s: '%s' is not a rate", value);
		return -1;
	}
	/* libconfuse stores strings itself; we only check here */
	*(const char **)result = value;
	return 0;
}

static int cm_cb(cfg_t *cfg, cfg_opt_t *opt, const char *value, void *result)
{
	enum ry_cm_mode m;
	struct ry__opt o = {.type = RY__OPT_CM};

	if (ry__opt_parse(&o, value, &m)) {
		cb_error(cfg, opt,
			 "rdma_cm (librdmacm connects; iWARP needs it), "
			 "manual (parameters over the control channel) or "
			 "auto (rdma_cm where the device needs it)",
			 "%s: '%s' is not a connection mode", value);
		return -1;
	}
	*(const char **)result = value;
	return 0;
}

static int prob_cb(cfg_t *cfg, cfg_opt_t *opt, const char *value, void *result)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(value, &end);
	if (errno || end == value || *end) {
		cb_error(cfg, opt, "write a probability from 0 to 1, e.g. 0.01",
			 "%s: '%s' is not a number", value);
		return -1;
	}
	*(double *)result = v;
	return 0;
}

static int bool_cb(cfg_t *cfg, cfg_opt_t *opt, const char *value, void *result)
{
	static const char *const yes[] = {"yes", "true", "on", "1"};
	static const char *const no[] = {"no", "false", "off", "0"};

	for (size_t i = 0; i < 4; i++) {
		if (!strcasecmp(value, yes[i])) {
			*(cfg_bool_t *)result = cfg_true;
			return 0;
		}
		if (!strcasecmp(value, no[i])) {
			*(cfg_bool_t *)result = cfg_false;
			return 0;
		}
	}
	cb_error(cfg, opt, "write yes or no", "%s: '%s' is not yes or no",
		 value);
	return -1;
}

/* Sections with their options from the table, plus subsections (at most
 * four, the root's) and the end mark: fill() refuses to overrun them. */
#define MAX_SEC_OPTS 40
#define SEC_EXTRA 5
static cfg_opt_t fault_opts[MAX_SEC_OPTS], rail_opts[MAX_SEC_OPTS],
    peer_opts[MAX_SEC_OPTS], failover_opts[MAX_SEC_OPTS],
    log_opts[MAX_SEC_OPTS], root_opts[MAX_SEC_OPTS];
static pthread_once_t schema_once = PTHREAD_ONCE_INIT;

static cfg_opt_t schema_opt(const struct ry__opt *o)
{
	union {
		uint64_t u64;
		uint32_t u32;
		int32_t i32;
		double d;
		bool b;
	} v = {0};
	long n = 0;

	/* the defaults are parsed the way a file's values are */
	if (o->def && o->type != RY__OPT_STR && o->type != RY__OPT_RATE &&
	    o->type != RY__OPT_PROVIDER && o->type != RY__OPT_LEVEL)
		ry__opt_parse(o, o->def, &v);
	if (o->type == RY__OPT_INT || o->type == RY__OPT_SIZE)
		n = (long)ry__opt_int(o, &v);
	switch (o->type) {
	case RY__OPT_INT:
		return (cfg_opt_t)CFG_INT_CB(o->name, n, CFGF_NONE, int_cb);
	case RY__OPT_SIZE:
		return (cfg_opt_t)CFG_INT_CB(o->name, n, CFGF_NONE, size_cb);
	case RY__OPT_BOOL:
		return (cfg_opt_t)CFG_BOOL_CB(
		    o->name, v.b ? cfg_true : cfg_false, CFGF_NONE, bool_cb);
	case RY__OPT_PROB:
		return (cfg_opt_t)CFG_FLOAT_CB(o->name, v.d, CFGF_NONE,
					       prob_cb);
	case RY__OPT_LIST:
		return (cfg_opt_t)CFG_STR_LIST(o->name, NULL, CFGF_NONE);
	case RY__OPT_RATE:
		return (cfg_opt_t)CFG_STR_CB(o->name, (char *)o->def, CFGF_NONE,
					     rate_cb);
	case RY__OPT_CM:
		return (cfg_opt_t)CFG_STR_CB(o->name, (char *)o->def, CFGF_NONE,
					     cm_cb);
	default:
		return (cfg_opt_t)CFG_STR(o->name, (char *)o->def,
					  o->def ? CFGF_NONE : CFGF_NODEFAULT);
	}
}

static unsigned fill(cfg_opt_t *opts, const char *sec)
{
	unsigned n = 0;

	RY__OPT_FOREACH(o, sec)
	{
		if (n + SEC_EXTRA >= MAX_SEC_OPTS) {
			/* a new option outgrew the arrays: a build problem */
			fprintf(stderr,
				"railyard: config section '%s' has "
				"more options than MAX_SEC_OPTS in "
				"config/schema.c allows\n",
				sec);
			abort();
		}
		opts[n++] = schema_opt(o);
	}
	return n;
}

static void schema_init(void)
{
	const cfg_opt_t end = CFG_END();
	const cfg_flag_t multi = CFGF_MULTI | CFGF_TITLE | CFGF_NO_TITLE_DUPES;
	unsigned n;

	fault_opts[fill(fault_opts, "rail.fault")] = end;
	n = fill(rail_opts, "rail");
	rail_opts[n++] = (cfg_opt_t)CFG_SEC("fault", fault_opts, CFGF_NONE);
	rail_opts[n] = end;
	peer_opts[fill(peer_opts, "peer")] = end;
	failover_opts[fill(failover_opts, "failover")] = end;
	log_opts[fill(log_opts, "log")] = end;
	n = fill(root_opts, "");
	root_opts[n++] = (cfg_opt_t)CFG_SEC("rail", rail_opts, multi);
	root_opts[n++] = (cfg_opt_t)CFG_SEC("peer", peer_opts, multi);
	root_opts[n++] =
	    (cfg_opt_t)CFG_SEC("failover", failover_opts, CFGF_NONE);
	root_opts[n++] = (cfg_opt_t)CFG_SEC("log", log_opts, CFGF_NONE);
	root_opts[n] = end;
}

cfg_opt_t *ry__cfg_schema(void)
{
	pthread_once(&schema_once, schema_init);
	return root_opts;
}
