/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Standby rails (rail { standby = yes }): a last resort, such as a tcp
 * rail behind the HCAs.  A peer's work goes to its standby connections
 * only while none of its primary (not standby) connections can take work,
 * or, with standby_below = N, while those that can have less than N % of
 * the primary rails' weight (a node that lost three of its four HCA ports
 * may rather add the tcp rail than squeeze everything into one); when the
 * primaries are back, new work goes there and the standby drains what it
 * holds.  A drained rail (rail_health.c: its port counts errors) is left
 * out the same way while another rail can take the work, and does not
 * count as a primary that is up.  Heartbeats, probes and fencing run on
 * every connection alike, so a standby is known good before it is
 * needed; replay and exactly-once delivery are the manager's, the same on
 * every rail.
 */
#ifndef RAILYARD_STANDBY_H
#define RAILYARD_STANDBY_H

#include <stdbool.h>

#include "src/conn.h"
#include "src/lrail.h"
#include "src/peer.h"

/*
 * The connections that may take p's work now, into cs (RY_MAX_RAILS):
 * those that can (ACTIVE, no post error), less the drained rails' while
 * another can (rail_health.h), less the standbys while the primaries left
 * are enough (above).  Returns how many.
 */
unsigned ry__standby_usable_conns(const struct ry_peer *p,
				  struct ry__conn **cs);

#endif
