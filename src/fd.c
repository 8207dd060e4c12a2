// SPDX-License-Identifier: BSD-2-Clause
/*
 * Watching an fd in the manager's epoll set (m_epfd): the control plane's
 * sessions and listener.  A base service below every other floor: it
 * calls nothing of the manager's.
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
