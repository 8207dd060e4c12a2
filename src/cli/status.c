// SPDX-License-Identifier: BSD-2-Clause
/* railyard status [--json] [--socket PATH | -c FILE]: ask a running serve. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "src/cli/cli.h"
#include "src/cli/node.h"

static const char usage_text[] =
    "usage: railyard status [--json] [--socket PATH | -c FILE]\n"
    "\n"
    "Show the rails, peers, connections, health and counters of a running\n"
    "`railyard serve`.  The socket defaults to the one serve uses for the\n"
    "node named in FILE (or for this host's name).\n"
    "Exit codes: 0 shown, 1 no running node answered, 2 usage error.\n";

int cli_status(int argc, char **argv)
{
	const char *sock_arg = NULL, *file = NULL;
	char buf[4096];
	bool json = false;
	ssize_t n;
	int fd, rc;

	rc = cli_node_args(argc, argv, "status", usage_text, &sock_arg, &file,
			   &json);
	if (rc >= 0)
		return rc;
	fd = cli_node_connect("status", sock_arg, file,
			      json ? "json\n" : "text\n");
	if (fd < 0)
		return RY_EXIT_FAIL;
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		fwrite(buf, 1, (size_t)n, stdout);
	close(fd);
	return RY_EXIT_OK;
}
