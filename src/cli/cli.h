/* SPDX-License-Identifier: BSD-2-Clause */
/* Subcommands of the railyard tool.  Exit codes (railyard(1), EXIT STATUS):
 * 0 success, 1 failure (bad config, failed operation), 2 usage error. */
#ifndef RAILYARD_CLI_H
#define RAILYARD_CLI_H

#include <railyard/config.h>

enum { RY_EXIT_OK = 0, RY_EXIT_FAIL = 1, RY_EXIT_USAGE = 2 };

int cli_check_config(int argc, char **argv);
int cli_demo(int argc, char **argv);
int cli_devices(int argc, char **argv);
int cli_serve(int argc, char **argv);
int cli_status(int argc, char **argv);
int cli_reload(int argc, char **argv);
int cli_bench(int argc, char **argv);
int cli_drill(int argc, char **argv);

/* Print every config problem as FILE:LINE: message, then the hint. */
struct ry_config_error;
void cli_print_config_error(const struct ry_config_error *e, void *arg);

/* The log's level and sink (logging.c): command line > RY_LOG_LEVEL >
 * config.  cli_log_init() once at start (the journal when stderr is it);
 * cli_log_apply() with each config read; both -EINVAL, said on stderr,
 * for a RY_LOG_LEVEL that is no level.  cli_log_cmdline_level(): the
 * level serve --log-level names, -EINVAL (said by the caller) for none. */
int cli_log_init(void);
int cli_log_apply(const struct ry_config *cfg);
int cli_log_cmdline_level(const char *name);

#endif
