// SPDX-License-Identifier: BSD-2-Clause
/*
 * The link watch: an rtnetlink socket subscribed to RTMGRP_LINK, so that
 * `ip link set DEV down` (or a lost carrier) on the rail's interface turns
 * into RY_RAIL_EV_LINK_DOWN at the next progress, milliseconds later, and
 * up again into RY_RAIL_EV_LINK_UP.  The interface is cfg->interface, or the
 * one owning the bound address.
 *
 * The interface deleted (RTM_DELLINK, or its index gone after an overrun)
 * is RY_RAIL_EV_DEVICE_FATAL: the socket is bound to that interface (by
 * index, or by an address that went with it), and one re-created under
 * the same name is another index, so the rail is done; the manager
 * closes it and opens a new one by the config's name and address
 * (src/rail_life.c).  Reported once.
 */
#include <errno.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "rails/rail_link.h"
#include "rails/soft/soft_int.h"
#include "src/util/log.h"

static void gone(struct ry__soft_rail *r)
{
	if (r->nl_gone)
		return;
	r->nl_gone = true;
	r->nl_up = false;
	RY_WARN("soft", "rail %s: interface (index %d) deleted", r->base.name,
		r->ifindex);
	ry__soft_link_update(r);
	ry__soft_event(r, RY_RAIL_EV_DEVICE_FATAL, 0);
}

int ry__soft_nl_open(struct ry__soft_rail *r, const char *ifname)
{
	struct ifreq ifr;
	int rc;

	rc = ry__link_watch_open("soft", r->base.name, ifname, &r->ifindex,
				 &r->nlfd);
	if (rc)
		return rc;
	/* Subscribed first, then read the state: no change slips between.
	 * The ioctl's 16 flag bits lack LOWER_UP, so only IFF_UP counts
	 * here; a missing carrier shows in the next netlink message. */
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	if (ioctl(r->sock, SIOCGIFFLAGS, &ifr) == 0)
		r->nl_up = ifr.ifr_flags & IFF_UP;
	return 0;
}

static void nl_news(void *arg, enum ry__link_news what, unsigned flags)
{
	struct ry__soft_rail *r = arg;
	struct ifreq ifr = {0};

	switch (what) {
	case RY__LINK_DEL:
		gone(r);
		return;
	case RY__LINK_NEW:
		if (!r->nl_gone)
			r->nl_up = ry__link_flags_up(flags);
		break;
	case RY__LINK_LOST:
		if (!if_indextoname((unsigned)r->ifindex, ifr.ifr_name)) {
			gone(r);
			return;
		}
		if (!ioctl(r->sock, SIOCGIFFLAGS, &ifr))
			r->nl_up = ifr.ifr_flags & IFF_UP;
		break;
	}
	ry__soft_link_update(r);
}

void ry__soft_nl_run(struct ry__soft_rail *r)
{
	ry__link_watch_read(r->nlfd, r->ifindex, nl_news, r);
}
