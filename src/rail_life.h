/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * A configured rail's life (rail_life.c): present (open), absent (it
 * could not open: device, port, interface, address or GID not there), or
 * gone (it was open and its device went away).  Absent and gone rails
 * are "missing": their slot is a hole (ry__lrail_live() false) that
 * keeps what the config named, and the manager tries to open it again.
 */
#ifndef RAILYARD_RAIL_LIFE_H
#define RAILYARD_RAIL_LIFE_H

#include <stdbool.h>
#include <stdint.h>

#include <railyard/config.h>

struct ry_manager;
struct ry__lrail;
struct ry_rail;
struct ry_qp_endpoint;

struct ry__rlife {
	bool rl_missing;  /* configured, not open: retried */
	bool rl_was_open; /* opened once: its return is "back" */
	bool rl_dying;	  /* the device went away (progress.c): close it */
	bool rl_quiet;	  /* an open failure is ours to report */
	bool rl_announce; /* open with its link down: tell peers once up */
	/* an open or close is under way without the rail's lock held: the
	 * rail threads keep off it (lr_lock) */
	bool rl_busy;
	uint32_t rl_gen; /* times it came back, 24 bits (descriptors, HELLO) */
	int rl_err;	 /* the last open's error */
	uint64_t rl_next_ns;	      /* the next attempt */
	uint64_t rl_since_ns;	      /* missing since */
	char rl_why[256];	      /* the last open's cause, for status */
	struct ry_rail_config rl_cfg; /* what to open */
};

/* ry_manager_create(): open slot i, or note it missing (0), or fail. */
int ry__rail_life_create(struct ry_manager *m, unsigned i,
			 const struct ry_rail_config *rc);
/* ry__lrail_open(): the provider's open, its log kept as the cause. */
int ry__rail_life_open(struct ry__lrail *lr, struct ry_rail **rail_p);
/* The cold lock held, every round: close the gone, retry the missing. */
void ry__rail_life_run(struct ry_manager *m, uint64_t now);
struct ry_peer;
/* A peer's new rail list (HELLO, the cold lock held): its operations
 * stop using the keys of a rail of the peer that came back since. */
void ry__rail_life_peer_rails(struct ry_peer *p,
			      const struct ry_qp_endpoint *ep, unsigned n);
/* Whether slot lr is missing (and so keeps a config to open). */
static inline bool ry__rail_life_missing(const struct ry__rlife *rl)
{
	return rl->rl_missing;
}

#endif
