/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Standby rails (rail { standby = yes }): a last resort, such as a tcp
 * rail behind the HCAs.  A peer's work goes to its standby connections
 * only while none of its primary (not standby) connections can take work,
 * or, with standby_below = N, while those that can have less than N % of
 * the primary rails' weight (a node that lost three of its four HCA ports
 * may rather add the tcp rail than squeeze everything into one); when the
 * primaries are back, new work goes there and the standby drains what it
 * holds.  Heartbeats, probes and fencing run on every connection
 * alike, so a standby is known good before it is needed; replay and
 * exactly-once delivery are the manager's, the same on every rail.
 */
#ifndef RAILYARD_STANDBY_H
#define RAILYARD_STANDBY_H

#include <stdbool.h>

#include "src/conn.h"
#include "src/lrail.h"
#include "src/peer.h"

/* Whether p's primary connections that can take work now are enough to
 * leave its standbys idle: any, or standby_below percent of their weight. */
bool ry__standby_primary_up(const struct ry_peer *p);

/* Whether c may take p's work now, primary_up being
 * ry__standby_primary_up(p). */
static inline bool ry__standby_usable(const struct ry__conn *c, bool primary_up)
{
	return !primary_up || !c->cn_lrail->lr_cfg.standby;
}

#endif
