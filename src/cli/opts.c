// SPDX-License-Identifier: BSD-2-Clause
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>

#include "config/config_int.h"
#include "src/cli/opts.h"

bool cli_parse_size(const char *s, size_t *out)
{
	uint64_t v;

	if (ry__parse_size(s, &v) || v == 0 || v > SIZE_MAX)
		return false;
	*out = (size_t)v;
	return true;
}

bool cli_parse_seconds(const char *s, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !(v >= 0) || v > 1e7)
		return false;
	*out = v;
	return true;
}

bool cli_parse_u64(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (!isdigit((unsigned char)*s))
		return false;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end)
		return false;
	*out = v;
	return true;
}
