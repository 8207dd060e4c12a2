// SPDX-License-Identifier: BSD-2-Clause
/* The raw control-channel client (rawctl.h). */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "src/manager.h"
#include "tests/manager/rawctl.h"

unsigned npeers(struct ry_manager *m)
{
	unsigned n = 0;

	for (struct ry_peer *p = m->m_peers; p; p = p->pr_next)
		n++;
	return n;
}

int write_one(struct fx *fx, bool verify, unsigned ms, struct fx_done *d)
{
	const size_t len = 1u << 20;

	memset(d, 0, sizeof(*d));
	fx_fill(fx->bufa, len, 7);
	ck_assert_int_eq(ry_write(fx->ab, fx->ra, 0, fx->desc_b,
				  (size_t)fx->desc_b_len, 0, len, fx_cb, d),
			 0);
	ck_assert(fx_until_done(fx, d, 1, ms));
	if (verify && d->ok == 1)
		ck_assert_int_eq(memcmp(fx->bufa, fx->bufb, len), 0);
	return d->ok == 1 ? 0 : -1;
}

void put(struct frame *f, const void *p, size_t n)
{
	ck_assert_uint_le(f->n + n, sizeof(f->b));
	memcpy(f->b + f->n, p, n);
	f->n += n;
}

void frame_start(struct frame *f, uint16_t type)
{
	f->type = type;
	f->n = RY__CTL_HDR;
	ry__ctl_hdr_put(f->b, 0, type);
}

void put_body(struct frame *f, const struct ry__wbuf *w)
{
	ck_assert(!w->bad);
	put(f, w->b, w->n);
}

void frame_end(struct frame *f)
{
	ry__ctl_hdr_put(f->b, (uint32_t)(f->n - RY__CTL_HDR), f->type);
}

void frame_of(struct frame *f, uint16_t type, const struct ry__wbuf *w)
{
	frame_start(f, type);
	put_body(f, w);
	frame_end(f);
}

void frame_hello(struct frame *f, uint16_t type, const struct ry__wire_hello *h)
{
	unsigned char body[1024];
	struct ry__wbuf w;

	ry__wbuf_init(&w, body, sizeof(body));
	ry__wire_hello_put(&w, h, false);
	frame_of(f, type, &w);
}

static void hello_of(struct frame *f, uint64_t node, const char *name,
		     const char *addr, bool auth, unsigned nrails)
{
	static struct ry__wire_hello h;

	memset(&h, 0, sizeof(h));
	h.wh_node = node;
	snprintf(h.wh_name, sizeof(h.wh_name), "%s", name);
	snprintf(h.wh_addr, sizeof(h.wh_addr), "%s", addr);
	h.wh_auth = auth;
	if (auth)
		ry__auth_nonce(h.wh_nonce);
	h.wh_n = nrails;
	for (unsigned i = 0; i < nrails; i++) {
		snprintf(h.wh_rail[i].wr_name, RY_NAME_MAX, "x%u", i);
		snprintf(h.wh_rail[i].wr_network, RY_NAME_MAX, "net%u", i);
		h.wh_rail[i].wr_ep.mtu = 1500;
	}
	frame_hello(f, CTL_HELLO, &h);
}

void raw_hello(struct frame *f, uint64_t node, const char *name,
	       const char *addr, bool auth)
{
	hello_of(f, node, name, addr, auth, 0);
}

void raw_hello_rails(struct frame *f, uint64_t node, const char *name,
		     const char *addr, unsigned nrails)
{
	hello_of(f, node, name, addr, false, nrails);
}

bool frame_hdr(const struct frame *in, struct ry__ctl_hdr *h)
{
	if (in->n < RY__CTL_HDR)
		return false;
	ry__ctl_hdr_get(in->b, h);
	return true;
}

int raw_connect(struct fx *fx, const char *src)
{
	struct sockaddr_in sa = {.sin_family = AF_INET};
	char host[64];
	unsigned port;
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	ck_assert_int_ge(fd, 0);
	inet_pton(AF_INET, src, &sa.sin_addr);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(sscanf(fx->b_addr, "%63[^:]:%u", host, &port), 2);
	inet_pton(AF_INET, host, &sa.sin_addr);
	sa.sin_port = htons((uint16_t)port);
	ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	return fd;
}

void raw_send(int fd, const void *p, size_t n)
{
	ck_assert_int_eq(send(fd, p, n, MSG_NOSIGNAL), (ssize_t)n);
}

bool raw_next(struct fx *fx, struct raw_rx *rx, unsigned ms, struct frame *out)
{
	uint64_t end = fx_now_ns() + ms * 1000000ull;

	for (;;) {
		ssize_t r;

		if (rx->n >= RY__CTL_HDR) {
			struct ry__ctl_hdr h;
			size_t len;

			ry__ctl_hdr_get(rx->b, &h);
			len = RY__CTL_HDR + h.h_len;
			ck_assert_uint_le(len, sizeof(out->b));
			if (rx->n >= len) {
				memcpy(out->b, rx->b, len);
				out->n = len;
				out->type = h.h_type;
				memmove(rx->b, rx->b + len, rx->n - len);
				rx->n -= len;
				return true;
			}
		}
		if (fx_now_ns() >= end)
			return false;
		r = recv(rx->fd, rx->b + rx->n, sizeof(rx->b) - rx->n,
			 MSG_DONTWAIT);
		ck_assert_msg(r != 0, "the manager closed the raw session");
		if (r > 0) {
			rx->n += (size_t)r;
			continue;
		}
		ck_assert_int_eq(errno, EAGAIN);
		fx_progress(fx);
		usleep(100);
	}
}

bool closed_within(struct fx *fx, int fd, unsigned ms, struct frame *in)
{
	uint64_t end = fx_now_ns() + ms * 1000000ull;
	unsigned char buf[4096];

	while (fx_now_ns() < end) {
		ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);

		if (n == 0 || (n < 0 && errno != EAGAIN))
			return true;
		if (n > 0 && in)
			put(in, buf, (size_t)n);
		fx_progress(fx);
		usleep(200);
	}
	return false;
}
