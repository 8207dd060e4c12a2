// SPDX-License-Identifier: BSD-2-Clause
/* The rtnetlink link watch of the soft and tcp rails (rail_link.h). */
#include <errno.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <sys/socket.h>

#include "rails/rail_link.h"

/* linux/if.h's IFF_LOWER_UP; that header clashes with net/if.h */
#define RY_IFF_LOWER_UP 0x10000u

bool ry__link_flags_up(unsigned flags)
{
	return (flags & IFF_UP) && (flags & (RY_IFF_LOWER_UP | IFF_RUNNING));
}

void ry__link_watch_read(int fd, int ifindex, ry__link_fn *fn, void *arg)
{
	char buf[8192] __attribute__((aligned(4)));

	for (;;) {
		ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
		struct nlmsghdr *nh;

		if (n <= 0) {
			if (n < 0 && errno == ENOBUFS) {
				fn(arg, RY__LINK_LOST, 0);
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
			    ifi->ifi_index != ifindex)
				continue;
			fn(arg,
			   nh->nlmsg_type == RTM_DELLINK ? RY__LINK_DEL
							 : RY__LINK_NEW,
			   ifi->ifi_flags);
		}
	}
}
