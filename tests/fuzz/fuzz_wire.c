// SPDX-License-Identifier: BSD-2-Clause
/*
 * libFuzzer target for the control protocol's codec (src/ctl/wire.c),
 * without a manager: the first byte picks a frame type (and for HELLO
 * whether it is a HELLO_ACK), the rest is a frame body.
 *
 * Checked: decoding arbitrary bytes never reads outside them (ASan: the
 * body is copied to a buffer of exactly its size); what decodes
 * re-encodes, and decode(encode(x)) == x field for field; encoding twice
 * gives the same bytes; a frame header round-trips.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "src/ctl/wire.h"

static unsigned char enc1[RY__CTL_MAX_FRAME], enc2[RY__CTL_MAX_FRAME];

static void fail(const char *what, unsigned type)
{
	fprintf(stderr, "fuzz_wire: type %u: %s\n", type, what);
	abort();
}

/* Encoded bodies of one message, twice: the same bytes. */
static void same(const struct ry__wbuf *a, const struct ry__wbuf *b,
		 unsigned type)
{
	if (a->bad || b->bad)
		fail("a decoded message does not encode", type);
	if (a->n != b->n || memcmp(a->b, b->b, a->n))
		fail("two encodings differ", type);
}

static void hello(const unsigned char *body, size_t n, bool reply)
{
	static struct ry__wire_hello x, y;
	struct ry__wbuf w1, w2;

	memset(&x, 0, sizeof(x));
	if (ry__wire_hello_get(body, n, reply, &x))
		return;
	ry__wbuf_init(&w1, enc1, sizeof(enc1));
	ry__wire_hello_put(&w1, &x, reply);
	memset(&y, 0, sizeof(y));
	if (ry__wire_hello_get(w1.b, w1.n, reply, &y))
		fail("a re-encoded HELLO does not decode", CTL_HELLO);
	if (memcmp(&x, &y, sizeof(x)))
		fail("HELLO: decode(encode(x)) != x", CTL_HELLO);
	ry__wbuf_init(&w2, enc2, sizeof(enc2));
	ry__wire_hello_put(&w2, &y, reply);
	same(&w1, &w2, CTL_HELLO);
	/* a buffer too small for it marks the writer bad, never overflows */
	if (w1.n) {
		ry__wbuf_init(&w2, enc2, w1.n - 1);
		ry__wire_hello_put(&w2, &x, reply);
		if (!w2.bad || w2.n > w1.n - 1)
			fail("a short buffer took the HELLO", CTL_HELLO);
	}
}

static void conn(const unsigned char *body, size_t n, uint16_t type)
{
	struct ry__wire_conn x, y;
	struct ry__wbuf w1, w2;

	if (ry__wire_conn_get(body, n, type, &x))
		return;
	ry__wbuf_init(&w1, enc1, sizeof(enc1));
	ry__wire_conn_put(&w1, type, &x);
	if (ry__wire_conn_get(w1.b, w1.n, type, &y))
		fail("a re-encoded CONN does not decode", type);
	if (memcmp(&x, &y, sizeof(x)))
		fail("CONN: decode(encode(x)) != x", type);
	ry__wbuf_init(&w2, enc2, sizeof(enc2));
	ry__wire_conn_put(&w2, type, &y);
	same(&w1, &w2, type);
}

static void fence(const unsigned char *body, size_t n, bool ack)
{
	struct ry__wire_fence x, y;
	struct ry__wbuf w1, w2;
	unsigned type = ack ? CTL_FENCE_ACK : CTL_FENCE_REQ;

	if (ry__wire_fence_get(body, n, ack, &x))
		return;
	ry__wbuf_init(&w1, enc1, sizeof(enc1));
	ry__wire_fence_put(&w1, ack, &x);
	if (ry__wire_fence_get(w1.b, w1.n, ack, &y))
		fail("a re-encoded FENCE does not decode", type);
	if (memcmp(&x, &y, sizeof(x)))
		fail("FENCE: decode(encode(x)) != x", type);
	ry__wbuf_init(&w2, enc2, sizeof(enc2));
	ry__wire_fence_put(&w2, ack, &y);
	same(&w1, &w2, type);
}

static void auth(const unsigned char *body, size_t n)
{
	unsigned char x[RY__CTL_MAC], y[RY__CTL_MAC];
	struct ry__wbuf w;

	if (ry__wire_auth_get(body, n, x)) {
		if (n == RY__CTL_MAC)
			fail("a proof-sized AUTH refused", CTL_AUTH);
		return;
	}
	ry__wbuf_init(&w, enc1, sizeof(enc1));
	ry__wire_auth_put(&w, x);
	if (ry__wire_auth_get(w.b, w.n, y) || memcmp(x, y, sizeof(x)))
		fail("AUTH: decode(encode(x)) != x", CTL_AUTH);
}

static void refuse(const unsigned char *body, size_t n)
{
	static unsigned char ids[RY__CTL_KEY_IDS][RY__CTL_KEY_ID],
	    back[RY__CTL_KEY_IDS][RY__CTL_KEY_ID];
	uint8_t x = ry__wire_refuse_get(body, n);
	int k = ry__wire_refuse_ids(body, n, ids);
	struct ry__wbuf w;

	ry__wbuf_init(&w, enc1, sizeof(enc1));
	ry__wire_refuse_put(&w, x);
	if (k > 0)
		ry__w_key_ids(&w, (const unsigned char(*)[RY__CTL_KEY_ID])ids,
			      (unsigned)k);
	if (ry__wire_refuse_get(w.b, w.n) != x)
		fail("REFUSE: decode(encode(x)) != x", CTL_REFUSE);
	if (k > 0 && (ry__wire_refuse_ids(w.b, w.n, back) != k ||
		      memcmp(ids, back, (size_t)k * RY__CTL_KEY_ID)))
		fail("REFUSE: key ids: decode(encode(x)) != x", CTL_REFUSE);
}

static void goodbye(const unsigned char *body, size_t n)
{
	struct ry__wire_goodbye x, y;
	struct ry__wbuf w1, w2;

	if (ry__wire_goodbye_get(body, n, &x)) {
		if (n == 9 && body[8] >= BYE_CLOSING && body[8] <= BYE_DROPPED)
			fail("a well-formed GOODBYE refused", CTL_GOODBYE);
		return;
	}
	ry__wbuf_init(&w1, enc1, sizeof(enc1));
	ry__wire_goodbye_put(&w1, &x);
	if (ry__wire_goodbye_get(w1.b, w1.n, &y) || x.wg_node != y.wg_node ||
	    x.wg_why != y.wg_why)
		fail("GOODBYE: decode(encode(x)) != x", CTL_GOODBYE);
	ry__wbuf_init(&w2, enc2, sizeof(enc2));
	ry__wire_goodbye_put(&w2, &y);
	same(&w1, &w2, CTL_GOODBYE);
}

static void header(const unsigned char *body, size_t n, uint16_t type)
{
	unsigned char f[RY__CTL_HDR + 64];
	struct ry__ctl_hdr h;
	size_t len = n < 64 ? n : 64;

	if (ry__wire_frame(f, sizeof(f), type, body, len) !=
	    (int)(RY__CTL_HDR + len))
		fail("a frame that fits was refused", type);
	ry__ctl_hdr_get(f, &h);
	if (h.h_len != len || h.h_type != type || h.h_ver != RY__CTL_VERSION ||
	    memcmp(f + RY__CTL_HDR, body, len))
		fail("frame header round trip", type);
	if (ry__wire_frame(f, RY__CTL_HDR + len - 1, type, body, len) >= 0)
		fail("a frame that does not fit was taken", type);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	unsigned char *body;
	uint16_t type;
	size_t n;

	if (size < 1)
		return 0;
	type = (uint16_t)(data[0] % (CTL_GOODBYE + 1));
	n = size - 1;
	/* exactly n bytes: a read past them is an ASan report */
	body = malloc(n ? n : 1);
	if (!body)
		abort();
	memcpy(body, data + 1, n);
	switch (type) {
	case CTL_HELLO:
	case CTL_HELLO_ACK:
		hello(body, n, type == CTL_HELLO_ACK);
		break;
	case CTL_CONN_REQ:
	case CTL_CONN_REP:
	case CTL_CONN_REJ:
		conn(body, n, type);
		break;
	case CTL_FENCE_REQ:
	case CTL_FENCE_ACK:
		fence(body, n, type == CTL_FENCE_ACK);
		break;
	case CTL_AUTH:
		auth(body, n);
		break;
	case CTL_REFUSE:
		refuse(body, n);
		break;
	case CTL_GOODBYE:
		goodbye(body, n);
		break;
	default:
		header(body, n, data[0]);
	}
	free(body);
	return 0;
}
