// SPDX-License-Identifier: BSD-2-Clause
/* railyard: the command-line tool.  One subcommand per file. */
#include <stdio.h>
#include <string.h>

#include <railyard/railyard.h>

#include "src/cli/cli.h"

static const struct {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
} commands[] = {
    {"demo", cli_demo,
     "run the built-in demo on soft rails over loopback (no config)"},
    {"serve", cli_serve,
     "run a node: rails, peers, a target region, a status socket"},
    {"bench", cli_bench,
     "bandwidth and latency against a serving peer, per rail"},
    {"drill", cli_drill, "continuous verified transfers while you pull cables"},
    {"status", cli_status,
     "rails, peers, health and counters of a running serve"},
    {"reload", cli_reload,
     "make a running serve read its config again (as SIGHUP does)"},
    {"devices", cli_devices,
     "list RDMA ports (verbs rails) and interfaces (soft rails)"},
    {"check-config", cli_check_config,
     "check a config file; print every problem or the effective config"},
};

static void usage(FILE *out)
{
	fprintf(out,
		"usage: railyard COMMAND [ARGS]\n\n"
		"railyard %s: fault-tolerant multi-rail RDMA transport\n\n"
		"commands:\n",
		ry_version());
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(out, "  %-14s %s\n", commands[i].name,
			commands[i].summary);
	fprintf(out, "\n'railyard COMMAND --help' describes one command.\n"
		     "Exit codes: 0 success, 1 failure, 2 usage error.\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return RY_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
	    !strcmp(argv[1], "help")) {
		usage(stdout);
		return RY_EXIT_OK;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
		printf("railyard %s\n", ry_version());
		return RY_EXIT_OK;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].fn(argc - 1, argv + 1);
	fprintf(stderr, "railyard: unknown command '%s'\n\n", argv[1]);
	usage(stderr);
	return RY_EXIT_USAGE;
}
