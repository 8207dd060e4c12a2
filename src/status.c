// SPDX-License-Identifier: BSD-2-Clause
#include <railyard/railyard.h>

static const char *const status_names[RY_ESTATUS__MAX] = {
    [RY_OK] = "success",
    [RY_ETIMEDOUT] = "no path to the peer before op_timeout",
    [RY_ECANCELED] = "canceled: manager destroyed",
    [RY_EREMOTE_ACCESS] = "remote access error",
    [RY_ELOCAL] = "local region or length error",
    [RY_EPEER] = "peer unknown or unreachable",
    [RY_ESTALE] = "peer restarted: the target memory is gone",
};

const char *ry_status_str(enum ry_status st)
{
	if ((unsigned)st >= RY_ESTATUS__MAX)
		return "unknown status";
	return status_names[st];
}

const char *ry_version(void)
{
	return RY_VERSION_STRING;
}
