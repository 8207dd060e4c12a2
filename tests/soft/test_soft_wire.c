// SPDX-License-Identifier: BSD-2-Clause
/*
 * The soft rail's wire: PSN arithmetic at the wrap, CRC32C, the header,
 * and forged packets.  A forged packet is built exactly like a real one
 * (the first case proves it lands) and then broken in one way; each must
 * be counted, dropped, and leave the target memory untouched.
 */
#include <check.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <sys/socket.h>

#include "railyard/railyard.h"
#include "rails/soft/psn.h"
#include "rails/soft/soft.h"
#include "rails/soft/soft_int.h"
#include "rails/soft/wire.h"
#include "rail/rail_conformance.h"
#include "soft/soft_provider.h"

uint32_t ry__soft_crc32c_sw(uint32_t crc, const void *buf, size_t len);

#ifndef UDP_GRO
#define UDP_GRO 104
#endif

static const unsigned ALL = RY_TEST_ACCESS_ALL;

/* ---- PSN ---- */

START_TEST(test_psn_cmp_table)
{
	static const struct {
		uint32_t a, b;
		int32_t d;
	} t[] = {
	    {0, 0, 0},
	    {1, 0, 1},
	    {0, 1, -1},
	    {0, 0xffffff, 1}, /* the wrap: 0 follows 0xffffff */
	    {0xffffff, 0, -1},
	    {5, 0xfffffb, 10},
	    {0xfffffb, 5, -10},
	    {0x7fffff, 0, 0x7fffff},  /* half the space minus one */
	    {0x800000, 0, -0x800000}, /* exactly half: "before" */
	    {0, 0x800001, 0x7fffff},
	};

	for (unsigned i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		ck_assert_msg(ry__soft_psn_cmp(t[i].a, t[i].b) == t[i].d,
			      "cmp(0x%x, 0x%x) = %d, want %d", t[i].a, t[i].b,
			      ry__soft_psn_cmp(t[i].a, t[i].b), t[i].d);
	ck_assert_uint_eq(ry__soft_psn_add(0xffffff, 1), 0);
	ck_assert_uint_eq(ry__soft_psn_add(0xfffff0, 0x20), 0x10);
	ck_assert_uint_eq(ry__soft_psn_add(0, -1), 0xffffff);
}
END_TEST

/* Whole transfers whose PSNs cross 0xffffff -> 0 on both sides. */
START_TEST(test_psn_wrap_transfers)
{
	static const uint32_t starts[] = {0xffffff, 0xfffff0, 0xfffd00};

	for (unsigned s = 0; s < 3; s++) {
		struct ry_test_pair p;

		pair_open(&p);
		pair_create_qps(&p);
		ck_assert_int_eq(ry__soft_test_set_psn(p.qp[0], starts[s]), 0);
		ck_assert_int_eq(ry__soft_test_set_psn(p.qp[1], starts[s]), 0);
		pair_connect_qps(&p);
		xfer_check(&p, RY_WR_RDMA_WRITE, 1 << 20, 1);
		xfer_check(&p, RY_WR_RDMA_READ, 1 << 20, 2);
		xfer_check(&p, RY_WR_SEND, 100000, 3);
		xfer_check(&p, RY_WR_RDMA_WRITE_IMM, 3000, 4);
		pair_close(&p);
	}
}
END_TEST

/* ---- CRC32C ---- */

START_TEST(test_crc32c)
{
	uint8_t buf[9001];

	ck_assert_uint_eq(ry__soft_crc32c(0, "123456789", 9), 0xe3069283);
	ck_assert_uint_eq(ry__soft_crc32c_sw(0, "123456789", 9), 0xe3069283);
	ck_assert_uint_eq(ry__soft_crc32c(0, "", 0), 0);
	test_fill(buf, sizeof(buf), 7);
	for (size_t off = 0; off < 9; off++)
		for (size_t len = 0; len < sizeof(buf) - off; len += 97) {
			uint32_t a = ry__soft_crc32c(0, buf + off, len);
			uint32_t b = ry__soft_crc32c_sw(0, buf + off, len);
			/* continuing over a split gives the same CRC */
			uint32_t c = ry__soft_crc32c(
			    ry__soft_crc32c(0, buf + off, len / 3),
			    buf + off + len / 3, len - len / 3);

			ck_assert_uint_eq(a, b);
			ck_assert_uint_eq(a, c);
		}
}
END_TEST

START_TEST(test_header_layout)
{
	struct ry__soft_pkt p = {
	    .opcode = RY__SOFT_OP_WRITE,
	    .flags = RY__SOFT_F_FIRST,
	    .dqpn = 0xabcdef,
	    .psn = 0xfffffe,
	    .cookie = 0x0102030405060708ull,
	    .va = 0x1122334455667788ull,
	    .rkey = 0xdeadbeef,
	    .len = 0x10000,
	    .paylen = 0x5dc,
	};
	struct ry__soft_pkt a = {
	    .opcode = RY__SOFT_OP_ACK,
	    .syndrome = 0x62,
	    .msn = 0x123456,
	    .imm = 0xcafe, /* an ACK has no immediate: not sent */
	};
	/* offset and byte: big-endian on the wire, as RoCE */
	static const uint8_t want[][2] = {
	    {0, RY__SOFT_WIRE_VERSION},
	    {1, RY__SOFT_OP_WRITE},
	    {2, RY__SOFT_F_FIRST},
	    {3, 0},
	    {4, 0xab}, /* dqpn */
	    {6, 0xef},
	    {7, 0xff}, /* psn */
	    {9, 0xfe},
	    {10, 0x05}, /* paylen */
	    {11, 0xdc},
	    {12, 0xde}, /* rkey */
	    {16, 0x01}, /* cookie */
	    {23, 0x08},
	    {24, 0x11}, /* va */
	    {31, 0x88},
	    {33, 0x01}, /* len */
	};
	struct ry__soft_hdr h;
	const uint8_t *b = (const uint8_t *)&h;

	ck_assert_uint_eq(RY__SOFT_HDR_LEN, 44);
	ry__soft_hdr_encode(&h, &p);
	ry__soft_hdr_seal(&h, NULL, 0);
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		ck_assert_msg(b[want[i][0]] == want[i][1], "byte %u: 0x%02x",
			      want[i][0], b[want[i][0]]);
	ck_assert_uint_eq(b[36] | b[37] | b[38] | b[39], 0);
	ck_assert_uint_eq(be32toh(h.crc),
			  ry__soft_crc32c(0, &h, RY__SOFT_HDR_CRC_LEN));
	/* an ACK: the syndrome in byte 3, the MSN where an immediate goes */
	ry__soft_hdr_encode(&h, &a);
	ck_assert_uint_eq(b[3], 0x62);
	ck_assert_uint_eq(b[36], 0);
	ck_assert_uint_eq(b[37], 0x12);
	ck_assert_uint_eq(b[39], 0x56);
}
END_TEST

/* ---- the decoder alone (no rail) ---- */

/* Packets as every sender builds them: each must decode to itself. */
static const struct ry__soft_pkt round_trip[] = {
    {.opcode = RY__SOFT_OP_SEND, .flags = RY__SOFT_F_FIRST, .paylen = 0},
    {.opcode = RY__SOFT_OP_WRITE,
     .flags = RY__SOFT_F_FIRST | RY__SOFT_F_LAST | RY__SOFT_F_IMM |
	      RY__SOFT_F_ACKREQ,
     .dqpn = 0xabcdef,
     .psn = 0xfffffe,
     .cookie = 0x0102030405060708ull,
     .va = 0x1122334455667788ull,
     .rkey = 0xdeadbeef,
     .len = 0x10000,
     .imm = 0xcafef00d,
     .paylen = 100},
    {.opcode = RY__SOFT_OP_SEND,
     .flags = RY__SOFT_F_LAST | RY__SOFT_F_IMM | RY__SOFT_F_RETRY,
     .dqpn = 0xffffff,
     .psn = 0xffffff,
     .cookie = UINT64_MAX,
     .va = UINT64_MAX,
     .rkey = UINT32_MAX,
     .len = UINT32_MAX,
     .imm = UINT32_MAX,
     .paylen = 1},
    {.opcode = RY__SOFT_OP_READ_REQ,
     .flags = RY__SOFT_F_FIRST | RY__SOFT_F_LAST,
     .psn = 1,
     .va = 4096,
     .rkey = 7,
     .len = 1 << 20},
    {.opcode = RY__SOFT_OP_READ_RESP,
     .flags = RY__SOFT_F_LAST,
     .syndrome = RY__SOFT_SYN_ACK,
     .msn = 0xffffff,
     .paylen = 200},
    {.opcode = RY__SOFT_OP_ACK,
     .syndrome = RY__SOFT_SYN_NAK_REM_OP,
     .msn = 0x123456,
     .psn = 0x800000},
    {.opcode = RY__SOFT_OP_ACK, .syndrome = RY__SOFT_SYN_RNR | 0x1f},
};

/* Seal the header of the len-byte packet at pkt again, after a field of it
 * was changed (pkt need not be aligned for the header's words). */
static void reseal(uint8_t *pkt, size_t len)
{
	struct ry__soft_hdr h;

	memcpy(&h, pkt, sizeof(h));
	ry__soft_hdr_seal(&h, pkt + sizeof(h), (uint32_t)(len - sizeof(h)));
	memcpy(pkt, &h, sizeof(h));
}

/* Encode and seal p with a patterned payload into pkt; the length. */
static size_t wire_build(uint8_t *pkt, const struct ry__soft_pkt *p)
{
	struct ry__soft_hdr h;

	test_fill(pkt + sizeof(h), p->paylen, p->paylen + 1);
	ry__soft_hdr_encode(&h, p);
	ry__soft_hdr_seal(&h, pkt + sizeof(h), p->paylen);
	memcpy(pkt, &h, sizeof(h));
	return sizeof(h) + p->paylen;
}

START_TEST(test_decode_round_trip)
{
	const struct ry__soft_pkt *want = &round_trip[_i];
	uint8_t pkt[512], *odd = pkt + 1;
	struct ry__soft_pkt got;
	size_t len = wire_build(pkt, want);

	ck_assert_int_eq(ry__soft_wire_decode(pkt, len, &got), 0);
	ck_assert_uint_eq(got.opcode, want->opcode);
	ck_assert_uint_eq(got.flags, want->flags);
	ck_assert_uint_eq(got.dqpn, want->dqpn);
	ck_assert_uint_eq(got.psn, want->psn);
	ck_assert_uint_eq(got.cookie, want->cookie);
	ck_assert_uint_eq(got.va, want->va);
	ck_assert_uint_eq(got.rkey, want->rkey);
	ck_assert_uint_eq(got.len, want->len);
	ck_assert_uint_eq(got.syndrome, want->syndrome);
	ck_assert_uint_eq(got.msn, want->msn);
	ck_assert_uint_eq(got.imm, want->imm);
	ck_assert_uint_eq(got.paylen, want->paylen);
	ck_assert_ptr_eq(got.payload, pkt + RY__SOFT_HDR_LEN);
	/* GRO segments start at any offset */
	memmove(odd, pkt, len);
	ck_assert_int_eq(ry__soft_wire_decode(odd, len, &got), 0);
	ck_assert_ptr_eq(got.payload, odd + RY__SOFT_HDR_LEN);
	ck_assert_uint_eq(got.cookie, want->cookie);
}
END_TEST

/* Every cut of a valid packet, header or payload, is refused. */
START_TEST(test_decode_truncated)
{
	const struct ry__soft_pkt *p = &round_trip[_i];
	uint8_t pkt[512];
	struct ry__soft_pkt got;
	size_t len = wire_build(pkt, p);

	for (size_t cut = 0; cut < len; cut++)
		ck_assert_msg(ry__soft_wire_decode(pkt, cut, &got) == -EMSGSIZE,
			      "packet %d cut to %zu: not -EMSGSIZE", _i, cut);
	/* and a byte too many: paylen is the payload's exact length, but
	 * for zeros after the last packet of a SEND, WRITE or READ
	 * response (GSO padding, wire.h), which are not payload */
	pkt[len] = 0;
	if (ry__soft_may_pad(p->opcode, p->flags)) {
		ck_assert_int_eq(ry__soft_wire_decode(pkt, len + 1, &got), 0);
		ck_assert_uint_eq(got.paylen, p->paylen);
	} else {
		ck_assert_int_eq(ry__soft_wire_decode(pkt, len + 1, &got),
				 -EMSGSIZE);
	}
}
END_TEST

/* Padding: which packets may carry it, and that it is never payload. */
START_TEST(test_decode_padding)
{
	static const struct {
		uint8_t op, flags;
		bool ok;
	} c[] = {
	    {RY__SOFT_OP_WRITE, RY__SOFT_F_LAST, true},
	    {RY__SOFT_OP_WRITE, RY__SOFT_F_FIRST | RY__SOFT_F_LAST, true},
	    {RY__SOFT_OP_SEND, RY__SOFT_F_LAST, true},
	    {RY__SOFT_OP_READ_RESP, RY__SOFT_F_LAST, true},
	    {RY__SOFT_OP_WRITE, RY__SOFT_F_FIRST, false},
	    {RY__SOFT_OP_WRITE, 0, false},
	    {RY__SOFT_OP_SEND, RY__SOFT_F_FIRST, false},
	    {RY__SOFT_OP_READ_RESP, 0, false},
	    {RY__SOFT_OP_READ_REQ, RY__SOFT_F_FIRST | RY__SOFT_F_LAST, false},
	    {RY__SOFT_OP_ACK, 0, false},
	    {RY__SOFT_OP_ACK, RY__SOFT_F_LAST, false},
	};

	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		struct ry__soft_pkt p = {.opcode = c[i].op,
					 .flags = c[i].flags,
					 .paylen = 300},
				    got;
		uint8_t pkt[1024];
		size_t len;

		if (p.opcode == RY__SOFT_OP_READ_REQ ||
		    p.opcode == RY__SOFT_OP_ACK)
			p.paylen = 0;
		len = wire_build(pkt, &p);
		memset(pkt + len, 0, 152);
		ck_assert_msg(ry__soft_wire_decode(pkt, len + 152, &got) ==
				  (c[i].ok ? 0 : -EMSGSIZE),
			      "case %zu: padding %s", i,
			      c[i].ok ? "refused" : "taken");
		if (!c[i].ok)
			continue;
		ck_assert_uint_eq(got.paylen, p.paylen);
		ck_assert_ptr_eq(got.payload, pkt + RY__SOFT_HDR_LEN);
		/* the CRC is the payload's: a bit flipped in the padding
		 * changes nothing, one in the payload is caught */
		pkt[len + 7] ^= 0x40;
		ck_assert_int_eq(ry__soft_wire_decode(pkt, len + 152, &got), 0);
		pkt[len - 1] ^= 0x40;
		ck_assert_int_eq(ry__soft_wire_decode(pkt, len + 152, &got),
				 -EBADMSG);
	}
}
END_TEST

enum bad {
	B_VERSION_0,
	B_VERSION_2,
	B_VERSION_4,
	B_SYNDROME,
	B_OPCODE_0,
	B_OPCODE_MAX,
	B_OPCODE_FF,
	B_FLAGS,
	B_PAYLEN_LONG,
	B_PAYLEN_SHORT,
	B_PAYLEN_HUGE,
	B_IMM_NOT_LAST,
	B_IMM_READ_REQ,
	B_IMM_READ_RESP,
	B_IMM_ACK,
	B_IMM_WITHOUT_FLAG,
	B_CRC_FIELD,
	B_CRC_HEADER,
	B_CRC_PAYLOAD,
	B__N
};

/* One field broken on the wire (resealed unless the CRC is the point),
 * starting from the valid WRITE with payload: what the decoder says. */
static const struct {
	const char *name;
	size_t off;  /* the byte to change */
	uint8_t val; /* its new value, or XORed in for CRC cases */
	bool reseal; /* recompute the CRC so only the field is wrong */
	int want;
} bad[B__N] = {
    [B_VERSION_0] = {"version 0", 0, 0, true, -EPROTO},
    [B_VERSION_2] = {"version 2 (56-byte header)", 0, 2, true, -EPROTO},
    [B_VERSION_4] = {"version 4", 0, 4, true, -EPROTO},
    [B_SYNDROME] = {"syndrome off an ack", 3, RY__SOFT_SYN_NAK_SEQ, true,
		    -EPROTO},
    [B_OPCODE_0] = {"opcode 0", 1, 0, true, -EPROTO},
    [B_OPCODE_MAX] = {"opcode past the last", 1, RY__SOFT_OP__MAX, true,
		      -EPROTO},
    [B_OPCODE_FF] = {"opcode 0xff", 1, 0xff, true, -EPROTO},
    [B_FLAGS] = {"unknown flag", 2, RY__SOFT_F__ALL + 1, true, -EPROTO},
    [B_PAYLEN_LONG] = {"paylen one more", 11, 101, true, -EMSGSIZE},
    /* on a LAST WRITE the 100th byte is then padding (wire.h), so the
     * CRC, sealed over 100 bytes, is what catches it */
    [B_PAYLEN_SHORT] = {"paylen one less", 11, 99, true, -EBADMSG},
    [B_PAYLEN_HUGE] = {"paylen 2^15 + 100", 10, 0x80, true, -EMSGSIZE},
    [B_IMM_NOT_LAST] = {"imm without last", 2,
			RY__SOFT_F_FIRST | RY__SOFT_F_IMM, true, -EPROTO},
    [B_IMM_READ_REQ] = {"imm on a read request", 1, RY__SOFT_OP_READ_REQ, true,
			-EPROTO},
    [B_IMM_READ_RESP] = {"imm on a read response", 1, RY__SOFT_OP_READ_RESP,
			 true, -EPROTO},
    [B_IMM_ACK] = {"imm on an ack", 1, RY__SOFT_OP_ACK, true, -EPROTO},
    [B_IMM_WITHOUT_FLAG] = {"an immediate without imm", 2,
			    RY__SOFT_F_FIRST | RY__SOFT_F_LAST |
				RY__SOFT_F_ACKREQ,
			    true, -EPROTO},
    [B_CRC_FIELD] = {"crc field", 43, 0x01, false, -EBADMSG},
    [B_CRC_HEADER] = {"header bit", 30, 0x10, false, -EBADMSG},
    [B_CRC_PAYLOAD] = {"payload bit", 44 + 99, 0x80, false, -EBADMSG},
};

START_TEST(test_decode_bad_field)
{
	uint8_t pkt[512];
	struct ry__soft_pkt got;
	size_t len;

	/* round_trip[1]: a WRITE, FIRST|LAST|IMM, 100 bytes of payload */
	ck_assert_uint_eq(round_trip[1].paylen, 100);
	len = wire_build(pkt, &round_trip[1]);
	if (bad[_i].reseal) {
		pkt[bad[_i].off] = bad[_i].val;
		reseal(pkt, len);
	} else {
		pkt[bad[_i].off] ^= bad[_i].val;
	}
	ck_assert_msg(ry__soft_wire_decode(pkt, len, &got) == bad[_i].want,
		      "%s: got %d, want %d", bad[_i].name,
		      ry__soft_wire_decode(pkt, len, &got), bad[_i].want);
}
END_TEST

/* The word an immediate and an MSN share: an MSN is 24 bits, and a READ
 * request carries neither. */
START_TEST(test_decode_shared_word)
{
	uint8_t pkt[512];
	struct ry__soft_pkt got;
	size_t len;

	/* round_trip[4]: a READ response with MSN 0xffffff */
	ck_assert_uint_eq(round_trip[4].opcode, RY__SOFT_OP_READ_RESP);
	len = wire_build(pkt, &round_trip[4]);
	ck_assert_int_eq(ry__soft_wire_decode(pkt, len, &got), 0);
	ck_assert_uint_eq(got.msn, 0xffffff);
	ck_assert_uint_eq(got.imm, 0);
	pkt[36] = 1;
	reseal(pkt, len);
	ck_assert_int_eq(ry__soft_wire_decode(pkt, len, &got), -EPROTO);
	/* round_trip[5]: an ACK */
	ck_assert_uint_eq(round_trip[5].opcode, RY__SOFT_OP_ACK);
	len = wire_build(pkt, &round_trip[5]);
	pkt[36] = 0x80;
	reseal(pkt, len);
	ck_assert_int_eq(ry__soft_wire_decode(pkt, len, &got), -EPROTO);
	/* round_trip[3]: a READ request */
	ck_assert_uint_eq(round_trip[3].opcode, RY__SOFT_OP_READ_REQ);
	len = wire_build(pkt, &round_trip[3]);
	ck_assert_int_eq(ry__soft_wire_decode(pkt, len, &got), 0);
	pkt[39] = 1;
	reseal(pkt, len);
	ck_assert_int_eq(ry__soft_wire_decode(pkt, len, &got), -EPROTO);
}
END_TEST

/* ---- forged packets ---- */

struct forge {
	struct ry_test_pair p;
	uint8_t *buf; /* 8 KiB, region = buf + 1024 .. +4096 */
	uint8_t snap[8192];
	struct ry_mr *mr;
	struct ry__soft_pkt f;
	uint8_t payload[64];
	uint8_t pkt[256];
};

static void forge_setup(struct forge *F)
{
	memset(F, 0, sizeof(*F));
	pair_open(&F->p);
	pair_connect(&F->p);
	F->buf = test_buf(8192, 3);
	ck_assert_int_eq(
	    ry__rail_reg_mr(F->p.pd[1], F->buf + 1024, 4096, ALL, &F->mr), 0);
	memcpy(F->snap, F->buf, 8192);
	test_fill(F->payload, sizeof(F->payload), 99);
	F->f = (struct ry__soft_pkt){
	    .opcode = RY__SOFT_OP_WRITE,
	    .flags = RY__SOFT_F_FIRST | RY__SOFT_F_LAST,
	    .dqpn = F->p.qp[1]->qp_num,
	    .psn = F->p.qp[0]->local.psn,
	    .cookie = F->p.qp[1]->local.cookie,
	    .va = (uintptr_t)F->mr->addr + 100,
	    .rkey = F->mr->rkey,
	    .len = sizeof(F->payload),
	    .paylen = sizeof(F->payload),
	};
}

static size_t forge_build(struct forge *F, const struct ry__soft_pkt *f)
{
	struct ry__soft_hdr h;

	ry__soft_hdr_encode(&h, f);
	ry__soft_hdr_seal(&h, F->payload, f->paylen);
	memcpy(F->pkt, &h, sizeof(h));
	memcpy(F->pkt + sizeof(h), F->payload, f->paylen);
	return sizeof(h) + f->paylen;
}

static void forge_inject(struct forge *F, size_t len, uint16_t port_delta)
{
	ry__soft_inject(F->p.r[1], F->pkt, len, F->p.qp[0]->local.gid,
			(uint16_t)(F->p.qp[0]->local.udp_port + port_delta));
}

static uint64_t stat_at(struct ry_rail *r, size_t off)
{
	struct ry_rail_stats st;

	ck_assert_int_eq(ry__rail_get_stats(r, &st), 0);
	return *(uint64_t *)(void *)((char *)&st + off);
}

#define STAT(r, f) stat_at((r), offsetof(struct ry_rail_stats, f))

static void forge_teardown(struct forge *F)
{
	ck_assert_int_eq(ry__rail_dereg_mr(F->mr), 0);
	free(F->buf);
	pair_close(&F->p);
}

START_TEST(test_forged_valid_lands)
{
	struct forge F;
	size_t len;

	forge_setup(&F);
	len = forge_build(&F, &F.f);
	forge_inject(&F, len, 0);
	ck_assert(!memcmp(F.buf + 1024 + 100, F.payload, 64));
	ck_assert(!memcmp(F.buf, F.snap, 1024 + 100));
	forge_teardown(&F);
}
END_TEST

enum mut {
	M_COOKIE,
	M_DQPN,
	M_PORT,
	M_STALE,
	M_AHEAD,
	M_WINDOW,
	M_RKEY,
	M_OOB,
	M_OVERFLOW,
	M_LEN_OVERFLOW,
	M_TRUNC,
	M_CRC,
	M_VERSION,
	M_PAYLEN,
	M_READ_OOB,
	M_READ_RKEY,
	M_IMM_FIRST,
	M__N
};

static const struct {
	const char *name;
	size_t counter;
} muts[M__N] = {
    [M_COOKIE] = {"wrong cookie",
		  offsetof(struct ry_rail_stats, rx_bad_cookie)},
    [M_DQPN] = {"wrong dest qpn", offsetof(struct ry_rail_stats, rx_bad_qpn)},
    [M_PORT] = {"wrong source port",
		offsetof(struct ry_rail_stats, rx_bad_qpn)},
    [M_STALE] = {"stale psn", offsetof(struct ry_rail_stats, dup_rcvd)},
    [M_AHEAD] = {"psn ahead", offsetof(struct ry_rail_stats, naks_sent)},
    [M_WINDOW] = {"psn out of window",
		  offsetof(struct ry_rail_stats, rx_bad_psn)},
    [M_RKEY] = {"bad rkey", offsetof(struct ry_rail_stats, rx_access_err)},
    [M_OOB] = {"out of bounds", offsetof(struct ry_rail_stats, rx_access_err)},
    [M_OVERFLOW] = {"address overflow",
		    offsetof(struct ry_rail_stats, rx_access_err)},
    [M_LEN_OVERFLOW] = {"length overflow",
			offsetof(struct ry_rail_stats, rx_access_err)},
    [M_TRUNC] = {"truncated header",
		 offsetof(struct ry_rail_stats, rx_bad_header)},
    [M_CRC] = {"bad crc", offsetof(struct ry_rail_stats, rx_bad_crc)},
    [M_VERSION] = {"bad version",
		   offsetof(struct ry_rail_stats, rx_bad_header)},
    [M_PAYLEN] = {"paylen lies", offsetof(struct ry_rail_stats, rx_bad_header)},
    [M_READ_OOB] = {"read out of bounds",
		    offsetof(struct ry_rail_stats, rx_access_err)},
    [M_READ_RKEY] = {"read bad rkey",
		     offsetof(struct ry_rail_stats, rx_access_err)},
    [M_IMM_FIRST] = {"imm on a first packet",
		     offsetof(struct ry_rail_stats, rx_bad_header)},
};

START_TEST(test_forged_rejected)
{
	struct forge F;
	struct ry__soft_pkt f;
	uint64_t before, dropped;
	uint16_t port_delta = 0;
	size_t len;

	forge_setup(&F);
	f = F.f;
	switch ((enum mut)_i) {
	case M_COOKIE:
		f.cookie ^= 1;
		break;
	case M_DQPN:
		f.dqpn ^= 0x10;
		break;
	case M_PORT:
		port_delta = 1;
		break;
	case M_STALE:
		f.psn = ry__soft_psn_add(f.psn, -1);
		break;
	case M_AHEAD:
		f.psn = ry__soft_psn_add(f.psn, 5);
		break;
	case M_WINDOW:
		f.psn = ry__soft_psn_add(f.psn, 0x600000);
		break;
	case M_RKEY:
		f.rkey ^= 0x80000000u;
		break;
	case M_OOB:
		f.va = (uintptr_t)F.mr->addr + 4096 - 10;
		break;
	case M_OVERFLOW:
		f.va = UINT64_MAX - 10;
		break;
	case M_LEN_OVERFLOW:
		f.len = UINT32_MAX;
		break;
	case M_READ_OOB:
	case M_READ_RKEY:
		f.opcode = RY__SOFT_OP_READ_REQ;
		f.paylen = 0;
		f.len = 4096;
		if (_i == M_READ_RKEY)
			f.rkey ^= 1;
		break;
	case M_IMM_FIRST:
		f.flags = RY__SOFT_F_FIRST | RY__SOFT_F_IMM;
		break;
	default:
		break;
	}
	before = stat_at(F.p.r[1], muts[_i].counter);
	dropped = stat_at(F.p.r[1], offsetof(struct ry_rail_stats, rx_dropped));
	len = forge_build(&F, &f);
	if (_i == M_TRUNC)
		len = 30;
	if (_i == M_CRC)
		F.pkt[len - 1] ^= 0x40; /* payload bit after sealing */
	if (_i == M_VERSION)
		F.pkt[0] = RY__SOFT_WIRE_VERSION + 1;
	if (_i == M_PAYLEN)
		len -= 1;
	forge_inject(&F, len, port_delta);
	pair_spin(&F.p, 5);
	ck_assert_msg(stat_at(F.p.r[1], muts[_i].counter) == before + 1,
		      "%s: counter not bumped", muts[_i].name);
	if (_i != M_STALE && _i != M_AHEAD)
		ck_assert_msg(stat_at(F.p.r[1], offsetof(struct ry_rail_stats,
							 rx_dropped)) > dropped,
			      "%s: not counted as dropped", muts[_i].name);
	ck_assert_msg(!memcmp(F.buf, F.snap, sizeof(F.snap)),
		      "%s: memory touched", muts[_i].name);
	/* Access errors end the connection, as IB's class C errors do. */
	if (muts[_i].counter == offsetof(struct ry_rail_stats, rx_access_err))
		ck_assert_int_eq(F.p.qp[1]->state, RY_QPS_ERR);
	else
		ck_assert_int_eq(F.p.qp[1]->state, RY_QPS_RTS);
	forge_teardown(&F);
}
END_TEST

/* The CRC is checked only for a packet some QP would take: a bad CRC on a
 * packet for no QP, or with the wrong cookie, is counted as that. */
START_TEST(test_crc_after_lookup)
{
	struct forge F;
	struct ry__soft_pkt f;
	uint64_t crc0, qpn0, cookie0;
	size_t len;

	forge_setup(&F);
	crc0 = STAT(F.p.r[1], rx_bad_crc);
	qpn0 = STAT(F.p.r[1], rx_bad_qpn);
	cookie0 = STAT(F.p.r[1], rx_bad_cookie);
	f = F.f;
	f.dqpn ^= 0x10;
	len = forge_build(&F, &f);
	F.pkt[len - 1] ^= 0x40;
	forge_inject(&F, len, 0);
	f = F.f;
	f.cookie ^= 1;
	len = forge_build(&F, &f);
	F.pkt[len - 1] ^= 0x40;
	forge_inject(&F, len, 0);
	ck_assert_uint_eq(STAT(F.p.r[1], rx_bad_qpn), qpn0 + 1);
	ck_assert_uint_eq(STAT(F.p.r[1], rx_bad_cookie), cookie0 + 1);
	ck_assert_uint_eq(STAT(F.p.r[1], rx_bad_crc), crc0);
	ck_assert(!memcmp(F.buf, F.snap, sizeof(F.snap)));
	forge_teardown(&F);
}
END_TEST

/* Zero-length datagrams, from the socket and injected, are counted and
 * dropped; the connection does not notice. */
START_TEST(test_empty_datagram)
{
	struct forge F;
	struct sockaddr_in to = {.sin_family = AF_INET};
	uint64_t empty0, dropped0;
	int fd;

	forge_setup(&F);
	empty0 = STAT(F.p.r[1], rx_empty);
	dropped0 = STAT(F.p.r[1], rx_dropped);
	memcpy(&to.sin_addr, F.p.qp[1]->local.gid + 12, 4);
	to.sin_port = htons(F.p.qp[1]->local.udp_port);
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	ck_assert_int_ge(fd, 0);
	for (int i = 0; i < 3; i++)
		ck_assert_int_eq(
		    sendto(fd, "", 0, 0, (struct sockaddr *)&to, sizeof(to)),
		    0);
	close(fd);
	forge_inject(&F, 0, 0);
	for (int i = 0; i < 500 && STAT(F.p.r[1], rx_empty) < empty0 + 4; i++)
		pair_spin(&F.p, 10);
	ck_assert_uint_eq(STAT(F.p.r[1], rx_empty), empty0 + 4);
	ck_assert_uint_eq(STAT(F.p.r[1], rx_dropped), dropped0 + 4);
	ck_assert_int_eq(F.p.qp[1]->state, RY_QPS_RTS);
	xfer_check(&F.p, RY_WR_RDMA_WRITE, 5000, 1);
	forge_teardown(&F);
}
END_TEST

/* ---- data_mac ---- */

static const uint8_t mac_k0[RY_QP_MAC_KEY] = {1, 2, 3}; /* 0 -> 1 */
static const uint8_t mac_k1[RY_QP_MAC_KEY] = {9, 8, 7}; /* 1 -> 0 */

/* Connect p's QPs with data_mac on (qp 0 signs under mac_k0, qp 1 under
 * mac_k1), both first PSNs at psn when it is not 0. */
static void mac_connect(struct ry_test_pair *p, uint32_t psn)
{
	pair_create_qps(p);
	for (int i = 0; psn && i < 2; i++)
		ck_assert_int_eq(ry__soft_test_set_psn(p->qp[i], psn), 0);
	pair_defaults(p);
	p->attr.mac = true;
	memcpy(p->attr.mac_tx, mac_k0, RY_QP_MAC_KEY);
	memcpy(p->attr.mac_rx, mac_k1, RY_QP_MAC_KEY);
	p->attr_set = true;
	pair_connect_qps(p);
}

/* Traffic of every kind flows with the MAC on, across the PSN wrap, and
 * no packet fails its MAC. */
START_TEST(test_mac_transfers)
{
	struct ry_test_pair p;
	struct ry_rail_stats st[2];

	pair_open(&p);
	mac_connect(&p, 0xffff00);
	xfer_check(&p, RY_WR_RDMA_WRITE, 1 << 20, 1);
	xfer_check(&p, RY_WR_RDMA_READ, 1 << 20, 2);
	xfer_check(&p, RY_WR_SEND, 3000, 3);
	xfer_check(&p, RY_WR_RDMA_WRITE_IMM, 5000, 4);
	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(ry__rail_get_stats(p.r[i], &st[i]), 0);
		ck_assert_uint_eq(st[i].rx_bad_mac, 0);
		ck_assert_uint_eq(st[i].rx_dropped, 0);
		ck_assert_int_eq(p.qp[i]->state, RY_QPS_RTS);
	}
	pair_close(&p);
}
END_TEST

enum macmut {
	MM_NONE,     /* signed by the key holder: lands (the harness works) */
	MM_NO_MAC,   /* a valid cookie, no MAC: what a sniffer can forge */
	MM_RANDOM,   /* the MAC flag and 16 random bytes */
	MM_PAYLOAD,  /* a signed packet, payload changed, CRC resealed */
	MM_HEADER,   /* ... the address changed */
	MM_REFLECT,  /* signed under the receiver's own key */
	MM_OLD_WRAP, /* signed for this PSN one wrap (2^24 packets) ago */
	MM_STRIPPED, /* a signed packet with the flag cleared */
	MM_NONCE,    /* a signed packet with another counter (nonce) */
	MM__N
};

START_TEST(test_mac_forged)
{
	struct forge F;
	struct ry__soft_hdr h;
	uint8_t mac[RY__SOFT_MAC_LEN];
	uint64_t x, bad0, dropped0;
	const uint8_t *key = mac_k0;
	size_t len;

	memset(&F, 0, sizeof(F));
	pair_open(&F.p);
	mac_connect(&F.p, 0);
	F.buf = test_buf(8192, 3);
	ck_assert_int_eq(
	    ry__rail_reg_mr(F.p.pd[1], F.buf + 1024, 4096, ALL, &F.mr), 0);
	memcpy(F.snap, F.buf, 8192);
	test_fill(F.payload, sizeof(F.payload), 99);
	F.f = (struct ry__soft_pkt){
	    .opcode = RY__SOFT_OP_WRITE,
	    .flags = RY__SOFT_F_FIRST | RY__SOFT_F_LAST | RY__SOFT_F_MAC,
	    .dqpn = F.p.qp[1]->qp_num,
	    .psn = F.p.qp[0]->local.psn,
	    .cookie = F.p.qp[1]->local.cookie,
	    .va = (uintptr_t)F.mr->addr + 100,
	    .rkey = F.mr->rkey,
	    .len = sizeof(F.payload),
	    .paylen = sizeof(F.payload),
	};
	x = RY__SOFT_XPSN_BASE + F.f.psn;
	if (_i == MM_NO_MAC)
		F.f.flags &= (uint8_t)~RY__SOFT_F_MAC;
	if (_i == MM_REFLECT)
		key = mac_k1;
	if (_i == MM_OLD_WRAP)
		x -= 1u << 24;
	ry__soft_hdr_encode(&h, &F.f);
	ry__soft_hdr_seal(&h, F.payload, F.f.paylen);
	ry__soft_mac_compute(key, 12345, x, &h, F.payload, F.f.paylen, mac);
	if (_i == MM_RANDOM)
		memset(mac, 0x5a, sizeof(mac));
	if (_i == MM_NONCE)
		mac[0] ^= 1;
	if (_i == MM_PAYLOAD)
		F.payload[7] ^= 1;
	if (_i == MM_HEADER) {
		F.f.va += 8;
		ry__soft_hdr_encode(&h, &F.f);
	}
	if (_i == MM_STRIPPED)
		h.flags &= (uint8_t)~RY__SOFT_F_MAC;
	if (_i == MM_PAYLOAD || _i == MM_HEADER || _i == MM_STRIPPED)
		ry__soft_hdr_seal(&h, F.payload,
				  F.f.paylen); /* CRC is no MAC */
	len = 0;
	memcpy(F.pkt, &h, sizeof(h));
	len += sizeof(h);
	if (_i != MM_NO_MAC && _i != MM_STRIPPED) {
		memcpy(F.pkt + len, mac, sizeof(mac));
		len += sizeof(mac);
	}
	memcpy(F.pkt + len, F.payload, F.f.paylen);
	len += F.f.paylen;
	bad0 = STAT(F.p.r[1], rx_bad_mac);
	dropped0 = STAT(F.p.r[1], rx_dropped);
	forge_inject(&F, len, 0);
	pair_spin(&F.p, 5);
	if (_i == MM_NONE) {
		ck_assert(!memcmp(F.buf + 1024 + 100, F.payload, 64));
		ck_assert_uint_eq(STAT(F.p.r[1], rx_bad_mac), bad0);
	} else {
		ck_assert_msg(STAT(F.p.r[1], rx_bad_mac) == bad0 + 1,
			      "case %d: rx_bad_mac not bumped", _i);
		ck_assert_uint_eq(STAT(F.p.r[1], rx_dropped), dropped0 + 1);
		ck_assert_msg(!memcmp(F.buf, F.snap, sizeof(F.snap)),
			      "case %d: memory touched", _i);
		/* the connection does not notice */
		ck_assert_int_eq(F.p.qp[1]->state, RY_QPS_RTS);
		xfer_check(&F.p, RY_WR_RDMA_WRITE, 5000, 1);
	}
	forge_teardown(&F);
}
END_TEST

/* A QP without data_mac does not take a packet that has one: the two
 * ends disagree, and that must not pass silently. */
START_TEST(test_mac_unexpected)
{
	struct forge F;
	struct ry__soft_hdr h;
	uint8_t mac[RY__SOFT_MAC_LEN] = {0};
	size_t len;

	forge_setup(&F);
	F.f.flags |= RY__SOFT_F_MAC;
	ry__soft_hdr_encode(&h, &F.f);
	ry__soft_hdr_seal(&h, F.payload, F.f.paylen);
	memcpy(F.pkt, &h, sizeof(h));
	memcpy(F.pkt + sizeof(h), mac, sizeof(mac));
	memcpy(F.pkt + sizeof(h) + sizeof(mac), F.payload, F.f.paylen);
	len = sizeof(h) + sizeof(mac) + F.f.paylen;
	forge_inject(&F, len, 0);
	ck_assert_uint_eq(STAT(F.p.r[1], rx_bad_mac), 1);
	ck_assert(!memcmp(F.buf, F.snap, sizeof(F.snap)));
	forge_teardown(&F);
}
END_TEST

/* A valid packet of wire version 2 (a build with a 56-byte header): dropped
 * like any bad header, nothing touched, and said once per rail, naming
 * the versions, however many arrive. */
START_TEST(test_old_version_said_once)
{
	struct forge F;
	size_t len;

	forge_setup(&F);
	test_warn_capture();
	len = forge_build(&F, &F.f);
	F.pkt[0] = 2;
	reseal(F.pkt, len);
	for (int i = 0; i < 3; i++)
		forge_inject(&F, len, 0);
	test_warn_end();
	ck_assert_uint_eq(STAT(F.p.r[1], rx_bad_header), 3);
	ck_assert(!memcmp(F.buf, F.snap, sizeof(F.snap)));
	ck_assert_uint_eq(test_warn_n, 1);
	ck_assert_msg(strstr(test_warn[0], "soft wire version 2") &&
			  strstr(test_warn[0], "speaks 3"),
		      "%s", test_warn[0]);
	/* and the connection still works */
	xfer_check(&F.p, RY_WR_RDMA_WRITE, 5000, 1);
	forge_teardown(&F);
}
END_TEST

/* Three one-packet WRITEs arrive last first: the two ahead of the gap are
 * held (nothing of them lands yet), then taken in PSN order when it
 * fills; no NAK. */
START_TEST(test_reorder_held)
{
	struct forge F;
	uint8_t pkts[3][256];
	size_t len[3];
	uint64_t naks, held;

	forge_setup(&F);
	ry__soft_test_set_hold(F.p.r[1], 60ull * 1000000000);
	for (int i = 0; i < 3; i++) {
		struct ry__soft_pkt f = F.f;

		f.psn = ry__soft_psn_add(F.f.psn, i);
		f.va = (uintptr_t)F.mr->addr + 100 + 64 * (unsigned)i;
		len[i] = forge_build(&F, &f);
		memcpy(pkts[i], F.pkt, len[i]);
	}
	naks = STAT(F.p.r[1], naks_sent);
	held = STAT(F.p.r[1], rx_held);
	for (int i = 2; i >= 0; i--) {
		memcpy(F.pkt, pkts[i], len[i]);
		forge_inject(&F, len[i], 0);
		if (i)
			ck_assert(!memcmp(F.buf, F.snap, sizeof(F.snap)));
	}
	ck_assert_uint_eq(STAT(F.p.r[1], rx_held), held + 2);
	ck_assert_uint_eq(STAT(F.p.r[1], naks_sent), naks);
	for (int i = 0; i < 3; i++)
		ck_assert(!memcmp(F.buf + 1024 + 100 + 64 * i, F.payload, 64));
	ck_assert_uint_eq(to_sqp(F.p.qp[1])->resp.psn,
			  ry__soft_psn_add(F.f.psn, 3));
	ck_assert_int_eq(F.p.qp[1]->state, RY_QPS_RTS);
	forge_teardown(&F);
}
END_TEST

/* A gap that does not fill: once the hold time is up the packet ahead of
 * it is NAKed and dropped, as without holding; sent again after the
 * missing one (a go-back-N), both land. */
START_TEST(test_reorder_gap_expires)
{
	struct forge F;
	struct ry__soft_pkt f;
	uint8_t ahead[256];
	size_t alen, len;
	uint64_t naks, held;

	forge_setup(&F);
	ry__soft_test_set_hold(F.p.r[1], 2000000); /* 2 ms */
	f = F.f;
	f.psn = ry__soft_psn_add(F.f.psn, 1);
	f.va = (uintptr_t)F.mr->addr + 164;
	alen = forge_build(&F, &f);
	memcpy(ahead, F.pkt, alen);
	naks = STAT(F.p.r[1], naks_sent);
	held = STAT(F.p.r[1], rx_held);
	forge_inject(&F, alen, 0);
	ck_assert_uint_eq(STAT(F.p.r[1], rx_held), held + 1);
	ck_assert_uint_eq(STAT(F.p.r[1], naks_sent), naks);
	/* progress lets it go after 2 ms; bounded by a generous wait */
	for (int i = 0; i < 500 && STAT(F.p.r[1], naks_sent) == naks; i++)
		pair_spin(&F.p, 10);
	ck_assert_uint_eq(STAT(F.p.r[1], naks_sent), naks + 1);
	ck_assert(!memcmp(F.buf, F.snap, sizeof(F.snap)));
	len = forge_build(&F, &F.f);
	forge_inject(&F, len, 0);
	memcpy(F.pkt, ahead, alen);
	forge_inject(&F, alen, 0);
	ck_assert(!memcmp(F.buf + 1024 + 100, F.payload, 64));
	ck_assert(!memcmp(F.buf + 1024 + 164, F.payload, 64));
	ck_assert_uint_eq(to_sqp(F.p.qp[1])->resp.psn,
			  ry__soft_psn_add(F.f.psn, 2));
	forge_teardown(&F);
}
END_TEST

/* A QP in ERR drops a replay of a packet it would have accepted. */
START_TEST(test_err_qp_drops_replay)
{
	struct forge F;
	size_t len;

	forge_setup(&F);
	len = forge_build(&F, &F.f);
	ck_assert_int_eq(ry__rail_modify_qp(F.p.qp[1], RY_QPS_ERR, NULL), 0);
	forge_inject(&F, len, 0);
	ck_assert_uint_eq(stat_at(F.p.r[1], offsetof(struct ry_rail_stats,
						     rx_qp_err_dropped)),
			  1);
	ck_assert(!memcmp(F.buf, F.snap, sizeof(F.snap)));
	forge_teardown(&F);
}
END_TEST

/* Reconnecting the same two rails gives new QPNs, PSNs and cookies; a
 * packet of the old connection lands nowhere. */
START_TEST(test_new_qp_rejects_old)
{
	struct forge F;
	struct ry__soft_pkt old;
	uint8_t oldpkt[256];
	size_t len;

	forge_setup(&F);
	old = F.f;
	len = forge_build(&F, &old);
	memcpy(oldpkt, F.pkt, len);
	/* the old connection dies on both sides and is torn down */
	for (int i = 0; i < 2; i++) {
		ck_assert_int_eq(
		    ry__rail_modify_qp(F.p.qp[i], RY_QPS_ERR, NULL), 0);
		ck_assert_int_eq(ry__rail_destroy_qp(F.p.qp[i]), 0);
	}
	pair_connect(&F.p);
	ck_assert_uint_ne(F.p.qp[1]->local.cookie, old.cookie);
	forge_inject(&F, len, 0);
	ck_assert_uint_eq(
	    stat_at(F.p.r[1], offsetof(struct ry_rail_stats, rx_bad_qpn)), 1);
	/* the old packet aimed at the new QPN: the cookie gives it away */
	old.dqpn = F.p.qp[1]->qp_num;
	len = forge_build(&F, &old);
	forge_inject(&F, len, 0);
	ck_assert_uint_eq(
	    stat_at(F.p.r[1], offsetof(struct ry_rail_stats, rx_bad_cookie)),
	    1);
	ck_assert(!memcmp(F.buf, F.snap, sizeof(F.snap)));
	/* and the new connection works */
	xfer_check(&F.p, RY_WR_RDMA_WRITE, 5000, 1);
	forge_teardown(&F);
}
END_TEST

/*
 * Many 4 KiB messages posted at once at MTU 1500 (three packets each, the
 * last short): the short last packets are padded so that the next
 * message joins the same GSO datagram (soft_net.c).  Every byte lands
 * where it belongs, the guard bytes are untouched, and the padding is
 * counted; with the receiver's UDP_GRO off (the kernel splits the
 * datagram) as with it on.  WRITE and SEND pad at the requester, READ at
 * the responder.  Cases 6-8: the padding QP's RTT says the path holds a
 * standing queue (a link that is the bottleneck), so nothing is padded
 * and the messages still arrive whole.
 */
enum { PAD_MSGS = 40, PAD_LEN = 4096 };

START_TEST(test_small_messages_padded)
{
	static const enum ry_wr_opcode ops[] = {RY_WR_RDMA_WRITE, RY_WR_SEND,
						RY_WR_RDMA_READ};
	enum ry_wr_opcode op = ops[_i % 3];
	bool read = op == RY_WR_RDMA_READ, send = op == RY_WR_SEND;
	struct ry_test_pair p;
	struct region src, dst;
	uint8_t *ref;
	uint32_t pmtu, last, pad;
	uint64_t before;
	int padder = read ? 1 : 0, sink = read ? 0 : 1, off = 0;

	pair_open(&p);
	pair_connect(&p);
	if (_i >= 3 && _i < 6) {
		ck_assert_int_eq(setsockopt(to_srail(p.r[sink])->sock,
					    IPPROTO_UDP, UDP_GRO, &off,
					    sizeof(off)),
				 0);
	}
	if (_i >= 6) {
		struct ry__soft_cc *cc = &to_sqp(p.qp[padder])->cc;

		/* 10 s of queue: the few RTT samples this case takes
		 * (srtt moves an eighth of the way each) leave it queued */
		cc->min_rtt = 50000;
		cc->srtt = 10000000000ull;
		ck_assert(ry__soft_cc_queued(to_sqp(p.qp[padder])));
	}
	pmtu = to_sqp(p.qp[0])->pmtu;
	/* The whole window from the start, so that all the WRITEs or SENDs
	 * leave in the first progress call, before any RTT sample: how many
	 * are padded then depends on nothing a loaded machine changes.  A
	 * READ's responses go four at a time (max_rd_atomic). */
	if (_i < 6 && !read) {
		struct ry__soft_qp *q = to_sqp(p.qp[0]);

		q->cc.cwnd = q->cc.ssthresh = q->window;
	}
	ck_assert_uint_lt(2 * pmtu, PAD_LEN); /* three packets... */
	ck_assert_uint_gt(3 * pmtu, PAD_LEN);
	last = PAD_LEN - 2 * pmtu; /* ...the last one short */
	pad = pmtu - last;
	region_get(&p, read ? 1 : 0, &src, PAD_MSGS * PAD_LEN, 5, ALL);
	region_get(&p, read ? 0 : 1, &dst, PAD_MSGS * PAD_LEN, 6, ALL);
	ref = malloc(PAD_MSGS * PAD_LEN + 2 * GUARD);
	ck_assert_ptr_nonnull(ref);
	memcpy(ref, dst.buf, PAD_MSGS * PAD_LEN + 2 * GUARD);
	memcpy(ref + GUARD, src.buf + GUARD, PAD_MSGS * PAD_LEN);
	before = STAT(p.r[padder], tx_pad_bytes);
	for (int k = 0; k < PAD_MSGS; k++) {
		struct ry_send_wr wr;

		if (send) {
			struct ry_recv_wr rw = {
			    .wr_id = 100 + (uint64_t)k,
			    .sge = {.addr = (uintptr_t)dst.mr->addr +
					    (uint64_t)k * PAD_LEN,
				    .length = PAD_LEN,
				    .lkey = dst.mr->lkey},
			};

			ck_assert_int_eq(ry__rail_post_recv(p.r[1], &rw, 1), 0);
		}
		wr = read ? wr_make(op, &dst, &src, PAD_LEN, (uint64_t)k)
			  : wr_make(op, &src, send ? NULL : &dst, PAD_LEN,
				    (uint64_t)k);
		wr.sge.addr += (uint64_t)k * PAD_LEN;
		if (!send)
			wr.remote_addr += (uint64_t)k * PAD_LEN;
		ck_assert_int_eq(ry__rail_post_send(p.qp[0], &wr, 1), 0);
	}
	for (int k = 0; k < PAD_MSGS; k++) {
		struct ry_wc wc;

		pair_wait_wc(&p, 0, &wc, 30000);
		ck_assert_msg(wc.status == RY_WC_SUCCESS, "wr %d: %s", k,
			      ry_wc_status_str(wc.status));
		ck_assert_uint_eq(wc.wr_id, (uint64_t)k);
		if (send) {
			pair_wait_wc(&p, 1, &wc, 30000);
			ck_assert_int_eq(wc.status, RY_WC_SUCCESS);
			ck_assert_uint_eq(wc.wr_id, 100 + (uint64_t)k);
			ck_assert_uint_eq(wc.byte_len, PAD_LEN);
		}
	}
	ck_assert_msg(!memcmp(dst.buf, ref, PAD_MSGS * PAD_LEN + 2 * GUARD),
		      "data or guard bytes wrong");
	/* the messages went out in few datagrams: most were padded, each
	 * by exactly what its last packet lacked */
	if (_i >= 6)
		ck_assert_uint_eq(STAT(p.r[padder], tx_pad_bytes), before);
	else
		ck_assert_uint_ge(STAT(p.r[padder], tx_pad_bytes) - before,
				  (uint64_t)(read ? 3 : PAD_MSGS / 2) * pad);
	ck_assert_uint_eq((STAT(p.r[padder], tx_pad_bytes) - before) % pad, 0);
	ck_assert_uint_eq(STAT(p.r[sink], rx_dropped), 0);
	free(ref);
	region_put(&src);
	region_put(&dst);
	pair_close(&p);
}
END_TEST

/* A clean path needs no retransmission and far fewer ACKs than packets:
 * a lost packet in the sender's own batching would show up here. */
START_TEST(test_clean_path)
{
	struct ry_test_pair p;
	struct ry_rail_stats st[2];

	pair_open(&p);
	p.attr_set = true;
	p.attr = (struct ry_qp_attr){.access = ALL,
				     .ack_timeout_us = 500000,
				     .retry_cnt = 6,
				     .rnr_retry = 6,
				     .max_rd_atomic = 4};
	pair_connect(&p);
	for (int i = 0; i < 4; i++)
		xfer_check(&p, RY_WR_RDMA_WRITE, 8 << 20, (unsigned)i);
	for (int i = 0; i < 2; i++)
		ck_assert_int_eq(ry__rail_get_stats(p.r[i], &st[i]), 0);
	ck_assert_uint_eq(st[0].retransmits, 0);
	ck_assert_uint_eq(st[1].naks_sent, 0);
	ck_assert_uint_eq(st[1].rx_dropped, 0);
	ck_assert_uint_gt(st[0].tx_packets,
			  4 * (8 << 20) /
			      (1500 - RY__SOFT_IP_UDP_HDR - RY__SOFT_HDR_LEN));
	/* coalesced: one ACK covers many packets */
	ck_assert_uint_lt(st[1].tx_packets * 8, st[0].tx_packets);
	pair_close(&p);
}
END_TEST

/* A duplicate READ request is executed again (its responses re-sent), and
 * the requester, which already has them, takes none of their bytes. */
START_TEST(test_dup_read_reexecuted)
{
	struct forge F;
	struct ry__soft_pkt f;
	struct ry_rail_stats before, after;
	struct ry_send_wr wr;
	struct ry_mr *lmr;
	struct ry_wc wc;
	uint8_t *local = test_buf(4096, 5), snap[4096];
	size_t len;

	forge_setup(&F);
	ck_assert_int_eq(ry__rail_reg_mr(F.p.pd[0], local, 4096, ALL, &lmr), 0);
	wr = (struct ry_send_wr){
	    .wr_id = 1,
	    .opcode = RY_WR_RDMA_READ,
	    .sge = {(uintptr_t)local, 4096, lmr->lkey},
	    .remote_addr = (uintptr_t)F.mr->addr,
	    .rkey = F.mr->rkey,
	};
	ck_assert_int_eq(ry__rail_post_send(F.p.qp[0], &wr, 1), 0);
	pair_wait_wc(&F.p, 0, &wc, 5000);
	ck_assert_int_eq(wc.status, RY_WC_SUCCESS);
	ck_assert(!memcmp(local, F.mr->addr, 4096));
	memset(local, 0xee, 4096);
	memcpy(snap, local, 4096);
	f = F.f;
	f.opcode = RY__SOFT_OP_READ_REQ;
	f.va = (uintptr_t)F.mr->addr;
	f.len = 4096;
	f.paylen = 0;
	len = forge_build(&F, &f);
	ck_assert_int_eq(ry__rail_get_stats(F.p.r[1], &before), 0);
	forge_inject(&F, len, 0);
	pair_spin(&F.p, 5);
	ck_assert_int_eq(ry__rail_get_stats(F.p.r[1], &after), 0);
	ck_assert_uint_eq(after.dup_rcvd, before.dup_rcvd + 1);
	/* 4096 bytes at 1428 per packet: three responses again */
	ck_assert_uint_ge(after.tx_packets, before.tx_packets + 3);
	ck_assert(!memcmp(local, snap, 4096));
	ck_assert_int_eq(F.p.qp[1]->state, RY_QPS_RTS);
	ck_assert_int_eq(ry__rail_dereg_mr(lmr), 0);
	free(local);
	forge_teardown(&F);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("soft_wire");
	TCase *tc = tcase_create("wire");
	SRunner *sr;
	int failed;

	ry_test_provider = &ry__soft_test_provider;
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_psn_cmp_table);
	tcase_add_test(tc, test_psn_wrap_transfers);
	tcase_add_test(tc, test_clean_path);
	tcase_add_loop_test(tc, test_small_messages_padded, 0, 9);
	tcase_add_test(tc, test_crc32c);
	tcase_add_test(tc, test_header_layout);
	tcase_add_test(tc, test_forged_valid_lands);
	tcase_add_loop_test(tc, test_forged_rejected, 0, M__N);
	tcase_add_test(tc, test_err_qp_drops_replay);
	tcase_add_test(tc, test_old_version_said_once);
	tcase_add_test(tc, test_reorder_held);
	tcase_add_test(tc, test_reorder_gap_expires);
	tcase_add_test(tc, test_crc_after_lookup);
	tcase_add_test(tc, test_empty_datagram);
	tcase_add_test(tc, test_mac_transfers);
	tcase_add_loop_test(tc, test_mac_forged, 0, MM__N);
	tcase_add_test(tc, test_mac_unexpected);
	tcase_add_test(tc, test_dup_read_reexecuted);
	tcase_add_test(tc, test_new_qp_rejects_old);
	suite_add_tcase(s, tc);
	tc = tcase_create("decode");
	tcase_add_loop_test(tc, test_decode_round_trip, 0,
			    sizeof(round_trip) / sizeof(round_trip[0]));
	tcase_add_loop_test(tc, test_decode_truncated, 0,
			    sizeof(round_trip) / sizeof(round_trip[0]));
	tcase_add_test(tc, test_decode_shared_word);
	tcase_add_loop_test(tc, test_decode_bad_field, 0, B__N);
	tcase_add_test(tc, test_decode_padding);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
