/* Tests of common/coo: the wire layout, round trips, and rejection of bad payloads. */
#include "core/coo.h"
#include "ordo_check.h"

#include <math.h>
#include <string.h>

static void expect_reject(const uint8_t *buf, size_t len, uint32_t lo, uint32_t hi,
                          const char *want)
{
    size_t count = 12345;
    ORDO_CK_ERR(ordo__coo_check(buf, len, lo, hi, &count), ORDO_ERR_PROTO);
    ck_assert_msg(strstr(ordo__error_detail(), want) != NULL, "detail '%s' lacks '%s'",
                  ordo__error_detail(), want);
    ck_assert_uint_eq(count, 12345); /* out-parameter untouched on failure */
}

START_TEST(wire_layout_is_little_endian_pairs)
{
    ordo__coo_entry_t e[2] = {{1, 1.0f}, {0x01020304u, -2.0f}};
    uint8_t buf[16];
    ck_assert_uint_eq(ordo_coo_size(2), 16);
    ordo__coo_encode(e, 2, buf);
    const uint8_t want[16] = {1, 0, 0, 0, 0x00, 0x00, 0x80, 0x3f,
                              4, 3, 2, 1, 0x00, 0x00, 0x00, 0xc0};
    ck_assert_mem_eq(buf, want, 16);
    ordo__coo_entry_t g = ordo__coo_get(buf, 1);
    ck_assert_uint_eq(g.index, 0x01020304u);
    ck_assert_float_eq(g.value, -2.0f);
}
END_TEST

START_TEST(round_trip_and_patch)
{
    ordo__coo_entry_t e[5] = {{2, 0.5f}, {3, -1.25f}, {10, 3e-8f}, {11, -0.0f}, {63, 1e30f}};
    uint8_t buf[40];
    ordo__coo_encode(e, 5, buf);
    size_t count = 0;
    ORDO_CK_OK(ordo__coo_check(buf, sizeof buf, 0, 64, &count));
    ck_assert_uint_eq(count, 5);
    ordo__coo_entry_t out[5];
    ORDO_CK_OK(ordo__coo_decode(buf, sizeof buf, 2, 64, out, 5, &count));
    ck_assert_uint_eq(count, 5);
    ck_assert_mem_eq(out, e, sizeof e);
    ORDO_CK_ERR(ordo__coo_decode(buf, sizeof buf, 0, 64, out, 4, &count), ORDO_ERR_RANGE);

    float dst[64];
    for (int i = 0; i < 64; i++)
        dst[i] = 7.0f;
    ORDO_CK_OK(ordo__coo_patch(buf, sizeof buf, 0, 64, dst));
    ck_assert_float_eq(dst[2], 0.5f);
    ck_assert_float_eq(dst[3], -1.25f);
    ck_assert_float_eq(dst[63], 1e30f);
    ck_assert_float_eq(dst[4], 7.0f);
    ck_assert_float_eq(dst[0], 7.0f);

    ORDO_CK_OK(ordo__coo_check(NULL, 0, 0, 64, &count)); /* an empty payload is valid */
    ck_assert_uint_eq(count, 0);
}
END_TEST

START_TEST(bad_payloads_are_rejected)
{
    uint8_t buf[32];
    ordo__coo_entry_t ok[3] = {{1, 1.0f}, {5, 2.0f}, {9, 3.0f}};
    ordo__coo_encode(ok, 3, buf);
    expect_reject(buf, 13, 0, 64, "payload length 13 is not a multiple of 8");
    expect_reject(buf, 7, 0, 64, "not a multiple of 8");
    expect_reject(NULL, 8, 0, 64, "has no data");
    expect_reject(buf, 24, 0, 9, "coo: entry 2: index 9 out of range [0, 9)");
    expect_reject(buf, 24, 2, 64, "coo: entry 0: index 1 out of range [2, 64)");

    ordo__coo_entry_t dup[3] = {{1, 1.0f}, {5, 2.0f}, {5, 3.0f}};
    ordo__coo_encode(dup, 3, buf);
    expect_reject(buf, 24, 0, 64, "coo: entry 2: index 5 not greater than previous 5");
    ordo__coo_entry_t down[2] = {{7, 1.0f}, {3, 2.0f}};
    ordo__coo_encode(down, 2, buf);
    expect_reject(buf, 16, 0, 64, "entry 1: index 3 not greater than previous 7");

    ordo__coo_entry_t nan[2] = {{1, 1.0f}, {2, NAN}};
    ordo__coo_encode(nan, 2, buf);
    expect_reject(buf, 16, 0, 64, "coo: entry 1 (index 2): value is NaN");
    ordo__coo_entry_t inf[1] = {{4, -INFINITY}};
    ordo__coo_encode(inf, 1, buf);
    expect_reject(buf, 8, 0, 64, "value is infinite");

    /* A rejected patch leaves the destination untouched, even the entries before the bad
     * one. */
    ordo__coo_entry_t late[3] = {{0, 5.0f}, {1, 6.0f}, {100, 7.0f}};
    ordo__coo_encode(late, 3, buf);
    float dst[4] = {1, 1, 1, 1};
    ORDO_CK_ERR(ordo__coo_patch(buf, 24, 0, 4, dst), ORDO_ERR_PROTO);
    ck_assert_float_eq(dst[0], 1.0f);
    ck_assert_float_eq(dst[1], 1.0f);
    ordo__coo_entry_t out[3];
    size_t count = 99;
    ORDO_CK_ERR(ordo__coo_decode(buf, 24, 0, 4, out, 3, &count), ORDO_ERR_PROTO);
    ck_assert_uint_eq(count, 99);
}
END_TEST

static Suite *coo_suite(void)
{
    Suite *s = suite_create("coo");
    TCase *tc = tcase_create("format");
    tcase_add_test(tc, wire_layout_is_little_endian_pairs);
    tcase_add_test(tc, round_trip_and_patch);
    suite_add_tcase(s, tc);
    tc = tcase_create("validation");
    tcase_add_test(tc, bad_payloads_are_rejected);
    suite_add_tcase(s, tc);
    return s;
}

ORDO_CK_MAIN(coo_suite)
