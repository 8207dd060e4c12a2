// SPDX-License-Identifier: BSD-2-Clause
/*
 * railyard reload [--socket PATH | -c FILE]: ask a running serve to read
 * its config file again (as SIGHUP does) and print the outcome.  serve
 * answers on its status socket with the problems, one per line as
 * `railyard check-config` prints them, then a last line "ok: ..." or
 * "failed: ...".
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "src/cli/cli.h"
#include "src/cli/node.h"

static const char usage_text[] =
    "usage: railyard reload [--socket PATH | -c FILE]\n"
    "\n"
    "Ask a running `railyard serve` to read its config file again and\n"
    "apply it, as SIGHUP does: rails and peers added come up, removed ones\n"
    "drain and go, changed timeouts apply, connections on unchanged rails\n"
    "are untouched.  A file with a problem changes nothing; every problem\n"
    "is printed as FILE:LINE: message.  The socket defaults to the one\n"
    "serve uses for the node named in FILE (or for this host's name).\n"
    "Exit codes: 0 applied, 1 refused or no running node answered,\n"
    "2 usage error.\n";

int cli_reload(int argc, char **argv)
{
	const char *sock_arg = NULL, *file = NULL;
	char *text = NULL, *last;
	size_t len = 0;
	FILE *in;
	int fd, rc;

	rc = cli_node_args(argc, argv, "reload", usage_text, &sock_arg, &file,
			   NULL);
	if (rc >= 0)
		return rc;
	fd = cli_node_connect("reload", sock_arg, file, "reload\n");
	if (fd < 0)
		return RY_EXIT_FAIL;
	in = fdopen(fd, "r");
	if (!in) {
		close(fd);
		return RY_EXIT_FAIL;
	}
	if (getdelim(&text, &len, 0, in) < 0) {
		free(text);
		text = NULL;
	}
	fclose(in);
	if (!text || !*text) {
		fprintf(stderr,
			"railyard reload: the node closed the socket "
			"without an answer (a serve older than reload?)\n");
		free(text);
		return RY_EXIT_FAIL;
	}
	/* the last line is the verdict; the problems before it */
	len = strlen(text);
	if (text[len - 1] == '\n')
		text[--len] = 0;
	last = strrchr(text, '\n');
	if (last)
		*last++ = 0;
	else
		last = text;
	if (last != text)
		fprintf(stderr, "%s\n", text);
	rc = strncmp(last, "ok", 2) ? RY_EXIT_FAIL : RY_EXIT_OK;
	fprintf(rc ? stderr : stdout, "railyard reload: %s\n", last);
	free(text);
	return rc;
}
