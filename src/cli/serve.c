// SPDX-License-Identifier: BSD-2-Clause
/*
 * railyard serve -c FILE: run a node.  It binds its rails, accepts peers,
 * gives each admitted bench or drill peer a target region of its own to
 * write to and read from (targets.c), and answers `railyard status` on a UNIX
 * socket.  SIGINT/SIGTERM stop it cleanly: operations in flight complete as
 * canceled, every rail and socket is closed.
 *
 * --metrics ADDR:PORT serves GET /metrics (ry_metrics_render) with
 * libmicrohttpd's own polling thread: a slow or stuck scraper waits in that
 * thread, never in the loop below that runs ry_progress().  Under systemd
 * (Type=notify) it says READY=1 once rails, control channel, status socket
 * and metrics listener are up, STATUS= whenever a rail or connection
 * changes, and WATCHDOG=1 at half of WatchdogSec.
 *
 * SIGHUP, and `railyard reload` on the status socket, read the config file
 * again and apply it with ry_manager_reload(): a file with a problem
 * changes nothing and every problem is printed as FILE:LINE.  Around it
 * systemd hears RELOADING=1 ... READY=1.
 */
#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#ifdef RY_WITH_MICROHTTPD
#include "src/cli/metrics_http.h"
#endif
#ifdef RY_WITH_SYSTEMD
#include <systemd/sd-daemon.h>
#else
/* Without libsystemd serve runs the same, it just tells no one. */
static int sd_notify(int unset, const char *state)
{
	return 0;
}
static int sd_notifyf(int unset, const char *fmt, ...)
{
	return 0;
}
static int sd_watchdog_enabled(int unset, uint64_t *usec)
{
	return 0;
}
#endif

#include "src/cli/cli.h"
#include "src/cli/node.h"
#include "src/cli/opts.h"
#include "src/cli/session.h"
#include "src/cli/targets.h"

static const char usage_text[] =
    "usage: railyard serve -c FILE [--socket PATH] [--region SIZE]\n"
    "                      [--targets N] [--metrics ADDR:PORT]\n"
    "                      [--log-level LEVEL] [--metrics-token FILE]\n"
    "                      [--require-all-rails]\n"
    "\n"
    "Run a node: bind the rails of FILE, accept peers, and give each peer\n"
    "that asks (`railyard bench` and `railyard drill`) a target region of\n"
    "its own of SIZE bytes (default 64M; memory is used as it is written),\n"
    "at most N of them at once (--targets, default 64).  A peer that\n"
    "restarts gets a new one; a peer lost for 30 s gives its back.  Status is\n"
    "served on a UNIX socket (default /run/railyard/NODE.sock as root or\n"
    "under systemd ($RUNTIME_DIRECTORY), else\n"
    "$XDG_RUNTIME_DIR/railyard-NODE.sock, without it\n"
    "/tmp/railyard-UID/NODE.sock) for `railyard status`; a name there\n"
    "that is not a socket of this user's, or a directory others may\n"
    "write, is refused.\n"
    "--metrics ADDR:PORT serves Prometheus metrics at\n"
    "http://ADDR:PORT/metrics (127.0.0.1:9470; 0.0.0.0:9470 for all):\n"
    "at most 64 connections, 4 per source address, idle ones closed\n"
    "after 10 s, the text rendered at most once a second.  With\n"
    "--metrics-token FILE (mode 0600, one line of 16 or more bytes) a\n"
    "scrape must send \"Authorization: Bearer TOKEN\", or gets 401.\n"
    "--log-level error|warn|info|debug|trace.  --metrics and --log-level,\n"
    "when not given, come from the environment, RY_METRICS and\n"
    "RY_LOG_LEVEL, and the level then from the config (log { level }).\n"
    "At start the open-file limit is raised to its hard limit; a config\n"
    "whose max_sessions cannot fit under it is refused, and the default\n"
    "max_sessions is lowered to fit, with a warning.\n"
    "A rail whose device, port, interface or address is not there does not\n"
    "stop it: it starts without the rail (`railyard status` shows it\n"
    "missing, and why) and opens it when it appears; --require-all-rails\n"
    "(or require_all_rails = yes) refuses to start instead.\n"
    "Under systemd (Type=notify) it reports readiness, status, watchdog.\n"
    "SIGHUP (or `railyard reload`) reads FILE again and applies it; a file\n"
    "with a problem changes nothing.\n"
    "SIGINT or SIGTERM shut it down cleanly.\n"
    "Exit codes: 0 clean shutdown, 1 cannot start, 2 usage error.\n";

#define MAX_SEEN 256

struct server {
	struct ry_manager *mgr;
	struct ry_config *cfg;
	const char *file; /* -c FILE, read again by a reload */
	uint64_t hellos;
	/* peers with at least one connection up, from the events */
	struct {
		char name[RY_ADDR_MAX];
		unsigned up;
	} conns[MAX_SEEN];
	struct cli_targets *targets;
	unsigned n_conns;
	bool status_dirty;
	/* the callbacks run on the library's progress threads, the status
	 * answers and notifications on the main thread */
	pthread_mutex_t lock;
};

static void on_recv(struct ry_peer *from, const struct ry_message *m, void *arg)
{
	struct server *sv = arg;

	if (m->type != RY_MSG_DATA || m->len != strlen(CLI_SESSION_HELLO) ||
	    memcmp(m->data, CLI_SESSION_HELLO, m->len))
		return;
	pthread_mutex_lock(&sv->lock);
	sv->hellos++;
	pthread_mutex_unlock(&sv->lock);
	/* a failed send: the client says hello again in a second */
	cli_targets_hello(sv->targets, from);
}

static void count_conn(struct server *sv, const char *peer, bool up)
{
	unsigned i;

	for (i = 0; i < sv->n_conns && strcmp(sv->conns[i].name, peer); i++)
		;
	if (i == sv->n_conns) {
		if (!up || sv->n_conns == MAX_SEEN)
			return;
		snprintf(sv->conns[i].name, sizeof(sv->conns[i].name), "%s",
			 peer);
		sv->conns[i].up = 0;
		sv->n_conns++;
	}
	if (up)
		sv->conns[i].up++;
	else if (sv->conns[i].up)
		sv->conns[i].up--;
}

static void on_event(const struct ry_event *ev, void *arg)
{
	struct server *sv = arg;
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	cli_targets_event(sv->targets, ev);
	if (ev->type == RY_EV_PEER_UP || ev->type == RY_EV_PEER_DOWN ||
	    ev->type == RY_EV_PEER_RESTARTED) {
		fprintf(stderr, "[%lld.%03ld] peer %s: %s",
			(long long)ts.tv_sec, ts.tv_nsec / 1000000,
			ev->peer ? ev->peer : "",
			ev->type == RY_EV_PEER_UP     ? "up"
			: ev->type == RY_EV_PEER_DOWN ? "control session lost"
						      : "restarted");
		if (ev->type == RY_EV_PEER_RESTARTED)
			fprintf(stderr,
				" (incarnation %016" PRIx64 " -> %016" PRIx64
				")",
				ev->old_incarnation, ev->new_incarnation);
		fprintf(stderr, "\n");
		return;
	}
	fprintf(stderr, "[%lld.%03ld] rail %s%s%s: %s%s%s\n",
		(long long)ts.tv_sec, ts.tv_nsec / 1000000, ev->rail,
		ev->peer ? " to " : "", ev->peer ? ev->peer : "",
		ev->type == RY_EV_RAIL_DOWN	 ? "link down"
		: ev->type == RY_EV_RAIL_UP	 ? "link up"
		: ev->type == RY_EV_CONN_DOWN	 ? "connection down"
		: ev->type == RY_EV_CONN_RESUMED ? "replayed traffic resumed"
		: ev->type == RY_EV_RAIL_GONE	 ? "gone"
		: ev->type == RY_EV_RAIL_BACK	 ? "back"
		: ev->type == RY_EV_RAIL_HEALTH	 ? "errors"
						 : "connection up",
		ev->reason && *ev->reason ? ": " : "",
		ev->reason ? ev->reason : "");
	pthread_mutex_lock(&sv->lock);
	if (ev->peer && ev->type == RY_EV_CONN_UP)
		count_conn(sv, ev->peer, true);
	else if (ev->peer && ev->type == RY_EV_CONN_DOWN)
		count_conn(sv, ev->peer, false);
	sv->status_dirty = true;
	pthread_mutex_unlock(&sv->lock);
}

/* "4 rails, 3 up, 12 peers" (", 1 missing") for systemctl status. */
static void notify_status(struct server *sv, const char *prefix)
{
	int n = ry_rail_count(sv->mgr), up = 0;
	unsigned peers = 0, missing = 0;
	char more[32] = "";

	for (int i = 0; i < n; i++) {
		struct ry_rail_info ri;

		if (!ry_rail_info(sv->mgr, ry_rail_name(sv->mgr, (unsigned)i),
				  &ri) &&
		    ri.link_up)
			up++;
	}
	pthread_mutex_lock(&sv->lock);
	for (unsigned i = 0; i < sv->n_conns; i++)
		peers += sv->conns[i].up > 0;
	sv->status_dirty = false;
	pthread_mutex_unlock(&sv->lock);
	while (!ry_rail_missing(sv->mgr, missing, NULL, 0, NULL, 0))
		missing++;
	if (missing)
		snprintf(more, sizeof(more), ", %u missing", missing);
	sd_notifyf(0, "%sSTATUS=%d rails, %d up, %u peers%s", prefix, n, up,
		   peers, more);
}

#ifdef RY_WITH_MICROHTTPD
/*
 * Bind ADDR:PORT ourselves rather than through MHD_OPTION_SOCK_ADDR so
 * that a taken or malformed address is reported with its errno, then hand
 * the socket to libmicrohttpd.
 */
static int metrics_listen(const char *arg)
{
	struct addrinfo hints = {.ai_flags = AI_PASSIVE | AI_NUMERICSERV,
				 .ai_socktype = SOCK_STREAM};
	struct addrinfo *ai = NULL;
	char host[RY_ADDR_MAX], *colon, *end;
	unsigned long port;
	int fd, one = 1, ret;

	if (strlen(arg) >= sizeof(host))
		goto malformed;
	strcpy(host, arg);
	colon = strrchr(host, ':');
	if (!colon || colon == host)
		goto malformed;
	*colon = 0;
	port = strtoul(colon + 1, &end, 10);
	if (!colon[1] || *end || port > 65535)
		goto malformed;
	if (host[0] == '[' && colon[-1] == ']') {
		colon[-1] = 0;
		memmove(host, host + 1, strlen(host));
	}
	ret = getaddrinfo(host, colon + 1, &hints, &ai);
	if (ret) {
		fprintf(stderr, "railyard serve: --metrics %s: %s\n", arg,
			gai_strerror(ret));
		return -1;
	}
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 ||
	    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(fd, ai->ai_addr, ai->ai_addrlen) || listen(fd, 32)) {
		fprintf(stderr, "railyard serve: --metrics %s: %s\n", arg,
			strerror(errno));
		if (fd >= 0)
			close(fd);
		freeaddrinfo(ai);
		return -1;
	}
	freeaddrinfo(ai);
	return fd;
malformed:
	fprintf(stderr,
		"railyard serve: --metrics '%s' is not ADDR:PORT (e.g. "
		"127.0.0.1:9470)\n",
		arg);
	return -1;
}

#endif

static uint64_t now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

/*
 * The status socket answers `railyard reload` and `status`: it must be
 * ours.  Its directory may be written only by us or root (or be sticky,
 * as /tmp, where nobody else can remove our name); a name there already
 * is replaced only if it is a socket of ours (a previous run's).  The
 * default without XDG_RUNTIME_DIR, /tmp/railyard-UID/, is made 0700.
 */
static int status_path_ok(const char *path)
{
	char dir[108], *slash;
	struct stat st;

	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	if (slash == dir)
		slash[1] = 0;
	else if (slash)
		*slash = 0;
	else
		snprintf(dir, sizeof(dir), ".");
	if (!strncmp(dir, "/tmp/railyard-", 14))
		mkdir(dir, 0700);
	if (stat(dir, &st))
		return -errno;
	if ((st.st_uid != geteuid() && st.st_uid != 0) ||
	    ((st.st_mode & 022) && !(st.st_mode & S_ISVTX))) {
		fprintf(stderr,
			"railyard serve: status socket %s: directory %s is "
			"owned by uid %u, mode %04o: others could replace "
			"the socket; use --socket in a directory of yours\n",
			path, dir, (unsigned)st.st_uid,
			(unsigned)(st.st_mode & 07777));
		return -EPERM;
	}
	if (lstat(path, &st)) /* ENOENT: free */
		return errno == ENOENT ? 0 : -errno;
	if (!S_ISSOCK(st.st_mode) || st.st_uid != geteuid()) {
		fprintf(stderr,
			"railyard serve: status socket %s: the name is taken "
			"(%s of uid %u), not replacing it\n",
			path,
			S_ISSOCK(st.st_mode) ? "a socket" : "not a socket",
			(unsigned)st.st_uid);
		return -EEXIST;
	}
	return 0;
}

static int listen_unix(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd, ret;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	ret = status_path_ok(path);
	if (ret)
		return ret;
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

/*
 * Read the config file again and apply it (SIGHUP, `railyard reload`).
 * The problems and the verdict go to stderr and, for `railyard reload`, to
 * out: its last line is "ok: ..." or "failed: ...".
 */
static int serve_reload(struct server *sv, FILE *out)
{
	struct ry_config *cfg = NULL;
	char *text = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&text, &len);
	int ret;

	if (!mem)
		return -ENOMEM;
	sd_notifyf(0, "RELOADING=1\nSTATUS=reloading %s", sv->file);
	ret = ry_config_load(sv->file, &cfg, cli_print_config_error, mem);
	if (!ret)
		ret = cli_fit_fds(sv->file, cfg, mem);
	if (!ret)
		ret = ry_manager_reload(sv->mgr, cfg, cli_print_config_error,
					mem);
	if (!ret) {
		cli_log_apply(cfg); /* RY_LOG_LEVEL was good at start */
		ry_log_use_syslog(cfg->log.syslog);
		ry_config_free(sv->cfg);
		sv->cfg = cfg;
		/* rails added: new descriptors carry their keys */
		ret = cli_targets_repack(sv->targets);
		fprintf(mem, "ok: %s applied (%d rails)\n", sv->file,
			ry_rail_count(sv->mgr));
	} else {
		ry_config_free(cfg);
		fprintf(mem, "failed: %s: %s; nothing was changed\n", sv->file,
			ret == -EINVAL ? "not applied" : strerror(-ret));
	}
	fclose(mem);
	fprintf(stderr, "railyard serve: reload:\n%s", text ? text : "");
	if (out && text)
		fputs(text, out);
	free(text);
	notify_status(sv, "READY=1\n");
	return ret;
}

static void answer_status(struct server *sv, int lfd)
{
	int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
	char req[16] = "";
	struct timeval tv = {.tv_sec = 1};
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
	if (n > 0 && !strncmp(req, "reload", 6))
		serve_reload(sv, out);
	else
		cli_status_write(sv->mgr, sv->cfg,
				 n > 0 && !strncmp(req, "json", 4), out);
	fclose(out);
}

int cli_serve(int argc, char **argv)
{
	const char *file = NULL, *sock_arg = NULL, *metrics_arg = NULL;
	size_t region = 64u << 20;
	unsigned long targets = 64;
	char metrics_url[RY_ADDR_MAX + 32] = "";
	int mfd = -1;
	uint64_t wd_usec = 0, wd_next = 0;
	const char *token_arg = NULL;
#ifdef RY_WITH_MICROHTTPD
	struct cli_mhttp *httpd = NULL;
#endif
	struct server sv = {.lock = PTHREAD_MUTEX_INITIALIZER};
	struct epoll_event ev;
	char sock[108], ctl[128] = "";
	sigset_t mask;
	int ep = -1, sfd = -1, lfd = -1, ret, rc = RY_EXIT_FAIL;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			fputs(usage_text, stdout);
			return RY_EXIT_OK;
		} else if (!strcmp(argv[i], "-c") && i + 1 < argc) {
			file = argv[++i];
		} else if (!strcmp(argv[i], "--socket") && i + 1 < argc) {
			sock_arg = argv[++i];
		} else if (!strcmp(argv[i], "--require-all-rails")) {
			cli_require_all_rails = true;
		} else if (!strcmp(argv[i], "--metrics") && i + 1 < argc) {
			metrics_arg = argv[++i];
		} else if (!strcmp(argv[i], "--log-level") && i + 1 < argc) {
			if (cli_log_cmdline_level(argv[++i])) {
				fprintf(stderr,
					"railyard serve: --log-level '%s' is "
					"not error, warn, info, debug or "
					"trace\n",
					argv[i]);
				return RY_EXIT_USAGE;
			}
		} else if (!strcmp(argv[i], "--metrics-token") &&
			   i + 1 < argc) {
			token_arg = argv[++i];
		} else if (!strcmp(argv[i], "--targets") && i + 1 < argc) {
			char *end;

			targets = strtoul(argv[++i], &end, 10);
			if (!*argv[i] || *end || !targets || targets > 65536) {
				fprintf(stderr,
					"railyard serve: --targets '%s' is not "
					"a count from 1 to 65536\n",
					argv[i]);
				return RY_EXIT_USAGE;
			}
		} else if (!strcmp(argv[i], "--region") && i + 1 < argc) {
			if (!cli_parse_size(argv[++i], &region)) {
				fprintf(stderr,
					"railyard serve: --region '%s' is not "
					"a size\n",
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
	/* the command line, else the environment (empty: none) */
	if (!metrics_arg && getenv("RY_METRICS") && *getenv("RY_METRICS"))
		metrics_arg = getenv("RY_METRICS");
	if (token_arg && !metrics_arg) {
		fprintf(stderr,
			"railyard serve: --metrics-token needs --metrics\n");
		return RY_EXIT_USAGE;
	}
	if (metrics_arg) {
#ifdef RY_WITH_MICROHTTPD
		struct sockaddr_storage ss;
		socklen_t sl = sizeof(ss);
		char h[RY_ADDR_MAX], port[8];

		/* before the rails: a taken port fails fast */
		mfd = metrics_listen(metrics_arg);
		if (mfd < 0)
			return RY_EXIT_FAIL;
		if (!getsockname(mfd, (struct sockaddr *)&ss, &sl) &&
		    !getnameinfo((struct sockaddr *)&ss, sl, h, sizeof(h), port,
				 sizeof(port), NI_NUMERICHOST | NI_NUMERICSERV))
			snprintf(metrics_url, sizeof(metrics_url),
				 strchr(h, ':') ? "http://[%s]:%s/metrics"
						: "http://%s:%s/metrics",
				 h, port);
#else
		fprintf(
		    stderr,
		    "railyard serve: --metrics: built without libmicrohttpd "
		    "(install libmicrohttpd-dev and rebuild)\n");
		return RY_EXIT_FAIL;
#endif
	}
	sv.file = file;
	if (cli_start(file, &sv.cfg, &sv.mgr)) {
		if (mfd >= 0)
			close(mfd);
		return RY_EXIT_FAIL;
	}
	ret =
	    cli_targets_create(sv.mgr, region, (unsigned)targets, &sv.targets);
	if (ret) {
		fprintf(stderr, "railyard serve: targets: %s\n",
			strerror(-ret));
		goto out;
	}
	ry_set_recv_cb(sv.mgr, on_recv, &sv);
	ry_set_event_cb(sv.mgr, on_event, &sv);

	if (sock_arg)
		snprintf(sock, sizeof(sock), "%s", sock_arg);
	else
		cli_status_path(sv.cfg->node, sock, sizeof(sock));
	lfd = listen_unix(sock);
	if (lfd < 0) {
		fprintf(stderr, "railyard serve: status socket %s: %s\n", sock,
			strerror(-lfd));
		goto out;
	}
	sigemptyset(&mask);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGHUP);
	sigprocmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);
	sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	ep = epoll_create1(EPOLL_CLOEXEC);
	if (sfd < 0 || ep < 0)
		goto out;
	ev = (struct epoll_event){.events = EPOLLIN, .data.fd = sfd};
	epoll_ctl(ep, EPOLL_CTL_ADD, sfd, &ev);
	ev = (struct epoll_event){.events = EPOLLIN, .data.fd = lfd};
	epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &ev);

#ifdef RY_WITH_MICROHTTPD
	if (mfd >= 0) {
		if (cli_mhttp_start(sv.mgr, mfd, token_arg, &httpd))
			goto out;
		mfd = -1; /* the daemon's now */
	}
#endif

	ry_manager_control_addr(sv.mgr, ctl, sizeof(ctl));
	fprintf(stderr,
		"railyard serve: node %s, control %s, %d rails, targets "
		"%lu x %zu bytes, status %s%s%s\n",
		sv.cfg->node, ctl, ry_rail_count(sv.mgr), targets, region, sock,
		*metrics_url ? ", metrics " : "", metrics_url);
	/* rails open, control channel listening, status and metrics served */
	notify_status(&sv, "READY=1\n");
	if (sd_watchdog_enabled(0, &wd_usec) > 0 && wd_usec)
		wd_next = now_us() + wd_usec / 2;
	else
		wd_usec = 0;
	/* the library's threads run progress (and the callbacks above),
	 * one per rail up to the cores (progress_threads); this loop only
	 * answers signals and status requests */
	ret = ry_progress_thread_start(sv.mgr);
	if (ret) {
		fprintf(stderr, "railyard serve: progress threads: %s\n",
			strerror(-ret));
		goto out;
	}
	for (;;) {
		struct epoll_event evs[4];
		int n = 100;
		bool stop = false, dirty;

		pthread_mutex_lock(&sv.lock);
		dirty = sv.status_dirty;
		pthread_mutex_unlock(&sv.lock);
		if (dirty)
			notify_status(&sv, "");
		if (wd_usec && now_us() >= wd_next) {
			sd_notify(0, "WATCHDOG=1");
			wd_next = now_us() + wd_usec / 2;
		}

		if (wd_usec) {
			uint64_t t = now_us();

			if (wd_next > t && (wd_next - t) / 1000 < (uint64_t)n)
				n = (int)((wd_next - t) / 1000) + 1;
		}
		n = epoll_wait(ep, evs, 4, n);
		for (int i = 0; i < n; i++) {
			if (evs[i].data.fd == sfd) {
				struct signalfd_siginfo si;

				while (read(sfd, &si, sizeof(si)) ==
				       (ssize_t)sizeof(si)) {
					if (si.ssi_signo == SIGHUP)
						serve_reload(&sv, NULL);
					else
						stop = true;
				}
			} else if (evs[i].data.fd == lfd) {
				answer_status(&sv, lfd);
			}
		}
		if (stop)
			break;
		cli_targets_sweep(sv.targets);
	}
	sd_notify(0, "STOPPING=1\nSTATUS=shutting down");
	fprintf(stderr,
		"railyard serve: shutting down (%llu hellos answered)\n",
		(unsigned long long)sv.hellos);
	rc = RY_EXIT_OK;
out:
#ifdef RY_WITH_MICROHTTPD
	/* before the manager goes: the handler renders from it */
	cli_mhttp_stop(httpd);
#endif
	if (mfd >= 0)
		close(mfd);
	if (lfd >= 0) {
		close(lfd);
		unlink(sock);
	}
	if (sfd >= 0)
		close(sfd);
	if (ep >= 0)
		close(ep);
	if (sv.mgr) {
		/* no callback runs once the threads are gone; the targets
		 * go after the callbacks, before the manager */
		ry_progress_thread_stop(sv.mgr);
		ry_set_recv_cb(sv.mgr, NULL, NULL);
		ry_set_event_cb(sv.mgr, NULL, NULL);
	}
	cli_targets_destroy(sv.targets);
	ry_manager_destroy(sv.mgr);
	ry_config_free(sv.cfg);
	return rc;
}
