// SPDX-License-Identifier: BSD-2-Clause
/*
 * Many threads, several peers, rails pulled and restored: the net under
 * the manager's locking.  Written against the public API only.
 *
 * Three managers in one process over soft rails on 127.0.0.1: s0 with 4
 * rails, s1 with 3, s2 with 2 (networks net0..net3; every pair shares
 * net0 and net1).  Each has one registered buffer.  NTHR application
 * threads post, to random (source, target) pairs:
 *
 *   - data: ry_write of a pattern from the source's slot to the target's,
 *     then (once it completed and the target's bytes were compared) a
 *     ry_read of it back into the zeroed source slot, compared again.
 *     Each thread owns NSLOT slots, the same offsets in every buffer, and
 *     reuses a slot only after both ops of it completed: no two ops ever
 *     touch the same bytes.
 *   - messages: ry_send with (thread, source, target, sequence, length,
 *     pattern); the receive callback checks the bytes and counts each
 *     sequence of each (target, source, thread).
 *
 * A flapper thread pulls and restores rails r1.. (never r0, so every pair
 * always keeps a path) every 100..300 ms with ry_rail_link, and reads
 * ry_rail_info, ry_peer_info and ry_metrics_render meanwhile.  Progress:
 * the internal progress thread on every manager (threaded), or every
 * application thread calling ry_progress() on all three (manual).
 *
 * Asserted: every op completes exactly once and RY_OK (a path always
 * exists), none is older than OP_DEADLINE_S (else which one is stuck),
 * every byte of every write and read compares, every message sent arrives
 * exactly once with its bytes intact, and the managers destroy with no op
 * or callback left behind (ASan/valgrind/TSan check the rest).  The API
 * promises no order between messages, so order is only reported.
 */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tests/manager/fixture.h"

#define NMGR 3
#define NTHR 4
#define NSLOT 4
#define NMSG 16		      /* messages in flight per thread */
#define SLOT_LEN (132u << 10) /* one slot's bytes in each buffer */
#define DATA_MAX (128u << 10) /* longest write/read */
#define MAXOPS (1u << 16)     /* op records per thread */
#define MAXSEQ (1u << 15)     /* messages per (thread, source, target) */
#define MSG_HDR 24u
#define OP_DEADLINE_S 30    /* an op older than this is stuck */
#define RUN_MS_DEFAULT 6000 /* load phase of each variant */
#define BUF_LEN ((size_t)NTHR * NSLOT * SLOT_LEN)

static const unsigned nrails[NMGR] = {4, 3, 2};

enum kind { K_WRITE, K_READ, K_SEND };

struct oprec {
	atomic_uint ncompl; /* completions seen */
	atomic_bool ready;  /* first completion's fields written */
	int status;
	uint64_t posted_ns;
	unsigned char kind, src, dst, slot;
	size_t off, len;
};

struct thr {
	unsigned id;
	pthread_t tid;
	uint64_t rng;
	struct oprec *rec;
	unsigned nrec;
	/* per slot: the op in flight (NULL when idle) */
	struct oprec *slot_op[NSLOT];
	uint32_t slot_seed[NSLOT];
	struct oprec *msg_op[NMSG];
	uint32_t msg_seq[NMGR][NMGR]; /* next sequence per (src, dst) */
	unsigned long writes, reads, sends, eagain;
};

static struct {
	struct ry_manager *m[NMGR];
	struct ry_peer *peer[NMGR][NMGR]; /* [src][dst] */
	unsigned char *buf[NMGR];
	struct ry_region *rg[NMGR];
	unsigned char desc[NMGR][RY_DESC_MAX];
	int desc_len[NMGR];
	bool manual;
	unsigned run_ms;
	atomic_bool stop_posting, stop_flapper;
	atomic_uint live_threads;
	/* first failure, reported by the main thread */
	pthread_mutex_t err_lock;
	char err[512];
	atomic_uint nerr;
	/* receive side: [dst][src][thread][seq] */
	atomic_uchar seen[NMGR][NMGR][NTHR][MAXSEQ];
	atomic_uint last_seq[NMGR][NMGR][NTHR];
	atomic_ulong received, bad_msgs, out_of_order, dup_compl, flaps;
	struct thr t[NTHR];
	pthread_t flapper;
} S;

static void note_fail(const char *fmt, ...)
    __attribute__((format(printf, 1, 2)));
static void note_fail(const char *fmt, ...)
{
	va_list ap;

	pthread_mutex_lock(&S.err_lock);
	if (!atomic_fetch_add(&S.nerr, 1)) {
		va_start(ap, fmt);
		vsnprintf(S.err, sizeof(S.err), fmt, ap);
		va_end(ap);
	}
	pthread_mutex_unlock(&S.err_lock);
	atomic_store(&S.stop_posting, true);
}

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static const char *kind_str(unsigned k)
{
	return k == K_WRITE ? "write" : k == K_READ ? "read" : "send";
}

static void on_done(const struct ry_completion *c, void *arg)
{
	struct oprec *r = arg;

	if (atomic_fetch_add(&r->ncompl, 1)) {
		atomic_fetch_add(&S.dup_compl, 1);
		return;
	}
	r->status = c->status;
	if (c->status != RY_OK) /* the reason lives only during the call */
		note_fail("%s s%u->s%u %zu bytes failed (%s): %s",
			  kind_str(r->kind), r->src, r->dst, r->len,
			  ry_status_str(c->status), c->reason);
	atomic_store_explicit(&r->ready, true, memory_order_release);
}

/* ---- messages ---- */

static void msg_fill(unsigned char *p, unsigned thr, unsigned src, unsigned dst,
		     uint32_t seq, uint32_t len)
{
	uint32_t h[6] = {0x52595354u, thr, src, dst, seq, len};

	memcpy(p, h, MSG_HDR);
	fx_fill(p + MSG_HDR, len - MSG_HDR, seq * 7919u + thr * 131u + src);
}

static void on_recv(struct ry_peer *from, const struct ry_message *m, void *arg)
{
	unsigned dst = (unsigned)(uintptr_t)arg;
	unsigned char want[RY_MSG_MAX];
	uint32_t h[6];
	unsigned prev;

	if (m->type != RY_MSG_DATA || m->len < MSG_HDR || m->len > RY_MSG_MAX) {
		atomic_fetch_add(&S.bad_msgs, 1);
		note_fail("s%u: message of type %d, %zu bytes", dst, m->type,
			  m->len);
		return;
	}
	memcpy(h, m->data, MSG_HDR);
	if (h[0] != 0x52595354u || h[1] >= NTHR || h[2] >= NMGR ||
	    h[3] != dst || h[4] >= MAXSEQ || h[5] != m->len) {
		atomic_fetch_add(&S.bad_msgs, 1);
		note_fail(
		    "s%u: bad message header (thr %u src %u dst %u seq %u "
		    "len %u/%zu)",
		    dst, h[1], h[2], h[3], h[4], h[5], m->len);
		return;
	}
	msg_fill(want, h[1], h[2], dst, h[4], h[5]);
	if (memcmp(want, m->data, m->len)) {
		atomic_fetch_add(&S.bad_msgs, 1);
		note_fail("s%u: message thr %u src s%u seq %u: bytes differ",
			  dst, h[1], h[2], h[4]);
		return;
	}
	if (atomic_fetch_add(&S.seen[dst][h[2]][h[1]][h[4]], 1))
		note_fail("s%u: message thr %u src s%u seq %u delivered twice",
			  dst, h[1], h[2], h[4]);
	prev = atomic_exchange(&S.last_seq[dst][h[2]][h[1]], h[4] + 1);
	if (prev > h[4] + 1)
		atomic_fetch_add(&S.out_of_order, 1);
	atomic_fetch_add(&S.received, 1);
}

/* ---- application threads ---- */

static struct oprec *new_rec(struct thr *t, unsigned kind, unsigned src,
			     unsigned dst)
{
	struct oprec *r;

	if (t->nrec == MAXOPS)
		return NULL;
	r = &t->rec[t->nrec++];
	r->kind = (unsigned char)kind;
	r->src = (unsigned char)src;
	r->dst = (unsigned char)dst;
	r->posted_ns = fx_now_ns();
	return r;
}

static size_t slot_off(const struct thr *t, unsigned s)
{
	return ((size_t)t->id * NSLOT + s) * SLOT_LEN;
}

static void pick_pair(struct thr *t, unsigned *src, unsigned *dst)
{
	*src = (unsigned)(rnd(&t->rng) % NMGR);
	*dst = (*src + 1 + (unsigned)(rnd(&t->rng) % (NMGR - 1))) % NMGR;
}

static int post_data(struct thr *t, struct oprec *r)
{
	size_t o = r->off;
	int ret;

	if (r->kind == K_WRITE)
		ret = ry_write(S.peer[r->src][r->dst], S.rg[r->src], o,
			       S.desc[r->dst], (size_t)S.desc_len[r->dst], o,
			       r->len, on_done, r);
	else
		ret = ry_read(S.peer[r->src][r->dst], S.rg[r->src], o,
			      S.desc[r->dst], (size_t)S.desc_len[r->dst], o,
			      r->len, on_done, r);
	if (ret)
		note_fail("thread %u: ry_%s s%u->s%u %zu bytes: %s", t->id,
			  kind_str(r->kind), r->src, r->dst, r->len,
			  strerror(-ret));
	return ret;
}

static void start_write(struct thr *t, unsigned s)
{
	unsigned src, dst;
	struct oprec *r;
	size_t len, off;

	pick_pair(t, &src, &dst);
	r = new_rec(t, K_WRITE, src, dst);
	if (!r)
		return;
	len = 1 + (size_t)(rnd(&t->rng) % DATA_MAX);
	off = slot_off(t, s) + (size_t)(rnd(&t->rng) % (SLOT_LEN - len + 1));
	r->slot = (unsigned char)s;
	r->off = off;
	r->len = len;
	t->slot_seed[s] = (uint32_t)rnd(&t->rng);
	fx_fill(S.buf[src] + off, len, t->slot_seed[s]);
	memset(S.buf[dst] + off, 0, len);
	if (!post_data(t, r)) {
		t->slot_op[s] = r;
		t->writes++;
	}
}

/* A completed op of slot s: check it, then the next step of the slot. */
static void finish_data(struct thr *t, unsigned s, struct oprec *r)
{
	unsigned char *a = S.buf[r->src] + r->off, *b = S.buf[r->dst] + r->off;
	struct oprec *rd;

	t->slot_op[s] = NULL;
	if (r->status != RY_OK)
		return; /* on_done reported it */
	if (memcmp(a, b, r->len)) {
		note_fail(
		    "thread %u: %s s%u->s%u %zu bytes at %zu: data differs",
		    t->id, kind_str(r->kind), r->src, r->dst, r->len, r->off);
		return;
	}
	if (r->kind == K_READ || atomic_load(&S.stop_posting))
		return;
	/* read the target's bytes back into the zeroed source slot */
	rd = new_rec(t, K_READ, r->src, r->dst);
	if (!rd)
		return;
	rd->slot = r->slot;
	rd->off = r->off;
	rd->len = r->len;
	memset(a, 0, r->len);
	if (!post_data(t, rd)) {
		t->slot_op[s] = rd;
		t->reads++;
	}
}

static void start_send(struct thr *t, unsigned i)
{
	unsigned char msg[RY_MSG_MAX];
	unsigned src, dst;
	struct oprec *r;
	uint32_t len, seq;
	int ret;

	pick_pair(t, &src, &dst);
	seq = t->msg_seq[src][dst];
	if (seq == MAXSEQ)
		return;
	len = MSG_HDR + (uint32_t)(rnd(&t->rng) % (RY_MSG_MAX - MSG_HDR + 1));
	msg_fill(msg, t->id, src, dst, seq, len);
	if (t->nrec == MAXOPS)
		return;
	r = &t->rec[t->nrec];
	r->kind = K_SEND;
	r->src = (unsigned char)src;
	r->dst = (unsigned char)dst;
	r->len = len;
	r->posted_ns = fx_now_ns();
	ret = ry_send(S.peer[src][dst], msg, len, on_done, r);
	if (ret == -EAGAIN) { /* message slots full: try again later */
		t->eagain++;
		return;
	}
	if (ret) {
		note_fail("thread %u: ry_send s%u->s%u: %s", t->id, src, dst,
			  strerror(-ret));
		return;
	}
	t->nrec++;
	t->msg_seq[src][dst]++;
	t->msg_op[i] = r;
	t->sends++;
}

static void check_stuck(struct thr *t, struct oprec *r, uint64_t now)
{
	if (now - r->posted_ns > (uint64_t)OP_DEADLINE_S * 1000000000ull)
		note_fail("thread %u: %s s%u->s%u %zu bytes stuck for %d s",
			  t->id, kind_str(r->kind), r->src, r->dst, r->len,
			  OP_DEADLINE_S);
}

/* One pass over the thread's ops; returns how many are still in flight. */
static unsigned step(struct thr *t, bool post)
{
	uint64_t now = fx_now_ns();
	unsigned s, busy = 0;
	struct oprec *r;

	for (s = 0; s < NSLOT; s++) {
		r = t->slot_op[s];
		if (r && atomic_load_explicit(&r->ready, memory_order_acquire))
			finish_data(t, s, r);
		else if (r)
			check_stuck(t, r, now);
		if (!t->slot_op[s] && post)
			start_write(t, s);
		busy += t->slot_op[s] != NULL;
	}
	for (s = 0; s < NMSG; s++) {
		r = t->msg_op[s];
		if (r &&
		    atomic_load_explicit(&r->ready, memory_order_acquire)) {
			t->msg_op[s] = NULL; /* on_done reported a failure */
		} else if (r) {
			check_stuck(t, r, now);
		}
		if (!t->msg_op[s] && post)
			start_send(t, s);
		busy += t->msg_op[s] != NULL;
	}
	return busy;
}

static void progress_all(void)
{
	unsigned i;

	for (i = 0; i < NMGR; i++)
		ry_progress(S.m[i]);
}

static void nap_us(long us)
{
	struct timespec ts = {0, us * 1000};

	nanosleep(&ts, NULL);
}

static void *app_main(void *arg)
{
	struct thr *t = arg;
	uint64_t end;

	while (!atomic_load(&S.stop_posting)) {
		step(t, true);
		if (S.manual)
			progress_all();
		else
			nap_us(50);
	}
	/* drain: every op still in flight must complete */
	end = fx_now_ns() + (uint64_t)(OP_DEADLINE_S + 5) * 1000000000ull;
	while (step(t, false) && fx_now_ns() < end) {
		if (S.manual)
			progress_all();
		else
			nap_us(200);
	}
	atomic_fetch_sub(&S.live_threads, 1);
	return NULL;
}

/* ---- the flapper ---- */

/*
 * Readers that take the manager's locks while the others post and
 * progress: every call checks what it can, and runs often enough that a
 * reader missing its lock meets the writers (TSan sees it).
 */
static void observe(uint64_t *rng, char *metrics, bool render)
{
	unsigned i = (unsigned)(rnd(rng) % NMGR), j = (i + 1) % NMGR;
	struct ry_counters c;
	struct ry_rail_info ri;
	struct ry_peer_info pi;

	if (ry_rail_info(S.m[i], "r0", &ri) || !ri.link_up)
		note_fail("s%u: r0 is not up", i);
	if (ry_peer_info(S.peer[i][j], &pi) ||
	    pi.rails_active > pi.rails_usable ||
	    pi.rails_usable > pi.rails_paired)
		note_fail("s%u: ry_peer_info on s%u: %u active, %u usable, "
			  "%u paired",
			  i, j, pi.rails_active, pi.rails_usable,
			  pi.rails_paired);
	if (ry_peer_counters(S.peer[i][j], &c) ||
	    ry_rail_counters(S.m[i], "r0", &c))
		note_fail("s%u: counters failed", i);
	if (render && ry_metrics_render(S.m[i], metrics, 1 << 16) < 0)
		note_fail("s%u: ry_metrics_render failed", i);
}

/* Pulls and restores rails r1.. every 100..300 ms; observes meanwhile. */
static void *flapper_main(void *arg)
{
	uint64_t rng = 0x9e3779b97f4a7c15ull, next = 0, now;
	bool down[NMGR][4] = {{false}};
	char *metrics = malloc(1 << 16);
	unsigned i, r, n = 0;

	if (!metrics) {
		note_fail("out of memory");
		return NULL;
	}
	while (!atomic_load(&S.stop_flapper)) {
		observe(&rng, metrics, ++n % 64 == 0);
		now = fx_now_ns();
		if (now < next) {
			nap_us(1000);
			continue;
		}
		next = now + (100 + rnd(&rng) % 200) * 1000000ull;
		i = (unsigned)(rnd(&rng) % NMGR);
		r = 1 + (unsigned)(rnd(&rng) % (nrails[i] - 1));
		if (ry_rail_link(S.m[i], ry_rail_name(S.m[i], r), down[i][r]))
			note_fail("ry_rail_link(s%u, r%u) failed", i, r);
		down[i][r] = !down[i][r];
		atomic_fetch_add(&S.flaps, 1);
	}
	for (i = 0; i < NMGR; i++)
		for (r = 1; r < nrails[i]; r++)
			if (down[i][r])
				ry_rail_link(S.m[i], ry_rail_name(S.m[i], r),
					     true);
	free(metrics);
	return NULL;
}

/* ---- setup and the run ---- */

static void setup(void)
{
	struct fx_opts o = {0};
	struct ry_config c;
	char addr[NMGR][100];
	unsigned i, j;

	memset(&S, 0, sizeof(S));
	pthread_mutex_init(&S.err_lock, NULL);
	S.run_ms = RUN_MS_DEFAULT;
	if (getenv("RY_STRESS_MS"))
		S.run_ms = (unsigned)atoi(getenv("RY_STRESS_MS"));
	for (i = 0; i < NMGR; i++) {
		o.nrails_a = nrails[i];
		fx_config(&c, &o, false);
		snprintf(c.node, sizeof(c.node), "s%u", i);
		ck_assert_int_eq(ry_manager_create(&c, &S.m[i]), 0);
		ry_set_recv_cb(S.m[i], on_recv, (void *)(uintptr_t)i);
		ck_assert_int_eq(
		    ry_manager_control_addr(S.m[i], addr[i], sizeof(addr[i])),
		    0);
		S.buf[i] = calloc(1, BUF_LEN);
		ck_assert_ptr_nonnull(S.buf[i]);
		ck_assert_int_eq(
		    ry_mr_reg(S.m[i], S.buf[i], BUF_LEN,
			      RY_MR_REMOTE_WRITE | RY_MR_REMOTE_READ, &S.rg[i]),
		    0);
		S.desc_len[i] =
		    ry_mr_pack(S.rg[i], S.desc[i], sizeof(S.desc[i]));
		ck_assert_int_gt(S.desc_len[i], 0);
	}
	for (i = 0; i < NMGR; i++)
		for (j = 0; j < NMGR; j++)
			if (i != j)
				ck_assert_int_eq(
				    ry_peer_get(S.m[i], addr[j], &S.peer[i][j]),
				    0);
	for (i = 0; i < NTHR; i++) {
		S.t[i].id = i;
		S.t[i].rng = 0x1234567ull * (i + 1) + (uint64_t)fx_now_ns();
		S.t[i].rec = calloc(MAXOPS, sizeof(struct oprec));
		ck_assert_ptr_nonnull(S.t[i].rec);
	}
}

static bool all_received(void)
{
	unsigned long sent = 0;
	unsigned i;

	for (i = 0; i < NTHR; i++)
		sent += S.t[i].sends;
	return atomic_load(&S.received) >= sent;
}

/* Every message each thread sent arrived exactly once; none other did. */
static void check_messages(void)
{
	unsigned d, s, t, q, n, want, bad = 0;
	char first[160] = "";

	for (d = 0; d < NMGR; d++)
		for (s = 0; s < NMGR; s++)
			for (t = 0; t < NTHR; t++)
				for (q = 0; q < MAXSEQ; q++) {
					n = atomic_load(&S.seen[d][s][t][q]);
					want = q < S.t[t].msg_seq[s][d];
					if (n != want && !bad++)
						snprintf(first, sizeof(first),
							 "thr %u s%u->s%u seq "
							 "%u arrived %u times",
							 t, s, d, q, n);
				}
	/* ck_assert is slow in a loop: one verdict */
	ck_assert_msg(!bad,
		      "%u message(s) not delivered exactly once (their "
		      "sends completed RY_OK, 10 s ago or more); first: %s",
		      bad, first);
}

static void run(bool manual)
{
	unsigned long w = 0, r = 0, m = 0, ea = 0;
	unsigned i, k;
	uint64_t end;

	setup();
	S.manual = manual;
	atomic_store(&S.live_threads, NTHR);
	if (!manual)
		for (i = 0; i < NMGR; i++)
			ck_assert_int_eq(ry_progress_thread_start(S.m[i]), 0);
	for (i = 0; i < NTHR; i++)
		ck_assert_int_eq(
		    pthread_create(&S.t[i].tid, NULL, app_main, &S.t[i]), 0);
	ck_assert_int_eq(pthread_create(&S.flapper, NULL, flapper_main, NULL),
			 0);
	end = fx_now_ns() + (uint64_t)S.run_ms * 1000000ull;
	while (fx_now_ns() < end && !atomic_load(&S.nerr))
		nap_us(20000);
	atomic_store(&S.stop_posting, true);
	/* in manual mode the last app thread out keeps progress going */
	while (atomic_load(&S.live_threads))
		nap_us(10000);
	for (i = 0; i < NTHR; i++)
		pthread_join(S.t[i].tid, NULL);
	atomic_store(&S.stop_flapper, true);
	pthread_join(S.flapper, NULL);
	ck_assert_msg(!atomic_load(&S.nerr), "%u failure(s), first: %s",
		      atomic_load(&S.nerr), S.err);

	/* every op completed (the drain ended with nothing in flight) */
	for (i = 0; i < NTHR; i++) {
		for (k = 0; k < NSLOT; k++)
			ck_assert_msg(!S.t[i].slot_op[k],
				      "thread %u slot %u: op still in flight",
				      i, k);
		for (k = 0; k < NMSG; k++)
			ck_assert_msg(!S.t[i].msg_op[k],
				      "thread %u: message still in flight", i);
		w += S.t[i].writes;
		r += S.t[i].reads;
		m += S.t[i].sends;
		ea += S.t[i].eagain;
	}
	/* a completed send may still be on its way to the receive callback */
	end = fx_now_ns() + 10000000000ull;
	while (!all_received() && fx_now_ns() < end) {
		if (manual)
			progress_all();
		nap_us(1000);
	}
	check_messages();
	printf("%s: %lu writes, %lu reads, %lu messages (%lu EAGAIN, %lu "
	       "received out of order), %lu rail flaps\n",
	       manual ? "manual" : "threaded", w, r, m, ea,
	       atomic_load(&S.out_of_order), atomic_load(&S.flaps));
	ck_assert_msg(w > 0 && r > 0 && m > 0, "nothing was exercised");

	if (!manual)
		for (i = 0; i < NMGR; i++)
			ry_progress_thread_stop(S.m[i]);
	for (i = 0; i < NMGR; i++)
		ry_manager_destroy(S.m[i]);
	/* destroy cancelled nothing: every op had completed exactly once */
	ck_assert_uint_eq(atomic_load(&S.dup_compl), 0);
	for (i = 0; i < NTHR; i++) {
		for (k = 0; k < S.t[i].nrec; k++)
			if (atomic_load(&S.t[i].rec[k].ncompl) != 1)
				ck_abort_msg(
				    "thread %u op %u (%s) completed "
				    "%u times",
				    i, k, kind_str(S.t[i].rec[k].kind),
				    atomic_load(&S.t[i].rec[k].ncompl));
		free(S.t[i].rec);
	}
	for (i = 0; i < NMGR; i++)
		free(S.buf[i]);
	pthread_mutex_destroy(&S.err_lock);
}

START_TEST(threads_progress_thread)
{
	run(false);
}
END_TEST

START_TEST(threads_progress_manual)
{
	run(true);
}
END_TEST

int main(void)
{
	const TTest *const tests[] = {threads_progress_thread,
				      threads_progress_manual};

	return fx_run_suite("stress", 120, tests,
			    sizeof(tests) / sizeof(tests[0]), true);
}
