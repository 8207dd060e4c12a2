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
 * The bench command is obj_bench.c's.
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

#include "obj.h"

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

/* Context of one request message, for its send completion. */
struct sent {
	struct worker *w;
	uint64_t id;
};

/* ---- requests ---- */

/* (Re)register b with room for cap bytes, keeping what it held: a new
 * registration, so the old descriptor stops working. */
int obj_buffer_arm(struct client *cl, struct wbuf *b, size_t cap,
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
int obj_rpc(struct worker *w, uint8_t op, const char *key, uint64_t size,
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
		    obj_buffer_arm(cl, b, b->cap, b->access))
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
	ret = obj_buffer_arm(w->cl, &w->src, len ? len : 1, RY_MR_REMOTE_READ);
	if (ret) {
		fprintf(stderr, "railyard-obj: put %s: buffer: %s\n", key,
			strerror(-ret));
		free(data);
		return 1;
	}
	memcpy(w->src.buf, data, len);
	free(data);
	crc = obj_crc32c(0, w->src.buf, len);
	ret = obj_rpc(w, OBJ_PUT, key, len, crc, &rep);
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

	ret = obj_buffer_arm(w->cl, &w->dst, 1 << 20, RY_MR_REMOTE_WRITE);
	for (int tries = 0; !ret && tries < 3; tries++) {
		ret = obj_rpc(w, OBJ_GET, key, w->dst.cap, 0, &rep);
		if (ret != -EMSGSIZE)
			break;
		/* the reply says how big: take a buffer that fits */
		ret = obj_buffer_arm(w->cl, &w->dst, rep.size,
				     RY_MR_REMOTE_WRITE);
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
	int ret = obj_rpc(w, op, key, 0, 0, &rep);

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
	int ret = obj_rpc(&cl->w[0], OBJ_STAT, NULL, 0, 0, &rep);

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
		rc = obj_bench(&cl);
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
