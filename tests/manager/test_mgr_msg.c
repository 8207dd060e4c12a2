// SPDX-License-Identifier: BSD-2-Clause
/*
 * The rail manager end to end, two managers in one process over the loop
 * rail (label unit) or the soft rail (label soft), every transfer
 * verified byte for byte (mgr_common.h).
 *
 * Two-sided messages and notifications: exactly once across failovers,
 * after the data, far apart in sequence, and a send that fails to post.
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

/* ---- messages ---- */

struct rx {
	unsigned n, dup, notify;
	unsigned char seen[4096];
	uint64_t last_notify;
	bool notify_data_ok;
};

static struct rx RX;

static void on_recv(struct ry_peer *from, const struct ry_message *m, void *arg)
{
	struct rx *r = arg;
	unsigned id;

	if (m->type == RY_MSG_NOTIFY) {
		r->notify++;
		r->last_notify = m->notify;
		/* all bytes have landed before the notification */
		r->notify_data_ok = !memcmp(F.bufa, F.bufb, MiB);
		return;
	}
	ck_assert_uint_ge(m->len, sizeof(id));
	memcpy(&id, m->data, sizeof(id));
	ck_assert_uint_lt(id, 4096);
	if (r->seen[id]++)
		r->dup++;
	r->n++;
}

static bool rx_all(void *arg)
{
	return RX.n >= *(unsigned *)arg;
}

START_TEST(messages_exactly_once_across_failover)
{
	struct fx_done d = {0};
	unsigned char buf[600];
	unsigned i, sent = 0, total = 3000;
	int ret;

	memset(&RX, 0, sizeof(RX));
	setup_opts(&(struct fx_opts){.nrails_a = 3});
	ry_set_recv_cb(F.b, on_recv, &RX);
	while (sent < total) {
		for (i = 0; i < 64 && sent < total; i++) {
			memcpy(buf, &sent, sizeof(sent));
			memset(buf + 4, (int)sent, sizeof(buf) - 4);
			ret = ry_send(F.ab, buf, 4 + sent % 590, fx_cb, &d);
			if (ret == -EAGAIN)
				break;
			ck_assert_int_eq(ret, 0);
			sent++;
		}
		fx_progress(&F);
		if (sent == 1000)
			ck_assert_int_eq(ry_rail_link(F.a, "r2", false), 0);
		if (sent == 2000) {
			struct ry_fault_spec cut = {.drop_all = true};

			ck_assert_int_eq(ry_rail_fault(F.b, "r0", &cut), 0);
		}
	}
	ck_assert(fx_until_done(&F, &d, total, 20000));
	if (!fx_until(&F, rx_all, &total, 5000)) {
		for (i = 0; i < total; i++)
			if (RX.seen[i] != 1)
				fprintf(stderr, "msg %u seen %u times\n", i,
					RX.seen[i]);
		ck_abort_msg("received %u of %u", RX.n, total);
	}
	fx_sleep_progress(&F, 200);
	ck_assert_uint_eq(d.ok, total);
	ck_assert_uint_eq(RX.n, total);
	ck_assert_uint_eq(RX.dup, 0);
	for (i = 0; i < total; i++)
		ck_assert_uint_eq(RX.seen[i], 1);
	teardown();
}
END_TEST

/* b's connection-down events, every reason kept: under load a heartbeat
 * miss may follow the refusal, so the last reason alone proves nothing */
static struct {
	unsigned down, window;
} BEV;

static void b_event(const struct ry_event *ev, void *arg)
{
	(void)arg;
	if (ev->type != RY_EV_CONN_DOWN)
		return;
	BEV.down++;
	if (strstr(ev->reason, "outside the receive window"))
		BEV.window++;
}

static bool b_refused(void *arg)
{
	return BEV.window > *(unsigned *)arg;
}

/*
 * A post_send that fails (a provider out of send queue memory, say) fails
 * its connection as a broken link would: the op completes RY_OK on the
 * other rail, every byte in place, the failure is counted, and the rail
 * comes back.  In the _ctx runs (two progress contexts) the post fails
 * under the context's lock alone and the cold round fails the connection
 * (src/progress.c, unposted); the loop rail only: the soft rail has no
 * way to make a post fail.
 */
START_TEST(post_send_fails)
{
	struct ry_counters c0;

	if (!fx_is_loop())
		return;
	setup_opts(NULL);
	ck_assert_int_eq(write_verify(0, 1 << 20, 1), RY_OK);
	ck_assert(fx_until(&F, both_rails_active, NULL, 20000));
	ck_assert_int_eq(ry_rail_counters(F.a, "r0", &c0), 0);
	ck_assert_uint_eq(c0.failovers, 0);
	ry_loop_fail_posts(F.a->m_rails[0].lr_rail, 1);
	ck_assert_int_eq(write_verify(0, 1 << 20, 2), RY_OK);
	ck_assert_int_eq(ry_rail_counters(F.a, "r0", &c0), 0);
	ck_assert_uint_eq(c0.failovers, 1);
	ck_assert(fx_until(&F, both_rails_active, NULL, 20000));
	ck_assert_int_eq(write_verify(0, 1 << 20, 3), RY_OK);
	teardown();
}
END_TEST

/* connection-down events on either node whose reason is a receive's
 * local length error */
static unsigned LENERR;

static void lenerr_event(const struct ry_event *ev, void *arg)
{
	(void)arg;
	if (ev->type == RY_EV_CONN_DOWN &&
	    !strcmp(ev->reason, ry_wc_status_str(RY_WC_LOC_LEN)))
		LENERR++;
}

static bool lenerr_seen(void *arg)
{
	(void)arg;
	return LENERR > 0;
}

/*
 * A receive that completes in error (a responder error: the QP is in ERR
 * after it) fails its connection with that status as the reason.  Every
 * later WR of the QP comes back flushed, and a connection named "flushed"
 * hides what went wrong.  The idle heartbeats are the receives here: which
 * end sends them depends on the node ids, so both ends' r0 fail their next
 * one.  The loop rail only: no other can fail a receive on demand.
 */
START_TEST(recv_error_names_the_failure)
{
	if (!fx_is_loop())
		return;
	LENERR = 0;
	setup_opts(&(struct fx_opts){.idle_heartbeat_ms = 50});
	ry_set_event_cb(F.a, lenerr_event, NULL);
	ry_set_event_cb(F.b, lenerr_event, NULL);
	ck_assert_int_eq(write_verify(0, 1 << 20, 1), RY_OK);
	ck_assert(fx_until(&F, both_rails_active, NULL, 20000));
	ry_loop_fail_recvs(ry__mgr_rail(F.a, "r0"), 1);
	ry_loop_fail_recvs(ry__mgr_rail(F.b, "r0"), 1);
	ck_assert(fx_until(&F, lenerr_seen, NULL, 10000));
	/* and the rail comes back and carries data */
	ck_assert(fx_until(&F, both_rails_active, NULL, 20000));
	ck_assert_int_eq(write_verify(0, 1 << 20, 2), RY_OK);
	teardown();
}
END_TEST

/*
 * A message whose sequence lies far past the receive window (a peer that
 * breaks the protocol, or a hostile one) is dropped and fails the
 * connection it came on, at once; it used to slide the window one step at
 * a time up to the sequence (2^62: forever).  Well-formed messages after
 * it are still delivered exactly once.
 */
START_TEST(message_far_sequence)
{
	static const uint64_t far[] = {1ull << 33, 1ull << 62,
				       (1ull << 63) + 12345};
	struct fx_done d = {0}, d2 = {0};
	uint64_t seq, low, t0;
	unsigned i, want, refused;

	memset(&RX, 0, sizeof(RX));
	memset(&BEV, 0, sizeof(BEV));
	/* the forged message fails every connection it reaches (soft: b may
	 * fail its QP before the ACK leaves, so a replays it on the next
	 * rail) until its operation times out: keep that short */
	setup_opts(&(struct fx_opts){.op_timeout_ms = 2000});
	ry_set_recv_cb(F.b, on_recv, &RX);
	ry_set_event_cb(F.b, b_event, NULL);
	i = 0;
	ck_assert_int_eq(ry_send(F.ab, &i, sizeof(i), fx_cb, &d), 0);
	want = 1;
	ck_assert(fx_until(&F, rx_all, &want, 10000));
	ck_assert(fx_until_done(&F, &d, 1, 10000));
	seq = F.ab->pr_tx_seq;
	low = F.ab->pr_tx_low;
	for (i = 0; i < sizeof(far) / sizeof(far[0]); i++) {
		unsigned id = 100 + i;

		/* the previous round failed connections: let them return so
		 * that this message reaches b */
		ck_assert(fx_until(&F, both_rails_active, NULL, 20000));
		refused = BEV.window;
		F.ab->pr_tx_seq = far[i] - 1;
		F.ab->pr_tx_low = far[i];
		ck_assert_int_eq(ry_send(F.ab, &id, sizeof(id), fx_cb, &d), 0);
		t0 = fx_now_ns();
		ck_assert_msg(fx_until(&F, b_refused, &refused, 10000),
			      "sequence 0x%llx: b did not refuse it",
			      (unsigned long long)far[i]);
		/* generous: the old code took 22 s for 2^33, forever for
		 * 2^62; the refusal itself is one comparison */
		ck_assert_msg(fx_now_ns() - t0 < 5000000000ull,
			      "sequence 0x%llx took %.1f s",
			      (unsigned long long)far[i],
			      (double)(fx_now_ns() - t0) / 1e9);
		/* its op ends (ok: ACKed before b looked; or timed out) */
		ck_assert(fx_until_done(&F, &d, 2 + i, 20000));
		ck_assert_uint_eq(F.ab->pr_tx_seq, far[i]);
		F.ab->pr_tx_seq = seq;
		F.ab->pr_tx_low = low;
		memset(F.ab->pr_tx_bits, 0, sizeof(F.ab->pr_tx_bits));
	}
	ck_assert_uint_eq(RX.n, 1);
	for (i = 0; i < 3; i++)
		ck_assert_uint_eq(RX.seen[100 + i], 0);
	/* the window is where it was: the next messages arrive, once each */
	ck_assert(fx_until(&F, both_rails_active, NULL, 20000));
	for (i = 1; i <= 50; i++)
		ck_assert_int_eq(ry_send(F.ab, &i, sizeof(i), fx_cb, &d2), 0);
	ck_assert(fx_until_done(&F, &d2, 50, 20000));
	ck_assert_msg(d2.ok == 50, "%u of 50 failed: %s", d2.err, d2.reason);
	want = 51;
	ck_assert(fx_until(&F, rx_all, &want, 20000));
	fx_sleep_progress(&F, 200);
	ck_assert_uint_eq(RX.n, 51);
	ck_assert_uint_eq(RX.dup, 0);
	teardown();
}
END_TEST

static bool notified(void *arg)
{
	return RX.notify >= *(unsigned *)arg;
}

START_TEST(write_notify_once_after_data)
{
	struct fx_done d = {0};
	unsigned one = 1, two = 2;

	memset(&RX, 0, sizeof(RX));
	setup_opts(NULL);
	ry_set_recv_cb(F.b, on_recv, &RX);
	fx_fill(F.bufa, MiB, 5);
	ck_assert_int_eq(ry_write_notify(F.ab, F.ra, 0, F.desc_b,
					 (size_t)F.desc_b_len, 0, MiB, 0xabcdef,
					 fx_cb, &d),
			 0);
	ck_assert(fx_until_done(&F, &d, 1, 10000));
	ck_assert_uint_eq(d.ok, 1);
	ck_assert(fx_until(&F, notified, &one, 5000));
	ck_assert_uint_eq(RX.last_notify, 0xabcdef);
	ck_assert(RX.notify_data_ok);
	/* again, with a rail dying under it */
	fx_fill(F.bufa, MiB, 6);
	ck_assert_int_eq(ry_write_notify(F.ab, F.ra, 0, F.desc_b,
					 (size_t)F.desc_b_len, 0, MiB, 42,
					 fx_cb, &d),
			 0);
	ck_assert_int_eq(ry_rail_link(F.a, "r0", false), 0);
	ck_assert(fx_until_done(&F, &d, 2, 10000));
	ck_assert_uint_eq(d.ok, 2);
	ck_assert(fx_until(&F, notified, &two, 5000));
	fx_sleep_progress(&F, 300);
	ck_assert_uint_eq(RX.notify, 2);
	ck_assert_uint_eq(RX.last_notify, 42);
	ck_assert(RX.notify_data_ok);
	teardown();
}
END_TEST

int main(void)
{
	const struct mgr_case cases[] = {
	    {"manager", messages_exactly_once_across_failover, MGR_ANY},
	    {"manager", write_notify_once_after_data, MGR_ANY},
	    {"manager", message_far_sequence, MGR_ANY},
	    {"manager", post_send_fails, MGR_ANY},
	    {"manager", recv_error_names_the_failure, MGR_LOOP},
	};

	return mgr_main("msg", cases, sizeof(cases) / sizeof(cases[0]));
}
