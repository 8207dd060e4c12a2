// SPDX-License-Identifier: BSD-2-Clause
/* The rail contract suite (tests/rail) against the tcp rail over
 * loopback: two rails on 127.0.0.1, one TCP connection per QP pair. */
#include <check.h>
#include <stdlib.h>

#include "rail/rail_conformance.h"
#include "tcp/tcp_provider.h"

int main(void)
{
	Suite *s = suite_create("tcp_conformance");
	SRunner *sr;
	int failed;

	ry_test_provider = &ry__tcp_test_provider;
	rail_conformance_add(s);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
