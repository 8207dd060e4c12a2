/* SPDX-License-Identifier: BSD-2-Clause */
/*
 * The members of an epoll set, from /proc/self/fdinfo: how many, and how
 * many of them are epoll sets themselves (a rail's set nested in its
 * owner's).  Header-only: the rail contract suite and the manager's tests
 * share no helper library.
 */
#ifndef RY_TESTS_EPOLL_MEMBERS_H
#define RY_TESTS_EPOLL_MEMBERS_H

#include <check.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static inline int test_epoll_members(int ep, int *nested)
{
	char path[64], line[256], link[64];
	int n = 0;
	FILE *f;

	*nested = 0;
	snprintf(path, sizeof(path), "/proc/self/fdinfo/%d", ep);
	f = fopen(path, "r");
	ck_assert_ptr_nonnull(f);
	while (fgets(line, sizeof(line), f)) {
		ssize_t len;
		int fd;

		if (sscanf(line, "tfd: %d", &fd) != 1)
			continue;
		n++;
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		len = readlink(path, link, sizeof(link) - 1);
		ck_assert_int_gt(len, 0);
		link[len] = '\0';
		*nested += strstr(link, "eventpoll") != NULL;
	}
	fclose(f);
	return n;
}

#endif
