/* SPDX-License-Identifier: BSD-2-Clause */
/* Minimal JSON output for --json: strings escaped per RFC 8259. */
#ifndef RAILYARD_CLI_JSON_H
#define RAILYARD_CLI_JSON_H

#include <stdio.h>

void cli_json_str(FILE *out, const char *s);

#endif
