// SPDX-License-Identifier: BSD-2-Clause
/*
 * The port error counters a verbs rail reports as port_errors, read from a
 * fake sysfs tree: every error counter counted once (counters/ first, the
 * driver's hw_counters/ for what counters/ lacks), traffic counters not,
 * unreadable values skipped, a port without any of them -ENOENT; and the
 * PMA's PortCounters for a port whose sysfs has none (verbs_pma.c): the
 * request it sends, a stubbed answer summed, anything else refused.  Runs
 * everywhere (label unit): no device needed.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "rails/verbs/verbs_int.h"

static char root[64];

static void put(const char *rel, const char *value)
{
	char path[256], dir[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	snprintf(dir, sizeof(dir), "%s", path);
	for (char *p = dir + strlen(root) + 1; *p; p++)
		if (*p == '/') {
			*p = 0;
			mkdir(dir, 0755);
			*p = '/';
		}
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(value, f);
	fclose(f);
}

static void setup(void)
{
	snprintf(root, sizeof(root), "/tmp/ry_health.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(root));
}

static void teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	ck_assert_int_eq(system(cmd), 0);
}

START_TEST(test_hca_counters)
{
	uint64_t sum = 0;

	put("mlx5_0/ports/1/counters/symbol_error", "3\n");
	put("mlx5_0/ports/1/counters/link_downed", "1\n");
	put("mlx5_0/ports/1/counters/port_rcv_errors", "2\n");
	put("mlx5_0/ports/1/counters/excessive_buffer_overrun_errors", "4\n");
	/* traffic, not errors */
	put("mlx5_0/ports/1/counters/port_xmit_data", "999999\n");
	/* counted from counters/, not twice */
	put("mlx5_0/ports/1/hw_counters/link_downed", "1\n");
	/* a driver's own counter for what counters/ lacks */
	put("mlx5_0/ports/1/hw_counters/local_link_integrity_errors", "5\n");
	/* unreadable: skipped */
	put("mlx5_0/ports/1/counters/port_xmit_discards", "N/A\n");
	ck_assert_int_eq(ry__verbs_port_errors(root, "mlx5_0", 1, &sum), 0);
	ck_assert_uint_eq(sum, 3 + 1 + 2 + 4 + 5);
	/* another port of the device has its own */
	put("mlx5_0/ports/2/counters/symbol_error", "7\n");
	ck_assert_int_eq(ry__verbs_port_errors(root, "mlx5_0", 2, &sum), 0);
	ck_assert_uint_eq(sum, 7);
}
END_TEST

/* rxe keeps link_downed in hw_counters/ and has no counters/ at all. */
START_TEST(test_rxe_counters)
{
	uint64_t sum = 0;

	put("rxe0/ports/1/hw_counters/link_downed", "2\n");
	put("rxe0/ports/1/hw_counters/sent_pkts", "12345\n");
	ck_assert_int_eq(ry__verbs_port_errors(root, "rxe0", 1, &sum), 0);
	ck_assert_uint_eq(sum, 2);
}
END_TEST

START_TEST(test_none)
{
	uint64_t sum = 42;

	ck_assert_int_eq(ry__verbs_port_errors(root, "nodev", 1, &sum),
			 -ENOENT);
	put("siw0/ports/1/hw_counters/sent_pkts", "1\n");
	ck_assert_int_eq(ry__verbs_port_errors(root, "siw0", 1, &sum), -ENOENT);
	ck_assert_uint_eq(sum, 42); /* untouched on error */
}
END_TEST

/* ---- the PMA's PortCounters, for ports without them in sysfs ---- */

/* A PMA's GetResp(PortCounters) for port, its error fields set as a
 * port with symbol 3, recoveries 1, downs 2, receive 4, remote physical
 * 5, switch relay 100 (not an error of this port), discards 6, transmit
 * constraint 100 (not counted), integrity 7 and overrun 8 would send. */
static void pma_reply(uint8_t *mad, unsigned port)
{
	uint8_t *d = mad + 64;

	memset(mad, 0, 256);
	mad[0] = 1;
	mad[1] = 0x04;
	mad[2] = 1;
	mad[3] = 0x81;
	mad[16] = 0x00;
	mad[17] = 0x12;
	d[1] = (uint8_t)port;
	d[5] = 3;	    /* symbol errors, big-endian 16 bits at 4 */
	d[6] = 1;	    /* link error recoveries */
	d[7] = 2;	    /* link downs */
	d[9] = 4;	    /* receive errors */
	d[11] = 5;	    /* remote physical receive errors */
	d[13] = 100;	    /* switch relay errors */
	d[15] = 6;	    /* transmit discards */
	d[16] = 100;	    /* transmit constraint errors */
	d[19] = 7 << 4 | 8; /* integrity | overrun */
	d[27] = 0xff;	    /* transmit data: traffic */
}

START_TEST(test_pma_parse)
{
	uint8_t mad[256];
	uint64_t sum = 42;

	pma_reply(mad, 1);
	ck_assert_int_eq(ry__verbs_pma_parse(mad, sizeof(mad), 1, &sum), 0);
	ck_assert_uint_eq(sum, 3 + 1 + 2 + 4 + 5 + 6 + 7 + 8);
	/* symbol errors past 255: all 16 bits */
	mad[64 + 4] = 1;
	ck_assert_int_eq(ry__verbs_pma_parse(mad, sizeof(mad), 1, &sum), 0);
	ck_assert_uint_eq(sum, 256 + 3 + 1 + 2 + 4 + 5 + 6 + 7 + 8);

	/* anything but our answer is refused, sum untouched */
	sum = 42;
	pma_reply(mad, 2);
	ck_assert_int_eq(ry__verbs_pma_parse(mad, sizeof(mad), 1, &sum),
			 -EPROTO);
	pma_reply(mad, 1);
	mad[3] = 0x01; /* a Get, not its answer */
	ck_assert_int_eq(ry__verbs_pma_parse(mad, sizeof(mad), 1, &sum),
			 -EPROTO);
	pma_reply(mad, 1);
	mad[1] = 0x81; /* another class */
	ck_assert_int_eq(ry__verbs_pma_parse(mad, sizeof(mad), 1, &sum),
			 -EPROTO);
	pma_reply(mad, 1);
	mad[17] = 0x13; /* another attribute */
	ck_assert_int_eq(ry__verbs_pma_parse(mad, sizeof(mad), 1, &sum),
			 -EPROTO);
	pma_reply(mad, 1);
	ck_assert_int_eq(ry__verbs_pma_parse(mad, 100, 1, &sum), -EPROTO);
	mad[5] = 0x0c; /* status: unsupported attribute */
	ck_assert_int_eq(ry__verbs_pma_parse(mad, sizeof(mad), 1, &sum),
			 -EOPNOTSUPP);
	ck_assert_uint_eq(sum, 42);
}
END_TEST

START_TEST(test_pma_request)
{
	uint8_t mad[256];

	memset(mad, 0xee, sizeof(mad));
	ry__verbs_pma_request(mad, 2, 0x0102030405060708ull);
	ck_assert_uint_eq(mad[0], 1);
	ck_assert_uint_eq(mad[1], 0x04); /* PerfMgmt */
	ck_assert_uint_eq(mad[2], 1);
	ck_assert_uint_eq(mad[3], 0x01); /* Get */
	ck_assert_uint_eq(mad[4] | mad[5], 0);
	for (int i = 0; i < 8; i++)
		ck_assert_uint_eq(mad[8 + i], i + 1);
	ck_assert_uint_eq(mad[16] << 8 | mad[17], 0x0012);
	ck_assert_uint_eq(mad[64 + 1], 2); /* PortSelect */
	for (int i = 66; i < 256; i++)
		ck_assert_uint_eq(mad[i], 0);
}
END_TEST

/* No LID (RoCE, iWARP): nothing to ask; a device that is not there: an
 * error, at once, not a hang. */
START_TEST(test_pma_nothing_to_ask)
{
	uint64_t sum = 42;

	ck_assert_int_eq(ry__verbs_pma_port_errors("mlx5_0", 1, 0, &sum),
			 -ENOENT);
	ck_assert_int_lt(
	    ry__verbs_pma_port_errors("ry_no_such_dev", 1, 1, &sum), 0);
	ck_assert_uint_eq(sum, 42);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("verbs_health");
	TCase *tc = tcase_create("port_errors");
	SRunner *sr;
	int failed;

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_hca_counters);
	tcase_add_test(tc, test_rxe_counters);
	tcase_add_test(tc, test_none);
	tcase_add_test(tc, test_pma_parse);
	tcase_add_test(tc, test_pma_request);
	tcase_add_test(tc, test_pma_nothing_to_ask);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
