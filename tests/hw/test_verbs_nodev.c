// SPDX-License-Identifier: BSD-2-Clause
/*
 * The verbs rail on a machine without RDMA: discovery finds nothing and
 * says why, and opening a verbs rail fails with -ENODEV and one plain
 * error.  Runs on every host (and under valgrind, see CMakeLists.txt);
 * where an RDMA device exists it skips, since that case cannot happen.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <railyard/railyard.h>

#include "rails/rail.h"
#include "rails/verbs/discover.h"

static char last_msg[1024];
static int n_errors;

static void sink(enum ry_log_level level, const char *comp, const char *msg,
		 void *arg)
{
	if (level == RY_LOG_ERROR)
		n_errors++;
	snprintf(last_msg, sizeof(last_msg), "%s: %s", comp, msg);
}

START_TEST(test_discover_none)
{
	struct ry__verbs_port *ports = (void *)1;
	char why[512] = "";

	ck_assert_int_eq(ry__verbs_discover(&ports, why, sizeof(why)), 0);
	ck_assert_ptr_null(ports);
	ck_assert_msg(strstr(why, "no RDMA device found"), "why: %s", why);
	ck_assert(strstr(why, "rdma link add"));
}
END_TEST

START_TEST(test_open_without_device)
{
	struct ry_rail_config cfg = {
	    .name = "hca0",
	    .provider = RY_PROVIDER_VERBS,
	    .device = "mlx5_0",
	    .port = 1,
	    .gid_index = -1,
	    .weight = 1,
	};
	struct ry_rail *r = (struct ry_rail *)&cfg;

	ry_log_set_sink(sink, NULL);
	ck_assert_int_eq(ry__rail_open(&cfg, &r), -ENODEV);
	ry_log_set_sink(NULL, NULL);
	ck_assert_ptr_eq(r, (struct ry_rail *)&cfg); /* untouched */
	ck_assert_int_eq(n_errors, 1);		     /* logged once */
	ck_assert_msg(strstr(last_msg, "rail hca0: no RDMA device found"),
		      "message: %s", last_msg);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("verbs_nodev");
	TCase *tc = tcase_create("nodev");
	SRunner *sr;
	int failed;

	if (!access("/sys/class/infiniband", F_OK)) {
		printf("SKIP: this host has RDMA devices; the no-device paths "
		       "cannot be exercised\n");
		return 77;
	}
	tcase_add_test(tc, test_discover_none);
	tcase_add_test(tc, test_open_without_device);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
