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

#include "src/ctl/ctl_int.h"
#include "src/manager.h"
#ifdef FX_AUTH_SOFT
#include "rails/soft/soft_int.h"
#endif
#include "tests/manager/fixture.h"
#include "tests/manager/rawctl.h"

#define MiB (1u << 20)

static struct fx F;
static char dir[] = "/tmp/ry-auth-XXXXXX";
static char key1[64], key2[64], ka[64], kb[64];

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
	/* a fresh template each time: CK_FORK=no (valgrind) runs every test
	 * in one process */
	snprintf(dir, sizeof(dir), "/tmp/ry-auth-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(key1, sizeof(key1), "%s/k1", dir);
	snprintf(key2, sizeof(key2), "%s/k2", dir);
	snprintf(ka, sizeof(ka), "%s/ka", dir);
	snprintf(kb, sizeof(kb), "%s/kb", dir);
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
	unlink(ka);
	unlink(kb);
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

/* ---- key rotation (reload) ---- */

/* The key ids m holds, newest first. */
static unsigned held(struct ry_manager *m, unsigned char ids[2][RY__KEY_ID])
{
	unsigned n;

	ry__lock_and_run_leftovers(m);
	n = ry__auth_ids(m, ids, 2);
	ry__unlock(m);
	return n;
}

static bool same_id(const unsigned char *x, const struct ry__authkey *k)
{
	return !memcmp(x, ry__auth_key_id(k), RY__KEY_ID);
}

/* m's admitted sessions whose handshake used key k, and all of them. */
static unsigned sessions_with(struct ry_manager *m, const struct ry__authkey *k,
			      unsigned *all)
{
	unsigned n = 0, t = 0;

	ry__lock_and_run_leftovers(m);
	for (struct ry__ctl *c = m->m_ctls; c; c = c->c_next)
		if (!c->c_dead && c->c_admitted) {
			t++;
			n += same_id(c->c_auth->a_key, k);
		}
	ry__unlock(m);
	if (all)
		*all = t;
	return n;
}

static bool both_admitted(void *arg)
{
	unsigned na, nb;

	(void)arg;
	sessions_with(F.a, ry__auth_current(F.a), &na);
	sessions_with(F.b, ry__auth_current(F.b), &nb);
	return na && nb;
}

/* Close m's control sessions, so that new handshakes follow. */
static void kill_sessions(struct ry_manager *m)
{
	ry__lock_and_run_leftovers(m);
	for (struct ry__ctl *c = m->m_ctls; c; c = c->c_next)
		if (!c->c_dead)
			ry__ctl_kill(c, "test: handshake again");
	ry__unlock(m);
}

/* Reload a or b with the fixture's config (b naming a, as fx_create_b
 * does) and this key_overlap_s; problems appended to text. */
static char problems[2048];

static void note(const struct ry_config_error *e, void *arg)
{
	size_t n = strlen(problems);

	(void)arg;
	snprintf(problems + n, sizeof(problems) - n, "%s\n", e->message);
}

static int reload_key(bool is_b, uint32_t overlap_s)
{
	struct ry_peer_config pa = {.name = "a"};
	struct ry_config c;

	fx_config(&c, &F.o, is_b);
	c.key_overlap_s = overlap_s;
	if (is_b && F.o.b_names_a) {
		ry_manager_control_addr(F.a, pa.address, sizeof(pa.address));
		c.peers = &pa;
		c.n_peers = 1;
	}
	problems[0] = 0;
	return ry_manager_reload(is_b ? F.b : F.a, &c, note, NULL);
}

/*
 * A raw dialer holding keys ks[0..n) says HELLO to b, listing their ids
 * (none without list).  Admitted: true, the key b chose in *used (b's
 * HELLO_ACK named it, its proof verified under it, and our AUTH went
 * out).  Refused: false, what b sent in *in.
 */
static bool raw_dial(int fd, struct ry__authkey *const *ks, unsigned n,
		     bool list, const struct ry__authkey **used,
		     struct frame *in)
{
	static struct ry__wire_hello h, ack;
	static unsigned node = 0x4200;
	unsigned char hello_h[RY__MAC], t[RY__MAC], proof[RY__MAC];
	const struct ry__authkey *k = NULL;
	struct ry__ctl_hdr hd;
	struct ry__wbuf w;
	struct frame f;

	memset(&h, 0, sizeof(h));
	h.wh_node = ++node;
	snprintf(h.wh_name, sizeof(h.wh_name), "raw%u", node);
	snprintf(h.wh_addr, sizeof(h.wh_addr), "127.0.0.1:%u", node);
	h.wh_auth = true;
	ry__auth_nonce(h.wh_nonce);
	h.wh_nids = list ? n : 0;
	for (unsigned i = 0; list && i < n; i++)
		memcpy(h.wh_ids[i], ry__auth_key_id(ks[i]), RY__KEY_ID);
	frame_hello(&f, CTL_HELLO, &h);
	ry__auth_hash_hello(f.b + RY__CTL_HDR, f.n - RY__CTL_HDR, hello_h);
	raw_send(fd, f.b, f.n);
	in->n = 0;
	if (closed_within(&F, fd, 500, in))
		return false;
	ck_assert(frame_hdr(in, &hd));
	ck_assert_uint_eq(hd.h_type, CTL_HELLO_ACK);
	ck_assert_uint_eq(in->n, RY__CTL_HDR + hd.h_len);
	ck_assert_int_eq(
	    ry__wire_hello_get(in->b + RY__CTL_HDR, hd.h_len, true, &ack), 0);
	/* a list asks for the choice to be named; none, for none */
	ck_assert_uint_eq(ack.wh_nids, list ? 1 : 0);
	for (unsigned i = 0; i < n; i++)
		if (!list || same_id(ack.wh_ids[0], ks[i])) {
			k = ks[i];
			break;
		}
	ck_assert_ptr_nonnull(k);
	ry__auth_transcript(hello_h, in->b + RY__CTL_HDR, hd.h_len - RY__MAC,
			    t);
	ck_assert(ry__auth_proof_ok(k, false, t, ack.wh_proof));
	ry__auth_proof(k, true, t, proof);
	ry__wbuf_init(&w, f.b + RY__CTL_HDR, RY__MAC);
	ry__wire_auth_put(&w, proof);
	frame_of(&f, CTL_AUTH, &w);
	raw_send(fd, f.b, f.n);
	*used = k;
	return true;
}

/* a and b start with K1 (the same bytes in files ka and kb). */
static const struct fx_opts rot = {.key_a = ka,
				   .key_b = kb,
				   .b_names_a = true,
				   .b_handshake_timeout_ms = 60000};

/*
 * b writes K2 into its key file (same path) and reloads: it holds K2 and
 * K1, newest first; the sessions made under K1 go on; a node holding only
 * K1 is admitted by b (a raw dialer with its one id, and a and b dialing
 * each other again after their sessions close: K1 both ways).  Then a
 * rotates too: new sessions use K2, and a dialer listing K2 and K1 gets
 * K2 from b.
 */
START_TEST(rotation_overlap)
{
	struct ry__authkey *k1, *k2, *both[2];
	unsigned char ids[2][RY__KEY_ID];
	const struct ry__authkey *used;
	struct fx_done d;
	struct frame in;
	unsigned all;
	int fd;

	write_key(ka, 0x11);
	write_key(kb, 0x11);
	k1 = load_key(key1);
	k2 = load_key(key2);
	ck_assert_int_eq(fx_init(&F, &rot), 0);
	ck_assert_int_eq(write_one(&F, true, 20000, &d), 0);
	ck_assert_uint_eq(held(F.b, ids), 1);
	ck_assert(same_id(ids[0], k1));

	write_key(kb, 0x22);
	ck_assert_msg(reload_key(true, 600) == 0, "%s", problems);
	ck_assert_uint_eq(held(F.b, ids), 2);
	ck_assert(same_id(ids[0], k2) && same_id(ids[1], k1));
	ck_assert_uint_eq(held(F.a, ids), 1);
	{
		/* as railyard status shows it */
		char buf[64], want[64], s1[20], s2[20];
		uint32_t left = 0;

		key_id_str(key1, s1);
		key_id_str(key2, s2);
		snprintf(want, sizeof(want), "%s,%s", s2, s1);
		ck_assert_int_eq(
		    ry_manager_key_ids(F.b, buf, sizeof(buf), &left), 2);
		ck_assert_str_eq(buf, want);
		ck_assert(left > 0 && left <= 600);
		ck_assert_int_eq(
		    ry_manager_key_ids(F.a, buf, sizeof(buf), &left), 1);
		ck_assert_str_eq(buf, s1);
		ck_assert_uint_eq(left, 0);
		ck_assert_int_eq(ry_manager_key_ids(F.b, buf, 20, NULL),
				 -ENOSPC);
	}
	/* what was made under K1 goes on */
	ck_assert_int_eq(write_one(&F, true, 20000, &d), 0);
	ck_assert_uint_eq(F.ev_a.n_conn_down + F.ev_b.n_conn_down, 0);
	ck_assert_uint_eq(F.ev_a.n_peer_down + F.ev_b.n_peer_down, 0);
	ck_assert_uint_ge(sessions_with(F.b, k1, NULL), 1);

	/* a node of K1 only, dialing the rotated b */
	fd = raw_connect(&F, "127.0.0.1");
	ck_assert_msg(raw_dial(fd, &k1, 1, true, &used, &in), "%s", logbuf);
	ck_assert_ptr_eq(used, k1);
	ck_assert(!closed_within(&F, fd, 500, NULL));
	close(fd);
	/* and a and b again, both ways: the rotated b dials a too */
	kill_sessions(F.b);
	ck_assert(fx_until(&F, both_admitted, NULL, 20000));
	ck_assert_int_eq(write_one(&F, true, 20000, &d), 0);
	ck_assert_uint_eq(sessions_with(F.a, k1, &all), all);
	ck_assert_uint_ge(all, 1);

	/* a rotates too: K2 from here on */
	write_key(ka, 0x22);
	ck_assert_msg(reload_key(false, 600) == 0, "%s", problems);
	kill_sessions(F.a);
	ck_assert(fx_until(&F, both_admitted, NULL, 20000));
	ck_assert_int_eq(write_one(&F, true, 20000, &d), 0);
	ck_assert_uint_eq(sessions_with(F.a, k2, &all), all);
	ck_assert_uint_ge(all, 1);
	ck_assert_uint_eq(sessions_with(F.b, k2, &all), all);
	ck_assert_uint_ge(all, 1);
	both[0] = k2;
	both[1] = k1;
	fd = raw_connect(&F, "127.0.0.1");
	ck_assert(raw_dial(fd, both, 2, true, &used, &in));
	ck_assert_ptr_eq(used, k2);
	ck_assert(!closed_within(&F, fd, 500, NULL));
	close(fd);
	/* a peer of an older version lists no ids: b's current key */
	fd = raw_connect(&F, "127.0.0.1");
	ck_assert(raw_dial(fd, &k2, 1, false, &used, &in));
	ck_assert(!closed_within(&F, fd, 500, NULL));
	close(fd);
	ck_assert(!logged("refused"));
	fx_fini(&F);
	ry__auth_key_free(k1);
	ry__auth_key_free(k2);
}
END_TEST

static bool b_holds_one(void *arg)
{
	unsigned char ids[2][RY__KEY_ID];

	(void)arg;
	return held(F.b, ids) == 1;
}

static bool both_logged(void *arg)
{
	char(*want)[160] = arg;

	return logged(want[0]) && logged(want[1]);
}

/*
 * key_overlap_s = 1: once it is over b holds K2 only.  A session made
 * under K1 goes on (its keys are its own); a node holding only K1 is
 * refused, and both ends say which key ids each holds (a and b too, once
 * their control sessions close: their data connections stay, as control
 * sessions do not carry them).
 */
START_TEST(rotation_overlap_ends)
{
	unsigned char ids[RY__CTL_KEY_IDS][RY__KEY_ID];
	char want[2][160], s1[20], s2[20];
	struct ry__authkey *k1, *k2;
	const struct ry__authkey *used;
	struct ry__ctl_hdr hd;
	struct fx_opts o = rot;
	struct fx_done d;
	struct frame in;
	int fd;

	o.op_timeout_ms = 1500;
	write_key(ka, 0x11);
	write_key(kb, 0x11);
	k1 = load_key(key1);
	k2 = load_key(key2);
	key_id_str(key1, s1);
	key_id_str(key2, s2);
	ck_assert_int_eq(fx_init(&F, &o), 0);
	ck_assert_int_eq(write_one(&F, true, 20000, &d), 0);
	write_key(kb, 0x22);
	ck_assert_msg(reload_key(true, 1) == 0, "%s", problems);
	ck_assert(fx_until(&F, b_holds_one, NULL, 10000));
	ck_assert_uint_eq(held(F.b, ids), 1);
	ck_assert(same_id(ids[0], k2));
	/* the sessions made under K1 before stay, and work */
	ck_assert_uint_ge(sessions_with(F.b, k1, NULL), 1);
	ck_assert_int_eq(write_one(&F, true, 20000, &d), 0);
	ck_assert_uint_eq(F.ev_a.n_conn_down + F.ev_b.n_conn_down, 0);

	fd = raw_connect(&F, "127.0.0.1");
	ck_assert(!raw_dial(fd, &k1, 1, true, &used, &in));
	close(fd);
	ck_assert(frame_hdr(&in, &hd));
	ck_assert_uint_eq(hd.h_type, CTL_REFUSE);
	ck_assert_uint_eq(ry__wire_refuse_get(in.b + RY__CTL_HDR, hd.h_len),
			  REF_NO_COMMON_KEY);
	ck_assert_int_eq(ry__wire_refuse_ids(in.b + RY__CTL_HDR, hd.h_len, ids),
			 1);
	ck_assert(same_id(ids[0], k2));
	snprintf(want[0], sizeof(want[0]),
		 "no common key: the peer holds key ids %s; this node holds "
		 "%s",
		 s1, s2);
	ck_assert_msg(logged(want[0]), "%s", logbuf);

	/* a (K1) and b (K2) once their sessions close: refused both ways */
	loglen = 0;
	logbuf[0] = 0;
	snprintf(want[1], sizeof(want[1]),
		 "no common key: the peer holds key ids %s; this node holds "
		 "%s",
		 s2, s1);
	kill_sessions(F.b);
	ck_assert_msg(fx_until(&F, both_logged, want, 20000), "%s", logbuf);
	ck_assert_uint_eq(sessions_with(F.a, k1, NULL), 0);
	ck_assert_uint_eq(sessions_with(F.b, k2, NULL), 0);
	fx_fini(&F);
	ry__auth_key_free(k1);
	ry__auth_key_free(k2);
}
END_TEST

/*
 * A reload whose key file is malformed, unreadable by its mode, or gone
 * fails with the reason and changes nothing: the old key still admits.
 * Setting or removing key_file by reload is refused.
 */
START_TEST(rotation_bad_file_keeps_key)
{
	unsigned char ids[2][RY__KEY_ID];
	const struct ry__authkey *used;
	struct ry__authkey *k1;
	struct ry_config c;
	struct fx_done d;
	struct frame in;
	int fd;

	write_key(ka, 0x11);
	write_key(kb, 0x11);
	k1 = load_key(key1);
	ck_assert_int_eq(fx_init(&F, &rot), 0);
	ck_assert_int_eq(write_one(&F, true, 20000, &d), 0);
	fd = open(kb, O_WRONLY | O_TRUNC);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, "not a key\n", 10), 10);
	close(fd);
	ck_assert_int_ne(reload_key(true, 600), 0);
	ck_assert_msg(strstr(problems, "holds 10 bytes"), "%s", problems);
	write_key(kb, 0x22);
	ck_assert_int_eq(chmod(kb, 0644), 0);
	ck_assert_int_ne(reload_key(true, 600), 0);
	ck_assert_msg(strstr(problems, "accessible by group or others"), "%s",
		      problems);
	ck_assert_int_eq(unlink(kb), 0);
	ck_assert_int_ne(reload_key(true, 600), 0);
	ck_assert_msg(strstr(problems, "No such file"), "%s", problems);
	/* turning authentication off is refused too */
	fx_config(&c, &F.o, true);
	c.key_file[0] = 0;
	problems[0] = 0;
	ck_assert_int_ne(ry_manager_reload(F.b, &c, note, NULL), 0);
	ck_assert_msg(strstr(problems, "key_file cannot be removed"), "%s",
		      problems);
	/* nothing changed: K1 only, and it admits */
	ck_assert_uint_eq(held(F.b, ids), 1);
	ck_assert(same_id(ids[0], k1));
	fd = raw_connect(&F, "127.0.0.1");
	ck_assert(raw_dial(fd, &k1, 1, true, &used, &in));
	ck_assert(!closed_within(&F, fd, 500, NULL));
	close(fd);
	kill_sessions(F.b);
	ck_assert_int_eq(write_one(&F, true, 20000, &d), 0);
	/* and a good file afterwards is taken */
	write_key(kb, 0x22);
	ck_assert_msg(reload_key(true, 600) == 0, "%s", problems);
	ck_assert_uint_eq(held(F.b, ids), 2);
	fx_fini(&F);
	ry__auth_key_free(k1);
}
END_TEST

/* HELLO and HELLO_ACK with and without key ids, REFUSE with ids, through
 * the codec; malformed lists refused. */
START_TEST(key_ids_wire)
{
	static struct ry__wire_hello h, g;
	unsigned char b[RY__CTL_MAX_FRAME], ids[RY__CTL_KEY_IDS][RY__KEY_ID];
	struct ry__wbuf w;
	size_t base;

	memset(&h, 0, sizeof(h));
	h.wh_node = 7;
	snprintf(h.wh_name, sizeof(h.wh_name), "n");
	snprintf(h.wh_addr, sizeof(h.wh_addr), "127.0.0.1:1");
	h.wh_auth = true;
	memset(h.wh_nonce, 0x5a, sizeof(h.wh_nonce));
	memset(h.wh_proof, 0xa5, sizeof(h.wh_proof));
	for (int reply = 0; reply < 2; reply++) {
		/* without ids: as an older node sends it */
		h.wh_nids = 0;
		ry__wbuf_init(&w, b, sizeof(b));
		ry__wire_hello_put(&w, &h, reply);
		ck_assert(!w.bad);
		base = w.n;
		g.wh_nids = 99;
		ck_assert_int_eq(ry__wire_hello_get(b, w.n, reply, &g), 0);
		ck_assert_uint_eq(g.wh_nids, 0);
		ck_assert(!memcmp(g.wh_nonce, h.wh_nonce, RY__NONCE));
		/* with ids: HELLO up to RY__CTL_KEY_IDS, HELLO_ACK one */
		h.wh_nids = reply ? 1 : RY__CTL_KEY_IDS;
		for (unsigned i = 0; i < h.wh_nids; i++)
			memset(h.wh_ids[i], 0x30 + i, RY__KEY_ID);
		ry__wbuf_init(&w, b, sizeof(b));
		ry__wire_hello_put(&w, &h, reply);
		ck_assert(!w.bad);
		ck_assert_uint_eq(w.n, base + 1 + h.wh_nids * RY__KEY_ID);
		ck_assert_int_eq(ry__wire_hello_get(b, w.n, reply, &g), 0);
		ck_assert_uint_eq(g.wh_nids, h.wh_nids);
		ck_assert(!memcmp(g.wh_ids, h.wh_ids, h.wh_nids * RY__KEY_ID));
		if (reply)
			ck_assert(!memcmp(g.wh_proof, h.wh_proof, RY__MAC));
		/* the proof stays last in HELLO_ACK: the id is before it */
		if (reply)
			ck_assert(
			    !memcmp(b + w.n - RY__MAC, h.wh_proof, RY__MAC));
	}
	/* HELLO: a count past the body, 0, or too many; bytes after */
	h.wh_nids = 2;
	ry__wbuf_init(&w, b, sizeof(b));
	ry__wire_hello_put(&w, &h, false);
	ck_assert_int_eq(ry__wire_hello_get(b, w.n - 1, false, &g), -EBADMSG);
	b[w.n - 1 - 2 * RY__KEY_ID] = 3; /* count 3, two ids there */
	ck_assert_int_eq(ry__wire_hello_get(b, w.n, false, &g), -EBADMSG);
	b[w.n - 1 - 2 * RY__KEY_ID] = 0;
	ck_assert_int_eq(ry__wire_hello_get(b, w.n, false, &g), -EBADMSG);
	b[w.n - 1 - 2 * RY__KEY_ID] = RY__CTL_KEY_IDS + 1;
	ck_assert_int_eq(ry__wire_hello_get(b, w.n, false, &g), -EBADMSG);
	b[w.n - 1 - 2 * RY__KEY_ID] = 1; /* one id, then 8 stray bytes */
	ck_assert_int_eq(ry__wire_hello_get(b, w.n, false, &g), -EBADMSG);
	/* HELLO_ACK naming two ids, or a truncated one */
	ry__wbuf_init(&w, b, sizeof(b));
	ry__wire_hello_put(&w, &h, true);
	ck_assert_int_eq(ry__wire_hello_get(b, w.n, true, &g), -EBADMSG);
	h.wh_nids = 1;
	ry__wbuf_init(&w, b, sizeof(b));
	ry__wire_hello_put(&w, &h, true);
	ck_assert_int_eq(ry__wire_hello_get(b, w.n - 1, true, &g), -EBADMSG);
	/* a writer refuses a list of none or too many */
	h.wh_nids = RY__CTL_KEY_IDS + 1;
	ry__wbuf_init(&w, b, sizeof(b));
	ry__wire_hello_put(&w, &h, false);
	ck_assert(w.bad);
	/* REFUSE: ids after the reason; an older node's has none */
	ry__wbuf_init(&w, b, sizeof(b));
	ry__wire_refuse_put(&w, REF_NO_COMMON_KEY);
	ck_assert_int_eq(ry__wire_refuse_ids(b, w.n, ids), 0);
	ry__w_key_ids(&w, (const unsigned char(*)[RY__KEY_ID])h.wh_ids, 2);
	ck_assert_uint_eq(ry__wire_refuse_get(b, w.n), REF_NO_COMMON_KEY);
	ck_assert_int_eq(ry__wire_refuse_ids(b, w.n, ids), 2);
	ck_assert(!memcmp(ids, h.wh_ids, 2 * RY__KEY_ID));
	ck_assert_int_eq(ry__wire_refuse_ids(b, w.n - 1, ids), -EBADMSG);
	b[1] = 9;
	ck_assert_int_eq(ry__wire_refuse_ids(b, w.n, ids), -EBADMSG);
}
END_TEST

/* The key id names the key and nothing more: stable for the same bytes,
 * different for another key, not a prefix of the key or its subkeys. */
START_TEST(key_id_reveals_nothing)
{
	struct ry__authkey *k1 = load_key(key1), *k1b = load_key(key1);
	struct ry__authkey *k2 = load_key(key2);
	unsigned char raw[32];

	ck_assert(
	    !memcmp(ry__auth_key_id(k1), ry__auth_key_id(k1b), RY__KEY_ID));
	ck_assert(memcmp(ry__auth_key_id(k1), ry__auth_key_id(k2), RY__KEY_ID));
	memset(raw, 0x11, sizeof(raw));
	ck_assert(memcmp(ry__auth_key_id(k1), raw, RY__KEY_ID));
	ry__auth_key_free(k1);
	ry__auth_key_free(k1b);
	ry__auth_key_free(k2);
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
	tcase_add_test(tc, key_ids_wire);
	tcase_add_test(tc, key_id_reveals_nothing);
	tcase_add_test(tc, rotation_overlap);
	tcase_add_test(tc, rotation_overlap_ends);
	tcase_add_test(tc, rotation_bad_file_keeps_key);
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
