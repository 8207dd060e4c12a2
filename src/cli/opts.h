/* SPDX-License-Identifier: BSD-2-Clause */
/* Option parsing shared by the subcommands: sizes with units, durations. */
#ifndef RAILYARD_CLI_OPTS_H
#define RAILYARD_CLI_OPTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* "1M", "4096", "64K" -> bytes; false when it does not parse. */
bool cli_parse_size(const char *s, size_t *out);
/* "10", "2.5" -> seconds; false when it does not parse or is negative. */
bool cli_parse_seconds(const char *s, double *out);
bool cli_parse_u64(const char *s, uint64_t *out);

#endif
