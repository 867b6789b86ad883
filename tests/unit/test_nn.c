/* Tests of worker/nn: the built-in networks' parameters, ops and layer tables; rejection of
 * models the backends cannot run; deterministic initialization; the SGD update formula. */
#include "ordo_check.h"
#include "core/nn.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static void expect_param(const ordo__model_t *m, const char *name, int ndim, int64_t d0, int64_t d1,
                         int64_t d2, int64_t d3)
{
    int p = ordo__model_param_index(m, name);
    ck_assert_msg(p >= 0, "no parameter %s", name);
    const int64_t want[4] = {d0, d1, d2, d3};
    ck_assert_int_eq(m->params[p].ndim, ndim);
    for (int d = 0; d < ndim; d++)
        ck_assert_int_eq(m->params[p].shape[d], want[d]);
}

START_TEST(mlp_is_784_256_128_10)
{
    ordo__model_t *m = NULL;
    ORDO_CK_OK(ordo__nn_model("mlp", 64, &m));
    ck_assert_str_eq(m->name, "mlp");
    ck_assert_int_eq(m->batch, 64);
    ck_assert_int_eq(m->n_params, 6);
    ck_assert_int_eq(m->n_ops, 6);
    expect_param(m, "fc1.w", 2, 256, 784, 0, 0);
    expect_param(m, "fc1.b", 1, 256, 0, 0, 0);
    expect_param(m, "fc2.w", 2, 128, 256, 0, 0);
    expect_param(m, "fc3.w", 2, 10, 128, 0, 0);
    expect_param(m, "fc3.b", 1, 10, 0, 0, 0);
    ck_assert_int_eq(ordo__model_total_numel(m), 784 * 256 + 256 + 256 * 128 + 128 + 1280 + 10);
    const char *ops[] = {"fc1", "relu1", "fc2", "relu2", "fc3", "loss"};
    for (int o = 0; o < 6; o++) {
        ck_assert_str_eq(m->ops[o].name, ops[o]);
        ck_assert_int_eq(m->ops[o].n_inputs, o == 0 ? 0 : 1);
        ck_assert(m->ops[o].fwd_us > 0 && m->ops[o].bwd_us > 0);
    }
    /* the FLOP estimate: fc1 forward is 2*64*784*256 flops at 20 GFLOP/s */
    ck_assert_double_eq_tol(m->ops[0].fwd_us, 2.0 * 64 * 784 * 256 / 2e4, 1e-6);
    ck_assert_double_eq_tol(m->ops[0].bwd_us, 2 * m->ops[0].fwd_us, 1e-6);

    ordo__nn_layer_t *l = NULL;
    ORDO_CK_OK(ordo__nn_layers(m, &l));
    ck_assert_int_eq(l[0].kind, ORDO_NN_DENSE);
    ck_assert_int_eq(l[0].input, -1);
    ck_assert_int_eq(l[0].in_c, 784); /* flattened image */
    ck_assert_int_eq(l[0].out_c, 256);
    ck_assert_int_eq(l[0].weight, ordo__model_param_index(m, "fc1.w"));
    ck_assert_int_eq(l[0].bias, ordo__model_param_index(m, "fc1.b"));
    ck_assert_int_eq(l[1].kind, ORDO_NN_RELU);
    ck_assert_int_eq(ordo__nn_layer_in_len(&l[1]), 256);
    ck_assert_int_eq(l[5].kind, ORDO_NN_XENT);
    ck_assert_int_eq(l[5].input, 4);
    free(l);
    ordo__model_destroy(&m);
    ck_assert_ptr_null(m);
}
END_TEST

START_TEST(cnn_has_two_conv_blocks_and_two_dense_layers)
{
    ordo__model_t *m = NULL;
    ORDO_CK_OK(ordo__nn_model("cnn", 32, &m));
    ck_assert_int_eq(m->n_ops, 10);
    ck_assert_int_eq(m->n_params, 8);
    expect_param(m, "conv1.w", 4, 16, 1, 5, 5);
    expect_param(m, "conv2.w", 4, 32, 16, 5, 5);
    expect_param(m, "conv2.b", 1, 32, 0, 0, 0);
    expect_param(m, "fc1.w", 2, 128, 32 * 7 * 7, 0, 0);
    expect_param(m, "fc2.w", 2, 10, 128, 0, 0);
    ordo__nn_layer_t *l = NULL;
    ORDO_CK_OK(ordo__nn_layers(m, &l));
    const ordo__nn_kind_t kinds[] = {ORDO_NN_CONV,  ORDO_NN_RELU, ORDO_NN_POOL,  ORDO_NN_CONV,
                                    ORDO_NN_RELU,  ORDO_NN_POOL, ORDO_NN_DENSE, ORDO_NN_RELU,
                                    ORDO_NN_DENSE, ORDO_NN_XENT};
    for (int o = 0; o < 10; o++)
        ck_assert_int_eq(l[o].kind, kinds[o]);
    ck_assert_int_eq(l[0].k, 5);
    ck_assert_int_eq(l[0].pad, 2);
    ck_assert_int_eq(l[0].out_c, 16);
    ck_assert_int_eq(l[0].out_h, 28);
    ck_assert_int_eq(l[2].out_h, 14);
    ck_assert_int_eq(l[3].in_c, 16);
    ck_assert_int_eq(l[5].out_c, 32);
    ck_assert_int_eq(l[5].out_w, 7);
    ck_assert_int_eq(l[6].in_c, 1568);
    free(l);
    ordo__model_destroy(&m);
}
END_TEST

START_TEST(unknown_networks_and_unrunnable_models_are_rejected)
{
    ordo__model_t *m = NULL;
    ORDO_CK_ERR(ordo__nn_model("resnet", 8, &m), ORDO_ERR_NOTFOUND);
    ck_assert(strstr(ordo__error_detail(), "resnet"));
    ORDO_CK_ERR(ordo__nn_model("mlp", 0, &m), ORDO_ERR_INVAL);
    ck_assert_ptr_null(m);

    /* an op kind no backend runs */
    m = ordo__model_new("prof", 8, NULL);
    int64_t shape[2] = {10, 784};
    ck_assert_int_ge(ordo__model_add_param(m, "attn.w", 2, shape), 0);
    const char *pw[] = {"attn.w"};
    ck_assert_int_ge(ordo__model_add_op(m, "attention", 0, NULL, 1, pw, 1, 1), 0);
    ORDO_CK_OK(ordo__model_check(m));
    ordo__nn_layer_t *l = NULL;
    ORDO_CK_ERR(ordo__nn_layers(m, &l), ORDO_ERR_NOTSUP);
    ck_assert(strstr(ordo__error_detail(), "op 'attention'"));
    ordo__model_destroy(&m);

    /* a dense layer whose weight does not fit its input */
    m = ordo__model_new("bad", 8, NULL);
    int64_t w[2] = {10, 100}, b[1] = {10};
    ck_assert_int_ge(ordo__model_add_param(m, "fc.w", 2, w), 0);
    ck_assert_int_ge(ordo__model_add_param(m, "fc.b", 1, b), 0);
    const char *pp[] = {"fc.w", "fc.b"};
    const char *in[] = {"fc"};
    ck_assert_int_ge(ordo__model_add_op(m, "fc", 0, NULL, 2, pp, 1, 1), 0);
    ck_assert_int_ge(ordo__model_add_op(m, "loss", 1, in, 0, NULL, 1, 1), 0);
    ORDO_CK_ERR(ordo__nn_layers(m, &l), ORDO_ERR_NOTSUP);
    ck_assert(strstr(ordo__error_detail(), "op 'fc'") && strstr(ordo__error_detail(), "784"));
    ordo__model_destroy(&m);

    /* no loss at the end */
    m = ordo__model_new("noloss", 8, NULL);
    w[1] = 784;
    ck_assert_int_ge(ordo__model_add_param(m, "fc.w", 2, w), 0);
    ck_assert_int_ge(ordo__model_add_param(m, "fc.b", 1, b), 0);
    ck_assert_int_ge(ordo__model_add_op(m, "fc", 0, NULL, 2, pp, 1, 1), 0);
    ck_assert_int_ge(ordo__model_add_op(m, "relu", 1, in, 0, NULL, 1, 1), 0);
    ORDO_CK_ERR(ordo__nn_layers(m, &l), ORDO_ERR_NOTSUP);
    ck_assert(strstr(ordo__error_detail(), "must be the loss"));
    ordo__model_destroy(&m);
    ck_assert_ptr_null(l);
}
END_TEST

static float **alloc_params(const ordo__model_t *m)
{
    float **p = calloc((size_t)m->n_params, sizeof *p);
    for (int i = 0; i < m->n_params; i++)
        p[i] = calloc((size_t)m->params[i].numel, sizeof(float));
    return p;
}

static void free_params(const ordo__model_t *m, float **p)
{
    for (int i = 0; i < m->n_params; i++)
        free(p[i]);
    free(p);
}

START_TEST(init_is_deterministic_he_uniform)
{
    ordo__model_t *m = NULL;
    ORDO_CK_OK(ordo__nn_model("cnn", 4, &m));
    float **a = alloc_params(m), **b = alloc_params(m), **c = alloc_params(m);
    ordo__nn_init(m, 5, a);
    ordo__nn_init(m, 5, b);
    ordo__nn_init(m, 6, c);
    for (int p = 0; p < m->n_params; p++) {
        const ordo__model_param_t *mp = &m->params[p];
        size_t bytes = sizeof(float) * (size_t)mp->numel;
        ck_assert_mem_eq(a[p], b[p], bytes);
        if (mp->ndim == 1) {
            for (int64_t i = 0; i < mp->numel; i++)
                ck_assert_float_eq(a[p][i], 0.0f);
            continue;
        }
        ck_assert(memcmp(a[p], c[p], bytes) != 0);
        double bound = sqrt(6.0 / (double)(mp->numel / mp->shape[0]));
        double s2 = 0, mx = 0;
        for (int64_t i = 0; i < mp->numel; i++) {
            ck_assert(fabsf(a[p][i]) <= (float)bound);
            s2 += (double)a[p][i] * a[p][i];
            mx = fmax(mx, fabs(a[p][i]));
        }
        /* uniform in +-bound: variance bound^2 / 3, and the extremes come near the bound */
        double var = s2 / (double)mp->numel;
        ck_assert_msg(fabs(var / (bound * bound / 3) - 1) < 0.15, "%s: variance %g", mp->name, var);
        ck_assert(mx > 0.9 * bound);
    }
    free_params(m, a);
    free_params(m, b);
    free_params(m, c);
    ordo__model_destroy(&m);
}
END_TEST

START_TEST(sgd_update_follows_the_documented_formula)
{
    float w[2] = {1.0f, -2.0f}, v[2] = {0, 0};
    const float g[2] = {0.5f, 0.25f};
    /* step 1: d = g + 0.1 w = (0.6, 0.05); v = d; w -= 0.1 v */
    ordo__nn_sgd_update(2, w, v, g, 0.1f, 0.9f, 0.1f);
    ck_assert_float_eq_tol(v[0], 0.6f, 1e-7f);
    ck_assert_float_eq_tol(v[1], 0.05f, 1e-7f);
    ck_assert_float_eq_tol(w[0], 0.94f, 1e-7f);
    ck_assert_float_eq_tol(w[1], -2.005f, 1e-6f);
    /* step 2: d = g + 0.1 w; v = 0.9 v + d; w -= 0.1 v */
    ordo__nn_sgd_update(2, w, v, g, 0.1f, 0.9f, 0.1f);
    float v0 = 0.9f * 0.6f + (0.5f + 0.1f * 0.94f);
    ck_assert_float_eq_tol(v[0], v0, 1e-6f);
    ck_assert_float_eq_tol(w[0], 0.94f - 0.1f * v0, 1e-6f);
    /* plain SGD: momentum and decay zero */
    float w2 = 3, v2 = 0, g2 = 2;
    ordo__nn_sgd_update(1, &w2, &v2, &g2, 0.5f, 0, 0);
    ck_assert_float_eq(w2, 2.0f);
}
END_TEST

static Suite *nn_suite(void)
{
    Suite *s = suite_create("nn");
    TCase *t = tcase_create("networks");
    tcase_add_test(t, mlp_is_784_256_128_10);
    tcase_add_test(t, cnn_has_two_conv_blocks_and_two_dense_layers);
    tcase_add_test(t, unknown_networks_and_unrunnable_models_are_rejected);
    suite_add_tcase(s, t);
    t = tcase_create("init_and_update");
    tcase_add_test(t, init_is_deterministic_he_uniform);
    tcase_add_test(t, sgd_update_follows_the_documented_formula);
    suite_add_tcase(s, t);
    return s;
}

ORDO_CK_MAIN(nn_suite)
