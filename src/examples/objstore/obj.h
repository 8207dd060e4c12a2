// SPDX-License-Identifier: BSD-2-Clause
/*
 * railyard-obj's internals, shared by the commands (obj.c) and the bench
 * (obj_bench.c).
 */
#ifndef RAILYARD_OBJ_H
#define RAILYARD_OBJ_H

#include <pthread.h>
#include <stdatomic.h>

#include "objstore.h"

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

/* (Re)register b with room for cap bytes, keeping what it held. */
int obj_buffer_arm(struct client *cl, struct wbuf *b, size_t cap,
		   unsigned access);
/* One request and its reply: the reply's status, or -ETIMEDOUT, -EIO,
 * -ESTALE when there was none. */
int obj_rpc(struct worker *w, uint8_t op, const char *key, uint64_t size,
	    uint32_t crc, struct obj_msg *rep);
/* obj_bench.c: the bench command; its exit code. */
int obj_bench(struct client *cl);

#endif /* RAILYARD_OBJ_H */
