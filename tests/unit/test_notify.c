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

START_TEST(test_serve_notify)
{
	char dir[] = "/tmp/ry-notify-XXXXXX", conf[64], sock[64], ns[64];
	char status[256] = "", cmd[256];
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	struct timeval tv = {.tv_usec = 100000};
	unsigned ready = 0, watchdogs = 0, statuses = 0, stopping = 0;
	unsigned reloading = 0;
	double t0, first_wd = 0, last_wd = 0;
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
	t0 = now_s();
	while (now_s() - t0 < 10 && !(ready && watchdogs >= 5)) {
		char buf[1024];
		ssize_t n = recv(fd, buf, sizeof(buf) - 1, 0);
		char *line, *save;

		if (n <= 0)
			continue;
		buf[n] = 0;
		for (line = strtok_r(buf, "\n", &save); line;
		     line = strtok_r(NULL, "\n", &save)) {
			if (!strcmp(line, "READY=1")) {
				ready++;
			} else if (!strncmp(line, "STATUS=", 7)) {
				statuses++;
				snprintf(status, sizeof(status), "%s",
					 line + 7);
			} else if (!strcmp(line, "WATCHDOG=1")) {
				ck_assert_msg(ready, "watchdog before READY");
				if (!watchdogs++)
					first_wd = now_s();
				last_wd = now_s();
			}
		}
	}
	ck_assert_uint_eq(ready, 1);
	ck_assert_uint_ge(statuses, 1);
	ck_assert_msg(!strcmp(status, "2 rails, 2 up, 0 peers"), "STATUS=%s",
		      status);
	ck_assert_uint_ge(watchdogs, 5);
	/* about every 100 ms: 4 intervals in 0.2..2 s, not a burst */
	ck_assert_msg(last_wd - first_wd > 0.2 && last_wd - first_wd < 2,
		      "%u pings in %.3f s", watchdogs, last_wd - first_wd);

	/* a reload: RELOADING=1, then READY=1 again with the new rails */
	f = fopen(conf, "a");
	ck_assert_ptr_nonnull(f);
	fputs("rail r2 { provider = soft network = n2 address = \"127.0.0.1\" "
	      "}\n",
	      f);
	fclose(f);
	kill(pid, SIGHUP);
	t0 = now_s();
	while (now_s() - t0 < 10 && ready < 2) {
		char buf[1024];
		ssize_t n = recv(fd, buf, sizeof(buf) - 1, 0);
		char *line, *save;

		if (n <= 0)
			continue;
		buf[n] = 0;
		for (line = strtok_r(buf, "\n", &save); line;
		     line = strtok_r(NULL, "\n", &save)) {
			if (!strcmp(line, "RELOADING=1")) {
				reloading++;
			} else if (!strcmp(line, "READY=1")) {
				ck_assert_msg(reloading,
					      "READY before RELOADING");
				ready++;
			} else if (!strncmp(line, "STATUS=", 7))
				snprintf(status, sizeof(status), "%s",
					 line + 7);
		}
	}
	ck_assert_uint_eq(reloading, 1);
	ck_assert_uint_eq(ready, 2);
	ck_assert_msg(!strcmp(status, "3 rails, 3 up, 0 peers"), "STATUS=%s",
		      status);

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
