// SPDX-License-Identifier: BSD-2-Clause
/* Control addresses: numeric "ip:port" / "[v6]:port", IPv4-mapped IPv6
 * unmapped, compared by host and port. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "src/ctl/ctl_int.h"

static void ip_unmap(struct ry__ip *ip)
{
	static const unsigned char mapped[12] = {0, 0, 0, 0, 0,	   0,
						 0, 0, 0, 0, 0xff, 0xff};

	if (ip->fam == AF_INET6 && !memcmp(ip->a, mapped, 12)) {
		memmove(ip->a, ip->a + 12, 4);
		memset(ip->a + 4, 0, 12);
		ip->fam = AF_INET;
	}
}

void ry__ip_from_sa(const struct sockaddr_storage *ss, struct ry__ip *ip)
{
	memset(ip, 0, sizeof(*ip));
	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *s4 = (const void *)ss;

		ip->fam = AF_INET;
		memcpy(ip->a, &s4->sin_addr, 4);
		ip->port = ntohs(s4->sin_port);
	} else if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *s6 = (const void *)ss;

		ip->fam = AF_INET6;
		memcpy(ip->a, &s6->sin6_addr, 16);
		ip->port = ntohs(s6->sin6_port);
		ip_unmap(ip);
	}
}

/* "ip:port" or "[v6]:port", numeric only: what a HELLO claims must never
 * make us ask a resolver. */
int ry__ip_parse(const char *s, struct ry__ip *ip)
{
	const char *colon = strrchr(s, ':');
	char host[RY_ADDR_MAX], *end;
	unsigned long port;
	size_t hl;

	memset(ip, 0, sizeof(*ip));
	if (!colon)
		return -EINVAL;
	hl = (size_t)(colon - s);
	if (hl >= sizeof(host))
		return -EINVAL;
	memcpy(host, s, hl);
	host[hl] = 0;
	if (host[0] == '[') {
		if (hl < 2 || host[hl - 1] != ']')
			return -EINVAL;
		host[hl - 1] = 0;
		memmove(host, host + 1, hl - 1);
	}
	errno = 0;
	port = strtoul(colon + 1, &end, 10);
	if (errno || end == colon + 1 || *end || port > 65535)
		return -EINVAL;
	ip->port = (uint16_t)port;
	if (inet_pton(AF_INET, host, ip->a) == 1)
		ip->fam = AF_INET;
	else if (inet_pton(AF_INET6, host, ip->a) == 1)
		ip->fam = AF_INET6;
	else
		return -EINVAL;
	ip_unmap(ip);
	return 0;
}

bool ry__ip_same_host(const struct ry__ip *a, const struct ry__ip *b)
{
	return a->fam && a->fam == b->fam &&
	       !memcmp(a->a, b->a, a->fam == AF_INET ? 4 : 16);
}

bool ry__addr_same(const char *x, const char *y)
{
	struct ry__ip a, b;

	if (ry__ip_parse(x, &a) || ry__ip_parse(y, &b))
		return !strcmp(x, y);
	return ry__ip_same_host(&a, &b) && a.port == b.port;
}

unsigned ry__ip_slot(const struct ry__ip *ip)
{
	uint64_t h = 1469598103934665603ull; /* FNV-1a */

	for (unsigned i = 0; i < 16; i++)
		h = (h ^ ip->a[i]) * 1099511628211ull;
	return (unsigned)(h % CTL_REFUSE_SLOTS);
}

void ry__ip_str(const struct ry__ip *ip, char *buf, size_t len)
{
	if (!ip->fam || !inet_ntop(ip->fam, ip->a, buf, (socklen_t)len))
		snprintf(buf, len, "?");
}
