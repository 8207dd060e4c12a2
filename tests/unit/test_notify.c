// SPDX-License-Identifier: BSD-2-Clause
/*
 * serve under systemd's notify protocol, without systemd: the test binds
 * the datagram socket that NOTIFY_SOCKET names, execs serve with the
 * watchdog variables (WATCHDOG_PID is the child's own pid, which exec
 * keeps, since sd_watchdog_enabled() ignores a watchdog meant for another
 * process) and listens for READY=1, STATUS= and repeated WATCHDOG=1.
 */
#include <check.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

/* What serve said on the notify socket so far. */
struct notes {
	unsigned ready, watchdogs, statuses, reloading;
	double first_wd, last_wd;
	char status[256];
};

static void note(struct notes *n, const char *line)
{
	if (!strcmp(line, "READY=1")) {
		/* a second READY=1 only ends a reload */
		ck_assert_msg(!n->ready || n->reloading,
			      "READY=1 again without RELOADING=1");
		n->ready++;
	} else if (!strcmp(line, "RELOADING=1")) {
		n->reloading++;
	} else if (!strncmp(line, "STATUS=", 7)) {
		n->statuses++;
		snprintf(n->status, sizeof(n->status), "%s", line + 7);
	} else if (!strcmp(line, "WATCHDOG=1")) {
		ck_assert_msg(n->ready, "watchdog before READY");
		if (!n->watchdogs++)
			n->first_wd = now_s();
		n->last_wd = now_s();
	}
}

/* Take the notifications until done(n) or secs pass. */
static void listen_until(int fd, struct notes *n,
			 bool (*done)(const struct notes *), double secs)
{
	double t0 = now_s();

	while (now_s() - t0 < secs && !done(n)) {
		char buf[1024], *line, *save;
		ssize_t got = recv(fd, buf, sizeof(buf) - 1, 0);

		if (got <= 0)
			continue;
		buf[got] = 0;
		for (line = strtok_r(buf, "\n", &save); line;
		     line = strtok_r(NULL, "\n", &save))
			note(n, line);
	}
}

static bool up_and_pinging(const struct notes *n)
{
	return n->ready && n->watchdogs >= 5;
}

static bool reloaded(const struct notes *n)
{
	return n->ready >= 2;
}

START_TEST(test_serve_notify)
{
	char dir[] = "/tmp/ry-notify-XXXXXX", conf[64], sock[64], ns[64];
	char cmd[256];
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct timeval tv = {.tv_usec = 100000};
	struct notes nt = {0};
	unsigned stopping = 0;
	pid_t pid;
	FILE *f;
	int fd, st;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(conf, sizeof(conf), "%s/n.conf", dir);
	f = fopen(conf, "w");
	ck_assert_ptr_nonnull(f);
	fputs(
	    "node = sn\ncontrol = \"127.0.0.1:0\"\n"
	    "rail r0 { provider = soft network = n0 address = \"127.0.0.1\" }\n"
	    "rail r1 { provider = soft network = n1 address = \"127.0.0.1\" "
	    "}\n",
	    f);
	fclose(f);
	snprintf(sock, sizeof(sock), "%s/s.sock", dir);
	snprintf(ns, sizeof(ns), "%s/notify", dir);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", ns);
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));

	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		char p[32];

		snprintf(p, sizeof(p), "%d", (int)getpid());
		setenv("NOTIFY_SOCKET", ns, 1);
		setenv("WATCHDOG_USEC", "200000", 1); /* pings every 100 ms */
		setenv("WATCHDOG_PID", p, 1);
		execl(RY_CLI, RY_CLI, "serve", "-c", conf, "--socket", sock,
		      (char *)NULL);
		_exit(127);
	}
	listen_until(fd, &nt, up_and_pinging, 10);
	ck_assert_uint_eq(nt.ready, 1);
	ck_assert_uint_ge(nt.statuses, 1);
	ck_assert_msg(!strcmp(nt.status, "2 rails, 2 up, 0 peers"), "STATUS=%s",
		      nt.status);
	ck_assert_uint_ge(nt.watchdogs, 5);
	/* about every 100 ms: 4 intervals in 0.2..2 s, not a burst */
	ck_assert_msg(
	    nt.last_wd - nt.first_wd > 0.2 && nt.last_wd - nt.first_wd < 2,
	    "%u pings in %.3f s", nt.watchdogs, nt.last_wd - nt.first_wd);

	/* a reload: RELOADING=1, then READY=1 again with the new rails */
	f = fopen(conf, "a");
	ck_assert_ptr_nonnull(f);
	fputs("rail r2 { provider = soft network = n2 address = \"127.0.0.1\" "
	      "}\n",
	      f);
	fclose(f);
	kill(pid, SIGHUP);
	listen_until(fd, &nt, reloaded, 10);
	ck_assert_uint_eq(nt.reloading, 1);
	ck_assert_uint_eq(nt.ready, 2);
	ck_assert_msg(!strcmp(nt.status, "3 rails, 3 up, 0 peers"), "STATUS=%s",
		      nt.status);

	kill(pid, SIGTERM);
	tv.tv_usec = 500000;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	for (int i = 0; i < 20 && !stopping; i++) {
		char buf[1024];
		ssize_t n = recv(fd, buf, sizeof(buf) - 1, 0);

		if (n > 0) {
			buf[n] = 0;
			stopping = strstr(buf, "STOPPING=1") != NULL;
		}
	}
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert(WIFEXITED(st));
	ck_assert_int_eq(WEXITSTATUS(st), 0);
	ck_assert_uint_eq(stopping, 1);
	close(fd);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("notify");
	TCase *tc = tcase_create("serve");
	SRunner *sr;
	int failed;

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_serve_notify);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
