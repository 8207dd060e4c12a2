// SPDX-License-Identifier: BSD-2-Clause
/* An out-of-tree program, as a storage server would be, built against the
 * installed railyard. */
#include <stdio.h>
#include <string.h>

#include <railyard/railyard.h>

int main(void)
{
	struct ry_config *cfg;
	int bad;

	if (ry_config_demo(&cfg))
		return 1;
	bad = ry_config_validate(cfg, NULL, NULL);
	printf("railyard %s, demo config with %u rails, %d problems\n",
	       ry_version(), cfg->n_rails, bad);
	ry_config_free(cfg);
	return bad || strcmp(ry_status_str(RY_OK), "success") != 0;
}
