/* SPDX-License-Identifier: BSD-2-Clause */
/* Starting a manager from -c FILE with every problem said plainly, and the
 * status text/JSON of a running node (serve writes it, status reads it). */
#ifndef RAILYARD_CLI_NODE_H
#define RAILYARD_CLI_NODE_H

#include <stdbool.h>
#include <stdio.h>

#include <railyard/railyard.h>

/* Load, validate and create; on failure print why and return non-zero. */
/* serve --require-all-rails: cli_start() sets require_all_rails */
extern bool cli_require_all_rails;
int cli_start(const char *path, struct ry_config **cfg_p,
	      struct ry_manager **mgr_p);
/* The same with ops_in_flight at least min_inflight (0: as configured):
 * bench's --depth N is N operations in flight, whatever the config caps a
 * node's peers at. */
int cli_start_inflight(const char *path, unsigned min_inflight,
		       struct ry_config **cfg_p, struct ry_manager **mgr_p);
/* Sessions that cannot have a descriptor each: a default max_sessions is
 * lowered to fit, one the file gives is refused (-EMFILE); said on
 * out.  Raises the soft open-file limit as far as the hard one. */
#define CLI_MIN_SESSIONS 64
int cli_fit_fds(const char *path, struct ry_config *c, FILE *out);

/* Default status socket for a node: /run/railyard/NODE.sock as root,
 * else $XDG_RUNTIME_DIR or /tmp. */
void cli_status_path(const char *node, char *buf, size_t len);

/*
 * The options of a command that asks a running serve: --socket PATH,
 * -c FILE, --help, and --json when json is not NULL.  Returns -1 to go
 * on, or the exit code (--help: usage on stdout; anything else: usage).
 */
int cli_node_args(int argc, char **argv, const char *cmd, const char *usage,
		  const char **sock_arg, const char **file, bool *json);

/*
 * Connect to a running serve's status socket: sock_arg, else the default
 * for the node named in FILE (or this host's name), and send request.
 * Returns the fd, or -1 after saying why on stderr (cmd names the command).
 */
int cli_node_connect(const char *cmd, const char *sock_arg, const char *file,
		     const char *request);

/* Rails and every peer the manager holds, with state and counters. */
void cli_status_write(struct ry_manager *mgr, const struct ry_config *cfg,
		      int json, FILE *out);

#endif
