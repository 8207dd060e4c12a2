// SPDX-License-Identifier: BSD-2-Clause
/*
 * libFuzzer target for control-frame streams (src/ctl/): the input is
 * fed, as if read from the socket, into a fresh inbound control session of
 * b, a live manager of the fixture's pair over the loop rail.  The session
 * is one end of a socketpair wrapped by ry__ctl_adopt(), so what b writes
 * lands in the other end, which is drained and then closed: b sees the
 * close as from any peer and must free the session.
 *
 * The first byte steers, so the fuzzer need not discover addresses,
 * incarnations and rail lists:
 *   bits 0-1  source IP: 0, 1 a's (b's configured peer "a"), 2 another in
 *             b's accept prefix, 3 one admit_source() refuses
 *   bits 2-3  prefix: 0 none; 1 a valid HELLO as a (its incarnation and
 *             rails: admitted as a second session of a); 2 a HELLO as an
 *             unnamed node (admitted by prefix); 3 a HELLO as a new
 *             incarnation of a (refused while a's session lives)
 *   bit 4     the rest is {u8 type, u8 len, len bytes} records, framed
 *             here with a right length and version; else raw bytes
 * so CONN_REQ/REP/REJ and FENCE_REQ/ACK with any generation are reached
 * on admitted sessions.
 *
 * Checked after every input: the session is gone once reaped, b's session
 * counters agree with its session list, b's peer records stay bounded;
 * every CHECK_EVERY inputs, an a->b write succeeds (a may need to
 * reconnect after what the input did to its record on b).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "src/manager.h"
#include "tests/manager/fixture.h"

#define CHECK_EVERY 500
#define MAX_SESSIONS 64
/* a, and records made from HELLOs that are not reaped yet */
#define MAX_PEERS 16

static struct fx F;
static char a_addr[RY_ADDR_MAX];

struct out {
	unsigned char b[8192];
	size_t n;
};

static void put(struct out *o, const void *p, size_t n)
{
	if (n > sizeof(o->b) - o->n)
		n = sizeof(o->b) - o->n;
	memcpy(o->b + o->n, p, n);
	o->n += n;
}

/* A frame with body[len] appended (the codec's header: right length and
 * version); nothing if it does not fit. */
static void put_frame(struct out *o, uint16_t type, const void *body,
		      size_t len)
{
	int n =
	    ry__wire_frame(o->b + o->n, sizeof(o->b) - o->n, type, body, len);

	if (n > 0)
		o->n += (size_t)n;
}

static struct ry_peer *b_rec_a(void)
{
	for (struct ry_peer *p = F.b->m_peers; p; p = p->pr_next)
		if (!strcmp(p->pr_name, "a"))
			return p;
	return NULL;
}

static bool a_known(void *arg)
{
	struct ry_peer *p = b_rec_a();

	(void)arg;
	return p && p->pr_node && p->pr_nrrails;
}

/* HELLO as node `node` with a's rails as b knows them. */
static void hello(struct out *o, uint64_t node, const char *name,
		  const char *addr)
{
	static struct ry__wire_hello h;
	static unsigned char body[RY__CTL_MAX_FRAME];
	struct ry_peer *pa = b_rec_a();
	struct ry__wbuf w;

	memset(&h, 0, sizeof(h));
	h.wh_node = node;
	snprintf(h.wh_name, sizeof(h.wh_name), "%s", name);
	snprintf(h.wh_addr, sizeof(h.wh_addr), "%s", addr);
	h.wh_n = pa->pr_nrrails;
	for (unsigned i = 0; i < pa->pr_nrrails; i++) {
		const struct ry__rrail *r = &pa->pr_rrails[i];

		memcpy(h.wh_rail[i].wr_name, r->rr_name, RY_NAME_MAX);
		memcpy(h.wh_rail[i].wr_network, r->rr_network, RY_NAME_MAX);
		h.wh_rail[i].wr_ep = r->rr_ep;
	}
	ry__wbuf_init(&w, body, sizeof(body));
	ry__wire_hello_put(&w, &h, false); /* no key */
	if (w.bad)
		abort();
	put_frame(o, CTL_HELLO, w.b, w.n);
}

static unsigned npeers(void)
{
	unsigned n = 0;

	for (struct ry_peer *p = F.b->m_peers; p; p = p->pr_next)
		n++;
	return n;
}

/* b's live sessions that are socketpair ends: ours, not yet reaped. */
static unsigned ours_alive(void)
{
	int fd[MAX_SESSIONS];
	bool in[MAX_SESSIONS];
	unsigned n, i, ours = 0, nin = 0;

	ry__lock_and_run_leftovers(F.b);
	n = ry__ctl_sessions(F.b, fd, in, MAX_SESSIONS);
	if (n > MAX_SESSIONS)
		abort(); /* sessions pile up */
	for (i = 0; i < n; i++) {
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);

		nin += in[i];
		if (!getsockname(fd[i], (struct sockaddr *)&ss, &sl) &&
		    ss.ss_family == AF_UNIX)
			ours++;
	}
	if (nin != F.b->m_nin || F.b->m_npending > F.b->m_nin)
		abort(); /* the counters disagree with the list */
	ry__unlock(F.b);
	return ours;
}

static bool ours_gone(void *arg)
{
	(void)arg;
	return !ours_alive();
}

static void write_ok(void)
{
	struct fx_done d = {0};

	fx_fill(F.bufa, 4096, 3);
	if (ry_write(F.ab, F.ra, 0, F.desc_b, (size_t)F.desc_b_len, 0, 4096,
		     fx_cb, &d) ||
	    !fx_until_done(&F, &d, 1, 30000) || d.ok != 1) {
		fprintf(stderr, "fuzz_ctl: a->b write failed: %s\n", d.reason);
		abort();
	}
}

static void start(void)
{
	ry_log_set_level(RY_LOG_ERROR);
	if (fx_init(&F, &(struct fx_opts){.nrails_a = 1,
					  .b_names_a = true,
					  .reconnect_min_ms = 1,
					  .reconnect_max_ms = 2}))
		abort();
	/* fx_init sets the level from the environment */
	ry_log_set_level(RY_LOG_ERROR);
	ry_manager_control_addr(F.a, a_addr, sizeof(a_addr));
	write_ok();
	if (!fx_until(&F, a_known, NULL, 10000))
		abort();
}

static void source(uint8_t which, struct sockaddr_storage *ss)
{
	struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
	static const char *const ip[4] = {"127.0.0.1", "127.0.0.1", "127.0.0.9",
					  "198.19.255.1"};

	memset(ss, 0, sizeof(*ss));
	s4->sin_family = AF_INET;
	s4->sin_port = htons(40000);
	inet_pton(AF_INET, ip[which & 3], &s4->sin_addr);
}

static void input(struct out *o, uint8_t steer, const uint8_t *d, size_t n)
{
	struct ry_peer *pa = b_rec_a();

	o->n = 0;
	switch ((steer >> 2) & 3) {
	case 1:
		hello(o, pa->pr_node, "a", a_addr);
		break;
	case 2:
		hello(o, 0x5eed, "fz", "127.0.0.9:7");
		break;
	case 3:
		hello(o, pa->pr_node + 1, "a", a_addr);
		break;
	}
	if (!(steer & 16)) {
		put(o, d, n);
		return;
	}
	while (n >= 2) {
		size_t len = d[1] < n - 2 ? d[1] : n - 2;

		put_frame(o, d[0], d + 2, len);
		d += 2 + len;
		n -= 2 + len;
	}
}

static void drain(int fd)
{
	unsigned char buf[4096];

	while (recv(fd, buf, sizeof(buf), MSG_DONTWAIT) > 0)
		;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool started;
	static unsigned long runs;
	static struct out o;
	struct sockaddr_storage ss;
	struct ry__ctl *c;
	int sv[2];

	if (!started) {
		start();
		started = true;
	}
	if (size < 1 || size > 4096)
		return 0;
	/* a's record on b is what the HELLO prefixes copy */
	if (!fx_until(&F, a_known, NULL, 10000))
		abort();
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0,
		       sv))
		abort();
	source(data[0], &ss);
	input(&o, data[0], data + 1, size - 1);
	ry__lock_and_run_leftovers(F.b);
	c = ry__ctl_adopt(F.b, sv[0], &ss); /* sv[0] is b's now */
	if (c)
		ry__ctl_feed(c, o.b, o.n);
	ry__unlock(F.b);
	fx_progress(&F);
	drain(sv[1]);
	close(sv[1]);
	if (!fx_until(&F, ours_gone, NULL, 5000)) {
		fprintf(stderr, "fuzz_ctl: session not freed after close\n");
		abort();
	}
	if (npeers() > MAX_PEERS) {
		fprintf(stderr, "fuzz_ctl: %u peer records\n", npeers());
		abort();
	}
	if (++runs % CHECK_EVERY == 0)
		write_ok();
	return 0;
}
