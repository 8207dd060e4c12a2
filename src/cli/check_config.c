// SPDX-License-Identifier: BSD-2-Clause
/* railyard check-config FILE */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <railyard/railyard.h>

#include "src/cli/cli.h"

static const char usage_text[] =
    "usage: railyard check-config FILE\n"
    "\n"
    "Parse and validate FILE without opening any device or socket.\n"
    "Good file: print the effective configuration (every default made\n"
    "explicit) on stdout and exit 0.  Bad file: print every problem as\n"
    "FILE:LINE: message, each followed by a hint, on stderr and exit 1.\n"
    "Exit codes: 0 valid, 1 invalid or unreadable, 2 usage error.\n";

void cli_print_config_error(const struct ry_config_error *e, void *arg)
{
	FILE *out = arg ? arg : stderr;

	if (e->line > 0)
		fprintf(out, "%s:%d: %s\n", e->file, e->line, e->message);
	else
		fprintf(out, "%s: %s\n", e->file, e->message);
	if (e->hint && *e->hint)
		fprintf(out, "    hint: %s\n", e->hint);
}

struct counter {
	int n;
};

static void count_and_print(const struct ry_config_error *e, void *arg)
{
	struct counter *c = arg;

	c->n++;
	cli_print_config_error(e, stderr);
}

int cli_check_config(int argc, char **argv)
{
	struct ry_config *cfg;
	struct counter c = {0};
	int ret;

	if (argc == 2 &&
	    (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		fputs(usage_text, stdout);
		return RY_EXIT_OK;
	}
	if (argc != 2) {
		fputs(usage_text, stderr);
		return RY_EXIT_USAGE;
	}
	ret = ry_config_load(argv[1], &cfg, count_and_print, &c);
	if (ret) {
		fprintf(stderr, "%s: %d problem%s found; nothing was started\n",
			argv[1], c.n, c.n == 1 ? "" : "s");
		return RY_EXIT_FAIL;
	}
	ry_config_print(cfg, stdout);
	ry_config_free(cfg);
	return RY_EXIT_OK;
}
