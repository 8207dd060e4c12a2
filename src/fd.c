// SPDX-License-Identifier: BSD-2-Clause
/*
 * Watching an fd in the manager's epoll set (m_epfd): the control plane's
 * sessions and listener, and the rails without a thread of their own.  A
 * base service below every other floor: it calls nothing of the
 * manager's.
 */
#include <errno.h>
#include <sys/epoll.h>

#include "src/manager.h"

void ry__fd_watch(struct ry_manager *m, int fd, struct ry__fdtag *tag, bool out)
{
	struct epoll_event ev = {
	    .events = EPOLLIN | (out ? EPOLLOUT : 0),
	    .data.ptr = tag,
	};

	if (epoll_ctl(m->m_epfd, EPOLL_CTL_MOD, fd, &ev) && errno == ENOENT &&
	    epoll_ctl(m->m_epfd, EPOLL_CTL_ADD, fd, &ev))
		RY_ERR("mgr", "epoll_ctl add fd %d: %m", fd);
}

void ry__fd_unwatch(struct ry_manager *m, int fd)
{
	epoll_ctl(m->m_epfd, EPOLL_CTL_DEL, fd, NULL);
}

/*
 * A rail without a thread of its own is in both of the manager's sets:
 * m_epfd itself (lr_tag), so that a packet wakes whoever sleeps on it
 * through two epoll sets (the rail's and m_epfd), not three, and one
 * round's epoll_wait says which rails are ready; and m_rail_epfd, which
 * the context path asks for the rails alone.
 */
void ry__lrail_watch(struct ry__lrail *lr, bool on)
{
	struct ry_manager *m = lr->lr_mgr;
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = lr};
	int fd = ry__rail_fd(lr->lr_rail);

	if (fd < 0)
		return;
	if (!on) {
		epoll_ctl(m->m_rail_epfd, EPOLL_CTL_DEL, fd, NULL);
		ry__fd_unwatch(m, fd);
		return;
	}
	if (epoll_ctl(m->m_rail_epfd, EPOLL_CTL_ADD, fd, &ev))
		RY_ERR("mgr", "rail %s: epoll_ctl: %m", lr->lr_cfg.name);
	lr->lr_tag.ft_kind = FDK_RAIL;
	lr->lr_tag.ft_ptr = lr;
	ry__fd_watch(m, fd, &lr->lr_tag, false);
}
