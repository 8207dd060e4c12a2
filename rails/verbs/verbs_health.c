// SPDX-License-Identifier: BSD-2-Clause
/*
 * The port's own error counters, the signal that rises before a link
 * dies: symbol errors, link error recoveries and downs, receive errors,
 * local link integrity errors, excessive buffer overruns, discards.  They
 * are the IB PortCounters the kernel shows in sysfs (counters/), or the
 * driver's hw_counters/ where it keeps them there (rxe: link_downed).
 * Sampled with the rail's other statistics (get_stats: port_errors), so
 * the metrics and whoever judges a rail's health (src/rail_health.c) read
 * one monotonic sum.  A port with none of them here is asked through its
 * PMA (verbs_pma.c).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "rails/verbs/verbs_int.h"

static const char *const port_error_counters[] = {
    "symbol_error",
    "link_error_recovery",
    "link_downed",
    "port_rcv_errors",
    "port_rcv_remote_physical_errors",
    "local_link_integrity_errors",
    "excessive_buffer_overrun_errors",
    "port_xmit_discards",
};

int ry__verbs_port_counter(const char *root, const char *dev, unsigned port,
			   const char *dir, const char *name, uint64_t *v)
{
	char path[512];
	unsigned long long x;
	FILE *f;
	int ok;

	snprintf(path, sizeof(path), "%s/%s/ports/%u/%s/%s", root, dev, port,
		 dir, name);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	ok = fscanf(f, "%llu", &x) == 1;
	fclose(f);
	if (!ok)
		return -EINVAL;
	*v = x;
	return 0;
}

int ry__verbs_port_errors(const char *root, const char *dev, unsigned port,
			  uint64_t *sum_p)
{
	static const char *const dirs[] = {"counters", "hw_counters"};
	uint64_t sum = 0;
	bool any = false;

	for (size_t i = 0;
	     i < sizeof(port_error_counters) / sizeof(port_error_counters[0]);
	     i++) {
		/* a counter is read once, from the first place it is in */
		for (size_t d = 0; d < 2; d++) {
			uint64_t v = 0;

			if (ry__verbs_port_counter(root, dev, port, dirs[d],
						   port_error_counters[i], &v))
				continue;
			sum += v;
			any = true;
			break;
		}
	}
	if (!any)
		return -ENOENT;
	*sum_p = sum;
	return 0;
}
