// SPDX-License-Identifier: BSD-2-Clause
/*
 * key_file authentication of the control channel (issue 11).  Managers a
 * and b over the loop rail (fixture.c); a raw TCP client encodes frames
 * with the protocol's codec (src/ctl/wire.h), as test_admission.c does.
 * Refusals are asserted on the log lines both sides write.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "src/manager.h"
#ifdef FX_AUTH_SOFT
#include "rails/soft/soft_int.h"
#endif
#include "tests/manager/fixture.h"
#include "tests/manager/rawctl.h"

#define MiB (1u << 20)

static struct fx F;
static char dir[] = "/tmp/ry-auth-XXXXXX";
static char key1[64], key2[64];

/* ---- keys and the log ---- */

static void write_key(const char *path, unsigned char fill)
{
	unsigned char k[32];
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	ck_assert_int_ge(fd, 0);
	memset(k, fill, sizeof(k));
	ck_assert_int_eq(write(fd, k, sizeof(k)), (ssize_t)sizeof(k));
	close(fd);
}

static char logbuf[1 << 16];
static size_t loglen;

static void sink(enum ry_log_level level, const char *component,
		 const char *message, void *arg)
{
	int n =
	    snprintf(logbuf + loglen, sizeof(logbuf) - loglen, "%s\n", message);

	if (n > 0 && loglen + (size_t)n < sizeof(logbuf))
		loglen += (size_t)n;
}

static bool logged(const char *s)
{
	return strstr(logbuf, s) != NULL;
}

static void setup(void)
{
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(key1, sizeof(key1), "%s/k1", dir);
	snprintf(key2, sizeof(key2), "%s/k2", dir);
	write_key(key1, 0x11);
	write_key(key2, 0x22);
	loglen = 0;
	logbuf[0] = 0;
	ry_log_set_sink(sink, NULL);
}

static void teardown(void)
{
	ry_log_set_sink(NULL, NULL);
	unlink(key1);
	unlink(key2);
	rmdir(dir);
}

/* The key in path as the library loads it (free with
 * ry__auth_key_free). */
static struct ry__authkey *load_key(const char *path)
{
	struct ry__authkey *k = NULL;
	char why[400], hint[400];

	ck_assert_msg(
	    !ry__auth_load(path, &k, why, sizeof(why), hint, sizeof(hint)),
	    "%s", why);
	return k;
}

static void key_id_str(const char *path, char out[2 * RY__KEY_ID + 1])
{
	struct ry__authkey *k = load_key(path);

	ry__auth_ids_str((const unsigned char(*)[RY__KEY_ID])ry__auth_key_id(k),
			 1, out, 2 * RY__KEY_ID + 1);
	ry__auth_key_free(k);
}

/* ---- a raw client ---- */

/* HELLO with the auth flag and a nonce; *hello_h gets the body's hash. */
static void hello(struct frame *f, uint64_t node, const char *name,
		  const char *addr, bool auth, unsigned char hello_h[RY__MAC])
{
	raw_hello(f, node, name, addr, auth);
	if (hello_h)
		ry__auth_hash_hello(f->b + RY__CTL_HDR, f->n - RY__CTL_HDR,
				    hello_h);
}

/*
 * The dialer's side of the keyed handshake on raw session fd, as a (which
 * holds the key) would do it: HELLO, b's HELLO_ACK and its proof checked,
 * AUTH with a's proof.  t: the transcript, for the session keys.
 */
static void keyed_handshake(int fd, uint64_t node, const char *name,
			    const char *addr, unsigned char t[RY__MAC])
{
	unsigned char hello_h[RY__MAC], proof[RY__MAC], body[RY__MAC];
	struct ry__ctl_hdr h;
	struct ry__wbuf w;
	struct frame f, in;
	uint32_t len;

	hello(&f, node, name, addr, true, hello_h);
	raw_send(fd, f.b, f.n);
	in.n = 0;
	ck_assert(!closed_within(&F, fd, 500, &in));
	ck_assert(frame_hdr(&in, &h));
	len = h.h_len;
	ck_assert_uint_eq(in.n, RY__CTL_HDR + len);
	ck_assert_uint_eq(h.h_type, CTL_HELLO_ACK);
	ry__auth_transcript(hello_h, in.b + RY__CTL_HDR, len - RY__MAC, t);
	ck_assert(ry__auth_proof_ok(ry__auth_current(F.a), false, t,
				    in.b + RY__CTL_HDR + len - RY__MAC));
	ry__auth_proof(ry__auth_current(F.a), true, t, proof);
	ry__wbuf_init(&w, body, sizeof(body));
	ry__wire_auth_put(&w, proof);
	frame_start(&f, CTL_AUTH);
	put_body(&f, &w);
	frame_end(&f);
	raw_send(fd, f.b, f.n);
}

/* ---- tests ---- */

/* Both hold the same key; b admits only a, named in its config. */
static const struct fx_opts named_keyed = {
    .key_a = key1, .key_b = key1, .b_strict = true, .b_names_a = true};

/* The same key on both: the handshake passes, transfers work, every
 * frame after it is MACed (a's and b's sessions say so). */
START_TEST(same_key_works)
{
	struct fx_done d;

	ck_assert_int_eq(fx_init(&F, &named_keyed), 0);
	ck_assert_int_eq(write_one(&F, true, 20000, &d), 0);
	ck_assert_int_eq(write_one(&F, true, 20000, &d), 0);
	ck_assert_uint_eq(F.ev_a.n_conn_down + F.ev_b.n_conn_down, 0);
	ck_assert(!logged("refused"));
	fx_fini(&F);
}
END_TEST

/* a dials b with o: nothing goes through, b keeps no record of a, and
 * each side logs why (a: to_why, b: from_why). */
static void refused_both(const struct fx_opts *o, const char *to_why,
			 const char *from_why)
{
	char want[2][256];
	struct fx_done d;

	snprintf(want[0], sizeof(want[0]), "session to 127.0.0.1 refused: %s",
		 to_why);
	snprintf(want[1], sizeof(want[1]), "session from 127.0.0.1 refused: %s",
		 from_why);
	ck_assert_int_eq(fx_init(&F, o), 0);
	ck_assert_int_eq(write_one(&F, true, 20000, &d), -1);
	ck_assert_uint_eq(npeers(F.b), 0);
	for (int i = 0; i < 2; i++)
		ck_assert_msg(logged(want[i]), "%s: %s", want[i], logbuf);
	fx_fini(&F);
}

/* Different keys: refused on both sides with the reason (the key ids
 * each end holds), and b keeps no record of a. */
START_TEST(different_keys_refused)
{
	char w[2][128], ids[2][2 * RY__KEY_ID + 1];
	const char *path[2] = {key1, key2};

	for (int i = 0; i < 2; i++)
		key_id_str(path[i], ids[i]);
	snprintf(w[0], sizeof(w[0]),
		 "no common key: the peer holds key ids %s; this node holds %s",
		 ids[1], ids[0]);
	snprintf(w[1], sizeof(w[1]),
		 "no common key: the peer holds key ids %s; this node holds %s",
		 ids[0], ids[1]);
	refused_both(&(struct fx_opts){.key_a = key1,
				       .key_b = key2,
				       .op_timeout_ms = 1500},
		     w[0], w[1]);
}
END_TEST

/* A key on one side only, either side: refused both ways with the
 * reason. */
START_TEST(key_one_side_refused)
{
	struct fx_done d;

	ck_assert_int_eq(fx_init(&F, &(struct fx_opts){.key_a = key1,
						       .op_timeout_ms = 1500}),
			 0);
	ck_assert_int_eq(write_one(&F, true, 20000, &d), -1);
	ck_assert_uint_eq(npeers(F.b), 0);
	ck_assert_msg(logged("from 127.0.0.1 refused: the peer uses key_file; "
			     "this node has none"),
		      "%s", logbuf);
	ck_assert_msg(logged("to 127.0.0.1 refused: authentication failed: "
			     "the peer has no key_file; this node requires "
			     "one"),
		      "%s", logbuf);
	fx_fini(&F);
	loglen = 0;
	logbuf[0] = 0;

	ck_assert_int_eq(fx_init(&F, &(struct fx_opts){.key_b = key1,
						       .op_timeout_ms = 1500}),
			 0);
	ck_assert_int_eq(write_one(&F, true, 20000, &d), -1);
	ck_assert_uint_eq(npeers(F.b), 0);
	ck_assert_msg(logged("from 127.0.0.1 refused: peer sent no "
			     "authentication; this node requires key_file"),
		      "%s", logbuf);
	ck_assert_msg(logged("to 127.0.0.1 refused: authentication failed: "
			     "the peer requires key_file; this node has none"),
		      "%s", logbuf);
	fx_fini(&F);
}
END_TEST

/*
 * A raw client that knows the protocol but not the key claims configured
 * peer a from a's own address (loopback): before a connects, while a's
 * session is live, with a new incarnation, with and without the auth
 * flag, with a made-up proof.  It is never admitted, b keeps one peer
 * record, and a's traffic loses nothing.  (A new incarnation with the
 * auth flag is a restart only the proof can confirm: b answers, then
 * refuses the made-up proof.)
 */
START_TEST(impersonation_without_key)
{
	struct fx_done d;
	struct frame f, in, auth;
	char a_addr[100];
	int fd, early, i;

	ck_assert_int_eq(
	    fx_init(&F, &(struct fx_opts){.key_a = key1,
					  .key_b = key1,
					  .b_strict = true,
					  .b_names_a = true,
					  .b_handshake_timeout_ms = 60000}),
	    0);
	ry_manager_control_addr(F.a, a_addr, sizeof(a_addr));
	/* first in: b answers with its proof and waits for one */
	early = raw_connect(&F, "127.0.0.1");
	hello(&f, 0x5151, "a", a_addr, true, NULL);
	raw_send(early, f.b, f.n);
	in.n = 0;
	ck_assert(!closed_within(&F, early, 500, &in));
	ck_assert_uint_gt(in.n, 8 + RY__MAC);
	ck_assert_uint_eq(npeers(F.b), 0); /* nothing decided yet */
	/* the real a connects, proves the key and works meanwhile */
	ck_assert_int_eq(write_one(&F, true, 20000, &d), 0);
	{
		unsigned char proof[RY__MAC], body[RY__MAC];
		struct ry__wbuf w;

		memset(proof, 0xa5, sizeof(proof));
		ry__wbuf_init(&w, body, sizeof(body));
		ry__wire_auth_put(&w, proof);
		frame_start(&auth, CTL_AUTH);
		put_body(&auth, &w);
		frame_end(&auth);
	}
	for (i = 0; i < 4; i++) {
		fd = raw_connect(&F, "127.0.0.1");
		hello(&f, 0x6161 + i, "a", a_addr, i % 2, NULL);
		raw_send(fd, f.b, f.n);
		if (i % 2) {
			in.n = 0;
			ck_assert(!closed_within(&F, fd, 500, &in));
			ck_assert_uint_gt(in.n, 8 + RY__MAC);
			raw_send(fd, auth.b, auth.n);
		}
		ck_assert(closed_within(&F, fd, 10000, NULL));
		close(fd);
	}
	/* the early session's proof is made up: refused, nothing changed */
	raw_send(early, auth.b, auth.n);
	ck_assert(closed_within(&F, early, 10000, NULL));
	close(early);
	/* the rest from this source within 10 s are counted, not logged */
	ck_assert(logged("peer sent no authentication"));
	ck_assert_uint_eq(npeers(F.b), 1);
	ck_assert_int_eq(write_one(&F, true, 20000, &d), 0);
	ck_assert_uint_eq(F.ev_a.n_conn_down + F.ev_b.n_conn_down, 0);
	fx_fini(&F);
}
END_TEST

/*
 * A client holding the key completes the handshake (its checks of b's
 * proof are the dialer's), sends one good MACed frame, then one with a
 * flipped MAC byte: that closes its session only; a's goes on.
 */
START_TEST(flipped_mac_closes_session)
{
	unsigned char t[RY__MAC], ktx[RY__MAC], krx[RY__MAC], kdata[RY__MAC];
	struct fx_done d;
	struct frame rej;
	int fd, i;

	ck_assert_int_eq(
	    fx_init(&F, &(struct fx_opts){.key_a = key1, .key_b = key1}), 0);
	ck_assert_int_eq(write_one(&F, true, 20000, &d), 0);
	fd = raw_connect(&F, "127.0.0.1");
	keyed_handshake(fd, 0x7171, "raw", "127.0.0.1:9", t);
	ry__auth_session_keys(ry__auth_current(F.a), true, t, ktx, krx, kdata);
	/* CONN_REJ for a rail b does not have: harmless, if authentic */
	for (i = 0; i < 2; i++) {
		struct ry__wire_conn wc = {.wc_dst = RY_MAX_RAILS - 1,
					   .wc_attempt = 1};
		unsigned char mac[RY__MAC], body[64];
		struct ry__wbuf w;

		ry__wbuf_init(&w, body, sizeof(body));
		ry__wire_conn_put(&w, CTL_CONN_REJ, &wc);
		frame_start(&rej, CTL_CONN_REJ);
		put_body(&rej, &w);
		ry__auth_frame_mac(ktx, (uint64_t)i, CTL_CONN_REJ,
				   RY__CTL_VERSION, w.b, w.n, mac);
		if (i == 1)
			mac[7] ^= 0x40;
		put(&rej, mac, sizeof(mac));
		frame_end(&rej);
		raw_send(fd, rej.b, rej.n);
		if (i == 0)
			ck_assert(!closed_within(&F, fd, 500, NULL));
		else
			ck_assert(closed_within(&F, fd, 10000, NULL));
	}
	close(fd);
	ck_assert(logged("bad MAC"));
	ck_assert_int_eq(write_one(&F, true, 20000, &d), 0);
	ck_assert_uint_eq(F.ev_a.n_conn_down + F.ev_b.n_conn_down, 0);
	fx_fini(&F);
}
END_TEST

static bool b_saw_restart(void *arg)
{
	return F.ev_b.n_peer_restarted > 0;
}

static bool a_lost_b(void *arg)
{
	(void)arg;
	return F.ev_a.n_peer_down > 0;
}

/*
 * With a key, a new incarnation of configured peer a is taken as a
 * restart while a's old session is still open (a host gone without a
 * FIN): the proof is the evidence.  A client holding the key claims a
 * with a new incarnation; b admits it after the proof, reports
 * RY_EV_PEER_RESTARTED with both incarnations and closes the old session.
 * (Without a key the same claim is refused while the old session lives:
 * test_admission's impersonation_refused.)
 */
START_TEST(restart_proven_by_key)
{
	unsigned char t[RY__MAC];
	struct ry_peer_info ai;
	struct ry_peer *ba;
	struct fx_done d;
	char a_addr[100];
	int fd;

	ck_assert_int_eq(fx_init(&F, &named_keyed), 0);
	ck_assert_int_eq(write_one(&F, true, 20000, &d), 0);
	ry_manager_control_addr(F.a, a_addr, sizeof(a_addr));
	ck_assert_int_eq(ry_peer_get(F.b, "a", &ba), 0);
	ck_assert_int_eq(ry_peer_info(ba, &ai), 0);
	ck_assert(ai.ready && ai.incarnation);
	fd = raw_connect(&F, "127.0.0.1");
	keyed_handshake(fd, 0x9191, "a", a_addr, t);
	ck_assert_msg(fx_until(&F, b_saw_restart, NULL, 5000), "%s", logbuf);
	ck_assert_uint_eq(F.ev_b.restart_old, ai.incarnation);
	ck_assert_uint_eq(F.ev_b.restart_new, 0x9191);
	ck_assert_str_eq(F.ev_b.restart_peer, "a");
	ck_assert_int_eq(ry_peer_info(ba, &ai), 0);
	ck_assert_uint_eq(ai.incarnation, 0x9191);
	ck_assert_uint_eq(ai.restarts, 1);
	/* b closed the old session: a lost it (and, alive after all,
	 * dials again as the incarnation it is) */
	fx_until(&F, a_lost_b, NULL, 5000);
	ck_assert_uint_ge(F.ev_a.n_peer_down, 1);
	ck_assert_uint_eq(npeers(F.b), 1);
	close(fd);
	fx_fini(&F);
}
END_TEST

/* A frame of another control protocol version is refused by name. */
START_TEST(version_mismatch_named)
{
	struct frame f;
	int fd;

	ck_assert_int_eq(fx_init(&F, NULL), 0);
	fd = raw_connect(&F, "127.0.0.1");
	hello(&f, 0x8181, "old", "127.0.0.1:9", false, NULL);
	f.b[6] = 1; /* version 1 */
	raw_send(fd, f.b, f.n);
	ck_assert(closed_within(&F, fd, 10000, NULL));
	close(fd);
	ck_assert_msg(logged("control protocol version 1, this node speaks 2"),
		      "%s", logbuf);
	fx_fini(&F);
}
END_TEST

/* data_mac on one node only: refused at the handshake, both say why (the
 * QPs would connect and drop every packet of each other). */
START_TEST(data_mac_mismatch_refused)
{
	refused_both(&(struct fx_opts){.key_a = key1,
				       .key_b = key1,
				       .data_mac_a = true,
				       .op_timeout_ms = 1500},
		     "data_mac differs between the nodes",
		     "the peer has data_mac on; this node has it off");
}
END_TEST

#ifdef FX_AUTH_SOFT
/* On a's and b's rails: no packet failed its MAC, and every connected QP
 * has data_mac on as the config says; the QPs seen. */
static unsigned mac_qps(struct ry_manager *m, bool on)
{
	unsigned n = 0;

	for (unsigned i = 0; i < m->m_nrails; i++) {
		struct ry__lrail *lr = &m->m_rails[i];
		struct ry__soft_rail *r = to_srail(lr->lr_rail);
		struct ry_rail_stats st;

		pthread_mutex_lock(&lr->lr_lock);
		ck_assert_int_eq(ry__rail_get_stats(lr->lr_rail, &st), 0);
		ck_assert_uint_eq(st.rx_bad_mac, 0);
		for (struct ry__soft_qp *qp = r->qps; qp; qp = qp->next)
			if (qp->base.state == RY_QPS_RTS) {
				ck_assert(qp->mac.on == on);
				n++;
			}
		pthread_mutex_unlock(&lr->lr_lock);
	}
	return n;
}

/* The send key of a's connected QP on rail r0; false when there is none. */
static bool r0_key(uint8_t k[RY_QP_MAC_KEY])
{
	struct ry__lrail *lr = &F.a->m_rails[0];
	bool found = false;

	pthread_mutex_lock(&lr->lr_lock);
	for (struct ry__soft_qp *qp = to_srail(lr->lr_rail)->qps; qp;
	     qp = qp->next)
		if (qp->base.state == RY_QPS_RTS && qp->mac.on) {
			memcpy(k, qp->mac.ktx, RY_QP_MAC_KEY);
			found = true;
		}
	pthread_mutex_unlock(&lr->lr_lock);
	return found;
}

static bool r0_active(void *arg)
{
	return fx_active(F.a, "r0") == (arg ? 1 : 0);
}

/* A reconnect (r0's link pulled and restored) gives the connection new
 * keys: nothing captured from the old one verifies on the new one. */
START_TEST(data_mac_new_keys_on_reconnect)
{
	struct fx_opts o = named_keyed;
	uint8_t k1[RY_QP_MAC_KEY], k2[RY_QP_MAC_KEY];
	struct fx_done d;

	o.data_mac_a = o.data_mac_b = true;
	ck_assert_int_eq(fx_init(&F, &o), 0);
	ck_assert_int_eq(write_one(&F, true, 20000, &d), 0);
	ck_assert(r0_key(k1));
	ck_assert_int_eq(ry_rail_link(F.a, "r0", false), 0);
	ck_assert(fx_until(&F, r0_active, NULL, 10000));
	ck_assert_int_eq(ry_rail_link(F.a, "r0", true), 0);
	ck_assert(fx_until(&F, r0_active, &F, 20000));
	ck_assert(r0_key(k2));
	ck_assert(memcmp(k1, k2, sizeof(k1)));
	ck_assert_int_eq(write_one(&F, true, 20000, &d), 0);
	ck_assert_uint_eq(mac_qps(F.a, true) + mac_qps(F.b, true) > 0, 1);
	fx_fini(&F);
}
END_TEST

/* data_mac on both: transfers work and verify, nothing is dropped for its
 * MAC, no connection goes down; the same without it, for contrast. */
START_TEST(data_mac_traffic)
{
	struct fx_opts o = named_keyed;
	struct fx_done d;

	o.data_mac_a = o.data_mac_b = _i == 1;
	ck_assert_int_eq(fx_init(&F, &o), 0);
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(write_one(&F, true, 20000, &d), 0);
	ck_assert_uint_eq(F.ev_a.n_conn_down + F.ev_b.n_conn_down, 0);
	ck_assert_uint_ge(mac_qps(F.a, _i == 1), 2);
	ck_assert_uint_ge(mac_qps(F.b, _i == 1), 2);
	fx_fini(&F);
}
END_TEST
#endif

static Suite *auth_suite(void)
{
	Suite *s = suite_create("auth");
	TCase *tc = tcase_create("key_file");

	tcase_set_timeout(tc, 120);
	tcase_add_checked_fixture(tc, setup, teardown);
#ifdef FX_AUTH_SOFT
	/* the soft build: what needs soft rails */
	tcase_add_loop_test(tc, data_mac_traffic, 0, 2);
	tcase_add_test(tc, data_mac_new_keys_on_reconnect);
	suite_add_tcase(s, tc);
	return s;
#endif
	tcase_add_test(tc, same_key_works);
	tcase_add_test(tc, restart_proven_by_key);
	tcase_add_test(tc, different_keys_refused);
	tcase_add_test(tc, data_mac_mismatch_refused);
	tcase_add_test(tc, key_one_side_refused);
	tcase_add_test(tc, impersonation_without_key);
	tcase_add_test(tc, flipped_mac_closes_session);
	tcase_add_test(tc, version_mismatch_named);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(auth_suite());
	int failed;

	fx_skip_if_unavailable();
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
