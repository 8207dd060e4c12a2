// SPDX-License-Identifier: BSD-2-Clause
/*
 * Every option railyard knows, one row each.  The schema (schema.c), the
 * conversion into struct ry_config (load.c), the defaults, the range checks
 * (validate.c) and the printer (print.c) all walk this table, so an option
 * is added here and in the code that consumes its value.  Checks that
 * involve more than one option stay as code in validate.c.
 *
 * tests/unit/test_options.c keeps etc/railyard.conf and the manual page
 * config/railyard.conf.5 in step with this one.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "config/config_int.h"
#include "src/util/log.h"

#define ROW(sec_, type_struct, field, name_, type_, def_, min_, max_, flags_,  \
	    unit_, hint_)                                                      \
	{                                                                      \
		.sec = sec_, .name = name_, .type = type_,                     \
		.off = offsetof(type_struct, field),                           \
		.size = sizeof(((type_struct *)0)->field), .def = def_,        \
		.min = min_, .max = max_, .flags = flags_, .unit = unit_,      \
		.hint = hint_                                                  \
	}
#define TOP(f, ...) ROW("", struct ry_config, f, #f, __VA_ARGS__)
#define RAIL(f, ...) ROW("rail", struct ry_rail_config, f, #f, __VA_ARGS__)
#define FAULT(f, ...)                                                          \
	ROW("rail.fault", struct ry_rail_config, fault.f, #f, __VA_ARGS__)
#define FAILOVER(f, ...)                                                       \
	ROW("failover", struct ry_config, failover.f, #f, __VA_ARGS__)
#define PEER(f, ...) ROW("peer", struct ry_peer_config, f, #f, __VA_ARGS__)
#define LOG(f, ...) ROW("log", struct ry_config, log.f, #f, __VA_ARGS__)

#define ZD RY__OPT_ZERO_DEFAULT
#define MS_HINT "a positive number of milliseconds"
#define RETRY_HINT "7 means retry forever on some HCAs, so it is not allowed"
#define PROB_HINT "a probability from 0 to 1"

const struct ry__opt ry__opts[] = {
    /* node's default is the host name, filled by ry_config_init_defaults */
    TOP(node, RY__OPT_STR, NULL, 0, 0, 0, NULL, NULL),
    TOP(control, RY__OPT_STR, "127.0.0.1:7470", 0, 0, 0, "ip:port", NULL),
    TOP(fragment_size, RY__OPT_SIZE, "4096", 512, 1 << 20,
	ZD | RY__OPT_OWN_CHECK, "bytes, a power of two", NULL),
    TOP(ops_in_flight, RY__OPT_INT, "8", 1, 4096, ZD, "operations",
	"operations in flight per peer; 8 is the default"),
    /* at least fragment_size: checked in validate.c */
    TOP(max_op_size, RY__OPT_SIZE, "64M", 512, 1ll << 32,
	ZD | RY__OPT_OWN_CHECK, "bytes", NULL),
    TOP(wr_per_qp, RY__OPT_INT, "256", 1, 16384, ZD, "work requests",
	"work requests per QP; 256 is the default"),
    /* 0 is decided when the manager adopts the config (manager.c) */
    TOP(frags_per_wr, RY__OPT_INT, "0", 0, 256, 0, "fragments",
	"0 (16, or 64 on a node whose rails are all tcp) or 1 to 256"),
    TOP(reg_cache_bytes, RY__OPT_SIZE, "0", 0, 1ll << 48, 0, "bytes",
	"registrations ry_mr_cache_get() keeps; 0 turns the cache off"),
    TOP(progress_threads, RY__OPT_INT, "0", 0, RY_MAX_RAILS, 0, "threads",
	"0 (one per rail, at most one per core) or 1 to 16"),
    TOP(contexts, RY__OPT_INT, "1", 1, 16, ZD, "contexts",
	"progress contexts; 1 is the default"),
    /* expanded into rails when a manager adopts the config (lanes.c) */
    TOP(lanes, RY__OPT_INT, "1", 1, 8, ZD, "lanes",
	"lanes per soft or tcp rail, 1 to 8; 1 is the default"),
    /* each entry is checked in validate.c */
    TOP(accept, RY__OPT_LIST, NULL, 0, 0, RY__OPT_OMIT_EMPTY,
	"list of \"ip/len\" | \"any\"", NULL),
    TOP(max_sessions, RY__OPT_INT, "16384", 1, 1 << 20, ZD, "sessions",
	"inbound control sessions in all; 16384 is the default"),
    TOP(max_sessions_per_source, RY__OPT_INT, "8", 1, 65536, ZD, "sessions",
	"inbound control sessions per address; 8 is the default"),
    TOP(handshake_timeout_ms, RY__OPT_INT, "2000", 1, 600000, ZD, "ms",
	MS_HINT),
    TOP(standby_below, RY__OPT_INT, "0", 0, 100, 0, "percent",
	"percent of the primary rails' weight, 0 to 100; 0: standby rails "
	"carry work only while no primary rail can"),
    TOP(control_frame_rate, RY__OPT_INT, "100", 1, 1000000, ZD, "frames/s",
	"control frames of one type per session per second; 100 is the "
	"default"),
    TOP(control_frame_burst, RY__OPT_INT, "200", 1, 1000000, ZD, "frames",
	"control frames of one type a session may send at once; 200 is the "
	"default"),
    /* the file itself (size, format, mode) is checked in validate.c */
    TOP(key_file, RY__OPT_STR, NULL, 0, 0, RY__OPT_OMIT_EMPTY, "path", NULL),
    TOP(key_overlap_s, RY__OPT_INT, "600", 0, 604800, 0, "seconds",
	"seconds the previous key stays accepted after a reload reads a new "
	"one, 0 to 604800 (a week); 0: not at all"),
    /* error_drain_ppm at or over error_degrade_ppm: checked in validate.c */
    TOP(error_degrade_ppm, RY__OPT_INT, "10000", 0, 1000000, 0,
	"errors per million packets",
	"0 to 1000000 (0: never); 10000 (1 %) is the default"),
    TOP(error_drain_ppm, RY__OPT_INT, "50000", 0, 1000000, 0,
	"errors per million packets",
	"0 to 1000000 (0: never); 50000 (5 %) is the default"),
    TOP(error_quiet_ms, RY__OPT_INT, "10000", 1, 86400000, ZD, "ms", MS_HINT),
    /* needs key_file and soft rails only: checked in validate.c */
    TOP(data_mac, RY__OPT_BOOL, "no", 0, 0, 0, "yes | no", NULL),
    TOP(require_all_rails, RY__OPT_BOOL, "no", 0, 0, 0, "yes | no", NULL),

    /* provider and the soft/verbs address rules are checked in code */
    RAIL(provider, RY__OPT_PROVIDER, NULL, 0, 0, 0, "soft | verbs | tcp", NULL),
    RAIL(network, RY__OPT_STR, "default", 0, 0, 0, "name", NULL),
    RAIL(address, RY__OPT_STR, NULL, 0, 0, RY__OPT_OMIT_EMPTY, "ip[:port]",
	 NULL),
    RAIL(interface, RY__OPT_STR, NULL, 0, 0, RY__OPT_OMIT_EMPTY,
	 "interface name", NULL),
    RAIL(device, RY__OPT_STR, NULL, 0, 0, RY__OPT_VERBS,
	 "device name or node GUID", NULL),
    RAIL(port, RY__OPT_INT, "1", 1, 255, RY__OPT_VERBS | RY__OPT_VERBS_CHECK,
	 "HCA port", "HCA ports are numbered from 1"),
    RAIL(gid_index, RY__OPT_INT, "-1", -1, 255, RY__OPT_VERBS, "GID index",
	 "-1 picks the RoCE v2 GID"),
    RAIL(mtu, RY__OPT_SIZE, "0", 256, 65536, RY__OPT_ZERO_OK, "bytes",
	 "0 uses the interface's MTU; connections probe the path's"),
    RAIL(weight, RY__OPT_INT, "1", 1, 1000, 0, "relative share",
	 "weights are relative: 1 for equal rails"),
    ROW("rail", struct ry_rail_config, rate_bps, "rate", RY__OPT_RATE, "0", 0,
	0, 0, "bits/s", NULL),
    /* set on a soft rail: refused in validate.c */
    RAIL(traffic_class, RY__OPT_INT, "0", 0, 255,
	 RY__OPT_VERBS | RY__OPT_VERBS_CHECK, "DSCP << 2 | ECN",
	 "DSCP << 2 | ECN bits, 0 to 255: DSCP 26 (AF31) is 104"),
    RAIL(cm, RY__OPT_CM, "auto", 0, 0, RY__OPT_VERBS, "rdma_cm | manual | auto",
	 NULL),
    RAIL(sl, RY__OPT_INT, "0", 0, 15, RY__OPT_VERBS | RY__OPT_VERBS_CHECK,
	 "service level", "InfiniBand service levels are 0 to 15"),
    /* carries traffic only while no primary rail to the peer is up */
    RAIL(standby, RY__OPT_BOOL, "no", 0, 0, 0, "yes | no", NULL),

    FAULT(down, RY__OPT_BOOL, "no", 0, 0, 0, "yes | no", NULL),
    FAULT(drop, RY__OPT_PROB, "0", 0, 1, 0, "probability", PROB_HINT),
    FAULT(duplicate, RY__OPT_PROB, "0", 0, 1, 0, "probability", PROB_HINT),
    FAULT(reorder, RY__OPT_PROB, "0", 0, 1, 0, "probability", PROB_HINT),
    FAULT(corrupt, RY__OPT_PROB, "0", 0, 1, 0, "probability", PROB_HINT),
    FAULT(delay_us, RY__OPT_INT, "0", 0, 10000000, 0, "microseconds",
	  "at most 10 s (10000000)"),

    FAILOVER(heartbeat_ms, RY__OPT_INT, "10", 1, 60000, ZD, "ms", MS_HINT),
    FAILOVER(idle_heartbeat_ms, RY__OPT_INT, "30000", 1, 3600000, ZD, "ms",
	     MS_HINT),
    FAILOVER(timeout_ms, RY__OPT_INT, "100", 2, 600000, ZD, "ms", MS_HINT),
    FAILOVER(ack_timeout_ms, RY__OPT_INT, "20", 1, 60000, ZD, "ms", MS_HINT),
    FAILOVER(retry_count, RY__OPT_INT, "5", 0, 6, ZD, "retries", RETRY_HINT),
    FAILOVER(rnr_retry, RY__OPT_INT, "6", 0, 6, ZD, "retries", RETRY_HINT),
    FAILOVER(reconnect_min_ms, RY__OPT_INT, "100", 1, 3600000, ZD, "ms",
	     MS_HINT),
    FAILOVER(reconnect_max_ms, RY__OPT_INT, "5000", 1, 3600000, ZD, "ms",
	     MS_HINT),
    FAILOVER(op_timeout_ms, RY__OPT_INT, "10000", 1, 3600000, ZD, "ms",
	     MS_HINT),
    FAILOVER(fence, RY__OPT_BOOL, "yes", 0, 0, 0, "yes | no", NULL),

    PEER(address, RY__OPT_STR, NULL, 0, 0, 0, "ip:port", NULL),

    LOG(level, RY__OPT_LEVEL, "warn", 0, 0, 0,
	"error | warn | info | debug | trace", NULL),
    LOG(syslog, RY__OPT_BOOL, "no", 0, 0, 0, "yes | no", NULL),
};

const unsigned ry__n_opts = sizeof(ry__opts) / sizeof(ry__opts[0]);

long long ry__opt_int(const struct ry__opt *o, const void *field)
{
	const char *p = field;

	if (o->size == sizeof(uint64_t))
		return (long long)*(const uint64_t *)p;
	if (o->min < 0)
		return *(const int32_t *)p;
	return *(const uint32_t *)p;
}

double ry__opt_prob(const struct ry__opt *o, const void *field)
{
	(void)o;
	return *(const double *)field;
}

void ry__opt_set_int(const struct ry__opt *o, void *field, long long v)
{
	char *p = field;
	/* outside the field: 0 where 0 is refused, else the field's top */
	bool zero_bad = o->min > 0 && !(o->flags & RY__OPT_ZERO_OK);

	if (o->size == sizeof(uint64_t))
		*(uint64_t *)p = v >= 0	    ? (uint64_t)v
				 : zero_bad ? 0
					    : UINT64_MAX;
	else if (o->min < 0)
		*(int32_t *)p = v >= INT32_MIN && v <= INT32_MAX
				    ? (int32_t)v
				    : (int32_t)(o->min - 1);
	else
		*(uint32_t *)p = v >= 0 && v <= UINT32_MAX ? (uint32_t)v
				 : zero_bad		   ? 0
							   : UINT32_MAX;
}

static int parse_bool(const char *s, bool *out)
{
	static const char *const yes[] = {"yes", "true", "on", "1"};
	static const char *const no[] = {"no", "false", "off", "0"};

	for (size_t i = 0; i < 4; i++) {
		if (!strcasecmp(s, yes[i]))
			return *out = true, 0;
		if (!strcasecmp(s, no[i]))
			return *out = false, 0;
	}
	return -EINVAL;
}

int ry__opt_parse(const struct ry__opt *o, const char *text, void *field)
{
	char *p = field, *end;
	uint64_t u;
	long long v;
	double d;

	switch (o->type) {
	case RY__OPT_STR:
		if (strlen(text) >= o->size)
			return -ENAMETOOLONG;
		strcpy(p, text);
		return 0;
	case RY__OPT_SIZE:
	case RY__OPT_INT:
		/* a negative size is parsed too, to be refused as a number */
		if (o->type == RY__OPT_SIZE && text[0] != '-') {
			if (ry__parse_size(text, &u) || u > LLONG_MAX)
				return -EINVAL;
			ry__opt_set_int(o, p, (long long)u);
			return 0;
		}
		errno = 0;
		v = strtoll(text, &end, 0);
		if (errno || end == text || *end)
			return -EINVAL;
		ry__opt_set_int(o, p, v);
		return 0;
	case RY__OPT_BOOL:
		return parse_bool(text, (bool *)p);
	case RY__OPT_PROB:
		errno = 0;
		d = strtod(text, &end);
		if (errno || end == text || *end)
			return -EINVAL;
		*(double *)p = d;
		return 0;
	case RY__OPT_RATE:
		return ry__parse_rate(text, (uint64_t *)p);
	case RY__OPT_PROVIDER:
		if (!strcmp(text, "soft"))
			*(enum ry_provider *)p = RY_PROVIDER_SOFT;
		else if (!strcmp(text, "verbs"))
			*(enum ry_provider *)p = RY_PROVIDER_VERBS;
		else if (!strcmp(text, "tcp"))
			*(enum ry_provider *)p = RY_PROVIDER_TCP;
		else
			return -EINVAL;
		return 0;
	case RY__OPT_LIST: {
		struct ry_str_list *l = field;

		if (l->n >= RY_MAX_ACCEPT)
			return -E2BIG;
		if (strlen(text) >= sizeof(l->s[0]))
			return -ENAMETOOLONG;
		strcpy(l->s[l->n++], text);
		return 0;
	}
	case RY__OPT_CM:
		for (int i = RY_CM_AUTO; i <= RY_CM_RDMA_CM; i++)
			if (!strcmp(text,
				    ry_cm_mode_name((enum ry_cm_mode)i))) {
				*(enum ry_cm_mode *)p = (enum ry_cm_mode)i;
				return 0;
			}
		return -EINVAL;
	case RY__OPT_LEVEL:
		return ry__log_level_parse(text, (enum ry_log_level *)p);
	}
	return -EINVAL;
}

void ry__opt_defaults(const char *sec, void *base)
{
	RY__OPT_FOREACH(o, sec)
	{
		if (o->def)
			ry__opt_parse(o, o->def, ry__opt_field(o, base));
	}
}

void ry__opt_fill_zero(struct ry_config *cfg)
{
	for (const struct ry__opt *o = ry__opts; o < ry__opts + ry__n_opts; o++)
		if ((o->flags & RY__OPT_ZERO_DEFAULT) &&
		    (!strcmp(o->sec, "") || !strcmp(o->sec, "failover")) &&
		    !ry__opt_int(o, ry__opt_field(o, cfg)))
			ry__opt_parse(o, o->def, ry__opt_field(o, cfg));
}
