/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The progress loop: rounds, kicks and rail threads; completions; delivery
 * to the application's callbacks (LOCKING in src/manager.h).
 *
 *   Kick: whoever posts to a rail sets lr_kick (unless the rail sends
 *   alone, rails/rail.h: verbs, the null rail); when the lock is dropped,
 *   ry__kick() runs that rail's progress at once in the caller's thread
 *   (no rail threads) or wakes the rail's thread (rt_wake_fd, written once
 *   per wake-up: rt_woken), so a post reaches the wire without waiting for
 *   a progress tick.  What that progress completed the rail's fd need not
 *   say (rails/rail.h): the kick asks pending(), and when something waits
 *   on a rail that says so (progress_quiet) it sets lr_left, which the
 *   next round runs the rail for, and writes m_wake_fd for whoever waits
 *   for rounds.  A small op
 *   (< RY__KICK_BATCH_BYTES) posted from one of the manager's own
 *   callbacks is kicked once at the end of that callback batch
 *   (ry__kick_post), so the batch's reposts share a send.
 */
#ifndef RAILYARD_PROGRESS_H
#define RAILYARD_PROGRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <railyard/railyard.h>

#include "rails/rail.h"
#include "src/events.h"

struct ry_manager;
struct ry_peer;
struct ry__ctx;
struct ry__lrail;
struct ry__wr;

/* deliver.c */
int ry__deliver(struct ry_manager *m);
/* The cold lock held: queue the contexts' done ops and m_dv for ry__deliver();
 * true if any. */
bool ry__deliver_queue(struct ry_manager *m);
/* cx_lock or the cold lock held: cx's completed ops to the end of its
 * callback queue. */
void ry__deliver_queue_ctx(struct ry__ctx *cx);
/* After posting an op of `bytes` (ry__kick otherwise): a small one posted
 * from inside one of m's callbacks is left to the end of the callback batch
 * (ry__deliver), so that the small operations the callbacks post leave in
 * one batch per rail. */
#define RY__KICK_BATCH_BYTES (64u << 10)
void ry__kick_post(struct ry_manager *m, uint64_t bytes);

/* completion.c */
void ry__poll_rail(struct ry__lrail *lr, uint64_t now);
void ry__wr_complete(struct ry_manager *m, struct ry__wr *w,
		     const struct ry_wc *wc, uint64_t now);

/* progress.c */
/* The cold lock held: run a rail with a thread of its own now (heartbeat.c). */
void ry__rail_catch_up(struct ry__lrail *lr, uint64_t now);
/* After dropping m_lock: send what was posted (LOCKING: Kick). */
void ry__kick(struct ry_manager *m);

#endif /* RAILYARD_PROGRESS_H */
