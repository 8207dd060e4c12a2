// SPDX-License-Identifier: BSD-2-Clause
/*
 * The option table (config/options.c) against what documents it:
 * etc/railyard.conf and railyard.conf(5) name every option with its
 * default and nothing else; and against the loader: every default
 * survives load, print, load, and every range bound is enforced with the
 * file and line of the value.
 */
#include <check.h>
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config_int.h"

#define MAX_DOC 128

struct doc_opt {
	char sec[32];
	char name[40];
	char value[128]; /* as written, quotes and comment removed */
	bool has_value;
};

struct doc {
	struct doc_opt o[MAX_DOC];
	unsigned n;
};

static char *trim(char *s)
{
	char *e;

	while (isspace((unsigned char)*s))
		s++;
	e = s + strlen(s);
	while (e > s && isspace((unsigned char)e[-1]))
		*--e = 0;
	return s;
}

static void doc_add(struct doc *d, const char *sec, const char *name,
		    const char *value)
{
	struct doc_opt *o;

	ck_assert_uint_lt(d->n, MAX_DOC);
	o = &d->o[d->n++];
	snprintf(o->sec, sizeof(o->sec), "%s", sec);
	snprintf(o->name, sizeof(o->name), "%s", name);
	if (value) {
		snprintf(o->value, sizeof(o->value), "%s", value);
		o->has_value = true;
	}
}

static const struct ry__opt *row(const char *sec, const char *name)
{
	for (unsigned i = 0; i < ry__n_opts; i++)
		if (!strcmp(ry__opts[i].sec, sec) &&
		    !strcmp(ry__opts[i].name, name))
			return &ry__opts[i];
	return NULL;
}

static const struct doc_opt *doc_find(const struct doc *d, const char *sec,
				      const char *name)
{
	for (unsigned i = 0; i < d->n; i++)
		if (!strcmp(d->o[i].sec, sec) && !strcmp(d->o[i].name, name))
			return &d->o[i];
	return NULL;
}

/* "word" or "word =" at the start of s; returns its length. */
static size_t ident(const char *s)
{
	size_t n = 0;

	while (isalnum((unsigned char)s[n]) || s[n] == '_')
		n++;
	return n;
}

/*
 * Options of etc/railyard.conf by section, set ("name = value") or shown
 * as a commented example ("# name = value").  Prose comments have no
 * "word =" at their start.
 */
static void read_conf(struct doc *d)
{
	char line[512], path[32] = "";
	FILE *f = fopen(RY_ETC "/railyard.conf", "r");

	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f)) {
		char *s = trim(line), *v, *c;
		bool commented = false;
		size_t n;

		if (*s == '#') {
			commented = true;
			s = trim(s + 1);
		}
		if (!commented && *s == '}') {
			char *dot = strrchr(path, '.');

			if (dot)
				*dot = 0;
			else
				path[0] = 0;
			continue;
		}
		n = ident(s);
		if (!n)
			continue;
		v = trim(s + n);
		if (!commented && strchr(v, '{')) {
			char sec[32];

			snprintf(sec, sizeof(sec), "%.*s", (int)n, s);
			if (path[0])
				strncat(path, ".",
					sizeof(path) - strlen(path) - 1);
			strncat(path, sec, sizeof(path) - strlen(path) - 1);
			continue;
		}
		if (*v != '=')
			continue;
		s[n] = 0;
		v = trim(v + 1);
		c = strchr(v, '#');
		if (c && (*v != '"' || c > strchr(v + 1, '"')))
			*c = 0;
		v = trim(v);
		if (*v == '"') {
			v++;
			if (strchr(v, '"'))
				*strchr(v, '"') = 0;
		}
		doc_add(d, path, s, v);
	}
	fclose(f);
}

/*
 * Options of railyard.conf(5): ".It Sy name = default", or ".It Sy name"
 * where the default is computed or absent, under the .Ss of its section
 * in DESCRIPTION ("Top level", "rail NAME", "rail NAME fault", "failover",
 * ...): `rail NAME fault` is section rail.fault.
 */
static void read_man(struct doc *d)
{
	char line[512], path[32] = "";
	bool in = false;
	FILE *f = fopen(RY_CONF_MAN, "r");

	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f)) {
		char name[40], *s, *v, *tok, *save;
		size_t n;

		if (!strncmp(line, ".Sh ", 4)) {
			in = !strncmp(line, ".Sh DESCRIPTION", 15);
			continue;
		}
		if (!in)
			continue;
		if (!strncmp(line, ".Ss ", 4)) {
			path[0] = 0;
			for (tok = strtok_r(line + 4, " \n", &save); tok;
			     tok = strtok_r(NULL, " \n", &save)) {
				if (!strcmp(tok, "NAME") ||
				    !strcmp(tok, "Top") ||
				    !strcmp(tok, "level"))
					continue;
				if (path[0])
					strncat(path, ".",
						sizeof(path) - strlen(path) -
						    1);
				strncat(path, tok,
					sizeof(path) - strlen(path) - 1);
			}
			continue;
		}
		if (strncmp(line, ".It Sy ", 7))
			continue;
		s = trim(line + 7);
		n = ident(s);
		ck_assert_uint_gt(n, 0);
		snprintf(name, sizeof(name), "%.*s", (int)n, s);
		v = trim(s + n);
		doc_add(d, path, name, *v == '=' ? trim(v + 1) : NULL);
	}
	fclose(f);
	ck_assert_uint_gt(d->n, 0);
}

/* The same value, whatever way it is written (64M, 67108864, "0"). */
static bool same_value(const struct ry__opt *o, const char *a, const char *b)
{
	unsigned char va[256] = {0}, vb[256] = {0};

	ck_assert_uint_le(o->size, sizeof(va));
	if (ry__opt_parse(o, a, va) || ry__opt_parse(o, b, vb))
		return false;
	return !memcmp(va, vb, o->size);
}

static void check_doc(const struct doc *d, const char *what)
{
	/* every option of the table, with its default */
	for (unsigned i = 0; i < ry__n_opts; i++) {
		const struct ry__opt *o = &ry__opts[i];
		const struct doc_opt *x = doc_find(d, o->sec, o->name);

		ck_assert_msg(x, "%s does not document %s%s%s", what, o->sec,
			      *o->sec ? "." : "", o->name);
		if (o->def)
			ck_assert_msg(x->has_value &&
					  same_value(o, o->def, x->value),
				      "%s: %s%s%s is '%s', the default is '%s'",
				      what, o->sec, *o->sec ? "." : "", o->name,
				      x->value, o->def);
	}
	/* and nothing the table does not have */
	for (unsigned i = 0; i < d->n; i++)
		ck_assert_msg(row(d->o[i].sec, d->o[i].name),
			      "%s documents %s%s%s, which is not an option",
			      what, d->o[i].sec, *d->o[i].sec ? "." : "",
			      d->o[i].name);
}

START_TEST(test_conf_in_step)
{
	static struct doc d;

	memset(&d, 0, sizeof(d));
	read_conf(&d);
	check_doc(&d, "etc/railyard.conf");
}
END_TEST

START_TEST(test_man_in_step)
{
	static struct doc d;

	memset(&d, 0, sizeof(d));
	read_man(&d);
	check_doc(&d, "config/railyard.conf.5");
}
END_TEST

/* A verbs rail (every rail option printed) and a peer; faults need a
 * soft rail, whose fault section is printed only when set, so defaults
 * of rail.fault are checked on the soft rail. */
#define BASE                                                                   \
	"rail h {\n provider = verbs\n device = mlx5_0\n}\n"                   \
	"rail s {\n provider = soft\n address = \"127.0.0.1\"\n}\n"            \
	"peer p {\n address = \"127.0.0.1:1\"\n}\n"

static void check_defaults(const struct ry_config *cfg)
{
	for (unsigned i = 0; i < ry__n_opts; i++) {
		const struct ry__opt *o = &ry__opts[i];
		unsigned char want[256] = {0};
		const void *base;

		if (!o->def)
			continue;
		ck_assert_int_eq(ry__opt_parse(o, o->def, want), 0);
		if (!strcmp(o->sec, "rail"))
			base = &cfg->rails[0];
		else if (!strcmp(o->sec, "rail.fault"))
			base = &cfg->rails[1];
		else if (!strcmp(o->sec, "peer"))
			base = &cfg->peers[0];
		else
			base = cfg;
		if (o->type == RY__OPT_STR)
			ck_assert_str_eq(ry__opt_field(o, base),
					 (const char *)want);
		else
			ck_assert_msg(
			    !memcmp(ry__opt_field(o, base), want, o->size),
			    "%s.%s lost its default", o->sec, o->name);
	}
}

START_TEST(test_defaults_round_trip)
{
	struct ry_config *a = NULL, *b = NULL;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	ck_assert_int_eq(ry_config_parse(BASE, "d.conf", &a, NULL, NULL), 0);
	check_defaults(a);
	f = open_memstream(&buf, &len);
	ry_config_print(a, f);
	fclose(f);
	ck_assert_msg(ry_config_parse(buf, "printed", &b, NULL, NULL) == 0,
		      "%s", buf);
	check_defaults(b);
	ry_config_free(a);
	ry_config_free(b);
	free(buf);
}
END_TEST

struct problems {
	int n;
	bool found;
	const char *name;
	int line;
};

static void note(const struct ry_config_error *e, void *arg)
{
	struct problems *p = arg;

	p->n++;
	if (e->line == p->line && !strcmp(e->file, "r.conf") &&
	    strstr(e->message, p->name) && e->hint[0])
		p->found = true;
}

/* A rail's options are tried on a verbs rail (port is checked on those
 * only), a fault's on a soft rail (verbs rails cannot inject faults). */
static bool ranged(const struct ry__opt *o)
{
	return o->type == RY__OPT_INT || o->type == RY__OPT_SIZE ||
	       o->type == RY__OPT_PROB;
}

static void refuse(const struct ry__opt *o, long long v)
{
	struct problems p = {.name = o->name};
	struct ry_config *cfg = NULL;
	char text[512];
	const char *soft =
	    "rail r0 {\n provider = soft\n address = \"127.0.0.1\"\n";

	if (!strcmp(o->sec, "")) {
		snprintf(text, sizeof(text), "%s}\n%s = %lld\n", soft, o->name,
			 v);
		p.line = 5;
	} else if (!strcmp(o->sec, "rail")) {
		snprintf(text, sizeof(text),
			 "rail r0 {\n provider = verbs\n device = mlx5_0\n"
			 " %s = %lld\n}\n",
			 o->name, v);
		p.line = 4;
	} else if (!strcmp(o->sec, "rail.fault")) {
		snprintf(text, sizeof(text), "%s fault {\n  %s = %lld\n }\n}\n",
			 soft, o->name, v);
		p.line = 5;
	} else {
		snprintf(text, sizeof(text), "%s}\n%s {\n %s = %lld\n}\n", soft,
			 o->sec, o->name, v);
		p.line = 6;
	}
	ck_assert_msg(ry_config_parse(text, "r.conf", &cfg, note, &p) ==
			  -EINVAL,
		      "%s.%s = %lld accepted", o->sec, o->name, v);
	ck_assert_msg(p.found, "%s.%s = %lld: no problem at r.conf:%d", o->sec,
		      o->name, v, p.line);
	ck_assert_ptr_null(cfg);
}

START_TEST(test_ranges)
{
	const struct ry__opt *o = &ry__opts[_i];

	if (!ranged(o))
		return;
	refuse(o, o->min - 1);
	refuse(o, o->max + 1);
}
END_TEST

static Suite *options_suite(void)
{
	Suite *s = suite_create("options");
	TCase *tc = tcase_create("table");

	tcase_add_test(tc, test_conf_in_step);
	tcase_add_test(tc, test_man_in_step);
	tcase_add_test(tc, test_defaults_round_trip);
	tcase_add_loop_test(tc, test_ranges, 0, (int)ry__n_opts);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(options_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
