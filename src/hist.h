/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * Prometheus histograms the manager keeps (metrics.c renders them):
 * bucket counts, not cumulative, under fixed upper bounds; the last
 * bucket is +Inf.  Updated and read under the manager's lock, as the
 * counters beside them.  The bounds of both kinds are in hist.c.
 *
 *   operation latency, per peer and kind (peer.h pr_lat; bounds
 *     ry__lat_le_ns, 10 us .. 1 s), at completion (op.c)
 *   failover times, per local rail (lrail.h lr_fo; bounds ry__fo_le_ns,
 *     50 us .. 10 s): detection (failure to declared down,
 *     conn.c), resume (detection to replayed traffic completing,
 *     completion.c) and fence (detection to the peer's acknowledgement,
 *     fence.c)
 */
#ifndef RAILYARD_HIST_H
#define RAILYARD_HIST_H

#include <stdint.h>

#define RY__LAT_BUCKETS 16
extern const uint64_t ry__lat_le_ns[RY__LAT_BUCKETS];
struct ry__lat {
	uint64_t lt_bucket[RY__LAT_BUCKETS + 1]; /* not cumulative */
	uint64_t lt_sum_ns, lt_count;
};
/* ns into l, whose bucket bounds are le_ns (ry__lat_le_ns, ry__fo_le_ns) */
void ry__lat_add(struct ry__lat *l, const uint64_t *le_ns, uint64_t ns);

enum { RY__FO_DETECT, RY__FO_RESUME, RY__FO_FENCE, RY__FO_N };
extern const uint64_t ry__fo_le_ns[RY__LAT_BUCKETS];

#endif
