// SPDX-License-Identifier: BSD-2-Clause
/*
 * epoll_nest: what a level of nested epoll sets costs a round trip.  A
 * 4 KiB TCP ping-pong over loopback between two processes, each sleeping
 * in epoll_wait on a chain of DEPTH sets (0: the socket is in the set it
 * sleeps on; 1: that set is in another, which it sleeps on, as a rail's
 * fd in the manager's set was before ry_rail_ops.watch; -1: a blocking
 * recv, no epoll).  After a wake-up each inner set is asked once without
 * waiting, as a rail's progress asks its own.  Prints p50 and p90 of
 * the round trip.
 *
 * usage: epoll_nest CLIENT_DEPTH SERVER_DEPTH [ROUNDS]   (default 20000)
 * Run the depths in turns, several times: the figures move with the
 * machine (on a VM, wake-up from idle dominates).
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MSG 4096
#define MAX_DEPTH 4

static double now_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* ep[0] holds fd, ep[k] holds ep[k - 1]; returns the outermost. */
static int chain(int fd, int depth, int *ep)
{
	struct epoll_event ev = {.events = EPOLLIN};

	for (int k = 0; k <= depth; k++) {
		ep[k] = epoll_create1(EPOLL_CLOEXEC);
		if (ep[k] < 0 ||
		    epoll_ctl(ep[k], EPOLL_CTL_ADD, k ? ep[k - 1] : fd, &ev)) {
			perror("epoll");
			exit(1);
		}
	}
	return depth >= 0 ? ep[depth] : -1;
}

/* Read one message: blocking (depth < 0) or through the chain. */
static int take(int fd, int depth, const int *ep, char *buf)
{
	size_t got = 0;

	while (got < MSG) {
		ssize_t n;

		if (depth >= 0) {
			struct epoll_event ev;

			if (epoll_wait(ep[depth], &ev, 1, -1) < 0)
				return -1;
			for (int k = depth - 1; k >= 0; k--)
				epoll_wait(ep[k], &ev, 1, 0);
		}
		n = recv(fd, buf + got, MSG - got,
			 depth >= 0 ? MSG_DONTWAIT : 0);
		if (n == 0)
			return -1;
		if (n > 0)
			got += (size_t)n;
	}
	return 0;
}

static void serve(int l, int depth)
{
	static char buf[MSG];
	int ep[MAX_DEPTH + 1], one = 1, s = accept(l, NULL, NULL);

	if (s < 0)
		_exit(1);
	setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	chain(s, depth, ep);
	while (!take(s, depth, ep, buf))
		if (send(s, buf, MSG, 0) != MSG)
			break;
	_exit(0);
}

int main(int argc, char **argv)
{
	static char buf[MSG];
	struct sockaddr_in a = {.sin_family = AF_INET};
	socklen_t alen = sizeof(a);
	int cd, sd, n = 20000, one = 1, l, s, ep[MAX_DEPTH + 1];
	double *t;
	pid_t pid;

	if (argc < 3) {
		fprintf(stderr, "usage: epoll_nest CLIENT_DEPTH SERVER_DEPTH "
				"[ROUNDS]\n");
		return 2;
	}
	cd = atoi(argv[1]);
	sd = atoi(argv[2]);
	if (argc > 3)
		n = atoi(argv[3]);
	if (cd < -1 || cd > MAX_DEPTH || sd < -1 || sd > MAX_DEPTH || n < 1) {
		fprintf(stderr, "epoll_nest: depths -1..%d, rounds > 0\n",
			MAX_DEPTH);
		return 2;
	}
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	l = socket(AF_INET, SOCK_STREAM, 0);
	if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) ||
	    listen(l, 1) || getsockname(l, (struct sockaddr *)&a, &alen)) {
		perror("listen");
		return 1;
	}
	pid = fork();
	if (pid == 0)
		serve(l, sd);
	s = socket(AF_INET, SOCK_STREAM, 0);
	if (s < 0 || connect(s, (struct sockaddr *)&a, sizeof(a))) {
		perror("connect");
		return 1;
	}
	setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	chain(s, cd, ep);
	t = calloc((size_t)n, sizeof(*t));
	if (!t)
		return 1;
	memset(buf, 7, sizeof(buf));
	for (int k = -1000; k < n; k++) { /* 1000 to warm up */
		double t0 = now_us();

		if (send(s, buf, MSG, 0) != MSG || take(s, cd, ep, buf)) {
			fprintf(stderr, "epoll_nest: connection lost\n");
			return 1;
		}
		if (k >= 0)
			t[k] = now_us() - t0;
	}
	close(s);
	waitpid(pid, NULL, 0);
	qsort(t, (size_t)n, sizeof(*t), cmp);
	printf("client depth %d, server depth %d: round trip p50 %.2f us, "
	       "p90 %.2f us\n",
	       cd, sd, t[n / 2], t[n * 9 / 10]);
	free(t);
	return 0;
}
