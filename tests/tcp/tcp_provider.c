// SPDX-License-Identifier: BSD-2-Clause
/* The tcp rail as the rail test fixture sees it: two rails listening on
 * 127.0.0.1, each on a kernel-chosen port. */
#include <errno.h>
#include <stdio.h>

#include "rails/tcp/tcp.h"
#include "tcp/tcp_provider.h"

void ry__tcp_test_config(struct ry_rail_config *cfg, int idx)
{
	snprintf(cfg->name, sizeof(cfg->name), "tcp%d", idx);
	cfg->provider = RY_PROVIDER_TCP;
	snprintf(cfg->address, sizeof(cfg->address), "127.0.0.1:0");
	cfg->mtu = 1500;
}

static bool tcp_bad_config(struct ry_rail_config *cfg, int n, int *want)
{
	return ry_test_ip_bad_config(ry__tcp_test_config, cfg, n, want);
}

const struct ry_test_provider ry__tcp_test_provider = {
    .name = "tcp",
    .ops = &ry__tcp_ops,
    .config = ry__tcp_test_config,
    .has_faults = true, /* set_link only: set_fault is -EOPNOTSUPP */
    .strict_status = true,
    .sync_progress = true,
    .pkt_overhead = 0,
    .bad_config = tcp_bad_config,
};
