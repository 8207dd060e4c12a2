// SPDX-License-Identifier: BSD-2-Clause
/*
 * Watching an fd in the manager's epoll set (m_epfd): the control plane's
 * sessions and listener, and the rails without a thread of their own.  A
 * base service below every other floor: it calls nothing of the
 * manager's.
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>
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
 * Wait for a rail in the epoll set epfd, its events tagged tag: the fds
 * behind its fd in epfd itself when it can put them there (ry_rail_ops
 * watch), so that a packet wakes whoever sleeps on epfd through one epoll
 * set, not two; else its fd.
 */
int ry__lrail_wait_in(struct ry__lrail *lr, int epfd, void *tag)
{
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = tag};
	int fd = ry__rail_fd(lr->lr_rail), ret;

	/* serialised with the rail's progress, whose epoll_ctl calls
	 * follow the set it is told */
	pthread_mutex_lock(&lr->lr_lock);
	ret = ry__rail_watch(lr->lr_rail, epfd, tag);
	pthread_mutex_unlock(&lr->lr_lock);
	if (!ret || fd < 0)
		return 0;
	if (ret != -EOPNOTSUPP)
		RY_WARN("mgr",
			"rail %s: its fds into a wait set: %s; "
			"waiting on its fd",
			lr->lr_cfg.name, strerror(-ret));
	return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) ? -errno : 0;
}

/* The rail leaves epfd, however it was put there (its fd too: wait_in
 * falls back to it when watch fails). */
void ry__lrail_wait_out(struct ry__lrail *lr, int epfd)
{
	int fd = ry__rail_fd(lr->lr_rail);

	pthread_mutex_lock(&lr->lr_lock);
	ry__rail_watch(lr->lr_rail, -1, NULL);
	pthread_mutex_unlock(&lr->lr_lock);
	if (fd >= 0)
		epoll_ctl(epfd, EPOLL_CTL_DEL, fd, NULL);
}

/*
 * A rail without a thread of its own is in both of the manager's sets:
 * m_epfd itself (lr_tag, ry__lrail_wait_in), so that one round's
 * epoll_wait says which rails are ready and a packet wakes whoever sleeps
 * on it directly; and m_rail_epfd (its fd), which the context path asks,
 * without waiting, for the rails alone.
 */
void ry__lrail_watch(struct ry__lrail *lr, bool on)
{
	struct ry_manager *m = lr->lr_mgr;
	struct epoll_event ev = {.events = EPOLLIN, .data.ptr = lr};
	int fd = ry__rail_fd(lr->lr_rail), err;

	if (fd < 0)
		return;
	if (!on) {
		epoll_ctl(m->m_rail_epfd, EPOLL_CTL_DEL, fd, NULL);
		ry__lrail_wait_out(lr, m->m_epfd);
		return;
	}
	if (epoll_ctl(m->m_rail_epfd, EPOLL_CTL_ADD, fd, &ev))
		RY_ERR("mgr", "rail %s: epoll_ctl: %m", lr->lr_cfg.name);
	lr->lr_tag.ft_kind = FDK_RAIL;
	lr->lr_tag.ft_ptr = lr;
	err = ry__lrail_wait_in(lr, m->m_epfd, &lr->lr_tag);
	if (err)
		RY_ERR("mgr", "rail %s: epoll_ctl: %s", lr->lr_cfg.name,
		       strerror(-err));
}
