// SPDX-License-Identifier: BSD-2-Clause
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rails/soft/soft.h"
#include "soft_ns.h"

struct ry_rail *ry_test_soft_open_in_ns(const char *name, const char *addr,
					const char *ns_path, uint32_t mtu)
{
	struct ry_rail_config cfg = {0};
	struct ry_rail *r;
	int self = -1, fd, rc;

	cfg.provider = RY_PROVIDER_SOFT;
	snprintf(cfg.name, sizeof(cfg.name), "%s", name);
	snprintf(cfg.address, sizeof(cfg.address), "%s", addr);
	cfg.mtu = mtu;
	if (ns_path) {
		self = open("/proc/self/ns/net", O_RDONLY);
		fd = open(ns_path, O_RDONLY);
		if (self < 0 || fd < 0 || setns(fd, CLONE_NEWNET)) {
			perror(ns_path);
			exit(1);
		}
		close(fd);
	}
	/* as the manager opens rails: every slot of the table filled */
	rc = ry__rail_open(&cfg, &r);
	if (rc) {
		fprintf(stderr, "open soft rail on %s: %s\n", addr,
			strerror(-rc));
		exit(1);
	}
	if (ns_path) {
		if (setns(self, CLONE_NEWNET)) {
			perror("setns back");
			exit(1);
		}
		close(self);
	}
	return r;
}

double ry_test_now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}
