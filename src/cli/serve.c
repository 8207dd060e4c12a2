// SPDX-License-Identifier: BSD-2-Clause
/*
 * railyard serve -c FILE: run a node.  It binds its rails, accepts peers,
 * exposes a target region that bench and drill peers write to and read
 * from, and answers `railyard status` on a UNIX socket.  SIGINT/SIGTERM
 * stop it cleanly: operations in flight complete as canceled, every rail
 * and socket is closed.
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "src/cli/cli.h"
#include "src/cli/node.h"
#include "src/cli/opts.h"
#include "src/cli/session.h"

static const char usage_text[] =
	"usage: railyard serve -c FILE [--socket PATH] [--region SIZE]\n"
	"\n"
	"Run a node: bind the rails of FILE, accept peers, and expose a\n"
	"target region of SIZE bytes (default 64M) that `railyard bench` and\n"
	"`railyard drill` on other nodes write to and read from.  Status is\n"
	"served on a UNIX socket (default /run/railyard/NODE.sock as root,\n"
	"else $XDG_RUNTIME_DIR/railyard-NODE.sock) for `railyard status`.\n"
	"SIGINT or SIGTERM shut it down cleanly.\n"
	"Exit codes: 0 clean shutdown, 1 cannot start, 2 usage error.\n";

#define MAX_SEEN 256

struct server {
	struct ry_manager *mgr;
	struct ry_config *cfg;
	uint8_t reply[sizeof(RY_SESSION_DESC_TAG) + RY_DESC_MAX];
	size_t reply_len;
	struct ry_peer *seen[MAX_SEEN];
	unsigned n_seen;
	uint64_t hellos;
};

static void ignore_done(const struct ry_completion *c, void *arg)
{
}

static void on_recv(struct ry_peer *from, const struct ry_message *m,
		    void *arg)
{
	struct server *sv = arg;
	unsigned i;

	if (m->type != RY_MSG_DATA || m->len != strlen(RY_SESSION_HELLO) ||
	    memcmp(m->data, RY_SESSION_HELLO, m->len))
		return;
	for (i = 0; i < sv->n_seen && sv->seen[i] != from; i++)
		;
	if (i == sv->n_seen && sv->n_seen < MAX_SEEN)
		sv->seen[sv->n_seen++] = from;
	sv->hellos++;
	/* -EAGAIN: the client says hello again in a second */
	ry_send(from, sv->reply, sv->reply_len, ignore_done, NULL);
}

static void on_event(const struct ry_event *ev, void *arg)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	fprintf(stderr, "[%lld.%03ld] rail %s%s%s: %s%s%s\n",
		(long long)ts.tv_sec, ts.tv_nsec / 1000000, ev->rail,
		ev->peer ? " to " : "", ev->peer ? ev->peer : "",
		ev->type == RY_EV_RAIL_DOWN ? "link down" :
		ev->type == RY_EV_RAIL_UP ? "link up" :
		ev->type == RY_EV_CONN_DOWN ? "connection down" :
		ev->type == RY_EV_CONN_RESUMED ? "replayed traffic resumed" :
					      "connection up",
		ev->reason && *ev->reason ? ": " : "",
		ev->reason ? ev->reason : "");
}

static int listen_unix(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	unlink(path); /* a stale socket of a previous run */
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) || listen(fd, 8)) {
		int err = -errno;

		close(fd);
		return err;
	}
	return fd;
}

static void answer_status(struct server *sv, int lfd)
{
	int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	char req[16] = "";
	struct timeval tv = { .tv_sec = 1 };
	FILE *out;
	ssize_t n;

	if (fd < 0)
		return;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	n = read(fd, req, sizeof(req) - 1);
	out = fdopen(fd, "w");
	if (!out) {
		close(fd);
		return;
	}
	ry_cli_status_write(sv->mgr, sv->cfg, sv->seen, sv->n_seen,
			    n > 0 && !strncmp(req, "json", 4), out);
	fclose(out);
}

int ry_cli_serve(int argc, char **argv)
{
	const char *file = NULL, *sock_arg = NULL;
	size_t region = 64u << 20;
	struct server sv = { 0 };
	struct ry_region *target = NULL;
	struct epoll_event ev;
	char sock[108], ctl[128] = "";
	sigset_t mask;
	void *mem = NULL;
	int ep = -1, sfd = -1, lfd = -1, ret, rc = RY_EXIT_FAIL;
	size_t tag = strlen(RY_SESSION_DESC_TAG);

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			fputs(usage_text, stdout);
			return RY_EXIT_OK;
		} else if (!strcmp(argv[i], "-c") && i + 1 < argc) {
			file = argv[++i];
		} else if (!strcmp(argv[i], "--socket") && i + 1 < argc) {
			sock_arg = argv[++i];
		} else if (!strcmp(argv[i], "--region") && i + 1 < argc) {
			if (!ry_cli_parse_size(argv[++i], &region)) {
				fprintf(stderr, "railyard serve: --region '%s' is not a size\n",
					argv[i]);
				return RY_EXIT_USAGE;
			}
		} else {
			fprintf(stderr, "railyard serve: unexpected '%s'\n\n%s",
				argv[i], usage_text);
			return RY_EXIT_USAGE;
		}
	}
	if (!file) {
		fputs(usage_text, stderr);
		return RY_EXIT_USAGE;
	}
	if (ry_cli_start(file, &sv.cfg, &sv.mgr))
		return RY_EXIT_FAIL;

	mem = aligned_alloc(4096, (region + 4095) & ~(size_t)4095);
	if (!mem) {
		fprintf(stderr, "railyard serve: cannot allocate the %zu-byte target\n",
			region);
		goto out;
	}
	memset(mem, 0, region);
	ret = ry_mr_reg(sv.mgr, mem, region,
			RY_MR_REMOTE_WRITE | RY_MR_REMOTE_READ, &target);
	if (ret) {
		fprintf(stderr, "railyard serve: cannot register the target: %s\n",
			strerror(-ret));
		goto out;
	}
	memcpy(sv.reply, RY_SESSION_DESC_TAG, tag);
	ret = ry_mr_pack(target, sv.reply + tag, sizeof(sv.reply) - tag);
	if (ret < 0)
		goto out;
	sv.reply_len = tag + (size_t)ret;
	ry_set_recv_cb(sv.mgr, on_recv, &sv);
	ry_set_event_cb(sv.mgr, on_event, &sv);

	if (sock_arg)
		snprintf(sock, sizeof(sock), "%s", sock_arg);
	else
		ry_cli_status_path(sv.cfg->node, sock, sizeof(sock));
	lfd = listen_unix(sock);
	if (lfd < 0) {
		fprintf(stderr, "railyard serve: status socket %s: %s\n", sock,
			strerror(-lfd));
		goto out;
	}
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);
	sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	ep = epoll_create1(EPOLL_CLOEXEC);
	if (sfd < 0 || ep < 0)
		goto out;
	ev = (struct epoll_event){ .events = EPOLLIN, .data.fd = sfd };
	epoll_ctl(ep, EPOLL_CTL_ADD, sfd, &ev);
	ev = (struct epoll_event){ .events = EPOLLIN, .data.fd = lfd };
	epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev);
	ev = (struct epoll_event){ .events = EPOLLIN, .data.fd = ry_event_fd(sv.mgr) };
	epoll_ctl(ep, EPOLL_CTL_ADD, ry_event_fd(sv.mgr), &ev);

	ry_manager_control_addr(sv.mgr, ctl, sizeof(ctl));
	fprintf(stderr,
		"railyard serve: node %s, control %s, %d rails, target %zu bytes, status %s\n",
		sv.cfg->node, ctl, ry_rail_count(sv.mgr), region, sock);
	for (;;) {
		struct epoll_event evs[4];
		int n = ry_progress(sv.mgr) > 0 ? 0 : 10;
		bool stop = false;

		n = epoll_wait(ep, evs, 4, n);
		for (int i = 0; i < n; i++) {
			if (evs[i].data.fd == sfd) {
				stop = true;
			} else if (evs[i].data.fd == lfd) {
				answer_status(&sv, lfd);
			}
		}
		if (stop)
			break;
	}
	fprintf(stderr, "railyard serve: shutting down (%llu hellos answered)\n",
		(unsigned long long)sv.hellos);
	rc = RY_EXIT_OK;
out:
	if (lfd >= 0) {
		close(lfd);
		unlink(sock);
	}
	if (sfd >= 0)
		close(sfd);
	if (ep >= 0)
		close(ep);
	if (sv.mgr)
		ry_set_recv_cb(sv.mgr, NULL, NULL);
	ry_mr_dereg(target);
	ry_manager_destroy(sv.mgr);
	ry_config_free(sv.cfg);
	free(mem);
	return rc;
}
