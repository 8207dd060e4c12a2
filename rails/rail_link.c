// SPDX-License-Identifier: BSD-2-Clause
/* The rtnetlink link watch of the soft and tcp rails (rail_link.h). */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/filter.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "rails/rail_link.h"
#include "src/util/log.h"

/* linux/if.h's IFF_LOWER_UP; that header clashes with net/if.h */
#define RY_IFF_LOWER_UP 0x10000u

bool ry__link_flags_up(unsigned flags)
{
	return (flags & IFF_UP) && (flags & (RY_IFF_LOWER_UP | IFF_RUNNING));
}

static int watch_socket(int ifindex)
{
	/*
	 * Classic BPF loads are big-endian and netlink is host order, so the
	 * constants are swapped as a load would swap them.  A link message
	 * about another interface is dropped; anything else passes, and the
	 * reader still checks every message.
	 */
	const unsigned idx_off =
	    NLMSG_LENGTH(0) + offsetof(struct ifinfomsg, ifi_index);
	struct sock_filter code[] = {
	    BPF_STMT(BPF_LD | BPF_H | BPF_ABS,
		     offsetof(struct nlmsghdr, nlmsg_type)),
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, htons(RTM_NEWLINK), 1, 0),
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, htons(RTM_DELLINK), 0, 2),
	    BPF_STMT(BPF_LD | BPF_W | BPF_ABS, idx_off),
	    BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, htonl((uint32_t)ifindex), 0, 1),
	    BPF_STMT(BPF_RET | BPF_K, 0xffffffffu),
	    BPF_STMT(BPF_RET | BPF_K, 0),
	};
	struct sock_fprog prog = {.len = sizeof(code) / sizeof(code[0]),
				  .filter = code};
	struct sockaddr_nl sa = {.nl_family = AF_NETLINK,
				 .nl_groups = RTMGRP_LINK};
	int fd, err;

	fd = socket(AF_NETLINK, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC,
		    NETLINK_ROUTE);
	if (fd < 0)
		return -errno;
	/* filter first: nothing is queued before the subscription */
	if (setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof(prog)) ||
	    bind(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		err = -errno;
		close(fd);
		return err;
	}
	return fd;
}

int ry__link_watch_open(const char *comp, const char *rail, const char *ifname,
			int *ifindex, int *fd)
{
	*ifindex = (int)if_nametoindex(ifname);
	if (!*ifindex) {
		RY_ERR(comp, "rail %s: interface %s: %m", rail, ifname);
		return -ENODEV;
	}
	*fd = watch_socket(*ifindex);
	if (*fd < 0) {
		int rc = *fd;

		RY_ERR(comp, "rail %s: netlink socket: %s", rail,
		       strerror(-rc));
		*fd = -1;
		return rc;
	}
	return 0;
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
