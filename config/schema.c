// SPDX-License-Identifier: BSD-2-Clause
/*
 * The one libconfuse schema for railyard.conf.  etc/railyard.conf documents
 * every option here; keep the two in step (tests/unit/test_config.c loads
 * the reference file and checks it round-trips).
 *
 * Values go through our own parse callbacks so that a wrong type gets our
 * message and hint, not libconfuse's, and sizes and rates take units.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
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
	case 'K': shift = 10; end++; break;
	case 'M': shift = 20; end++; break;
	case 'G': shift = 30; end++; break;
	default: break;
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

static int size_cb(cfg_t *cfg, cfg_opt_t *opt, const char *value,
		   void *result)
{
	uint64_t v;

	if (ry__parse_size(value, &v) || v > LONG_MAX) {
		cb_error(cfg, opt,
			 "write bytes as a number with an optional K, M or G (4096, 4K, 1M)",
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
	case 'k': case 'K': mul = 1e3; end++; break;
	case 'M': mul = 1e6; end++; break;
	case 'G': mul = 1e9; end++; break;
	case 'T': mul = 1e12; end++; break;
	default: break;
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

static int rate_cb(cfg_t *cfg, cfg_opt_t *opt, const char *value,
		   void *result)
{
	uint64_t v;

	if (ry__parse_rate(value, &v)) {
		cb_error(cfg, opt,
			 "write bits per second with an optional unit: 0 (measure), 25G, 100Gbit/s",
			 "%s: '%s' is not a rate", value);
		return -1;
	}
	/* libconfuse stores strings itself; we only check here */
	*(const char **)result = value;
	return 0;
}

static int prob_cb(cfg_t *cfg, cfg_opt_t *opt, const char *value,
		   void *result)
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

static int bool_cb(cfg_t *cfg, cfg_opt_t *opt, const char *value,
		   void *result)
{
	static const char *const yes[] = { "yes", "true", "on", "1" };
	static const char *const no[] = { "no", "false", "off", "0" };

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

static cfg_opt_t fault_opts[] = {
	CFG_BOOL_CB("down", cfg_false, CFGF_NONE, bool_cb),
	CFG_FLOAT_CB("drop", 0, CFGF_NONE, prob_cb),
	CFG_FLOAT_CB("duplicate", 0, CFGF_NONE, prob_cb),
	CFG_FLOAT_CB("reorder", 0, CFGF_NONE, prob_cb),
	CFG_FLOAT_CB("corrupt", 0, CFGF_NONE, prob_cb),
	CFG_INT_CB("delay_us", 0, CFGF_NONE, int_cb),
	CFG_END()
};

static cfg_opt_t rail_opts[] = {
	CFG_STR("provider", NULL, CFGF_NODEFAULT),
	CFG_STR("network", "default", CFGF_NONE),
	CFG_STR("address", NULL, CFGF_NODEFAULT),
	CFG_STR("interface", NULL, CFGF_NODEFAULT),
	CFG_STR("device", NULL, CFGF_NODEFAULT),
	CFG_INT_CB("port", 1, CFGF_NONE, int_cb),
	CFG_INT_CB("gid_index", -1, CFGF_NONE, int_cb),
	CFG_INT_CB("mtu", 0, CFGF_NONE, size_cb),
	CFG_INT_CB("weight", 1, CFGF_NONE, int_cb),
	CFG_STR_CB("rate", "0", CFGF_NONE, rate_cb),
	CFG_SEC("fault", fault_opts, CFGF_NONE),
	CFG_END()
};

static cfg_opt_t peer_opts[] = {
	CFG_STR("address", NULL, CFGF_NODEFAULT),
	CFG_END()
};

static cfg_opt_t failover_opts[] = {
	CFG_INT_CB("heartbeat_ms", 10, CFGF_NONE, int_cb),
	CFG_INT_CB("timeout_ms", 100, CFGF_NONE, int_cb),
	CFG_INT_CB("ack_timeout_ms", 20, CFGF_NONE, int_cb),
	CFG_INT_CB("retry_count", 5, CFGF_NONE, int_cb),
	CFG_INT_CB("rnr_retry", 6, CFGF_NONE, int_cb),
	CFG_INT_CB("reconnect_min_ms", 100, CFGF_NONE, int_cb),
	CFG_INT_CB("reconnect_max_ms", 5000, CFGF_NONE, int_cb),
	CFG_INT_CB("op_timeout_ms", 10000, CFGF_NONE, int_cb),
	CFG_BOOL_CB("fence", cfg_true, CFGF_NONE, bool_cb),
	CFG_END()
};

static cfg_opt_t log_opts[] = {
	CFG_STR("level", "warn", CFGF_NONE),
	CFG_BOOL_CB("syslog", cfg_false, CFGF_NONE, bool_cb),
	CFG_END()
};

static cfg_opt_t root_opts[] = {
	CFG_STR("node", NULL, CFGF_NODEFAULT),
	CFG_STR("control", "127.0.0.1:7470", CFGF_NONE),
	CFG_INT_CB("fragment_size", 4096, CFGF_NONE, size_cb),
	CFG_INT_CB("ops_in_flight", 8, CFGF_NONE, int_cb),
	CFG_INT_CB("max_op_size", 64L << 20, CFGF_NONE, size_cb),
	CFG_INT_CB("wr_per_qp", 256, CFGF_NONE, int_cb),
	CFG_INT_CB("frags_per_wr", 16, CFGF_NONE, int_cb),
	CFG_SEC("rail", rail_opts, CFGF_MULTI | CFGF_TITLE | CFGF_NO_TITLE_DUPES),
	CFG_SEC("peer", peer_opts, CFGF_MULTI | CFGF_TITLE | CFGF_NO_TITLE_DUPES),
	CFG_SEC("failover", failover_opts, CFGF_NONE),
	CFG_SEC("log", log_opts, CFGF_NONE),
	CFG_END()
};

cfg_opt_t *ry__cfg_schema(void)
{
	return root_opts;
}
