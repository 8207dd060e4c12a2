// SPDX-License-Identifier: BSD-2-Clause
/*
 * railyard-obj bench: several workers PUT and GET with checksums.
 *
 * Every worker owns --keys keys; it PUTs each once (the preload,
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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "obj.h"

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
	ret = obj_rpc(w, OBJ_PUT, key, size, crc, &rep);
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
	ret = obj_rpc(w, OBJ_GET, key, w->dst.cap, 0, &rep);
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

int obj_bench(struct client *cl)
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
		    obj_buffer_arm(cl, &w->src, cl->size_max,
				   RY_MR_REMOTE_READ) ||
		    obj_buffer_arm(cl, &w->dst, cl->size_max,
				   RY_MR_REMOTE_WRITE)) {
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
