// SPDX-License-Identifier: BSD-2-Clause
#include <time.h>

#include "src/util/clock.h"

uint64_t ry__now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
