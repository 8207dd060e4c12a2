/* SPDX-License-Identifier: BSD-2-Clause */
/* serve's target regions, one per peer incarnation (targets.c). */
#ifndef RAILYARD_CLI_TARGETS_H
#define RAILYARD_CLI_TARGETS_H

#include <stddef.h>

#include <railyard/railyard.h>

struct cli_targets;

/* At most max regions of region bytes each (rounded up to pages). */
int cli_targets_create(struct ry_manager *mgr, size_t region, unsigned max,
		       struct cli_targets **t);
/* Answer a client's hello: its incarnation's descriptor, or a refusal. */
void cli_targets_hello(struct cli_targets *t, struct ry_peer *from);
/* After a reload: every descriptor packed again (rails added). */
int cli_targets_repack(struct cli_targets *t);
/* Peer restarted: its old region goes; down/up: start or stop the grace. */
void cli_targets_event(struct cli_targets *t, const struct ry_event *ev);
/* Release the regions of peers lost for longer than the grace period. */
void cli_targets_sweep(struct cli_targets *t);
/* Before ry_manager_destroy: deregisters and unmaps every region. */
void cli_targets_destroy(struct cli_targets *t);

#endif
