// SPDX-License-Identifier: BSD-2-Clause
/*
 * Our own pass over a config file before libconfuse sees it.
 *
 * Why: libconfuse stops at the first problem, its line numbers run one
 * token ahead (the lexer has already read past blank lines), and version
 * 3.3 accepts a file whose last section is never closed.  Operators need
 * every problem, on the right line.  This scanner knows just enough of the
 * grammar (words, strings, '=', '{', '}', comments) to record where each
 * option and section is, and to find unbalanced braces, unterminated
 * strings, unknown names and duplicate titles.  Everything else (types,
 * values) is left to libconfuse and to validate.c.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config/config_int.h"

enum tok {
	T_EOF,
	T_WORD,
	T_STRING,
	T_EQ,
	T_LBRACE,
	T_RBRACE,
	T_OTHER,
	T_ERROR
};

struct lexer {
	const char *p;
	int line;
	char text[256];
	int tok_line;
};

static int is_word_char(char c)
{
	return c && !strchr(" \t\r\n{}=,()\"'#+", c);
}

static enum tok next(struct lexer *lx, struct ry__loader *ld)
{
	const char *p = lx->p;

again:
	while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n') {
		if (*p == '\n')
			lx->line++;
		p++;
	}
	if (*p == '#' || (p[0] == '/' && p[1] == '/')) {
		while (*p && *p != '\n')
			p++;
		goto again;
	}
	if (p[0] == '/' && p[1] == '*') {
		int start = lx->line;

		for (p += 2; *p && !(p[0] == '*' && p[1] == '/'); p++)
			if (*p == '\n')
				lx->line++;
		if (!*p) {
			ry__cfg_report(ld, start, "close it with */",
				       "comment is never closed");
			lx->p = p;
			return T_ERROR;
		}
		p += 2;
		goto again;
	}
	lx->tok_line = lx->line;
	lx->text[0] = 0;
	if (!*p) {
		lx->p = p;
		return T_EOF;
	}
	if (*p == '"' || *p == '\'') {
		char q = *p++;
		size_t n = 0;

		while (*p && *p != q) {
			if (*p == '\\' && q == '"' && p[1])
				p++;
			if (*p == '\n')
				lx->line++;
			if (n + 1 < sizeof(lx->text))
				lx->text[n++] = *p;
			p++;
		}
		lx->text[n] = 0;
		if (!*p) {
			ry__cfg_report(ld, lx->tok_line,
				       "add the closing quote",
				       "string is never closed");
			lx->p = p;
			return T_ERROR;
		}
		lx->p = p + 1;
		return T_STRING;
	}
	if (*p == '{' || *p == '}' || *p == '=') {
		lx->p = p + 1;
		return *p == '{' ? T_LBRACE : *p == '}' ? T_RBRACE : T_EQ;
	}
	if (is_word_char(*p)) {
		size_t n = 0;

		while (is_word_char(*p)) {
			if (n + 1 < sizeof(lx->text))
				lx->text[n++] = *p;
			p++;
		}
		lx->text[n] = 0;
		lx->p = p;
		return T_WORD;
	}
	lx->p = p + 1;
	return T_OTHER;
}

/* Bounded copy: names longer than the field are cut, never overflow. */
static void scopy(char *d, size_t n, const char *s)
{
	size_t l = strnlen(s, n - 1);

	memcpy(d, s, l);
	d[l] = 0;
}

static void sappend(char *d, size_t n, const char *s)
{
	size_t l = strlen(d);

	scopy(d + l, n - l, s);
}

static cfg_opt_t *find_opt(cfg_opt_t *opts, const char *name)
{
	for (; opts && opts->name; opts++)
		if (!strcmp(opts->name, name))
			return opts;
	return NULL;
}

/* Levenshtein distance, small strings only: for "did you mean". */
static int distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	int d[41][41];

	if (la > 40 || lb > 40)
		return 99;
	for (size_t i = 0; i <= la; i++)
		d[i][0] = (int)i;
	for (size_t j = 0; j <= lb; j++)
		d[0][j] = (int)j;
	for (size_t i = 1; i <= la; i++)
		for (size_t j = 1; j <= lb; j++) {
			int c = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
			int x = d[i - 1][j] + 1, y = d[i][j - 1] + 1;

			d[i][j] = c < x ? (c < y ? c : y) : (x < y ? x : y);
		}
	return d[la][lb];
}

static void unknown(struct ry__loader *ld, cfg_opt_t *opts, const char *path,
		    const char *name, int line, bool section)
{
	const char *best = NULL;
	/* suggest only near misses: one edit per three letters */
	int best_d = (int)strlen(name) / 3 + 1;

	if (best_d < 2)
		best_d = 2;
	char hint[160];
	size_t n = 0;

	for (cfg_opt_t *o = opts; o && o->name; o++) {
		int dd = distance(name, o->name);

		if (dd < best_d) {
			best_d = dd;
			best = o->name;
		}
	}
	if (best) {
		snprintf(hint, sizeof(hint), "did you mean '%s'?", best);
	} else {
		n = (size_t)snprintf(hint, sizeof(hint), "known here:");
		for (cfg_opt_t *o = opts; o && o->name && n < sizeof(hint); o++)
			n += (size_t)snprintf(hint + n, sizeof(hint) - n, " %s",
					      o->name);
	}
	ry__cfg_report(ld, line, hint, "unknown %s '%s'%s%s%s",
		       section ? "section" : "option", name,
		       *path ? " in section '" : "", path, *path ? "'" : "");
}

/* arr with room for one more of its n elements (doubling from first);
 * NULL when out of memory, arr then unchanged. */
static void *grow(void *arr, unsigned *cap, unsigned n, size_t size,
		  unsigned first)
{
	unsigned c;
	void *v;

	if (n < *cap)
		return arr;
	c = *cap ? *cap * 2 : first;
	v = realloc(arr, (size_t)c * size);
	if (v)
		*cap = c;
	return v;
}

static int push_site(struct ry__loader *ld, const char *path, int index,
		     const char *name, int line)
{
	struct ry__site *s = grow(ld->sites, &ld->cap_sites, ld->n_sites,
				  sizeof(*ld->sites), 64);

	if (!s)
		return -1;
	ld->sites = s;
	s = &ld->sites[ld->n_sites++];
	scopy(s->path, sizeof(s->path), path);
	scopy(s->name, sizeof(s->name), name);
	s->index = index;
	s->line = line;
	return 0;
}

static int push_sec(struct ry__loader *ld, const char *path, const char *title,
		    int index, int line)
{
	struct ry__sec_site *s =
	    grow(ld->secs, &ld->cap_secs, ld->n_secs, sizeof(*ld->secs), 16);

	if (!s)
		return -1;
	ld->secs = s;
	s = &ld->secs[ld->n_secs++];
	scopy(s->path, sizeof(s->path), path);
	scopy(s->title, sizeof(s->title), title);
	s->index = index;
	s->line = line;
	return 0;
}

#define MAX_DEPTH 8

struct frame {
	cfg_opt_t *opts; /* NULL inside an unknown section: no checks */
	char path[32];
	int index;
	int line;
};

int ry__cfg_scan(struct ry__loader *ld, const char *text, cfg_opt_t *root)
{
	struct lexer lx = {.p = text, .line = 1};
	struct frame st[MAX_DEPTH];
	int depth = 0, before = ld->errors;
	char name[40];
	int name_line;
	enum tok t;

	st[0] = (struct frame){.opts = root, .index = 0};
	for (;;) {
		t = next(&lx, ld);
		if (t == T_EOF || t == T_ERROR)
			break;
		if (t == T_RBRACE) {
			if (depth == 0) {
				ry__cfg_report(
				    ld, lx.tok_line,
				    "remove it, or open the section it closes",
				    "'}' without a matching '{'");
				continue;
			}
			depth--;
			continue;
		}
		if (t != T_WORD) {
			/* Not a statement start: libconfuse will say more. */
			continue;
		}
		scopy(name, sizeof(name), lx.text);
		name_line = lx.tok_line;
		t = next(&lx, ld);
		if (t == T_EQ) {
			cfg_opt_t *o = st[depth].opts
					   ? find_opt(st[depth].opts, name)
					   : NULL;

			if (st[depth].opts && !o)
				unknown(ld, st[depth].opts, st[depth].path,
					name, name_line, false);
			if (push_site(ld, st[depth].path, st[depth].index, name,
				      name_line))
				return -1;
			t = next(&lx, ld); /* the value */
			if (t == T_WORD && lx.text[0] == '[') {
				/* other formats' list syntax: say so here,
				 * not as confusing errors on later lines */
				ry__cfg_report(ld, lx.tok_line,
					       "write lists in braces: "
					       "name = {\"a\", \"b\"}",
					       "'%s' is a list: '[' is not "
					       "list syntax here",
					       name);
				while (!strchr(lx.text, ']') &&
				       (t = next(&lx, ld)) != T_EOF &&
				       t != T_ERROR)
					;
				if (t == T_EOF || t == T_ERROR)
					break;
				continue;
			}
			if (t == T_LBRACE) {
				/* a list: skip to its end */
				while ((t = next(&lx, ld)) != T_RBRACE &&
				       t != T_EOF && t != T_ERROR)
					;
			}
			if (t == T_EOF || t == T_ERROR)
				break;
			continue;
		}
		if (t == T_WORD || t == T_STRING || t == T_LBRACE) {
			char title[RY_NAME_MAX] = "";
			struct frame *f;
			cfg_opt_t *o;
			int index = 0;

			if (t != T_LBRACE) {
				scopy(title, sizeof(title), lx.text);
				t = next(&lx, ld);
				if (t != T_LBRACE)
					continue; /* libconfuse reports it */
			}
			o = st[depth].opts ? find_opt(st[depth].opts, name)
					   : NULL;
			if (st[depth].opts && (!o || o->type != CFGT_SEC)) {
				unknown(ld, st[depth].opts, st[depth].path,
					name, name_line, true);
				o = NULL;
			}
			if (depth + 1 >= MAX_DEPTH) {
				ry__cfg_report(ld, name_line, NULL,
					       "sections nested too deeply");
				break;
			}
			if (depth == 0) {
				for (unsigned i = 0; i < ld->n_secs; i++)
					if (!strcmp(ld->secs[i].path, name))
						index++;
				if (*title)
					for (unsigned i = 0; i < ld->n_secs;
					     i++) {
						struct ry__sec_site *s =
						    &ld->secs[i];

						if (strcmp(s->path, name) ||
						    strcmp(s->title, title))
							continue;
						ry__cfg_report(
						    ld, name_line,
						    "give each one its own "
						    "name",
						    "%s '%s' is defined twice "
						    "(first at line %d)",
						    name, title, s->line);
						break;
					}
			} else {
				index = st[depth].index;
			}
			f = &st[++depth];
			f->opts = o ? o->subopts : NULL;
			f->index = index;
			f->line = name_line;
			scopy(f->path, sizeof(f->path), st[depth - 1].path);
			if (*f->path)
				sappend(f->path, sizeof(f->path), ".");
			sappend(f->path, sizeof(f->path), name);
			if (push_sec(ld, f->path, title, index, name_line))
				return -1;
			continue;
		}
		if (t == T_EOF)
			break;
	}
	if (t == T_EOF)
		for (; depth > 0; depth--)
			ry__cfg_report(ld, st[depth].line, "add a '}'",
				       "section '%s' is never closed",
				       st[depth].path);
	return ld->errors - before;
}

int ry__cfg_line(const struct ry__loader *ld, const char *path, int index,
		 const char *name)
{
	if (!ld)
		return 0;
	for (unsigned i = ld->n_sites; i-- > 0;) {
		const struct ry__site *s = &ld->sites[i];

		if (s->index == index && !strcmp(s->path, path) &&
		    !strcmp(s->name, name))
			return s->line;
	}
	for (unsigned i = 0; i < ld->n_secs; i++) {
		const struct ry__sec_site *s = &ld->secs[i];

		if (s->index == index && !strcmp(s->path, path))
			return s->line;
	}
	return 0;
}

int ry__cfg_line_before(const struct ry__loader *ld, const char *name,
			int before)
{
	int best = 0;

	for (unsigned i = 0; i < ld->n_sites; i++) {
		const struct ry__site *s = &ld->sites[i];

		if (s->line <= before && s->line >= best &&
		    !strcmp(s->name, name))
			best = s->line;
	}
	return best ? best : before;
}
