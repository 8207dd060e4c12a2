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
#include "rails/rail_link.h"
#include "rails/tcp/tcp_int.h"
#include "src/util/log.h"

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
	char name[RY_NAME_MAX];
	int rc;

	r->nl_up = true;
	if (r->ifname[0])
		memcpy(name, r->ifname, sizeof(name));
	else
		ry__rail_addr_owner(&r->addr, name, sizeof(name));
	if (!name[0])
		return 0;
	rc = ry__link_watch_open("tcp", r->base.name, name, &r->ifindex,
				 &r->nlfd);
	if (rc)
		return rc;
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

static void link_news(void *arg, enum ry__link_news what, unsigned flags)
{
	struct ry__tcp_rail *r = arg;

	switch (what) {
	case RY__LINK_NEW:
		r->nl_up = ry__link_flags_up(flags);
		break;
	case RY__LINK_DEL:
		r->nl_up = false;
		break;
	case RY__LINK_LOST:
		r->nl_up = ioctl_up(r->lfd, r->ifindex);
		break;
	}
	ry__tcp_link_update(r);
}

void ry__tcp_link_run(struct ry__tcp_rail *r)
{
	ry__link_watch_read(r->nlfd, r->ifindex, link_news, r);
}
