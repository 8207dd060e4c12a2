/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The client side of bench, drill and demo: keep `depth` operations in
 * flight to a peer's target region, verify what comes back, and sample
 * per-rail throughput and events every second.
 *
 * The target is a region a `railyard serve` (or the demo's second node)
 * registers; its descriptor comes back over the data path in answer to a
 * hello message (protocol below), or is set directly in-process.
 *
 * Threading: everything runs in the caller's thread, which drives the
 * manager with ry_progress(); completion callbacks post the next operation.
 */
#ifndef RAILYARD_CLI_SESSION_H
#define RAILYARD_CLI_SESSION_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <railyard/railyard.h>

#include "src/cli/report.h"

/* Messages between a client and `serve`: a hello, answered with the
 * target's descriptor. */
#define CLI_SESSION_HELLO "railyard-hello-1"
#define CLI_SESSION_DESC_TAG "railyard-desc-1:"
/* serve has no region for us; the reason follows the tag */
#define CLI_SESSION_REFUSED_TAG "railyard-refused-1:"

enum cli_session_mode {
	CLI_SESSION_WRITE = 0, /* write; with verify, read back and compare */
	CLI_SESSION_READ,      /* read; with verify, write first, compare */
	CLI_SESSION_DRILL,     /* write then read back, always verified */
};

/* The drill's load (session.c). */
enum cli_session_load {
	CLI_LOAD_STREAMS = 0, /* independent write and read streams */
	CLI_LOAD_CYCLE,	      /* each slot writes, then reads back */
	CLI_LOAD_PAIRS,	      /* one write + one read per slot pair */
};

struct cli_session_opts {
	enum cli_session_mode mode;
	size_t size;	/* bytes per operation */
	unsigned depth; /* operations in flight */
	/* the manager's ops_in_flight (its cap per peer), for the report */
	unsigned ops_in_flight;
	double duration; /* seconds; 0: run for count */
	uint64_t count;	 /* operations; 0: run for duration */
	double rate;	 /* operations started per second; 0: no limit */
	bool verify;
	enum cli_session_load load; /* drill: how writes and reads mix */
	FILE *live;		    /* per-second lines (NULL: none) */
	bool live_tty; /* rewrite one line instead of printing many */
	/* Called once a second after sampling (the demo pulls a rail). */
	void (*tick)(double t, void *arg);
	void *tick_arg;
	/* Set (from a signal handler) to end the run early: nothing new is
	 * posted, what is in flight completes, the results are as for a run
	 * that reached its duration.  NULL: no such flag. */
	volatile sig_atomic_t *stop;
};

struct cli_session;

int cli_session_create(struct ry_manager *mgr, struct ry_peer *peer,
		       const struct cli_session_opts *opts,
		       struct cli_session **s_p);
void cli_session_destroy(struct cli_session *s);

/* Ask the peer (a railyard serve) for its target region; waits up to
 * timeout_ms.  -ETIMEDOUT with a message on stderr when it does not answer. */
int cli_session_fetch_target(struct cli_session *s, int timeout_ms);
/*
 * Wait up to timeout_ms for every rail the peer shares (link up) to carry
 * traffic, so that a measurement starts from the whole set and a rail that
 * connects a moment later is not reported as a reconnect.  Returns the
 * number of such rails still not connected (0: all), after saying so.
 */
int cli_session_wait_rails(struct cli_session *s, int timeout_ms);
/* Use a descriptor obtained some other way (the in-process demo). */
int cli_session_set_target(struct cli_session *s, const void *desc, size_t len);

/* Run until the duration or count is reached.  Returns 0, or a negative
 * errno if the run could not proceed at all. */
int cli_session_run(struct cli_session *s);

/* Results. */
struct cli_session_result {
	uint64_t ops_ok, ops_failed;
	/* failed only because the peer restarted and their target memory
	 * died with it (RY_ESTALE; not in ops_failed) */
	uint64_t ops_stale;
	unsigned restarts;	/* times the peer restarted during the run */
	bool resumed;		/* traffic resumed after the last restart */
	uint64_t bytes;		/* payload bytes of successful operations */
	uint64_t verify_errors; /* bytes that differed on read-back */
	/* a read bench's writes of its slices before it reads them (not in
	 * ops_ok or bytes) */
	uint64_t ops_laid;
	double seconds;
	double gbit_per_s;
	double lat_avg_us, lat_p50_us, lat_p99_us, lat_max_us;
	char first_error[256]; /* reason of the first failed operation */
};
void cli_session_result(const struct cli_session *s,
			struct cli_session_result *r);
const struct cli_report *cli_session_report(const struct cli_session *s);

/* The JSON document bench and drill print (railyard(1), JSON). */
void cli_session_json(const struct cli_session *s, FILE *out);
/* A human summary: the verdict. */
void cli_session_summary(const struct cli_session *s, FILE *out);

#endif
