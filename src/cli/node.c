// SPDX-License-Identifier: BSD-2-Clause
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "config/config_int.h"
#include "src/cli/cli.h"
#include "src/cli/json.h"
#include "src/cli/node.h"

bool cli_require_all_rails;

int cli_start(const char *path, struct ry_config **cfg_p,
	      struct ry_manager **mgr_p)
{
	return cli_start_inflight(path, 0, cfg_p, mgr_p);
}

/*
 * Every inbound control session is a descriptor.  Raise the soft
 * open-file limit to the hard one when the sessions need it (beside the
 * rails, the dialed peers, the metrics connections and a margin).  A
 * max_sessions the file gives that still cannot fit is refused, naming
 * the numbers, rather than failing accept() later; the default is lowered
 * to what fits, with a warning, so a host with a low limit still starts.
 */
int cli_fit_fds(const char *path, struct ry_config *c, FILE *out)
{
	uint64_t other =
	    (uint64_t)c->n_peers +
	    8ull * c->n_rails * (c->lanes ? c->lanes : 1) /* lanes: rails */ +
	    64 /* metrics */ + 64;
	uint64_t need = c->max_sessions + other;
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl))
		return 0;
	if (rl.rlim_cur < need && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl))
			getrlimit(RLIMIT_NOFILE, &rl);
	}
	if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur >= need)
		return 0;
	if (!c->max_sessions_set && rl.rlim_cur >= other + CLI_MIN_SESSIONS) {
		fprintf(out,
			"railyard: %s: warning: max_sessions lowered from its "
			"default %u to %" PRIu64 " to fit under the open-file "
			"limit %llu (hard %llu); raise the limit (ulimit -n, "
			"systemd LimitNOFILE=) for more\n",
			path, c->max_sessions, (uint64_t)rl.rlim_cur - other,
			(unsigned long long)rl.rlim_cur,
			(unsigned long long)rl.rlim_max);
		c->max_sessions = (uint32_t)(rl.rlim_cur - other);
		return 0;
	}
	fprintf(out,
		"railyard: %s: max_sessions %u needs about %" PRIu64
		" file descriptors, the limit is %llu (hard %llu): "
		"lower max_sessions or raise the limit (ulimit -n, "
		"systemd LimitNOFILE=)\n",
		path, c->max_sessions, need, (unsigned long long)rl.rlim_cur,
		(unsigned long long)rl.rlim_max);
	return -EMFILE;
}

int cli_start_inflight(const char *path, unsigned min_inflight,
		       struct ry_config **cfg_p, struct ry_manager **mgr_p)
{
	struct ry_config *cfg;
	int ret;

	ret = ry_config_load(path, &cfg, cli_print_config_error, stderr);
	if (ret) {
		fprintf(stderr,
			"railyard: %s is not usable; nothing was started "
			"(railyard check-config %s shows the same)\n",
			path, path);
		return ret;
	}
	if (cfg->ops_in_flight < min_inflight)
		cfg->ops_in_flight = min_inflight;
	if (cli_require_all_rails)
		cfg->require_all_rails = true;
	ry_log_use_syslog(cfg->log.syslog);
	ret = cli_log_apply(cfg);
	if (!ret)
		ret = cli_fit_fds(path, cfg, stderr);
	if (ret == -EMFILE) {
		ry_config_free(cfg);
		return ret;
	}
	if (!ret)
		ret = ry_manager_create(cfg, mgr_p);
	if (ret) {
		fprintf(
		    stderr, "railyard: cannot start node %s from %s: %s\n",
		    cfg->node, path,
		    ret == -ENOSYS
			? "a rail's provider is not implemented in this build"
		    : ret == -EADDRINUSE
			? "the control address is already in use"
		    : ret == -ENODEV
			? "a configured device, port or interface is missing "
			  "(require_all_rails; see railyard devices)"
			: strerror(-ret));
		ry_config_free(cfg);
		return ret;
	}
	*cfg_p = cfg;
	return 0;
}

int cli_node_args(int argc, char **argv, const char *cmd, const char *usage,
		  const char **sock_arg, const char **file, bool *json)
{
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			fputs(usage, stdout);
			return RY_EXIT_OK;
		} else if (json && !strcmp(argv[i], "--json")) {
			*json = true;
		} else if (!strcmp(argv[i], "--socket") && i + 1 < argc) {
			*sock_arg = argv[++i];
		} else if (!strcmp(argv[i], "-c") && i + 1 < argc) {
			*file = argv[++i];
		} else {
			fprintf(stderr, "railyard %s: unexpected '%s'\n\n%s",
				cmd, argv[i], usage);
			return RY_EXIT_USAGE;
		}
	}
	return -1;
}

int cli_node_connect(const char *cmd, const char *sock_arg, const char *file,
		     const char *request)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	size_t n = strlen(request);
	char path[108];
	int fd;

	if (sock_arg) {
		snprintf(path, sizeof(path), "%s", sock_arg);
	} else {
		struct ry_config *cfg = NULL, def;

		/* the node name is all it needs: a file that does not
		 * validate as a whole (a broken key_file) still names it */
		if (file && ry__config_load_lax(file, &cfg,
						cli_print_config_error, stderr))
			return -1;
		ry_config_init_defaults(&def);
		cli_status_path(cfg ? cfg->node : def.node, path, sizeof(path));
		ry_config_free(cfg);
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		fprintf(stderr,
			"railyard %s: no running node answers on %s: %s "
			"(is 'railyard serve' running? give --socket)\n",
			cmd, path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	if (write(fd, request, n) != (ssize_t)n) {
		fprintf(stderr, "railyard %s: %s: %s\n", cmd, path,
			strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

void cli_status_path(const char *node, char *buf, size_t len)
{
	const char *dir = getenv("XDG_RUNTIME_DIR");
	/* under systemd (RuntimeDirectory=railyard) as its own user: the
	 * directory root's `railyard status` looks in */
	const char *rt = getenv("RUNTIME_DIRECTORY");

	if (rt && *rt && !strchr(rt, ':')) {
		snprintf(buf, len, "%s/%s.sock", rt, node);
	} else if (geteuid() == 0) {
		mkdir("/run/railyard", 0755);
		snprintf(buf, len, "/run/railyard/%s.sock", node);
	} else if (dir) {
		snprintf(buf, len, "%s/railyard-%s.sock", dir, node);
	} else {
		/* not /tmp itself, where another user could take the name
		 * first: a directory of this user's (serve makes it 0700) */
		snprintf(buf, len, "/tmp/railyard-%u/%s.sock",
			 (unsigned)geteuid(), node);
	}
}

static void counters_json(FILE *out, const struct ry_counters *c)
{
	fprintf(out,
		"\"bytes\":%" PRIu64 ",\"fragments\":%" PRIu64
		",\"work_requests\":%" PRIu64 ",\"messages\":%" PRIu64
		",\"replayed\":%" PRIu64 ",\"retransmits\":%" PRIu64
		",\"failovers\":%" PRIu64 ",\"fences\":%" PRIu64
		",\"reconnects\":%" PRIu64 ",\"heartbeats\":%" PRIu64
		",\"detect_ms_max\":%.2f,\"resume_ms_max\":%.2f",
		c->bytes, c->fragments, c->work_requests, c->messages,
		c->replayed_fragments, c->retransmits, c->failovers, c->fences,
		c->reconnects, c->heartbeats, (double)c->detect_ns_max / 1e6,
		(double)c->resume_ns_max / 1e6);
}

/* Every peer the manager holds, NULL on failure; *n their count. */
static struct ry_peer_entry *peer_list(struct ry_manager *mgr, unsigned *n)
{
	struct ry_peer_entry *pe = NULL;
	int want = ry_peer_list(mgr, NULL, 0), got;

	/* a peer may come between the two calls: take what fits */
	for (int tries = 0; want >= 0 && tries < 3; tries++) {
		free(pe);
		pe = calloc((size_t)want + 4, sizeof(*pe));
		if (!pe)
			return NULL;
		got = ry_peer_list(mgr, pe, (unsigned)want + 4);
		if (got >= 0 && got <= want + 4) {
			*n = (unsigned)got;
			return pe;
		}
		want = got;
	}
	free(pe);
	return NULL;
}

/* Configured rails not open (absent, or gone): up 0 and why. */
static void missing_write(struct ry_manager *mgr, int json, bool comma,
			  FILE *out)
{
	char name[64], why[256];

	for (unsigned i = 0;
	     !ry_rail_missing(mgr, i, name, sizeof(name), why, sizeof(why));
	     i++) {
		if (json) {
			fprintf(out, "%s{\"name\":", comma || i ? "," : "");
			cli_json_str(out, name);
			fprintf(out, ",\"link\":\"down\",\"up\":0,\"reason\":");
			cli_json_str(out, why);
			fprintf(out, "}");
		} else {
			fprintf(out, "  %-8s missing: %s\n", name, why);
		}
	}
}

/* A verbs rail's traffic class and SL, as its QPs carry them. */
static const struct ry_rail_config *verbs_rail_cfg(const struct ry_config *cfg,
						   const char *name)
{
	for (unsigned i = 0; i < cfg->n_rails; i++)
		if (!strcmp(cfg->rails[i].name, name))
			return cfg->rails[i].provider == RY_PROVIDER_VERBS
				   ? &cfg->rails[i]
				   : NULL;
	return NULL;
}

void cli_status_write(struct ry_manager *mgr, const struct ry_config *cfg,
		      int json, FILE *out)
{
	char ctl[128] = "", keys[64] = "";
	int n = ry_rail_count(mgr);
	unsigned n_peers = 0;
	struct ry_peer_entry *pe = peer_list(mgr, &n_peers);
	uint32_t overlap_s = 0;
	int nkeys = ry_manager_key_ids(mgr, keys, sizeof(keys), &overlap_s);

	ry_manager_control_addr(mgr, ctl, sizeof(ctl));
	if (json) {
		fprintf(out, "{\"node\":");
		cli_json_str(out, cfg->node);
		fprintf(out, ",\"control\":");
		cli_json_str(out, ctl);
		/* key_file: the ids held, newest first (src/auth.c) */
		if (nkeys > 0) {
			char *save, *id = strtok_r(keys, ",", &save);

			fprintf(out, ",\"key_ids\":[");
			for (int k = 0; id;
			     k++, id = strtok_r(NULL, ",", &save))
				fprintf(out, "%s\"%s\"", k ? "," : "", id);
			fprintf(out, "],\"key_overlap_left_s\":%u", overlap_s);
		}
		fprintf(out, ",\"rails\":[");
	} else {
		fprintf(out, "node %s, control %s\n", cfg->node, ctl);
		if (nkeys == 1)
			fprintf(out, "key id %s\n", keys);
		else if (nkeys > 1)
			fprintf(out,
				"key ids %s (the previous one accepted %u s "
				"more)\n",
				keys, overlap_s);
		fprintf(out, "rails:\n");
	}
	for (int i = 0; i < n; i++) {
		const char *name = ry_rail_name(mgr, (unsigned)i);
		const struct ry_rail_config *vc = verbs_rail_cfg(cfg, name);
		struct ry_rail_health rh = {0};
		struct ry_rail_info info = {0};
		struct ry_counters c = {0};

		ry_rail_info(mgr, name, &info);
		ry_rail_counters(mgr, name, &c);
		ry_rail_health(mgr, name, &rh);
		if (json) {
			fprintf(out, "%s{\"name\":", i ? "," : "");
			cli_json_str(out, name);
			fprintf(out,
				",\"link\":\"%s\",\"up\":1,\"peers_active\":%u,"
				"\"health\":%u,\"error_state\":\"%s\","
				"\"error_ppm\":%u,\"port_errors\":%" PRIu64 ",",
				info.link_up ? "up" : "down", info.peers_active,
				info.health_min, ry_rail_health_str(rh.state),
				rh.error_ppm, rh.errors);
			if (vc)
				fprintf(out, "\"traffic_class\":%u,\"sl\":%u,",
					vc->traffic_class, vc->sl);
			counters_json(out, &c);
			fprintf(out, "}");
		} else {
			fprintf(
			    out,
			    "  %-8s link %-4s peers %u health %4u  %12" PRIu64
			    " bytes %8" PRIu64 " replayed %4" PRIu64
			    " failovers %4" PRIu64 " reconnects\n",
			    name, info.link_up ? "up" : "down",
			    info.peers_active, info.health_min, c.bytes,
			    c.replayed_fragments, c.failovers, c.reconnects);
			if (rh.state != RY_RAIL_OK)
				fprintf(out,
					"           %s: %u errors per million "
					"packets (%s)\n",
					ry_rail_health_str(rh.state),
					rh.error_ppm,
					rh.state == RY_RAIL_DRAINED
					    ? "new work avoids it"
					    : "a quarter of its share");
			if (vc)
				fprintf(out,
					"           traffic_class %u (DSCP %u, "
					"ECN %u), sl %u\n",
					vc->traffic_class,
					vc->traffic_class >> 2,
					vc->traffic_class & 3, vc->sl);
		}
	}
	missing_write(mgr, json, n > 0, out);
	if (json)
		fprintf(out, "],\"peers\":[");
	else
		fprintf(out, "peers:\n");
	for (unsigned i = 0; pe && i < n_peers; i++) {
		const struct ry_peer_entry *e = &pe[i];
		const struct ry_counters *c = &e->counters;

		if (json) {
			fprintf(out, "%s{\"name\":", i ? "," : "");
			cli_json_str(out, e->name);
			fprintf(out, ",\"node\":");
			cli_json_str(out, e->node);
			fprintf(out, ",\"address\":");
			cli_json_str(out, e->address);
			fprintf(
			    out,
			    ",\"state\":\"%s\",\"dialed\":%s,"
			    "\"from_hello\":%s,\"incarnation\":\"%016" PRIx64
			    "\",\"restarts\":%u,\"rails_paired\":%u,"
			    "\"rails_usable\":%u,\"rails_active\":%u,",
			    e->state, e->dialed ? "true" : "false",
			    e->from_hello ? "true" : "false",
			    e->info.incarnation, e->info.restarts,
			    e->info.rails_paired, e->info.rails_usable,
			    e->info.rails_active);
			counters_json(out, c);
			fprintf(out, "}");
		} else {
			fprintf(out,
				"  %-16s %-10s %u/%u rails  %12" PRIu64
				" bytes %8" PRIu64 " messages %8" PRIu64
				" replayed %4" PRIu64 " fences %u restarts\n",
				e->name, e->state, e->info.rails_active,
				e->info.rails_paired, c->bytes, c->messages,
				c->replayed_fragments, c->fences,
				e->info.restarts);
		}
	}
	if (json)
		fprintf(out, "]}\n");
	else if (!pe)
		fprintf(out, "  (cannot list: out of memory)\n");
	else if (!n_peers)
		fprintf(out, "  none yet\n");
	free(pe);
}
