// SPDX-License-Identifier: BSD-2-Clause
/*
 * Placeholder until the verbs rail lands (issue "verbs rail"): opening a
 * verbs rail fails with a clear message instead of pretending.
 */
#include <errno.h>

#include "rails/verbs/verbs.h"
#include "src/log.h"

static int verbs_open(const struct ry_rail_config *cfg, struct ry_rail **rail_p)
{
	RY_ERR("verbs", "rail %s: the verbs rail is not implemented yet",
	       cfg->name);
	return -ENOSYS;
}

const struct ry_rail_ops ry_verbs_ops = {
	.name = "verbs",
	.open = verbs_open,
};
