// SPDX-License-Identifier: BSD-2-Clause
/*
 * railyard-objd's store: the registered pool cut into chunks, the table of
 * objects by key (in a namespace per client unless --shared-keys), and the
 * clients' budgets of bytes stored and in flight.  Requests, replies and
 * events are objd.c's.  Callers hold sv->lock where a function says so;
 * the others take it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "objd.h"

static bool chunk_used(const struct pool *p, uint32_t i)
{
	return p->bits[i / 64] >> (i % 64) & 1;
}

/* n chunks in address order from the hint, or false; caller holds lock. */
static bool pool_take(struct pool *p, uint32_t n, uint32_t *out)
{
	uint32_t got = 0, i = p->hint;

	if (n > p->nfree)
		return false;
	while (got < n) {
		if (i == p->n)
			i = 0;
		if (!chunk_used(p, i)) {
			p->bits[i / 64] |= 1ull << (i % 64);
			out[got++] = i;
		}
		i++;
	}
	p->nfree -= n;
	p->hint = i;
	return true;
}

static void pool_give(struct pool *p, const uint32_t *c, uint32_t n)
{
	for (uint32_t k = 0; k < n; k++)
		p->bits[c[k] / 64] &= ~(1ull << (c[k] % 64));
	p->nfree += n;
}

/* The object's chunks as a scatter-gather list, adjacent ones merged. */
int object_iov(const struct server *sv, const struct object *o,
	       struct ry_iov *iov)
{
	size_t ck = sv->pool.chunk, left = o->size;
	int n = 0;

	for (uint32_t k = 0; k < o->nchunks; k++) {
		size_t len = left < ck ? left : ck;
		size_t off = (size_t)o->chunks[k] * ck;

		if (n && iov[n - 1].off + iov[n - 1].len == off)
			iov[n - 1].len += len;
		else
			iov[n++] = (struct ry_iov){sv->pool.mr, off, len};
		left -= len;
	}
	return n;
}

uint32_t object_crc(const struct server *sv, const struct object *o)
{
	size_t ck = sv->pool.chunk, left = o->size;
	uint32_t crc = 0;

	for (uint32_t k = 0; k < o->nchunks; k++) {
		size_t len = left < ck ? left : ck;

		crc = obj_crc32c(crc, sv->pool.mem + (size_t)o->chunks[k] * ck,
				 len);
		left -= len;
	}
	return crc;
}

/* ---- table ---- */

static uint64_t key_hash(const void *key, size_t len)
{
	const uint8_t *p = key;
	uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */

	for (size_t i = 0; i < len; i++)
		h = (h ^ p[i]) * 0x100000001b3ull;
	return h;
}

struct object **slot_of(struct server *sv, const void *key, size_t len)
{
	struct object **pp =
	    &sv->buckets[key_hash(key, len) & (sv->nbuckets - 1)];

	while (*pp && ((*pp)->key_len != len || memcmp((*pp)->key, key, len)))
		pp = &(*pp)->next;
	return pp;
}

/* Drop a reference; the last one gives the chunks back.  Lock held. */
void object_put(struct server *sv, struct object *o)
{
	if (!o || --o->refs)
		return;
	pool_give(&sv->pool, o->chunks, o->nchunks);
	free(o->chunks);
	free(o);
}

/* ---- clients ---- */

uint64_t obytes(const struct server *sv, const struct object *o)
{
	return (uint64_t)o->nchunks * sv->pool.chunk;
}

/* The record of the client called name, made at its first request; NULL
 * if out of memory.  Lock held. */
struct client *client_get(struct server *sv, const char *name)
{
	struct client *cl;

	for (cl = sv->clients; cl; cl = cl->next)
		if (!strcmp(cl->name, name))
			return cl;
	cl = calloc(1, sizeof(*cl));
	if (!cl)
		return NULL;
	snprintf(cl->name, sizeof(cl->name), "%s", name);
	cl->next = sv->clients;
	sv->clients = cl;
	return cl;
}

/* A PUT's READ is over, however it ended: its bytes are no longer in
 * flight. */
void inflight_done(struct server *sv, const struct object *o)
{
	pthread_mutex_lock(&sv->lock);
	o->owner->inflight -= obytes(sv, o);
	pthread_mutex_unlock(&sv->lock);
}

/* The key as the client sent it (the table's key without its namespace). */
const char *user_key(const struct server *sv, const void *key, size_t len,
		     int *ulen)
{
	const char *k = key, *nul = sv->shared_keys ? NULL : memchr(k, 0, len);

	if (nul) {
		len -= (size_t)(nul + 1 - k);
		k = nul + 1;
	}
	*ulen = (int)len;
	return k;
}

/* A new object with its chunks, not in the table; NULL if full. */
struct object *object_new(struct server *sv, const struct obj_msg *m,
			  struct client *owner)
{
	uint32_t n =
	    (uint32_t)((m->size + sv->pool.chunk - 1) / sv->pool.chunk);
	struct object *o = calloc(1, sizeof(*o) + m->key_len);

	if (!o)
		return NULL;
	o->chunks = malloc((n ? n : 1) * sizeof(*o->chunks));
	if (!o->chunks) {
		free(o);
		return NULL;
	}
	pthread_mutex_lock(&sv->lock);
	if (!pool_take(&sv->pool, n, o->chunks)) {
		pthread_mutex_unlock(&sv->lock);
		free(o->chunks);
		free(o);
		return NULL;
	}
	pthread_mutex_unlock(&sv->lock);
	o->refs = 1;
	o->owner = owner;
	o->size = m->size;
	o->crc = m->crc;
	o->nchunks = n;
	o->key_len = m->key_len;
	memcpy(o->key, m->key, m->key_len);
	return o;
}

/* Put o in the table in place of any object of its key (freed once no GET
 * writes it any more). */
void store(struct server *sv, struct object *o)
{
	struct object **pp, *old = NULL;

	pthread_mutex_lock(&sv->lock);
	pp = slot_of(sv, o->key, o->key_len);
	if (*pp) {
		old = *pp;
		o->next = old->next;
		sv->nobjects--;
		old->owner->stored -= obytes(sv, old);
	}
	*pp = o;
	sv->nobjects++;
	o->owner->stored += obytes(sv, o);
	sv->st.puts++;
	object_put(sv, old);
	pthread_mutex_unlock(&sv->lock);
}

void object_drop(struct server *sv, struct object *o)
{
	pthread_mutex_lock(&sv->lock);
	object_put(sv, o);
	pthread_mutex_unlock(&sv->lock);
}

int store_init(struct server *sv, uint64_t capacity, size_t chunk)
{
	struct pool *p = &sv->pool;
	size_t len;
	int ret;

	p->chunk = chunk;
	p->n = (uint32_t)(capacity / chunk);
	p->nfree = p->n;
	len = (size_t)p->n * chunk;
	p->bits = calloc((p->n + 63) / 64, sizeof(uint64_t));
	p->mem = aligned_alloc(4096, len);
	if (!p->bits || !p->mem)
		return -ENOMEM;
	ret = ry_mr_reg(sv->mgr, p->mem, len,
			RY_MR_REMOTE_READ | RY_MR_REMOTE_WRITE, &p->mr);
	if (ret)
		return ret;
	for (sv->nbuckets = 64; sv->nbuckets < p->n; sv->nbuckets *= 2)
		;
	sv->buckets = calloc(sv->nbuckets, sizeof(*sv->buckets));
	return sv->buckets ? 0 : -ENOMEM;
}

void store_free(struct server *sv)
{
	for (size_t b = 0; sv->buckets && b < sv->nbuckets; b++) {
		while (sv->buckets[b]) {
			struct object *o = sv->buckets[b];

			sv->buckets[b] = o->next;
			free(o->chunks);
			free(o);
		}
	}
	free(sv->buckets);
	while (sv->clients) {
		struct client *cl = sv->clients;

		sv->clients = cl->next;
		free(cl);
	}
	/* after the manager: it completes what is in flight first */
	free(sv->pool.bits);
	free(sv->pool.mem);
}
