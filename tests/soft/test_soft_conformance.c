// SPDX-License-Identifier: BSD-2-Clause
/* The rail contract suite (tests/rail) against the soft rail over
 * loopback: two rails on 127.0.0.1, each on a port of its own. */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "rails/soft/soft.h"
#include "rail/rail_conformance.h"
#include "soft/soft_provider.h"

int main(void)
{
	Suite *s = suite_create("soft_conformance");
	SRunner *sr;
	int failed;

	ry_test_provider = &ry__soft_test_provider;
	rail_conformance_add(s);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
