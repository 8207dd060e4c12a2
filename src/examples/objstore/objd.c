// SPDX-License-Identifier: BSD-2-Clause
/*
 * railyard-objd: the reference object server.  Objects live in memory, in
 * one pool registered once at start (the fast path: no registration per
 * request), cut into chunks; an object is a list of chunks, moved with one
 * vectored operation (ry_readv for a PUT, ry_writev for a GET) whatever
 * its size.  Chunks are taken in address order from a rotating hint, so
 * an object is usually one contiguous run and one piece on the wire.
 *
 * Request handling (protocol in objstore.h):
 *
 *   PUT  check the key and the client's descriptor (ry_desc_live), take
 *        chunks (-ENOSPC when the pool is full), READ the data from the
 *        client, check its CRC32C against the request's (-EBADMSG: the
 *        object is not stored), replace any older object of that key,
 *        reply.
 *   GET  look the key up (-ENOENT), check the client's room (-EMSGSIZE,
 *        with the size, so the client can retry with a larger buffer),
 *        WRITE the chunks into the client's buffer, reply with size and
 *        stored CRC once the write has completed: the data has landed (and
 *        after a failover, been fenced) before the client hears of it.
 *   DEL, STAT  answered at once.  Any other op (0 included) is refused.
 *
 * Clients (issue 30).  A client is its node name (ry_peer_name: what
 * admission let in).  Each has a budget of bytes stored and of bytes in
 * flight (PUTs being read; --client-stored, --client-inflight, counted in
 * whole chunks): a PUT beyond either is refused with -EDQUOT and the
 * numbers, so one client cannot fill the pool for the others.  A client
 * that vanishes or stalls mid-PUT holds at most its in-flight budget, and
 * only until the READ fails (the config's failover.op_timeout_ms).  Keys
 * live in a namespace per client (the table's key is the client's name, a
 * NUL, then the key) unless --shared-keys puts every client in one.
 *
 * A client that restarts takes its buffers with it.  A request whose
 * descriptor names a dead incarnation is dropped before anything is
 * posted (ry_desc_live: -ESTALE), operations in flight to it complete
 * with RY_ESTALE and are dropped without a reply, and replies still
 * waiting to be sent to it are discarded on RY_EV_PEER_RESTARTED: the
 * server never writes into, or answers for, memory that died.
 *
 * Threading: everything happens in the library's callbacks (receive,
 * completion, event), which never run concurrently; the lock guards the
 * table and the pool against the main thread (retries, final counts).  A
 * GET holds a reference on its object, so a PUT replacing it or a DEL
 * frees the chunks only once the write is done.
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

#include "objd.h"

static const char usage_text[] =
    "usage: railyard-objd -c FILE [--capacity SIZE] [--chunk SIZE]\n"
    "                     [--node NAME] [--client-stored SIZE]\n"
    "                     [--client-inflight SIZE] [--shared-keys]\n"
    "\n"
    "Serve a put/get object store over the rails of FILE (a railyard\n"
    "config).  Objects are kept in memory, in a pool of SIZE bytes\n"
    "(--capacity, default 256M) registered once and cut into chunks\n"
    "(--chunk, default 64K, a power of two from 4K; an object takes whole\n"
    "chunks and at most 1024 of them).  Clients (railyard-obj) send\n"
    "requests; the server reads a PUT's data from the client's buffer and\n"
    "writes a GET's data into it, then replies.  SIGINT or SIGTERM stop\n"
    "it; it prints what it served.\n"
    "Each client (node name) may keep --client-stored bytes (default a\n"
    "quarter of the capacity; 0: no bound) and have --client-inflight\n"
    "bytes of PUTs being read (default the same); beyond, its PUT fails\n"
    "with 'Disk quota exceeded' and the numbers.  Each client sees only\n"
    "its own keys unless --shared-keys.\n"
    "Exit codes: 0 clean shutdown, 1 cannot start, 2 usage error.\n";

/* A PUT or GET between its request and its reply.  from needs no
 * ry_peer_hold(): the READ or WRITE posted to it keeps the record until
 * its completion callback, which is where from is last used. */
struct request {
	struct server *sv;
	struct ry_peer *from;
	uint8_t op;
	uint64_t id;
	struct object *obj;
	size_t desc_len;
	uint8_t desc[RY_DESC_MAX];
};

/* A reply that found every message slot busy (-EAGAIN), sent again by the
 * main loop.  It holds to (ry_peer_hold): a client that has left may be
 * forgotten by the library once nothing refers to it. */
struct retry {
	struct retry *next;
	struct ry_peer *to;
	size_t len;
	uint8_t buf[];
};

/* ---- replies ---- */

static void reply_sent(const struct ry_completion *c, void *arg)
{
	struct server *sv = arg;

	if (c->status == RY_OK || c->status == RY_ESTALE ||
	    c->status == RY_ECANCELED)
		return;
	pthread_mutex_lock(&sv->lock);
	sv->st.reply_failed++;
	pthread_mutex_unlock(&sv->lock);
	fprintf(stderr, "railyard-objd: a reply was not delivered: %s (%s)\n",
		ry_status_str(c->status), c->reason);
}

static void queue_retry(struct server *sv, struct ry_peer *to, const void *buf,
			size_t len)
{
	struct retry *r = malloc(sizeof(*r) + len), **pp;

	if (!r) {
		pthread_mutex_lock(&sv->lock);
		sv->st.reply_failed++;
		pthread_mutex_unlock(&sv->lock);
		return;
	}
	r->next = NULL;
	r->to = to;
	ry_peer_hold(to);
	r->len = len;
	memcpy(r->buf, buf, len);
	pthread_mutex_lock(&sv->lock);
	for (pp = &sv->retry; *pp; pp = &(*pp)->next)
		;
	*pp = r;
	pthread_mutex_unlock(&sv->lock);
}

/* Send the queued replies, oldest first; those that still find no slot
 * stay.  Returns whether any are left. */
static bool flush_retries(struct server *sv)
{
	struct retry *r, *left = NULL, **tail = &left;
	bool busy = false;

	pthread_mutex_lock(&sv->lock);
	r = sv->retry;
	sv->retry = NULL;
	pthread_mutex_unlock(&sv->lock);
	while (r) {
		struct retry *next = r->next;
		int ret = busy ? -EAGAIN
			       : ry_send(r->to, r->buf, r->len, reply_sent, sv);

		if (ret == -EAGAIN) {
			busy = true;
			r->next = NULL;
			*tail = r;
			tail = &r->next;
		} else {
			ry_peer_release(r->to);
			free(r);
		}
		r = next;
	}
	if (!left)
		return false;
	pthread_mutex_lock(&sv->lock);
	*tail = sv->retry; /* replies queued meanwhile come after */
	sv->retry = left;
	pthread_mutex_unlock(&sv->lock);
	return true;
}

static void reply(struct server *sv, struct ry_peer *to,
		  const struct obj_msg *req, int status, const struct object *o,
		  const char *why)
{
	uint8_t buf[RY_MSG_MAX];
	struct obj_msg m = {
	    .op = (uint8_t)(req->op | OBJ_REPLY),
	    .status = status,
	    .id = req->id,
	    .size = o ? o->size : req->size,
	    .crc = o ? o->crc : 0,
	    .tail = why,
	    .tail_len = why ? strnlen(why, OBJ_TEXT_MAX) : 0,
	};
	int len = obj_encode(buf, sizeof(buf), &m), ret;

	if (len < 0)
		return;
	ret = ry_send(to, buf, (size_t)len, reply_sent, sv);
	if (ret == -EAGAIN)
		queue_retry(sv, to, buf, (size_t)len);
	else if (ret && ret != -ESTALE && ret != -ESHUTDOWN)
		fprintf(stderr, "railyard-objd: cannot reply to %s: %s\n",
			ry_peer_name(to), strerror(-ret));
}

static void count(struct server *sv, uint64_t *what)
{
	pthread_mutex_lock(&sv->lock);
	(*what)++;
	pthread_mutex_unlock(&sv->lock);
}

/* ---- PUT and GET ---- */

static struct request *request_new(struct server *sv, struct ry_peer *from,
				   const struct obj_msg *m, struct object *o)
{
	struct request *rq = malloc(sizeof(*rq));

	if (!rq)
		return NULL;
	rq->sv = sv;
	rq->from = from;
	rq->op = m->op;
	rq->id = m->id;
	rq->obj = o;
	rq->desc_len = m->tail_len;
	memcpy(rq->desc, m->tail, m->tail_len);
	return rq;
}

static void put_read(const struct ry_completion *c, void *arg)
{
	struct request *rq = arg;
	struct server *sv = rq->sv;
	struct object *o = rq->obj;
	struct obj_msg m = {.op = rq->op, .id = rq->id};
	char why[OBJ_TEXT_MAX];

	inflight_done(sv, o);
	if (c->status == RY_ESTALE) {
		/* the client died with its buffer: no one to answer */
		count(sv, &sv->st.stale);
		object_drop(sv, o);
	} else if (c->status != RY_OK) {
		snprintf(why, sizeof(why), "reading the data failed: %s (%s)",
			 ry_status_str(c->status), c->reason);
		count(sv, &sv->st.errors);
		m.size = o->size;
		object_drop(sv, o);
		reply(sv, rq->from, &m, -EIO, NULL, why);
	} else if (object_crc(sv, o) != o->crc) {
		snprintf(why, sizeof(why),
			 "checksum mismatch: the %" PRIu64
			 " bytes read differ from the request's CRC32C "
			 "%08" PRIx32 "; not stored",
			 o->size, o->crc);
		count(sv, &sv->st.corrupted);
		m.size = o->size;
		object_drop(sv, o);
		reply(sv, rq->from, &m, -EBADMSG, NULL, why);
	} else {
		store(sv, o);
		reply(sv, rq->from, &m, 0, o, NULL);
	}
	free(rq);
}

static void get_written(const struct ry_completion *c, void *arg)
{
	struct request *rq = arg;
	struct server *sv = rq->sv;
	struct obj_msg m = {.op = rq->op, .id = rq->id};
	char why[OBJ_TEXT_MAX];

	if (c->status == RY_ESTALE) {
		count(sv, &sv->st.stale);
	} else if (c->status != RY_OK) {
		snprintf(why, sizeof(why), "writing the data failed: %s (%s)",
			 ry_status_str(c->status), c->reason);
		count(sv, &sv->st.errors);
		reply(sv, rq->from, &m, -EIO, NULL, why);
	} else {
		count(sv, &sv->st.gets);
		reply(sv, rq->from, &m, 0, rq->obj, NULL);
	}
	object_drop(sv, rq->obj);
	free(rq);
}

/* Post the READ or WRITE; on a refusal, say why.  Consumes o's ref. */
static void transfer(struct server *sv, struct ry_peer *from,
		     const struct obj_msg *m, struct object *o)
{
	struct ry_iov iov[RY_IOV_MAX];
	struct request *rq = request_new(sv, from, m, o);
	char why[OBJ_TEXT_MAX];
	int n = object_iov(sv, o, iov), ret;

	if (!rq) {
		ret = -ENOMEM;
	} else if (m->op == OBJ_PUT) {
		ret = ry_readv(from, iov, n, rq->desc, rq->desc_len, 0,
			       put_read, rq);
	} else {
		ret = ry_writev(from, iov, n, rq->desc, rq->desc_len, 0,
				get_written, rq);
	}
	if (!ret)
		return;
	free(rq);
	if (m->op == OBJ_PUT)
		inflight_done(sv, o);
	object_drop(sv, o);
	if (ret == -ESTALE) {
		count(sv, &sv->st.stale);
		return;
	}
	count(sv, &sv->st.errors);
	snprintf(why, sizeof(why), "cannot %s the data: %s",
		 m->op == OBJ_PUT ? "read" : "write", strerror(-ret));
	reply(sv, from, m, ret, NULL, why);
}

/* Take a PUT's bytes from cl's budgets: 0, or -EDQUOT / -ENOMEM with why
 * said. */
static int budget_take(struct server *sv, struct ry_peer *from,
		       const struct obj_msg *m, struct client **cl_p, char *why,
		       size_t len)
{
	uint64_t need = (m->size + sv->pool.chunk - 1) / sv->pool.chunk *
			sv->pool.chunk,
		 credit = 0;
	const struct object *old;
	struct client *cl;
	int ret = 0;

	pthread_mutex_lock(&sv->lock);
	cl = client_get(sv, ry_peer_name(from));
	if (!cl) {
		ret = -ENOMEM;
		snprintf(why, len, "out of memory");
		goto out;
	}
	/* replacing its own object frees that object's bytes */
	old = *slot_of(sv, m->key, m->key_len);
	if (old && old->owner == cl)
		credit = obytes(sv, old);
	if (sv->client_inflight && cl->inflight + need > sv->client_inflight) {
		snprintf(why, len,
			 "client %s: %" PRIu64 " bytes already in flight, "
			 "this PUT needs %" PRIu64 " more, budget %" PRIu64
			 " (--client-inflight)",
			 cl->name, cl->inflight, need, sv->client_inflight);
		ret = -EDQUOT;
	} else if (sv->client_stored &&
		   cl->stored + cl->inflight + need - credit >
		       sv->client_stored) {
		snprintf(why, len,
			 "client %s: %" PRIu64 " bytes stored and %" PRIu64
			 " in flight, this PUT needs %" PRIu64
			 ", budget %" PRIu64 " (--client-stored)",
			 cl->name, cl->stored, cl->inflight, need,
			 sv->client_stored);
		ret = -EDQUOT;
	} else {
		cl->inflight += need;
		*cl_p = cl;
	}
	if (ret == -EDQUOT)
		sv->st.quota++;
out:
	pthread_mutex_unlock(&sv->lock);
	return ret;
}

static void on_put(struct server *sv, struct ry_peer *from,
		   const struct obj_msg *m)
{
	struct client *cl = NULL;
	struct object *o;
	char why[OBJ_TEXT_MAX];
	int ret;

	if (m->size > sv->max_size) {
		snprintf(why, sizeof(why),
			 "object of %" PRIu64
			 " bytes is larger than the %" PRIu64
			 " this server takes",
			 m->size, sv->max_size);
		count(sv, &sv->st.bad);
		reply(sv, from, m, -EFBIG, NULL, why);
		return;
	}
	ret = budget_take(sv, from, m, &cl, why, sizeof(why));
	if (ret) {
		reply(sv, from, m, ret, NULL, why);
		return;
	}
	o = object_new(sv, m, cl);
	if (!o) {
		pthread_mutex_lock(&sv->lock);
		cl->inflight -= (m->size + sv->pool.chunk - 1) /
				sv->pool.chunk * sv->pool.chunk;
		pthread_mutex_unlock(&sv->lock);
		snprintf(why, sizeof(why),
			 "no room for %" PRIu64 " bytes (capacity %zu bytes, "
			 "%zu-byte chunks)",
			 m->size, (size_t)sv->pool.n * sv->pool.chunk,
			 sv->pool.chunk);
		count(sv, &sv->st.nospace);
		reply(sv, from, m, -ENOSPC, NULL, why);
		return;
	}
	if (m->size) {
		transfer(sv, from, m, o);
		return;
	}
	inflight_done(sv, o);
	if (m->crc != 0) { /* CRC32C of nothing is 0 */
		count(sv, &sv->st.corrupted);
		object_drop(sv, o);
		reply(sv, from, m, -EBADMSG, NULL, "checksum mismatch");
		return;
	}
	store(sv, o);
	reply(sv, from, m, 0, o, NULL);
}

static void on_get(struct server *sv, struct ry_peer *from,
		   const struct obj_msg *m)
{
	struct object *o;
	char why[OBJ_TEXT_MAX];

	pthread_mutex_lock(&sv->lock);
	o = *slot_of(sv, m->key, m->key_len);
	if (o)
		o->refs++;
	pthread_mutex_unlock(&sv->lock);
	if (!o) {
		int ulen;
		const char *k = user_key(sv, m->key, m->key_len, &ulen);

		snprintf(why, sizeof(why), "no object '%.*s'", ulen, k);
		count(sv, &sv->st.missing);
		reply(sv, from, m, -ENOENT, NULL, why);
		return;
	}
	if (o->size > m->size) {
		snprintf(why, sizeof(why),
			 "object is %" PRIu64 " bytes, the buffer %" PRIu64,
			 o->size, m->size);
		reply(sv, from, m, -EMSGSIZE, o, why);
		object_drop(sv, o);
		return;
	}
	if (!o->size) {
		count(sv, &sv->st.gets);
		reply(sv, from, m, 0, o, NULL);
		object_drop(sv, o);
		return;
	}
	transfer(sv, from, m, o);
}

static void on_del(struct server *sv, struct ry_peer *from,
		   const struct obj_msg *m)
{
	struct object **pp, *o;

	pthread_mutex_lock(&sv->lock);
	pp = slot_of(sv, m->key, m->key_len);
	o = *pp;
	if (o) {
		*pp = o->next;
		sv->nobjects--;
		sv->st.dels++;
		o->owner->stored -= obytes(sv, o);
		object_put(sv, o);
	} else {
		sv->st.missing++;
	}
	pthread_mutex_unlock(&sv->lock);
	reply(sv, from, m, o ? 0 : -ENOENT, NULL, o ? NULL : "no such object");
}

static void on_stat(struct server *sv, struct ry_peer *from,
		    const struct obj_msg *req)
{
	uint8_t buf[RY_MSG_MAX];
	struct obj_msg m = {.op = OBJ_STAT | OBJ_REPLY, .id = req->id};
	int len, ret;

	pthread_mutex_lock(&sv->lock);
	sv->st.stats++;
	m.size = sv->nobjects;
	m.used = (uint64_t)(sv->pool.n - sv->pool.nfree) * sv->pool.chunk;
	m.capacity = (uint64_t)sv->pool.n * sv->pool.chunk;
	pthread_mutex_unlock(&sv->lock);
	len = obj_encode(buf, sizeof(buf), &m);
	ret = ry_send(from, buf, (size_t)len, reply_sent, sv);
	if (ret == -EAGAIN)
		queue_retry(sv, from, buf, (size_t)len);
}

static void on_recv(struct ry_peer *from, const struct ry_message *msg,
		    void *arg)
{
	struct server *sv = arg;
	char nskey[RY_ADDR_MAX + 1 + OBJ_KEY_MAX];
	struct obj_msg m;
	int ret;

	if (msg->type != RY_MSG_DATA || obj_decode(msg->data, msg->len, &m) ||
	    (m.op & OBJ_REPLY)) {
		count(sv, &sv->st.bad);
		return;
	}
	if (m.op == OBJ_STAT) {
		on_stat(sv, from, &m);
		return;
	}
	if (!m.key_len || m.op < OBJ_PUT || m.op > OBJ_STAT) {
		count(sv, &sv->st.bad);
		reply(sv, from, &m, -EINVAL, NULL,
		      m.key_len ? "unknown operation" : "empty key");
		return;
	}
	if (!sv->shared_keys) { /* the client's namespace: "name\0key" */
		const char *name = ry_peer_name(from);
		size_t nl = strnlen(name, RY_ADDR_MAX - 1);

		if (m.key_len > OBJ_KEY_MAX) {
			count(sv, &sv->st.bad);
			reply(sv, from, &m, -EINVAL, NULL, "key too long");
			return;
		}
		memcpy(nskey, name, nl);
		nskey[nl] = 0;
		memcpy(nskey + nl + 1, m.key, m.key_len);
		m.key = nskey;
		m.key_len += nl + 1;
	}
	if (m.op == OBJ_PUT || m.op == OBJ_GET) {
		/* a request of a client that has restarted since: its
		 * buffer is gone, and so is whoever waited for the answer */
		ret = ry_desc_live(from, m.tail, m.tail_len);
		if (ret == -ESTALE) {
			count(sv, &sv->st.stale);
			return;
		}
		/* -ENXIO: the descriptor is another node's; a client
		 * hands only its own memory */
		if (ret && ret != -EAGAIN) {
			count(sv, &sv->st.bad);
			reply(sv, from, &m, -EINVAL, NULL,
			      ret == -ENXIO ? "the buffer descriptor is not "
					      "the sender's"
					    : "bad buffer descriptor");
			return;
		}
	}
	switch (m.op) {
	case OBJ_PUT:
		on_put(sv, from, &m);
		break;
	case OBJ_GET:
		on_get(sv, from, &m);
		break;
	case OBJ_DEL:
		on_del(sv, from, &m);
		break;
	}
}

static void on_event(const struct ry_event *ev, void *arg)
{
	struct server *sv = arg;
	struct retry **pp, *r, *gone = NULL;
	unsigned dropped = 0;

	if (ev->type == RY_EV_PEER_DOWN)
		fprintf(stderr,
			"railyard-objd: client %s: control session lost\n",
			ev->peer ? ev->peer : "?");
	if (ev->type == RY_EV_CONN_DOWN || ev->type == RY_EV_CONN_UP) {
		struct timespec ts;

		/* the wall clock, to line failovers up with outside events */
		clock_gettime(CLOCK_REALTIME, &ts);
		fprintf(stderr,
			"railyard-objd: [%lld.%03ld] rail %s to %s: connection "
			"%s%s%s\n",
			(long long)ts.tv_sec, ts.tv_nsec / 1000000, ev->rail,
			ev->peer ? ev->peer : "?",
			ev->type == RY_EV_CONN_UP ? "up" : "down",
			ev->reason && *ev->reason ? ": " : "",
			ev->reason ? ev->reason : "");
	}
	if (ev->type != RY_EV_PEER_RESTARTED)
		return;
	/* replies meant for the dead incarnation answer no one now; their
	 * holds are let go after sv->lock (no library call under it) */
	pthread_mutex_lock(&sv->lock);
	for (pp = &sv->retry; (r = *pp);) {
		if (ev->peer && !strcmp(ry_peer_name(r->to), ev->peer)) {
			*pp = r->next;
			r->next = gone;
			gone = r;
			dropped++;
		} else {
			pp = &r->next;
		}
	}
	pthread_mutex_unlock(&sv->lock);
	while ((r = gone)) {
		gone = r->next;
		ry_peer_release(r->to);
		free(r);
	}
	fprintf(stderr,
		"railyard-objd: client %s restarted (incarnation %016" PRIx64
		" -> %016" PRIx64 "); %u queued replies dropped\n",
		ev->peer ? ev->peer : "?", ev->old_incarnation,
		ev->new_incarnation, dropped);
}

static void server_free(struct server *sv)
{
	/* the manager is gone, and every peer record with it: no release */
	while (sv->retry) {
		struct retry *r = sv->retry;

		sv->retry = r->next;
		free(r);
	}
	store_free(sv);
}

int main(int argc, char **argv)
{
	const char *file = NULL, *node = NULL;
	uint64_t capacity = 256u << 20, chunk = 64u << 10;
	uint64_t client_stored = UINT64_MAX, client_inflight = UINT64_MAX;
	struct server sv = {.lock = PTHREAD_MUTEX_INITIALIZER};
	char ctl[RY_ADDR_MAX] = "";
	struct epoll_event ev;
	sigset_t mask;
	int sfd = -1, ep = -1, ret, rc = 1;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			fputs(usage_text, stdout);
			return 0;
		} else if (!strcmp(a, "-c") && i + 1 < argc) {
			file = argv[++i];
		} else if (!strcmp(a, "--node") && i + 1 < argc) {
			node = argv[++i];
		} else if (!strcmp(a, "--shared-keys")) {
			sv.shared_keys = true;
		} else if ((!strcmp(a, "--client-stored") ||
			    !strcmp(a, "--client-inflight")) &&
			   i + 1 < argc) {
			uint64_t *to = strcmp(a, "--client-stored")
					   ? &client_inflight
					   : &client_stored;

			if (!obj_parse_size(argv[++i], to)) {
				fprintf(stderr,
					"railyard-objd: %s '%s' is not a "
					"size\n",
					a, argv[i]);
				return 2;
			}
		} else if (!strcmp(a, "--capacity") && i + 1 < argc) {
			if (!obj_parse_size(argv[++i], &capacity)) {
				fprintf(stderr,
					"railyard-objd: --capacity '%s' is not "
					"a size\n",
					argv[i]);
				return 2;
			}
		} else if (!strcmp(a, "--chunk") && i + 1 < argc) {
			if (!obj_parse_size(argv[++i], &chunk) ||
			    chunk < 4096 || chunk > (64u << 20) ||
			    (chunk & (chunk - 1))) {
				fprintf(stderr,
					"railyard-objd: --chunk '%s' is not a "
					"power of two from 4K to 64M\n",
					argv[i]);
				return 2;
			}
		} else {
			fprintf(stderr, "railyard-objd: unexpected '%s'\n\n%s",
				a, usage_text);
			return 2;
		}
	}
	if (!file) {
		fputs(usage_text, stderr);
		return 2;
	}
	if (capacity < chunk || capacity / chunk > UINT32_MAX) {
		fprintf(stderr,
			"railyard-objd: --capacity must hold at least one "
			"chunk and at most 2^32\n");
		return 2;
	}
	/* a quarter of the pool each by default: one client cannot fill it */
	sv.client_stored =
	    client_stored == UINT64_MAX ? capacity / 4 : client_stored;
	sv.client_inflight =
	    client_inflight == UINT64_MAX ? capacity / 4 : client_inflight;
	if (obj_start("railyard-objd", file, node, &sv.cfg, &sv.mgr))
		return 1;
	sv.max_size = chunk * RY_IOV_MAX;
	if (sv.max_size > sv.cfg->max_op_size)
		sv.max_size = sv.cfg->max_op_size;
	ret = store_init(&sv, capacity, (size_t)chunk);
	if (ret) {
		fprintf(stderr,
			"railyard-objd: cannot set up a %" PRIu64
			"-byte pool: %s\n",
			capacity, strerror(-ret));
		goto out;
	}
	/* before the progress threads: a request never finds no handler */
	ry_set_recv_cb(sv.mgr, on_recv, &sv);
	ry_set_event_cb(sv.mgr, on_event, &sv);

	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	ep = epoll_create1(EPOLL_CLOEXEC);
	if (sfd < 0 || ep < 0)
		goto out;
	ev = (struct epoll_event){.events = EPOLLIN, .data.fd = sfd};
	epoll_ctl(ep, EPOLL_CTL_ADD, sfd, &ev);
	ret = ry_progress_thread_start(sv.mgr);
	if (ret) {
		fprintf(stderr, "railyard-objd: progress threads: %s\n",
			strerror(-ret));
		goto out;
	}
	ry_manager_control_addr(sv.mgr, ctl, sizeof(ctl));
	fprintf(stderr,
		"railyard-objd: node %s, control %s, %d rails, capacity "
		"%zu bytes in %" PRIu64 "-byte chunks, objects up to %" PRIu64
		" bytes, per client %" PRIu64 " stored and %" PRIu64
		" in flight (0: no bound), %s keys: ready\n",
		sv.cfg->node, ctl, ry_rail_count(sv.mgr),
		(size_t)sv.pool.n * sv.pool.chunk, chunk, sv.max_size,
		sv.client_stored, sv.client_inflight,
		sv.shared_keys ? "shared" : "per-client");
	for (;;) {
		bool pending;

		pthread_mutex_lock(&sv.lock);
		pending = sv.retry != NULL;
		pthread_mutex_unlock(&sv.lock);
		if (pending)
			pending = flush_retries(&sv);
		if (epoll_wait(ep, &ev, 1, pending ? 1 : 100) > 0)
			break;
	}
	rc = 0;
out:
	if (sfd >= 0)
		close(sfd);
	if (ep >= 0)
		close(ep);
	if (sv.mgr)
		ry_set_recv_cb(sv.mgr, NULL, NULL);
	/* the server initiates every READ and WRITE: its rails' counters
	 * are the data path's (a drill's failovers and replays) */
	for (int i = 0; sv.mgr && i < ry_rail_count(sv.mgr); i++) {
		const char *name = ry_rail_name(sv.mgr, (unsigned)i);
		struct ry_counters c = {0};

		ry_rail_counters(sv.mgr, name, &c);
		fprintf(stderr,
			"railyard-objd: rail %s: %" PRIu64 " bytes, %" PRIu64
			" failovers, %" PRIu64 " fragments replayed, %" PRIu64
			" fences\n",
			name, c.bytes, c.failovers, c.replayed_fragments,
			c.fences);
	}
	/* stops the progress threads and completes what is in flight
	 * (callbacks run, freeing their requests) before the pool goes */
	ry_manager_destroy(sv.mgr);
	fprintf(stderr,
		"railyard-objd: %" PRIu64 " objects, %" PRIu64 " puts, %" PRIu64
		" gets, %" PRIu64 " deletes, %" PRIu64 " missing, %" PRIu64
		" no space, %" PRIu64 " corrupted, %" PRIu64
		" stale (client restarted), %" PRIu64 " failed, %" PRIu64
		" bad requests, %" PRIu64 " replies lost, %" PRIu64
		" over a client's budget\n",
		sv.nobjects, sv.st.puts, sv.st.gets, sv.st.dels, sv.st.missing,
		sv.st.nospace, sv.st.corrupted, sv.st.stale, sv.st.errors,
		sv.st.bad, sv.st.reply_failed, sv.st.quota);
	server_free(&sv);
	ry_config_free(sv.cfg);
	return rc;
}
