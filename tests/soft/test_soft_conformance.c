// SPDX-License-Identifier: BSD-2-Clause
/* The rail contract suite (tests/rail) against the soft rail over
 * loopback: two rails on 127.0.0.1, each on a port of its own. */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "rails/soft/soft.h"
#include "rail/rail_conformance.h"

static void soft_config(struct ry_rail_config *cfg, int idx)
{
	snprintf(cfg->name, sizeof(cfg->name), "soft%d", idx);
	cfg->provider = RY_PROVIDER_SOFT;
	snprintf(cfg->address, sizeof(cfg->address), "127.0.0.1:0");
	cfg->mtu = 1500;
}

static bool soft_bad_config(struct ry_rail_config *cfg, int n, int *want)
{
	soft_config(cfg, 0);
	switch (n) {
	case 0:
		snprintf(cfg->address, sizeof(cfg->address), "no.such.host");
		*want = -EINVAL;
		return true;
	case 1: /* not an address of this host */
		snprintf(cfg->address, sizeof(cfg->address),
			 "198.19.255.254:0");
		*want = -EADDRNOTAVAIL;
		return true;
	case 2:
		cfg->mtu = 100;
		*want = -EINVAL;
		return true;
	default:
		return false;
	}
}

static const struct ry_test_provider soft = {
    .name = "soft",
    .ops = &ry_soft_ops,
    .config = soft_config,
    .has_faults = true,
    .strict_status = true,
    .sync_progress = true,
    .pkt_overhead = RY_SOFT_OVERHEAD,
    .bad_config = soft_bad_config,
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
