// SPDX-License-Identifier: BSD-2-Clause
/*
 * Under pressure (issue 30): a peer leaving on purpose is not a failure,
 * and an admitted peer that floods the control channel costs only itself.
 * Managers a and b (fixture.c) over the provider the suite is built for;
 * the flooder is a raw admitted client (rawctl.c).
 */
#include <check.h>
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "src/manager.h"
#include "tests/manager/fixture.h"
#include "tests/manager/rawctl.h"

static struct fx F;

/* ---- what the managers log ---- */

static atomic_uint n_warn;
static char last_warn[256];

static void sink(enum ry_log_level level, const char *component,
		 const char *message, void *arg)
{
	(void)component;
	(void)arg;
	if (level > RY_LOG_WARN)
		return;
	atomic_fetch_add(&n_warn, 1);
	snprintf(last_warn, sizeof(last_warn), "%s", message);
}

static void watch_log(void)
{
	atomic_store(&n_warn, 0);
	last_warn[0] = 0;
	ry_log_set_level(RY_LOG_WARN);
	ry_log_set_sink(sink, NULL);
}

static void unwatch_log(void)
{
	ry_log_set_sink(NULL, NULL);
	if (!getenv("RY_TEST_LOG"))
		ry_log_set_level(RY_LOG_ERROR);
}

static struct ry_counters ab_counters(void)
{
	struct ry_counters c;

	ck_assert_int_eq(ry_peer_counters(F.ab, &c), 0);
	return c;
}

/* a's connections to b closed by b's goodbye (conn.c, not in the public
 * counters) */
static uint64_t a_goodbyes(void)
{
	uint64_t g = 0;

	for (unsigned i = 0; i < F.a->m_nrails; i++)
		g += F.ab->pr_conn[i]->cn_goodbyes;
	return g;
}

static bool a_has_failover(void *arg)
{
	(void)arg;
	return ab_counters().failovers > 0;
}

static bool a_has_no_active(void *arg)
{
	(void)arg;
	return fx_active(F.a, "r0") + fx_active(F.a, "r1") == 0;
}

/* ---- a goodbye is not a failure ---- */

/*
 * b's application destroys its manager: a closes b's connections at once,
 * counts them as goodbyes, not failovers, and logs no warning, however
 * long it then runs without b.
 */
START_TEST(goodbye_not_failure)
{
	struct fx_done d;
	struct ry_counters c;

	ck_assert_int_eq(fx_init(&F, &(struct fx_opts){.timeout_ms = 200}), 0);
	ck_assert_int_eq(write_one(&F, true, 20000, &d), 0);
	ck_assert_uint_eq(fx_active(F.a, "r0") + fx_active(F.a, "r1"), 2);
	watch_log();
	fx_destroy_b(&F);
	/* closed on the goodbye, long before silence would say so */
	ck_assert(fx_until(&F, a_has_no_active, NULL, 150));
	/* well past the heartbeat timeout: nothing more happens */
	fx_sleep_progress(&F, 1000);
	unwatch_log();
	c = ab_counters();
	ck_assert_msg(c.failovers == 0, "%llu failovers counted",
		      (unsigned long long)c.failovers);
	ck_assert_uint_eq(a_goodbyes(), 2);
	ck_assert_msg(atomic_load(&n_warn) == 0, "%u warnings, last: %s",
		      atomic_load(&n_warn), last_warn);
	fx_fini(&F);
}
END_TEST

/* b's rails go silent without a word: a failure, counted and logged. */
START_TEST(vanish_is_failure)
{
	struct ry_fault_spec drop = {.drop_all = true};
	struct fx_done d;
	struct ry_counters c;

	ck_assert_int_eq(fx_init(&F, &(struct fx_opts){.timeout_ms = 200}), 0);
	ck_assert_int_eq(write_one(&F, true, 20000, &d), 0);
	watch_log();
	ck_assert_int_eq(ry_rail_fault(F.b, "r0", &drop), 0);
	ck_assert_int_eq(ry_rail_fault(F.b, "r1", &drop), 0);
	ck_assert(fx_until(&F, a_has_failover, NULL, 10000));
	unwatch_log();
	c = ab_counters();
	ck_assert_uint_gt(c.failovers, 0);
	ck_assert_uint_eq(a_goodbyes(), 0);
	ck_assert_uint_gt(atomic_load(&n_warn), 0);
	fx_fini(&F);
}
END_TEST

/* ---- revocation ---- */

static bool b_forgot_a(void *arg)
{
	(void)arg;
	return npeers(F.b) == 0;
}

/*
 * b admits a through its accept prefix; a reload of b without it closes
 * a's session and connections at once, and a cannot come back.
 */
START_TEST(reload_revokes_prefix)
{
	struct ry_config c;
	struct fx_opts o;
	struct fx_done d;

	ck_assert_int_eq(fx_init(&F, &(struct fx_opts){.op_timeout_ms = 1500}),
			 0);
	ck_assert_int_eq(write_one(&F, true, 20000, &d), 0);
	o = F.o;
	o.b_strict = true; /* no accept list */
	fx_config(&c, &o, true);
	ck_assert_int_eq(ry_manager_reload(F.b, &c, NULL, NULL), 0);
	ck_assert_msg(fx_until(&F, a_has_no_active, NULL, 2000),
		      "a's connections outlived its admission");
	ck_assert_int_eq(write_one(&F, false, 20000, &d), -1);
	ck_assert_msg(fx_until(&F, b_forgot_a, NULL, 5000),
		      "b still holds a record of a");
	fx_fini(&F);
}
END_TEST

/* ---- an admitted peer flooding the control channel ---- */

/* n CONN_REQ and FENCE_REQ frames, alternating, into buf. */
static size_t flood_frames(unsigned char *buf, size_t cap, unsigned n)
{
	size_t len = 0;
	unsigned i;

	for (i = 0; i < n; i++) {
		unsigned char body[96];
		struct ry__wbuf w;
		struct frame f;

		ry__wbuf_init(&w, body, sizeof(body));
		if (i % 2) {
			struct ry__wire_fence wf = {.wf_gen = i, .wf_n = 1};

			ry__wire_fence_put(&w, false, &wf);
			frame_start(&f, CTL_FENCE_REQ);
		} else {
			struct ry__wire_conn wc = {.wc_attempt = i};

			ry__wire_conn_put(&w, CTL_CONN_REQ, &wc);
			frame_start(&f, CTL_CONN_REQ);
		}
		put_body(&f, &w);
		frame_end(&f);
		ck_assert_uint_le(len + f.n, cap);
		memcpy(buf + len, f.b, f.n);
		len += f.n;
	}
	return len;
}

/* Send what the socket takes and read what b answers, so that b never
 * closes it for not reading; false once b has closed it. */
static bool flood_some(int fd, const unsigned char *buf, size_t len)
{
	unsigned char in[16384];
	size_t off = 0;
	ssize_t n;

	while (off < len) {
		n = send(fd, buf + off, len - off, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n < 0 && errno != EAGAIN)
			return false;
		if (n > 0)
			off += (size_t)n;
		n = recv(fd, in, sizeof(in), MSG_DONTWAIT);
		if (n == 0 || (n < 0 && errno != EAGAIN))
			return false;
		if (n < 0 && off < len) {
			fx_progress(&F);
			usleep(100);
		}
	}
	while ((n = recv(fd, in, sizeof(in), MSG_DONTWAIT)) > 0)
		;
	return n < 0 && errno == EAGAIN;
}

/*
 * An admitted raw client floods CONN_REQ and FENCE_REQ while a writes to
 * b: b drops what is over control_frame_rate, closes the flooder's session
 * and refuses its address for a while; a's connections never go down and
 * every write lands.
 */
START_TEST(flood_bounded)
{
	static unsigned char buf[400 * 96];
	struct frame hello, in = {.n = 0};
	struct fx_done d;
	uint64_t over, closed;
	size_t len = flood_frames(buf, sizeof(buf), 400);
	bool open = true;
	unsigned i;
	int fd;

	ck_assert_int_eq(fx_init(&F, NULL), 0);
	ck_assert_int_eq(write_one(&F, true, 20000, &d), 0);
	fd = raw_connect(&F, "127.0.0.2");
	raw_hello(&hello, 0x51ee, "flooder", "127.0.0.2:9", false);
	raw_send(fd, hello.b, hello.n);
	ck_assert(!closed_within(&F, fd, 500, &in)); /* HELLO_ACK */
	ck_assert_uint_gt(in.n, RY__CTL_HDR);
	for (i = 0; i < 40; i++) {
		if (open && !flood_some(fd, buf, len)) {
			open = false;
			close(fd);
			/* its address is backed off (at least 2 s from now):
			 * refused at accept, no HELLO_ACK */
			fd = raw_connect(&F, "127.0.0.2");
			raw_send(fd, hello.b, hello.n);
			in.n = 0;
			ck_assert(closed_within(&F, fd, 500, &in));
			ck_assert_uint_eq(in.n, 0);
			close(fd);
		}
		ck_assert_int_eq(write_one(&F, true, 20000, &d), 0);
	}
	ck_assert_msg(!open, "the flooding session is still open");
	ry__ctl_pressure(F.b, &over, &closed);
	ck_assert_uint_gt(over, 0);
	ck_assert_uint_eq(closed, 1);
	ck_assert_uint_eq(F.ev_a.n_conn_down + F.ev_b.n_conn_down, 0);
	/* and a's own sessions were never touched */
	ck_assert_int_eq(write_one(&F, true, 20000, &d), 0);
	ck_assert_uint_eq(F.ev_a.n_conn_down + F.ev_b.n_conn_down, 0);
	fx_fini(&F);
}
END_TEST

/* ---- reconnection: work first, hung peers back off ---- */

/*
 * CONN_REQ's flags and CONN_REJ's retry-after are trailing fields: they
 * survive a round trip, and a frame from a peer without them (the bytes
 * an older build sends) parses with both 0.
 */
START_TEST(conn_frames_optional_fields)
{
	struct ry__wire_conn in = {.wc_src = 1, .wc_dst = 2, .wc_attempt = 7};
	struct ry__wire_conn out;
	unsigned char b[128];
	struct ry__wbuf w;

	in.wc_flags = RY__CONN_F_WORK;
	ry__wbuf_init(&w, b, sizeof(b));
	ry__wire_conn_put(&w, CTL_CONN_REQ, &in);
	ck_assert(!w.bad);
	ck_assert_int_eq(ry__wire_conn_get(b, w.n, CTL_CONN_REQ, &out), 0);
	ck_assert_uint_eq(out.wc_flags, RY__CONN_F_WORK);
	ck_assert_uint_eq(out.wc_attempt, 7);
	/* without its last four bytes: an older peer's REQ */
	ck_assert_int_eq(ry__wire_conn_get(b, w.n - 4, CTL_CONN_REQ, &out), 0);
	ck_assert_uint_eq(out.wc_flags, 0);

	in.wc_err = -EBUSY;
	in.wc_retry_ms = 1234;
	ry__wbuf_init(&w, b, sizeof(b));
	ry__wire_conn_put(&w, CTL_CONN_REJ, &in);
	ck_assert(!w.bad);
	ck_assert_int_eq(ry__wire_conn_get(b, w.n, CTL_CONN_REJ, &out), 0);
	ck_assert_int_eq(out.wc_err, -EBUSY);
	ck_assert_uint_eq(out.wc_retry_ms, 1234);
	ck_assert_int_eq(ry__wire_conn_get(b, w.n - 4, CTL_CONN_REJ, &out), 0);
	ck_assert_int_eq(out.wc_err, -EBUSY);
	ck_assert_uint_eq(out.wc_retry_ms, 0);
}
END_TEST

/*
 * A peer that keeps its control session open but never answers a
 * CONN_REQ (a hung node): a asks again after a back-off that doubles with
 * each unanswered attempt, not every reconnect_min_ms after each connect
 * timeout, so a few hundred such nodes cannot hold a rail's attempts.
 * The hung node is this test: it listens, answers a's HELLO with the same
 * rails, and then only reads.  Before, each gap was the connect timeout
 * plus 0.75 to 1 x reconnect_min_ms; now the third is the timeout plus at
 * least half of 8 x reconnect_min_ms.
 */
START_TEST(unanswered_backs_off)
{
	struct fx_opts o = {.reconnect_min_ms = 200, .reconnect_max_ms = 5000};
	struct sockaddr_in sa = {.sin_family = AF_INET};
	socklen_t sl = sizeof(sa);
	static struct raw_rx rx;
	struct ry__wire_hello hi;
	uint64_t req_ns[5], end;
	unsigned nreq = 0;
	struct frame in;
	char addr[64];
	struct ry_peer *z;
	int lfd, one = 1;

	ck_assert_int_eq(fx_init(&F, &o), 0);
	lfd = socket(AF_INET, SOCK_STREAM, 0);
	ck_assert_int_ge(lfd, 0);
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	inet_pton(AF_INET, "127.0.0.3", &sa.sin_addr);
	ck_assert_int_eq(bind(lfd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(listen(lfd, 4), 0);
	ck_assert_int_eq(getsockname(lfd, (struct sockaddr *)&sa, &sl), 0);
	snprintf(addr, sizeof(addr), "127.0.0.3:%u", ntohs(sa.sin_port));
	ck_assert_int_eq(ry_peer_get(F.a, addr, &z), 0);
	ry__lock_and_run_leftovers(F.a);
	ck_assert_int_eq(ry__ctl_dial(z), 0);
	ry__unlock(F.a);

	end = fx_now_ns() + 30000000000ull;
	rx = (struct raw_rx){.fd = -1};
	while (rx.fd < 0 && fx_now_ns() < end) {
		fx_progress(&F);
		rx.fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK);
		if (rx.fd < 0)
			usleep(200);
	}
	ck_assert_int_ge(rx.fd, 0);
	ck_assert(raw_next(&F, &rx, 10000, &in));
	ck_assert_uint_eq(in.type, CTL_HELLO);
	ck_assert_int_eq(ry__wire_hello_get(in.b + RY__CTL_HDR,
					    in.n - RY__CTL_HDR, false, &hi),
			 0);
	/* the same rails as a's: every one pairs */
	hi.wh_node = 0x4a46;
	snprintf(hi.wh_name, sizeof(hi.wh_name), "hung");
	snprintf(hi.wh_addr, sizeof(hi.wh_addr), "%s", addr);
	frame_hello(&in, CTL_HELLO_ACK, &hi);
	raw_send(rx.fd, in.b, in.n);

	while (nreq < 5 && raw_next(&F, &rx, 30000, &in)) {
		struct ry__wire_conn wc;

		if (in.type == CTL_CONN_REQ &&
		    !ry__wire_conn_get(in.b + RY__CTL_HDR, in.n - RY__CTL_HDR,
				       CTL_CONN_REQ, &wc) &&
		    wc.wc_src == 0)
			req_ns[nreq++] = fx_now_ns();
		ck_assert_msg(fx_now_ns() < end, "5 CONN_REQ took over 30 s");
	}
	ck_assert_msg(nreq == 5, "a sent %u CONN_REQ on rail 0 in 30 s", nreq);
	{
		uint64_t c = F.a->m_connect_ns, m = 200000000ull;
		uint64_t g1 = req_ns[1] - req_ns[0], g3 = req_ns[3] - req_ns[2];
		uint64_t g4 = req_ns[4] - req_ns[3];

		/* 3 unanswered: 8 x min, at least half of it; before: at
		 * most the timeout plus min (plus scheduling) */
		ck_assert_msg(g3 >= c + 3 * m,
			      "third gap %llu ms (connect timeout %llu ms)",
			      (unsigned long long)(g3 / 1000000),
			      (unsigned long long)(c / 1000000));
		ck_assert_msg(g4 >= c + 7 * m,
			      "fourth gap %llu ms (connect timeout %llu ms)",
			      (unsigned long long)(g4 / 1000000),
			      (unsigned long long)(c / 1000000));
		ck_assert_uint_ge(g1, c);
	}
	close(rx.fd);
	close(lfd);
	fx_fini(&F);
}
END_TEST

/* The raw nodes of the gate test: what each session received. */
static struct raw_rx nodes[260];

/* Raw node k (from its own loopback address, 8 a source) past its HELLO,
 * with rails on b's networks. */
static void raw_node(unsigned k)
{
	char src[32], addr[48], name[32];
	struct frame f;

	snprintf(src, sizeof(src), "127.0.%u.%u", 10 + k / 8, 1 + k % 8);
	snprintf(addr, sizeof(addr), "%s:9", src);
	snprintf(name, sizeof(name), "raw%u", k);
	nodes[k] = (struct raw_rx){.fd = raw_connect(&F, src)};
	raw_hello_rails(&f, 0x9000 + k, name, addr, 2);
	raw_send(nodes[k].fd, f.b, f.n);
	do
		ck_assert(raw_next(&F, &nodes[k], 20000, &f));
	while (f.type != CTL_HELLO_ACK);
}

/* Node k asks for a connection on b's rail 0, with flags: b's answer's
 * type (REP or REJ), its fields in *rep. */
static uint16_t ask(unsigned k, uint32_t flags, struct ry__wire_conn *rep)
{
	struct ry__wire_conn wc = {.wc_src = 0, .wc_dst = 0, .wc_attempt = 1};
	unsigned char body[RY__WIRE_CONN_MAX];
	struct ry__wbuf w;
	struct frame f;

	wc.wc_flags = flags;
	/* a soft rail's endpoint nobody listens at: 127.0.0.1, port 9 */
	wc.wc_ep.qpn = 0x100;
	wc.wc_ep.mtu = 1500;
	wc.wc_ep.gid[10] = 0xff;
	wc.wc_ep.gid[11] = 0xff;
	wc.wc_ep.gid[12] = 127;
	wc.wc_ep.gid[15] = 1;
	wc.wc_ep.udp_port = 9;
	ry__wbuf_init(&w, body, sizeof(body));
	ry__wire_conn_put(&w, CTL_CONN_REQ, &wc);
	frame_of(&f, CTL_CONN_REQ, &w);
	raw_send(nodes[k].fd, f.b, f.n);
	do
		ck_assert_msg(raw_next(&F, &nodes[k], 20000, &f),
			      "no CONN_REP or CONN_REJ within 20 s");
	while (f.type != CTL_CONN_REP && f.type != CTL_CONN_REJ);
	ck_assert_int_eq(ry__wire_conn_get(f.b + RY__CTL_HDR, f.n - RY__CTL_HDR,
					   f.type, rep),
			 0);
	return f.type;
}

/*
 * b's rail takes at most 256 attempts at once; 32 of them are kept for
 * peers with work waiting.  224 idle nodes' attempts (answered, then left
 * in PROBING: these nodes never probe) fill the rest: the next idle node
 * is refused (-EBUSY) with a retry-after, while a node whose CONN_REQ
 * says it has work is still served; when the 32 are taken too, such a
 * node is refused, told to ask again after reconnect_min_ms.  Before,
 * the first 256 of any kind were served and the rest refused alike.
 */
START_TEST(work_first_at_the_gate)
{
	/* attempts must stay in flight while the test fills the gate:
	 * connect timeout 4 x timeout_ms */
	struct fx_opts o = {.timeout_ms = 10000,
			    .op_timeout_ms = 30000,
			    .reconnect_min_ms = 100};
	struct ry__wire_conn rep;
	unsigned k = 0, i;

	ck_assert_int_eq(fx_init(&F, &o), 0);
	for (i = 0; i < 224; i++, k++) {
		raw_node(k);
		ck_assert_uint_eq(ask(k, 0, &rep), CTL_CONN_REP);
	}
	raw_node(k);
	ck_assert_uint_eq(ask(k, 0, &rep), CTL_CONN_REJ);
	ck_assert_int_eq(rep.wc_err, -EBUSY);
	ck_assert_uint_ge(rep.wc_retry_ms, 100);
	k++;
	/* a, with no work for b, is refused on that rail too, and waits
	 * as long as b said (a half to one and a half times it) */
	{
		struct ry__conn *c = F.ab->pr_conn[0];
		unsigned ms = 0;
		uint64_t t0, wait = 0;

		ry__lock_and_run_leftovers(F.a);
		ck_assert_int_eq(ry__ctl_dial(F.ab), 0);
		ry__unlock(F.a);
		for (t0 = fx_now_ns(); fx_now_ns() - t0 < 20000000000ull;) {
			const char *r;

			fx_progress(&F);
			ry__lock_and_run_leftovers(F.a);
			r = strstr(c->cn_reason, "retry after ");
			if (c->cn_state == CONN_BACKOFF && r &&
			    sscanf(r, "retry after %u ms", &ms) == 1) {
				wait = c->cn_deadline_ns - fx_now_ns();
				ry__unlock(F.a);
				break;
			}
			ry__unlock(F.a);
			usleep(100);
		}
		ck_assert_msg(ms >= 100 && ms <= 5000,
			      "a's rail 0: \"%s\" (%s)", c->cn_reason,
			      ry__conn_state_str(c->cn_state));
		ck_assert_uint_le(wait, 3ull * ms * 1000000ull / 2);
		ck_assert_uint_ge(wait + 50000000ull, ms * 1000000ull / 2);
	}
	for (i = 0; i < 32; i++, k++) {
		raw_node(k);
		ck_assert_msg(ask(k, RY__CONN_F_WORK, &rep) == CTL_CONN_REP,
			      "node with work %u of 32 refused: %d", i,
			      rep.wc_err);
	}
	raw_node(k);
	ck_assert_uint_eq(ask(k, RY__CONN_F_WORK, &rep), CTL_CONN_REJ);
	ck_assert_int_eq(rep.wc_err, -EBUSY);
	ck_assert_uint_eq(rep.wc_retry_ms, 100);
	k++;
	for (i = 0; i < k; i++)
		close(nodes[i].fd);
	fx_fini(&F);
}
END_TEST

int main(void)
{
	const TTest *const tests[] = {
	    goodbye_not_failure,
	    vanish_is_failure,
	    flood_bounded,
	    reload_revokes_prefix,
	    conn_frames_optional_fields,
	    unanswered_backs_off,
	    work_first_at_the_gate,
	};

	return fx_run_suite("pressure", 120, tests,
			    sizeof(tests) / sizeof(*tests), true);
}
