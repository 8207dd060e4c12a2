// SPDX-License-Identifier: BSD-2-Clause
/*
 * The provider table (rails/rail.c): a test registers a provider at a
 * test-only kind, and every slot it leaves empty answers -EOPNOTSUPP
 * through the ordinary dispatch, so the hot path needs no NULL checks.
 * A config file still cannot name a registered test provider.
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rails/rail.h"

#define KIND ((enum ry_provider)(RY__PROVIDER_TEST + 2))
#define FREE_KIND ((enum ry_provider)(RY__PROVIDER_TEST + 3))

static int n_closed;

static int bare_open(const struct ry_rail_config *cfg, struct ry_rail **rail_p)
{
	struct ry_rail *r = calloc(1, sizeof(*r));

	if (!r)
		return -ENOMEM;
	*rail_p = r;
	return 0;
}

static void bare_close(struct ry_rail *rail)
{
	n_closed++;
	free(rail);
}

/* only what registration demands: open and close */
static const struct ry_rail_ops bare_ops = {
    .name = "bare",
    .open = bare_open,
    .close = bare_close,
};

static const struct ry_rail_ops other_ops = {
    .name = "other",
    .open = bare_open,
    .close = bare_close,
};

static const struct ry_rail_ops no_close_ops = {
    .name = "no-close",
    .open = bare_open,
};

START_TEST(register_checks)
{
	ck_assert_int_eq(
	    ry__rail_provider_register(RY_PROVIDER_SOFT, &bare_ops), -EINVAL);
	ck_assert_int_eq(ry__rail_provider_register(
			     (enum ry_provider)RY__PROVIDER_MAX, &bare_ops),
			 -EINVAL);
	ck_assert_int_eq(ry__rail_provider_register(KIND, NULL), -EINVAL);
	ck_assert_int_eq(ry__rail_provider_register(KIND, &no_close_ops),
			 -EINVAL);
	ck_assert_ptr_null(ry__rail_ops(KIND));

	ck_assert_int_eq(ry__rail_provider_register(KIND, &bare_ops), 0);
	ck_assert_int_eq(ry__rail_provider_register(KIND, &bare_ops), 0);
	ck_assert_int_eq(ry__rail_provider_register(KIND, &other_ops), -EEXIST);
	ck_assert_str_eq(ry__rail_ops(KIND)->name, "bare");
	/* the shipped providers are still there, complete */
	ck_assert_ptr_nonnull(ry__rail_ops(RY_PROVIDER_SOFT));
	ck_assert_ptr_nonnull(ry__rail_ops(RY_PROVIDER_SOFT)->set_fault);
}
END_TEST

START_TEST(unregistered_kind)
{
	struct ry_rail_config cfg = {.provider = FREE_KIND};
	struct ry_rail *r = NULL;

	ck_assert_ptr_null(ry__rail_ops(FREE_KIND));
	ck_assert_ptr_null(ry__rail_ops((enum ry_provider)RY__PROVIDER_MAX));
	ck_assert_int_eq(ry__rail_open(&cfg, &r), -EPROTONOSUPPORT);
	ck_assert_ptr_null(r);
}
END_TEST

START_TEST(empty_slots_not_supported)
{
	struct ry_rail_config cfg = {.provider = KIND};
	struct ry_rail *r = NULL;
	struct ry_pd pd, *pdp = NULL;
	struct ry_mr mr = {.pd = &pd}, *mrp = NULL;
	struct ry_qp qp = {.pd = &pd}, *qpp = NULL;
	struct ry_qp_init qi = {.max_send_wr = 1};
	struct ry_qp_attr qa = {0};
	struct ry_send_wr swr = {0};
	struct ry_recv_wr rwr = {0};
	struct ry_rail_attr attr;
	struct ry_rail_event ev;
	struct ry_rail_stats st;
	struct ry_fault f = {0};
	struct ry_wc wc;
	char buf[64];

	ck_assert_int_eq(ry__rail_provider_register(KIND, &bare_ops), 0);
	ck_assert_int_eq(ry__rail_open(&cfg, &r), 0);
	ck_assert_ptr_eq(r->ops, ry__rail_ops(KIND));
	pd.rail = r;

	ck_assert_int_eq(ry__rail_query(r, &attr), -EOPNOTSUPP);
	ck_assert_int_eq(ry__rail_fd(r), -EOPNOTSUPP);
	ck_assert_int_eq(ry__rail_watch(r, -1, NULL), -EOPNOTSUPP);
	ck_assert_int_eq(ry__rail_progress(r), -EOPNOTSUPP);
	ck_assert_int_eq(ry__rail_get_event(r, &ev), -EOPNOTSUPP);
	ck_assert_int_eq(ry__rail_alloc_pd(r, &pdp), -EOPNOTSUPP);
	ck_assert_int_eq(ry__rail_dealloc_pd(&pd), -EOPNOTSUPP);
	ck_assert_int_eq(ry__rail_reg_mr(&pd, buf, sizeof(buf), 0, &mrp),
			 -EOPNOTSUPP);
	ck_assert_int_eq(ry__rail_dereg_mr(&mr), -EOPNOTSUPP);
	ck_assert_int_eq(ry__rail_create_qp(&pd, &qi, &qpp), -EOPNOTSUPP);
	ck_assert_int_eq(ry__rail_modify_qp(&qp, RY_QPS_INIT, &qa),
			 -EOPNOTSUPP);
	ck_assert_int_eq(ry__rail_destroy_qp(&qp), -EOPNOTSUPP);
	ck_assert_int_eq(ry__rail_post_send(&qp, &swr, 1), -EOPNOTSUPP);
	ck_assert_int_eq(ry__rail_post_recv(r, &rwr, 1), -EOPNOTSUPP);
	ck_assert_int_eq(ry__rail_poll_cq(r, &wc, 1), -EOPNOTSUPP);
	ck_assert_int_eq(ry__rail_set_fault(r, &f), -EOPNOTSUPP);
	ck_assert_int_eq(ry__rail_set_link(r, RY_LINK_DOWN), -EOPNOTSUPP);
	ck_assert_int_eq(ry__rail_get_stats(r, &st), -EOPNOTSUPP);
	/* outputs are set only on success */
	ck_assert_ptr_null(pdp);
	ck_assert_ptr_null(mrp);
	ck_assert_ptr_null(qpp);

	ry__rail_close(r);
	ck_assert_int_eq(n_closed, 1);
}
END_TEST

START_TEST(config_cannot_name_test_provider)
{
	static const char text[] = "rail r0 {\n provider = bare\n"
				   " address = \"127.0.0.1\"\n}\n";
	struct ry_config *cfg = NULL;

	ck_assert_int_eq(ry__rail_provider_register(KIND, &bare_ops), 0);
	ck_assert_int_eq(ry_config_parse(text, "<test>", &cfg, NULL, NULL),
			 -EINVAL);
	ck_assert_ptr_null(cfg);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("rail_ops");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int nf;

	tcase_add_test(tc, register_checks);
	tcase_add_test(tc, unregistered_kind);
	tcase_add_test(tc, empty_slots_not_supported);
	tcase_add_test(tc, config_cannot_name_test_provider);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf ? 1 : 0;
}
