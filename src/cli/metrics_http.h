/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * serve --metrics: the HTTP endpoint (libmicrohttpd), safe to expose.
 * Connections are bounded in all (CLI_MHTTP_MAX, far below the fd limit)
 * and per source address (CLI_MHTTP_PER_SOURCE), an idle one is closed
 * after CLI_MHTTP_IDLE_S, and the text is rendered at most once every
 * CLI_MHTTP_CACHE_MS however many scrape it (a flood renders once).  With
 * --metrics-token FILE every request must carry "Authorization: Bearer
 * <the file's first line>", or is answered 401.
 */
#ifndef RAILYARD_CLI_METRICS_HTTP_H
#define RAILYARD_CLI_METRICS_HTTP_H

#include <railyard/railyard.h>

#define CLI_MHTTP_MAX 64
#define CLI_MHTTP_PER_SOURCE 4
#define CLI_MHTTP_IDLE_S 10
#define CLI_MHTTP_CACHE_MS 1000

struct cli_mhttp;

/* Serve GET /metrics of mgr on the listening socket fd (taken over on
 * success).  token_file NULL: no authentication.  0 or -errno, said on
 * stderr. */
int cli_mhttp_start(struct ry_manager *mgr, int fd, const char *token_file,
		    struct cli_mhttp **h_p);
void cli_mhttp_stop(struct cli_mhttp *h);

#endif
