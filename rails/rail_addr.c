// SPDX-License-Identifier: BSD-2-Clause
/* Rail addresses (rail_addr.h), shared by the soft and tcp rails. */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rails/rail_addr.h"

int ry__rail_parse_addr(const struct ry_rail_config *cfg,
			struct sockaddr_in *sa)
{
	char host[RY_ADDR_MAX];
	char *colon;

	memset(sa, 0, sizeof(*sa));
	sa->sin_family = AF_INET;
	snprintf(host, sizeof(host), "%s", cfg->address);
	colon = strrchr(host, ':');
	if (colon) {
		char *end;
		unsigned long port = strtoul(colon + 1, &end, 10);

		if (*end || port > 65535)
			return -EINVAL;
		sa->sin_port = htons((uint16_t)port);
		*colon = '\0';
	}
	if (host[0]) {
		if (inet_pton(AF_INET, host, &sa->sin_addr) != 1)
			return -EINVAL;
		return 0;
	}
	if (cfg->interface[0]) {
		struct ifaddrs *ifa, *i;
		int rc = -EADDRNOTAVAIL;

		if (getifaddrs(&ifa))
			return -errno;
		for (i = ifa; i; i = i->ifa_next) {
			if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET &&
			    !strcmp(i->ifa_name, cfg->interface)) {
				sa->sin_addr =
				    ((struct sockaddr_in *)(void *)i->ifa_addr)
					->sin_addr;
				rc = 0;
				break;
			}
		}
		freeifaddrs(ifa);
		return rc;
	}
	return -EINVAL;
}

void ry__rail_addr_owner(const struct sockaddr_in *addr, char *name, size_t len)
{
	struct ifaddrs *ifa, *i;

	name[0] = '\0';
	if (getifaddrs(&ifa))
		return;
	for (i = ifa; i; i = i->ifa_next) {
		if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET &&
		    ((struct sockaddr_in *)(void *)i->ifa_addr)
			    ->sin_addr.s_addr == addr->sin_addr.s_addr) {
			snprintf(name, len, "%s", i->ifa_name);
			break;
		}
	}
	freeifaddrs(ifa);
}
