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
			struct ry__wire_fence wf = {.wf_gen = i, .wf_dst = 0};

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

int main(void)
{
	const TTest *const tests[] = {
	    goodbye_not_failure,
	    vanish_is_failure,
	    flood_bounded,
	    reload_revokes_prefix,
	};

	return fx_run_suite("pressure", 120, tests,
			    sizeof(tests) / sizeof(*tests), true);
}
