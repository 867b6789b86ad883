/* Tests of scheduler/model: the builder API, the ordo-model/1 loader's rejections (file,
 * JSON path, reason), the committed profiles in conf/models and their published counts. */
#include "scheduler/model.h"
#include "ordo_check.h"

#include <string.h>

static void expect_detail(const char *want)
{
    ck_assert_msg(strstr(ordo_error_detail(), want) != NULL, "detail '%s' lacks '%s'",
                  ordo_error_detail(), want);
}

/* ---------------------------------------------------------------- builder */

START_TEST(builder_builds_a_small_graph)
{
    ordo_model_t *m = ordo_model_new("toy", 32, NULL);
    ck_assert_ptr_nonnull(m);
    ck_assert_str_eq(m->dtype, "float32");
    ck_assert_int_eq(m->dtype_size, 4);
    int64_t w[2] = {256, 784}, b[1] = {256};
    ck_assert_int_eq(ordo_model_add_param(m, "fc1.w", 2, w), 0);
    ck_assert_int_eq(ordo_model_add_param(m, "fc1.b", 1, b), 1);
    const char *ps[2] = {"fc1.w", "fc1.b"};
    const char *in[1] = {"fc1"};
    ck_assert_int_eq(ordo_model_add_op(m, "fc1", 0, NULL, 2, ps, 120, 240), 0);
    ck_assert_int_eq(ordo_model_add_op(m, "relu", 1, in, 0, NULL, 5, 5), 1);
    ORDO_CK_OK(ordo_model_check(m));
    ck_assert_int_eq(m->n_params, 2);
    ck_assert_int_eq(m->n_ops, 2);
    ck_assert_int_eq(m->params[0].numel, 256 * 784);
    ck_assert_int_eq(m->params[0].bytes, 256 * 784 * 4);
    ck_assert_int_eq(m->params[1].first_op, 0);
    ck_assert_int_eq(m->ops[1].n_inputs, 1);
    ck_assert_int_eq(m->ops[1].inputs[0], 0);
    ck_assert_int_eq(ordo_model_total_numel(m), 256 * 784 + 256);
    ck_assert_int_eq(ordo_model_total_bytes(m), (256 * 784 + 256) * 4);
    ck_assert_double_eq(ordo_model_total_us(m, 0), 125);
    ck_assert_double_eq(ordo_model_total_us(m, 1), 370);
    ck_assert_int_eq(ordo_model_param_index(m, "fc1.b"), 1);
    ck_assert_int_eq(ordo_model_op_index(m, "relu"), 1);
    ck_assert_int_eq(ordo_model_op_index(m, "nope"), -1);
    ordo_model_destroy(&m);
    ck_assert_ptr_null(m);
    ordo_model_destroy(&m); /* NULL-safe */
}
END_TEST

START_TEST(builder_many_entries_grow)
{
    ordo_model_t *m = ordo_model_new("big", 1, "float16");
    ck_assert_ptr_nonnull(m);
    for (int i = 0; i < 1000; i++) {
        char pn[16], on[16], prev[16];
        snprintf(pn, sizeof pn, "w%d", i);
        snprintf(on, sizeof on, "o%d", i);
        snprintf(prev, sizeof prev, "o%d", i - 1);
        int64_t s[1] = {i + 1};
        ck_assert_int_eq(ordo_model_add_param(m, pn, 1, s), i);
        const char *ps[1] = {pn}, *in[1] = {prev};
        ck_assert_int_eq(ordo_model_add_op(m, on, i > 0, in, 1, ps, 1, 2), i);
    }
    ORDO_CK_OK(ordo_model_check(m));
    ck_assert_int_eq(ordo_model_total_numel(m), 1000 * 1001 / 2);
    ck_assert_int_eq(ordo_model_total_bytes(m), 1000 * 1001);
    ck_assert_int_eq(m->params[999].first_op, 999);
    ordo_model_destroy(&m);
}
END_TEST

START_TEST(builder_rejects_bad_calls)
{
    ck_assert_ptr_null(ordo_model_new("x", 0, NULL));
    ck_assert_ptr_null(ordo_model_new("x", 1, "int8"));
    ck_assert_ptr_null(ordo_model_new(NULL, 1, NULL));
    ordo_model_t *m = ordo_model_new("x", 1, NULL);
    int64_t s[2] = {3, 4}, zero[1] = {0}, nine[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    ck_assert_int_eq(ordo_model_add_param(m, "a", 2, s), 0);
    ORDO_CK_ERR(ordo_model_add_param(m, "a", 2, s), ORDO_EINVAL);
    expect_detail("duplicate parameter name 'a'");
    ORDO_CK_ERR(ordo_model_add_param(m, "z", 1, zero), ORDO_EINVAL);
    expect_detail("parameter 'z': dim 0 is 0, must be > 0");
    ORDO_CK_ERR(ordo_model_add_param(m, "n", 9, nine), ORDO_EINVAL);
    expect_detail("parameter 'n': 9 dims, must be 1 to 8");
    ORDO_CK_ERR(ordo_model_add_param(m, "", 1, s), ORDO_EINVAL);
    int64_t huge[2] = {INT64_MAX / 2, 3};
    ORDO_CK_ERR(ordo_model_add_param(m, "h", 2, huge), ORDO_ERANGE);
    expect_detail("parameter 'h': shape too large");

    /* check before any op: no ops */
    ORDO_CK_ERR(ordo_model_check(m), ORDO_EINVAL);
    expect_detail("model 'x': has no ops");

    const char *pa[1] = {"a"}, *pq[1] = {"q"}, *in_self[1] = {"o1"}, *in0[1] = {"o0"};
    const char *twice[2] = {"a", "a"};
    ORDO_CK_ERR(ordo_model_add_op(m, "o0", 0, NULL, 1, pq, 1, 1), ORDO_ENOTFOUND);
    expect_detail("op 'o0': unknown parameter 'q'");
    ORDO_CK_ERR(ordo_model_add_op(m, "o0", 0, NULL, 1, pa, -1, 1), ORDO_EINVAL);
    expect_detail("op 'o0': times must be >= 0");
    ORDO_CK_ERR(ordo_model_add_op(m, "o0", 0, NULL, 2, twice, 1, 1), ORDO_EINVAL);
    expect_detail("listed twice");
    ck_assert_int_eq(ordo_model_add_op(m, "o0", 0, NULL, 0, NULL, 1, 1), 0);
    ORDO_CK_ERR(ordo_model_add_op(m, "o0", 0, NULL, 0, NULL, 1, 1), ORDO_EINVAL);
    expect_detail("duplicate op name 'o0'");
    ORDO_CK_ERR(ordo_model_add_op(m, "o1", 1, in_self, 0, NULL, 1, 1), ORDO_ENOTFOUND);
    expect_detail("op 'o1': input 'o1' is not an earlier op");

    /* a parameter nobody reads */
    ORDO_CK_ERR(ordo_model_check(m), ORDO_EINVAL);
    expect_detail("model 'x': parameter 'a' is read by no op");
    ck_assert_int_eq(ordo_model_add_op(m, "o1", 1, in0, 1, pa, 1, 1), 1);
    ORDO_CK_OK(ordo_model_check(m));
    ck_assert_int_eq(m->params[0].first_op, 1);
    ordo_model_destroy(&m);
}
END_TEST

START_TEST(from_sizes_builds_a_chain)
{
    int64_t sizes[3] = {4, 10, 1 << 20};
    ordo_model_t *m = NULL;
    ORDO_CK_OK(ordo_model_from_sizes(sizes, 3, &m));
    ck_assert_int_eq(m->n_params, 3);
    ck_assert_int_eq(m->n_ops, 3);
    ck_assert_int_eq(m->params[0].numel, 1);
    ck_assert_int_eq(m->params[1].numel, 3); /* 10 bytes round up to 3 floats */
    ck_assert_int_eq(m->params[1].bytes, 12);
    ck_assert_int_eq(m->params[2].numel, 1 << 18);
    ck_assert_str_eq(m->params[2].name, "p2");
    ck_assert_str_eq(m->ops[2].name, "op2");
    ck_assert_int_eq(m->ops[0].n_inputs, 0);
    ck_assert_int_eq(m->ops[2].n_inputs, 1);
    ck_assert_int_eq(m->ops[2].inputs[0], 1);
    ck_assert_int_eq(m->ops[2].n_params, 1);
    ck_assert_int_eq(m->ops[2].params[0], 2);
    ck_assert_int_eq(m->params[2].first_op, 2);
    ck_assert_double_eq(ordo_model_total_us(m, 1), 0);
    ck_assert_int_eq(ordo_model_total_bytes(m), 4 + 12 + (1 << 20));
    ordo_model_destroy(&m);

    int64_t bad[2] = {8, 0};
    m = NULL;
    ORDO_CK_ERR(ordo_model_from_sizes(bad, 2, &m), ORDO_EINVAL);
    ck_assert_ptr_null(m);
    ORDO_CK_ERR(ordo_model_from_sizes(bad, 0, &m), ORDO_EINVAL);
}
END_TEST

static Suite *model_suite(void)
{
    Suite *s = suite_create("model");
    struct {
        const char *name;
        const TTest *test;
    } cases[] = {
        {"builder", builder_builds_a_small_graph},
        {"builder_grow", builder_many_entries_grow},
        {"builder_errors", builder_rejects_bad_calls},
        {"from_sizes", from_sizes_builds_a_chain},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_add_test(tc, cases[i].test);
        suite_add_tcase(s, tc);
    }
    return s;
}

ORDO_CK_MAIN(model_suite)
