// SPDX-License-Identifier: BSD-2-Clause
/*
 * railyard-objd's internals, shared by the request handling (objd.c) and
 * the store (objd_store.c).
 */
#ifndef RAILYARD_OBJD_H
#define RAILYARD_OBJD_H

#include <pthread.h>

#include "objstore.h"

struct pool {
	uint8_t *mem;
	struct ry_region *mr;
	size_t chunk;
	uint32_t n, nfree, hint;
	uint64_t *bits; /* 1: chunk in use */
};

/* A client's budgets in use (its node name; records live until exit). */
struct client {
	struct client *next;
	uint64_t stored, inflight; /* bytes, in whole chunks */
	char name[RY_ADDR_MAX];
};

struct object {
	struct object *next;  /* hash chain */
	struct client *owner; /* whose budget it counts in */
	unsigned refs;	      /* the table's, and each GET writing it */
	uint64_t size;
	uint32_t crc;
	uint32_t nchunks;
	uint32_t *chunks;
	size_t key_len;
	char key[];
};

struct stats {
	uint64_t puts, gets, dels, stats, missing, nospace, corrupted, stale,
	    errors, bad, reply_failed, quota;
};

struct server {
	struct ry_manager *mgr;
	struct ry_config *cfg;
	struct pool pool;
	uint64_t max_size;
	pthread_mutex_t lock;
	struct object **buckets;
	size_t nbuckets; /* power of two */
	uint64_t nobjects;
	struct client *clients;
	uint64_t client_stored, client_inflight; /* 0: no bound */
	bool shared_keys;
	struct retry *retry;
	struct stats st;
};

/* objd_store.c */
/* The pool of capacity bytes in chunks of chunk, registered, and an empty
 * table: 0 or a negative errno. */
int store_init(struct server *sv, uint64_t capacity, size_t chunk);
/* Every object, client record and the pool, once the manager is gone. */
void store_free(struct server *sv);
/* The object's chunks as a scatter-gather list, adjacent ones merged. */
int object_iov(const struct server *sv, const struct object *o,
	       struct ry_iov *iov);
uint32_t object_crc(const struct server *sv, const struct object *o);
/* Where key's object is, or would go, in the table.  Lock held. */
struct object **slot_of(struct server *sv, const void *key, size_t len);
/* Drop a reference; the last one gives the chunks back.  Lock held. */
void object_put(struct server *sv, struct object *o);
/* object_put under the lock. */
void object_drop(struct server *sv, struct object *o);
/* A new object with its chunks, not in the table; NULL if full. */
struct object *object_new(struct server *sv, const struct obj_msg *m,
			  struct client *owner);
/* Put o in the table in place of any object of its key. */
void store(struct server *sv, struct object *o);
/* The bytes o holds in the pool, in whole chunks. */
uint64_t obytes(const struct server *sv, const struct object *o);
/* The client called name, made at its first request; NULL if out of
 * memory.  Lock held. */
struct client *client_get(struct server *sv, const char *name);
/* A PUT's READ is over: its bytes are no longer in flight. */
void inflight_done(struct server *sv, const struct object *o);
/* The key as the client sent it (without its namespace). */
const char *user_key(const struct server *sv, const void *key, size_t len,
		     int *ulen);

#endif /* RAILYARD_OBJD_H */
