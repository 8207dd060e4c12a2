// SPDX-License-Identifier: BSD-2-Clause
/*
 * ry_metrics_render over two managers on the in-process loop rail: the text
 * is well formed (each family announced once, its samples right after it),
 * carries the label sets an operator's queries use, and the counters move
 * with traffic and with a pulled rail.  The format itself is checked by
 * promtool in tests/metrics/scrape.sh.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/manager/fixture.h"

static struct fx F;
static char text[1 << 20];

static void render(struct ry_manager *m)
{
	int n = ry_metrics_render(m, text, sizeof(text));

	ck_assert_int_gt(n, 0);
	ck_assert_int_lt(n, (int)sizeof(text));
	ck_assert_uint_eq(strlen(text), (size_t)n);
}

/* The value of the sample whose line starts with `series` + ' ', or -1. */
static double value(const char *series)
{
	size_t l = strlen(series);

	for (const char *s = text; s && *s;
	     s = strchr(s, '\n'), s = s ? s + 1 : s)
		if (!strncmp(s, series, l) && s[l] == ' ')
			return strtod(s + l + 1, NULL);
	return -1;
}

/*
 * Every line is a comment or "name[{labels}] value"; each family has one
 * HELP and one TYPE, and its samples follow them before the next family.
 */
static void check_shape(void)
{
	char fams[256][128], cur[128] = "";
	unsigned nf = 0;
	const char *s = text;

	while (*s) {
		const char *e = strchr(s, '\n');
		char line[1024];
		size_t l;

		ck_assert_ptr_nonnull(e);
		l = (size_t)(e - s);
		ck_assert_uint_lt(l, sizeof(line));
		memcpy(line, s, l);
		line[l] = 0;
		s = e + 1;
		if (!strncmp(line, "# TYPE ", 7)) {
			char name[128], type[32];

			ck_assert_int_eq(
			    sscanf(line + 7, "%127s %31s", name, type), 2);
			for (unsigned i = 0; i < nf; i++)
				ck_assert_msg(strcmp(fams[i], name),
					      "family %s twice", name);
			ck_assert_uint_lt(nf, 256);
			strcpy(fams[nf++], name);
			strcpy(cur, name);
			ck_assert(!strcmp(type, "counter") ||
				  !strcmp(type, "gauge") ||
				  !strcmp(type, "summary") ||
				  !strcmp(type, "histogram"));
			if (!strcmp(type, "counter"))
				ck_assert_msg(strstr(name, "_total"),
					      "counter %s", name);
		} else if (!strncmp(line, "# HELP ", 7)) {
			ck_assert(strchr(line + 7, ' '));
		} else {
			size_t n = strcspn(line, "{ ");

			ck_assert_msg(*cur && !strncmp(line, cur, strlen(cur)),
				      "sample outside its family: %s", line);
			ck_assert_msg(n == strlen(cur) ||
					  !strcmp(line + strlen(cur), "_sum") ||
					  line[strlen(cur)] == '_',
				      "%s", line);
			ck_assert_msg(strchr(line, ' '), "%s", line);
		}
	}
	ck_assert_uint_gt(nf, 30);
}

/*
 * A rail's histogram `fam`: cumulative buckets that never fall, le bounds
 * that rise, +Inf equal to _count.  Returns _count.
 */
static double rail_histogram(const char *fam, const char *rail)
{
	char pre[200], series[200];
	double last = 0, last_le = 0, count;
	const char *s = text;
	unsigned n = 0;

	snprintf(pre, sizeof(pre), "%s_bucket{rail=\"%s\",le=\"", fam, rail);
	while ((s = strstr(s, pre))) {
		double le, v;

		s += strlen(pre);
		le = strncmp(s, "+Inf", 4) ? strtod(s, NULL) : 1e300;
		v = strtod(strchr(s, ' ') + 1, NULL);
		ck_assert_double_gt(le, last_le);
		ck_assert_double_ge(v, last);
		last_le = le;
		last = v;
		n++;
	}
	ck_assert_uint_eq(n, 17); /* 16 bounds and +Inf */
	ck_assert_double_eq(last_le, 1e300);
	snprintf(series, sizeof(series), "%s_count{rail=\"%s\"}", fam, rail);
	count = value(series);
	ck_assert_double_eq(count, last);
	return count;
}

static enum ry_status write_once(size_t len)
{
	struct fx_done d = {0};

	fx_fill(F.bufa, len, 7);
	ck_assert_int_eq(ry_write(F.ab, F.ra, 0, F.desc_b, (size_t)F.desc_b_len,
				  0, len, fx_cb, &d),
			 0);
	ck_assert(fx_until_done(&F, &d, 1, 20000));
	return d.ok ? RY_OK : d.last_err;
}

static bool failed_over(void *arg)
{
	struct ry_counters c;

	return !ry_rail_counters(F.a, "r1", &c) && c.failovers >= 1 &&
	       c.detect_count >= 1;
}

/* every failed connection is fenced; the peer's acknowledgement counts */
static bool fenced(void *arg)
{
	struct ry_counters c;

	return !ry_rail_counters(F.a, "r1", &c) && c.fences >= 1;
}

START_TEST(test_metrics_two_managers)
{
	char series[256], peer[128];
	double before;
	int n;

	ck_assert_int_eq(
	    fx_init(&F, &(struct fx_opts){.nrails_a = 2, .nrails_b = 2}), 0);
	snprintf(peer, sizeof(peer), "%s", ry_peer_name(F.ab));

	render(F.a);
	check_shape();
	ck_assert_double_eq(value("railyard_rails"), 2);
	ck_assert_double_eq(value("railyard_rail_link_up{rail=\"r0\"}"), 1);
	before = value("railyard_rail_bytes_total{rail=\"r0\"}") +
		 value("railyard_rail_bytes_total{rail=\"r1\"}");

	ck_assert_int_eq(write_once(4u << 20), RY_OK);

	/* a: the writer */
	render(F.a);
	check_shape();
	ck_assert_double_eq(value("railyard_peers"), 1);
	ck_assert_double_gt(value("railyard_rail_bytes_total{rail=\"r0\"}") +
				value("railyard_rail_bytes_total{rail=\"r1\"}"),
			    before);
	ck_assert_double_ge(value("railyard_rail_bytes_total{rail=\"r0\"}") +
				value("railyard_rail_bytes_total{rail=\"r1\"}"),
			    4u << 20);
	ck_assert_double_gt(value("railyard_rail_fragments_total{rail=\"r0\"}"),
			    0);
	ck_assert_double_ge(
	    value("railyard_rail_retransmits_total{rail=\"r0\"}"), 0);
	snprintf(series, sizeof(series),
		 "railyard_peer_bytes_total{peer=\"%s\"}", peer);
	ck_assert_double_ge(value(series), 4u << 20);
	snprintf(series, sizeof(series),
		 "railyard_connection_health_ratio{rail=\"r1\",peer=\"%s\"}",
		 peer);
	ck_assert_double_gt(value(series), 0);
	ck_assert_double_le(value(series), 1);
	snprintf(series, sizeof(series),
		 "railyard_connection_up{rail=\"r0\",peer=\"%s\"}", peer);
	ck_assert_double_eq(value(series), 1);
	/* the write's latency: one sample, cumulative buckets up to +Inf */
	{
		static const char *const le[] = {
		    "1e-05", "2.5e-05", "5e-05", "0.0001", "0.00025", "0.0005",
		    "0.001", "0.0025",	"0.005", "0.01",   "0.025",   "0.05",
		    "0.1",   "0.25",	"0.5",	 "1",	   "+Inf"};
		double prev = 0, v;

		for (unsigned i = 0; i < sizeof(le) / sizeof(le[0]); i++) {
			snprintf(series, sizeof(series),
				 "railyard_peer_operation_latency_seconds_"
				 "bucket{peer=\"%s\",op=\"write\",le=\"%s\"}",
				 peer, le[i]);
			v = value(series);
			ck_assert_double_ge(v, prev);
			prev = v;
		}
		ck_assert_double_eq(prev, 1);
		snprintf(series, sizeof(series),
			 "railyard_peer_operation_latency_seconds_count{peer="
			 "\"%s\",op=\"write\"}",
			 peer);
		ck_assert_double_eq(value(series), 1);
		snprintf(series, sizeof(series),
			 "railyard_peer_operation_latency_seconds_sum{peer="
			 "\"%s\",op=\"write\"}",
			 peer);
		ck_assert_double_gt(value(series), 0);
		snprintf(series, sizeof(series),
			 "railyard_peer_operation_latency_seconds_count{peer="
			 "\"%s\",op=\"read\"}",
			 peer);
		ck_assert_double_eq(value(series), 0);
	}
	ck_assert_double_eq(
	    value("railyard_rail_active_connections{rail=\"r0\"}"), 1);
	ck_assert_double_ge(
	    value("railyard_rail_failure_detection_seconds_count{rail=\"r0\"}"),
	    0);
	ck_assert_ptr_nonnull(strstr(
	    text, "# TYPE railyard_rail_failover_resume_seconds summary\n"));
	ck_assert_ptr_nonnull(strstr(text, "railyard_build_info{version=\""));
	/* retransmits are a transport's, not a peer's */
	ck_assert_ptr_null(strstr(text, "railyard_peer_retransmits_total"));

	/* b: the target sees a as a peer and its rails carried the traffic */
	render(F.b);
	check_shape();
	ck_assert_double_eq(value("railyard_peers"), 1);
	ck_assert_ptr_nonnull(
	    strstr(text, "railyard_peer_active_connections{peer=\""));
	ck_assert_ptr_nonnull(
	    strstr(text, "railyard_connection_up{rail=\"r0\",peer=\""));

	/* a pulled rail: link down, a failover and a detection time */
	ck_assert_int_eq(ry_rail_link(F.a, "r1", false), 0);
	ck_assert(fx_until(&F, failed_over, NULL, 5000));
	render(F.a);
	check_shape();
	ck_assert_double_eq(value("railyard_rail_link_up{rail=\"r1\"}"), 0);
	ck_assert_double_eq(value("railyard_rail_link_up{rail=\"r0\"}"), 1);
	ck_assert_double_ge(value("railyard_rail_failovers_total{rail=\"r1\"}"),
			    1);
	ck_assert_double_ge(
	    value("railyard_rail_failure_detection_seconds_count{rail=\"r1\"}"),
	    1);
	ck_assert_double_gt(
	    value("railyard_rail_failure_detection_max_seconds{rail=\"r1\"}"),
	    0);
	snprintf(series, sizeof(series),
		 "railyard_connection_up{rail=\"r1\",peer=\"%s\"}", peer);
	ck_assert_double_eq(value(series), 0);
	ck_assert_int_eq(write_once(1u << 20), RY_OK);

	/* the failover times as histograms: one per failure, as the summaries
	 * count them; their sums agree */
	ck_assert(fx_until(&F, fenced, NULL, 5000));
	render(F.a);
	check_shape();
	ck_assert_ptr_nonnull(strstr(
	    text, "# TYPE railyard_rail_failover_detection_duration_seconds "
		  "histogram\n"));
	ck_assert_double_eq(
	    rail_histogram("railyard_rail_failover_detection_duration_seconds",
			   "r1"),
	    value(
		"railyard_rail_failure_detection_seconds_count{rail=\"r1\"}"));
	ck_assert_double_ge(
	    value("railyard_rail_failover_detection_duration_seconds_count{"
		  "rail=\"r1\"}"),
	    1);
	ck_assert_double_eq_tol(
	    value("railyard_rail_failover_detection_duration_seconds_sum{"
		  "rail=\"r1\"}"),
	    value("railyard_rail_failure_detection_seconds_sum{rail=\"r1\"}"),
	    1e-6);
	ck_assert_double_eq(
	    rail_histogram("railyard_rail_failover_resume_duration_seconds",
			   "r1"),
	    value("railyard_rail_failover_resume_seconds_count{rail=\"r1\"}"));
	ck_assert_double_eq(
	    rail_histogram("railyard_rail_fence_duration_seconds", "r1"),
	    value("railyard_rail_fences_total{rail=\"r1\"}"));
	ck_assert_double_ge(
	    value("railyard_rail_fence_duration_seconds_count{rail=\"r1\"}"),
	    1);
	ck_assert_double_eq(
	    rail_histogram("railyard_rail_failover_detection_duration_seconds",
			   "r0"),
	    0);

	/* snprintf-style sizing: NULL/0 asks, a short buffer is cut */
	n = ry_metrics_render(F.a, NULL, 0);
	ck_assert_int_gt(n, 1000);
	ck_assert_int_eq(ry_metrics_render(F.a, text, 10), n);
	ck_assert_uint_eq(strlen(text), 9);
	ck_assert_int_eq(ry_metrics_render(NULL, text, sizeof(text)), -EINVAL);
	ck_assert_int_eq(ry_metrics_render(F.a, NULL, 5), -EINVAL);
	fx_fini(&F);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("metrics");
	TCase *tc = tcase_create("render");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_metrics_two_managers);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr;
	int failed;

	if (!getenv("RY_TEST_LOG"))
		ry_log_set_level(RY_LOG_ERROR);
	fx_skip_if_unavailable();
	sr = srunner_create(suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
