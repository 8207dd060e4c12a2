// SPDX-License-Identifier: BSD-2-Clause
/* The rail contract suite against the soft rail over loopback. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>

#include "rails/soft/soft.h"
#include "rail_conformance.h"

static void soft_config(struct ry_rail_config *cfg, int idx)
{
	snprintf(cfg->name, sizeof(cfg->name), "soft%d", idx);
	cfg->provider = RY_PROVIDER_SOFT;
	snprintf(cfg->address, sizeof(cfg->address), "127.0.0.1:0");
	cfg->mtu = 1500;
}

static const struct ry_test_provider soft = {
    .name = "soft",
    .ops = &ry_soft_ops,
    .config = soft_config,
    .has_faults = true,
};

int main(void)
{
	Suite *s = suite_create("soft_conformance");
	SRunner *sr;
	int failed;

	ry_test_provider = &soft;
	rail_conformance_add(s);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
