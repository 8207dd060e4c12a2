// SPDX-License-Identifier: BSD-2-Clause
/* The railyard tool as an operator runs it: exit codes and what it prints. */
#include <check.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

/* Run the CLI with args through sh; capture stdout+stderr; return exit. */
static int run(const char *args, char *out, size_t len)
{
	char cmd[1024];
	FILE *p;
	size_t n;
	int st;

	snprintf(cmd, sizeof(cmd), "'%s' %s 2>&1", RY_CLI, args);
	p = popen(cmd, "r");
	ck_assert_ptr_nonnull(p);
	n = fread(out, 1, len - 1, p);
	out[n] = 0;
	st = pclose(p);
	ck_assert(WIFEXITED(st));
	return WEXITSTATUS(st);
}

static char out[65536];

/* The file at path into out; false if it cannot be opened (yet). */
static bool slurp(const char *path)
{
	FILE *f = fopen(path, "r");

	if (!f)
		return false;
	out[fread(out, 1, sizeof(out) - 1, f)] = 0;
	fclose(f);
	return true;
}

/* The number after "key": in out (0 if the key is not there). */
static double json_num(const char *key)
{
	char pat[64];
	const char *v;

	snprintf(pat, sizeof(pat), "\"%s\":", key);
	v = strstr(out, pat);
	ck_assert_msg(v, "no %s in %s", key, out);
	return v ? strtod(v + strlen(pat), NULL) : 0;
}

START_TEST(test_check_config_good)
{
	ck_assert_int_eq(
	    run("check-config " RY_ETC "/railyard.conf", out, sizeof(out)), 0);
	/* the effective config makes every default explicit */
	ck_assert_ptr_nonnull(strstr(out, "fragment_size = 4096"));
	ck_assert_ptr_nonnull(strstr(out, "heartbeat_ms = 10"));
	ck_assert_ptr_nonnull(strstr(out, "rail r0 {"));
}
END_TEST

START_TEST(test_check_config_bad)
{
	char dir[] = "/tmp/ry-cli-XXXXXX", path[64], args[128];
	FILE *f;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/bad.conf", dir);
	f = fopen(path, "w");
	fputs("rail r0 {\n provider = verbs\n}\nfragment_size = 1000\n"
	      "failover {\n heartbeat_ms = 500\n}\n",
	      f);
	fclose(f);
	snprintf(args, sizeof(args), "check-config %s", path);
	ck_assert_int_eq(run(args, out, sizeof(out)), 1);
	snprintf(args, sizeof(args), "%s:1: verbs rail 'r0' has no device",
		 path);
	ck_assert_msg(strstr(out, args), "output: %s", out);
	snprintf(args, sizeof(args), "%s:4: fragment_size 1000", path);
	ck_assert_msg(strstr(out, args), "output: %s", out);
	snprintf(args, sizeof(args), "%s:6: heartbeat_ms (500)", path);
	ck_assert_msg(strstr(out, args), "output: %s", out);
	ck_assert_ptr_nonnull(strstr(out, "hint: "));
	ck_assert_ptr_nonnull(strstr(out, "3 problems found"));
	unlink(path);
	rmdir(dir);
}
END_TEST

START_TEST(test_check_config_missing)
{
	ck_assert_int_eq(
	    run("check-config /nonexistent.conf", out, sizeof(out)), 1);
	ck_assert_ptr_nonnull(strstr(out, "/nonexistent.conf: cannot read"));
}
END_TEST

START_TEST(test_usage)
{
	ck_assert_int_eq(run("", out, sizeof(out)), 2);
	ck_assert_int_eq(run("no-such-command", out, sizeof(out)), 2);
	ck_assert_ptr_nonnull(strstr(out, "unknown command"));
	ck_assert_int_eq(run("check-config", out, sizeof(out)), 2);
	ck_assert_int_eq(run("--help", out, sizeof(out)), 0);
	ck_assert_ptr_nonnull(strstr(out, "check-config"));
	/* test tools (tests/swarm's ry-swarm) are not the product's */
	ck_assert_ptr_null(strstr(out, "swarm"));
	ck_assert_int_eq(run("swarm --help", out, sizeof(out)), 2);
	ck_assert_int_eq(run("check-config --help", out, sizeof(out)), 0);
	ck_assert_ptr_nonnull(strstr(out, "Exit codes"));
}
END_TEST

/* The main job: two nodes, four soft rails, one pulled and restored, and
 * nothing lost. */
START_TEST(test_demo_runs)
{
	ck_assert_msg(run("demo --duration 4", out, sizeof(out)) == 0,
		      "demo failed: %s", out);
	ck_assert_ptr_nonnull(strstr(out, "pulling rail r1"));
	ck_assert_ptr_nonnull(strstr(out, "r1 link-down"));
	ck_assert_ptr_nonnull(strstr(out, "plugging rail r1 back"));
	ck_assert_msg(strstr(out, "r1 down: detected in"), "%s", out);
	ck_assert_msg(strstr(out, " 0 failed, "), "%s", out);
	ck_assert_msg(strstr(out, " 0 bytes corrupted, "), "%s", out);
	ck_assert_msg(strstr(out, "verdict: nothing lost"), "%s", out);
	ck_assert_int_eq(run("demo --duration 1", out, sizeof(out)), 2);
	/* the same over tcp rails (rails/tcp) */
	ck_assert_msg(run("demo --duration 4 --rails tcp", out, sizeof(out)) ==
			  0,
		      "demo --rails tcp failed: %s", out);
	ck_assert_ptr_nonnull(strstr(out, "over 4 tcp rails"));
	ck_assert_msg(strstr(out, "r1 down: detected in"), "%s", out);
	ck_assert_msg(strstr(out, " 0 failed, "), "%s", out);
	ck_assert_msg(strstr(out, " 0 bytes corrupted, "), "%s", out);
	ck_assert_msg(strstr(out, "verdict: nothing lost"), "%s", out);
	ck_assert_int_eq(run("demo --rails quic", out, sizeof(out)), 2);
}
END_TEST

/* On a machine without RDMA devices (this one, CI) devices says so plainly
 * and exits 1; with devices it lists them and exits 0.  Either way the
 * loopback interface is listed for soft rails. */
START_TEST(test_devices)
{
	bool have = access("/sys/class/infiniband", F_OK) == 0;
	int rc = run("devices", out, sizeof(out));

	ck_assert_ptr_nonnull(strstr(out, "Interfaces (soft rails)"));
	ck_assert_ptr_nonnull(strstr(out, "lo "));
	if (!have) {
		ck_assert_int_eq(rc, 1);
		ck_assert_ptr_nonnull(strstr(out, "no RDMA device found"));
		ck_assert_ptr_nonnull(strstr(out, "rdma link"));
	}
	rc = run("devices --json", out, sizeof(out));
	ck_assert_int_eq(rc, have ? rc : 1);
	ck_assert_ptr_nonnull(strstr(out, "\"rdma_ports\":["));
	ck_assert_ptr_nonnull(strstr(out, "\"name\":\"lo\""));
	ck_assert_int_eq(run("devices --bogus", out, sizeof(out)), 2);
}
END_TEST

/* Start serve -c conf [--targets N] with stderr to log; wait for its
 * control port. */
static pid_t spawn_serve(const char *conf, const char *sock, const char *log,
			 const char *targets, unsigned *port)
{
	char line[512] = "";
	pid_t pid = fork();
	FILE *f;

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		freopen(log, "w", stderr);
		if (targets)
			execl(RY_CLI, RY_CLI, "serve", "-c", conf, "--socket",
			      sock, "--targets", targets, (char *)NULL);
		else
			execl(RY_CLI, RY_CLI, "serve", "-c", conf, "--socket",
			      sock, (char *)NULL);
		_exit(127);
	}
	*port = 0;
	for (int i = 0; i < 100 && !*port; i++) {
		usleep(50000);
		f = fopen(log, "r");
		if (f && fgets(line, sizeof(line), f)) {
			char *c = strstr(line, "control 127.0.0.1:");

			if (c)
				sscanf(c, "control 127.0.0.1:%u", port);
		}
		if (f)
			fclose(f);
	}
	ck_assert_msg(*port, "serve did not start: %s", line);
	return pid;
}

/* serve + bench --verify + status on loopback, as an operator runs them;
 * each peer incarnation gets a region of its own, at most --targets of
 * them; SIGTERM stops serve cleanly. */
START_TEST(test_serve_bench_status)
{
	char dir[] = "/tmp/ry-serve-XXXXXX", path[128], args[512], log[128];
	char sock[128];
	unsigned port = 0;
	pid_t pid;
	FILE *f;
	int st;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/b.conf", dir);
	f = fopen(path, "w");
	/* bench's control port is the kernel's choice: admit loopback */
	fputs(
	    "node = sb\ncontrol = \"127.0.0.1:0\"\n"
	    "accept = {\"127.0.0.0/8\"}\n"
	    "rail r0 { provider = soft network = n0 address = \"127.0.0.1\" }\n"
	    "rail r1 { provider = soft network = n1 address = \"127.0.0.1\" "
	    "}\n",
	    f);
	fclose(f);
	snprintf(log, sizeof(log), "%s/serve.log", dir);
	snprintf(sock, sizeof(sock), "%s/b.sock", dir);
	pid = spawn_serve(path, sock, log, "1", &port);

	snprintf(path, sizeof(path), "%s/a.conf", dir);
	f = fopen(path, "w");
	fprintf(
	    f,
	    "node = sa\ncontrol = \"127.0.0.1:0\"\n"
	    "rail r0 { provider = soft network = n0 address = \"127.0.0.1\" }\n"
	    "rail r1 { provider = soft network = n1 address = \"127.0.0.1\" }\n"
	    "peer sb { address = \"127.0.0.1:%u\" }\n",
	    port);
	fclose(f);
	snprintf(args, sizeof(args),
		 "bench -c %s --peer sb --count 40 --size 256K --verify --json",
		 path);
	ck_assert_msg(run(args, out, sizeof(out)) == 0, "%s", out);
	ck_assert_ptr_nonnull(strstr(out, "\"ops_ok\":80,\"ops_failed\":0"));
	ck_assert_ptr_nonnull(strstr(out, "\"verify_errors\":0"));
	ck_assert_ptr_nonnull(strstr(out, "verdict: nothing lost"));
	ck_assert_ptr_nonnull(strstr(out, "per rail"));

	/* sa's region is held (its session is only just lost): with
	 * --targets 1 another node is refused, and told why */
	snprintf(args, sizeof(args), "%s/c.conf", dir);
	f = fopen(args, "w");
	fprintf(
	    f,
	    "node = sc\ncontrol = \"127.0.0.1:0\"\n"
	    "rail r0 { provider = soft network = n0 address = \"127.0.0.1\" }\n"
	    "peer sb { address = \"127.0.0.1:%u\" }\n",
	    port);
	fclose(f);
	snprintf(args, sizeof(args),
		 "bench -c %s/c.conf --peer sb --count 4 --size 4K --json",
		 dir);
	ck_assert_int_eq(run(args, out, sizeof(out)), 1);
	ck_assert_msg(strstr(out, "peer sb gives us no target region: all 1 "
				  "target regions are taken"),
		      "%s", out);
	/* sa again is a new incarnation: its old region goes, a new one
	 * comes (nothing of the old incarnation's lands in it) */
	snprintf(args, sizeof(args),
		 "bench -c %s --peer sb --count 8 --size 64K --verify --json",
		 path);
	ck_assert_msg(run(args, out, sizeof(out)) == 0, "%s", out);
	ck_assert_ptr_nonnull(strstr(out, "\"verify_errors\":0"));
	ck_assert(slurp(log));
	ck_assert_msg(strstr(out, "no target for peer sc: all 1 target "
				  "regions are taken"),
		      "%s", out);
	ck_assert_msg(
	    strstr(out, "target of peer sa released (the peer restarted)"),
	    "%s", out);
	{
		const char *a = strstr(out, "target for peer sa (");

		ck_assert_ptr_nonnull(a);
		ck_assert_msg(strstr(a + 1, "target for peer sa ("),
			      "no second region for sa's new incarnation: %s",
			      out);
	}

	/* --rate 50 for 2 s starts at most 101 writes (each read back) */
	snprintf(args, sizeof(args),
		 "bench -c %s --peer sb --duration 2 --rate 50 --size 4K "
		 "--verify --json",
		 path);
	ck_assert_msg(run(args, out, sizeof(out)) == 0, "%s", out);
	{
		double n = json_num("ops_ok");

		ck_assert_msg(n > 0 && n <= 2 * 101,
			      "--rate 50: %.0f ops in 2 s", n);
	}

	/* a run of an hour stopped by SIGTERM once it is moving data: what
	 * was in flight completes, it reports the time it ran, exit 0 */
	{
		char jpath[128], elog[128];
		pid_t b;
		bool started = false;

		snprintf(jpath, sizeof(jpath), "%s/stop.json", dir);
		snprintf(elog, sizeof(elog), "%s/stop.log", dir);
		b = fork();
		ck_assert_int_ge(b, 0);
		if (b == 0) {
			freopen(jpath, "w", stdout);
			freopen(elog, "w", stderr);
			execl(RY_CLI, RY_CLI, "bench", "-c", path, "--peer",
			      "sb", "--duration", "3600", "--size", "64K",
			      "--depth", "2", "--verify", "--json",
			      (char *)NULL);
			_exit(127);
		}
		for (int i = 0; i < 200 && !started; i++) {
			usleep(50000);
			started = slurp(elog) && strstr(out, "bench to sb");
		}
		ck_assert_msg(started, "bench did not start: %s", out);
		usleep(300000);
		/* the client is listed while it is there (one that has left
		 * said goodbye and is forgotten) */
		snprintf(args, sizeof(args), "status --socket %s", sock);
		ck_assert_int_eq(run(args, out, sizeof(out)), 0);
		ck_assert_ptr_nonnull(strstr(out, "node sb"));
		ck_assert_msg(strstr(out, "sa "), "%s", out);
		kill(b, SIGTERM);
		ck_assert_int_eq(waitpid(b, &st, 0), b);
		ck_assert(slurp(jpath));
		ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0,
			      "bench stopped by SIGTERM: status %d: %s", st,
			      out);
		ck_assert_msg(strstr(out, "\"ops_failed\":0,"), "%s", out);
		ck_assert_msg(strstr(out, "\"verify_errors\":0,"), "%s", out);
		ck_assert_msg(json_num("ops_ok") > 0, "%s", out);
		ck_assert_double_lt(json_num("seconds"), 60.0);
		/* a depth under the config's cap keeps the cap */
		ck_assert_double_eq(json_num("ops_in_flight"), 8);
	}

	/* --depth 64 is 64 in flight: the config's ops_in_flight (8) is
	 * raised to it, or 56 would wait in the manager's queue and the run
	 * would measure depth 8 */
	snprintf(args, sizeof(args),
		 "bench -c %s --peer sb --duration 1 --size 4K --depth 64 "
		 "--json",
		 path);
	ck_assert_msg(run(args, out, sizeof(out)) == 0, "%s", out);
	ck_assert_double_eq(json_num("depth"), 64);
	ck_assert_double_eq(json_num("ops_in_flight"), 64);
	ck_assert_msg(strstr(out, "\"ops_failed\":0,"), "%s", out);

	/* a read bench reads data: each slot writes its slice once first
	 * (ops_laid, not in ops_ok), never memory serve did not write */
	snprintf(args, sizeof(args),
		 "bench -c %s --peer sb --op read --count 40 --size 64K "
		 "--depth 4 --json",
		 path);
	ck_assert_msg(run(args, out, sizeof(out)) == 0, "%s", out);
	ck_assert_double_eq(json_num("ops_ok"), 40);
	ck_assert_double_eq(json_num("ops_laid"), 4);
	ck_assert_double_eq(json_num("bytes"), 40 * 65536);
	ck_assert_msg(strstr(out, "\"ops_failed\":0,"), "%s", out);
	/* and one whose slots do not fit serve's 64 MiB region is told why */
	snprintf(args, sizeof(args),
		 "bench -c %s --peer sb --op read --count 8 --size 16M "
		 "--depth 5 --json",
		 path);
	ck_assert_int_eq(run(args, out, sizeof(out)), 1);
	ck_assert_msg(strstr(out, "write rejected (is the peer's target "
				  "region large enough for depth x size?)"),
		      "%s", out);

	snprintf(args, sizeof(args), "status --socket %s", sock);
	ck_assert_int_eq(run(args, out, sizeof(out)), 0);
	ck_assert_ptr_nonnull(strstr(out, "node sb"));
	snprintf(args, sizeof(args), "status --json --socket %s", sock);
	ck_assert_int_eq(run(args, out, sizeof(out)), 0);
	ck_assert_ptr_nonnull(
	    strstr(out, "\"rails\":[{\"name\":\"r0\",\"link\":\"up\""));

	kill(pid, SIGTERM);
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert(WIFEXITED(st));
	ck_assert_int_eq(WEXITSTATUS(st), 0);
	snprintf(args, sizeof(args), "status --socket %s", sock);
	ck_assert_int_eq(run(args, out, sizeof(out)), 1);
	ck_assert_ptr_nonnull(strstr(out, "no running node answers"));

	snprintf(args, sizeof(args), "rm -rf '%s'", dir);
	ck_assert_int_eq(system(args), 0);
}
END_TEST

/* serve with a verbs rail and no RDMA device (this machine, CI): with
 * --require-all-rails it says so plainly, names the way out, and exits 1
 * without starting anything (no status socket left behind); without, it
 * starts degraded and `status` shows the rail missing, and why. */
START_TEST(test_serve_no_device)
{
	char dir[] = "/tmp/ry-cli-XXXXXX", path[64], sock[64], args[256];
	FILE *f;

	if (access("/sys/class/infiniband", F_OK) == 0)
		return; /* devices here: the hw suites cover serve over them */
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/verbs.conf", dir);
	snprintf(sock, sizeof(sock), "%s/s.sock", dir);
	f = fopen(path, "w");
	fputs("node = \"a\"\ncontrol = \"127.0.0.1:0\"\n"
	      "rail r0 {\n provider = verbs\n network = \"n0\"\n"
	      " device = \"mlx5_0\"\n}\n",
	      f);
	fclose(f);
	snprintf(args, sizeof(args),
		 "serve -c %s --socket %s --require-all-rails", path, sock);
	ck_assert_int_eq(run(args, out, sizeof(out)), 1);
#ifdef RY_WITH_VERBS
	ck_assert_msg(strstr(out, "no RDMA device found"), "output: %s", out);
	ck_assert_msg(strstr(out, "rdma link"), "output: %s", out);
	ck_assert_msg(strstr(out, "a configured device, port or interface is "
				  "missing (require_all_rails; see railyard "
				  "devices)"),
		      "output: %s", out);
#else
	ck_assert_msg(strstr(out, "not implemented in this build"),
		      "output: %s", out);
#endif
	snprintf(args, sizeof(args), "cannot start node a from %s", path);
	ck_assert_msg(strstr(out, args), "output: %s", out);
	ck_assert_int_ne(access(sock, F_OK), 0);
#ifdef RY_WITH_VERBS
	{
		char log[96];
		pid_t pid;
		int st, i;

		snprintf(log, sizeof(log), "%s/serve.log", dir);
		pid = fork();
		ck_assert_int_ge(pid, 0);
		if (pid == 0) {
			freopen(log, "w", stderr);
			execl(RY_CLI, RY_CLI, "serve", "-c", path, "--socket",
			      sock, (char *)NULL);
			_exit(127);
		}
		for (i = 0; i < 100 && access(sock, F_OK); i++)
			usleep(50000);
		snprintf(args, sizeof(args), "status --json --socket %s", sock);
		st = run(args, out, sizeof(out));
		kill(pid, SIGTERM);
		waitpid(pid, NULL, 0);
		ck_assert_msg(st == 0, "status: %s", out);
		ck_assert_msg(strstr(out, "{\"name\":\"r0\",\"link\":\"down\","
					  "\"up\":0,\"reason\":\"no RDMA "
					  "device found"),
			      "status: %s", out);
		ck_assert(slurp(log));
		ck_assert_msg(strstr(out, "rail r0: absent: no RDMA device "
					  "found"),
			      "log: %s", out);
		unlink(log);
	}
#endif
	unlink(path);
	rmdir(dir);
}
END_TEST

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
}

static bool file_has(const char *path, const char *what)
{
	static char buf[65536];
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f)
		return false;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = 0;
	fclose(f);
	return strstr(buf, what) != NULL;
}

/*
 * railyard reload: a file with a problem is refused with FILE:LINE and
 * exit 1, and changes nothing; a good one adds a rail; SIGHUP does the
 * same and says so in serve's log.
 */
START_TEST(test_serve_reload)
{
	static const char base[] = "node = sr\ncontrol = \"127.0.0.1:0\"\n"
				   "rail r0 { provider = soft network = n0 "
				   "address = \"127.0.0.1\" }\n";
	char dir[] = "/tmp/ry-reload-XXXXXX", path[128], args[512], log[128];
	char sock[128], text[1024], want[256];
	unsigned port;
	pid_t pid;
	int st;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/r.conf", dir);
	snprintf(log, sizeof(log), "%s/serve.log", dir);
	snprintf(sock, sizeof(sock), "%s/r.sock", dir);
	write_file(path, base);
	pid = spawn_serve(path, sock, log, NULL, &port);
	snprintf(args, sizeof(args), "reload --socket %s", sock);

	/* a bad file: unknown option on line 4 */
	snprintf(text, sizeof(text), "%sno_such_option = 1\n", base);
	write_file(path, text);
	ck_assert_int_eq(run(args, out, sizeof(out)), 1);
	snprintf(want, sizeof(want), "%s:4: unknown option 'no_such_option'",
		 path);
	ck_assert_msg(strstr(out, want), "output: %s", out);
	ck_assert_msg(strstr(out, "nothing was changed"), "output: %s", out);

	/* valid, but asks what only a restart can do: line 4 again */
	snprintf(text, sizeof(text),
		 "%sfragment_size = 8192\n"
		 "rail r1 { provider = soft network = n1 address = "
		 "\"127.0.0.1\" }\n",
		 base);
	write_file(path, text);
	ck_assert_int_eq(run(args, out, sizeof(out)), 1);
	snprintf(want, sizeof(want),
		 "%s:4: fragment_size cannot change while running", path);
	ck_assert_msg(strstr(out, want), "output: %s", out);
	snprintf(args, sizeof(args), "status --socket %s", sock);
	ck_assert_int_eq(run(args, out, sizeof(out)), 0);
	ck_assert_msg(!strstr(out, "r1 "), "r1 was added: %s", out);

	/* good: r1 comes up */
	snprintf(text, sizeof(text),
		 "%srail r1 { provider = soft network = n1 address = "
		 "\"127.0.0.1\" }\n",
		 base);
	write_file(path, text);
	snprintf(args, sizeof(args), "reload --socket %s", sock);
	ck_assert_msg(run(args, out, sizeof(out)) == 0, "%s", out);
	ck_assert_msg(strstr(out, "ok: "), "output: %s", out);
	snprintf(args, sizeof(args), "status --socket %s", sock);
	ck_assert_int_eq(run(args, out, sizeof(out)), 0);
	ck_assert_msg(strstr(out, "r1 "), "r1 missing: %s", out);

	/* SIGHUP: r0 removed; and a bad file by SIGHUP is logged */
	write_file(path, "node = sr\ncontrol = \"127.0.0.1:0\"\n"
			 "rail r1 { provider = soft network = n1 address = "
			 "\"127.0.0.1\" }\n");
	kill(pid, SIGHUP);
	for (int i = 0; i < 100 && !file_has(log, "ok: "); i++)
		usleep(50000);
	ck_assert_msg(file_has(log, "ok: "), "no reload in the log");
	ck_assert_int_eq(run(args, out, sizeof(out)), 0);
	ck_assert_msg(!strstr(out, "r0 "), "r0 still there: %s", out);

	kill(pid, SIGTERM);
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert(WIFEXITED(st));
	ck_assert_int_eq(WEXITSTATUS(st), 0);
	snprintf(args, sizeof(args), "rm -rf '%s'", dir);
	ck_assert_int_eq(system(args), 0);
}
END_TEST

/*
 * `status -c FILE` needs only the node's name from FILE: a key_file that
 * cannot be read (being replaced, say) does not keep it from the running
 * node.  A stand-in for serve listens where serve's status socket would
 * be for that name (RUNTIME_DIRECTORY, as under systemd) and answers.
 */
START_TEST(test_status_broken_key_file)
{
	char dir[] = "/tmp/ry-status-XXXXXX", path[128], args[256];
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	pid_t pid;
	FILE *f;
	int fd, st;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/n.conf", dir);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fprintf(f,
		"node = keyless\nkey_file = \"%s/missing.key\"\n"
		"rail r0 { provider = soft network = n0 address = "
		"\"127.0.0.1\" }\n",
		dir);
	fclose(f);
	/* the file does not validate: check-config says why */
	snprintf(args, sizeof(args), "check-config %s", path);
	ck_assert_int_eq(run(args, out, sizeof(out)), 1);
	ck_assert_ptr_nonnull(strstr(out, "missing.key"));

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s/keyless.sock", dir);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(listen(fd, 1), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (!pid) {
		static const char answer[] = "node keyless: 1 rail\n";
		char req[64];
		int c = accept(fd, NULL, NULL);

		if (c < 0 || read(c, req, sizeof(req)) <= 0 ||
		    write(c, answer, sizeof(answer) - 1) < 0)
			_exit(1);
		close(c);
		_exit(0);
	}
	close(fd);
	setenv("RUNTIME_DIRECTORY", dir, 1);
	snprintf(args, sizeof(args), "status -c %s", path);
	st = run(args, out, sizeof(out));
	unsetenv("RUNTIME_DIRECTORY");
	if (st)
		kill(pid, SIGKILL);
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert_msg(strstr(out, "node keyless: 1 rail"), "status: %s", out);
	snprintf(args, sizeof(args), "rm -rf '%s'", dir);
	ck_assert_int_eq(system(args), 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("cli");
	TCase *tc = tcase_create("commands");
	SRunner *sr;
	int failed;

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_check_config_good);
	tcase_add_test(tc, test_check_config_bad);
	tcase_add_test(tc, test_check_config_missing);
	tcase_add_test(tc, test_usage);
	tcase_add_test(tc, test_demo_runs);
	tcase_add_test(tc, test_devices);
	tcase_add_test(tc, test_serve_bench_status);
	tcase_add_test(tc, test_serve_no_device);
	tcase_add_test(tc, test_serve_reload);
	tcase_add_test(tc, test_status_broken_key_file);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
