/* Tests of common/sparse_wire: the plan's sparse member and the sparse protocol's payloads,
 * round trips and the refusal of everything malformed, with the reason. */
#include "core/sparse_wire.h"
#include "ordo_check.h"

#include <math.h>
#include <string.h>

static const char good_plan[] =
    "{\"policy\":\"fifo\",\"sparse\":{\"n\":1000,\"k\":10,\"density\":0.01,\"nbins\":64,"
    "\"threshold_period\":8,\"repartition_period\":64,\"bounds\":[0,400,1000]}}";

START_TEST(plan_is_parsed)
{
    ordo__sparse_plan_t p;
    ORDO_CK_OK(ordo__sparse_wire_plan(good_plan, 2, &p));
    ck_assert_uint_eq(p.n, 1000);
    ck_assert_uint_eq(p.k, 10);
    ck_assert_double_eq(p.density, 0.01);
    ck_assert_int_eq(p.nbins, 64);
    ck_assert_int_eq(p.threshold_period, 8);
    ck_assert_int_eq(p.repartition_period, 64);
    ck_assert_int_eq(p.servers, 2);
    ck_assert_uint_eq(p.bounds[0], 0);
    ck_assert_uint_eq(p.bounds[1], 400);
    ck_assert_uint_eq(p.bounds[2], 1000);
    ordo__sparse_wire_plan_fini(&p);
    ck_assert_ptr_null(p.bounds);
    ordo__sparse_wire_plan_fini(&p); /* twice is harmless */
}
END_TEST

START_TEST(plan_without_sparse_member_is_not_found)
{
    ordo__sparse_plan_t p;
    ORDO_CK_ERR(ordo__sparse_wire_plan("{\"policy\":\"tao\"}", 2, &p), ORDO_ERR_NOTFOUND);
    ORDO_CK_ERR(ordo__sparse_wire_plan(NULL, 2, &p), ORDO_ERR_NOTFOUND);
    ORDO_CK_ERR(ordo__sparse_wire_plan("not json", 2, &p), ORDO_ERR_NOTFOUND);
}
END_TEST

/* good_plan with one member's text replaced */
static int parse_with(const char *from, const char *to, int servers)
{
    char text[512];
    const char *at = strstr(good_plan, from);
    ck_assert_ptr_nonnull(at);
    snprintf(text, sizeof text, "%.*s%s%s", (int)(at - good_plan), good_plan, to,
             at + strlen(from));
    ordo__sparse_plan_t p;
    int rc = ordo__sparse_wire_plan(text, servers, &p);
    if (rc == 0) ordo__sparse_wire_plan_fini(&p);
    return rc;
}

START_TEST(bad_plans_are_refused_with_the_member)
{
    ORDO_CK_ERR(parse_with("\"k\":10", "\"k\":0", 2), ORDO_ERR_PROTO);
    ck_assert_str_eq(ordo__error_detail(), "plan: sparse.k must be an integer in [1, 1000]");
    ORDO_CK_ERR(parse_with("\"k\":10", "\"k\":1001", 2), ORDO_ERR_PROTO);
    ORDO_CK_ERR(parse_with("\"n\":1000", "\"n\":\"1000\"", 2), ORDO_ERR_PROTO);
    ck_assert_str_eq(ordo__error_detail(), "plan: sparse.n must be an integer in [1, 4294967294]");
    ORDO_CK_ERR(parse_with("\"nbins\":64", "\"nbins\":0", 2), ORDO_ERR_PROTO);
    ORDO_CK_ERR(parse_with("\"threshold_period\":8", "\"threshold_period\":-1", 2), ORDO_ERR_PROTO);
    ck_assert_str_eq(ordo__error_detail(),
                     "plan: sparse.threshold_period must be an integer in [1, 1000000]");
    ORDO_CK_ERR(parse_with("\"density\":0.01", "\"density\":1.5", 2), ORDO_ERR_PROTO);
    ck_assert_str_eq(ordo__error_detail(), "plan: sparse.density must be a number in (0, 1]");
    ORDO_CK_ERR(parse_with("\"bounds\":[0,400,1000]", "\"bounds\":[0,1000]", 2), ORDO_ERR_PROTO);
    ck_assert_str_eq(ordo__error_detail(), "plan: sparse.bounds must hold 3 boundaries");
    ORDO_CK_ERR(parse_with("[0,400,1000]", "[0,400,1000]", 3), ORDO_ERR_PROTO); /* 3 servers */
    ORDO_CK_ERR(parse_with("[0,400,1000]", "[0,-4,1000]", 2), ORDO_ERR_PROTO);
    ck_assert_str_eq(ordo__error_detail(), "plan: sparse.bounds[1] is not an index in [0, 1000]");
    ORDO_CK_ERR(parse_with("[0,400,1000]", "[0,400,999]", 2), ORDO_ERR_PROTO);
    ORDO_CK_ERR(parse_with("[0,400,1000]", "[0,0,1000]", 2), ORDO_ERR_PROTO);
    ORDO_CK_ERR(parse_with("[0,400,1000]", "[1,400,1000]", 2), ORDO_ERR_PROTO);
    ORDO_CK_OK(parse_with("[0,400,1000]", "[0,999,1000]", 2));
}
END_TEST

START_TEST(counts_round_trip_and_sizes_are_checked)
{
    uint64_t c[3] = {1, 0x123456789abcull, 7}, sum[3] = {10, 20, 30};
    uint8_t buf[24];
    ordo__sparse_wire_put_counts(c, 3, buf);
    ck_assert_uint_eq(buf[8], 0xbc); /* little-endian */
    ORDO_CK_OK(ordo__sparse_wire_add_counts(buf, 24, 3, sum, "POSHIST"));
    ck_assert_uint_eq(sum[0], 11);
    ck_assert_uint_eq(sum[1], 0x123456789abcull + 20);
    ck_assert_uint_eq(sum[2], 37);
    ORDO_CK_ERR(ordo__sparse_wire_add_counts(buf, 23, 3, sum, "POSHIST"), ORDO_ERR_PROTO);
    ck_assert_str_eq(ordo__error_detail(), "POSHIST: 23 bytes, expected 24");
    ORDO_CK_ERR(ordo__sparse_wire_add_counts(NULL, 0, 3, sum, "MAGHIST"), ORDO_ERR_PROTO);
    ck_assert_uint_eq(sum[0], 11); /* a refused payload adds nothing */
}
END_TEST

START_TEST(regions_round_trip_and_are_validated)
{
    uint32_t b[3] = {0, 77, 100}, got[3] = {9, 9, 9}, epoch = 0;
    uint8_t buf[16];
    ck_assert_uint_eq(ordo_sparse_wire_regions_size(2), 16);
    ordo__sparse_wire_put_regions(5, b, 2, buf);
    ORDO_CK_OK(ordo__sparse_wire_get_regions(buf, 16, 2, 100, &epoch, got));
    ck_assert_uint_eq(epoch, 5);
    ck_assert_uint_eq(got[1], 77);
    ck_assert_uint_eq(got[2], 100);
    ORDO_CK_ERR(ordo__sparse_wire_get_regions(buf, 12, 2, 100, &epoch, got), ORDO_ERR_PROTO);
    ck_assert_str_eq(ordo__error_detail(), "REGIONS: 12 bytes, expected 16 for 2 servers");
    ORDO_CK_ERR(ordo__sparse_wire_get_regions(buf, 16, 2, 101, &epoch, got), ORDO_ERR_PROTO);
    uint32_t bad[3] = {0, 100, 100};
    ordo__sparse_wire_put_regions(6, bad, 2, buf);
    got[1] = 1;
    ORDO_CK_ERR(ordo__sparse_wire_get_regions(buf, 16, 2, 100, &epoch, got), ORDO_ERR_PROTO);
    ck_assert_uint_eq(epoch, 5); /* nothing written on refusal */
    ck_assert_uint_eq(got[1], 1);
}
END_TEST

START_TEST(thresholds_must_be_finite_and_not_negative)
{
    uint8_t buf[4];
    float v;
    ordo__sparse_wire_put_float(0.25f, buf);
    ORDO_CK_OK(ordo__sparse_wire_get_float(buf, 4, &v));
    ck_assert_float_eq(v, 0.25f);
    ordo__sparse_wire_put_float(0.0f, buf);
    ORDO_CK_OK(ordo__sparse_wire_get_float(buf, 4, &v));
    ck_assert_float_eq(v, 0.0f);
    ordo__sparse_wire_put_float(-1.0f, buf);
    ORDO_CK_ERR(ordo__sparse_wire_get_float(buf, 4, &v), ORDO_ERR_PROTO);
    ck_assert_str_eq(ordo__error_detail(), "THRESHOLD: -1 is not a finite value >= 0");
    ordo__sparse_wire_put_float(NAN, buf);
    ORDO_CK_ERR(ordo__sparse_wire_get_float(buf, 4, &v), ORDO_ERR_PROTO);
    ordo__sparse_wire_put_float(INFINITY, buf);
    ORDO_CK_ERR(ordo__sparse_wire_get_float(buf, 4, &v), ORDO_ERR_PROTO);
    ORDO_CK_ERR(ordo__sparse_wire_get_float(buf, 3, &v), ORDO_ERR_PROTO);
    ck_assert_str_eq(ordo__error_detail(), "THRESHOLD: 3 bytes, expected 4");
    float f[2] = {0}, src[2] = {1.5f, -2.0f};
    ordo__sparse_wire_get_f32s(src, 8, f);
    ck_assert_float_eq(f[0], 1.5f);
    ck_assert_float_eq(f[1], -2.0f);
}
END_TEST

static Suite *sparse_wire_suite(void)
{
    Suite *s = suite_create("sparse_wire");
    TCase *t = tcase_create("plan");
    tcase_add_test(t, plan_is_parsed);
    tcase_add_test(t, plan_without_sparse_member_is_not_found);
    tcase_add_test(t, bad_plans_are_refused_with_the_member);
    suite_add_tcase(s, t);
    t = tcase_create("payloads");
    tcase_add_test(t, counts_round_trip_and_sizes_are_checked);
    tcase_add_test(t, regions_round_trip_and_are_validated);
    tcase_add_test(t, thresholds_must_be_finite_and_not_negative);
    suite_add_tcase(s, t);
    return s;
}

ORDO_CK_MAIN(sparse_wire_suite)
