// SPDX-License-Identifier: BSD-2-Clause
/*
 * The port error counters a verbs rail reports as port_errors, read from a
 * fake sysfs tree: every error counter counted once (counters/ first, the
 * driver's hw_counters/ for what counters/ lacks), traffic counters not,
 * unreadable values skipped, a port without any of them -ENOENT.  Runs
 * everywhere (label unit): no device needed.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "rails/verbs/verbs_int.h"

static char root[64];

static void put(const char *rel, const char *value)
{
	char path[256], dir[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	snprintf(dir, sizeof(dir), "%s", path);
	for (char *p = dir + strlen(root) + 1; *p; p++)
		if (*p == '/') {
			*p = 0;
			mkdir(dir, 0755);
			*p = '/';
		}
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(value, f);
	fclose(f);
}

static void setup(void)
{
	snprintf(root, sizeof(root), "/tmp/ry_health.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(root));
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	ck_assert_int_eq(system(cmd), 0);
}

START_TEST(test_hca_counters)
{
	uint64_t sum = 0;

	put("mlx5_0/ports/1/counters/symbol_error", "3\n");
	put("mlx5_0/ports/1/counters/link_downed", "1\n");
	put("mlx5_0/ports/1/counters/port_rcv_errors", "2\n");
	put("mlx5_0/ports/1/counters/excessive_buffer_overrun_errors", "4\n");
	/* traffic, not errors */
	put("mlx5_0/ports/1/counters/port_xmit_data", "999999\n");
	/* counted from counters/, not twice */
	put("mlx5_0/ports/1/hw_counters/link_downed", "1\n");
	/* a driver's own counter for what counters/ lacks */
	put("mlx5_0/ports/1/hw_counters/local_link_integrity_errors", "5\n");
	/* unreadable: skipped */
	put("mlx5_0/ports/1/counters/port_xmit_discards", "N/A\n");
	ck_assert_int_eq(ry__verbs_port_errors(root, "mlx5_0", 1, &sum), 0);
	ck_assert_uint_eq(sum, 3 + 1 + 2 + 4 + 5);
	/* another port of the device has its own */
	put("mlx5_0/ports/2/counters/symbol_error", "7\n");
	ck_assert_int_eq(ry__verbs_port_errors(root, "mlx5_0", 2, &sum), 0);
	ck_assert_uint_eq(sum, 7);
}
END_TEST

/* rxe keeps link_downed in hw_counters/ and has no counters/ at all. */
START_TEST(test_rxe_counters)
{
	uint64_t sum = 0;

	put("rxe0/ports/1/hw_counters/link_downed", "2\n");
	put("rxe0/ports/1/hw_counters/sent_pkts", "12345\n");
	ck_assert_int_eq(ry__verbs_port_errors(root, "rxe0", 1, &sum), 0);
	ck_assert_uint_eq(sum, 2);
}
END_TEST

START_TEST(test_none)
{
	uint64_t sum = 42;

	ck_assert_int_eq(ry__verbs_port_errors(root, "nodev", 1, &sum),
			 -ENOENT);
	put("siw0/ports/1/hw_counters/sent_pkts", "1\n");
	ck_assert_int_eq(ry__verbs_port_errors(root, "siw0", 1, &sum), -ENOENT);
	ck_assert_uint_eq(sum, 42); /* untouched on error */
}
END_TEST

int main(void)
{
	Suite *s = suite_create("verbs_health");
	TCase *tc = tcase_create("port_errors");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_hca_counters);
	tcase_add_test(tc, test_rxe_counters);
	tcase_add_test(tc, test_none);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
