// SPDX-License-Identifier: BSD-2-Clause
/*
 * The rail manager end to end, two managers in one process over the loop
 * rail (label unit) or the soft rail (label soft), every transfer
 * verified byte for byte (mgr_common.h).
 *
 * Fencing: with fence on, a packet of a failed connection that arrives
 * late never lands after the operation completed; with it off, it can.
 * Connections to a peer that fail together are fenced by one FENCE_REQ
 * naming them all (one per connection to a peer that does not read the
 * list); the codec refuses a malformed list, and a refused request fences
 * nothing.
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
#include "src/ctl/ctl_int.h"
#include "src/manager.h"
#include "src/peer.h"
#include "tests/manager/fixture.h"
#include "tests/manager/mgr_common.h"

/* ---- fencing ---- */

static void fence_case(bool fence)
{
	struct ry_fault_spec cut = {.drop_all = true};
	struct ry_rail *r1 = NULL;
	int landed;
	size_t i;

	/* b is slow to notice on its own, so only the fence protects it */
	setup_opts(&(struct fx_opts){
	    .fence_off = !fence, .heartbeat_ms = 2000, .timeout_ms = 4000});
	ck_assert_int_eq(write_verify(0, MiB, 1), RY_OK);
	r1 = ry__mgr_rail(F.a, "r1");
	ck_assert_ptr_nonnull(r1);
	ry_loop_hold(r1, true);
	ck_assert_int_eq(ry_rail_fault(F.a, "r1", &cut), 0);
	ck_assert_int_eq(write_verify(0, MiB, 2), RY_OK);
	/* the application reuses the memory; then the stale packets arrive */
	memset(F.bufb, 0xee, MiB);
	landed = ry_loop_release_held(r1);
	if (fence) {
		ck_assert_int_eq(landed, 0);
		for (i = 0; i < MiB; i++)
			ck_assert_int_eq(F.bufb[i], 0xee);
	} else {
		/* the control: without the fence a stale write does land */
		ck_assert_int_gt(landed, 0);
	}
	teardown();
}

static bool a_fencing(void *arg)
{
	struct ry__list *pos;

	(void)arg;
	ry__list_for_each(pos, &F.ab->pr_ops) {
		if (ry__list_entry(pos, struct ry__op, op_all)->op_state ==
		    OPS_FENCING)
			return true;
	}
	return false;
}

/*
 * A stall of our own while a replayed operation waits for the peer's fence
 * acknowledgement: the acknowledgement could not be read meanwhile, so the
 * wait is not timed out for it (op_timeout_ms counts from the stall's
 * end), and the operation completes once both run.  Only a runs until the
 * operation is fencing, so b cannot have answered before the stall.
 */
START_TEST(own_stall_is_not_a_fence_timeout)
{
	struct ry_fault_spec cut = {.drop_all = true};
	struct fx_done d = {0};
	uint64_t end;

	setup_opts(&(struct fx_opts){.op_timeout_ms = 300});
	ck_assert_int_eq(write_verify(0, MiB, 1), RY_OK);
	ck_assert_int_eq(ry_rail_fault(F.a, "r1", &cut), 0);
	fx_fill(F.bufa, MiB, 2);
	ck_assert_int_eq(ry_write(F.ab, F.ra, 0, F.desc_b, (size_t)F.desc_b_len,
				  0, MiB, fx_cb, &d),
			 0);
	end = fx_now_ns() + 5000000000ull;
	while (!a_fencing(NULL)) {
		ck_assert_msg(fx_now_ns() < end && !d.total,
			      "the write never waited for a fence (%u done)",
			      d.total);
		ry_progress(F.a);
	}
	usleep(600000); /* twice op_timeout_ms */
	ry_progress(F.a);
	ck_assert_msg(!d.err, "failed after the stall: %s", d.reason);
	ck_assert(fx_until_done(&F, &d, 1, 5000));
	ck_assert_uint_eq(d.ok, 1);
	ck_assert_int_eq(memcmp(F.bufa, F.bufb, MiB), 0);
	teardown();
}
END_TEST

START_TEST(fence_stale_packet_dropped)
{
	fence_case(true);
}
END_TEST

START_TEST(no_fence_stale_packet_lands)
{
	fence_case(false);
}
END_TEST

/*
 * The same over a rail that delays instead of holding (the soft rail):
 * packets on r1 take 1.5 s, so the sender gives r1 up and replays on r0;
 * the delayed originals reach b after the op completed.  (At 300 ms the
 * op completed after them under ASan at load 10: the control case then
 * saw nothing.  b's old QP still takes them: its side fails only by
 * heartbeat silence, 4 s, or a reconnect, 3 s.)  Giving r1 up takes the
 * transport's retries: with the defaults (20 ms, 5 retries, each wait
 * doubled, the RTO up to 4 x 20 ms when the RTT varies under load) from
 * 1.26 s to 5 s, which under load crossed the 1.5 s; at 10 ms and 3
 * retries it is 0.15-0.6 s.
 */
static void fence_delayed_case(bool fence)
{
	struct ry_fault_spec slow = {.delay_us = 1500000};
	const size_t len = 256 * 1024;
	bool all_ee = true;
	size_t i;

	/* no reconnect inside the window either: it too would replace b's
	 * QP and hide the stale packets */
	setup_opts(&(struct fx_opts){.fence_off = !fence,
				     .ack_timeout_ms = 10,
				     .retry_count = 3,
				     .heartbeat_ms = 2000,
				     .timeout_ms = 4000,
				     .reconnect_min_ms = 3000,
				     .reconnect_max_ms = 3000});
	ck_assert_int_eq(write_verify(0, len, 1), RY_OK);
	ck_assert_int_eq(ry_rail_fault(F.a, "r1", &slow), 0);
	ck_assert_int_eq(write_verify(0, len, 2), RY_OK);
	memset(F.bufb, 0xee, len);
	fx_sleep_progress(&F, 2500);
	for (i = 0; i < len; i++)
		if (F.bufb[i] != 0xee)
			all_ee = false;
	if (fence)
		ck_assert_msg(all_ee, "a stale packet landed after the fence");
	else
		ck_assert_msg(!all_ee, "the control case saw no stale packet");
	teardown();
}

START_TEST(fence_delayed_packet_dropped)
{
	fence_delayed_case(true);
}
END_TEST

START_TEST(no_fence_delayed_packet_lands)
{
	fence_delayed_case(false);
}
END_TEST

/* ---- one request per peer per failure event ---- */

/* a's rails r1 and r2 fail in one event (their links go down together,
 * with fragments of a write in flight on them); on the loop rail those
 * fragments stay in the network to be delivered after the write. */
static void cut_two(struct ry_rail *held[2])
{
	static const char *const names[2] = {"r1", "r2"};
	unsigned i;

	for (i = 0; i < 2; i++) {
		held[i] = NULL;
		if (fx_is_loop()) {
			held[i] = ry__mgr_rail(F.a, names[i]);
			ck_assert_ptr_nonnull(held[i]);
			ry_loop_hold(held[i], true);
		}
		ck_assert_int_eq(ry_rail_link(F.a, names[i], false), 0);
	}
}

/* The write of len bytes posted while r1 and r2 were being cut completed,
 * whole; a stale packet of theirs delivered now lands nowhere. */
static void write_survived(struct fx_done *d, size_t len,
			   struct ry_rail *held[2])
{
	uint64_t replayed = 0;
	unsigned i;

	ck_assert(fx_until_done(&F, d, 1, 10000));
	ck_assert_msg(d->ok == 1, "write failed: %s", d->reason);
	ck_assert_int_eq(memcmp(F.bufa, F.bufb, len), 0);
	for (i = 0; i < F.o.nrails_a; i++)
		replayed += F.ab->pr_conn[i]->cn_cnt.replayed_fragments;
	if (!fx_is_loop())
		return;
	/* it waited for the fence of fragments that were really replayed */
	ck_assert_uint_gt(replayed, 0);
	memset(F.bufb, 0xee, len);
	for (i = 0; i < 2; i++)
		ck_assert_int_eq(ry_loop_release_held(held[i]), 0);
	for (size_t k = 0; k < len; k++)
		if (F.bufb[k] != 0xee)
			ck_abort_msg("a stale packet landed at byte %zu", k);
}

static void post_write(struct fx_done *d, size_t len, uint32_t seed)
{
	memset(d, 0, sizeof(*d));
	fx_fill(F.bufa, len, seed);
	ck_assert_int_eq(ry_write(F.ab, F.ra, 0, F.desc_b, (size_t)F.desc_b_len,
				  0, len, fx_cb, d),
			 0);
}

static void setup_three(void)
{
	setup_opts(&(struct fx_opts){.nrails_a = 3, .nrails_b = 3});
	ck_assert_int_eq(write_verify(0, MiB, 1), RY_OK);
	ck_assert(fx_until(&F, all_active, NULL, 10000));
	/* b said at the session's start that it reads a pair list */
	ck_assert(F.ab->pr_fence_caps & RY__FENCE_CAP_PAIRS);
}

/*
 * Two of a's connections to b fail in one event under a 1 MiB write
 * (seed): it survives (write_survived), and the peer's fence generation
 * and a's FENCE_REQs have each grown by steps.  Returns the generation
 * before the event.
 */
static uint64_t two_fail_one_event(uint32_t seed, unsigned steps)
{
	const size_t len = MiB;
	struct ry_rail *held[2];
	uint64_t reqs = F.a->m_fence_reqs, gen = F.ab->pr_fence_gen;
	struct fx_done d;

	cut_two(held);
	post_write(&d, len, seed);
	write_survived(&d, len, held);
	ck_assert_uint_eq(F.ab->pr_fence_gen, gen + steps);
	ck_assert_uint_eq(F.a->m_fence_reqs, reqs + steps);
	return gen;
}

/*
 * Two connections to b fail in one event: one FENCE_REQ under one new
 * generation names both, b moves both of its QPs to ERR (their stale
 * packets land nowhere) and one ack completes the replayed write.
 */
START_TEST(fence_one_request_per_event)
{
	uint64_t gen;

	setup_three();
	gen = two_fail_one_event(2, 1);
	ck_assert_uint_ge(F.ab->pr_fence_acked, gen + 1);
	teardown();
}
END_TEST

/* a believes b does not read the list (an older peer's FENCE_ACKs carry
 * no caps): a request and a generation per connection. */
START_TEST(fence_per_connection_without_caps)
{
	setup_three();
	F.ab->pr_fence_caps = 0;
	two_fail_one_event(3, 2);
	teardown();
}
END_TEST

static bool ctl_down(void *arg)
{
	(void)arg;
	return !ry__ctl_alive(F.ab->pr_ctl);
}

static bool ctl_up(void *arg)
{
	(void)arg;
	return ry__ctl_alive(F.ab->pr_ctl) && F.ab->pr_ctl->c_admitted;
}

/*
 * The control session is lost; two connections fail while it is down;
 * when a has dialed b again, one FENCE_REQ names both.
 */
START_TEST(fence_resend_batches)
{
	bool inbound[8];
	int fd[8];
	unsigned n, i;

	setup_three();
	n = ry__ctl_sessions(F.a, fd, inbound, 8);
	ck_assert_uint_ge(n, 1);
	for (i = 0; i < n && i < 8; i++)
		shutdown(fd[i], SHUT_RDWR);
	ck_assert(fx_until(&F, ctl_down, NULL, 5000));
	two_fail_one_event(4, 1);
	teardown();
}
END_TEST

/*
 * b drops a's FENCE_REQs unread for 600 ms (its rate limit on control
 * frames: the bucket of that type is emptied by hand).  a asks again after
 * a back-off, so the replayed write completes within a second, not at
 * op_timeout_ms (10 s) or when the session comes back; and the session is
 * neither lost nor closed as a flood.
 */
START_TEST(fence_dropped_request_sent_again)
{
	const struct ry_config *cb;
	uint64_t step, room, until, reqs, gen, frames, closed;
	struct ry__ctl *ab_ctl, *c;
	struct ry_rail *held[2];
	struct fx_done d;

	setup_three();
	cb = &F.b->m_cfg;
	ab_ctl = F.ab->pr_ctl;
	reqs = F.a->m_fence_reqs;
	gen = F.ab->pr_fence_gen;
	step = 1000000000ull / cb->control_frame_rate;
	room = (uint64_t)cb->control_frame_burst * step;
	until = ry__now_ns() + 600000000ull;
	for (c = F.b->m_ctls; c; c = c->c_next)
		c->c_tat[CTL_FENCE_REQ] = until + room;
	cut_two(held);
	post_write(&d, MiB, 5);
	write_survived(&d, MiB, held);
	ck_assert_uint_eq(F.ab->pr_fence_gen, gen + 1);
	ck_assert_uint_ge(F.ab->pr_fence_acked, gen + 1);
	/* the first was dropped: at least one more went out */
	ck_assert_uint_ge(F.a->m_fence_reqs, reqs + 2);
	ry__ctl_pressure(F.b, &frames, &closed);
	ck_assert_uint_ge(frames, 1);
	ck_assert_uint_eq(closed, 0);
	ck_assert_ptr_eq(F.ab->pr_ctl, ab_ctl);
	teardown();
}
END_TEST

/* ---- the FENCE frames' codec ---- */

static size_t fence_req_body(unsigned char *b, size_t cap, unsigned n)
{
	struct ry__wire_fence f = {.wf_gen = 77, .wf_n = n};
	struct ry__wbuf w;
	unsigned i;

	for (i = 0; i < n; i++)
		f.wf_pair[i] = (struct ry__wire_fence_pair){
		    .fp_src = (uint8_t)i,
		    .fp_dst = (uint8_t)(RY_MAX_RAILS - 1 - i),
		    .fp_src_qpn = 0x1000 + i,
		    .fp_dst_qpn = 0x2000 + i};
	ry__wbuf_init(&w, b, cap);
	ry__wire_fence_put(&w, false, &f);
	ck_assert(!w.bad);
	return w.n;
}

START_TEST(fence_frames_round_trip)
{
	static const unsigned ns[] = {1, 2, 5, RY__WIRE_FENCE_PAIRS};
	unsigned char b[RY__WIRE_FENCE_MAX], b2[RY__WIRE_FENCE_MAX];
	struct ry__wire_fence out, again;
	struct ry__wbuf w;
	unsigned k, i;
	size_t n;

	for (k = 0; k < sizeof(ns) / sizeof(*ns); k++) {
		n = fence_req_body(b, sizeof(b), ns[k]);
		/* one pair: exactly the form an older peer sends and reads */
		ck_assert_uint_eq(n, ns[k] == 1 ? 18 : 19 + 10 * (ns[k] - 1));
		ck_assert_int_eq(ry__wire_fence_get(b, n, false, &out), 0);
		ck_assert_uint_eq(out.wf_gen, 77);
		ck_assert_uint_eq(out.wf_n, ns[k]);
		for (i = 0; i < ns[k]; i++) {
			ck_assert_uint_eq(out.wf_pair[i].fp_src, i);
			ck_assert_uint_eq(out.wf_pair[i].fp_dst,
					  RY_MAX_RAILS - 1 - i);
			ck_assert_uint_eq(out.wf_pair[i].fp_src_qpn,
					  0x1000 + i);
			ck_assert_uint_eq(out.wf_pair[i].fp_dst_qpn,
					  0x2000 + i);
		}
		ry__wbuf_init(&w, b2, sizeof(b2));
		ry__wire_fence_put(&w, false, &out);
		ck_assert(!w.bad);
		ck_assert_uint_eq(w.n, n);
		ck_assert_int_eq(memcmp(b, b2, n), 0);
		/* an older peer reads the first pair alone: its decoder
		 * stopped there, as this one does on the single form */
		ck_assert_int_eq(ry__wire_fence_get(b, 18, false, &again), 0);
		ck_assert_uint_eq(again.wf_n, 1);
		ck_assert_uint_eq(again.wf_pair[0].fp_src_qpn, 0x1000);
	}
	/* an ack tells the caps; an older peer's (8 bytes) tells none */
	ry__wbuf_init(&w, b, sizeof(b));
	ry__wire_fence_put(&w, true,
			   &(struct ry__wire_fence){
			       .wf_gen = 9, .wf_caps = RY__FENCE_CAP_PAIRS});
	ck_assert_uint_eq(w.n, 9);
	ck_assert_int_eq(ry__wire_fence_get(b, w.n, true, &out), 0);
	ck_assert_uint_eq(out.wf_gen, 9);
	ck_assert_uint_eq(out.wf_caps, RY__FENCE_CAP_PAIRS);
	ck_assert_int_eq(ry__wire_fence_get(b, 8, true, &out), 0);
	ck_assert_uint_eq(out.wf_gen, 9);
	ck_assert_uint_eq(out.wf_caps, 0);
}
END_TEST

START_TEST(fence_frames_malformed)
{
	unsigned char b[RY__WIRE_FENCE_MAX + 16];
	struct ry__wire_fence out;
	struct ry__wbuf w;
	size_t n;

	n = fence_req_body(b, sizeof(b), 3);
	/* the count past the body, or short of it */
	b[18] = 3;
	ck_assert_int_eq(ry__wire_fence_get(b, n, false, &out), -EBADMSG);
	b[18] = 1;
	ck_assert_int_eq(ry__wire_fence_get(b, n, false, &out), -EBADMSG);
	b[18] = 2;
	ck_assert_int_eq(ry__wire_fence_get(b, n - 1, false, &out), -EBADMSG);
	/* an empty list, and a byte after the list */
	ck_assert_int_eq(ry__wire_fence_get(b, 19, false, &out), -EBADMSG);
	b[n] = 0;
	ck_assert_int_eq(ry__wire_fence_get(b, n + 1, false, &out), -EBADMSG);
	/* a rail index past RY_MAX_RAILS in a later pair */
	b[19 + 10] = RY_MAX_RAILS;
	ck_assert_int_eq(ry__wire_fence_get(b, n, false, &out), -EBADMSG);
	/* more pairs than one request may carry, with the bytes for them */
	n = fence_req_body(b, sizeof(b), RY__WIRE_FENCE_PAIRS);
	memset(b + n, 0, 10);
	b[18] = RY__WIRE_FENCE_PAIRS;
	ck_assert_int_eq(ry__wire_fence_get(b, n + 10, false, &out), -EBADMSG);
	/* nor does the encoder write such a request, or an empty one */
	memset(&out, 0, sizeof(out));
	out.wf_n = RY__WIRE_FENCE_PAIRS + 1;
	ry__wbuf_init(&w, b, sizeof(b));
	ry__wire_fence_put(&w, false, &out);
	ck_assert(w.bad);
	out.wf_n = 0;
	ry__wbuf_init(&w, b, sizeof(b));
	ry__wire_fence_put(&w, false, &out);
	ck_assert(w.bad);
}
END_TEST

/* A FENCE_REQ from b, as a's session reads it, naming a's connections on
 * rails r0 and r1; with bad, its list's count says one pair more than it
 * carries. */
static size_t fence_from_b(unsigned char *frame, size_t cap, bool bad)
{
	struct ry__wire_fence f = {.wf_gen = 0, .wf_n = 2};
	unsigned char body[RY__WIRE_FENCE_MAX];
	struct ry__wbuf w;
	unsigned i;
	int n;

	for (i = 0; i < 2; i++) {
		const struct ry__conn *c = F.ab->pr_conn[i];

		ck_assert_int_eq(c->cn_state, CONN_ACTIVE);
		f.wf_pair[i] = (struct ry__wire_fence_pair){
		    .fp_src = (uint8_t)c->cn_ridx,
		    .fp_dst = (uint8_t)i,
		    .fp_src_qpn = c->cn_remote.qpn,
		    .fp_dst_qpn = c->cn_qp->qp_num};
	}
	ry__wbuf_init(&w, body, sizeof(body));
	ry__wire_fence_put(&w, false, &f);
	ck_assert(!w.bad);
	if (bad)
		body[18]++;
	n = ry__wire_frame(frame, cap, CTL_FENCE_REQ, body, w.n);
	ck_assert_int_gt(n, 0);
	return (size_t)n;
}

/*
 * A request whose list does not parse is refused whole (the session is
 * closed as for any malformed frame): not even its first pair, which
 * names a live connection, is fenced.  The same request well formed
 * fences both.
 */
START_TEST(fence_malformed_acts_on_nothing)
{
	unsigned char fr[RY__CTL_HDR + RY__WIRE_FENCE_MAX];
	struct log_match m = {.level = RY_LOG_WARN,
			      .has1 = "control message type 6: Bad message"};
	enum ry_log_level was = (enum ry_log_level)atomic_load(&ry__log_level);
	size_t n;

	setup_opts(&(struct fx_opts){.nrails_a = 2, .nrails_b = 2});
	ck_assert_int_eq(write_verify(0, MiB, 1), RY_OK);
	ck_assert(fx_until(&F, all_active, NULL, 10000));
	n = fence_from_b(fr, sizeof(fr), true);
	ry_log_set_level(RY_LOG_WARN);
	ry_log_set_sink(count_lines, &m);
	ry__ctl_feed(F.ab->pr_ctl, fr, n);
	ry_log_set_sink(NULL, NULL);
	ry_log_set_level(was);
	ck_assert_uint_eq(atomic_load(&m.n), 1);
	ck_assert(!ry__ctl_alive(F.ab->pr_ctl));
	ry_progress(F.a);
	ck_assert_int_eq(F.ab->pr_conn[0]->cn_state, CONN_ACTIVE);
	ck_assert_int_eq(F.ab->pr_conn[1]->cn_state, CONN_ACTIVE);
	ck_assert_uint_eq(F.ab->pr_conn[0]->cn_cnt.failovers, 0);
	ck_assert_uint_eq(F.ab->pr_conn[1]->cn_cnt.failovers, 0);

	/* back up: the well-formed request fences both pairs */
	ck_assert(fx_until(&F, ctl_up, NULL, 10000));
	n = fence_from_b(fr, sizeof(fr), false);
	ry__ctl_feed(F.ab->pr_ctl, fr, n);
	ck_assert_uint_eq(F.ab->pr_conn[0]->cn_cnt.failovers, 1);
	ck_assert_uint_eq(F.ab->pr_conn[1]->cn_cnt.failovers, 1);
	ck_assert_int_ne(F.ab->pr_conn[0]->cn_state, CONN_ACTIVE);
	ck_assert_int_ne(F.ab->pr_conn[1]->cn_state, CONN_ACTIVE);
	/* and the path comes back */
	ck_assert(fx_until(&F, all_active, NULL, 10000));
	ck_assert_int_eq(write_verify(0, MiB, 5), RY_OK);
	teardown();
}
END_TEST

int main(void)
{
	const struct mgr_case cases[] = {
	    {"manager", fence_stale_packet_dropped, MGR_LOOP},
	    {"manager", own_stall_is_not_a_fence_timeout, MGR_LOOP},
	    {"manager", no_fence_stale_packet_lands, MGR_LOOP},
	    /* needs a rail that can delay packets (a tcp rail cannot: a
	     * reset connection delivers nothing more) */
	    {"manager", fence_delayed_packet_dropped, MGR_SOFT},
	    {"manager", no_fence_delayed_packet_lands, MGR_SOFT},
	    {"batch", fence_one_request_per_event, MGR_ANY},
	    {"batch", fence_per_connection_without_caps, MGR_ANY},
	    {"batch", fence_resend_batches, MGR_ANY},
	    {"batch", fence_dropped_request_sent_again, MGR_ANY},
	    {"batch", fence_malformed_acts_on_nothing, MGR_LOOP},
	    {"wire", fence_frames_round_trip, MGR_LOOP},
	    {"wire", fence_frames_malformed, MGR_LOOP},
	};

	return mgr_main("fence", cases, sizeof(cases) / sizeof(cases[0]));
}
