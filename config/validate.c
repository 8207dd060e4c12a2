// SPDX-License-Identifier: BSD-2-Clause
/*
 * The checks a config must pass before anything is opened.  Each message
 * names the option and says what is wrong; the hint says how to fix it.
 * Ranges come from the option table (options.c); what involves more than
 * one option, or a rule a range cannot say, is code here.
 */
#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "config/config_int.h"

/*
 * "ip", "ip:port", "[v6]:port" or "v6".  Numeric addresses only: the
 * control channel and soft rails must not depend on DNS during a failover.
 */
int ry__parse_hostport(const char *s, bool need_port, char *host,
		       size_t host_len, uint16_t *port)
{
	char h[64];
	const char *colon;
	unsigned char buf[16];
	long p = -1;
	size_t hl;

	if (s[0] == '[') {
		const char *end = strchr(s, ']');

		if (!end)
			return -EINVAL;
		hl = (size_t)(end - s - 1);
		if (hl >= sizeof(h))
			return -EINVAL;
		memcpy(h, s + 1, hl);
		h[hl] = 0;
		if (end[1] == ':')
			colon = end + 1;
		else if (!end[1])
			colon = NULL;
		else
			return -EINVAL;
		if (inet_pton(AF_INET6, h, buf) != 1)
			return -EINVAL;
	} else {
		colon = strrchr(s, ':');
		if (colon && strchr(s, ':') != colon) {
			/* bare IPv6, no port */
			if (inet_pton(AF_INET6, s, buf) != 1)
				return -EINVAL;
			colon = NULL;
			hl = strlen(s);
		} else {
			hl = colon ? (size_t)(colon - s) : strlen(s);
		}
		if (hl >= sizeof(h))
			return -EINVAL;
		memcpy(h, s, hl);
		h[hl] = 0;
		if (inet_pton(AF_INET, h, buf) != 1 &&
		    inet_pton(AF_INET6, h, buf) != 1)
			return -EINVAL;
	}
	if (colon) {
		char *end;

		if (!isdigit((unsigned char)colon[1]))
			return -EINVAL;
		p = strtol(colon + 1, &end, 10);
		if (*end || p < 0 || p > 65535)
			return -EINVAL;
	}
	if (need_port && p <= 0)
		return -EINVAL;
	if (host) {
		if (strlen(h) >= host_len)
			return -EINVAL;
		strcpy(host, h);
	}
	if (port)
		*port = p < 0 ? 0 : (uint16_t)p;
	return 0;
}

int ry__parse_prefix(const char *s, int *family, unsigned char addr[16],
		     unsigned *len)
{
	char h[INET6_ADDRSTRLEN + 1], *end;
	const char *slash;
	unsigned long l;
	size_t hl;

	if (!strcmp(s, "any")) {
		*family = 0;
		*len = 0;
		memset(addr, 0, 16);
		return 0;
	}
	slash = strchr(s, '/');
	if (!slash || !isdigit((unsigned char)slash[1]))
		return -EINVAL;
	hl = (size_t)(slash - s);
	if (hl >= sizeof(h))
		return -EINVAL;
	memcpy(h, s, hl);
	h[hl] = 0;
	memset(addr, 0, 16);
	if (inet_pton(AF_INET, h, addr) == 1)
		*family = AF_INET;
	else if (inet_pton(AF_INET6, h, addr) == 1)
		*family = AF_INET6;
	else
		return -EINVAL;
	errno = 0;
	l = strtoul(slash + 1, &end, 10);
	if (errno || *end || l > (*family == AF_INET ? 32u : 128u))
		return -EINVAL;
	*len = (unsigned)l;
	return 0;
}

struct vctx {
	struct ry__loader *ld;
	struct ry__loader fallback;
};

static int line_of(struct vctx *v, const char *path, int index,
		   const char *name, int own_line)
{
	int l = v->ld->sites ? ry__cfg_line(v->ld, path, index, name) : 0;

	return l ? l : own_line;
}

#define REPORT(v, line, hint, ...)                                             \
	ry__cfg_report((v)->ld, line, hint, __VA_ARGS__)

static bool valid_name(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && !strchr("._-", *s))
			return false;
	return true;
}

/*
 * The table's range checks for one section.  Rail options are named after
 * their rail ("rail 'r0': fault drop must be ..."), the others by their
 * path ("failover.retry_count must be ...").
 */
static void check_opts(struct vctx *v, const char *sec, const void *base,
		       const struct ry_rail_config *rail, int index,
		       int own_line)
{
	RY__OPT_FOREACH(o, sec)
	{
		const void *p = ry__opt_field(o, base);
		char what[96];
		bool ok;

		if (o->flags & RY__OPT_OWN_CHECK)
			continue;
		if ((o->flags & RY__OPT_VERBS_CHECK) &&
		    (!rail || rail->provider != RY_PROVIDER_VERBS))
			continue;
		if (o->type == RY__OPT_PROB) {
			double d = ry__opt_prob(o, p);

			ok = d >= (double)o->min && d <= (double)o->max;
		} else if (o->type == RY__OPT_INT || o->type == RY__OPT_SIZE) {
			long long n = ry__opt_int(o, p);

			ok = (n >= o->min && n <= o->max) ||
			     (!n && (o->flags & RY__OPT_ZERO_OK));
		} else {
			continue;
		}
		if (ok)
			continue;
		if (rail)
			snprintf(
			    what, sizeof(what), "rail '%s': %s%s", rail->name,
			    strcmp(sec, "rail.fault") ? "" : "fault ", o->name);
		else
			snprintf(what, sizeof(what), "%s%s%s", sec,
				 *sec ? "." : "", o->name);
		REPORT(v, line_of(v, sec, index, o->name, own_line), o->hint,
		       "%s must be %sfrom %lld to %lld", what,
		       o->flags & RY__OPT_ZERO_OK ? "0 or " : "", o->min,
		       o->max);
	}
}

static void check_rail(struct vctx *v, const struct ry_rail_config *r, int i)
{
	int line = r->line;
	char host[RY_ADDR_MAX];
	struct in_addr in4;

#define RL(name) line_of(v, "rail", i, name, line)
	if (!valid_name(r->name))
		REPORT(v, line, "use letters, digits, '.', '_' and '-'",
		       "rail name '%s' is not valid", r->name);
	if (!valid_name(r->network))
		REPORT(v, RL("network"),
		       "use letters, digits, '.', '_' and '-'",
		       "rail '%s': network name '%s' is not valid", r->name,
		       r->network);
	if (r->provider == RY_PROVIDER_SOFT || r->provider == RY_PROVIDER_TCP) {
		if (!r->address[0] && !r->interface[0])
			REPORT(v, line,
			       "add address = \"198.18.0.1\" or interface = "
			       "\"eth1\"",
			       "%s rail '%s' has neither address nor interface",
			       ry_provider_name(r->provider), r->name);
		if (r->address[0] && ry__parse_hostport(r->address, false, host,
							sizeof(host), NULL))
			REPORT(v, RL("address"),
			       "write a numeric IPv4 address, optionally with "
			       ":port",
			       "rail '%s': address '%s' does not parse",
			       r->name, r->address);
		else if (r->address[0] && inet_pton(AF_INET, host, &in4) != 1)
			/* their sockets are AF_INET (rails/rail_addr.c) */
			REPORT(v, RL("address"),
			       "write a numeric IPv4 address, optionally with "
			       ":port",
			       "%s rail '%s': address '%s' is not IPv4: soft "
			       "and tcp rails run over IPv4",
			       ry_provider_name(r->provider), r->name,
			       r->address);
		if (r->device[0])
			REPORT(v, RL("device"),
			       "device is for verbs rails; remove it or set "
			       "provider = verbs",
			       "%s rail '%s' does not use a device",
			       ry_provider_name(r->provider), r->name);
		if (r->cm != RY_CM_AUTO)
			REPORT(v, RL("cm"),
			       "cm is how a verbs rail connects; remove it or "
			       "set provider = verbs",
			       "%s rail '%s' does not use cm",
			       ry_provider_name(r->provider), r->name);
		if (r->traffic_class || r->sl)
			REPORT(v, RL(r->sl ? "sl" : "traffic_class"),
			       "traffic_class and sl are set on verbs rails' "
			       "QPs; remove them or set provider = verbs",
			       "%s rail '%s' cannot set %s",
			       ry_provider_name(r->provider), r->name,
			       r->sl ? "sl" : "traffic_class");
	} else if (r->provider == RY_PROVIDER_VERBS) {
		if (!r->device[0])
			REPORT(v, line,
			       "add device = \"mlx5_0\" (see railyard devices)",
			       "verbs rail '%s' has no device", r->name);
		if (r->address[0] &&
		    ry__parse_hostport(r->address, false, NULL, 0, NULL))
			REPORT(v, RL("address"),
			       "write the RoCE address as a numeric IP",
			       "rail '%s': address '%s' does not parse",
			       r->name, r->address);
	}
	check_opts(v, "rail", r, r, i, line);
	check_opts(v, "rail.fault", r, r, i, line);
	if ((r->provider == RY_PROVIDER_VERBS ||
	     r->provider == RY_PROVIDER_TCP) &&
	    (r->fault.down || r->fault.drop > 0 || r->fault.duplicate > 0 ||
	     r->fault.reorder > 0 || r->fault.corrupt > 0 || r->fault.delay_us))
		REPORT(v, line_of(v, "rail.fault", i, "", line),
		       "fault injection is done by the soft rail; pull the "
		       "cable instead",
		       "%s rail '%s' cannot inject faults",
		       ry_provider_name(r->provider), r->name);
#undef RL
}

int ry__cfg_validate(const struct ry_config *cfg, struct ry__loader *ld)
{
	const struct ry_failover_config *f = &cfg->failover;
	struct vctx v = {.ld = ld};
	int before;

	if (!ld)
		v.ld = &v.fallback; /* counts only */
	before = v.ld->errors;

	if (!valid_name(cfg->node))
		REPORT(&v, line_of(&v, "", 0, "node", 0),
		       "use letters, digits, '.', '_' and '-'",
		       "node name '%s' is not valid", cfg->node);
	if (ry__parse_hostport(cfg->control, false, NULL, 0, NULL))
		REPORT(&v, line_of(&v, "", 0, "control", 0),
		       "write ip:port, e.g. \"198.18.0.1:7470\" or "
		       "\"[2001:db8::1]:7470\"",
		       "control address '%s' does not parse", cfg->control);
	if (cfg->fragment_size < 512 || cfg->fragment_size > (1u << 20) ||
	    (cfg->fragment_size & (cfg->fragment_size - 1)))
		REPORT(&v, line_of(&v, "", 0, "fragment_size", 0),
		       "use a power of two from 512 to 1M; 4096 (a page) is "
		       "the default",
		       "fragment_size %u is not a power of two from 512 B to 1 "
		       "MiB",
		       cfg->fragment_size);
	if (cfg->max_op_size < cfg->fragment_size ||
	    cfg->max_op_size > (1ull << 32))
		REPORT(&v, line_of(&v, "", 0, "max_op_size", 0),
		       "at least one fragment, at most 4G",
		       "max_op_size must be from fragment_size to 4 GiB");
	if (cfg->error_drain_ppm && cfg->error_degrade_ppm &&
	    cfg->error_drain_ppm < cfg->error_degrade_ppm)
		REPORT(&v, line_of(&v, "", 0, "error_drain_ppm", 0),
		       "a rail is drained at a higher error rate than the one "
		       "that lowers its share; 0 turns either off",
		       "error_drain_ppm %u is below error_degrade_ppm %u",
		       cfg->error_drain_ppm, cfg->error_degrade_ppm);
	for (unsigned i = 0; i < cfg->accept.n && i < RY_MAX_ACCEPT; i++) {
		unsigned char a[16];
		unsigned len;
		int fam;

		if (ry__parse_prefix(cfg->accept.s[i], &fam, a, &len))
			REPORT(&v, line_of(&v, "", 0, "accept", 0),
			       "write a numeric prefix \"ip/len\" "
			       "(\"198.18.0.0/15\", \"2001:db8::/32\") or "
			       "\"any\" (admits every node: labs only)",
			       "accept: '%s' is not an address prefix",
			       cfg->accept.s[i]);
	}
	if (cfg->key_file[0]) {
		unsigned char key[RY__KEY_BYTES];
		char why[400], hint[400];

		if (ry__key_file_read(cfg->key_file, key, why, sizeof(why),
				      hint, sizeof(hint)))
			REPORT(&v, line_of(&v, "", 0, "key_file", 0), hint,
			       "%s", why);
		sodium_memzero(key, sizeof(key));
	}
	if (cfg->data_mac && !cfg->key_file[0])
		REPORT(&v, line_of(&v, "", 0, "data_mac", 0),
		       "set key_file: the data-path keys come from the "
		       "authenticated control handshake",
		       "data_mac needs key_file");
	for (unsigned i = 0;
	     cfg->data_mac && i < cfg->n_rails && i < RY_MAX_RAILS; i++)
		if (cfg->rails[i].provider == RY_PROVIDER_VERBS ||
		    cfg->rails[i].provider == RY_PROVIDER_TCP)
			REPORT(&v,
			       line_of(&v, "rail", (int)i, "provider",
				       cfg->rails[i].line),
			       "only the soft rail builds its own packets, so "
			       "only it can carry a MAC of ours; use data_mac "
			       "with soft rails only",
			       "data_mac: %s rail '%s' cannot carry a MAC",
			       ry_provider_name(cfg->rails[i].provider),
			       cfg->rails[i].name);
	if (cfg->lanes >= 2 && cfg->lanes <= 8 &&
	    cfg->n_rails <= RY_MAX_RAILS) {
		/* what a manager will expand, tried now so that the file is
		 * refused with its line rather than the node at start */
		struct ry_config *x = malloc(sizeof(*x));
		char why[200];

		if (x) {
			*x = *cfg;
			if (ry__config_lanes(x, why, sizeof(why)))
				REPORT(
				    &v, line_of(&v, "", 0, "lanes", 0),
				    "fewer lanes or fewer soft and tcp rails; "
				    "a lane is named and numbered after its "
				    "rail",
				    "%s", why);
			free(x);
		}
	}
	check_opts(&v, "", cfg, NULL, 0, 0);
	check_opts(&v, "failover", cfg, NULL, 0, 0);
	if (f->heartbeat_ms && f->timeout_ms &&
	    f->heartbeat_ms >= f->timeout_ms)
		REPORT(&v, line_of(&v, "failover", 0, "heartbeat_ms", 0),
		       "heartbeats must come several times per timeout, e.g. "
		       "heartbeat_ms = timeout_ms / 10",
		       "heartbeat_ms (%u) must be less than timeout_ms (%u)",
		       f->heartbeat_ms, f->timeout_ms);
	if (f->reconnect_min_ms > f->reconnect_max_ms)
		REPORT(&v, line_of(&v, "failover", 0, "reconnect_min_ms", 0),
		       "the backoff grows from min to max",
		       "reconnect_min_ms (%u) is greater than reconnect_max_ms "
		       "(%u)",
		       f->reconnect_min_ms, f->reconnect_max_ms);
	if (f->op_timeout_ms && f->timeout_ms &&
	    f->op_timeout_ms <= f->timeout_ms)
		REPORT(
		    &v, line_of(&v, "failover", 0, "op_timeout_ms", 0),
		    "an operation must outlive the detection of a dead rail to "
		    "be replayed",
		    "op_timeout_ms (%u) must be greater than timeout_ms (%u)",
		    f->op_timeout_ms, f->timeout_ms);
	if (f->ack_timeout_ms >= f->op_timeout_ms && f->op_timeout_ms)
		REPORT(
		    &v, line_of(&v, "failover", 0, "ack_timeout_ms", 0),
		    "retransmits must happen well within an operation's "
		    "lifetime",
		    "ack_timeout_ms (%u) must be less than op_timeout_ms (%u)",
		    f->ack_timeout_ms, f->op_timeout_ms);

	if (cfg->n_rails == 0)
		REPORT(&v, 0,
		       "add a rail NAME { provider = soft; address = ... } "
		       "section",
		       "no rail is defined");
	/* the loader stops at RY_MAX_RAILS; a program may not */
	if (cfg->n_rails > RY_MAX_RAILS)
		REPORT(&v, 0, "remove rails, or split the node",
		       "too many rails: %u (at most %d)", cfg->n_rails,
		       RY_MAX_RAILS);
	for (unsigned i = 0; i < cfg->n_rails && i < RY_MAX_RAILS; i++) {
		check_rail(&v, &cfg->rails[i], (int)i);
		if (!v.ld->sites) /* hand-built: names may repeat */
			for (unsigned j = 0; j < i; j++)
				if (!strcmp(cfg->rails[i].name,
					    cfg->rails[j].name))
					REPORT(&v, 0,
					       "give each rail its own name",
					       "rail '%s' is defined twice",
					       cfg->rails[i].name);
	}
	for (unsigned i = 0; i < cfg->n_peers; i++) {
		const struct ry_peer_config *p = &cfg->peers[i];

		if (!valid_name(p->name))
			REPORT(&v, p->line,
			       "use letters, digits, '.', '_' and '-'",
			       "peer name '%s' is not valid", p->name);
		if (!p->address[0])
			REPORT(&v, p->line,
			       "add address = \"198.18.0.2:7470\", the peer's "
			       "control address",
			       "peer '%s' has no address", p->name);
		else if (ry__parse_hostport(p->address, true, NULL, 0, NULL))
			REPORT(&v,
			       line_of(&v, "peer", (int)i, "address", p->line),
			       "write the peer's control address as ip:port",
			       "peer '%s': address '%s' does not parse",
			       p->name, p->address);
	}
	return v.ld->errors - before;
}

int ry_config_validate(const struct ry_config *cfg, ry_config_report_fn report,
		       void *arg)
{
	struct ry__loader ld = {
	    .file = "<config>", .report = report, .arg = arg};
	const char *why = NULL;
	struct ry_config c;
	int n;

	if (ry__config_adopt(cfg, &c, &why)) {
		ry__cfg_report(&ld, 0,
			       "call ry_config_init_defaults() on it "
			       "first, with this library's header",
			       "%s", why ? why : "no config");
		n = 1;
	} else {
		ld.file = c.source;
		n = ry__cfg_validate(&c, &ld);
	}
	ry__cfg_flush(&ld);
	return n;
}
