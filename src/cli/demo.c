// SPDX-License-Identifier: BSD-2-Clause
/*
 * railyard demo: the main job.  Until the rail manager lands it shows the
 * built-in configuration and the rails it would use, and says that moving
 * data is not there yet.
 */
#include <stdio.h>
#include <string.h>

#include <railyard/railyard.h>

#include "src/cli/cli.h"

static const char usage_text[] =
	"usage: railyard demo\n"
	"\n"
	"Run two nodes over four soft rails on loopback with the built-in\n"
	"configuration; no config file is needed.\n"
	"Exit codes: 0 success, 1 failure, 2 usage error.\n";

int ry_cli_demo(int argc, char **argv)
{
	struct ry_config *cfg;

	if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		fputs(usage_text, stdout);
		return RY_EXIT_OK;
	}
	if (argc != 1) {
		fputs(usage_text, stderr);
		return RY_EXIT_USAGE;
	}
	if (ry_config_demo(&cfg)) {
		fprintf(stderr, "railyard demo: out of memory\n");
		return RY_EXIT_FAIL;
	}
	if (ry_config_validate(cfg, ry_cli_print_config_error, stderr)) {
		ry_config_free(cfg);
		return RY_EXIT_FAIL;
	}
	printf("railyard %s demo: built-in configuration\n\n", ry_version());
	ry_config_print(cfg, stdout);
	printf("\nrails it would use:\n");
	for (unsigned i = 0; i < cfg->n_rails; i++)
		printf("  %-4s %s on %s, network %s, weight %u\n",
		       cfg->rails[i].name,
		       ry_provider_name(cfg->rails[i].provider),
		       cfg->rails[i].address, cfg->rails[i].network,
		       cfg->rails[i].weight);
	printf("\nMoving data needs the rail manager, which is not built yet.\n");
	ry_config_free(cfg);
	return RY_EXIT_OK;
}
