// SPDX-License-Identifier: BSD-2-Clause
/*
 * Protection domains and memory regions: the software rails' (sw_mr.h),
 * with the soft rail's own check of the access flags.
 */
#include <errno.h>

#include "rails/soft/soft_int.h"

int ry__soft_reg_mr(struct ry_pd *pd, void *addr, size_t length,
		    unsigned access, struct ry_mr **mr_p)
{
	if (access &
	    ~(unsigned)(RY_ACCESS_LOCAL_WRITE | RY_ACCESS_REMOTE_WRITE |
			RY_ACCESS_REMOTE_READ))
		return -EINVAL;
	/* verbs: remote write needs local write */
	if ((access & RY_ACCESS_REMOTE_WRITE) &&
	    !(access & RY_ACCESS_LOCAL_WRITE))
		return -EINVAL;
	return ry__sw_reg_mr(&to_srail(pd->rail)->mem, pd, addr, length, access,
			     mr_p);
}
