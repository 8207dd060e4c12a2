// SPDX-License-Identifier: BSD-2-Clause
/* The soft rail as the rail test fixture sees it: two rails on loopback,
 * held to its own exact statuses.  Shared by every soft suite. */
#include <errno.h>
#include <stdio.h>

#include "rails/soft/soft.h"
#include "rails/soft/wire.h"
#include "soft/soft_provider.h"

void ry__soft_test_config(struct ry_rail_config *cfg, int idx)
{
	snprintf(cfg->name, sizeof(cfg->name), "soft%d", idx);
	cfg->provider = RY_PROVIDER_SOFT;
	snprintf(cfg->address, sizeof(cfg->address), "127.0.0.1:0");
	cfg->mtu = 1500;
}

static bool soft_bad_config(struct ry_rail_config *cfg, int n, int *want)
{
	return ry_test_ip_bad_config(ry__soft_test_config, cfg, n, want);
}

const struct ry_test_provider ry__soft_test_provider = {
    .name = "soft",
    .ops = &ry__soft_ops,
    .config = ry__soft_test_config,
    .has_faults = true,
    .strict_status = true,
    .sync_progress = true,
    .pkt_overhead = RY__SOFT_OVERHEAD,
    .bad_config = soft_bad_config,
};

void ry__soft_test_short_pair(struct ry_test_pair *p)
{
	pair_open(p);
	p->attr_set = true;
	p->attr = (struct ry_qp_attr){.access = RY_TEST_ACCESS_ALL,
				      .ack_timeout_us = 2000,
				      .retry_cnt = 6,
				      .rnr_retry = 6,
				      .min_rnr_timer_us = 500,
				      .max_rd_atomic = 4};
	pair_connect(p);
}
