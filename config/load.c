// SPDX-License-Identifier: BSD-2-Clause
/*
 * Loading a config file: read it, scan it (scan.c), let libconfuse parse it
 * against the schema (schema.c), convert to struct ry_config as the option
 * table (options.c) says and validate (validate.c).  Every problem is
 * reported as FILE:LINE with a hint; on any problem nothing is returned,
 * so a bad file never gets as far as opening a device or a socket.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <railyard/testing.h>

#include "config/config_int.h"

#define MAX_FILE_SIZE (1 << 20)

void ry__cfg_report(struct ry__loader *ld, int line, const char *hint,
		    const char *fmt, ...)
{
	struct ry__problem *p;
	va_list ap;

	ld->errors++;
	if (!ld->report)
		return;
	if (ld->n_probs == ld->cap_probs) {
		unsigned cap = ld->cap_probs ? ld->cap_probs * 2 : 8;
		void *v = realloc(ld->probs, cap * sizeof(*ld->probs));

		if (!v)
			return; /* counted, not described: still fails */
		ld->probs = v;
		ld->cap_probs = cap;
	}
	p = &ld->probs[ld->n_probs++];
	p->line = line;
	va_start(ap, fmt);
	vsnprintf(p->message, sizeof(p->message), fmt, ap);
	va_end(ap);
	snprintf(p->hint, sizeof(p->hint), "%s", hint ? hint : "");
}

void ry__cfg_flush(struct ry__loader *ld)
{
	/* insertion sort, stable: problems on one line keep their order */
	for (unsigned i = 1; i < ld->n_probs; i++) {
		struct ry__problem t = ld->probs[i];
		unsigned j = i;

		for (; j > 0 && ld->probs[j - 1].line > t.line; j--)
			ld->probs[j] = ld->probs[j - 1];
		ld->probs[j] = t;
	}
	for (unsigned i = 0; i < ld->n_probs; i++) {
		struct ry_config_error e = {
		    .file = ld->file,
		    .line = ld->probs[i].line,
		    .message = ld->probs[i].message,
		    .hint = ld->probs[i].hint,
		};

		ld->report(&e, ld->arg);
	}
	free(ld->probs);
	ld->probs = NULL;
	ld->n_probs = ld->cap_probs = 0;
}

/*
 * libconfuse's own messages (syntax, missing titles...).  Our callbacks
 * report their own problems directly; what arrives here is translated into
 * our wording with a hint, and its line corrected where it names an option.
 */
static void confuse_error(cfg_t *cfg, const char *fmt, va_list ap)
{
	struct ry__loader *ld = ry__cur_loader;
	char msg[256], name[64];
	const char *hint = NULL;
	int line = cfg ? cfg->line : 0;

	if (!ld)
		return;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	if (sscanf(msg, "found duplicate title '%63[^']'", name) == 1) {
		hint = "give each section its own name";
	} else if (sscanf(msg, "missing title for section '%63[^']'", name) ==
		   1) {
		hint =
		    "sections like rail and peer need a name: rail r0 { ... }";
	} else if (strstr(msg, "unexpected token") ||
		   strstr(msg, "unexpected end")) {
		hint = "expected 'option = value' or 'section name { ... }'";
	} else if (strstr(msg, "premature end of file")) {
		hint = "a string or section is not closed";
	} else if (sscanf(msg, "invalid %*s value for option '%63[^']'",
			  name) == 1 ||
		   sscanf(msg, "invalid %*s %*s value for option '%63[^']'",
			  name) == 1) {
		line = ry__cfg_line_before(ld, name, line);
		hint = "check the value's type in etc/railyard.conf";
	} else if (sscanf(msg, "no such option '%63[^']'", name) == 1) {
		line = ry__cfg_line_before(ld, name, line);
		hint = "see etc/railyard.conf for the known options";
	}
	ry__cfg_report(ld, line, hint, "%s", msg);
}

static void copy_str(char *dst, size_t len, const char *src)
{
	snprintf(dst, len, "%s", src ? src : "");
}

/* A list's entries; what they mean is checked by validate.c. */
static void convert_list(cfg_t *s, const struct ry__opt *o, void *field)
{
	struct ry__loader *ld = ry__cur_loader;
	unsigned n = cfg_size(s, o->name);
	int line = ld ? ry__cfg_line(ld, o->sec, 0, o->name) : 0;

	for (unsigned i = 0; i < n; i++) {
		const char *v = cfg_getnstr(s, o->name, i);
		int ret = ry__opt_parse(o, v ? v : "", field);

		if (ret == -E2BIG && ld) {
			ry__cfg_report(
			    ld, line, "merge entries into wider prefixes",
			    "%s: more than %d entries", o->name, RY_MAX_ACCEPT);
			return;
		}
		if (ret && ld)
			ry__cfg_report(
			    ld, line,
			    "write \"ip/len\", e.g. \"198.18.0.0/15\"",
			    "%s: entry '%.80s' is too long", o->name,
			    v ? v : "");
	}
}

/* The options of one section, as the table says; provider and log level
 * are converted by convert() for their messages. */
static void convert_sec(cfg_t *s, const char *sec, void *base)
{
	RY__OPT_FOREACH(o, sec)
	{
		void *p = ry__opt_field(o, base);
		const char *str;
		uint64_t rate = 0;

		switch (o->type) {
		case RY__OPT_STR:
			str = cfg_getstr(s, o->name);
			if (str)
				copy_str(p, o->size, str);
			break;
		case RY__OPT_INT:
		case RY__OPT_SIZE:
			ry__opt_set_int(o, p, cfg_getint(s, o->name));
			break;
		case RY__OPT_BOOL:
			*(bool *)p = cfg_getbool(s, o->name);
			break;
		case RY__OPT_PROB:
			*(double *)p = cfg_getfloat(s, o->name);
			break;
		case RY__OPT_RATE:
			/* checked by rate_cb already */
			ry__parse_rate(cfg_getstr(s, o->name), &rate);
			*(uint64_t *)p = rate;
			break;
		case RY__OPT_LIST:
			convert_list(s, o, p);
			break;
		case RY__OPT_CM: /* checked by cm_cb already */
			ry__opt_parse(o, cfg_getstr(s, o->name), p);
			break;
		case RY__OPT_PROVIDER:
		case RY__OPT_LEVEL:
			break;
		}
	}
}

static const struct ry__opt *opt_row(const char *sec, const char *name)
{
	RY__OPT_FOREACH(o, sec)
	{
		if (!strcmp(o->name, name))
			return o;
	}
	return NULL;
}

static int convert(cfg_t *c, struct ry_config *cfg, struct ry__loader *ld)
{
	const struct ry__opt *prov_row = opt_row("rail", "provider");
	const struct ry__opt *level_row = opt_row("log", "level");
	cfg_t *s;

	convert_sec(c, "", cfg);
	cfg->max_sessions_set =
	    cfg_getopt(c, "max_sessions")->flags & CFGF_MODIFIED;
	convert_sec(cfg_getsec(c, "failover"), "failover", cfg);
	s = cfg_getsec(c, "log");
	convert_sec(s, "log", cfg);
	if (ry__opt_parse(level_row, cfg_getstr(s, "level"), &cfg->log.level))
		ry__cfg_report(ld, ry__cfg_line(ld, "log", 0, "level"),
			       "one of error, warn, info, debug, trace",
			       "log level '%s' is unknown",
			       cfg_getstr(s, "level"));

	cfg->n_rails = cfg_size(c, "rail");
	if (cfg->n_rails > RY_MAX_RAILS) {
		ry__cfg_report(ld, ry__cfg_line(ld, "rail", RY_MAX_RAILS, ""),
			       "remove rails, or split the node",
			       "too many rails: %u (at most %d)", cfg->n_rails,
			       RY_MAX_RAILS);
		cfg->n_rails = RY_MAX_RAILS;
	}
	for (unsigned i = 0; i < cfg->n_rails; i++) {
		struct ry_rail_config *r = &cfg->rails[i];
		cfg_t *rs = cfg_getnsec(c, "rail", i);
		const char *prov = cfg_getstr(rs, "provider");

		copy_str(r->name, sizeof(r->name), cfg_title(rs));
		r->line = ry__cfg_line(ld, "rail", (int)i, "");
		/* no provider-specific checks on a rail whose provider is
		 * missing or wrong: one problem, one message */
		r->provider = (enum ry_provider) - 1;
		if (!prov) {
			ry__cfg_report(
			    ld, r->line,
			    "add provider = soft or provider = verbs",
			    "rail '%s' has no provider", r->name);
		} else if (ry__opt_parse(prov_row, prov, &r->provider)) {
			r->provider = (enum ry_provider) - 1;
			ry__cfg_report(
			    ld, ry__cfg_line(ld, "rail", (int)i, "provider"),
			    "provider is soft (UDP) or verbs (an HCA port)",
			    "rail '%s': unknown provider '%s'", r->name, prov);
		}
		convert_sec(rs, "rail", r);
		convert_sec(cfg_getsec(rs, "fault"), "rail.fault", r);
	}

	cfg->n_peers = cfg_size(c, "peer");
	if (cfg->n_peers > RY_MAX_PEERS) {
		ry__cfg_report(ld, 0, NULL, "too many peers: %u (at most %d)",
			       cfg->n_peers, RY_MAX_PEERS);
		cfg->n_peers = RY_MAX_PEERS;
	}
	if (cfg->n_peers) {
		cfg->peers = calloc(cfg->n_peers, sizeof(*cfg->peers));
		if (!cfg->peers)
			return -ENOMEM;
	}
	for (unsigned i = 0; i < cfg->n_peers; i++) {
		struct ry_peer_config *p = &cfg->peers[i];
		cfg_t *ps = cfg_getnsec(c, "peer", i);

		copy_str(p->name, sizeof(p->name), cfg_title(ps));
		convert_sec(ps, "peer", p);
		p->line = ry__cfg_line(ld, "peer", (int)i, "");
	}
	return 0;
}

static void loader_free(struct ry__loader *ld)
{
	ry__cfg_flush(ld);
	free(ld->sites);
	free(ld->secs);
}

static int parse_text(const char *text, const char *name,
		      struct ry_config **cfg_p, ry_config_report_fn report,
		      void *arg, bool validate)
{
	struct ry__loader ld = {.file = name, .report = report, .arg = arg};
	struct ry_config *cfg = NULL;
	cfg_t *c = NULL;
	int ret = -EINVAL;
	const char *p = text;

	while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
		p++;
	if (!*p) {
		ry__cfg_report(
		    &ld, 0,
		    "start from etc/railyard.conf, the commented reference",
		    "the file is empty: no rails to use");
		goto out;
	}
	if (ry__cfg_scan(&ld, text, ry__cfg_schema()) < 0) {
		ret = -ENOMEM;
		goto out;
	}
	if (ld.errors)
		goto out;

	c = cfg_init(ry__cfg_schema(), CFGF_NONE);
	if (!c) {
		ret = -ENOMEM;
		goto out;
	}
	cfg_set_error_function(c, confuse_error);
	ry__cur_loader = &ld;
	if (cfg_parse_buf(c, text) != CFG_SUCCESS) {
		if (!ld.errors) /* a callback failed without a word */
			ry__cfg_report(&ld, 0, NULL, "the file does not parse");
		goto out;
	}
	cfg = calloc(1, sizeof(*cfg));
	if (!cfg) {
		ret = -ENOMEM;
		goto out;
	}
	ry_config_init_defaults(cfg);
	copy_str(cfg->source, sizeof(cfg->source), name);
	ret = convert(c, cfg, &ld);
	if (ret)
		goto out;
	ret = -EINVAL;
	if (validate)
		ry__cfg_validate(cfg, &ld);
	if (ld.errors)
		goto out;
	*cfg_p = cfg;
	cfg = NULL;
	ret = 0;
out:
	ry__cur_loader = NULL;
	if (c)
		cfg_free(c);
	ry_config_free(cfg);
	loader_free(&ld);
	return ret;
}

int ry_config_parse(const char *text, const char *name,
		    struct ry_config **cfg_p, ry_config_report_fn report,
		    void *arg)
{
	return parse_text(text, name ? name : "<buffer>", cfg_p, report, arg,
			  true);
}

static int load_file(const char *path, struct ry_config **cfg_p,
		     ry_config_report_fn report, void *arg, bool validate)
{
	struct ry__loader ld = {.file = path, .report = report, .arg = arg};
	struct stat st;
	char *text = NULL;
	ssize_t n;
	size_t got = 0;
	int fd, ret;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		ry__cfg_report(&ld, 0,
			       ret == -ENOENT	? "check the path given with -c"
			       : ret == -EACCES ? "check the file's permissions"
						: NULL,
			       "cannot read the file: %s", strerror(-ret));
		ry__cfg_flush(&ld);
		return ret;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		ret = S_ISDIR(st.st_mode) ? -EISDIR : -EINVAL;
		ry__cfg_report(&ld, 0, "give the path of a config file",
			       "cannot read the file: not a regular file");
		goto out;
	}
	if (st.st_size > MAX_FILE_SIZE) {
		ret = -EFBIG;
		ry__cfg_report(&ld, 0, NULL, "the file is larger than %d bytes",
			       MAX_FILE_SIZE);
		goto out;
	}
	text = malloc((size_t)st.st_size + 1);
	if (!text) {
		ret = -ENOMEM;
		goto out;
	}
	while (got < (size_t)st.st_size &&
	       (n = read(fd, text + got, (size_t)st.st_size - got)) > 0)
		got += (size_t)n;
	text[got] = 0;
	if (memchr(text, 0, got)) {
		ret = -EINVAL;
		ry__cfg_report(&ld, 0, "a config file is text",
			       "the file contains a NUL byte");
		goto out;
	}
	ret = parse_text(text, path, cfg_p, report, arg, validate);
out:
	ry__cfg_flush(&ld);
	free(text);
	close(fd);
	return ret;
}

int ry_config_load(const char *path, struct ry_config **cfg_p,
		   ry_config_report_fn report, void *arg)
{
	return load_file(path, cfg_p, report, arg, true);
}

int ry__config_load_lax(const char *path, struct ry_config **cfg_p,
			ry_config_report_fn report, void *arg)
{
	return load_file(path, cfg_p, report, arg, false);
}

void ry_config_free(struct ry_config *cfg)
{
	if (!cfg)
		return;
	free(cfg->peers);
	free(cfg);
}

const char *ry_cm_mode_name(enum ry_cm_mode m)
{
	switch (m) {
	case RY_CM_AUTO:
		return "auto";
	case RY_CM_MANUAL:
		return "manual";
	case RY_CM_RDMA_CM:
		return "rdma_cm";
	}
	return "?";
}

const char *ry_provider_name(enum ry_provider p)
{
	/* a default branch on purpose: test-only providers exist too */
	switch ((int)p) {
	case RY_PROVIDER_SOFT:
		return "soft";
	case RY_PROVIDER_VERBS:
		return "verbs";
	case RY_PROVIDER_TCP:
		return "tcp";
	default:
		return "?";
	}
}

int ry_config_demo(struct ry_config **cfg_p)
{
	struct ry_config *cfg = calloc(1, sizeof(*cfg));

	if (!cfg)
		return -ENOMEM;
	ry_config_init_defaults(cfg);
	snprintf(cfg->source, sizeof(cfg->source), "<demo>");
	snprintf(cfg->node, sizeof(cfg->node), "demo");
	snprintf(cfg->control, sizeof(cfg->control), "127.0.0.1:0");
	/* two demo nodes talk over loopback with kernel-chosen ports */
	cfg->accept.n = 1;
	snprintf(cfg->accept.s[0], sizeof(cfg->accept.s[0]), "127.0.0.0/8");
	cfg->n_rails = 4;
	for (unsigned i = 0; i < cfg->n_rails; i++) {
		struct ry_rail_config *r = &cfg->rails[i];

		ry__opt_defaults("rail", r);
		ry__opt_defaults("rail.fault", r);
		snprintf(r->name, sizeof(r->name), "r%u", i);
		r->provider = RY_PROVIDER_SOFT;
		snprintf(r->network, sizeof(r->network), "loop%u", i);
		snprintf(r->address, sizeof(r->address), "127.0.0.1:0");
	}
	*cfg_p = cfg;
	return 0;
}
