// SPDX-License-Identifier: BSD-2-Clause
/*
 * CRC32C (Castagnoli), as iSCSI and RoCE's ICRC use the polynomial: SSE4.2
 * crc32 instructions when the CPU has them (checked once with cpuid), else
 * slicing-by-8 tables built on first use.
 */
#include <pthread.h>
#include <stdint.h>
#include <string.h>

#include "rails/soft/wire.h"

#define POLY 0x82f63b78u /* reflected Castagnoli */

static uint32_t table[8][256];
static pthread_once_t table_once = PTHREAD_ONCE_INIT;

static void table_init(void)
{
	for (unsigned i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = c & 1 ? (c >> 1) ^ POLY : c >> 1;
		table[0][i] = c;
	}
	for (unsigned i = 0; i < 256; i++)
		for (unsigned t = 1; t < 8; t++)
			table[t][i] = (table[t - 1][i] >> 8) ^
				      table[0][table[t - 1][i] & 0xff];
}

static uint32_t crc_sw(uint32_t crc, const uint8_t *p, size_t len)
{
	while (len && ((uintptr_t)p & 7)) {
		crc = (crc >> 8) ^ table[0][(crc ^ *p++) & 0xff];
		len--;
	}
	while (len >= 8) {
		uint64_t v;

		memcpy(&v, p, 8);
		v = le64toh(v) ^ crc;
		crc = table[7][v & 0xff] ^ table[6][(v >> 8) & 0xff] ^
		      table[5][(v >> 16) & 0xff] ^ table[4][(v >> 24) & 0xff] ^
		      table[3][(v >> 32) & 0xff] ^ table[2][(v >> 40) & 0xff] ^
		      table[1][(v >> 48) & 0xff] ^ table[0][v >> 56];
		p += 8;
		len -= 8;
	}
	while (len--)
		crc = (crc >> 8) ^ table[0][(crc ^ *p++) & 0xff];
	return crc;
}

#if defined(__x86_64__)
#include <nmmintrin.h>

/*
 * The crc32 instruction has a latency of three cycles and a throughput of
 * one, so one dependent chain runs at a third of the speed the unit has.
 * Blocks of 3 * BLK bytes are done as three independent chains, joined
 * with the linear "append BLK zero bytes" operator, applied by table.
 */
#define BLK 448 /* 3 * 448 = 1344: one 1500-MTU packet's payload */

static uint32_t zeros[2][4][256]; /* append BLK, 2 * BLK zero bytes */
static pthread_once_t zeros_once = PTHREAD_ONCE_INIT;

__attribute__((target("sse4.2"))) static uint32_t zeros_hw(uint32_t c, size_t n)
{
	uint64_t v = c;

	for (size_t i = 0; i < n / 8; i++)
		v = _mm_crc32_u64(v, 0);
	return (uint32_t)v;
}

static int have_hw;

static void zeros_init(void)
{
	__builtin_cpu_init();
	have_hw = __builtin_cpu_supports("sse4.2");
	if (!have_hw)
		return;
	for (unsigned k = 0; k < 2; k++)
		for (unsigned i = 0; i < 4; i++)
			for (unsigned b = 0; b < 256; b++)
				zeros[k][i][b] =
				    zeros_hw(b << (8 * i), (k + 1) * BLK);
}

static inline uint32_t shift(const uint32_t t[4][256], uint32_t c)
{
	return t[0][c & 0xff] ^ t[1][(c >> 8) & 0xff] ^ t[2][(c >> 16) & 0xff] ^
	       t[3][c >> 24];
}

__attribute__((target("sse4.2"))) static uint32_t
crc_hw(uint32_t crc, const uint8_t *p, size_t len)
{
	uint64_t c = crc;

	while (len >= 3 * BLK) {
		uint64_t c1 = 0, c2 = 0, v0, v1, v2;

		for (size_t i = 0; i < BLK; i += 8) {
			memcpy(&v0, p + i, 8);
			memcpy(&v1, p + BLK + i, 8);
			memcpy(&v2, p + 2 * BLK + i, 8);
			c = _mm_crc32_u64(c, v0);
			c1 = _mm_crc32_u64(c1, v1);
			c2 = _mm_crc32_u64(c2, v2);
		}
		c = shift(zeros[1], (uint32_t)c) ^
		    shift(zeros[0], (uint32_t)c1) ^ (uint32_t)c2;
		p += 3 * BLK;
		len -= 3 * BLK;
	}
	while (len >= 8) {
		uint64_t v;

		memcpy(&v, p, 8);
		c = _mm_crc32_u64(c, v);
		p += 8;
		len -= 8;
	}
	crc = (uint32_t)c;
	while (len--)
		crc = _mm_crc32_u8(crc, *p++);
	return crc;
}

#endif

/* Standard CRC32C of buf continuing from crc (0 to start). */
uint32_t ry__soft_crc32c(uint32_t crc, const void *buf, size_t len)
{
	crc = ~crc;
#if defined(__x86_64__)
	/* pthread_once orders the tables before any thread uses them */
	pthread_once(&zeros_once, zeros_init);
	if (have_hw)
		return ~crc_hw(crc, buf, len);
#endif
	pthread_once(&table_once, table_init);
	return ~crc_sw(crc, buf, len);
}

/* The table path, for tests that check both give the same answer. */
uint32_t ry__soft_crc32c_sw(uint32_t crc, const void *buf, size_t len);
uint32_t ry__soft_crc32c_sw(uint32_t crc, const void *buf, size_t len)
{
	pthread_once(&table_once, table_init);
	return ~crc_sw(~crc, buf, len);
}
