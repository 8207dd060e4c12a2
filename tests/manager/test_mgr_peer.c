// SPDX-License-Identifier: BSD-2-Clause
/*
 * The rail manager end to end, two managers in one process over the loop
 * rail (label unit) or the soft rail (label soft), every transfer
 * verified byte for byte (mgr_common.h).
 *
 * Peers: partial rail pairing, crashes and restarts, both sides dialing at
 * once, peers by config name, records made from a HELLO freed after the
 * sender leaves unless held, control-channel garbage, the log section of
 * a file, and destroy with operations in flight.
 */
#include <check.h>
#include <stdatomic.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/loop/loop.h"
#include "src/manager.h"
#include "tests/manager/fixture.h"
#include "tests/manager/mgr_common.h"

/* ---- records b made from a's HELLO, after a has gone ---- */

static struct ry_peer *g_from; /* the sender b's callback saw */
static bool g_hold;	       /* ... and ry_peer_hold()s */
static unsigned g_got;

static void recv_from(struct ry_peer *from, const struct ry_message *m,
		      void *arg)
{
	(void)m;
	(void)arg;
	if (!g_got++ && g_hold)
		ry_peer_hold(from);
	g_from = from;
}

/* b's records that a's HELLO named "a": 0 or 1 */
static unsigned b_knows_a(void)
{
	unsigned n = 0;

	ry__lock_and_run_leftovers(F.b);
	for (struct ry_peer *p = F.b->m_peers; p; p = p->pr_next)
		n += !strcmp(p->pr_node_name, "a");
	ry__unlock(F.b);
	return n;
}

static bool b_forgot_a(void *arg)
{
	(void)arg;
	return b_knows_a() == 0;
}

/* b's record of a has no session and no connection beyond BACKOFF: all
 * that could still keep it is the application's hold */
static bool b_done_with_a(void *arg)
{
	bool done = false;

	(void)arg;
	ry__lock_and_run_leftovers(F.b);
	for (struct ry_peer *p = F.b->m_peers; p; p = p->pr_next) {
		if (strcmp(p->pr_node_name, "a"))
			continue;
		done = !p->pr_nctl;
		for (unsigned i = 0; done && i < F.b->m_nrails; i++)
			done = p->pr_conn[i]->cn_state == CONN_IDLE ||
			       p->pr_conn[i]->cn_state == CONN_BACKOFF ||
			       p->pr_conn[i]->cn_state == CONN_UNPAIRED;
	}
	ry__unlock(F.b);
	return done;
}

/* a sends b a message and goes away for good */
static void a_says_hello_and_dies(bool hold)
{
	struct fx_done d = {0};

	g_from = NULL;
	g_got = 0;
	g_hold = hold;
	ry_set_recv_cb(F.b, recv_from, NULL);
	ck_assert_int_eq(ry_send(F.ab, "hi", 2, fx_cb, &d), 0);
	ck_assert(fx_until_done(&F, &d, 1, 10000));
	ck_assert_int_eq(d.ok, 1);
	for (unsigned i = 0; i < 2000 && !g_got; i++)
		fx_sleep_progress(&F, 5);
	ck_assert_uint_eq(g_got, 1);
	ck_assert_uint_eq(b_knows_a(), 1);
	ry_manager_destroy(F.a);
	F.a = NULL;
	F.ab = NULL;
	F.ra = NULL;
}

/* railyard_rail_goodbyes_total of b, summed over its rails */
static uint64_t b_goodbyes_metric(void)
{
	static char text[1 << 16];
	const char *l = text;
	uint64_t sum = 0;

	ck_assert_int_gt(ry_metrics_render(F.b, text, sizeof(text)), 0);
	while ((l = strstr(l, "\nrailyard_rail_goodbyes_total{"))) {
		l = strchr(l, '}');
		ck_assert_ptr_nonnull(l);
		sum += strtoull(l + 1, NULL, 10);
	}
	return sum;
}

/*
 * A server hears from thousands of clients that come and go: the record
 * of one that only sent messages (made from its HELLO, never named by
 * the application) is freed once the client has gone, as the records of
 * clients that never sent one are (test_admission: hello_records_freed).
 * The goodbyes it said stay counted: a Prometheus counter never falls.
 */
START_TEST(sender_forgotten_after_leaving)
{
	setup_opts(NULL);
	a_says_hello_and_dies(false);
	ck_assert_msg(fx_until(&F, b_forgot_a, NULL, 10000),
		      "b still holds the record of a, gone 10 s ago");
	/* a's message went over a connection, closed by its goodbye */
	ck_assert_uint_gt(b_goodbyes_metric(), 0);
	teardown();
}
END_TEST

/* ... unless the application holds it (ry_peer_hold in the callback):
 * then it stays, usable, until ry_peer_release(). */
START_TEST(held_sender_kept_until_released)
{
	struct ry_peer_info pi;

	setup_opts(NULL);
	a_says_hello_and_dies(true);
	ck_assert(fx_until(&F, b_done_with_a, NULL, 10000));
	/* three reaper periods (100 ms) with nothing else keeping it */
	fx_sleep_progress(&F, 400);
	ck_assert_uint_eq(b_knows_a(), 1);
	ck_assert_int_eq(ry_peer_info(g_from, &pi), 0);
	ck_assert_uint_ne(pi.incarnation, 0);
	ry_peer_release(g_from);
	ck_assert_msg(fx_until(&F, b_forgot_a, NULL, 10000),
		      "b still holds the record of a, released 10 s ago");
	teardown();
}
END_TEST

/* ---- peers ---- */

START_TEST(partial_rail_pairing)
{
	struct ry_peer_info pi;
	struct ry_counters c;

	setup_opts(&(struct fx_opts){.nrails_a = 3,
				     .nrails_b = 2,
				     .net_a = {"eth", "ib", "roce"},
				     .net_b = {"roce", "eth"}});
	ck_assert_int_eq(write_verify(0, 4 * MiB, 1), RY_OK);
	ck_assert_int_eq(read_verify(0, 4 * MiB, 2), RY_OK);
	ck_assert_int_eq(ry_rail_counters(F.a, "r1", &c), 0);
	ck_assert_uint_eq(c.bytes, 0);
	ck_assert_int_eq(ry_rail_counters(F.a, "r0", &c), 0);
	ck_assert_uint_gt(c.bytes, 0);
	ck_assert_int_eq(ry_rail_counters(F.a, "r2", &c), 0);
	ck_assert_uint_gt(c.bytes, 0);
	ck_assert_int_eq(ry_rail_counters(F.a, "nope", &c), -ENOENT);
	/* two of a's three rails are paired with b, both carrying traffic;
	 * a link taken down stays paired but is no longer usable */
	ck_assert_int_eq(ry_peer_info(F.ab, &pi), 0);
	ck_assert(pi.ready);
	ck_assert_uint_ne(pi.incarnation, 0);
	ck_assert_uint_eq(pi.rails_paired, 2);
	ck_assert_uint_eq(pi.rails_usable, 2);
	ck_assert_uint_eq(pi.rails_active, 2);
	ck_assert_int_eq(ry_rail_link(F.a, "r2", false), 0);
	fx_progress(&F);
	ck_assert_int_eq(ry_peer_info(F.ab, &pi), 0);
	ck_assert_uint_eq(pi.rails_paired, 2);
	ck_assert_uint_eq(pi.rails_usable, 1);
	ck_assert_uint_le(pi.rails_active, 1);
	ck_assert_int_eq(ry_peer_info(NULL, &pi), -EINVAL);
	teardown();
}
END_TEST

START_TEST(peer_crash)
{
	struct stream s = {.slots = 4};
	char addr[128];
	struct ry_peer *again;

	setup_opts(&(struct fx_opts){.op_timeout_ms = 1000});
	stream_run(&s, 200);
	/* b dies without a word, mid-transfer */
	snprintf(F.o.b_control, sizeof(F.o.b_control), "%s", F.b_addr);
	fx_destroy_b(&F);
	s.slots = 0;
	{
		unsigned i;

		for (i = 0; i < 4; i++)
			if (s.busy[i])
				ck_assert_msg(
				    fx_until_done(&F, &s.d[i], 1, 5000),
				    "op hung after peer crash");
		for (i = 0; i < 4; i++)
			if (s.busy[i] && s.d[i].err) {
				ck_assert_int_eq(s.d[i].last_err, RY_ETIMEDOUT);
				ck_assert_msg(strstr(s.d[i].reason, "peer"),
					      "%s", s.d[i].reason);
			}
	}
	/* a new b on the same address: new incarnation, old descriptor
	 * refused, new one works */
	ck_assert_int_eq(fx_create_b(&F), 0);
	snprintf(addr, sizeof(addr), "%s", F.b_addr);
	ck_assert_int_eq(ry_peer_get(F.a, addr, &again), 0);
	ck_assert_ptr_eq(again, F.ab);
	ck_assert_int_eq(write_verify(0, MiB, 77), RY_OK);
	ck_assert_int_eq(read_verify(MiB, MiB, 78), RY_OK);
	teardown();
}
END_TEST

static bool restart_seen(void *arg)
{
	return F.ev_a.n_peer_restarted > 0;
}

static bool all_zero(const unsigned char *p, size_t n)
{
	while (n--)
		if (*p++)
			return false;
	return true;
}

/*
 * b crashes mid-stream and a new b comes up on the same address at once.
 * a learns it from the new HELLO: one RY_EV_PEER_RESTARTED with both
 * incarnations; every op aimed at the old b (in flight, and one posted
 * while b was down) completes with RY_ESTALE long before op_timeout
 * (30 s); nothing lands in the new b's memory; the old descriptor is
 * refused at post (-ESTALE, also from ry_desc_live) and a new one works.
 */
START_TEST(peer_restart)
{
	struct stream s = {.slots = 4};
	unsigned char old_desc[RY_DESC_MAX];
	size_t old_len = (size_t)0;
	struct ry_peer_info before, after;
	struct ry_peer_entry pe[4];
	struct fx_done late = {0}, d = {0};
	struct ry_peer *nobody;
	unsigned i;

	setup_opts(&(struct fx_opts){.op_timeout_ms = 30000});
	/* streaming until the HELLOs are exchanged: a loaded machine may take
	 * longer than the 200 ms that are usually plenty */
	stream_run(&s, 200);
	for (uint64_t end = fx_now_ns() + 10000000000ull;;) {
		ck_assert_int_eq(ry_peer_info(F.ab, &before), 0);
		if (before.ready || fx_now_ns() >= end)
			break;
		stream_run(&s, 50);
	}
	ck_assert(before.ready);
	ck_assert_uint_eq(before.restarts, 0);
	ck_assert_int_eq(ry_desc_live(F.ab, F.desc_b, (size_t)F.desc_b_len), 0);
	/* a's own descriptor is another node's as far as b is concerned */
	ck_assert_int_eq(ry_desc_live(F.ab, F.desc_a, (size_t)F.desc_a_len),
			 -ENXIO);
	ck_assert_int_eq(ry_desc_live(F.ab, F.desc_b, 7), -EBADMSG);
	ck_assert_int_eq(ry_desc_live(NULL, F.desc_b, (size_t)F.desc_b_len),
			 -EINVAL);
	ck_assert_int_eq(ry_peer_get(F.a, "127.0.0.1:1", &nobody), 0);
	ck_assert_int_eq(ry_desc_live(nobody, F.desc_b, (size_t)F.desc_b_len),
			 -EAGAIN);
	memcpy(old_desc, F.desc_b, (size_t)F.desc_b_len);
	old_len = (size_t)F.desc_b_len;

	/* b dies without a word, mid-transfer; a write is posted while it
	 * is down; a new b is on the same address a moment later */
	snprintf(F.o.b_control, sizeof(F.o.b_control), "%s", F.b_addr);
	fx_destroy_b(&F);
	ck_assert_int_eq(ry_write(F.ab, F.ra, 5 * MiB, old_desc, old_len,
				  5 * MiB, MiB, fx_cb, &late),
			 0);
	fx_sleep_progress(&F, 200);
	ck_assert_int_eq(fx_create_b(&F), 0);
	ck_assert_msg(fx_until(&F, restart_seen, NULL, 10000),
		      "no RY_EV_PEER_RESTARTED");
	ck_assert_int_eq(ry_peer_info(F.ab, &after), 0);
	ck_assert_uint_eq(F.ev_a.n_peer_restarted, 1);
	ck_assert_uint_eq(F.ev_a.restart_old, before.incarnation);
	ck_assert_uint_ne(F.ev_a.restart_new, before.incarnation);
	ck_assert_uint_eq(F.ev_a.restart_new, after.incarnation);
	ck_assert_str_eq(F.ev_a.restart_peer, ry_peer_name(F.ab));
	ck_assert_uint_ge(F.ev_a.n_peer_down, 1);
	ck_assert_uint_ge(F.ev_a.n_peer_up, 2);
	ck_assert_uint_eq(after.restarts, 1);

	/* everything aimed at the old b fails with RY_ESTALE, promptly */
	ck_assert(fx_until_done(&F, &late, 1, 5000));
	ck_assert_uint_eq(late.err, 1);
	ck_assert_int_eq(late.last_err, RY_ESTALE);
	ck_assert_msg(strstr(late.reason, "restarted"), "%s", late.reason);
	ck_assert_str_eq(ry_status_str(RY_ESTALE),
			 "peer restarted: the target memory is gone");
	for (i = 0; i < 4; i++) {
		if (!s.busy[i])
			continue;
		ck_assert_msg(fx_until_done(&F, &s.d[i], 1, 5000),
			      "op to the old incarnation hung");
		if (s.d[i].err)
			ck_assert_int_eq(s.d[i].last_err, RY_ESTALE);
		s.busy[i] = false;
	}
	fx_sleep_progress(&F, 100);
	ck_assert_msg(all_zero(F.bufb, F.buflen),
		      "a write meant for the old b landed in the new one");

	/* the old descriptor is refused; the new one works */
	ck_assert_int_eq(ry_desc_live(F.ab, old_desc, old_len), -ESTALE);
	ck_assert_int_eq(
	    ry_write(F.ab, F.ra, 0, old_desc, old_len, 0, MiB, fx_cb, &d),
	    -ESTALE);
	ck_assert_int_eq(
	    ry_read(F.ab, F.ra, 0, old_desc, old_len, 0, MiB, fx_cb, &d),
	    -ESTALE);
	ck_assert_int_eq(ry_desc_live(F.ab, F.desc_b, (size_t)F.desc_b_len), 0);
	ck_assert_int_eq(write_verify(0, MiB, 77), RY_OK);
	ck_assert_int_eq(read_verify(MiB, MiB, 78), RY_OK);
	ck_assert_uint_eq(d.total, 0);

	/* both peers a knows are listed, with their state */
	ck_assert_int_eq(ry_peer_list(F.a, NULL, 0), 2);
	ck_assert_int_eq(ry_peer_list(F.a, pe, 4), 2);
	for (i = 0; i < 2 && strcmp(pe[i].name, ry_peer_name(F.ab)); i++)
		;
	ck_assert_uint_lt(i, 2);
	ck_assert_str_eq(pe[i].state, "ready");
	ck_assert(pe[i].dialed && !pe[i].from_hello);
	ck_assert_uint_eq(pe[i].info.restarts, 1);
	ck_assert_uint_eq(pe[i].info.incarnation, after.incarnation);
	ck_assert_uint_gt(pe[i].counters.bytes, 0);
	ck_assert_str_eq(pe[1 - i].name, "127.0.0.1:1");
	ck_assert(!pe[1 - i].info.ready);
	ck_assert_int_eq(ry_peer_list(F.a, pe, 1), 2);
	ck_assert_int_eq(ry_peer_list(NULL, pe, 1), -EINVAL);
	ck_assert_int_eq(ry_peer_list(F.a, NULL, 1), -EINVAL);
	/* the new b knows a from its HELLO only */
	ck_assert_int_eq(ry_peer_list(F.b, pe, 4), 1);
	ck_assert(pe[0].from_hello && !pe[0].dialed);
	ck_assert_str_eq(pe[0].state, "ready");
	ck_assert_uint_eq(F.ev_b.n_peer_restarted, 0);
	ck_assert_uint_ge(F.ev_b.n_peer_up, 1);
	teardown();
}
END_TEST

static bool all_three_up(void *arg)
{
	(void)arg;
	return fx_active(F.a, "r0") && fx_active(F.a, "r1") &&
	       fx_active(F.a, "r2") && fx_active(F.b, "r0") &&
	       fx_active(F.b, "r1") && fx_active(F.b, "r2");
}

/* Both sides dial each other at once and connect the same rail pairs. */
START_TEST(both_sides_connect_at_once)
{
	struct fx_done da = {0}, db = {0};
	char a_addr[100];
	struct ry_peer *ba;
	unsigned i;

	setup_opts(&(struct fx_opts){.nrails_a = 3});
	ck_assert_int_eq(ry_manager_control_addr(F.a, a_addr, sizeof(a_addr)),
			 0);
	ck_assert_int_eq(ry_peer_get(F.b, a_addr, &ba), 0);
	fx_fill(F.bufa, 2 * MiB, 21);
	fx_fill(F.bufb + 4 * MiB, 2 * MiB, 22);
	for (i = 0; i < 2; i++) {
		ck_assert_int_eq(ry_write(F.ab, F.ra, i * MiB, F.desc_b,
					  (size_t)F.desc_b_len, i * MiB, MiB,
					  fx_cb, &da),
				 0);
		ck_assert_int_eq(ry_write(ba, F.rb, (4 + i) * MiB, F.desc_a,
					  (size_t)F.desc_a_len, (4 + i) * MiB,
					  MiB, fx_cb, &db),
				 0);
	}
	ck_assert(fx_until_done(&F, &da, 2, 10000));
	ck_assert(fx_until_done(&F, &db, 2, 10000));
	ck_assert_uint_eq(da.ok + db.ok, 4);
	ck_assert(!memcmp(F.bufa, F.bufb, 2 * MiB));
	ck_assert(!memcmp(F.bufa + 4 * MiB, F.bufb + 4 * MiB, 2 * MiB));
	/* the ops may have needed fewer rails than will come up */
	ck_assert_msg(fx_until(&F, all_three_up, NULL, 10000),
		      "not every rail pair connected once");
	for (i = 0; i < 3; i++) {
		char name[16];

		snprintf(name, sizeof(name), "r%u", i);
		ck_assert_uint_eq(fx_active(F.a, name), 1);
		ck_assert_uint_eq(fx_active(F.b, name), 1);
	}
	teardown();
}
END_TEST

/*
 * A rail that answers -EAGAIN to a QP's first moves to RTR (the verbs rail
 * while rdma_cm's REQ and REP go, or while a MAC is resolved) keeps that
 * QP: the manager asks again on the connection's timer, and neither
 * drops the QP nor blocks its thread.  Each new QP owes the rail's
 * -EAGAINs afresh, so a manager that gave the attempt up on -EAGAIN would
 * never connect.
 */
START_TEST(rtr_again_keeps_the_qp)
{
	struct ry_fault f = {.rtr_again = 4};

	setup_opts(&(struct fx_opts){.nrails_a = 1});
	ck_assert_int_eq(ry__rail_fault(F.a, "r0", &f), 0);
	ck_assert_int_eq(ry__rail_fault(F.b, "r0", &f), 0);
	ck_assert_int_eq(write_verify(0, MiB, 41), RY_OK);
	ck_assert_int_eq(read_verify(MiB, MiB, 42), RY_OK);
	ck_assert_uint_eq(fx_active(F.a, "r0"), 1);
	ck_assert_uint_eq(fx_active(F.b, "r0"), 1);
	teardown();
}
END_TEST

/* A peer named in the config is found by name; unknown names are not. */
START_TEST(peer_by_config_name)
{
	struct ry_config c;
	struct ry_peer_config pc = {.name = "bee"};
	struct ry_peer_entry pe[2];
	struct ry_manager *m;
	struct ry_region *rg;
	struct ry_peer *p, *q;
	struct fx_done d = {0};
	unsigned char *buf = malloc(MiB);
	uint64_t end;

	setup_opts(NULL);
	ck_assert_ptr_nonnull(buf);
	fx_config(&c, &F.o, false);
	snprintf(c.node, sizeof(c.node), "c");
	snprintf(pc.address, sizeof(pc.address), "%s", F.b_addr);
	c.peers = &pc;
	c.n_peers = 1;
	ck_assert_int_eq(ry_manager_create(&c, &m), 0);
	/* listed before first use, as new */
	ck_assert_int_eq(ry_peer_list(m, pe, 2), 1);
	ck_assert_str_eq(pe[0].name, "bee");
	ck_assert_str_eq(pe[0].state, "new");
	ck_assert_str_eq(pe[0].address, F.b_addr);
	ck_assert_int_eq(ry_peer_get(m, "nosuch", &p), -ENOENT);
	ck_assert_int_eq(ry_peer_get(m, "bee", &p), 0);
	ck_assert_int_eq(ry_peer_list(m, pe, 2), 1); /* the record now */
	ck_assert_str_eq(ry_peer_name(p), "bee");
	ck_assert_int_eq(ry_peer_get(m, F.b_addr, &q), 0);
	ck_assert_ptr_eq(p, q);
	ck_assert_int_eq(ry_mr_reg(m, buf, MiB, 0, &rg), 0);
	fx_fill(buf, MiB, 31);
	ck_assert_int_eq(ry_write(p, rg, 0, F.desc_b, (size_t)F.desc_b_len, 0,
				  MiB, fx_cb, &d),
			 0);
	end = fx_now_ns() + 10000000000ull;
	while (!d.total && fx_now_ns() < end) {
		ry_progress(m);
		fx_progress(&F);
	}
	ck_assert_uint_eq(d.ok, 1);
	ck_assert(!memcmp(buf, F.bufb, MiB));
	ck_assert_int_eq(ry_mr_dereg(rg), 0);
	ry_manager_destroy(m);
	free(buf);
	teardown();
}
END_TEST

/* Garbage on the control port closes that socket and nothing else. */
/*
 * A config file's log section is how an operator turns on debugging of a
 * server that links the library: ry_manager_create_from_file applies it.
 */
static struct log_match debug_lines = {.level = RY_LOG_DEBUG};

static int create_with_log(const char *level)
{
	char path[] = "/tmp/ry-logcfg-XXXXXX";
	struct ry_manager *m = NULL;
	int fd = mkstemp(path);
	FILE *f;

	ck_assert_int_ge(fd, 0);
	f = fdopen(fd, "w");
	ck_assert_ptr_nonnull(f);
	fprintf(f,
		"control = \"127.0.0.1:0\"\n"
		"rail r0 { provider = soft\n address = \"127.0.0.1:0\" }\n"
		"log { level = %s }\n",
		level);
	fclose(f);
	atomic_store(&debug_lines.n, 0);
	ry_log_set_sink(count_lines, &debug_lines);
	ck_assert_int_eq(ry_manager_create_from_file(path, &m), 0);
	ry_manager_destroy(m);
	ry_log_set_sink(NULL, NULL);
	unlink(path);
	ry_log_set_level(RY_LOG_WARN);
	return (int)atomic_load(&debug_lines.n);
}

START_TEST(log_section_of_a_file)
{
	ck_assert_int_gt(create_with_log("debug"), 0);
	ck_assert_int_eq(create_with_log("warn"), 0);
}
END_TEST

START_TEST(control_garbage)
{
	static const unsigned char bad_version[8] = {4, 0, 0, 0, 1, 0, 9, 0};
	static const unsigned char huge[8] = {0xff, 0xff, 0xff, 0x7f,
					      1,    0,	  1,	0};
	static const unsigned char short_hello[12] = {4, 0, 0, 0, 1, 0,
						      1, 0, 1, 2, 3, 4};
	const unsigned char *frames[] = {bad_version, huge, short_hello};
	const size_t lens[] = {8, 8, 12};
	unsigned char junk[4096];
	struct sockaddr_in sa = {.sin_family = AF_INET};
	unsigned i;

	setup_opts(NULL);
	ck_assert_int_eq(write_verify(0, MiB, 1), RY_OK);
	fx_fill(junk, sizeof(junk), 3);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	sa.sin_port = htons((uint16_t)atoi(strrchr(F.b_addr, ':') + 1));
	for (i = 0; i < 4; i++) {
		int fd = socket(AF_INET, SOCK_STREAM, 0);

		ck_assert_int_ge(fd, 0);
		ck_assert_int_eq(
		    connect(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
		if (i < 3)
			ck_assert(write(fd, frames[i], lens[i]) > 0);
		else
			ck_assert(write(fd, junk, sizeof(junk)) > 0);
		fx_sleep_progress(&F, 20);
		close(fd);
	}
	fx_sleep_progress(&F, 50);
	ck_assert_int_eq(write_verify(0, MiB, 2), RY_OK);
	ck_assert_int_eq(read_verify(MiB, MiB, 3), RY_OK);
	teardown();
}
END_TEST

static struct fx_done CANCEL;

START_TEST(destroy_cancels_in_flight)
{
	struct ry_fault_spec cut = {.drop_all = true};
	unsigned i;

	memset(&CANCEL, 0, sizeof(CANCEL));
	setup_opts(NULL);
	ck_assert_int_eq(write_verify(0, 4096, 1), RY_OK);
	ck_assert_int_eq(ry_rail_fault(F.a, "r0", &cut), 0);
	ck_assert_int_eq(ry_rail_fault(F.a, "r1", &cut), 0);
	for (i = 0; i < 20; i++)
		ck_assert_int_eq(ry_write(F.ab, F.ra, 0, F.desc_b,
					  (size_t)F.desc_b_len, 0, MiB, fx_cb,
					  &CANCEL),
				 0);
	ck_assert_int_eq(ry_send(F.ab, "x", 1, fx_cb, &CANCEL), 0);
	fx_sleep_progress(&F, 20);
	ry_manager_destroy(F.a);
	F.a = NULL;
	ck_assert_uint_eq(CANCEL.total, 21);
	ck_assert_uint_eq(CANCEL.err, 21);
	ck_assert_int_eq(CANCEL.last_err, RY_ECANCELED);
	teardown();
}
END_TEST

int main(void)
{
	const struct mgr_case cases[] = {
	    {"manager", partial_rail_pairing, MGR_ANY},
	    {"manager", peer_crash, MGR_ANY},
	    {"manager", peer_restart, MGR_ANY},
	    {"manager", both_sides_connect_at_once, MGR_ANY},
	    {"manager", rtr_again_keeps_the_qp, MGR_SOFT},
	    {"manager", peer_by_config_name, MGR_ANY},
	    {"manager", control_garbage, MGR_ANY},
	    {"manager", log_section_of_a_file, MGR_NOT_LOOP},
	    {"manager", destroy_cancels_in_flight, MGR_ANY},
	    {"manager", sender_forgotten_after_leaving, MGR_ANY},
	    {"manager", held_sender_kept_until_released, MGR_ANY},
	};

	return mgr_main("peer", cases, sizeof(cases) / sizeof(cases[0]));
}
