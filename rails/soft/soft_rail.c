// SPDX-License-Identifier: BSD-2-Clause
/*
 * Placeholder until the soft rail lands (issue "soft rail"): every slot
 * says plainly that it is not there yet.
 */
#include <errno.h>

#include "rails/soft/soft.h"
#include "src/log.h"

static int soft_open(const struct ry_rail_config *cfg, struct ry_rail **rail_p)
{
	RY_ERR("soft", "rail %s: the soft rail is not implemented yet",
	       cfg->name);
	return -ENOSYS;
}

const struct ry_rail_ops ry_soft_ops = {
	.name = "soft",
	.open = soft_open,
};
