// SPDX-License-Identifier: BSD-2-Clause
/*
 * fx_run_suite(): the Check main of the manager suites that share one.
 * Apart from fixture.c so that the fuzz targets, which link the fixture
 * but not Check, need no Check.
 */
#include <check.h>
#include <stdlib.h>

#include "tests/manager/fixture.h"

int fx_run_suite(const char *name, unsigned timeout_s,
		 const struct TTest *const *tests, unsigned n, bool skip)
{
	Suite *s = suite_create(name);
	TCase *tc = tcase_create(name);
	SRunner *sr;
	int failed;

	if (!getenv("RY_TEST_LOG"))
		ry_log_set_level(RY_LOG_ERROR);
	if (skip)
		fx_skip_if_unavailable();
	tcase_set_timeout(tc, timeout_s);
	for (unsigned i = 0; i < n; i++)
		tcase_add_test(tc, tests[i]);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
