// SPDX-License-Identifier: BSD-2-Clause
/*
 * Lanes: a soft or tcp rail run as several rails on one link.
 *
 * One rail is worked by one rail thread, and the soft rail's packets (or
 * the tcp rail's reads) for every peer on that link go through it.  A node
 * serving many peers on a single link is then bound by that one thread's
 * share of the machine, whatever its cores: measured with four clients
 * reading at depth 64 from one serve, one thread moved four fifths of
 * what two did (tests/bench/RESULTS.md, "Lanes").  A lane is a rail of its
 * own in every respect (socket, QPs, thread, counters, failover); lanes of
 * one rail share its interface, so a pulled cable takes them down
 * together, and they pair with the peer's lanes by network name as any
 * rail does.  Expanding them here, where a manager adopts a config, keeps
 * everything downstream unchanged, and keeps the file and the config an
 * application builds as the user wrote them (ry_config_print shows
 * "lanes = 2", not four rails).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "config/config_int.h"

static bool rail_named(const struct ry_config *c, const char *name)
{
	for (unsigned i = 0; i < c->n_rails; i++)
		if (!strcmp(c->rails[i].name, name))
			return true;
	return false;
}

int ry__config_lanes(struct ry_config *c, char *why, size_t len)
{
	unsigned n = c->n_rails, lanes = c->lanes ? c->lanes : 1;

	if (lanes == 1)
		return 0;
	for (unsigned i = 0; i < n; i++) {
		struct ry_rail_config *r = &c->rails[i];
		char host[INET6_ADDRSTRLEN];
		uint16_t port = 0;

		if (r->provider != RY_PROVIDER_SOFT &&
		    r->provider != RY_PROVIDER_TCP)
			continue;
		/* an address validation refused has no port to number */
		if (ry__parse_hostport(r->address, false, host, sizeof(host),
				       &port))
			port = 0;
		if (port && port + lanes - 1 > 65535) {
			snprintf(why, len,
				 "rail '%s': lanes = %u needs ports %u to "
				 "%u, over 65535",
				 r->name, lanes, port, port + lanes - 1);
			return -EINVAL;
		}
		/* the link's rate is shared, not multiplied: the lanes below
		 * are copies of r */
		r->rate_bps /= lanes;
		for (unsigned k = 2; k <= lanes; k++) {
			struct ry_rail_config l = *r;
			int a, b;

			if (c->n_rails >= RY_MAX_RAILS) {
				snprintf(why, len,
					 "lanes = %u makes more than %u rails",
					 lanes, RY_MAX_RAILS);
				return -EINVAL;
			}
			a = snprintf(l.name, sizeof(l.name), "%s.%u", r->name,
				     k);
			b = snprintf(l.network, sizeof(l.network), "%s.%u",
				     r->network, k);
			if (a < 0 || b < 0 || (size_t)a >= sizeof(l.name) ||
			    (size_t)b >= sizeof(l.network)) {
				snprintf(why, len,
					 "rail '%s': name or network too long "
					 "for its lanes",
					 r->name);
				return -EINVAL;
			}
			if (rail_named(c, l.name)) {
				snprintf(why, len,
					 "rail '%s': its lane %u would be "
					 "named '%s', as another rail is",
					 r->name, k, l.name);
				return -EINVAL;
			}
			if (port)
				snprintf(l.address, sizeof(l.address), "%s:%u",
					 host, (uint16_t)(port + k - 1));
			c->rails[c->n_rails++] = l;
		}
	}
	return 0;
}
