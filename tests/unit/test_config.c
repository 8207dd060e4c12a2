// SPDX-License-Identifier: BSD-2-Clause
/*
 * The config loader: every kind of mistake an operator makes gets the right
 * line and a message that names the problem; good files load with the
 * documented defaults.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <railyard/config.h>
#include <railyard/testing.h>

#include "config/config_int.h"

#define MAX_ERRS 16

struct errs {
	int n;
	int line[MAX_ERRS];
	char msg[MAX_ERRS][320];
	char hint[MAX_ERRS][200];
};

static void collect(const struct ry_config_error *e, void *arg)
{
	struct errs *x = arg;

	if (x->n < MAX_ERRS) {
		x->line[x->n] = e->line;
		snprintf(x->msg[x->n], sizeof(x->msg[0]), "%s", e->message);
		snprintf(x->hint[x->n], sizeof(x->hint[0]), "%s", e->hint);
	}
	x->n++;
}

/* A minimal valid head every bad case builds on. */
#define RAIL "rail r0 {\n provider = soft\n address = \"127.0.0.1\"\n}\n"

struct bad_case {
	const char *name;
	const char *text;
	int line;	 /* line of the first problem */
	const char *msg; /* substring of its message */
	int count;	 /* number of problems; 0: do not check */
};

static const struct bad_case bad[] = {
    {"syntax: stray token", "node = {\n" RAIL, 1, "unexpected token", 1},
    {"syntax: unclosed string", RAIL "node = \"abc\n", 5,
     "string is never closed", 1},
    {"syntax: unclosed section", RAIL "rail r1 {\n provider = soft\n", 5,
     "section 'rail' is never closed", 1},
    {"syntax: extra brace", RAIL "}\n", 5, "'}' without a matching", 1},
    {"syntax: unclosed comment", RAIL "/* note\n", 5, "comment is never closed",
     1},
    {"unknown option at top", RAIL "\n\nfragment_sise = 4096\n", 7,
     "unknown option 'fragment_sise'", 1},
    {"unknown option in rail",
     "rail r0 {\n provider = soft\n adress = \"127.0.0.1\"\n}\n", 3,
     "unknown option 'adress' in section 'rail'", 1},
    {"every unknown option reported", RAIL "foo = 1\nfailover {\n bar = 2\n}\n",
     5, "unknown option 'foo'", 2},
    {"data_mac without key_file", RAIL "\ndata_mac = yes\n", 6,
     "data_mac needs key_file", 1},
    {"data_mac with a verbs rail",
     RAIL "rail v0 {\n provider = verbs\n device = \"mlx5_0\"\n}\n"
	  "data_mac = yes\n",
     6, "data_mac: verbs rail 'v0' cannot carry a MAC", 0},
    {"list in brackets", RAIL "accept = [\"127.0.0.0/8\"]\n", 5,
     "'accept' is a list: '[' is not list syntax", 1},
    {"unknown section", RAIL "rails r9 {\n}\n", 5, "unknown section 'rails'",
     1},
    {"wrong type: int", RAIL "ops_in_flight = many\n", 5,
     "ops_in_flight: 'many' is not a whole number", 1},
    {"wrong type: int after blank lines",
     RAIL "failover {\n timeout_ms = soon\n\n\n\n}\n", 6,
     "timeout_ms: 'soon' is not a whole number", 1},
    {"wrong type: bool", RAIL "failover {\n fence = maybe\n}\n", 6,
     "fence: 'maybe' is not yes or no", 1},
    {"wrong type: size", RAIL "fragment_size = 4Q\n", 5,
     "fragment_size: '4Q' is not a size", 1},
    {"wrong type: rate",
     "rail r0 {\n provider = soft\n address = \"127.0.0.1\"\n rate = fast\n}\n",
     4, "rate: 'fast' is not a rate", 1},
    {"wrong type: probability",
     "rail r0 {\n provider = soft\n address = \"127.0.0.1\"\n fault {\n  drop "
     "= lots\n }\n}\n",
     5, "drop: 'lots' is not a number", 1},
    {"duplicate rail",
     RAIL "rail r0 {\n provider = soft\n address = \"127.0.0.2\"\n}\n", 5,
     "rail 'r0' is defined twice (first at line 1)", 1},
    {"duplicate peer",
     RAIL "peer b {\n address = \"127.0.0.1:1\"\n}\npeer b {\n address = "
	  "\"127.0.0.1:2\"\n}\n",
     8, "peer 'b' is defined twice (first at line 5)", 1},
    {"unknown provider",
     "rail r0 {\n provider = rdma\n address = \"127.0.0.1\"\n}\n", 2,
     "unknown provider 'rdma'", 1},
    {"missing provider", "\nrail r0 {\n address = \"127.0.0.1\"\n}\n", 2,
     "rail 'r0' has no provider", 1},
    {"verbs rail without device",
     "rail hca {\n provider = verbs\n port = 1\n}\n", 1,
     "verbs rail 'hca' has no device", 1},
    {"verbs rail port 0",
     "rail hca {\n provider = verbs\n device = mlx5_0\n port = 0\n}\n", 4,
     "port must be from 1 to 255", 1},
    {"soft rail without address or interface",
     "\n\nrail s {\n provider = soft\n}\n", 3,
     "soft rail 's' has neither address nor interface", 1},
    {"soft address does not parse",
     "rail r0 {\n provider = soft\n address = \"300.1.2.3\"\n}\n", 3,
     "address '300.1.2.3' does not parse", 1},
    {"tcp address is IPv6",
     "rail r0 {\n provider = tcp\n address = \"[::1]:0\"\n}\n", 3,
     "tcp rail 'r0': address '[::1]:0' is not IPv4", 1},
    {"control address does not parse", RAIL "control = \"localhost:x\"\n", 5,
     "control address 'localhost:x' does not parse", 1},
    {"peer address without port",
     RAIL "peer b {\n address = \"198.18.0.2\"\n}\n", 6,
     "peer 'b': address '198.18.0.2' does not parse", 1},
    {"peer without address", RAIL "peer b {\n}\n", 5, "peer 'b' has no address",
     1},
    {"fragment_size not a power of two", RAIL "fragment_size = 3000\n", 5,
     "fragment_size 3000 is not a power of two", 1},
    {"fragment_size too small", RAIL "fragment_size = 256\n", 5,
     "fragment_size 256", 1},
    {"fragment_size too large", RAIL "fragment_size = 2M\n", 5,
     "fragment_size 2097152", 1},
    {"zero ops in flight", RAIL "ops_in_flight = 0\n", 5,
     "ops_in_flight must be from 1", 1},
    {"negative ops in flight", RAIL "ops_in_flight = -4\n", 5,
     "ops_in_flight must be from 1", 1},
    {"negative timeout", RAIL "failover {\n op_timeout_ms = -1\n}\n", 6,
     "failover.op_timeout_ms must be from 1", 0},
    {"zero weight",
     "rail r0 {\n provider = soft\n address = \"127.0.0.1\"\n weight = 0\n}\n",
     4, "weight must be from 1 to 1000", 1},
    {"retry_count 7", RAIL "failover {\n retry_count = 7\n}\n", 6,
     "failover.retry_count must be from 0 to 6", 1},
    {"heartbeat not below timeout",
     RAIL "failover {\n timeout_ms = 50\n heartbeat_ms = 50\n}\n", 7,
     "heartbeat_ms (50) must be less than timeout_ms (50)", 1},
    {"reconnect min above max",
     RAIL "failover {\n reconnect_min_ms = 9000\n reconnect_max_ms = 1000\n}\n",
     6, "reconnect_min_ms (9000) is greater than reconnect_max_ms (1000)", 1},
    {"op timeout below detection", RAIL "failover {\n op_timeout_ms = 80\n}\n",
     6, "op_timeout_ms (80) must be greater than timeout_ms (100)", 1},
    {"probability above one",
     "rail r0 {\n provider = soft\n address = \"127.0.0.1\"\n fault {\n  drop "
     "= 1.5\n }\n}\n",
     5, "fault drop must be from 0 to 1", 1},
    {"verbs rail with fault injection",
     "rail h {\n provider = verbs\n device = mlx5_0\n fault {\n  drop = 0.1\n "
     "}\n}\n",
     4, "verbs rail 'h' cannot inject faults", 1},
    {"tcp rail with fault injection",
     "rail t {\n provider = tcp\n address = \"127.0.0.1\"\n fault {\n  "
     "drop = 0.1\n }\n}\n",
     4, "tcp rail 't' cannot inject faults", 1},
    {"tcp rail without an address", RAIL "rail t {\n provider = tcp\n}\n", 5,
     "tcp rail 't' has neither address nor interface", 1},
    {"tcp rail with a device",
     RAIL "rail t {\n provider = tcp\n address = \"127.0.0.1\"\n"
	  " device = mlx5_0\n}\n",
     8, "tcp rail 't' does not use a device", 1},
    {"data_mac with a tcp rail",
     RAIL "rail t {\n provider = tcp\n address = \"127.0.0.1\"\n}\n"
	  "data_mac = yes\n",
     6, "data_mac: tcp rail 't' cannot carry a MAC", 0},
    {"standby not a bool",
     RAIL "rail t {\n provider = tcp\n"
	  " address = \"127.0.0.1\"\n standby = often\n}\n",
     8, "standby", 1},
    {"unknown provider",
     "rail t {\n provider = quic\n address = "
     "\"127.0.0.1\"\n}\n",
     2, "provider", 0},
    {"unknown log level", RAIL "log {\n level = loud\n}\n", 6,
     "log level 'loud' is unknown", 1},
    {"no rails", "node = \"x\"\n", 0, "no rail is defined", 1},
    {"empty file", "", 0, "the file is empty", 1},
    {"blank file", "\n  \n\t\n", 0, "the file is empty", 1},
    {"missing title", "rail {\n provider = soft\n}\n", 1,
     "missing title for section 'rail'", 1},
    {"bad node name", "node = \"a b\"\n" RAIL, 1, "node name 'a b'", 1},
    {"traffic_class above 255",
     "rail h {\n provider = verbs\n device = mlx5_0\n traffic_class = 256\n}\n",
     4, "rail 'h': traffic_class must be from 0 to 255", 1},
    {"negative traffic_class",
     "rail h {\n provider = verbs\n device = mlx5_0\n\n traffic_class = "
     "-4\n}\n",
     5, "rail 'h': traffic_class must be from 0 to 255", 1},
    {"sl above 15",
     "rail h {\n provider = verbs\n device = mlx5_0\n sl = 16\n}\n", 4,
     "rail 'h': sl must be from 0 to 15", 1},
    {"traffic_class on a soft rail",
     "rail r0 {\n provider = soft\n address = \"127.0.0.1\"\n traffic_class "
     "= 104\n}\n",
     4, "soft rail 'r0' cannot set traffic_class", 1},
    {"sl on a soft rail",
     "rail r0 {\n provider = soft\n address = \"127.0.0.1\"\n\n sl = 3\n}\n", 5,
     "soft rail 'r0' cannot set sl", 1},
    {"unknown cm mode",
     "rail h {\n provider = verbs\n device = mlx5_0\n\n cm = ucx\n}\n", 5,
     "cm: 'ucx' is not a connection mode", 1},
    {"cm on a soft rail",
     "rail r0 {\n provider = soft\n address = \"127.0.0.1\"\n cm = "
     "rdma_cm\n}\n",
     4, "soft rail 'r0' does not use cm", 1},
    {"problems sorted by line",
     "rail r0 {\n provider = soft\n}\nops_in_flight = 0\n", 1,
     "neither address nor interface", 2},
};

static void assert_failover_eq(const struct ry_failover_config *a,
			       const struct ry_failover_config *b)
{
	ck_assert_uint_eq(a->heartbeat_ms, b->heartbeat_ms);
	ck_assert_uint_eq(a->idle_heartbeat_ms, b->idle_heartbeat_ms);
	ck_assert_uint_eq(a->timeout_ms, b->timeout_ms);
	ck_assert_uint_eq(a->ack_timeout_ms, b->ack_timeout_ms);
	ck_assert_uint_eq(a->retry_count, b->retry_count);
	ck_assert_uint_eq(a->rnr_retry, b->rnr_retry);
	ck_assert_uint_eq(a->reconnect_min_ms, b->reconnect_min_ms);
	ck_assert_uint_eq(a->reconnect_max_ms, b->reconnect_max_ms);
	ck_assert_uint_eq(a->op_timeout_ms, b->op_timeout_ms);
	ck_assert_int_eq(a->fence, b->fence);
}

START_TEST(test_bad)
{
	const struct bad_case *c = &bad[_i];
	struct ry_config *cfg = NULL;
	struct errs e = {0};
	int ret;

	ret = ry_config_parse(c->text, "t.conf", &cfg, collect, &e);
	ck_assert_msg(ret == -EINVAL, "%s: ret %d", c->name, ret);
	ck_assert_ptr_null(cfg);
	ck_assert_msg(e.n >= 1, "%s: no problem reported", c->name);
	ck_assert_msg(e.line[0] == c->line, "%s: line %d, want %d (%s)",
		      c->name, e.line[0], c->line, e.msg[0]);
	ck_assert_msg(strstr(e.msg[0], c->msg), "%s: message '%s' lacks '%s'",
		      c->name, e.msg[0], c->msg);
	if (c->count)
		ck_assert_msg(e.n == c->count, "%s: %d problems, want %d",
			      c->name, e.n, c->count);
	/* every problem comes with a hint, and in line order */
	for (int i = 0; i < e.n && i < MAX_ERRS; i++) {
		ck_assert_msg(e.hint[i][0], "%s: problem %d has no hint",
			      c->name, i);
		if (i)
			ck_assert_int_le(e.line[i - 1], e.line[i]);
	}
}
END_TEST

struct good_case {
	const char *name;
	const char *text;
};

static const struct good_case good[] = {
    {"minimal soft rail", RAIL},
    {"soft rail by interface",
     "rail r0 {\n provider = soft\n interface = lo\n}\n"},
    {"verbs rail", "rail h { provider = verbs device = mlx5_0 port = 2 }\n"},
    {"sizes with units", RAIL "fragment_size = 8K\nmax_op_size = 1G\n"},
    {"ipv6 control", RAIL "control = \"[::1]:7470\"\n"},
    {"comments everywhere", "# a\n// b\n/* c\n d */\n" RAIL "# end\n"},
    {"braces and quotes in comments", "node = n1 # a } and a \" here\n" RAIL},
    {"braces in a quoted string",
     "rail r0 {\n provider = soft\n address = \"127.0.0.1\"\n network = "
     "\"n\"\n}\n"
     "peer p {\n address = \"127.0.0.1:1\" # }\n}\n"},
};

START_TEST(test_good)
{
	const struct good_case *c = &good[_i];
	struct ry_config *cfg = NULL;
	struct errs e = {0};
	int ret;

	ret = ry_config_parse(c->text, "t.conf", &cfg, collect, &e);
	ck_assert_msg(ret == 0, "%s: ret %d, first problem line %d: %s",
		      c->name, ret, e.line[0], e.msg[0]);
	ck_assert_int_eq(e.n, 0);
	ck_assert_uint_ge(cfg->n_rails, 1);
	ry_config_free(cfg);
}
END_TEST

START_TEST(test_good_values)
{
	struct ry_config *cfg = NULL;
	const char *text =
	    "node = n1\nfragment_size = 8K\nmax_op_size = 16M\n"
	    "rail a { provider = soft address = \"198.18.0.1:5000\" network = "
	    "x rate = \"25G\" weight = 3 }\n"
	    "rail b { provider = verbs device = mlx5_1 port = 2 gid_index = 3 "
	    "}\n"
	    "rail c { provider = tcp address = \"198.18.0.1\" standby = true "
	    "}\n"
	    "failover { fence = no timeout_ms = 300 heartbeat_ms = 30 }\n"
	    "peer p { address = \"198.18.0.2:7470\" }\n"
	    "log { level = debug }\n";

	ck_assert_int_eq(ry_config_parse(text, "v.conf", &cfg, NULL, NULL), 0);
	ck_assert_str_eq(cfg->node, "n1");
	ck_assert_uint_eq(cfg->fragment_size, 8192);
	ck_assert_uint_eq(cfg->max_op_size, 16u << 20);
	ck_assert_uint_eq(cfg->n_rails, 3);
	ck_assert_str_eq(cfg->rails[0].name, "a");
	ck_assert_int_eq(cfg->rails[0].provider, RY_PROVIDER_SOFT);
	ck_assert_str_eq(cfg->rails[0].network, "x");
	ck_assert_uint_eq(cfg->rails[0].rate_bps, 25000000000ull);
	ck_assert_uint_eq(cfg->rails[0].weight, 3);
	ck_assert_int_eq(cfg->rails[1].provider, RY_PROVIDER_VERBS);
	ck_assert(!cfg->rails[1].standby);
	ck_assert_int_eq(cfg->rails[2].provider, RY_PROVIDER_TCP);
	ck_assert(cfg->rails[2].standby);
	ck_assert_str_eq(ry_provider_name(RY_PROVIDER_TCP), "tcp");
	ck_assert_str_eq(cfg->rails[1].device, "mlx5_1");
	ck_assert_uint_eq(cfg->rails[1].port, 2);
	ck_assert_int_eq(cfg->rails[1].gid_index, 3);
	ck_assert_str_eq(cfg->rails[1].network, "default");
	ck_assert(!cfg->failover.fence);
	ck_assert_uint_eq(cfg->failover.timeout_ms, 300);
	ck_assert_uint_eq(cfg->failover.retry_count, 5);
	ck_assert_uint_eq(cfg->n_peers, 1);
	ck_assert_str_eq(cfg->peers[0].address, "198.18.0.2:7470");
	ck_assert_int_eq(cfg->log.level, RY_LOG_DEBUG);
	ry_config_free(cfg);
}
END_TEST

/* The reference file documents the defaults: loading it must give exactly
 * what ry_config_init_defaults() gives for every global option. */
START_TEST(test_reference_defaults)
{
	struct ry_config *cfg = NULL, def;
	struct errs e = {0};

	ck_assert_int_eq(
	    ry_config_load(RY_ETC "/railyard.conf", &cfg, collect, &e), 0);
	ry_config_init_defaults(&def);
	ck_assert_str_eq(cfg->control, def.control);
	ck_assert_uint_eq(cfg->fragment_size, def.fragment_size);
	ck_assert_uint_eq(cfg->ops_in_flight, def.ops_in_flight);
	ck_assert_uint_eq(cfg->max_op_size, def.max_op_size);
	ck_assert_uint_eq(cfg->wr_per_qp, def.wr_per_qp);
	ck_assert_uint_eq(cfg->frags_per_wr, def.frags_per_wr);
	assert_failover_eq(&cfg->failover, &def.failover);
	ck_assert_int_eq(cfg->log.level, def.log.level);
	ck_assert_int_eq(cfg->log.syslog, def.log.syslog);
	ry_config_free(cfg);
}
END_TEST

START_TEST(test_examples_load)
{
	static const char *const files[] = {
	    "examples/two-hca-verbs.conf",
	    "examples/soft-loopback-4rail.conf",
	    "examples/netns-drill-a.conf",
	    "examples/netns-drill-b.conf",
	};
	char path[512];

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		struct ry_config *cfg = NULL;
		struct errs e = {0};

		snprintf(path, sizeof(path), "%s/%s", RY_ETC, files[i]);
		ck_assert_msg(ry_config_load(path, &cfg, collect, &e) == 0,
			      "%s:%d: %s", files[i], e.line[0], e.msg[0]);
		ry_config_free(cfg);
	}
}
END_TEST

/* What check-config prints is itself a valid config with the same values. */
START_TEST(test_print_round_trip)
{
	struct ry_config *a = NULL, *b = NULL;
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	ck_assert_int_eq(ry_config_load(RY_ETC "/examples/two-hca-verbs.conf",
					&a, NULL, NULL),
			 0);
	f = open_memstream(&buf, &len);
	ry_config_print(a, f);
	fclose(f);
	ck_assert_int_eq(ry_config_parse(buf, "printed", &b, NULL, NULL), 0);
	ck_assert_uint_eq(a->n_rails, b->n_rails);
	for (unsigned i = 0; i < a->n_rails; i++) {
		ck_assert_str_eq(a->rails[i].name, b->rails[i].name);
		ck_assert_str_eq(a->rails[i].device, b->rails[i].device);
		ck_assert_uint_eq(a->rails[i].rate_bps, b->rails[i].rate_bps);
	}
	assert_failover_eq(&a->failover, &b->failover);
	ck_assert_str_eq(a->peers[0].address, b->peers[0].address);
	ry_config_free(a);
	ry_config_free(b);
	free(buf);
}
END_TEST

START_TEST(test_unreadable)
{
	struct ry_config *cfg = NULL;
	struct errs e = {0};
	char dir[] = "/tmp/ry-cfg-XXXXXX";
	char path[64];
	FILE *f;

	ck_assert_int_eq(
	    ry_config_load("/nonexistent/railyard.conf", &cfg, collect, &e),
	    -ENOENT);
	ck_assert_int_eq(e.n, 1);
	ck_assert_int_eq(e.line[0], 0);
	ck_assert_ptr_nonnull(strstr(e.msg[0], "cannot read the file"));

	ck_assert_ptr_nonnull(mkdtemp(dir));
	e.n = 0;
	ck_assert_int_eq(ry_config_load(dir, &cfg, collect, &e), -EISDIR);
	ck_assert_int_eq(e.n, 1);

	snprintf(path, sizeof(path), "%s/x.conf", dir);
	f = fopen(path, "w");
	fputs(RAIL, f);
	fclose(f);
	if (geteuid() != 0) { /* root reads anything */
		chmod(path, 0);
		e.n = 0;
		ck_assert_int_eq(ry_config_load(path, &cfg, collect, &e),
				 -EACCES);
		ck_assert_ptr_nonnull(strstr(e.msg[0], "Permission denied"));
	}
	ck_assert_ptr_null(cfg);
	unlink(path);
	rmdir(dir);
}
END_TEST

START_TEST(test_validate_hand_built)
{
	struct ry_config *cfg;
	struct errs e = {0};

	ck_assert_int_eq(ry_config_demo(&cfg), 0);
	ck_assert_int_eq(ry_config_validate(cfg, collect, &e), 0);
	cfg->fragment_size = 1000;
	snprintf(cfg->rails[1].name, sizeof(cfg->rails[1].name), "r0");
	ck_assert_int_eq(ry_config_validate(cfg, collect, &e), 2);
	ck_assert_ptr_nonnull(strstr(e.msg[0], "fragment_size 1000"));
	ck_assert_ptr_nonnull(strstr(e.msg[1], "rail 'r0' is defined twice"));
	ry_config_free(cfg);
}
END_TEST

/*
 * struct ry_config records its layout (include/railyard/config.h): a
 * struct the library cannot read is refused with the reason, by every
 * function that takes one, before a field is read.
 */
START_TEST(test_config_layout)
{
	static union {
		struct ry_config c;
		unsigned char b[sizeof(struct ry_config) + 64];
	} u;
	struct ry_config *c = &u.c;
	struct ry_manager *m = NULL;
	struct errs e = {0};
	char *text = NULL;
	size_t len = 0;
	FILE *f;

	ck_assert_int_eq(ry_config_init_defaults(c), 0);
	ck_assert_uint_eq(c->rc_size, sizeof(*c));
	ck_assert_uint_eq(c->rc_rail_size, sizeof(c->rails[0]));
	ck_assert_uint_eq(c->rc_peer_size, sizeof(c->peers[0]));
	ck_assert_uint_eq(c->fragment_size, 4096);

	/* built against a newer header: defaults where it can, then refused */
	ck_assert_int_eq(ry_config_init(c, sizeof(u.b), sizeof(c->rails[0]),
					sizeof(c->peers[0])),
			 -EINVAL);
	ck_assert_uint_eq(c->rc_size, sizeof(u.b));
	ck_assert_int_eq(ry_config_validate(c, collect, &e), 1);
	ck_assert_ptr_nonnull(strstr(e.msg[0], "newer"));
	ck_assert_int_eq(ry_manager_create(c, &m), -EINVAL);
	ck_assert_ptr_null(m);

	/* another layout of a rail section */
	ck_assert_int_eq(ry_config_init(c, sizeof(*c), sizeof(c->rails[0]) + 8,
					sizeof(c->peers[0])),
			 -EINVAL);
	e.n = 0;
	ck_assert_int_eq(ry_config_validate(c, collect, &e), 1);
	ck_assert_ptr_nonnull(strstr(e.msg[0], "rail or peer sections"));

	/* zeroed by hand, never set up */
	memset(&u, 0, sizeof(u));
	c->n_rails = 1;
	snprintf(c->rails[0].name, sizeof(c->rails[0].name), "r0");
	e.n = 0;
	ck_assert_int_eq(ry_config_validate(c, collect, &e), 1);
	ck_assert_ptr_nonnull(strstr(e.msg[0], "ry_config_init_defaults"));
	ck_assert_int_eq(ry_manager_create(c, &m), -EINVAL);
	ck_assert_ptr_null(m);
	f = open_memstream(&text, &len);
	ry_config_print(c, f);
	fclose(f);
	ck_assert_ptr_nonnull(
	    strstr(text, "# struct ry_config was not set up"));
	free(text);
}
END_TEST

static void put_file(const char *path, const void *p, size_t n, int mode)
{
	FILE *f = fopen(path, "w");

	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(p, 1, n, f), n);
	fclose(f);
	ck_assert_int_eq(chmod(path, (mode_t)mode), 0);
}

/* key_file: each problem with the file is reported at the option's line
 * with a hint; a good key, raw or hex, loads. */
/* A verbs rail's class of service and connection mode: parsed, defaults
 * 0 and auto, printed and loaded back. */
START_TEST(test_traffic_class_sl)
{
	struct ry_config *cfg = NULL, *back = NULL;
	const char *text =
	    "rail a { provider = verbs device = mlx5_0 traffic_class = 106 "
	    "sl = 15 }\n"
	    "rail b { provider = verbs device = mlx5_1 cm = rdma_cm }\n"
	    "rail c { provider = verbs device = mlx5_2 cm = manual }\n";
	char *buf = NULL;
	size_t len = 0;
	FILE *f;

	ck_assert_int_eq(ry_config_parse(text, "tc.conf", &cfg, NULL, NULL), 0);
	ck_assert_uint_eq(cfg->rails[0].traffic_class, 106);
	ck_assert_uint_eq(cfg->rails[0].sl, 15);
	ck_assert_uint_eq(cfg->rails[1].traffic_class, 0);
	ck_assert_uint_eq(cfg->rails[1].sl, 0);
	ck_assert_int_eq(cfg->rails[0].cm, RY_CM_AUTO);
	ck_assert_int_eq(cfg->rails[1].cm, RY_CM_RDMA_CM);
	ck_assert_int_eq(cfg->rails[2].cm, RY_CM_MANUAL);
	f = open_memstream(&buf, &len);
	ck_assert_ptr_nonnull(f);
	ry_config_print(cfg, f);
	fclose(f);
	ck_assert_ptr_nonnull(strstr(buf, "traffic_class = 106"));
	ck_assert_int_eq(ry_config_parse(buf, "back.conf", &back, NULL, NULL),
			 0);
	ck_assert_uint_eq(back->rails[0].traffic_class, 106);
	ck_assert_uint_eq(back->rails[0].sl, 15);
	ck_assert_int_eq(back->rails[1].cm, RY_CM_RDMA_CM);
	ck_assert_int_eq(back->rails[2].cm, RY_CM_MANUAL);
	/* a hand-built config is checked the same way */
	back->rails[1].sl = 16;
	ck_assert_int_eq(ry_config_validate(back, NULL, NULL), 1);
	free(buf);
	ry_config_free(back);
	ry_config_free(cfg);
}
END_TEST

START_TEST(test_key_file)
{
	static const char hex[] = "00112233445566778899aabbccddeeff001122334455"
				  "66778899aabbccddeeff\n";
	struct {
		const char *file, *msg, *hint;
		const void *data;
		size_t n;
		int mode;
	} cases[] = {
	    {"missing", "No such file or directory", "head -c 32", NULL, 0, 0},
	    {"short", "holds 31 bytes", "openssl rand -hex 32", hex, 31, 0600},
	    {"long", "holds 66 or more bytes", "openssl rand -hex 32",
	     "0011223344556677889900112233445566778899001122334455667788"
	     "99001122334455",
	     72, 0600},
	    {"nothex", "want 32 raw bytes or 64 hex digits", "openssl",
	     "zz112233445566778899aabbccddeeff00112233445566778899aabbccddeeff",
	     64, 0600},
	    {"open", "accessible by group or others (mode 0644)", "chmod 600 ",
	     hex, sizeof(hex) - 1, 0644},
	};
	char dir[] = "/tmp/ry-key-XXXXXX";
	char path[64], text[512];
	struct ry_config *cfg = NULL;
	struct errs e;
	unsigned i;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, cases[i].file);
		if (cases[i].data)
			put_file(path, cases[i].data, cases[i].n,
				 cases[i].mode);
		snprintf(text, sizeof(text), RAIL "\nkey_file = \"%s\"\n",
			 path);
		memset(&e, 0, sizeof(e));
		ck_assert_int_eq(
		    ry_config_parse(text, "t.conf", &cfg, collect, &e),
		    -EINVAL);
		ck_assert_msg(e.n == 1, "%s: %d problems", cases[i].file, e.n);
		ck_assert_int_eq(e.line[0], 6);
		ck_assert_msg(strstr(e.msg[0], cases[i].msg) &&
				  strstr(e.msg[0], path),
			      "%s: '%s'", cases[i].file, e.msg[0]);
		ck_assert_msg(strstr(e.hint[0], cases[i].hint), "%s: hint '%s'",
			      cases[i].file, e.hint[0]);
		unlink(path);
	}
	/* good: 64 hex digits and a newline, or 32 raw bytes */
	for (i = 0; i < 2; i++) {
		snprintf(path, sizeof(path), "%s/good", dir);
		put_file(path, hex, i ? 32 : sizeof(hex) - 1, 0600);
		snprintf(text, sizeof(text), RAIL "key_file = \"%s\"\n", path);
		memset(&e, 0, sizeof(e));
		ck_assert_msg(
		    ry_config_parse(text, "t.conf", &cfg, collect, &e) == 0,
		    "%s", e.msg[0]);
		ck_assert_str_eq(cfg->key_file, path);
		ry_config_free(cfg);
		cfg = NULL;
		unlink(path);
	}
	rmdir(dir);
}
END_TEST

/* control_frame_rate and control_frame_burst (issue 30): defaults, values,
 * and a zero or negative one refused at its line. */
START_TEST(test_control_frame_rate)
{
	struct ry_config *cfg = NULL;
	struct errs e = {0};

	ck_assert_int_eq(ry_config_parse(RAIL, "r.conf", &cfg, NULL, NULL), 0);
	ck_assert_uint_eq(cfg->control_frame_rate, 100);
	ck_assert_uint_eq(cfg->control_frame_burst, 200);
	ry_config_free(cfg);
	cfg = NULL;
	ck_assert_int_eq(ry_config_parse(RAIL "control_frame_rate = 5\n"
					      "control_frame_burst = 7\n",
					 "r.conf", &cfg, NULL, NULL),
			 0);
	ck_assert_uint_eq(cfg->control_frame_rate, 5);
	ck_assert_uint_eq(cfg->control_frame_burst, 7);
	ry_config_free(cfg);
	cfg = NULL;
	ck_assert_int_eq(ry_config_parse(RAIL "\ncontrol_frame_rate = 0\n",
					 "r.conf", &cfg, collect, &e),
			 -EINVAL);
	ck_assert_int_eq(e.line[0], 6);
	ck_assert_msg(strstr(e.msg[0], "control_frame_rate must be from 1"),
		      "%s", e.msg[0]);
	e.n = 0;
	ck_assert_int_eq(ry_config_parse(RAIL "control_frame_burst = -3\n",
					 "r.conf", &cfg, collect, &e),
			 -EINVAL);
	ck_assert_int_eq(e.line[0], 5);
	ck_assert_msg(strstr(e.msg[0], "control_frame_burst must be from 1"),
		      "%s", e.msg[0]);
}
END_TEST

/*
 * lanes: each soft and tcp rail becomes that many rails with names,
 * networks and ports of their own (config/lanes.c); verbs rails stay
 * one; a rate is shared; what cannot be expanded is refused, not cut.
 */
START_TEST(test_lanes)
{
	static const char *text =
	    "node = \"a\"\n"
	    "lanes = 3\n"
	    "rail r0 { provider = soft network = \"n0\" "
	    "address = \"198.18.1.1:7000\" rate = 3G }\n"
	    "rail r1 { provider = tcp network = \"n1\" "
	    "address = \"198.18.2.1\" }\n"
	    "rail v { provider = verbs device = \"mlx5_0\" }\n";
	struct ry_config *cfg = NULL, c;
	struct errs e = {0};
	char why[200] = "";

	ck_assert_int_eq(ry_config_parse(text, "l.conf", &cfg, collect, &e), 0);
	ck_assert_uint_eq(cfg->lanes, 3);
	ck_assert_uint_eq(cfg->n_rails,
			  3); /* the config keeps what was written */
	c = *cfg;
	ck_assert_int_eq(ry__config_lanes(&c, why, sizeof(why)), 0);
	ck_assert_uint_eq(c.n_rails, 7);
	ck_assert_str_eq(c.rails[0].name, "r0");
	ck_assert_str_eq(c.rails[0].address, "198.18.1.1:7000");
	ck_assert_uint_eq(c.rails[0].rate_bps, 1000000000ull);
	ck_assert_str_eq(c.rails[2].name, "v");
	ck_assert_str_eq(c.rails[3].name, "r0.2");
	ck_assert_str_eq(c.rails[3].network, "n0.2");
	ck_assert_str_eq(c.rails[3].address, "198.18.1.1:7001");
	ck_assert_uint_eq(c.rails[3].rate_bps, 1000000000ull);
	ck_assert_str_eq(c.rails[4].name, "r0.3");
	ck_assert_str_eq(c.rails[4].address, "198.18.1.1:7002");
	ck_assert_int_eq(c.rails[4].provider, RY_PROVIDER_SOFT);
	ck_assert_str_eq(c.rails[5].name, "r1.2");
	ck_assert_str_eq(c.rails[5].network, "n1.2");
	ck_assert_str_eq(c.rails[5].address, "198.18.2.1"); /* kernel's port */
	ck_assert_int_eq(c.rails[5].provider, RY_PROVIDER_TCP);
	ck_assert_str_eq(c.rails[6].name, "r1.3");

	/* a lane named as another rail */
	c = *cfg;
	snprintf(c.rails[2].name, sizeof(c.rails[2].name), "r1.3");
	ck_assert_int_eq(ry__config_lanes(&c, why, sizeof(why)), -EINVAL);
	ck_assert_msg(strstr(why, "'r1.3'"), "%s", why);
	/* more rails than a node has */
	c = *cfg;
	c.lanes = 8;
	ck_assert_int_eq(ry__config_lanes(&c, why, sizeof(why)), -EINVAL);
	ck_assert_msg(strstr(why, "more than 16 rails"), "%s", why);
	/* ports past 65535 */
	c = *cfg;
	snprintf(c.rails[0].address, sizeof(c.rails[0].address),
		 "198.18.1.1:65534");
	ck_assert_int_eq(ry__config_lanes(&c, why, sizeof(why)), -EINVAL);
	ck_assert_msg(strstr(why, "over 65535"), "%s", why);
	/* 1: nothing changes */
	c = *cfg;
	c.lanes = 1;
	ck_assert_int_eq(ry__config_lanes(&c, why, sizeof(why)), 0);
	ck_assert_uint_eq(c.n_rails, 3);
	ck_assert_uint_eq(c.rails[0].rate_bps, 3000000000ull);
	ry_config_free(cfg);

	/* out of range in a file: the line says so */
	memset(&e, 0, sizeof(e));
	ck_assert_int_eq(ry_config_parse("lanes = 9\nrail r0 { provider = soft "
					 "address = \"198.18.1.1\" }\n",
					 "l.conf", &cfg, collect, &e),
			 -EINVAL);
	ck_assert_int_eq(e.line[0], 1);
	ck_assert_msg(strstr(e.msg[0], "lanes"), "%s", e.msg[0]);
	/* what a manager could not expand is refused with the file */
	memset(&e, 0, sizeof(e));
	ck_assert_int_eq(
	    ry_config_parse(
		"node = \"x\"\nlanes = 8\n"
		"rail r0 { provider = soft address = \"198.18.1.1\" }\n"
		"rail r1 { provider = tcp address = \"198.18.2.1\" }\n"
		"rail r2 { provider = soft address = \"198.18.3.1\" }\n",
		"l.conf", &cfg, collect, &e),
	    -EINVAL);
	ck_assert_int_eq(e.n, 1);
	ck_assert_int_eq(e.line[0], 2);
	ck_assert_msg(strstr(e.msg[0], "more than 16 rails"), "%s", e.msg[0]);
}
END_TEST

static Suite *config_suite(void)
{
	Suite *s = suite_create("config");
	TCase *tc = tcase_create("files");

	tcase_add_loop_test(tc, test_bad, 0, sizeof(bad) / sizeof(bad[0]));
	tcase_add_loop_test(tc, test_good, 0, sizeof(good) / sizeof(good[0]));
	tcase_add_test(tc, test_good_values);
	tcase_add_test(tc, test_reference_defaults);
	tcase_add_test(tc, test_examples_load);
	tcase_add_test(tc, test_print_round_trip);
	tcase_add_test(tc, test_unreadable);
	tcase_add_test(tc, test_validate_hand_built);
	tcase_add_test(tc, test_config_layout);
	tcase_add_test(tc, test_key_file);
	tcase_add_test(tc, test_control_frame_rate);
	tcase_add_test(tc, test_traffic_class_sl);
	tcase_add_test(tc, test_lanes);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(config_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
