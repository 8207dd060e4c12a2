// SPDX-License-Identifier: BSD-2-Clause
/*
 * Admission on the control channel (issue 11): who may open a session,
 * what a session may do, and the bounds on sessions and frames.  Managers
 * a and b over the loop rail (fixture.c); an intruder is a raw TCP client
 * that encodes frames with the protocol's codec (src/ctl/wire.h), some of
 * them deliberately wrong, from another loopback address where it must look
 * like another host.
 */
#include <check.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include "src/manager.h"
#include "tests/manager/fixture.h"
#include "tests/manager/rawctl.h"

#define MiB (1u << 20)

static struct fx F;

static void setup_opts(const struct fx_opts *o)
{
	ck_assert_int_eq(fx_init(&F, o), 0);
}

/* ---- a raw client ---- */

/* HELLO with no rails and no authentication. */
static void hello(struct frame *f, uint64_t node, const char *name,
		  const char *addr)
{
	raw_hello(f, node, name, addr, false);
}

/* ---- tests ---- */

/* b names nobody and admits no prefix: a is refused, its operation
 * fails with a no-path error, and b keeps no record of a. */
START_TEST(unlisted_node_refused)
{
	struct fx_done d;

	setup_opts(&(struct fx_opts){.b_strict = true, .op_timeout_ms = 1500});
	ck_assert_int_eq(write_one(&F, false, 20000, &d), -1);
	ck_assert_int_eq(d.last_err, RY_ETIMEDOUT);
	ck_assert_msg(strstr(d.reason, "no path"), "%s", d.reason);
	ck_assert_uint_eq(npeers(F.b), 0);
	fx_fini(&F);
}
END_TEST

/* The fixture's accept = 127.0.0.0/8 admits a, and a named peer is
 * admitted without any prefix. */
START_TEST(accept_prefix_admits)
{
	struct fx_done d;

	setup_opts(NULL);
	ck_assert_int_eq(write_one(&F, false, 20000, &d), 0);
	fx_fini(&F);
	setup_opts(&(struct fx_opts){.b_strict = true, .b_names_a = true});
	ck_assert_int_eq(write_one(&F, false, 20000, &d), 0);
	fx_fini(&F);
}
END_TEST

/* A HELLO claiming configured peer a's name and address from another
 * address is refused, and a's traffic goes on untouched. */
START_TEST(impersonation_refused)
{
	struct fx_done d;
	struct frame f;
	char a_addr[100];
	int fd, i;

	setup_opts(&(struct fx_opts){.b_strict = true, .b_names_a = true});
	ck_assert_int_eq(write_one(&F, false, 20000, &d), 0);
	ry_manager_control_addr(F.a, a_addr, sizeof(a_addr));
	for (i = 0; i < 3; i++) {
		/* admit_source passes nobody from 127.0.0.2: connect only */
		fd = raw_connect(&F, i ? "127.0.0.1" : "127.0.0.2");
		hello(&f, 0x1234 + i, "a", i == 2 ? "127.0.0.1:1" : a_addr);
		send(fd, f.b, f.n, MSG_NOSIGNAL);
		ck_assert(closed_within(&F, fd, 10000, NULL));
		close(fd);
	}
	ck_assert_uint_eq(npeers(F.b), 1);
	ck_assert_int_eq(write_one(&F, false, 20000, &d), 0);
	ck_assert_uint_eq(F.ev_a.n_conn_down + F.ev_b.n_conn_down, 0);
	fx_fini(&F);
}
END_TEST

/* An admitted session's FENCE_ACK for a generation never requested
 * (2^64-1) is a protocol violation: the session is closed. */
START_TEST(fence_ack_forged)
{
	struct frame f, ack, in = {.n = 0};
	int fd;

	setup_opts(NULL);
	fd = raw_connect(&F, "127.0.0.1");
	hello(&f, 0x777, "raw", "127.0.0.1:9");
	{
		struct ry__wire_fence wf = {.wf_gen = UINT64_MAX};
		unsigned char body[RY__WIRE_FENCE_MAX];
		struct ry__wbuf w;

		ry__wbuf_init(&w, body, sizeof(body));
		ry__wire_fence_put(&w, true, &wf);
		frame_start(&ack, CTL_FENCE_ACK);
		put_body(&ack, &w);
		frame_end(&ack);
	}
	raw_send(fd, f.b, f.n);
	/* admitted first: b answers HELLO_ACK */
	ck_assert(!closed_within(&F, fd, 1000, &in));
	ck_assert_uint_gt(in.n, 8);
	raw_send(fd, ack.b, ack.n);
	ck_assert(closed_within(&F, fd, 10000, NULL));
	close(fd);
	fx_fini(&F);
}
END_TEST

/* A session that says nothing is closed after handshake_timeout_ms; one
 * that announces a 65,535-byte frame is closed at once. */
START_TEST(handshake_deadline_and_frame_limit)
{
	unsigned char hdr[RY__CTL_HDR + 1000] = {0};
	int fd;

	ry__ctl_hdr_put(hdr, 0xffff, CTL_HELLO);
	setup_opts(&(struct fx_opts){.b_handshake_timeout_ms = 300});
	fd = raw_connect(&F, "127.0.0.1");
	ck_assert(closed_within(&F, fd, 15000, NULL));
	close(fd);
	fd = raw_connect(&F, "127.0.0.1");
	raw_send(fd, hdr, sizeof(hdr));
	ck_assert(closed_within(&F, fd, 250, NULL) ||
		  closed_within(&F, fd, 15000, NULL));
	close(fd);
	ck_assert_uint_eq(F.b->m_nin, 0);
	fx_fini(&F);
}
END_TEST

/* Idle connections beyond max_sessions_per_source are closed at once;
 * a, from another address, still works. */
START_TEST(per_source_bound)
{
	struct fx_done d;
	int fds[20], open_n = 0, i;

	setup_opts(&(struct fx_opts){.b_max_sessions_per_source = 4,
				     .b_handshake_timeout_ms = 60000});
	for (i = 0; i < 20; i++)
		fds[i] = raw_connect(&F, "127.0.0.3");
	fx_sleep_progress(&F, 500);
	for (i = 0; i < 20; i++)
		open_n += !closed_within(&F, fds[i], 1, NULL);
	ck_assert_int_eq(open_n, 4);
	ck_assert_int_eq(write_one(&F, false, 20000, &d), 0);
	for (i = 0; i < 20; i++)
		close(fds[i]);
	fx_fini(&F);
}
END_TEST

/* 1,000 HELLOs under distinct names from an accept prefix leave no peer
 * record behind once their sessions close, and b never dials them. */
START_TEST(hello_records_freed)
{
	struct fx_done d;
	struct frame f;
	char name[32], addr[32];
	unsigned i, named = 0;

	setup_opts(NULL);
	ck_assert_int_eq(write_one(&F, false, 20000, &d), 0);
	for (i = 0; i < 1000; i++) {
		struct frame in = {.n = 0};
		int fd = raw_connect(&F, "127.0.0.4");

		snprintf(name, sizeof(name), "fake%u", i);
		snprintf(addr, sizeof(addr), "127.0.0.5:%u", 1000 + i);
		hello(&f, 0x10000 + i, name, addr);
		raw_send(fd, f.b, f.n);
		while (!in.n && !closed_within(&F, fd, 1, &in))
			;
		close(fd);
		fx_progress(&F);
	}
	fx_sleep_progress(&F, 500);
	for (struct ry_peer *p = F.b->m_peers; p; p = p->pr_next) {
		named += !strncmp(p->pr_node_name, "fake", 4);
		ck_assert(!p->pr_dial || p->pr_from_hello == false);
	}
	ck_assert_uint_eq(named, 0);
	ck_assert_uint_eq(npeers(F.b), 1);
	ck_assert_int_eq(write_one(&F, false, 20000, &d), 0);
	fx_fini(&F);
}
END_TEST

/* Every live control session of m has the dead-peer settings of
 * src/ctl/session.c (ctl_keepalive); returns how many were inbound. */
static unsigned keepalive_set(struct ry_manager *m, unsigned *n_out)
{
	int fd[16], v;
	bool in[16];
	unsigned n, i, nin = 0;
	socklen_t l;

	ry__lock_and_run_leftovers(m);
	n = ry__ctl_sessions(m, fd, in, 16);
	ck_assert_uint_le(n, 16);
	for (i = 0; i < n; i++) {
		l = sizeof(v);
		ck_assert_int_eq(
		    getsockopt(fd[i], SOL_SOCKET, SO_KEEPALIVE, &v, &l), 0);
		ck_assert_int_eq(v, 1);
		l = sizeof(v);
		ck_assert_int_eq(
		    getsockopt(fd[i], IPPROTO_TCP, TCP_KEEPIDLE, &v, &l), 0);
		ck_assert_int_eq(v, 5);
		l = sizeof(v);
		ck_assert_int_eq(
		    getsockopt(fd[i], IPPROTO_TCP, TCP_KEEPINTVL, &v, &l), 0);
		ck_assert_int_eq(v, 2);
		l = sizeof(v);
		ck_assert_int_eq(
		    getsockopt(fd[i], IPPROTO_TCP, TCP_KEEPCNT, &v, &l), 0);
		ck_assert_int_eq(v, 4);
		l = sizeof(v);
		ck_assert_int_eq(
		    getsockopt(fd[i], IPPROTO_TCP, TCP_USER_TIMEOUT, &v, &l),
		    0);
		ck_assert_int_eq(v, 15000);
		nin += in[i];
	}
	ry__unlock(m);
	*n_out = n;
	return nin;
}

/* A host that dies without a FIN must not hold its peer's session (and
 * so refuse its next incarnation) forever: dialed and accepted sessions,
 * and one from a raw client still in its handshake, have TCP keepalive. */
START_TEST(keepalive_on_sessions)
{
	struct fx_done d;
	unsigned na, nb, ina, inb;
	int fd;

	setup_opts(&(struct fx_opts){.b_handshake_timeout_ms = 60000});
	ck_assert_int_eq(write_one(&F, false, 20000, &d), 0);
	fd = raw_connect(&F, "127.0.0.6");
	fx_sleep_progress(&F, 200);
	ina = keepalive_set(F.a, &na);
	inb = keepalive_set(F.b, &nb);
	/* a dialed b; b accepted a and the raw client */
	ck_assert_uint_lt(ina, na);
	ck_assert_uint_ge(inb, 2);
	close(fd);
	fx_fini(&F);
}
END_TEST

static Suite *admission_suite(void)
{
	Suite *s = suite_create("admission");
	TCase *tc = tcase_create("control");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, unlisted_node_refused);
	tcase_add_test(tc, accept_prefix_admits);
	tcase_add_test(tc, impersonation_refused);
	tcase_add_test(tc, fence_ack_forged);
	tcase_add_test(tc, handshake_deadline_and_frame_limit);
	tcase_add_test(tc, per_source_bound);
	tcase_add_test(tc, hello_records_freed);
	tcase_add_test(tc, keepalive_on_sessions);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(admission_suite());
	int failed;

	fx_skip_if_unavailable();
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
