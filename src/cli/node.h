/* SPDX-License-Identifier: BSD-2-Clause */
/* Starting a manager from -c FILE with every problem said plainly, and the
 * status text/JSON of a running node (serve writes it, status reads it). */
#ifndef RAILYARD_CLI_NODE_H
#define RAILYARD_CLI_NODE_H

#include <stdio.h>

#include <railyard/railyard.h>

/* Load, validate and create; on failure print why and return non-zero. */
int cli_start(const char *path, struct ry_config **cfg_p,
	      struct ry_manager **mgr_p);

/* Default status socket for a node: /run/railyard/NODE.sock as root,
 * else $XDG_RUNTIME_DIR or /tmp. */
void cli_status_path(const char *node, char *buf, size_t len);

/* Rails and every peer the manager holds, with state and counters. */
void cli_status_write(struct ry_manager *mgr, const struct ry_config *cfg,
		      int json, FILE *out);

#endif
