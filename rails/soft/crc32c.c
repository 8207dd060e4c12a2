// SPDX-License-Identifier: BSD-2-Clause
/*
 * CRC32C (Castagnoli), as iSCSI and RoCE's ICRC use the polynomial.  The
 * data path uses ISA-L's crc32_iscsi: it folds with PCLMULQDQ beside the
 * SSE4.2 crc32 instruction and picks its code for the CPU at run time,
 * 2.1-3.4x the speed of our three-chain crc32 loop on 1344-9000 byte
 * payloads (tests/bench/RESULTS.md, "CRC32C").  Slicing-by-8 tables stay
 * as the reference the tests check it against.
 */
#include <isa-l/crc.h>
#include <limits.h>
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

/* Standard CRC32C of buf continuing from crc (0 to start).  ISA-L's
 * iSCSI CRC is the standard one without the final inversion. */
uint32_t ry__soft_crc32c(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	crc = ~crc;
	/* its length is an int; a packet never comes near */
	while (len > INT_MAX) {
		crc = crc32_iscsi((unsigned char *)p, INT_MAX, crc);
		p += INT_MAX;
		len -= INT_MAX;
	}
	return ~crc32_iscsi((unsigned char *)p, (int)len, crc);
}

/* The table path, for tests that check both give the same answer. */
uint32_t ry__soft_crc32c_sw(uint32_t crc, const void *buf, size_t len);
uint32_t ry__soft_crc32c_sw(uint32_t crc, const void *buf, size_t len)
{
	pthread_once(&table_once, table_init);
	return ~crc_sw(~crc, buf, len);
}
