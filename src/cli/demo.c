// SPDX-License-Identifier: BSD-2-Clause
/*
 * railyard demo: the main job, with no config.  Two nodes in this process
 * over four soft (or, with --rails tcp, tcp) rails on loopback; node a writes 1
 * MiB operations to node b and reads each back to verify it, pulls one rail a
 * third of the way in and plugs it back at two thirds, and shows per-rail
 * throughput every second, then what happened: bytes moved, operations failed,
 * bytes corrupted, fragments replayed, detection and recovery times.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <railyard/railyard.h>
#include <railyard/testing.h>

#include "src/cli/cli.h"
#include "src/cli/opts.h"
#include "src/cli/session.h"

static const char usage_text[] =
    "usage: railyard demo [--duration S] [--rails soft|tcp] [--json]\n"
    "\n"
    "Run two nodes in this process over four soft rails (UDP; --rails tcp:\n"
    "tcp rails, kernel TCP) on loopback (no config needed).  Node a writes 1 "
    "MiB operations to node b and reads\n"
    "each back to verify it; a third of the way in it pulls rail r1 (link\n"
    "down), at two thirds it plugs it back.  Default --duration 9.\n"
    "Exit codes: 0 nothing lost, 1 an operation failed or data differed or\n"
    "the nodes could not start, 2 usage error.\n";

struct pull {
	struct ry_manager *mgr;
	double duration;
	int state; /* 0 before, 1 pulled, 2 restored */
	FILE *out;
};

static void on_tick(double t, void *arg)
{
	struct pull *p = arg;

	if (p->state == 0 && t >= p->duration / 3) {
		fprintf(p->out, "%8.3f s  pulling rail r1\n", t);
		ry_rail_link(p->mgr, "r1", false);
		p->state = 1;
	} else if (p->state == 1 && t >= 2 * p->duration / 3) {
		fprintf(p->out, "%8.3f s  plugging rail r1 back\n", t);
		ry_rail_link(p->mgr, "r1", true);
		p->state = 2;
	}
}

static int node(const char *name, enum ry_provider provider,
		struct ry_manager **mgr_p, unsigned *inflight)
{
	struct ry_config *cfg;
	int ret = ry_config_demo(&cfg);

	if (ret)
		return ret;
	snprintf(cfg->node, sizeof(cfg->node), "%s", name);
	for (unsigned i = 0; i < cfg->n_rails; i++)
		cfg->rails[i].provider = provider;
	*inflight = cfg->ops_in_flight;
	ret = ry_manager_create(cfg, mgr_p);
	ry_config_free(cfg);
	if (ret)
		fprintf(stderr, "railyard demo: cannot start node %s: %s\n",
			name, strerror(-ret));
	return ret;
}

int cli_demo(int argc, char **argv)
{
	struct cli_session_opts o = {
	    .mode = CLI_SESSION_DRILL,
	    .size = 1u << 20,
	    .depth = 8,
	    .duration = 9,
	    .live = stdout,
	    .tick = on_tick,
	};
	struct ry_manager *a = NULL, *b = NULL;
	struct ry_region *target = NULL;
	struct cli_session *s = NULL;
	struct cli_session_result r;
	struct pull pull = {.out = stdout};
	struct ry_peer *peer;
	uint8_t desc[RY_DESC_MAX];
	char ctl[128];
	enum ry_provider provider = RY_PROVIDER_SOFT;
	bool json = false;
	size_t tlen = 16u << 20;
	void *mem = NULL;
	int ret, dlen, rc = RY_EXIT_FAIL;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			fputs(usage_text, stdout);
			return RY_EXIT_OK;
		} else if (!strcmp(argv[i], "--json")) {
			json = true;
		} else if (!strcmp(argv[i], "--rails") && i + 1 < argc &&
			   (!strcmp(argv[i + 1], "soft") ||
			    !strcmp(argv[i + 1], "tcp"))) {
			provider = strcmp(argv[++i], "tcp") ? RY_PROVIDER_SOFT
							    : RY_PROVIDER_TCP;
		} else if (!strcmp(argv[i], "--duration") && i + 1 < argc &&
			   cli_parse_seconds(argv[i + 1], &o.duration) &&
			   o.duration >= 3) {
			i++;
		} else {
			fputs(usage_text, stderr);
			return RY_EXIT_USAGE;
		}
	}
	if (json)
		o.live = pull.out = stderr;
	if (node("demo-b", provider, &b, &o.ops_in_flight) ||
	    node("demo-a", provider, &a, &o.ops_in_flight))
		goto out;
	/* b serves from its own thread; a is driven by this one */
	ret = ry_progress_thread_start(b);
	if (ret)
		goto out;
	mem = aligned_alloc(4096, tlen);
	if (!mem)
		goto out;
	memset(mem, 0, tlen);
	ret = ry_mr_reg(b, mem, tlen, RY_MR_REMOTE_WRITE | RY_MR_REMOTE_READ,
			&target);
	if (ret) {
		fprintf(stderr, "railyard demo: cannot register: %s\n",
			strerror(-ret));
		goto out;
	}
	dlen = ry_mr_pack(target, desc, sizeof(desc));
	ry_manager_control_addr(b, ctl, sizeof(ctl));
	if (dlen < 0 || ry_peer_get(a, ctl, &peer))
		goto out;
	pull.mgr = a;
	pull.duration = o.duration;
	o.tick_arg = &pull;
	if (cli_session_create(a, peer, &o, &s) ||
	    cli_session_set_target(s, desc, (size_t)dlen))
		goto out;
	fprintf(o.live,
		"railyard %s demo: node demo-a -> demo-b over 4 %s rails on "
		"loopback, "
		"1 MiB writes read back and verified, %.0f s\n",
		ry_version(), ry_provider_name(provider), o.duration);
	ret = cli_session_run(s);
	cli_session_result(s, &r);
	if (json)
		cli_session_json(s, stdout);
	cli_session_summary(s, o.live);
	if (!ret && r.ops_ok && !r.ops_failed && !r.verify_errors)
		rc = RY_EXIT_OK;
out:
	cli_session_destroy(s);
	ry_manager_destroy(a);
	if (b)
		ry_progress_thread_stop(b);
	ry_mr_dereg(target);
	ry_manager_destroy(b);
	free(mem);
	return rc;
}
