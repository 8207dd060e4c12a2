// SPDX-License-Identifier: BSD-2-Clause
/*
 * The tcp rail's link watch: an rtnetlink socket on RTMGRP_LINK for the
 * rail's interface (cfg->interface, or the one that owns the bound
 * address), so that a cable pulled here is a link event within
 * milliseconds, not a silence the manager's heartbeats notice later.
 * What query() reports and the events say is the set_link state and the
 * interface's, both up.
 */
#include <errno.h>
#include <ifaddrs.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "rails/rail_addr.h"
#include "rails/tcp/tcp_int.h"
#include "src/util/log.h"

/* linux/if.h's IFF_LOWER_UP (that header clashes with net/if.h) */
#define LOWER_UP 0x10000u

static bool ioctl_up(int fd, int ifindex)
{
	struct ifreq ifr;

	memset(&ifr, 0, sizeof(ifr));
	if (!if_indextoname((unsigned)ifindex, ifr.ifr_name) ||
	    ioctl(fd, SIOCGIFFLAGS, &ifr))
		return true; /* cannot tell: the watch says when it can */
	return ifr.ifr_flags & IFF_UP;
}

int ry__tcp_link_open(struct ry__tcp_rail *r)
{
	struct sockaddr_nl sa = {.nl_family = AF_NETLINK,
				 .nl_groups = RTMGRP_LINK};
	char name[RY_NAME_MAX];

	r->nl_up = true;
	if (r->ifname[0])
		memcpy(name, r->ifname, sizeof(name));
	else
		ry__rail_addr_owner(&r->addr, name, sizeof(name));
	if (!name[0])
		return 0;
	r->ifindex = (int)if_nametoindex(name);
	if (!r->ifindex) {
		RY_ERR("tcp", "rail %s: interface %s: %m", r->base.name, name);
		return -ENODEV;
	}
	r->nlfd = socket(AF_NETLINK, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC,
			 NETLINK_ROUTE);
	if (r->nlfd < 0 || bind(r->nlfd, (struct sockaddr *)&sa, sizeof(sa))) {
		RY_ERR("tcp", "rail %s: netlink: %m", r->base.name);
		return -errno;
	}
	/* subscribed first, then the state read: no change slips between */
	r->nl_up = ioctl_up(r->lfd, r->ifindex);
	return ry__tcp_epoll(r, EPOLL_CTL_ADD, r->nlfd, EPOLLIN, &r->nep);
}

void ry__tcp_link_update(struct ry__tcp_rail *r)
{
	bool up = r->link == RY_LINK_UP && r->nl_up;

	if (up == r->eff_up)
		return;
	r->eff_up = up;
	ry__tcp_event(r, up ? RY_RAIL_EV_LINK_UP : RY_RAIL_EV_LINK_DOWN, 0);
}

void ry__tcp_link_run(struct ry__tcp_rail *r)
{
	char buf[8192] __attribute__((aligned(4)));

	for (;;) {
		ssize_t n = recv(r->nlfd, buf, sizeof(buf), MSG_DONTWAIT);
		struct nlmsghdr *nh;

		if (n <= 0) {
			if (n < 0 && errno == ENOBUFS) {
				/* overrun: messages lost, read the state */
				r->nl_up = ioctl_up(r->lfd, r->ifindex);
				ry__tcp_link_update(r);
				continue;
			}
			return;
		}
		for (nh = (struct nlmsghdr *)buf; NLMSG_OK(nh, (size_t)n);
		     nh = NLMSG_NEXT(nh, n)) {
			struct ifinfomsg *ifi = NLMSG_DATA(nh);

			if ((nh->nlmsg_type != RTM_NEWLINK &&
			     nh->nlmsg_type != RTM_DELLINK) ||
			    nh->nlmsg_len < NLMSG_LENGTH(sizeof(*ifi)) ||
			    ifi->ifi_index != r->ifindex)
				continue;
			/* up: administratively, with a carrier (LOWER_UP:
			 * RUNNING follows it only after linkwatch's delay) */
			r->nl_up = nh->nlmsg_type == RTM_NEWLINK &&
				   (ifi->ifi_flags & IFF_UP) &&
				   (ifi->ifi_flags & (LOWER_UP | IFF_RUNNING));
			ry__tcp_link_update(r);
		}
	}
}
