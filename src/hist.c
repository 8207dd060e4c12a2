// SPDX-License-Identifier: BSD-2-Clause
#include "src/hist.h"

/* Operation latency: 10 us (a small op on loopback) to 1 s. */
const uint64_t ry__lat_le_ns[RY__LAT_BUCKETS] = {
    10000,     25000,	  50000,     100000,	 250000,   500000,
    1000000,   2500000,	  5000000,   10000000,	 25000000, 50000000,
    100000000, 250000000, 500000000, 1000000000,
};

/*
 * Failover times bucketed from 50 us (a local link event seen at once) to
 * 10 s (heartbeat timeouts): the demo on loopback detects in ~0.3 ms and
 * resumes ~5 ms later, a heartbeat-detected failure takes its timeout.
 */
const uint64_t ry__fo_le_ns[RY__LAT_BUCKETS] = {
    50000,     100000,	   250000,     500000,	    1000000,   2500000,
    5000000,   10000000,   25000000,   50000000,    100000000, 250000000,
    500000000, 1000000000, 2500000000, 10000000000,
};

void ry__lat_add(struct ry__lat *l, const uint64_t *le_ns, uint64_t ns)
{
	unsigned i = 0;

	while (i < RY__LAT_BUCKETS && ns > le_ns[i])
		i++;
	l->lt_bucket[i]++;
	l->lt_sum_ns += ns;
	l->lt_count++;
}
