/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The session's own structures, shared by its engine (session.c) and its
 * results (session_out.c); nothing else includes this.
 */
#ifndef RAILYARD_CLI_SESSION_INT_H
#define RAILYARD_CLI_SESSION_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <railyard/railyard.h>

#include "src/cli/report.h"
#include "src/cli/session.h"

/* Monotonic seconds. */
static inline double cli__now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

#define LAT_SAMPLES 65536
#define MAX_EVENTS 4096

/* FULL: the drill's pairs only, written and waiting to be read back */
/* LAYING: a read bench's first write of its slice, not counted */
enum phase { IDLE = 0, WRITING, READING, FULL, LAYING };

struct slot {
	struct cli_session *s;
	unsigned idx;
	enum phase phase;
	uint64_t seq;
	double t_post;
	bool filled;	/* src holds a pattern (write without read-back) */
	bool laid;	/* read bench: its slice written, in generation gen */
	unsigned gen;	/* the target generation its last write went to */
	unsigned slice; /* streams: the slice it writes or reads */
};

/* --load streams: one slice of the target and its pattern's source. */
struct slice {
	uint64_t seq; /* the pattern written there; 0: none (or unknown) */
	unsigned gen; /* the target generation it went to */
	bool writing, reading;
	bool checked; /* read back and compared since written */
	uint64_t age; /* order of its last write or check: oldest first */
};

#define MAX_RESTARTS 16
#define REFETCH_MAX_S 30 /* for a restarted peer's new target */

/* One restart of the peer during the run. */
struct restart {
	double t;	  /* the library's event, run-relative */
	double t_resumed; /* first operation completed on the new target */
	uint64_t old_inc, new_inc;
	uint64_t stale_ops;
};

struct rail_track {
	char name[64];
	struct ry_counters last; /* at the previous tick */
	struct ry_counters at_start;
	bool connected_once;
};

struct cli_session {
	struct ry_manager *mgr;
	struct ry_peer *peer;
	struct cli_session_opts o;
	struct ry_region *local;
	uint8_t *buf;
	size_t buf_len;
	uint8_t desc[RY_DESC_MAX];
	size_t desc_len;
	bool have_target;
	char refused[160]; /* serve's reason for giving us no region */
	unsigned gen;	   /* target generation: one more per restart */
	double next_hello; /* while refetching: when to ask again */
	/* a rail came up since the start: ask the peer for its target again
	 * (cli_session_run), which may now carry a key for a rail the peer
	 * added by a reload */
	bool refresh;
	double refetch_since;
	struct slot *slots;
	struct slice *slices; /* streams */
	unsigned n_slices;
	uint64_t age;
	struct restart restarts[MAX_RESTARTS];
	unsigned n_restarts;
	bool resume_wait; /* the last restart has not resumed yet */
	uint64_t ops_stale;
	uint64_t stale_early; /* RY_ESTALE seen before its restart's event */

	/* the last round of pump() ran callbacks: the next waits at once */
	bool pump_ran;

	double t0, t0_unix, t_end, t_last_tick, t_stop;
	uint64_t posted;
	int fatal;

	uint64_t ops_ok, ops_failed, bytes, verify_errors;
	uint64_t ops_laid; /* read bench: its slices written first */
	char first_error[256];
	char last_error[256];
	double *lat;	/* the last LAT_SAMPLES latencies */
	double lat_max; /* of every operation: a stall shows here */
	uint64_t n_lat;

	unsigned n_rails;
	struct rail_track rails[CLI_REPORT_MAX_RAILS];
	struct cli_report report;
};

/* session_events.c: the manager's callbacks (arg: the session) */
struct cli_report_event *cli__session_add_event(struct cli_session *s, double t,
						const char *rail,
						const char *what);

void cli__session_on_event(const struct ry_event *ev, void *arg);
void cli__session_on_recv(struct ry_peer *from, const struct ry_message *m,
			  void *arg);

#endif /* RAILYARD_CLI_SESSION_INT_H */
