/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The link watch of the rails that bind a kernel socket (soft, tcp): what
 * an rtnetlink socket subscribed to RTMGRP_LINK says about the rail's
 * interface.  Each rail opens its own socket and decides what a message
 * means for it (the soft rail takes a deleted interface as the end of the
 * device, the tcp rail as a link down).
 */
#ifndef RAILYARD_RAIL_LINK_H
#define RAILYARD_RAIL_LINK_H

#include <stdbool.h>

enum ry__link_news {
	RY__LINK_NEW,  /* RTM_NEWLINK: the interface's flags now */
	RY__LINK_DEL,  /* RTM_DELLINK: the interface is deleted */
	RY__LINK_LOST, /* the socket overran: messages lost, read the state */
};

typedef void ry__link_fn(void *arg, enum ry__link_news what, unsigned flags);

/*
 * Up: administratively up with a carrier.  LOWER_UP is the carrier itself;
 * RUNNING (the operstate) follows it only after linkwatch's delay of up to
 * a second, which must not hold back a link that was just brought up.
 */
bool ry__link_flags_up(unsigned flags);

/*
 * Rail `rail`'s watch of interface ifname: its index in *ifindex, and in
 * *fd a nonblocking rtnetlink socket subscribed to RTMGRP_LINK that the
 * kernel lets only that interface's messages (and overruns) into: on a
 * host where containers come and go, every veth created or moved
 * elsewhere would otherwise wake every rail's thread.  0, or -errno said
 * under log component comp (*fd stays -1).
 */
int ry__link_watch_open(const char *comp, const char *rail, const char *ifname,
			int *ifindex, int *fd);

/* Reads all that waits on the nonblocking rtnetlink socket fd and calls fn
 * for each message about ifindex, and once for each overrun. */
void ry__link_watch_read(int fd, int ifindex, ry__link_fn *fn, void *arg);

#endif
