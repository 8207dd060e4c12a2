/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Little-endian fields at any alignment, for what the manager puts on the
 * wire itself: memory descriptors (mr.c) and control frames (src/ctl/wire.c).
 */
#ifndef RAILYARD_UTIL_LE_H
#define RAILYARD_UTIL_LE_H

#include <endian.h>
#include <stdint.h>
#include <string.h>

static inline void ry__put_le16(void *p, uint16_t v)
{
	v = htole16(v);
	memcpy(p, &v, 2);
}

static inline void ry__put_le32(void *p, uint32_t v)
{
	v = htole32(v);
	memcpy(p, &v, 4);
}

static inline void ry__put_le64(void *p, uint64_t v)
{
	v = htole64(v);
	memcpy(p, &v, 8);
}

static inline uint16_t ry__get_le16(const void *p)
{
	uint16_t v;

	memcpy(&v, p, 2);
	return le16toh(v);
}

static inline uint32_t ry__get_le32(const void *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return le32toh(v);
}

static inline uint64_t ry__get_le64(const void *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return le64toh(v);
}

#endif
