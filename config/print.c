// SPDX-License-Identifier: BSD-2-Clause
/* The effective configuration, in config-file syntax: what check-config
 * prints, so an operator sees every default that applies.  The options of
 * each section come from the option table (options.c), in its order. */
#include <inttypes.h>
#include <stdio.h>

#include "config/config_int.h"

static void print_rate(FILE *out, uint64_t bps)
{
	if (!bps)
		fprintf(out, "\"0\"");
	else if (bps % 1000000000ull == 0)
		fprintf(out, "\"%" PRIu64 "G\"", (uint64_t)(bps / 1000000000u));
	else if (bps % 1000000ull == 0)
		fprintf(out, "\"%" PRIu64 "M\"", (uint64_t)(bps / 1000000u));
	else
		fprintf(out, "\"%" PRIu64 "\"", bps);
}

static void print_opt(FILE *out, const struct ry__opt *o, const void *base,
		      const char *indent)
{
	const void *p = ry__opt_field(o, base);

	fprintf(out, "%s%s = ", indent, o->name);
	switch (o->type) {
	case RY__OPT_STR:
		fprintf(out, "\"%s\"", (const char *)p);
		break;
	case RY__OPT_INT:
	case RY__OPT_SIZE:
		fprintf(out, "%lld", ry__opt_int(o, p));
		break;
	case RY__OPT_BOOL:
		fprintf(out, "%s", *(const bool *)p ? "yes" : "no");
		break;
	case RY__OPT_PROB:
		fprintf(out, "%g", ry__opt_prob(o, p));
		break;
	case RY__OPT_RATE:
		print_rate(out, *(const uint64_t *)p);
		break;
	case RY__OPT_PROVIDER:
		fprintf(out, "%s",
			ry_provider_name(*(const enum ry_provider *)p));
		break;
	case RY__OPT_CM:
		fprintf(out, "%s",
			ry_cm_mode_name(*(const enum ry_cm_mode *)p));
		break;
	case RY__OPT_LEVEL:
		fprintf(out, "%s",
			ry_log_level_name(*(const enum ry_log_level *)p));
		break;
	case RY__OPT_LIST: {
		const struct ry_str_list *l = p;

		fprintf(out, "{");
		for (unsigned i = 0; i < l->n; i++)
			fprintf(out, "%s\"%s\"", i ? ", " : "", l->s[i]);
		fprintf(out, "}");
		break;
	}
	}
	fprintf(out, "\n");
}

static void print_sec(FILE *out, const char *sec, const void *base,
		      const char *indent, bool verbs)
{
	RY__OPT_FOREACH(o, sec)
	{
		if ((o->flags & RY__OPT_VERBS) && !verbs)
			continue;
		if ((o->flags & RY__OPT_OMIT_EMPTY) &&
		    (o->type == RY__OPT_LIST
			 ? !((const struct ry_str_list *)ry__opt_field(o, base))
				->n
			 : !*(const char *)ry__opt_field(o, base)))
			continue;
		print_opt(out, o, base, indent);
	}
}

/* A section left all zero (no fault injected) is not printed. */
static bool sec_is_zero(const char *sec, const void *base)
{
	RY__OPT_FOREACH(o, sec)
	{
		const unsigned char *p = ry__opt_field(o, base);

		for (size_t i = 0; i < o->size; i++)
			if (p[i])
				return false;
	}
	return true;
}

void ry_config_print(const struct ry_config *in, FILE *out)
{
	const char *why = "no config";
	struct ry_config c;
	const struct ry_config *cfg = &c;

	if (ry__config_adopt(in, &c, &why)) {
		fprintf(out, "# %s\n", why);
		return;
	}
	fprintf(out, "# effective configuration of %s\n", cfg->source);
	print_sec(out, "", cfg, "", false);
	for (unsigned i = 0; i < cfg->n_rails; i++) {
		const struct ry_rail_config *r = &cfg->rails[i];

		fprintf(out, "\nrail %s {\n", r->name);
		print_sec(out, "rail", r, "\t",
			  r->provider == RY_PROVIDER_VERBS);
		if (!sec_is_zero("rail.fault", r)) {
			fprintf(out, "\tfault {\n");
			print_sec(out, "rail.fault", r, "\t\t", false);
			fprintf(out, "\t}\n");
		}
		fprintf(out, "}\n");
	}
	fprintf(out, "\nfailover {\n");
	print_sec(out, "failover", cfg, "\t", false);
	fprintf(out, "}\n");
	for (unsigned i = 0; i < cfg->n_peers; i++) {
		fprintf(out, "\npeer %s {\n", cfg->peers[i].name);
		print_sec(out, "peer", &cfg->peers[i], "\t", false);
		fprintf(out, "}\n");
	}
	fprintf(out, "\nlog {\n");
	print_sec(out, "log", cfg, "\t", false);
	fprintf(out, "}\n");
}
