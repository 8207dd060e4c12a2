/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The loop rail: a test-only provider.  Rails opened in one process find
 * each other by address through a process-global registry; RDMA WRITE, READ
 * and SEND are executed by memcpy against the peer rail's registered regions
 * with real rkey, access and bounds checks.
 *
 * A pulled cable (set_link DOWN on either end, or set_fault drop_all) makes
 * every WR posted afterwards on an affected QP stay unacknowledged until
 * ack_timeout * (retry_cnt + 1) has passed; then the head completes with
 * RY_WC_RETRY_EXCEEDED, the QP goes to ERR and the rest are flushed, as an
 * RC HCA does.  Only drop_all of struct ry_fault is implemented.
 *
 * With ry_loop_hold() on, packets lost that way stay "in the network" and
 * ry_loop_release_held() delivers them later, to test fencing: a stale
 * packet lands only if its destination QP is still connected to its source.
 *
 * The null provider (RY_PROVIDER_NULL) completes every WR at once with
 * success and moves no bytes (for the manager's core-cost benchmark).
 *
 * Neither is in the library: a test links tests/loop and calls
 * ry_loop_register(), then puts these kinds in a ry_rail_config.
 */
#ifndef RAILYARD_LOOP_H
#define RAILYARD_LOOP_H

#include "rails/rail.h"

#define RY_PROVIDER_LOOP ((enum ry_provider)RY__PROVIDER_TEST)
#define RY_PROVIDER_NULL ((enum ry_provider)(RY__PROVIDER_TEST + 1))

/* Register both providers with the core; idempotent.  0 or -errno. */
int ry_loop_register(void);

/* Loop rails opened from now on say sends_alone (rails/rail.h), as the
 * null rail always does; off by default. */
void ry_loop_sends_alone(bool on);

/*
 * While absent, a loop rail of this address does not open (-ENODEV, as a
 * device that is not there); false makes it openable again.  At most 8
 * addresses at a time.
 */
void ry_loop_absent(const char *address, bool absent);

/* The rail's device goes away, as an HCA reset: its link goes down (no
 * packet moves) and it reports RY_RAIL_EV_DEVICE_FATAL. */
void ry_loop_device_gone(struct ry_rail *rail);

/* How many times the rail's progress() has been called. */
uint64_t ry_loop_progress_calls(struct ry_rail *rail);

/* The rail's next n post_send calls fail with -EIO, taking nothing (a
 * provider out of send queue memory, say). */
void ry_loop_fail_posts(struct ry_rail *rail, unsigned n);

/* The rail's next n receives of a SEND complete with RY_WC_LOC_LEN and
 * move the receiving QP to ERR; the sender's WR completes
 * RY_WC_REM_INVALID_REQ (a responder error, as an RC HCA reports it). */
void ry_loop_fail_recvs(struct ry_rail *rail, unsigned n);

/* From now on each get_stats adds n to the rail's port_errors, as a port
 * counting errors would (the manager samples once a second); 0: stop. */
void ry_loop_port_errors(struct ry_rail *rail, unsigned n);

/* Keep packets lost to a pulled cable for ry_loop_release_held(). */
void ry_loop_hold(struct ry_rail *rail, bool on);

/*
 * Deliver the packets this rail sent that were held in the network.
 * Returns how many landed (changed memory or consumed a receive).
 */
int ry_loop_release_held(struct ry_rail *rail);

#endif
