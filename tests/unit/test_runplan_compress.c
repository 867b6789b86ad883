/* Tests of scheduler/runplan_compress: with [push] compression = auto the plan's
 * "compression" member names a codec for every key: the 16-bit cast for the tensors whose
 * bytes cost more link time than their conversions at the planned link rate, float32 for the
 * small ones, and float32 everywhere on a link fast enough that a cast would not pay; its
 * reasons and the step model's two predictions go with it. Without auto there is no member. */
#include "scheduler/runplan.h"
#include "common/conf.h"
#include "common/keys.h"
#include "core/model.h"
#include "ordo_check.h"

#include <jansson.h>
#include <string.h>

#define PROFILE                                                                                    \
    "{\"format\":\"ordo-model/1\",\"name\":\"three\",\"batch\":8,\"params\":["                     \
    "{\"name\":\"big\",\"shape\":[256,256]},{\"name\":\"small\",\"shape\":[256]},"                 \
    "{\"name\":\"mid\",\"shape\":[2560]}],\"ops\":["                                               \
    "{\"name\":\"op_b\",\"inputs\":[],\"params\":[\"big\"],\"fwd_us\":30,\"bwd_us\":60},"          \
    "{\"name\":\"op_s\",\"inputs\":[\"op_b\"],\"params\":[\"small\"],\"fwd_us\":2,\"bwd_us\":4},"  \
    "{\"name\":\"op_m\",\"inputs\":[\"op_s\"],\"params\":[\"mid\"],\"fwd_us\":1,\"bwd_us\":2}]}"

/* plan_of: the plan of PROFILE for 2 workers and 1 server under tao, compression and the
 * planned link rate bw */
static json_t *plan_of(const char *compression, const char *bw)
{
    ordo__model_t *m = NULL;
    ORDO_CK_OK(ordo__model_load_string(PROFILE, "profile", &m));
    ordo__conf_t conf;
    ordo__conf_defaults(&conf);
    ORDO_CK_OK(ordo__conf_set(&conf, "cluster.workers", "2", "test"));
    ORDO_CK_OK(ordo__conf_set(&conf, "cluster.servers", "1", "test"));
    ORDO_CK_OK(ordo__conf_set(&conf, "order.policy", "tao", "test"));
    ORDO_CK_OK(ordo__conf_set(&conf, "order.plan_bandwidth", bw, "test"));
    ORDO_CK_OK(ordo__conf_set(&conf, "push.compression", compression, "test"));
    ordo__conf_resolve(&conf);
    ORDO_CK_OK(ordo__conf_validate(&conf));
    int64_t numel[3];
    for (int p = 0; p < 3; p++)
        numel[p] = m->params[p].numel;
    ordo__keys_t *keys = NULL;
    ORDO_CK_OK(ordo__keys_partition(numel, 3, 4, conf.partition_bytes, 0, 1, &keys));
    json_t *plan = NULL;
    ORDO_CK_OK(ordo__runplan_make(&conf, m, keys, &plan));
    ordo__keys_destroy(&keys);
    ordo__model_destroy(&m);
    return plan;
}

static const char *key_codec(const json_t *plan, int key)
{
    json_t *keys = json_object_get(json_object_get(plan, "compression"), "keys");
    ck_assert_int_eq(json_array_size(keys), 3);
    return json_string_value(json_array_get(keys, (size_t)key));
}

START_TEST(a_slow_link_casts_the_large_tensors)
{
    json_t *plan = plan_of("auto", "1gbit");
    json_t *c = json_object_get(plan, "compression");
    ck_assert_str_eq(key_codec(plan, 0), "bf16");
    ck_assert_str_eq(key_codec(plan, 1), "none"); /* 256 values: below the message's costs */
    ck_assert_str_eq(key_codec(plan, 2), "bf16");
    ck_assert_int_eq(json_integer_value(json_object_get(c, "compressed")), 2);
    double f32 = json_real_value(json_object_get(c, "float32_step_ms"));
    double chosen = json_real_value(json_object_get(c, "chosen_step_ms"));
    ck_assert_double_gt(f32, 0);
    ck_assert_double_lt(chosen, f32);
    ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(c, "why")), "halves the bytes"));
    json_decref(plan);
}
END_TEST

START_TEST(auto_fp16_names_its_codec)
{
    json_t *plan = plan_of("auto:fp16", "1gbit");
    ck_assert_str_eq(key_codec(plan, 0), "fp16");
    ck_assert_str_eq(
        json_string_value(json_object_get(json_object_get(plan, "compression"), "codec")), "fp16");
    json_decref(plan);
}
END_TEST

START_TEST(a_fast_link_stays_float32)
{
    /* at 10 Tbit/s two bytes take 1.6 ps of link time: no conversion is that cheap */
    json_t *plan = plan_of("auto", "10000gbit");
    for (int k = 0; k < 3; k++)
        ck_assert_str_eq(key_codec(plan, k), "none");
    json_t *c = json_object_get(plan, "compression");
    ck_assert_int_eq(json_integer_value(json_object_get(c, "compressed")), 0);
    ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(c, "why")), "float32"));
    json_decref(plan);
}
END_TEST

START_TEST(a_fixed_codec_puts_nothing_in_the_plan)
{
    json_t *plan = plan_of("bf16", "1gbit");
    ck_assert_ptr_null(json_object_get(plan, "compression"));
    json_decref(plan);
}
END_TEST

START_TEST(auto_takes_only_a_cast)
{
    ordo__conf_t conf;
    ordo__conf_defaults(&conf);
    ORDO_CK_OK(ordo__conf_set(&conf, "push.compression", "auto:onebit", "test"));
    ordo__conf_resolve(&conf);
    ck_assert_int_eq(ordo__conf_validate(&conf), ORDO_ERR_INVAL);
    ck_assert_ptr_nonnull(strstr(ordo__error_detail(), "auto chooses between float32 and a 16-bit"));
}
END_TEST

static Suite *runplan_compress_suite(void)
{
    Suite *s = suite_create("runplan_compress");
    TCase *t = tcase_create("auto");
    tcase_add_test(t, a_slow_link_casts_the_large_tensors);
    tcase_add_test(t, auto_fp16_names_its_codec);
    tcase_add_test(t, a_fast_link_stays_float32);
    tcase_add_test(t, a_fixed_codec_puts_nothing_in_the_plan);
    tcase_add_test(t, auto_takes_only_a_cast);
    suite_add_tcase(s, t);
    return s;
}

ORDO_CK_MAIN(runplan_compress_suite)
