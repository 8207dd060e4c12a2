// SPDX-License-Identifier: BSD-2-Clause
/*
 * bench_crc32c: the soft rail's CRC32C (ISA-L's crc32_iscsi, what every
 * packet pays) against the slicing-by-8 reference, at packet sizes.  Best
 * of five passes of ~2 GB each, one thread; prints GB/s.
 * usage: bench_crc32c
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "rails/soft/wire.h"

uint32_t ry__soft_crc32c_sw(uint32_t crc, const void *buf, size_t len);

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static double rate(uint32_t (*f)(uint32_t, const void *, size_t),
		   const uint8_t *buf, size_t n)
{
	long it = 2000000000L / (long)n;
	double best = 1e9;
	volatile uint32_t sink = 0;

	for (int r = 0; r < 5; r++) {
		double t0 = now();

		for (long i = 0; i < it; i++)
			sink += f((uint32_t)i, buf, n);
		if (now() - t0 < best)
			best = now() - t0;
	}
	(void)sink;
	return (double)n * (double)it / best / 1e9;
}

int main(void)
{
	static const size_t sizes[] = {64, 1344, 1472, 4096, 8972};
	static uint8_t buf[9000];

	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)rand();
	printf("%6s %12s %12s\n", "bytes", "GB/s", "table GB/s");
	for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++)
		printf("%6zu %12.2f %12.2f\n", sizes[s],
		       rate(ry__soft_crc32c, buf, sizes[s]),
		       rate(ry__soft_crc32c_sw, buf, sizes[s]));
	return 0;
}
