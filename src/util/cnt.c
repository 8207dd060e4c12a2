// SPDX-License-Identifier: BSD-2-Clause
/* Sums of counters: a rail's and a peer's are their connections' (counters.c).
 */
#include "src/util/cnt.h"

void ry__cnt_add(struct ry_counters *d, const struct ry_counters *s)
{
	d->bytes += s->bytes;
	d->fragments += s->fragments;
	d->work_requests += s->work_requests;
	d->messages += s->messages;
	d->replayed_fragments += s->replayed_fragments;
	d->retransmits += s->retransmits;
	d->failovers += s->failovers;
	d->fences += s->fences;
	d->reconnects += s->reconnects;
	d->heartbeats += s->heartbeats;
	d->detect_count += s->detect_count;
	d->detect_ns_total += s->detect_ns_total;
	if (s->detect_ns_max > d->detect_ns_max)
		d->detect_ns_max = s->detect_ns_max;
	d->resume_count += s->resume_count;
	d->resume_ns_total += s->resume_ns_total;
	if (s->resume_ns_max > d->resume_ns_max)
		d->resume_ns_max = s->resume_ns_max;
}
