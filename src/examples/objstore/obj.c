// SPDX-License-Identifier: BSD-2-Clause
/*
 * railyard-obj: the client of the reference object server (objd.c).
 *
 * Each worker thread owns one registered buffer and has at most one
 * request out: it sends the request message with the buffer's descriptor
 * and sleeps until the reply arrives (the receive callback, on a library
 * progress thread, matches the reply's id to the worker and wakes it).
 * The server reads a PUT's data from the buffer and writes a GET's into
 * it, so the buffer is the server's between request and reply.
 *
 * When a request ends without a reply (no reply within --timeout, the
 * request could not be delivered), the server may still be about to use
 * the buffer; the worker deregisters it and takes a new one, so a late
 * READ or WRITE of the old request is refused by the rails instead of
 * touching memory already used for the next request.  If the server
 * restarts (RY_EV_PEER_RESTARTED) its objects are gone: the requests
 * waiting on it fail at once ("server restarted").
 *
 * bench: every worker owns --keys keys; it PUTs each once (the preload,
 * outside the clock), then PUTs and GETs random keys of its own until
 * --count or --duration.  Each PUT fills the buffer with a pattern seeded
 * by (worker, key, version), of a size drawn from --size MIN-MAX, and
 * sends its CRC32C, which the server checks on the data it read; the
 * worker remembers size and CRC per key.  Each GET checks the size and the
 * server's stored CRC against them and, with --verify, the CRC of the
 * bytes that landed in the buffer.  A mismatch anywhere is counted as
 * corrupted.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "objstore.h"

static const char usage_text[] =
    "usage: railyard-obj COMMAND -c FILE [--server PEER] [options] [ARGS]\n"
    "\n"
    "  put KEY [FILE]   store FILE (default: standard input) as KEY\n"
    "  get KEY [FILE]   fetch KEY into FILE (default: standard output)\n"
    "  del KEY          delete KEY\n"
    "  stat             the server's object count and pool use\n"
    "  bench            several threads PUT and GET with checksums:\n"
    "      [--threads N]       worker threads (default 4)\n"
    "      [--size S|MIN-MAX]  object size, or a range drawn per PUT\n"
    "                          (default 1M)\n"
    "      [--keys K]          keys per thread (default 8)\n"
    "      [--op put|get|mixed] what the timed part does (default mixed)\n"
    "      [--count N | --duration S]  total operations, or seconds\n"
    "                          (default 10 s)\n"
    "      [--verify]          also checksum every GET's bytes\n"
    "      [--json]            the result as JSON on stdout\n"
    "  crc32c [FILE]    the CRC32C the server keeps for FILE's bytes\n"
    "\n"
    "-c FILE is a railyard config (rails, control address); --server\n"
    "names the railyard-objd node, as a peer of FILE or by its control\n"
    "address HOST:PORT (default: the only peer of FILE).  --node NAME\n"
    "renames this node (two clients on one host need two names).\n"
    "--timeout S: how long to wait for a reply (default 30).\n"
    "Exit codes: 0 success, 1 failure (a missing key, a failed or\n"
    "corrupted operation), 2 usage error.\n";

#define MAX_THREADS 256
#define LAT_MAX 65536 /* latency samples kept per worker */

struct keystate {
	uint32_t version;
	bool present; /* the server holds exactly this version */
	uint64_t size;
	uint32_t crc;
};

struct wstats {
	uint64_t ok, failed, puts, gets, corrupted, bytes;
};

struct client;

/* A registered buffer and its descriptor. */
struct wbuf {
	uint8_t *buf;
	size_t cap;
	unsigned access;
	struct ry_region *mr;
	uint8_t desc[RY_DESC_MAX];
	size_t desc_len;
};

struct worker {
	struct client *cl;
	unsigned idx;
	pthread_t th;
	/* least privilege: the server may only read what a PUT sends and
	 * only write where a GET lands */
	struct wbuf src; /* PUT: RY_MR_REMOTE_READ */
	struct wbuf dst; /* GET: RY_MR_REMOTE_WRITE */
	uint64_t seq;
	uint64_t rng;
	/* the request out, its reply: under cl->lock */
	uint64_t waiting;
	bool done;
	struct obj_msg rep;
	char why[OBJ_TEXT_MAX + 1];
	pthread_cond_t cond;
	/* bench */
	struct keystate *keys;
	struct wstats pre, st; /* st under cl->lock (sampled each second) */
	double *lat;
	uint64_t n_lat;
	char first_error[OBJ_TEXT_MAX + 128];
};

struct client {
	struct ry_manager *mgr;
	struct ry_config *cfg;
	struct ry_peer *server;
	pthread_mutex_t lock;
	struct worker *w;
	unsigned nw;
	double timeout;
	/* bench */
	uint64_t size_min, size_max, count;
	unsigned keys;
	double duration, t_end;
	int op; /* 0 put, 1 get, 2 mixed */
	bool verify, json;
	atomic_uint_fast64_t issued;
	pthread_barrier_t start;
	atomic_bool stop;
	atomic_uint finished; /* workers done */
};

/* Context of one request message, for its send completion. */
struct sent {
	struct worker *w;
	uint64_t id;
};

/* ---- requests ---- */

/* (Re)register b with room for cap bytes, keeping what it held: a new
 * registration, so the old descriptor stops working. */
static int buffer_arm(struct client *cl, struct wbuf *b, size_t cap,
		      unsigned access)
{
	uint8_t *buf = aligned_alloc(4096, (cap + 4095) & ~(size_t)4095);
	struct ry_region *mr;
	int ret;

	if (!buf)
		return -ENOMEM;
	ret = ry_mr_reg(cl->mgr, buf, cap, access, &mr);
	if (ret) {
		free(buf);
		return ret;
	}
	ret = ry_mr_pack(mr, b->desc, sizeof(b->desc));
	if (ret < 0) {
		ry_mr_dereg(mr);
		free(buf);
		return ret;
	}
	if (b->mr) {
		memcpy(buf, b->buf, b->cap < cap ? b->cap : cap);
		ry_mr_dereg(b->mr);
		free(b->buf);
	}
	b->desc_len = (size_t)ret;
	b->mr = mr;
	b->buf = buf;
	b->cap = cap;
	b->access = access;
	return 0;
}

static void request_sent(const struct ry_completion *c, void *arg)
{
	struct sent *s = arg;
	struct worker *w = s->w;

	if (c->status != RY_OK) {
		pthread_mutex_lock(&w->cl->lock);
		if (w->waiting == s->id && !w->done) {
			w->done = true;
			w->rep = (struct obj_msg){
			    .status = c->status == RY_ESTALE ? -ESTALE : -EIO};
			snprintf(w->why, sizeof(w->why),
				 "the request was not delivered: %s (%s)",
				 ry_status_str(c->status), c->reason);
			pthread_cond_signal(&w->cond);
		}
		pthread_mutex_unlock(&w->cl->lock);
	}
	free(s);
}

static void on_reply(struct ry_peer *from, const struct ry_message *msg,
		     void *arg)
{
	struct client *cl = arg;
	struct obj_msg m;
	struct worker *w;

	if (msg->type != RY_MSG_DATA || obj_decode(msg->data, msg->len, &m) ||
	    !(m.op & OBJ_REPLY) || (m.id >> 40) >= cl->nw)
		return;
	w = &cl->w[m.id >> 40];
	pthread_mutex_lock(&cl->lock);
	if (w->waiting == m.id && !w->done) {
		w->done = true;
		w->rep = m;
		snprintf(w->why, sizeof(w->why), "%.*s", (int)m.tail_len,
			 (const char *)m.tail);
		w->rep.key = NULL;
		w->rep.tail = NULL;
		pthread_cond_signal(&w->cond);
	}
	pthread_mutex_unlock(&cl->lock);
}

static void on_event(const struct ry_event *ev, void *arg)
{
	struct client *cl = arg;

	if (ev->type != RY_EV_PEER_RESTARTED)
		return;
	fprintf(stderr,
		"railyard-obj: server %s restarted (incarnation %016" PRIx64
		" -> %016" PRIx64 "): its objects are gone\n",
		ev->peer ? ev->peer : "?", ev->old_incarnation,
		ev->new_incarnation);
	pthread_mutex_lock(&cl->lock);
	for (unsigned i = 0; i < cl->nw; i++) {
		struct worker *w = &cl->w[i];

		if (w->waiting && !w->done) {
			w->done = true;
			w->rep = (struct obj_msg){.status = -ESTALE};
			snprintf(w->why, sizeof(w->why),
				 "the server restarted before answering");
			pthread_cond_signal(&w->cond);
		}
	}
	pthread_mutex_unlock(&cl->lock);
}

/*
 * One request and its reply.  Returns the reply's status (0 or a negative
 * errno from the server), or -ETIMEDOUT/-EIO/-ESTALE when there was no
 * reply; *rep and w->why hold the reply and its text.
 */
static int rpc(struct worker *w, uint8_t op, const char *key, uint64_t size,
	       uint32_t crc, struct obj_msg *rep)
{
	struct client *cl = w->cl;
	uint8_t buf[RY_MSG_MAX];
	struct wbuf *b = op == OBJ_PUT	 ? &w->src
			 : op == OBJ_GET ? &w->dst
					 : NULL;
	struct obj_msg m = {
	    .op = op,
	    .id = (uint64_t)w->idx << 40 | (++w->seq & ((1ull << 40) - 1)),
	    .size = size,
	    .crc = crc,
	    .key = key,
	    .key_len = key ? strlen(key) : 0,
	    .tail = b ? b->desc : NULL,
	    .tail_len = b ? b->desc_len : 0,
	};
	double deadline = obj_now() + cl->timeout;
	struct timespec ts;
	struct sent *s;
	int len = obj_encode(buf, sizeof(buf), &m), ret;

	if (len < 0) {
		snprintf(w->why, sizeof(w->why), "key too long (at most %d)",
			 OBJ_KEY_MAX);
		return len;
	}
	pthread_mutex_lock(&cl->lock);
	w->waiting = m.id;
	w->done = false;
	pthread_mutex_unlock(&cl->lock);
	for (;;) {
		s = malloc(sizeof(*s));
		if (!s) {
			ret = -ENOMEM;
			break;
		}
		*s = (struct sent){w, m.id};
		ret = ry_send(cl->server, buf, (size_t)len, request_sent, s);
		if (!ret)
			break;
		free(s);
		if (ret != -EAGAIN || obj_now() > deadline)
			break;
		usleep(200); /* every message slot busy: wait for one */
	}
	pthread_mutex_lock(&cl->lock);
	if (ret) {
		w->waiting = 0;
		pthread_mutex_unlock(&cl->lock);
		snprintf(w->why, sizeof(w->why), "cannot send the request: %s",
			 strerror(-ret));
		return ret;
	}
	while (!w->done && obj_now() < deadline) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		ts.tv_nsec += 50 * 1000000;
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&w->cond, &cl->lock, &ts);
	}
	w->waiting = 0;
	if (!w->done) {
		pthread_mutex_unlock(&cl->lock);
		snprintf(w->why, sizeof(w->why), "no reply within %.0f s",
			 cl->timeout);
		ret = -ETIMEDOUT;
	} else {
		*rep = w->rep;
		pthread_mutex_unlock(&cl->lock);
		ret = rep->status;
		if (!(rep->op & OBJ_REPLY)) /* failed before any reply */
			ret = ret ? ret : -EIO;
	}
	/* no reply: the server may still READ or WRITE this buffer; a new
	 * registration makes such a late access fail on the rails */
	if (b && (ret == -ETIMEDOUT || ret == -EIO || ret == -ESTALE)) {
		if (!(ret == -ESTALE && (rep->op & OBJ_REPLY)) &&
		    buffer_arm(cl, b, b->cap, b->access))
			fprintf(stderr,
				"railyard-obj: cannot renew a buffer\n");
	}
	return ret;
}

/* ---- the simple commands ---- */

static int read_all(const char *path, uint8_t **buf_p, size_t *len_p)
{
	FILE *f = (!path || !strcmp(path, "-")) ? stdin : fopen(path, "rb");
	size_t cap = 1 << 20, len = 0;
	uint8_t *buf = NULL, *nb;
	int ret = 0;

	if (!f)
		return -errno;
	while ((nb = realloc(buf, cap))) {
		buf = nb;
		len += fread(buf + len, 1, cap - len, f);
		if (len < cap)
			break;
		cap *= 2;
	}
	if (!nb)
		ret = -ENOMEM;
	else if (ferror(f))
		ret = -EIO;
	if (f != stdin)
		fclose(f);
	if (ret) {
		free(buf);
		return ret;
	}
	*buf_p = buf;
	*len_p = len;
	return 0;
}

static int cmd_put(struct worker *w, const char *key, const char *path)
{
	struct obj_msg rep = {0};
	uint8_t *data;
	size_t len;
	uint32_t crc;
	int ret = read_all(path, &data, &len);

	if (ret) {
		fprintf(stderr, "railyard-obj: put %s: cannot read %s: %s\n",
			key, path ? path : "standard input", strerror(-ret));
		return 1;
	}
	ret = buffer_arm(w->cl, &w->src, len ? len : 1, RY_MR_REMOTE_READ);
	if (ret) {
		fprintf(stderr, "railyard-obj: put %s: buffer: %s\n", key,
			strerror(-ret));
		free(data);
		return 1;
	}
	memcpy(w->src.buf, data, len);
	free(data);
	crc = obj_crc32c(0, w->src.buf, len);
	ret = rpc(w, OBJ_PUT, key, len, crc, &rep);
	if (ret) {
		fprintf(stderr, "railyard-obj: put %s: %s (%s)\n", key,
			strerror(-ret), w->why);
		return 1;
	}
	printf("put %s: %zu bytes, crc32c %08" PRIx32 "\n", key, len, crc);
	return 0;
}

static int cmd_get(struct worker *w, const char *key, const char *path)
{
	struct obj_msg rep = {0};
	FILE *f;
	uint32_t crc;
	int ret;

	ret = buffer_arm(w->cl, &w->dst, 1 << 20, RY_MR_REMOTE_WRITE);
	for (int tries = 0; !ret && tries < 3; tries++) {
		ret = rpc(w, OBJ_GET, key, w->dst.cap, 0, &rep);
		if (ret != -EMSGSIZE)
			break;
		/* the reply says how big: take a buffer that fits */
		ret = buffer_arm(w->cl, &w->dst, rep.size, RY_MR_REMOTE_WRITE);
	}
	if (ret == -ENOENT) {
		fprintf(stderr, "railyard-obj: get %s: no such object\n", key);
		return 1;
	}
	if (ret) {
		fprintf(stderr, "railyard-obj: get %s: %s (%s)\n", key,
			strerror(-ret), w->why);
		return 1;
	}
	crc = obj_crc32c(0, w->dst.buf, rep.size);
	if (crc != rep.crc) {
		fprintf(stderr,
			"railyard-obj: get %s: corrupted: the %" PRIu64
			" bytes received have CRC32C %08" PRIx32
			", the server stored %08" PRIx32 "\n",
			key, rep.size, crc, rep.crc);
		return 1;
	}
	f = (!path || !strcmp(path, "-")) ? stdout : fopen(path, "wb");
	if (!f || fwrite(w->dst.buf, 1, rep.size, f) != rep.size ||
	    (f != stdout ? fclose(f) : fflush(f))) {
		fprintf(stderr, "railyard-obj: get %s: cannot write %s: %s\n",
			key, path ? path : "standard output", strerror(errno));
		return 1;
	}
	if (path && strcmp(path, "-"))
		printf("get %s: %" PRIu64 " bytes, crc32c %08" PRIx32 "\n", key,
		       rep.size, crc);
	return 0;
}

static int cmd_simple(struct worker *w, uint8_t op, const char *key)
{
	struct obj_msg rep = {0};
	int ret = rpc(w, op, key, 0, 0, &rep);

	if (ret == -ENOENT) {
		fprintf(stderr, "railyard-obj: del %s: no such object\n", key);
		return 1;
	}
	if (ret) {
		fprintf(stderr, "railyard-obj: %s: %s (%s)\n",
			op == OBJ_DEL ? "del" : "stat", strerror(-ret), w->why);
		return 1;
	}
	if (op == OBJ_STAT)
		printf("%" PRIu64 " objects, %" PRIu64 " of %" PRIu64
		       " bytes in use\n",
		       rep.size, rep.used, rep.capacity);
	else
		printf("deleted %s\n", key);
	return 0;
}

/* ---- bench ---- */

static uint64_t rnd(uint64_t *x)
{
	*x ^= *x >> 12;
	*x ^= *x << 25;
	*x ^= *x >> 27;
	return *x * 0x2545f4914f6cdd1dull;
}

static void fill_pattern(uint8_t *p, size_t len, uint64_t seed)
{
	uint64_t x = seed * 0x9e3779b97f4a7c15ull | 1;
	size_t i = 0;

	for (; i + 8 <= len; i += 8) {
		uint64_t v = rnd(&x);

		memcpy(p + i, &v, 8);
	}
	for (; i < len; i++)
		p[i] = (uint8_t)(seed + i);
}

/*
 * The data of (worker, key, version): the worker's random pattern (filled
 * once: generating fresh bytes for every PUT would cost more than moving
 * them) under a 16-byte stamp unique to the version, so a GET that
 * returned another key's or an older version's bytes fails its CRC.
 */
static void stamp(struct worker *w, unsigned k, uint32_t version, size_t size)
{
	uint64_t x = ((uint64_t)w->idx << 48 ^ (uint64_t)k << 20 ^ version) *
			 0x9e3779b97f4a7c15ull |
		     1;
	uint64_t v[2] = {rnd(&x), rnd(&x)};

	memcpy(w->src.buf, v, size < sizeof(v) ? size : sizeof(v));
}

static void key_name(const struct worker *w, unsigned k, char *buf, size_t len)
{
	snprintf(buf, len, "%s/t%u/k%u", w->cl->cfg->node, w->idx, k);
}

static void note(struct worker *w, struct wstats *st, bool ok, bool corrupt,
		 const char *what, const char *key, int err, double t0)
{
	struct client *cl = w->cl;

	pthread_mutex_lock(&cl->lock);
	if (ok) {
		st->ok++;
	} else if (corrupt) {
		st->corrupted++;
	} else {
		st->failed++;
	}
	if (!ok && !w->first_error[0])
		snprintf(w->first_error, sizeof(w->first_error),
			 "%s %s: %s (%s)", what, key, strerror(-err), w->why);
	pthread_mutex_unlock(&cl->lock);
	if (ok && st == &w->st) {
		double us = (obj_now() - t0) * 1e6;

		if (w->n_lat < LAT_MAX)
			w->lat[w->n_lat] = us;
		else if (rnd(&w->rng) % (w->n_lat + 1) < LAT_MAX)
			w->lat[rnd(&w->rng) % LAT_MAX] = us;
		w->n_lat++;
	}
}

static void put_one(struct worker *w, struct wstats *st, unsigned k)
{
	struct client *cl = w->cl;
	struct keystate *ks = &w->keys[k];
	uint64_t span = cl->size_max - cl->size_min + 1;
	uint64_t size = cl->size_min + (span > 1 ? rnd(&w->rng) % span : 0);
	struct obj_msg rep = {0};
	char key[OBJ_KEY_MAX + 1];
	double t0 = obj_now();
	uint32_t crc;
	int ret;

	key_name(w, k, key, sizeof(key));
	ks->version++;
	stamp(w, k, ks->version, size);
	crc = obj_crc32c(0, w->src.buf, size);
	ret = rpc(w, OBJ_PUT, key, size, crc, &rep);
	if (ret) {
		/* the server may hold the old version or this one */
		ks->present = false;
		note(w, st, false, ret == -EBADMSG, "PUT", key, ret, t0);
		return;
	}
	*ks = (struct keystate){ks->version, true, size, crc};
	pthread_mutex_lock(&cl->lock);
	st->puts++;
	st->bytes += size;
	pthread_mutex_unlock(&cl->lock);
	note(w, st, true, false, "PUT", key, 0, t0);
}

static void get_one(struct worker *w, struct wstats *st, unsigned k)
{
	struct client *cl = w->cl;
	struct keystate *ks = &w->keys[k];
	struct obj_msg rep = {0};
	char key[OBJ_KEY_MAX + 1];
	double t0 = obj_now();
	int ret;

	if (!ks->present) {
		put_one(w, st, k);
		return;
	}
	key_name(w, k, key, sizeof(key));
	ret = rpc(w, OBJ_GET, key, w->dst.cap, 0, &rep);
	if (ret) {
		note(w, st, false, false, "GET", key, ret, t0);
		return;
	}
	if (rep.size != ks->size || rep.crc != ks->crc) {
		snprintf(w->why, sizeof(w->why),
			 "the server holds %" PRIu64 " bytes, CRC32C %08" PRIx32
			 "; %" PRIu64 " bytes, %08" PRIx32 " were put",
			 rep.size, rep.crc, ks->size, ks->crc);
		note(w, st, false, true, "GET", key, -EBADMSG, t0);
		return;
	}
	if (cl->verify) {
		uint32_t crc = obj_crc32c(0, w->dst.buf, rep.size);

		if (crc != ks->crc) {
			snprintf(w->why, sizeof(w->why),
				 "the %" PRIu64 " bytes received have CRC32C "
				 "%08" PRIx32 ", %08" PRIx32 " were put",
				 rep.size, crc, ks->crc);
			note(w, st, false, true, "GET", key, -EBADMSG, t0);
			return;
		}
	}
	pthread_mutex_lock(&cl->lock);
	st->gets++;
	st->bytes += rep.size;
	pthread_mutex_unlock(&cl->lock);
	note(w, st, true, false, "GET", key, 0, t0);
}

static bool bench_more(struct client *cl)
{
	if (atomic_load(&cl->stop))
		return false;
	if (cl->count)
		return atomic_fetch_add(&cl->issued, 1) < cl->count;
	return obj_now() < cl->t_end;
}

static void *bench_worker(void *arg)
{
	struct worker *w = arg;
	struct client *cl = w->cl;

	for (unsigned k = 0; k < cl->keys; k++)
		put_one(w, &w->pre, k);
	pthread_barrier_wait(&cl->start); /* preload done */
	pthread_barrier_wait(&cl->start); /* the clock runs */
	while (bench_more(cl)) {
		unsigned k = (unsigned)(rnd(&w->rng) % cl->keys);
		int op = cl->op == 2 ? (int)(rnd(&w->rng) & 1) : cl->op;

		if (op == 0)
			put_one(w, &w->st, k);
		else
			get_one(w, &w->st, k);
	}
	atomic_fetch_add(&cl->finished, 1);
	return NULL;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void sum_stats(struct client *cl, struct wstats *st, struct wstats *pre)
{
	*st = (struct wstats){0};
	*pre = (struct wstats){0};
	pthread_mutex_lock(&cl->lock);
	for (unsigned i = 0; i < cl->nw; i++) {
		const struct wstats *a = &cl->w[i].st, *b = &cl->w[i].pre;

		st->ok += a->ok;
		st->failed += a->failed;
		st->puts += a->puts;
		st->gets += a->gets;
		st->corrupted += a->corrupted;
		st->bytes += a->bytes;
		pre->ok += b->ok;
		pre->failed += b->failed;
		pre->corrupted += b->corrupted;
	}
	pthread_mutex_unlock(&cl->lock);
}

static void json_str(FILE *out, const char *s)
{
	fputc('"', out);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fprintf(out, "\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			fprintf(out, "\\u%04x", *s);
		else
			fputc(*s, out);
	}
	fputc('"', out);
}

static int cmd_bench(struct client *cl)
{
	static const char *ops[] = {"put", "get", "mixed"};
	struct wstats st, pre, last = {0};
	double t0, t, secs, p50 = 0, p99 = 0, avg = 0, next;
	const char *first_error = NULL;
	double *lat = NULL;
	uint64_t n_lat = 0, failed, corrupted;
	unsigned started = 0;
	int rc, n_rails = ry_rail_count(cl->mgr);
	struct ry_counters rc0[RY_MAX_RAILS] = {{0}}, rc1;

	for (unsigned i = 0; i < cl->nw; i++) {
		struct worker *w = &cl->w[i];

		w->keys = calloc(cl->keys, sizeof(*w->keys));
		w->lat = malloc(LAT_MAX * sizeof(*w->lat));
		w->rng = 0x9e3779b97f4a7c15ull * (i + 1) ^ (uint64_t)getpid();
		if (!w->keys || !w->lat ||
		    buffer_arm(cl, &w->src, cl->size_max, RY_MR_REMOTE_READ) ||
		    buffer_arm(cl, &w->dst, cl->size_max, RY_MR_REMOTE_WRITE)) {
			fprintf(stderr, "railyard-obj: bench: out of memory\n");
			return 1;
		}
		fill_pattern(w->src.buf, cl->size_max, w->rng);
	}
	pthread_barrier_init(&cl->start, NULL, cl->nw + 1);
	for (; started < cl->nw; started++)
		if (pthread_create(&cl->w[started].th, NULL, bench_worker,
				   &cl->w[started]))
			break;
	if (started < cl->nw) {
		/* cannot run with fewer workers than it waits for */
		fprintf(stderr, "railyard-obj: bench: cannot start threads\n");
		exit(1);
	}
	pthread_barrier_wait(&cl->start);
	for (int i = 0; i < n_rails && i < RY_MAX_RAILS; i++)
		ry_rail_counters(cl->mgr, ry_rail_name(cl->mgr, (unsigned)i),
				 &rc0[i]);
	t0 = obj_now();
	cl->t_end = t0 + cl->duration;
	pthread_barrier_wait(&cl->start);
	fprintf(stderr,
		"railyard-obj: bench: %u threads x %u keys, %s, %" PRIu64
		"..%" PRIu64 " bytes, preload done\n",
		cl->nw, cl->keys, ops[cl->op], cl->size_min, cl->size_max);
	/* the live line, once a second, while the workers run */
	next = t0 + 1;
	while (atomic_load(&cl->finished) < cl->nw) {
		usleep(20000);
		t = obj_now();
		if (t >= next) {
			sum_stats(cl, &st, &pre);
			fprintf(stderr,
				"  %5.1f s  %8.1f MB/s  %7.0f ops/s  failed "
				"%" PRIu64 "  corrupted %" PRIu64 "\n",
				t - t0, (double)(st.bytes - last.bytes) / 1e6,
				(double)(st.ok - last.ok), st.failed,
				st.corrupted);
			last = st;
			next += 1;
		}
	}
	for (unsigned i = 0; i < cl->nw; i++)
		pthread_join(cl->w[i].th, NULL);
	secs = obj_now() - t0;
	pthread_barrier_destroy(&cl->start);
	sum_stats(cl, &st, &pre);
	failed = st.failed + pre.failed;
	corrupted = st.corrupted + pre.corrupted;
	for (unsigned i = 0; i < cl->nw; i++) {
		uint64_t n =
		    cl->w[i].n_lat < LAT_MAX ? cl->w[i].n_lat : LAT_MAX;
		double *nl = realloc(lat, (n_lat + n + 1) * sizeof(*lat));

		if (!nl)
			break;
		lat = nl;
		memcpy(lat + n_lat, cl->w[i].lat, n * sizeof(*lat));
		n_lat += n;
		if (!first_error && cl->w[i].first_error[0])
			first_error = cl->w[i].first_error;
	}
	if (n_lat) {
		qsort(lat, n_lat, sizeof(*lat), cmp_double);
		for (uint64_t i = 0; i < n_lat; i++)
			avg += lat[i];
		avg /= (double)n_lat;
		p50 = lat[n_lat / 2];
		p99 = lat[n_lat * 99 / 100];
	}
	free(lat);
	if (cl->json) {
		printf("{\"op\":\"%s\",\"threads\":%u,\"keys_per_thread\":%u,"
		       "\"size_min\":%" PRIu64 ",\"size_max\":%" PRIu64
		       ",\"verify\":%s,\"ops_ok\":%" PRIu64
		       ",\"ops_failed\":%" PRIu64 ",\"corrupted\":%" PRIu64
		       ",\"puts\":%" PRIu64 ",\"gets\":%" PRIu64
		       ",\"preload_ops\":%" PRIu64 ",\"bytes\":%" PRIu64
		       ",\"seconds\":%.3f,\"mbyte_per_s\":%.1f,"
		       "\"gbit_per_s\":%.3f,\"ops_per_s\":%.1f,"
		       "\"latency_us\":{\"avg\":%.1f,\"p50\":%.1f,"
		       "\"p99\":%.1f},\"first_error\":",
		       ops[cl->op], cl->nw, cl->keys, cl->size_min,
		       cl->size_max, cl->verify ? "true" : "false", st.ok,
		       failed, corrupted, st.puts, st.gets, pre.ok, st.bytes,
		       secs, (double)st.bytes / secs / 1e6,
		       (double)st.bytes * 8 / secs / 1e9, (double)st.ok / secs,
		       avg, p50, p99);
		if (first_error)
			json_str(stdout, first_error);
		else
			fputs("null", stdout);
		/* what this node's rails did during the timed part: a drill
		 * shows its failovers and replays here */
		printf(",\"rails\":[");
		for (int i = 0; i < n_rails && i < RY_MAX_RAILS; i++) {
			const char *name = ry_rail_name(cl->mgr, (unsigned)i);

			rc1 = (struct ry_counters){0};
			ry_rail_counters(cl->mgr, name, &rc1);
			printf("%s{\"name\":", i ? "," : "");
			json_str(stdout, name);
			printf(",\"bytes\":%" PRIu64 ",\"failovers\":%" PRIu64
			       ",\"replayed\":%" PRIu64 ",\"messages\":%" PRIu64
			       "}",
			       rc1.bytes - rc0[i].bytes,
			       rc1.failovers - rc0[i].failovers,
			       rc1.replayed_fragments -
				   rc0[i].replayed_fragments,
			       rc1.messages - rc0[i].messages);
		}
		printf("]}\n");
	}
	fprintf(cl->json ? stderr : stdout,
		"bench: %" PRIu64 " ops (%" PRIu64 " put, %" PRIu64
		" get) in %.1f s: %.1f MB/s (%.2f Gbit/s), %.0f ops/s, "
		"latency avg %.0f p50 %.0f p99 %.0f us; %" PRIu64
		" failed, %" PRIu64 " corrupted%s%s\n",
		st.ok, st.puts, st.gets, secs, (double)st.bytes / secs / 1e6,
		(double)st.bytes * 8 / secs / 1e9, (double)st.ok / secs, avg,
		p50, p99, failed, corrupted, first_error ? "; first: " : "",
		first_error ? first_error : "");
	rc = failed || corrupted || !st.ok ? 1 : 0;
	return rc;
}

/* ---- main ---- */

static int usage(const char *fmt, const char *arg)
{
	fprintf(stderr, "railyard-obj: ");
	fprintf(stderr, fmt, arg);
	fprintf(stderr, "\n\n%s", usage_text);
	return 2;
}

static int cmd_crc(const char *path)
{
	uint8_t *data;
	size_t len;
	int ret = read_all(path, &data, &len);

	if (ret) {
		fprintf(stderr, "railyard-obj: crc32c: %s: %s\n",
			path ? path : "standard input", strerror(-ret));
		return 1;
	}
	printf("%08" PRIx32 "\n", obj_crc32c(0, data, len));
	free(data);
	return 0;
}

/* Wait for the server: a STAT answered, then every shared rail carrying
 * traffic (up to 5 s), so a benchmark starts from the whole set. */
static int connect_server(struct client *cl)
{
	struct ry_peer_info pi = {0};
	struct obj_msg rep;
	double until;
	int ret = rpc(&cl->w[0], OBJ_STAT, NULL, 0, 0, &rep);

	if (ret) {
		fprintf(stderr, "railyard-obj: server %s does not answer: %s\n",
			ry_peer_name(cl->server), cl->w[0].why);
		return ret;
	}
	for (until = obj_now() + 5; obj_now() < until; usleep(10000)) {
		ry_peer_info(cl->server, &pi);
		if (pi.ready && pi.rails_active >= pi.rails_usable)
			return 0;
	}
	fprintf(stderr,
		"railyard-obj: %u of %u rails to %s connected after 5 s; "
		"going on\n",
		pi.rails_active, pi.rails_usable, ry_peer_name(cl->server));
	return 0;
}

int main(int argc, char **argv)
{
	const char *cmd, *file = NULL, *server = NULL, *node = NULL;
	const char *args[3] = {0};
	struct client cl = {.lock = PTHREAD_MUTEX_INITIALIZER,
			    .timeout = 30,
			    .size_min = 1 << 20,
			    .size_max = 1 << 20,
			    .keys = 8,
			    .duration = 10,
			    .op = 2,
			    .nw = 4};
	unsigned nargs = 0;
	bool bench;
	int rc = 1, ret;

	if (argc < 2)
		return usage("no command", "");
	cmd = argv[1];
	if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
		fputs(usage_text, stdout);
		return 0;
	}
	bench = !strcmp(cmd, "bench");
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		char *end;

		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			fputs(usage_text, stdout);
			return 0;
		} else if (!strcmp(a, "-c") && v) {
			file = argv[++i];
		} else if (!strcmp(a, "--server") && v) {
			server = argv[++i];
		} else if (!strcmp(a, "--node") && v) {
			node = argv[++i];
		} else if (!strcmp(a, "--timeout") && v) {
			cl.timeout = strtod(argv[++i], &end);
			if (*end || !(cl.timeout > 0))
				return usage("--timeout '%s' is not seconds",
					     v);
		} else if (bench && !strcmp(a, "--threads") && v) {
			cl.nw = (unsigned)strtoul(argv[++i], &end, 10);
			if (*end || !cl.nw || cl.nw > MAX_THREADS)
				return usage("--threads '%s': 1..256", v);
		} else if (bench && !strcmp(a, "--keys") && v) {
			cl.keys = (unsigned)strtoul(argv[++i], &end, 10);
			if (*end || !cl.keys || cl.keys > 1000000)
				return usage("--keys '%s': 1..1000000", v);
		} else if (bench && !strcmp(a, "--size") && v) {
			char lo[64];
			const char *dash = strchr(argv[++i], '-');

			snprintf(lo, sizeof(lo), "%.*s",
				 dash ? (int)(dash - v) : (int)strlen(v), v);
			if (!obj_parse_size(lo, &cl.size_min) ||
			    !obj_parse_size(dash ? dash + 1 : lo,
					    &cl.size_max) ||
			    cl.size_max < cl.size_min || !cl.size_max)
				return usage("--size '%s' is not SIZE or "
					     "MIN-MAX",
					     v);
		} else if (bench && !strcmp(a, "--op") && v) {
			i++;
			cl.op = !strcmp(v, "put")     ? 0
				: !strcmp(v, "get")   ? 1
				: !strcmp(v, "mixed") ? 2
						      : -1;
			if (cl.op < 0)
				return usage("--op '%s': put, get or mixed", v);
		} else if (bench && !strcmp(a, "--count") && v) {
			cl.count = strtoull(argv[++i], &end, 10);
			if (*end || !cl.count)
				return usage("--count '%s' is not a count", v);
			cl.duration = 0;
		} else if (bench && !strcmp(a, "--duration") && v) {
			cl.duration = strtod(argv[++i], &end);
			if (*end || !(cl.duration > 0))
				return usage("--duration '%s' is not seconds",
					     v);
			cl.count = 0;
		} else if (bench && !strcmp(a, "--verify")) {
			cl.verify = true;
		} else if (bench && !strcmp(a, "--json")) {
			cl.json = true;
		} else if (a[0] == '-' && a[1]) {
			return usage("unexpected '%s'", a);
		} else if (nargs < 3) {
			args[nargs++] = a;
		} else {
			return usage("unexpected '%s'", a);
		}
	}
	if (!strcmp(cmd, "crc32c"))
		return nargs <= 1 ? cmd_crc(args[0])
				  : usage("%s", "crc32c [FILE]");
	if (strcmp(cmd, "put") && strcmp(cmd, "get") && strcmp(cmd, "del") &&
	    strcmp(cmd, "stat") && !bench)
		return usage("unknown command '%s'", cmd);
	if ((!strcmp(cmd, "put") || !strcmp(cmd, "get")) &&
	    (nargs < 1 || nargs > 2))
		return usage("%s KEY [FILE]", cmd);
	if (!strcmp(cmd, "del") && nargs != 1)
		return usage("%s KEY", cmd);
	if ((!strcmp(cmd, "stat") || bench) && nargs)
		return usage("unexpected '%s'", args[0]);
	if (!file)
		return usage("%s: -c FILE is required", cmd);
	if (!bench)
		cl.nw = 1;
	cl.w = calloc(cl.nw, sizeof(*cl.w));
	if (!cl.w)
		return 1;
	for (unsigned i = 0; i < cl.nw; i++) {
		pthread_condattr_t ca;

		cl.w[i].cl = &cl;
		cl.w[i].idx = i;
		pthread_condattr_init(&ca);
		pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
		pthread_cond_init(&cl.w[i].cond, &ca);
		pthread_condattr_destroy(&ca);
	}
	if (obj_start("railyard-obj", file, node, &cl.cfg, &cl.mgr))
		goto out_free;
	if (!server && cl.cfg->n_peers == 1)
		server = cl.cfg->peers[0].name;
	if (!server) {
		fprintf(stderr,
			"railyard-obj: --server PEER is required (%s "
			"names no single peer)\n",
			file);
		goto out;
	}
	ret = ry_peer_get(cl.mgr, server, &cl.server);
	if (ret) {
		fprintf(stderr, "railyard-obj: --server %s: %s\n", server,
			ret == -ENOENT ? "neither a peer of the config nor "
					 "HOST:PORT"
				       : strerror(-ret));
		goto out;
	}
	ry_set_recv_cb(cl.mgr, on_reply, &cl);
	ry_set_event_cb(cl.mgr, on_event, &cl);
	ret = ry_progress_thread_start(cl.mgr);
	if (ret) {
		fprintf(stderr, "railyard-obj: progress threads: %s\n",
			strerror(-ret));
		goto out;
	}
	if (connect_server(&cl))
		goto out;
	if (bench)
		rc = cmd_bench(&cl);
	else if (!strcmp(cmd, "put"))
		rc = cmd_put(&cl.w[0], args[0], args[1]);
	else if (!strcmp(cmd, "get"))
		rc = cmd_get(&cl.w[0], args[0], args[1]);
	else
		rc = cmd_simple(&cl.w[0],
				!strcmp(cmd, "del") ? OBJ_DEL : OBJ_STAT,
				args[0]);
out:
	ry_set_recv_cb(cl.mgr, NULL, NULL);
	ry_set_event_cb(cl.mgr, NULL, NULL);
	/* the regions go with the manager; then their memory */
	ry_manager_destroy(cl.mgr);
	ry_config_free(cl.cfg);
out_free:
	for (unsigned i = 0; i < cl.nw; i++) {
		free(cl.w[i].src.buf);
		free(cl.w[i].dst.buf);
		free(cl.w[i].keys);
		free(cl.w[i].lat);
		pthread_cond_destroy(&cl.w[i].cond);
	}
	free(cl.w);
	return rc;
}
