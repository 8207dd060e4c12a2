// SPDX-License-Identifier: BSD-2-Clause
/*
 * tcp_zerocopy: does MSG_ZEROCOPY pay on this path?  One TCP stream of
 * CHUNK-byte sends for SECONDS, with or without MSG_ZEROCOPY; prints the
 * rate, the sender's CPU seconds per GB, and how many zerocopy
 * notifications came back marked SO_EE_CODE_ZEROCOPY_COPIED (the kernel
 * copied after all: always so when the receiver is on this host, as in
 * a namespace test bed; on a real NIC the pages go to the device).
 *
 * usage: tcp_zerocopy server               (listens on port 5555)
 *        tcp_zerocopy client ADDR ZC CHUNK SECONDS
 *                                           (ZC: 1 = MSG_ZEROCOPY)
 */
#include <arpa/inet.h>
#include <errno.h>
#include <linux/errqueue.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define PORT 5555
#define BUF (64u << 20)

static double cpu_s(void)
{
	struct rusage u;

	getrusage(RUSAGE_SELF, &u);
	return (double)(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
	       (double)(u.ru_utime.tv_usec + u.ru_stime.tv_usec) * 1e-6;
}

static double now_s(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static int server(void)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(PORT)};
	static char b[1 << 20];
	int l = socket(AF_INET, SOCK_STREAM, 0), one = 1;

	setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(l, (struct sockaddr *)&a, sizeof(a)) || listen(l, 1)) {
		perror("tcp_zerocopy: bind/listen");
		return 1;
	}
	for (;;) {
		int c = accept(l, NULL, NULL);
		double c0 = cpu_s();
		ssize_t r;
		long n = 0;

		while ((r = read(c, b, sizeof(b))) > 0)
			n += r;
		if (n)
			printf("server: %ld bytes, %.3f CPU-s/GB\n", n,
			       (cpu_s() - c0) / ((double)n / 1e9));
		fflush(stdout);
		close(c);
	}
}

/* Takes what the error queue holds: counts notifications, and those the
 * kernel had to copy for after all. */
static void drain(int s, long *notes, long *copied)
{
	for (;;) {
		char ctl[128];
		struct msghdr m = {.msg_control = ctl,
				   .msg_controllen = sizeof(ctl)};
		struct cmsghdr *cm;
		struct sock_extended_err *e;
		long n;

		if (recvmsg(s, &m, MSG_ERRQUEUE | MSG_DONTWAIT) < 0)
			return;
		cm = CMSG_FIRSTHDR(&m);
		if (!cm)
			continue;
		e = (struct sock_extended_err *)(void *)CMSG_DATA(cm);
		if (e->ee_origin != SO_EE_ORIGIN_ZEROCOPY)
			continue;
		n = (long)(e->ee_data - e->ee_info) + 1;
		*notes += n;
		if (e->ee_code & SO_EE_CODE_ZEROCOPY_COPIED)
			*copied += n;
	}
}

static int client(const char *addr, int zc, size_t chunk, double secs)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons(PORT)};
	int s = socket(AF_INET, SOCK_STREAM, 0), one = 1;
	long sent = 0, notes = 0, copied = 0;
	size_t off = 0;
	double t0, c0;
	char *buf;

	if (chunk == 0 || chunk > BUF ||
	    inet_pton(AF_INET, addr, &a.sin_addr) != 1) {
		fprintf(stderr, "tcp_zerocopy: bad address or chunk\n");
		return 2;
	}
	if (zc && setsockopt(s, SOL_SOCKET, SO_ZEROCOPY, &one, sizeof(one))) {
		perror("tcp_zerocopy: SO_ZEROCOPY");
		return 1;
	}
	if (connect(s, (struct sockaddr *)&a, sizeof(a))) {
		perror("tcp_zerocopy: connect");
		return 1;
	}
	buf = aligned_alloc(4096, BUF);
	if (!buf)
		return 1;
	memset(buf, 1, BUF);
	t0 = now_s();
	c0 = cpu_s();
	while (now_s() - t0 < secs) {
		ssize_t r = send(s, buf + off, chunk, zc ? MSG_ZEROCOPY : 0);

		if (r < 0 && errno != ENOBUFS && errno != EAGAIN) {
			perror("tcp_zerocopy: send");
			return 1;
		}
		if (r > 0) {
			sent += r;
			off = (off + chunk) % (BUF - chunk + 1);
		}
		if (zc)
			drain(s, &notes, &copied);
	}
	printf("client: MSG_ZEROCOPY %s, %zu-byte sends: %.0f MB/s, %.3f "
	       "CPU-s/GB, "
	       "%ld notifications, %ld of them copied\n",
	       zc ? "on" : "off", chunk, (double)sent / (now_s() - t0) / 1e6,
	       (cpu_s() - c0) / ((double)sent / 1e9), notes, copied);
	close(s);
	free(buf);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "server"))
		return server();
	if (argc == 6 && !strcmp(argv[1], "client"))
		return client(argv[2], atoi(argv[3]), strtoul(argv[4], NULL, 0),
			      atof(argv[5]));
	fprintf(stderr, "usage: tcp_zerocopy server | client ADDR ZC CHUNK "
			"SECONDS\n");
	return 2;
}
