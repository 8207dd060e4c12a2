// SPDX-License-Identifier: BSD-2-Clause
/*
 * railyard bench and railyard drill: clients of a `railyard serve` peer.
 * Both run the session engine (session.c); bench reports bandwidth and
 * latency with a per-rail breakdown, drill runs verified writes and reads
 * and reports what happened to each rail second by second.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "src/cli/cli.h"
#include "src/cli/node.h"
#include "src/cli/opts.h"
#include "src/cli/session.h"

static const char bench_usage[] =
    "usage: railyard bench -c FILE --peer NAME|ADDR [--op write|read]\n"
    "                      [--size 1M] [--depth 8] [--duration S | --count N]\n"
    "                      [--rate N] [--verify] [--json]\n"
    "\n"
    "Bandwidth and latency against a peer running `railyard serve`, as\n"
    "ib_write_bw does for one HCA: --depth operations of --size bytes in\n"
    "flight (the config's ops_in_flight is raised to --depth if lower),\n"
    "striped over every rail the two nodes share.  --verify reads\n"
    "each written block back and compares it.  --rate N starts at most N\n"
    "operations a second (default: as many as --depth allows; with --verify\n"
    "each is a write and its read-back), for a steady load rather than the\n"
    "most it can do.  Prints a per-rail breakdown;\n"
    "--json prints the result as JSON on stdout (progress on stderr).\n"
    "Default: --op write --size 1M --depth 8 --duration 10.\n"
    "SIGINT or SIGTERM end the run early: operations in flight complete and\n"
    "the results are reported for the time it ran.\n"
    "Exit codes: 0 all operations succeeded and verified, 1 otherwise or\n"
    "cannot start, 2 usage error.\n";

static const char drill_usage[] =
    "usage: railyard drill -c FILE --peer NAME|ADDR [--duration S]\n"
    "                      [--size 1M] [--depth 8] [--csv FILE] [--plot FILE]\n"
    "                      [--load streams|cycle|pairs] [--json]\n"
    "\n"
    "A failover drill: continuous verified writes and reads to a peer\n"
    "running `railyard serve`.  Pull cables while it runs.  Every second it\n"
    "prints per-rail throughput and rail states, and events (link-down,\n"
    "down, replay, fence, up) as they happen; at the end a verdict:\n"
    "operations failed, bytes corrupted, fragments replayed, detection and\n"
    "recovery time per event.  --csv writes per-rail throughput over time,\n"
    "--plot an SVG of it with the events marked.  --json: the result as\n"
    "JSON on stdout (progress on stderr).  --load streams (the default):\n"
    "three quarters of the slots write, a quarter read back and compare\n"
    "what was written, independently, so the throughput moves when a rail\n"
    "does; --load cycle: each slot writes, then reads back (every write\n"
    "checked); --load pairs: in each pair of slots one write and one read.\n"
    "Default: --duration 30.  SIGINT or SIGTERM end it early, with the\n"
    "verdict for the time it ran.\n"
    "If the peer restarts, operations aimed at its old memory fail (they\n"
    "are counted apart), its new target is fetched and the drill goes on.\n"
    "Exit codes: 0 nothing lost (but such operations, once traffic\n"
    "resumed), 1 an operation failed or data differed or cannot start,\n"
    "2 usage error.\n";

/* SIGINT/SIGTERM: end the run as if its duration were over, so a run
 * stopped by hand or by a script (tests/bench/scale.sh stops its clients
 * once a drill step is done) still reports what it saw; a second signal
 * kills as usual (SA_RESETHAND). */
static volatile sig_atomic_t stop_flag;

static void on_stop(int sig)
{
	(void)sig;
	stop_flag = 1;
}

static void catch_stop(void)
{
	struct sigaction sa = {.sa_handler = on_stop,
			       .sa_flags = SA_RESTART | SA_RESETHAND};

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

struct client_args {
	const char *file, *peer, *csv, *plot;
	struct cli_session_opts o;
	bool json;
};

static int parse(int argc, char **argv, bool drill, struct client_args *a)
{
	const char *usage = drill ? drill_usage : bench_usage;
	const char *cmd = drill ? "drill" : "bench";

	a->o.mode = drill ? CLI_SESSION_DRILL : CLI_SESSION_WRITE;
	a->o.size = 1u << 20;
	a->o.depth = 8;
	a->o.duration = drill ? 30 : 10;
	for (int i = 1; i < argc; i++) {
		const char *opt = argv[i],
			   *val = i + 1 < argc ? argv[i + 1] : NULL;
		uint64_t u;

		if (!strcmp(opt, "--help") || !strcmp(opt, "-h")) {
			fputs(usage, stdout);
			return 1;
		} else if (!strcmp(opt, "--json")) {
			a->json = true;
			continue;
		} else if (!strcmp(opt, "--verify") && !drill) {
			a->o.verify = true;
			continue;
		}
		if (!val)
			goto bad;
		i++;
		if (!strcmp(opt, "-c")) {
			a->file = val;
		} else if (!strcmp(opt, "--peer")) {
			a->peer = val;
		} else if (!strcmp(opt, "--op") && !drill) {
			if (!strcmp(val, "write"))
				a->o.mode = CLI_SESSION_WRITE;
			else if (!strcmp(val, "read"))
				a->o.mode = CLI_SESSION_READ;
			else
				goto bad;
		} else if (!strcmp(opt, "--size")) {
			if (!cli_parse_size(val, &a->o.size))
				goto bad;
		} else if (!strcmp(opt, "--depth")) {
			if (!cli_parse_u64(val, &u) || !u || u > 1024)
				goto bad;
			a->o.depth = (unsigned)u;
		} else if (!strcmp(opt, "--duration")) {
			if (!cli_parse_seconds(val, &a->o.duration))
				goto bad;
			a->o.count = 0;
		} else if (!strcmp(opt, "--rate") && !drill) {
			if (!cli_parse_u64(val, &u) || !u || u > 100000000)
				goto bad;
			a->o.rate = (double)u;
		} else if (!strcmp(opt, "--count") && !drill) {
			if (!cli_parse_u64(val, &a->o.count) || !a->o.count)
				goto bad;
			a->o.duration = 0;
		} else if (!strcmp(opt, "--csv") && drill) {
			a->csv = val;
		} else if (!strcmp(opt, "--plot") && drill) {
			a->plot = val;
		} else if (!strcmp(opt, "--load") && drill) {
			if (!strcmp(val, "streams"))
				a->o.load = CLI_LOAD_STREAMS;
			else if (!strcmp(val, "cycle"))
				a->o.load = CLI_LOAD_CYCLE;
			else if (!strcmp(val, "pairs"))
				a->o.load = CLI_LOAD_PAIRS;
			else
				goto bad;
		} else {
			goto bad;
		}
		continue;
	bad:
		fprintf(stderr,
			"railyard %s: bad or unknown option '%s%s%s'\n\n%s",
			cmd, opt, val ? " " : "", val ? val : "", usage);
		return -1;
	}
	if (!a->file || !a->peer) {
		fprintf(stderr,
			"railyard %s: -c FILE and --peer are required\n\n%s",
			cmd, usage);
		return -1;
	}
	return 0;
}

static int write_file(const char *path, const struct cli_report *rep,
		      int (*fn)(const struct cli_report *, FILE *))
{
	FILE *f = fopen(path, "w");
	int ret;

	if (!f) {
		fprintf(stderr, "railyard: cannot write %s: %m\n", path);
		return -errno;
	}
	ret = fn(rep, f);
	if (fclose(f))
		ret = -errno;
	return ret;
}

static void breakdown(struct cli_session *s, FILE *out)
{
	const struct cli_report *rep = cli_session_report(s);
	double sum[CLI_REPORT_MAX_RAILS] = {0}, total = 0;

	for (unsigned i = 0; i < rep->n_samples; i++)
		for (unsigned k = 0; k < rep->n_rails; k++) {
			sum[k] += rep->samples[i].mbyte_s[k];
			total += rep->samples[i].mbyte_s[k];
		}
	fprintf(out, "per rail (mean MB/s, share):\n");
	for (unsigned k = 0; k < rep->n_rails; k++)
		fprintf(out, "  %-8s %9.1f  %5.1f %%\n", rep->rails[k],
			rep->n_samples ? sum[k] / rep->n_samples : 0,
			total > 0 ? 100 * sum[k] / total : 0);
}

static int run_client(int argc, char **argv, bool drill)
{
	struct client_args a = {0};
	struct ry_config *cfg = NULL;
	struct ry_manager *mgr = NULL;
	struct cli_session *s = NULL;
	struct cli_session_result r;
	struct ry_peer *peer;
	int ret, rc = RY_EXIT_FAIL;
	FILE *live;

	ret = parse(argc, argv, drill, &a);
	if (ret)
		return ret > 0 ? RY_EXIT_OK : RY_EXIT_USAGE;
	/* --depth N in flight: the config's ops_in_flight (8 by default)
	 * would hold the rest back in the manager's queue, and depth 64
	 * would measure depth 8 */
	if (cli_start_inflight(a.file, a.o.depth, &cfg, &mgr))
		return RY_EXIT_FAIL;
	a.o.ops_in_flight = cfg->ops_in_flight;
	live = a.json ? stderr : stdout;
	a.o.live = live;
	/* on a terminal the second-by-second line is rewritten in place;
	 * events (drill) still print as lines of their own */
	a.o.live_tty = isatty(fileno(live));
	ret = ry_peer_get(mgr, a.peer, &peer);
	if (ret) {
		fprintf(stderr, "railyard: peer '%s': %s\n", a.peer,
			ret == -ENOENT
			    ? "not in the config and not an ip:port address"
			    : strerror(-ret));
		goto out;
	}
	a.o.stop = &stop_flag;
	catch_stop();
	ret = cli_session_create(mgr, peer, &a.o, &s);
	if (ret)
		goto out;
	if (cli_session_fetch_target(s, 10000))
		goto out;
	cli_session_wait_rails(s, 5000);
	fprintf(live, "%s to %s: %zu-byte operations, %u in flight, %d rails\n",
		drill ? "drill" : "bench", ry_peer_name(peer), a.o.size,
		a.o.depth, ry_rail_count(mgr));
	ret = cli_session_run(s);
	cli_session_result(s, &r);
	if (a.json)
		cli_session_json(s, stdout);
	cli_session_summary(s, live);
	if (!drill)
		breakdown(s, live);
	if (a.csv)
		write_file(a.csv, cli_session_report(s), cli_report_write_csv);
	if (a.plot)
		write_file(a.plot, cli_session_report(s), cli_report_write_svg);
	/* operations that failed only because the peer restarted and took
	 * their target with it are reported, not a failure of the run */
	if (!ret && !r.ops_failed && !r.verify_errors && r.ops_ok && r.resumed)
		rc = RY_EXIT_OK;
out:
	cli_session_destroy(s);
	ry_manager_destroy(mgr);
	ry_config_free(cfg);
	return rc;
}

int cli_bench(int argc, char **argv)
{
	return run_client(argc, argv, false);
}

int cli_drill(int argc, char **argv)
{
	return run_client(argc, argv, true);
}
