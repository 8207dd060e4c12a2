// SPDX-License-Identifier: BSD-2-Clause
#include <check.h>
#include <errno.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

#include <railyard/railyard.h>

#include "verbs_provider.h"

static const char *dev_name(int idx)
{
	const char *e = getenv(idx ? "RY_HW_DEV_B" : "RY_HW_DEV_A");

	return e && *e ? e : idx ? "rxe_b0" : "rxe_a0";
}

static enum ry_cm_mode cm_mode(void)
{
	const char *e = getenv("RY_HW_CM");

	if (e && !strcmp(e, "rdma_cm"))
		return RY_CM_RDMA_CM;
	if (e && !strcmp(e, "manual"))
		return RY_CM_MANUAL;
	return RY_CM_AUTO;
}

static void verbs_config(struct ry_rail_config *cfg, int idx)
{
	const char *ip;

	memset(cfg, 0, sizeof(*cfg));
	snprintf(cfg->name, sizeof(cfg->name), "hw%d", idx);
	cfg->provider = RY_PROVIDER_VERBS;
	snprintf(cfg->network, sizeof(cfg->network), "hw");
	snprintf(cfg->device, sizeof(cfg->device), "%s", dev_name(idx));
	cfg->port = 1;
	cfg->gid_index = -1;
	cfg->weight = 1;
	/* RY_HW_CM=rdma_cm: the suites again with librdmacm connecting */
	cfg->cm = cm_mode();
	/* the rail's IP address: iWARP devices (siw) need it for rdma_cm */
	ip = getenv(idx ? "RY_HW_IP_B" : "RY_HW_IP_A");
	if (ip)
		snprintf(cfg->address, sizeof(cfg->address), "%s", ip);
}

/* No such device, no such port, no such GID. */
static bool verbs_bad_config(struct ry_rail_config *cfg, int n, int *want)
{
	verbs_config(cfg, 0);
	switch (n) {
	case 0:
		snprintf(cfg->device, sizeof(cfg->device), "no_such_dev9");
		*want = -ENODEV;
		return true;
	case 1:
		cfg->port = 9;
		*want = -ENODEV;
		return true;
	case 2:
		cfg->gid_index = 200;
		*want = 0;
		return true;
	default:
		return false;
	}
}

/* Longer timeouts than the soft rail's: rxe under QEMU's emulation is
 * slow, and the HCA rounds the ACK timeout up to 4.096 us * 2^n. */
static const struct ry_qp_attr verbs_defaults = {
    .access =
	RY_ACCESS_LOCAL_WRITE | RY_ACCESS_REMOTE_WRITE | RY_ACCESS_REMOTE_READ,
    .ack_timeout_us = 100000,
    .retry_cnt = 5,
    .rnr_retry = 5,
    .min_rnr_timer_us = 1000,
    .max_rd_atomic = 16,
};

static struct ry_test_provider verbs = {
    .name = "verbs",
    .config = verbs_config,
    .has_faults = false,
    /* rxe's statuses differ (rails/rail.h lists them) */
    .strict_status = false,
    /* the HCA works on its own, without progress() */
    .sync_progress = false,
    /* the path MTU is the payload per packet */
    .pkt_overhead = 0,
    .poll_ms = 20,
    .defaults = &verbs_defaults,
    .bad_config = verbs_bad_config,
};

#define NO_DEVICE                                                              \
	"no RDMA device here (/sys/class/infiniband is missing); "             \
	"tests/hw/hw_qemu_rxe.sh runs this suite in a QEMU guest with "        \
	"soft-RoCE"

const char *verbs_provider_init(void)
{
	static char why[256];

	verbs.ops = ry__rail_ops(RY_PROVIDER_VERBS);
	if (!verbs.ops)
		return "railyard was built without the verbs rail "
		       "(RY_WITH_VERBS=OFF)";
	if (access("/sys/class/infiniband", F_OK))
		return NO_DEVICE;
	for (int i = 0; i < 2; i++) {
		char path[128];

		snprintf(path, sizeof(path), "/sys/class/infiniband/%s",
			 dev_name(i));
		if (access(path, F_OK)) {
			snprintf(why, sizeof(why),
				 "no RDMA device %s here (set RY_HW_DEV_A and "
				 "RY_HW_DEV_B to two connected devices)",
				 dev_name(i));
			return why;
		}
	}
	ry_test_provider = &verbs;
	return NULL;
}

static int run(char **argv)
{
	int status;
	pid_t pid;

	if (posix_spawnp(&pid, argv[0], NULL, NULL, argv, environ))
		return -errno;
	if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
	    WEXITSTATUS(status))
		return -EIO;
	return 0;
}

static const char *netdev(int idx)
{
	const char *dev = getenv(idx ? "RY_HW_NETDEV_B" : "RY_HW_NETDEV_A");

	return dev && *dev ? dev : NULL;
}

int verbs_cable(int idx, bool plugged)
{
	char *argv[] = {
	    "ip", "link", "set", (char *)netdev(idx), plugged ? "up" : "down",
	    NULL};

	return argv[3] ? run(argv) : -EOPNOTSUPP;
}

int verbs_blackhole(int idx, bool on)
{
	char *add[] = {"tc",   "qdisc", "add",	"dev",	(char *)netdev(idx),
		       "root", "netem", "loss", "100%", NULL};
	char *del[] = {"tc",   "qdisc", "del", "dev", (char *)netdev(idx),
		       "root", NULL};

	if (!netdev(idx))
		return -EOPNOTSUPP;
	return run(on ? add : del);
}

int verbs_run_suite(const char *name, void (*add)(Suite *s))
{
	const char *why = verbs_provider_init();
	SRunner *sr;
	Suite *s;
	int failed;

	if (why) {
		printf("SKIP: %s: %s\n", name, why);
		return 77;
	}
	if (getenv("RY_HW_DEBUG"))
		ry_log_set_level(RY_LOG_DEBUG);
	s = suite_create(name);
	add(s);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
