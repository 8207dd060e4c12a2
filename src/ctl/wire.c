// SPDX-License-Identifier: BSD-2-Clause
/* The control protocol's codec and the rail message header (wire.h). */
#include <endian.h>
#include <errno.h>
#include <string.h>

#include "src/ctl/wire.h"
#include "src/util/le.h"

_Static_assert(sizeof(struct ry__mhdr) == 40, "rail message header");
_Static_assert(RY__WIRE_FENCE_MAX <= RY__CTL_MAX_FRAME,
	       "a FENCE_REQ of every pair fits a frame");

void ry__ctl_hdr_put(void *b, uint32_t len, uint16_t type)
{
	unsigned char *p = b;

	ry__put_le32(p, len);
	ry__put_le16(p + 4, type);
	ry__put_le16(p + 6, RY__CTL_VERSION);
}

void ry__ctl_hdr_get(const void *b, struct ry__ctl_hdr *h)
{
	const unsigned char *p = b;

	h->h_len = ry__get_le32(p);
	h->h_type = ry__get_le16(p + 4);
	h->h_ver = ry__get_le16(p + 6);
}

/* ---- fields ---- */

void ry__wbuf_init(struct ry__wbuf *w, void *b, size_t cap)
{
	w->b = b;
	w->cap = cap;
	w->n = 0;
	w->bad = false;
}

void ry__w_bytes(struct ry__wbuf *w, const void *p, size_t n)
{
	if (w->bad || n > w->cap - w->n) {
		w->bad = true;
		return;
	}
	memcpy(w->b + w->n, p, n);
	w->n += n;
}

void ry__w_u8(struct ry__wbuf *w, uint8_t v)
{
	ry__w_bytes(w, &v, 1);
}

void ry__w_u16(struct ry__wbuf *w, uint16_t v)
{
	unsigned char b[2];

	ry__put_le16(b, v);
	ry__w_bytes(w, b, 2);
}

void ry__w_u32(struct ry__wbuf *w, uint32_t v)
{
	unsigned char b[4];

	ry__put_le32(b, v);
	ry__w_bytes(w, b, 4);
}

void ry__w_u64(struct ry__wbuf *w, uint64_t v)
{
	unsigned char b[8];

	ry__put_le64(b, v);
	ry__w_bytes(w, b, 8);
}

void ry__w_str(struct ry__wbuf *w, const char *s)
{
	size_t n = strlen(s);

	if (n > UINT16_MAX) {
		w->bad = true;
		return;
	}
	ry__w_u16(w, (uint16_t)n);
	ry__w_bytes(w, s, n);
}

void ry__w_ep(struct ry__wbuf *w, const struct ry_qp_endpoint *ep)
{
	ry__w_u32(w, ep->qpn);
	ry__w_u32(w, ep->psn);
	ry__w_u64(w, ep->cookie);
	ry__w_bytes(w, ep->gid, 16);
	ry__w_u16(w, ep->lid);
	ry__w_u16(w, ep->udp_port);
	ry__w_u32(w, ep->mtu);
}

void ry__rbuf_init(struct ry__rbuf *r, const void *p, size_t n)
{
	r->p = p;
	r->n = n;
	r->bad = false;
}

void ry__r_bytes(struct ry__rbuf *r, void *out, size_t n)
{
	if (r->n < n) {
		r->bad = true;
		memset(out, 0, n);
		return;
	}
	memcpy(out, r->p, n);
	r->p += n;
	r->n -= n;
}

uint8_t ry__r_u8(struct ry__rbuf *r)
{
	uint8_t v;

	ry__r_bytes(r, &v, 1);
	return v;
}

uint16_t ry__r_u16(struct ry__rbuf *r)
{
	unsigned char b[2];

	ry__r_bytes(r, b, 2);
	return ry__get_le16(b);
}

uint32_t ry__r_u32(struct ry__rbuf *r)
{
	unsigned char b[4];

	ry__r_bytes(r, b, 4);
	return ry__get_le32(b);
}

uint64_t ry__r_u64(struct ry__rbuf *r)
{
	unsigned char b[8];

	ry__r_bytes(r, b, 8);
	return ry__get_le64(b);
}

void ry__r_str(struct ry__rbuf *r, char *out, size_t cap)
{
	size_t n = ry__r_u16(r);

	if (n >= cap || r->n < n) {
		r->bad = true;
		out[0] = 0;
		return;
	}
	ry__r_bytes(r, out, n);
	/* a C string: an embedded NUL ends it, and what follows is not
	 * kept (so a decoded string encodes back to itself) */
	n = strnlen(out, n);
	memset(out + n, 0, cap - n);
}

void ry__r_ep(struct ry__rbuf *r, struct ry_qp_endpoint *ep)
{
	ep->qpn = ry__r_u32(r);
	ep->psn = ry__r_u32(r);
	ep->cookie = ry__r_u64(r);
	ry__r_bytes(r, ep->gid, 16);
	ep->lid = ry__r_u16(r);
	ep->udp_port = ry__r_u16(r);
	ep->mtu = ry__r_u32(r);
}

void ry__w_key_ids(struct ry__wbuf *w,
		   const unsigned char (*ids)[RY__CTL_KEY_ID], unsigned n)
{
	if (!n || n > RY__CTL_KEY_IDS) {
		w->bad = true;
		return;
	}
	ry__w_u8(w, (uint8_t)n);
	ry__w_bytes(w, ids, n * RY__CTL_KEY_ID);
}

/* A list's count, its ids into ids[]; 0 (and r bad) if malformed. */
static unsigned r_key_ids(struct ry__rbuf *r,
			  unsigned char ids[RY__CTL_KEY_IDS][RY__CTL_KEY_ID])
{
	unsigned n = ry__r_u8(r);

	if (!n || n > RY__CTL_KEY_IDS || r->n < n * RY__CTL_KEY_ID) {
		r->bad = true;
		return 0;
	}
	ry__r_bytes(r, ids, n * RY__CTL_KEY_ID);
	return n;
}

/* ---- frame bodies ---- */

void ry__wire_hello_put(struct ry__wbuf *w, const struct ry__wire_hello *h,
			bool with_proof)
{
	unsigned i;

	if (h->wh_n > RY_MAX_RAILS) {
		w->bad = true;
		return;
	}
	ry__w_u64(w, h->wh_node);
	ry__w_str(w, h->wh_name);
	ry__w_str(w, h->wh_addr);
	ry__w_u8(w, (uint8_t)h->wh_n);
	for (i = 0; i < h->wh_n; i++) {
		ry__w_str(w, h->wh_rail[i].wr_name);
		ry__w_str(w, h->wh_rail[i].wr_network);
		ry__w_ep(w, &h->wh_rail[i].wr_ep);
	}
	ry__w_u8(w, h->wh_auth ? 1 | (h->wh_data_mac ? 2 : 0) : 0);
	if (!h->wh_auth)
		return;
	ry__w_bytes(w, h->wh_nonce, RY__CTL_NONCE);
	if (h->wh_nids)
		ry__w_key_ids(w,
			      (const unsigned char(*)[RY__CTL_KEY_ID])h->wh_ids,
			      h->wh_nids);
	if (with_proof)
		ry__w_bytes(w, h->wh_proof, RY__CTL_MAC);
}

int ry__wire_hello_get(const void *body, size_t n, bool reply,
		       struct ry__wire_hello *h)
{
	struct ry__rbuf r;
	unsigned i;
	uint8_t auth;

	ry__rbuf_init(&r, body, n);
	h->wh_nids = 0;
	h->wh_node = ry__r_u64(&r);
	ry__r_str(&r, h->wh_name, sizeof(h->wh_name));
	ry__r_str(&r, h->wh_addr, sizeof(h->wh_addr));
	h->wh_n = ry__r_u8(&r);
	if (h->wh_n > RY_MAX_RAILS || !h->wh_node)
		return -EBADMSG;
	for (i = 0; i < h->wh_n; i++) {
		struct ry__wire_rail *wr = &h->wh_rail[i];

		ry__r_str(&r, wr->wr_name, sizeof(wr->wr_name));
		ry__r_str(&r, wr->wr_network, sizeof(wr->wr_network));
		ry__r_ep(&r, &wr->wr_ep);
	}
	auth = ry__r_u8(&r);
	if (auth > 3 || auth == 2)
		return -EBADMSG;
	h->wh_auth = auth & 1;
	h->wh_data_mac = auth & 2;
	if (h->wh_auth) {
		ry__r_bytes(&r, h->wh_nonce, RY__CTL_NONCE);
		/* optional: a peer with one key may send no ids; a
		 * HELLO_ACK names exactly one */
		if (reply ? r.n > RY__CTL_MAC : r.n > 0)
			h->wh_nids = r_key_ids(&r, h->wh_ids);
		if (reply && h->wh_nids > 1)
			return -EBADMSG;
		if (reply)
			ry__r_bytes(&r, h->wh_proof, RY__CTL_MAC);
		/* the proof must be the last RY__CTL_MAC bytes: nothing
		 * after (without a key, later fields may follow) */
		if (r.n)
			return -EBADMSG;
	}
	return r.bad ? -EBADMSG : 0;
}

void ry__wire_conn_put(struct ry__wbuf *w, uint16_t type,
		       const struct ry__wire_conn *c)
{
	ry__w_u8(w, c->wc_src);
	ry__w_u8(w, c->wc_dst);
	ry__w_u32(w, c->wc_attempt);
	if (type == CTL_CONN_REJ) {
		ry__w_u32(w, (uint32_t)c->wc_err);
		ry__w_u32(w, c->wc_retry_ms);
		return;
	}
	ry__w_ep(w, &c->wc_ep);
	ry__w_u64(w, c->wc_pm_addr);
	ry__w_u32(w, c->wc_pm_rkey);
	ry__w_u32(w, c->wc_pm_len);
	if (type == CTL_CONN_REQ)
		ry__w_u32(w, c->wc_flags);
}

int ry__wire_conn_get(const void *body, size_t n, uint16_t type,
		      struct ry__wire_conn *c)
{
	struct ry__rbuf r;

	memset(c, 0, sizeof(*c));
	ry__rbuf_init(&r, body, n);
	c->wc_src = ry__r_u8(&r);
	c->wc_dst = ry__r_u8(&r);
	c->wc_attempt = ry__r_u32(&r);
	if (type == CTL_CONN_REJ) {
		c->wc_err = (int32_t)ry__r_u32(&r);
		/* an older peer gives no retry-after */
		if (r.n >= 4)
			c->wc_retry_ms = ry__r_u32(&r);
	} else {
		ry__r_ep(&r, &c->wc_ep);
		/* a peer that does not probe the MTU sends no slice */
		if (r.n >= 16) {
			c->wc_pm_addr = ry__r_u64(&r);
			c->wc_pm_rkey = ry__r_u32(&r);
			c->wc_pm_len = ry__r_u32(&r);
		}
		/* nor does an older peer send flags */
		if (type == CTL_CONN_REQ && r.n >= 4)
			c->wc_flags = ry__r_u32(&r);
	}
	if (r.bad || c->wc_src >= RY_MAX_RAILS || c->wc_dst >= RY_MAX_RAILS)
		return -EBADMSG;
	return 0;
}

static void fence_pair_put(struct ry__wbuf *w,
			   const struct ry__wire_fence_pair *fp)
{
	ry__w_u8(w, fp->fp_src);
	ry__w_u8(w, fp->fp_dst);
	ry__w_u32(w, fp->fp_src_qpn);
	ry__w_u32(w, fp->fp_dst_qpn);
}

void ry__wire_fence_put(struct ry__wbuf *w, bool ack,
			const struct ry__wire_fence *f)
{
	unsigned i;

	ry__w_u64(w, f->wf_gen);
	if (ack) {
		ry__w_u8(w, f->wf_caps);
		return;
	}
	if (!f->wf_n || f->wf_n > RY__WIRE_FENCE_PAIRS) {
		w->bad = true;
		return;
	}
	fence_pair_put(w, &f->wf_pair[0]);
	if (f->wf_n == 1)
		return; /* the form every peer reads */
	ry__w_u8(w, (uint8_t)(f->wf_n - 1));
	for (i = 1; i < f->wf_n; i++)
		fence_pair_put(w, &f->wf_pair[i]);
}

static bool fence_pair_get(struct ry__rbuf *r, struct ry__wire_fence_pair *fp)
{
	fp->fp_src = ry__r_u8(r);
	fp->fp_dst = ry__r_u8(r);
	fp->fp_src_qpn = ry__r_u32(r);
	fp->fp_dst_qpn = ry__r_u32(r);
	return !r->bad && fp->fp_src < RY_MAX_RAILS &&
	       fp->fp_dst < RY_MAX_RAILS;
}

int ry__wire_fence_get(const void *body, size_t n, bool ack,
		       struct ry__wire_fence *f)
{
	struct ry__rbuf r;
	unsigned k, i;

	memset(f, 0, sizeof(*f));
	ry__rbuf_init(&r, body, n);
	f->wf_gen = ry__r_u64(&r);
	if (ack) {
		/* an older peer tells no caps */
		if (r.n)
			f->wf_caps = ry__r_u8(&r);
		return r.bad ? -EBADMSG : 0;
	}
	if (!fence_pair_get(&r, &f->wf_pair[0]))
		return -EBADMSG;
	f->wf_n = 1;
	if (!r.n)
		return 0;
	/* all or nothing: a list that does not parse names no pair, so a
	 * refused request fences none of them */
	k = ry__r_u8(&r);
	if (!k || k >= RY__WIRE_FENCE_PAIRS || r.n != 10 * (size_t)k)
		return -EBADMSG;
	for (i = 1; i <= k; i++)
		if (!fence_pair_get(&r, &f->wf_pair[i]))
			return -EBADMSG;
	f->wf_n = 1 + k;
	return 0;
}

void ry__wire_auth_put(struct ry__wbuf *w, const unsigned char *proof)
{
	ry__w_bytes(w, proof, RY__CTL_MAC);
}

int ry__wire_auth_get(const void *body, size_t n,
		      unsigned char proof[RY__CTL_MAC])
{
	struct ry__rbuf r;

	ry__rbuf_init(&r, body, n);
	ry__r_bytes(&r, proof, RY__CTL_MAC);
	return r.bad || r.n ? -EBADMSG : 0;
}

void ry__wire_refuse_put(struct ry__wbuf *w, uint8_t why)
{
	ry__w_u8(w, why);
}

uint8_t ry__wire_refuse_get(const void *body, size_t n)
{
	return n ? *(const uint8_t *)body : 0;
}

int ry__wire_refuse_ids(const void *body, size_t n,
			unsigned char ids[RY__CTL_KEY_IDS][RY__CTL_KEY_ID])
{
	struct ry__rbuf r;
	unsigned k;

	if (n <= 1)
		return 0;
	ry__rbuf_init(&r, (const unsigned char *)body + 1, n - 1);
	k = r_key_ids(&r, ids);
	return r.bad || r.n ? -EBADMSG : (int)k;
}

void ry__wire_goodbye_put(struct ry__wbuf *w, const struct ry__wire_goodbye *g)
{
	ry__w_u64(w, g->wg_node);
	ry__w_u8(w, g->wg_why);
}

int ry__wire_goodbye_get(const void *body, size_t n, struct ry__wire_goodbye *g)
{
	struct ry__rbuf r;

	ry__rbuf_init(&r, body, n);
	g->wg_node = ry__r_u64(&r);
	g->wg_why = ry__r_u8(&r);
	if (r.bad || r.n || g->wg_why < BYE_CLOSING || g->wg_why > BYE_DROPPED)
		return -EBADMSG;
	return 0;
}

int ry__wire_frame(void *out, size_t cap, uint16_t type, const void *body,
		   size_t n)
{
	if (cap < RY__CTL_HDR || n > cap - RY__CTL_HDR || n > UINT32_MAX)
		return -EMSGSIZE;
	ry__ctl_hdr_put(out, (uint32_t)n, type);
	memcpy((unsigned char *)out + RY__CTL_HDR, body, n);
	return (int)(RY__CTL_HDR + n);
}

void ry__mhdr_put(void *b, uint16_t type, uint64_t node, uint64_t notify,
		  uint32_t len)
{
	struct ry__mhdr h = {
	    .mh_magic = htole32(RY__MH_MAGIC),
	    .mh_type = htole16(type),
	    .mh_node = htole64(node),
	    .mh_notify = htole64(notify),
	    .mh_len = htole32(len),
	};

	memcpy(b, &h, sizeof(h));
}
