// SPDX-License-Identifier: BSD-2-Clause
/* The drill's CSV and SVG: what an operator keeps after a drill. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "src/cli/report.h"

static void fill(struct cli_report *r)
{
	memset(r, 0, sizeof(*r));
	snprintf(r->title, sizeof(r->title),
		 "drill a -> b <4 rails & 1 pulled>");
	r->n_rails = 4;
	for (unsigned i = 0; i < 4; i++)
		snprintf(r->rails[i], sizeof(r->rails[i]), "r%u", i);
	for (unsigned s = 0; s < 10; s++) {
		struct cli_report_sample x = {.t = s + 1};

		for (unsigned i = 0; i < 4; i++)
			x.mbyte_s[i] = (i == 1 && s >= 3 && s < 7) ? 0 : 25;
		ck_assert_int_eq(cli_report_add_sample(r, &x), 0);
	}
	struct cli_report_event down = {
	    .t = 3.013, .detect_ms = 12.5, .resume_ms = 3.1};
	struct cli_report_event up = {
	    .t = 7.4, .detect_ms = -1, .resume_ms = -1};
	snprintf(down.rail, sizeof(down.rail), "r1");
	snprintf(down.event, sizeof(down.event), "down");
	snprintf(up.rail, sizeof(up.rail), "r1");
	snprintf(up.event, sizeof(up.event), "up");
	ck_assert_int_eq(cli_report_add_event(r, &down), 0);
	ck_assert_int_eq(cli_report_add_event(r, &up), 0);
}

static int count(const char *hay, const char *needle)
{
	int n = 0;

	for (const char *p = hay; (p = strstr(p, needle)); p++)
		n++;
	return n;
}

START_TEST(test_csv)
{
	struct cli_report r;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	fill(&r);
	ck_assert_int_eq(cli_report_write_csv(&r, f), 0);
	fclose(f);
	ck_assert_ptr_nonnull(
	    strstr(buf, "t_s,r0_MBps,r1_MBps,r2_MBps,r3_MBps,total_MBps\n"));
	ck_assert_ptr_nonnull(
	    strstr(buf, "\n4.000,25.000,0.000,25.000,25.000,75.000\n"));
	ck_assert_ptr_nonnull(strstr(buf, "\n3.013,r1,down,12.5,3.1\n"));
	ck_assert_ptr_nonnull(strstr(buf, "\n7.400,r1,up,,\n"));
	ck_assert_int_eq(count(buf, "\n"), 1 + 10 + 2 + 2);
	free(buf);
	cli_report_free(&r);
}
END_TEST

START_TEST(test_svg)
{
	struct cli_report r;
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	fill(&r);
	ck_assert_int_eq(cli_report_write_svg(&r, f), 0);
	fclose(f);
	ck_assert_int_eq(strncmp(buf, "<svg ", 5), 0);
	ck_assert_ptr_nonnull(strstr(buf, "</svg>\n"));
	ck_assert_int_eq(count(buf, "<polyline class=\"rail\""), 5);
	ck_assert_int_eq(count(buf, "<g class=\"event\">"), 2);
	ck_assert_ptr_nonnull(strstr(buf, "&lt;4 rails &amp; 1 pulled&gt;"));
	ck_assert_ptr_nonnull(strstr(buf, ">r1 down<"));
	if (getenv("CLI_REPORT_SVG")) { /* to look at it */
		FILE *o = fopen(getenv("CLI_REPORT_SVG"), "w");

		fputs(buf, o);
		fclose(o);
	}
	free(buf);
	cli_report_free(&r);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("report");
	TCase *tc = tcase_create("drill files");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_csv);
	tcase_add_test(tc, test_svg);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
