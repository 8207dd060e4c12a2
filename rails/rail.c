// SPDX-License-Identifier: BSD-2-Clause
/*
 * The provider table and the name tables shared by every provider.  The
 * list of providers is a static table, not constructors: a reader sees here
 * every rail that can exist.
 */
#include <errno.h>
#include <stddef.h>

#include "rails/rail.h"
#include "rails/soft/soft.h"
#include "rails/loop/loop.h"
#ifdef RY_WITH_VERBS
#include "rails/verbs/verbs.h"
#endif

static const struct ry_rail_ops *const providers[] = {
	[RY_PROVIDER_SOFT] = &ry_soft_ops,
#ifdef RY_WITH_VERBS
	[RY_PROVIDER_VERBS] = &ry_verbs_ops,
#endif
	[RY_PROVIDER_LOOP] = &ry_loop_ops,	/* test-only */
	[RY_PROVIDER_NULL] = &ry_null_ops,	/* test-only */
};

const struct ry_rail_ops *ry__rail_ops(enum ry_provider provider)
{
	if ((size_t)provider >= sizeof(providers) / sizeof(providers[0]))
		return NULL;
	return providers[provider];
}

int ry__rail_open(const struct ry_rail_config *cfg, struct ry_rail **rail_p)
{
	const struct ry_rail_ops *ops = ry__rail_ops(cfg->provider);

	if (!ops)
		return -EPROTONOSUPPORT; /* built without that provider */
	return ops->open(cfg, rail_p);
}

static const char *const wc_status_names[RY_WC__MAX] = {
	[RY_WC_SUCCESS] = "success",
	[RY_WC_FLUSHED] = "flushed",
	[RY_WC_RETRY_EXCEEDED] = "transport retry counter exceeded",
	[RY_WC_RNR_RETRY_EXCEEDED] = "RNR retry counter exceeded",
	[RY_WC_REM_ACCESS] = "remote access error",
	[RY_WC_REM_INVALID_REQ] = "remote invalid request",
	[RY_WC_REM_OP] = "remote operation error",
	[RY_WC_LOC_PROT] = "local protection error",
	[RY_WC_LOC_LEN] = "local length error",
	[RY_WC_GENERAL_ERR] = "general error",
};

const char *ry_wc_status_str(enum ry_wc_status s)
{
	if ((unsigned)s >= RY_WC__MAX || !wc_status_names[s])
		return "unknown status";
	return wc_status_names[s];
}

static const char *const qp_state_names[] = {
	[RY_QPS_RESET] = "RESET", [RY_QPS_INIT] = "INIT",
	[RY_QPS_RTR] = "RTR",     [RY_QPS_RTS] = "RTS",
	[RY_QPS_ERR] = "ERR",
};

const char *ry_qp_state_str(enum ry_qp_state s)
{
	if ((unsigned)s > RY_QPS_ERR)
		return "?";
	return qp_state_names[s];
}
