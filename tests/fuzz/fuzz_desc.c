// SPDX-License-Identifier: BSD-2-Clause
/*
 * libFuzzer target for memory descriptors (src/mr.c, ry__desc_unpack): a
 * descriptor arrives in someone else's RPC, so every input must either be
 * refused with -EBADMSG / -EPROTONOSUPPORT, leaving the output untouched,
 * or yield fields within bounds: a mask naming only rails below
 * RY_MAX_RAILS, one rkey per named rail and none for the others, known
 * access bits, a non-empty range that does not wrap.
 *
 * Accepted descriptors must also round-trip.  The layout has no free bits
 * (the pad bytes must be zero, the length is exact), so re-packing the
 * unpacked fields in the input's rail order must give back the input byte
 * for byte; re-packing in ascending order must unpack to the same fields.
 *
 * The bases the input mutates are real descriptors from ry_mr_pack on the
 * manager fixture over the loop rail (4 rails and 1 rail, several access
 * modes), plus hand-built ones for what the fixture cannot make (16 rails,
 * rails out of order), since those are the shapes the unpacker must accept.
 *
 * Input: byte 0 steers, the rest are (offset, value) patches to the base,
 * or in raw mode the descriptor itself.
 *   bits 0-3  0: raw, k: base k-1 (mod the number of bases)
 *   bit 4     recompute the checksum after patching, since a random patch
 *             almost never passes FNV-1a and would stop at that check
 *   bit 5     trim or extend to the length the rail count field implies
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/manager.h"
#include "src/util/le.h"
#include "tests/manager/fixture.h"

#define HDR 32
#define ENT 8
#define BUFSZ (RY_DESC_MAX + 64)
#define NBASE 8

struct base {
	unsigned char b[BUFSZ];
	size_t len;
};

static struct fx F;
static struct base bases[NBASE];
static unsigned nbase;

static uint32_t fnv1a(const unsigned char *p, size_t n)
{
	uint32_t h = 2166136261u;

	while (n--)
		h = (h ^ *p++) * 16777619u;
	return h;
}

/* The documented layout, written independently of ry_mr_pack. */
static size_t pack(const struct ry__desc *d, const unsigned char *order,
		   unsigned n, unsigned char *p)
{
	size_t len = HDR + ENT * n;
	unsigned i;

	memset(p, 0, len + 4);
	ry__put_le32(p, 0x444d5952u);
	p[4] = 1;
	p[5] = (unsigned char)n;
	ry__put_le16(p + 6, (uint16_t)d->d_access);
	ry__put_le64(p + 8, d->d_node);
	ry__put_le64(p + 16, d->d_addr);
	ry__put_le64(p + 24, d->d_len);
	for (i = 0; i < n; i++) {
		unsigned char *e = p + HDR + ENT * i;
		uint32_t gen = d->d_gen[order[i]];

		e[0] = order[i];
		e[1] = (unsigned char)gen; /* the rail's generation, 24 bits */
		e[2] = (unsigned char)(gen >> 8);
		e[3] = (unsigned char)(gen >> 16);
		ry__put_le32(e + 4, d->d_rkey[order[i]]);
	}
	ry__put_le32(p + len, fnv1a(p, len));
	return len + 4;
}

static bool same(const struct ry__desc *a, const struct ry__desc *b)
{
	return a->d_node == b->d_node && a->d_addr == b->d_addr &&
	       a->d_len == b->d_len && a->d_access == b->d_access &&
	       a->d_mask == b->d_mask &&
	       !memcmp(a->d_rkey, b->d_rkey, sizeof(a->d_rkey)) &&
	       !memcmp(a->d_gen, b->d_gen, sizeof(a->d_gen));
}

static void add_region(struct ry_manager *m, void *addr, size_t len,
		       unsigned access)
{
	struct ry_region *rg;
	struct base *b = &bases[nbase];
	struct ry__desc d;
	int n;

	if (ry_mr_reg(m, addr, len, access, &rg))
		abort();
	n = ry_mr_pack(rg, b->b, sizeof(b->b));
	if (n <= 0)
		abort();
	b->len = (size_t)n;
	/* a real descriptor must unpack to exactly what was registered */
	if (ry__desc_unpack(b->b, b->len, &d) || d.d_addr != (uintptr_t)addr ||
	    d.d_len != len || d.d_access != access || d.d_node != m->m_node ||
	    d.d_mask != (1u << m->m_nrails) - 1)
		abort();
	for (unsigned i = 0; i < m->m_nrails; i++)
		if (d.d_rkey[i] != rg->rg_mr[i]->rkey)
			abort();
	nbase++;
}

static void add_built(unsigned n, bool reversed)
{
	struct ry__desc d = {.d_node = 0x1122334455667788ull,
			     .d_addr = 0x7f0000001000ull,
			     .d_len = 1u << 20,
			     .d_access = RY_MR_REMOTE_READ};
	unsigned char order[RY_MAX_RAILS];
	struct base *b = &bases[nbase];
	struct ry__desc got;

	for (unsigned i = 0; i < n; i++) {
		order[i] = (unsigned char)(reversed ? RY_MAX_RAILS - 1 - i : i);
		d.d_rkey[order[i]] = 0x1000u + order[i];
		d.d_mask |= 1u << order[i];
	}
	b->len = pack(&d, order, n, b->b);
	/* otherwise the oracle and the unpacker disagree on the format */
	if (ry__desc_unpack(b->b, b->len, &got) || !same(&d, &got))
		abort();
	nbase++;
}

static void start(void)
{
	ry_log_set_level(RY_LOG_ERROR);
	if (fx_init(&F, &(struct fx_opts){
			    .nrails_a = 4, .nrails_b = 1, .buflen = 1u << 16}))
		abort();
	ry_log_set_level(RY_LOG_ERROR);
	bases[nbase].len = (size_t)F.desc_a_len;
	memcpy(bases[nbase++].b, F.desc_a, (size_t)F.desc_a_len);
	bases[nbase].len = (size_t)F.desc_b_len;
	memcpy(bases[nbase++].b, F.desc_b, (size_t)F.desc_b_len);
	add_region(F.a, F.bufa + 100, 1, RY_MR_REMOTE_READ);
	add_region(F.a, F.bufa + 4096, 8192, RY_MR_REMOTE_WRITE);
	add_region(F.b, F.bufb + 1, 4095, 0);
	add_built(RY_MAX_RAILS, false);
	add_built(RY_MAX_RAILS, true);
	add_built(3, true);
}

static void check(const unsigned char *p, size_t len)
{
	struct ry__desc d, poison, canon;
	unsigned char again[BUFSZ], order[RY_MAX_RAILS];
	unsigned n, i, bits;
	int ret;

	memset(&poison, 0xa5, sizeof(poison));
	d = poison;
	ret = ry__desc_unpack(p, len, &d);
	if (ret != ry_desc_check(p, len))
		abort();
	if (ret) {
		if (ret != -EBADMSG && ret != -EPROTONOSUPPORT)
			abort();
		/* a caller may look at d after a failure; it must not change */
		if (memcmp(&d, &poison, sizeof(d)))
			abort();
		return;
	}

	n = p[5];
	bits = (unsigned)__builtin_popcount(d.d_mask);
	if (!n || n > RY_MAX_RAILS || len != HDR + ENT * n + 4 || bits != n)
		abort();
	if (RY_MAX_RAILS < 32 && d.d_mask >> RY_MAX_RAILS)
		abort();
	if (d.d_access & ~(unsigned)(RY_MR_REMOTE_WRITE | RY_MR_REMOTE_READ))
		abort();
	if (!d.d_len || d.d_addr + d.d_len < d.d_addr)
		abort();
	for (i = 0; i < RY_MAX_RAILS; i++)
		if (!(d.d_mask & (1u << i)) && (d.d_rkey[i] || d.d_gen[i]))
			abort();

	for (i = 0; i < n; i++) {
		order[i] = p[HDR + ENT * i];
		if (!(d.d_mask & (1u << order[i])))
			abort();
	}
	if (pack(&d, order, n, again) != len || memcmp(again, p, len))
		abort();

	for (i = 0, n = 0; i < RY_MAX_RAILS; i++)
		if (d.d_mask & (1u << i))
			order[n++] = (unsigned char)i;
	len = pack(&d, order, n, again);
	if (ry__desc_unpack(again, len, &canon) || !same(&d, &canon))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool started;
	unsigned char buf[BUFSZ];
	unsigned char *heap;
	uint8_t steer;
	size_t len, i;

	if (!started) {
		start();
		started = true;
	}
	if (!size)
		return 0;
	steer = data[0];
	data++;
	size--;

	memset(buf, 0, sizeof(buf));
	if (!(steer & 15)) {
		if (size > sizeof(buf))
			return 0;
		memcpy(buf, data, size);
		len = size;
	} else {
		const struct base *b = &bases[((steer & 15) - 1u) % nbase];

		memcpy(buf, b->b, b->len);
		len = b->len;
		for (i = 0; i + 1 < size; i += 2)
			buf[data[i] % sizeof(buf)] = data[i + 1];
	}
	/* bytes exposed past the old end are zero or the input's patches */
	if ((steer & 0x20) && len >= 6 &&
	    HDR + ENT * buf[5] + 4u <= sizeof(buf))
		len = HDR + ENT * (size_t)buf[5] + 4;
	if ((steer & 0x10) && len >= 4)
		ry__put_le32(buf + len - 4, fnv1a(buf, len - 4));

	/* an exact-size heap copy, so a read past the end shows under ASan */
	heap = malloc(len ? len : 1);
	if (!heap)
		return 0;
	memcpy(heap, buf, len);
	check(heap, len);
	free(heap);
	return 0;
}
