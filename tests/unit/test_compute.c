/* Tests of worker/compute: the emulate backend runs any model and counts its calls; the cpu
 * backend on the built-in networks gives the gradients of the kernel-level computation and
 * of finite differences; misuse is refused with clear errors; asking for cuda succeeds exactly
 * when a device is reported; the cuda plugin, missing or foreign, is named; emulate and cpu
 * map no CUDA library. The cuda backend matching the cpu one is tagged "cuda": ctest's
 * unit.compute.cuda runs it and skips (exit 77) without a device. */
#include "ordo_check.h"
#include "worker/compute.h"
#include "worker/kernels.h"
#include "core/nn.h"
#include "common/rng.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static float **alloc_set(const ordo__model_t *m)
{
    float **p = calloc((size_t)m->n_params, sizeof *p);
    for (int i = 0; i < m->n_params; i++)
        p[i] = calloc((size_t)m->params[i].numel, sizeof(float));
    return p;
}

static void free_set(const ordo__model_t *m, float **p)
{
    for (int i = 0; m && p && i < m->n_params; i++)
        free(p[i]);
    free(p);
}

static void random_batch(uint64_t seed, int n, float *x, int *y)
{
    ordo__rng_t r;
    ordo__rng_seed(&r, seed);
    for (int i = 0; i < n * 784; i++)
        x[i] = (float)(2 * ordo__rng_uniform(&r) - 1);
    for (int i = 0; i < n; i++)
        y[i] = (int)ordo__rng_below(&r, 10);
}

/* full_pass runs every forward op, then every backward op in reverse. */
static void full_pass(ordo__compute_ctx_t *c, const ordo__model_t *m, bool backward)
{
    for (int o = 0; o < m->n_ops; o++)
        ORDO_CK_OK(ordo__compute_forward(c, o));
    for (int o = m->n_ops - 1; backward && o >= 0; o--)
        ORDO_CK_OK(ordo__compute_backward(c, o));
}

/* ---- emulate ----------------------------------------------------------------------------- */

START_TEST(emulate_runs_any_model_and_counts_calls)
{
    ordo__model_t *m = ordo__model_new("profile", 16, NULL);
    int64_t shape[1] = {1000};
    ck_assert_int_ge(ordo__model_add_param(m, "embed.w", 1, shape), 0);
    ck_assert_int_ge(ordo__model_add_param(m, "attn.w", 1, shape), 0);
    const char *p1[] = {"embed.w"}, *p2[] = {"attn.w"}, *in[] = {"embed"};
    ck_assert_int_ge(ordo__model_add_op(m, "embed", 0, NULL, 1, p1, 200, 400), 0);
    ck_assert_int_ge(ordo__model_add_op(m, "attention", 1, in, 1, p2, 100, 0), 0);
    ORDO_CK_OK(ordo__model_check(m));

    ordo__compute_ctx_t *c = NULL;
    ORDO_CK_OK(ordo__compute_new(ORDO_COMPUTE_EMULATE, m, 0.5, &c));
    ck_assert_int_eq(ordo__compute_kind(c), ORDO_COMPUTE_EMULATE);
    ck_assert_str_eq(ordo__compute_kind_name(ordo__compute_kind(c)), "emulate");
    ORDO_CK_OK(ordo__compute_bind(c, NULL, NULL));
    ORDO_CK_OK(ordo__compute_set_batch(c, NULL, NULL, 16));
    for (int it = 0; it < 3; it++)
        full_pass(c, m, true);
    long f, b;
    ordo__compute_calls(c, &f, &b);
    ck_assert_int_eq(f, 6);
    ck_assert_int_eq(b, 6);
    double loss = -1;
    int correct = -1;
    ORDO_CK_OK(ordo__compute_loss(c, &loss, &correct));
    ck_assert(loss == 0.0 && correct == 0);
    ORDO_CK_ERR(ordo__compute_forward(c, 2), ORDO_ERR_INVAL);
    ck_assert(strstr(ordo__error_detail(), "model profile has 2 ops"));
    ORDO_CK_ERR(ordo__compute_backward(c, -1), ORDO_ERR_INVAL);
    ORDO_CK_ERR(ordo__compute_set_batch(c, NULL, NULL, 17), ORDO_ERR_INVAL);
    ordo__compute_calls(c, &f, &b);
    ck_assert_int_eq(f, 6); /* refused calls are not counted */
    ordo__compute_destroy(&c);
    ck_assert_ptr_null(c);
    ordo__compute_destroy(&c); /* NULL-safe */

    ORDO_CK_ERR(ordo__compute_new(ORDO_COMPUTE_EMULATE, m, 0.0, &c), ORDO_ERR_INVAL);
    ORDO_CK_ERR(ordo__compute_new(7, m, 1.0, &c), ORDO_ERR_INVAL);
    ck_assert(strstr(ordo__error_detail(), "unknown backend kind 7"));
    /* cpu cannot run the profile's ops, and says which */
    ORDO_CK_ERR(ordo__compute_new(ORDO_COMPUTE_CPU, m, 1.0, &c), ORDO_ERR_NOTSUP);
    ck_assert(strstr(ordo__error_detail(), "op 'embed'"));
    ck_assert_ptr_null(c);
    ordo__model_destroy(&m);
}
END_TEST

/* ---- cpu ------------------------------------------------------------------------------------ */

START_TEST(cpu_mlp_matches_the_kernel_chain)
{
    enum { B = 8, N = 5 }; /* a partial batch: 5 of 8 */
    ordo__model_t *m = NULL;
    ORDO_CK_OK(ordo__nn_model("mlp", B, &m));
    float **p = alloc_set(m), **g = alloc_set(m);
    ordo__nn_init(m, 3, p);
    /* non-zero biases so their handling shows */
    for (int i = 0; i < 256; i++)
        p[1][i] = 0.01f * (float)(i % 7 - 3);
    float x[N * 784];
    int y[N];
    random_batch(9, N, x, y);
    ordo__compute_ctx_t *c = NULL;
    ORDO_CK_OK(ordo__compute_new(ORDO_COMPUTE_CPU, m, 1.0, &c));
    ORDO_CK_OK(ordo__compute_bind(c, p, g));
    ORDO_CK_OK(ordo__compute_set_batch(c, x, y, N));
    full_pass(c, m, true);
    double loss;
    int correct;
    ORDO_CK_OK(ordo__compute_loss(c, &loss, &correct));

    /* the same network by hand */
    static float h1[N * 256], a1[N * 256], h2[N * 128], a2[N * 128], z[N * 10], pr[N * 10];
    static float dz[N * 10], da2[N * 128], dh2[N * 128], da1[N * 256], dh1[N * 256];
    float **want = alloc_set(m);
    ordo__kernels_dense_fwd(N, 784, 256, x, p[0], p[1], h1);
    ordo__kernels_relu_fwd(N * 256, h1, a1);
    ordo__kernels_dense_fwd(N, 256, 128, a1, p[2], p[3], h2);
    ordo__kernels_relu_fwd(N * 128, h2, a2);
    ordo__kernels_dense_fwd(N, 128, 10, a2, p[4], p[5], z);
    double want_loss;
    int want_correct;
    ordo__kernels_xent_fwd(N, 10, z, y, pr, &want_loss, &want_correct);
    ordo__kernels_xent_bwd(N, 10, pr, y, dz);
    ordo__kernels_dense_bwd(N, 128, 10, a2, p[4], dz, da2, want[4], want[5]);
    ordo__kernels_relu_bwd(N * 128, h2, da2, dh2);
    ordo__kernels_dense_bwd(N, 256, 128, a1, p[2], dh2, da1, want[2], want[3]);
    ordo__kernels_relu_bwd(N * 256, h1, da1, dh1);
    ordo__kernels_dense_bwd(N, 784, 256, x, p[0], dh1, NULL, want[0], want[1]);

    ck_assert_double_eq(loss, want_loss);
    ck_assert_int_eq(correct, want_correct);
    ck_assert(loss > 0.5 && loss < 10);
    for (int i = 0; i < m->n_params; i++) {
        double norm = 0;
        for (int64_t k = 0; k < m->params[i].numel; k++) {
            ck_assert_msg(g[i][k] == want[i][k], "%s[%lld]: %g vs %g", m->params[i].name,
                          (long long)k, g[i][k], want[i][k]);
            norm += fabs(g[i][k]);
        }
        ck_assert_msg(norm > 0, "%s: zero gradient", m->params[i].name);
    }
    free_set(m, want);
    free_set(m, p);
    free_set(m, g);
    ordo__compute_destroy(&c);
    ordo__model_destroy(&m);
}
END_TEST

static double pass_loss(ordo__compute_ctx_t *c, const ordo__model_t *m)
{
    full_pass(c, m, false);
    double loss;
    int correct;
    ORDO_CK_OK(ordo__compute_loss(c, &loss, &correct));
    return loss;
}

/* directional_slope returns the central difference of the loss along direction u (unit
 * length) in parameter i: (L(p + eps u) - L(p - eps u)) / 2 eps. */
static double directional_slope(ordo__compute_ctx_t *c, const ordo__model_t *m, float **p, int i,
                                const double *u, double eps)
{
    const int64_t n = m->params[i].numel;
    float *keep = malloc(sizeof(float) * (size_t)n);
    memcpy(keep, p[i], sizeof(float) * (size_t)n);
    for (int64_t k = 0; k < n; k++)
        p[i][k] = (float)(keep[k] + eps * u[k]);
    double up = pass_loss(c, m);
    for (int64_t k = 0; k < n; k++)
        p[i][k] = (float)(keep[k] - eps * u[k]);
    double down = pass_loss(c, m);
    memcpy(p[i], keep, sizeof(float) * (size_t)n);
    free(keep);
    return (up - down) / (2 * eps);
}

/* A conv or dense layer feeding ReLUs and pooling is piecewise linear in each parameter
 * element, with kinks dense enough that one-element differences of early layers straddle
 * some; directional differences over a whole tensor average them out. Each parameter
 * tensor is checked along its own gradient (slope = |g|) and along a random direction u
 * (slope = g . u). */
START_TEST(cpu_cnn_gradients_match_finite_differences)
{
    enum { B = 3 };
    ordo__model_t *m = NULL;
    ORDO_CK_OK(ordo__nn_model("cnn", B, &m));
    float **p = alloc_set(m), **g = alloc_set(m);
    ordo__nn_init(m, 17, p);
    for (int i = 0; i < m->n_params; i++)
        if (m->params[i].ndim == 1)
            for (int64_t k = 0; k < m->params[i].numel; k++)
                p[i][k] = 0.05f * (float)((k % 5) - 2);
    float x[B * 784];
    int y[B];
    random_batch(23, B, x, y);
    ordo__compute_ctx_t *c = NULL;
    ORDO_CK_OK(ordo__compute_new(ORDO_COMPUTE_CPU, m, 1.0, &c));
    ORDO_CK_OK(ordo__compute_bind(c, p, g));
    ORDO_CK_OK(ordo__compute_set_batch(c, x, y, B));
    full_pass(c, m, true);
    ordo__rng_t r;
    ordo__rng_seed(&r, 99);
    for (int i = 0; i < m->n_params; i++) {
        const int64_t n = m->params[i].numel;
        double *u = malloc(sizeof(double) * (size_t)n), norm = 0, dot = 0;
        for (int64_t k = 0; k < n; k++)
            norm += (double)g[i][k] * g[i][k];
        norm = sqrt(norm);
        ck_assert_msg(norm > 0, "%s: zero gradient", m->params[i].name);
        for (int64_t k = 0; k < n; k++)
            u[k] = g[i][k] / norm;
        double along = directional_slope(c, m, p, i, u, 1e-3);
        ck_assert_msg(fabs(along - norm) <= 1e-2 * norm, "%s: slope along g %.6g, |g| %.6g",
                      m->params[i].name, along, norm);
        for (int64_t k = 0; k < n; k++)
            u[k] = (ordo__rng_below(&r, 2) ? 1.0 : -1.0) / sqrt((double)n);
        for (int64_t k = 0; k < n; k++)
            dot += u[k] * g[i][k];
        double random = directional_slope(c, m, p, i, u, 1e-3);
        ck_assert_msg(fabs(random - dot) <= 1e-2 * norm, "%s: slope along u %.6g, g.u %.6g",
                      m->params[i].name, random, dot);
        free(u);
    }
    free_set(m, p);
    free_set(m, g);
    ordo__compute_destroy(&c);
    ordo__model_destroy(&m);
}
END_TEST

START_TEST(cpu_refuses_misuse)
{
    ordo__model_t *m = NULL;
    ORDO_CK_OK(ordo__nn_model("mlp", 4, &m));
    float **p = alloc_set(m), **g = alloc_set(m);
    float x[4 * 784] = {0};
    int y[4] = {1, 2, 3, 4};
    ordo__compute_ctx_t *c = NULL;
    ORDO_CK_OK(ordo__compute_new(ORDO_COMPUTE_CPU, m, 1.0, &c));
    ORDO_CK_ERR(ordo__compute_forward(c, 0), ORDO_ERR_INVAL);
    ck_assert(strstr(ordo__error_detail(), "before bind"));
    ORDO_CK_ERR(ordo__compute_bind(c, NULL, g), ORDO_ERR_INVAL);
    float *keep = p[3];
    p[3] = NULL;
    ORDO_CK_ERR(ordo__compute_bind(c, p, g), ORDO_ERR_INVAL);
    ck_assert(strstr(ordo__error_detail(), "fc2.b"));
    p[3] = keep;
    ORDO_CK_OK(ordo__compute_bind(c, p, g));
    ORDO_CK_ERR(ordo__compute_forward(c, 0), ORDO_ERR_INVAL);
    ck_assert(strstr(ordo__error_detail(), "before set_batch"));
    ORDO_CK_ERR(ordo__compute_set_batch(c, x, y, 5), ORDO_ERR_INVAL);
    ORDO_CK_ERR(ordo__compute_set_batch(c, x, y, 0), ORDO_ERR_INVAL);
    y[2] = 10;
    ORDO_CK_ERR(ordo__compute_set_batch(c, x, y, 4), ORDO_ERR_INVAL);
    ck_assert(strstr(ordo__error_detail(), "label 10 of sample 2"));
    y[2] = 3;
    ORDO_CK_OK(ordo__compute_set_batch(c, x, y, 4));
    ORDO_CK_ERR(ordo__compute_forward(c, 2), ORDO_ERR_INVAL);
    ck_assert(strstr(ordo__error_detail(), "before its input 'relu1'"));
    ORDO_CK_ERR(ordo__compute_backward(c, 5), ORDO_ERR_INVAL);
    ck_assert(strstr(ordo__error_detail(), "before its forward"));
    double loss;
    int correct;
    ORDO_CK_ERR(ordo__compute_loss(c, &loss, &correct), ORDO_ERR_INVAL);
    full_pass(c, m, false);
    ORDO_CK_ERR(ordo__compute_backward(c, 3), ORDO_ERR_INVAL); /* fc3 and loss not done yet */
    ck_assert(strstr(ordo__error_detail(), "backward of op 'relu2' before fc3"));
    ORDO_CK_OK(ordo__compute_loss(c, &loss, &correct));
    ck_assert_double_eq_tol(loss, log(10.0), 1e-6); /* zero parameters: uniform softmax */
    free_set(m, p);
    free_set(m, g);
    ordo__compute_destroy(&c);
    ordo__model_destroy(&m);
}
END_TEST

/* ---- cuda ----------------------------------------------------------------------------------- */

static void compare_cuda_with_cpu(const char *net)
{
    enum { B = 16, N = 13 };
    ordo__model_t *m = NULL;
    ORDO_CK_OK(ordo__nn_model(net, B, &m));
    float **p = alloc_set(m), **g_cpu = alloc_set(m), **g_gpu = alloc_set(m);
    ordo__nn_init(m, 31, p);
    float *x = malloc(sizeof(float) * N * 784);
    int y[N];
    random_batch(37, N, x, y);
    ordo__compute_ctx_t *cpu = NULL, *gpu = NULL;
    ORDO_CK_OK(ordo__compute_new(ORDO_COMPUTE_CPU, m, 1.0, &cpu));
    ORDO_CK_OK(ordo__compute_new(ORDO_COMPUTE_CUDA, m, 1.0, &gpu));
    ORDO_CK_OK(ordo__compute_bind(cpu, p, g_cpu));
    ORDO_CK_OK(ordo__compute_bind(gpu, p, g_gpu));
    ORDO_CK_OK(ordo__compute_set_batch(cpu, x, y, N));
    ORDO_CK_OK(ordo__compute_set_batch(gpu, x, y, N));
    full_pass(cpu, m, true);
    full_pass(gpu, m, true);
    double l1, l2;
    int c1, c2;
    ORDO_CK_OK(ordo__compute_loss(cpu, &l1, &c1));
    ORDO_CK_OK(ordo__compute_loss(gpu, &l2, &c2));
    ck_assert_double_eq_tol(l1, l2, 1e-4 * fabs(l1));
    ck_assert_int_eq(c1, c2);
    for (int i = 0; i < m->n_params; i++) {
        double scale = 0;
        for (int64_t k = 0; k < m->params[i].numel; k++)
            scale = fmax(scale, fabs(g_cpu[i][k]));
        for (int64_t k = 0; k < m->params[i].numel; k++)
            ck_assert_msg(fabs(g_cpu[i][k] - g_gpu[i][k]) <= 1e-3 * scale + 1e-7,
                          "%s %s[%lld]: cpu %g, cuda %g", net, m->params[i].name, (long long)k,
                          g_cpu[i][k], g_gpu[i][k]);
    }
    ordo__compute_destroy(&cpu);
    ordo__compute_destroy(&gpu);
    free(x);
    free_set(m, p);
    free_set(m, g_cpu);
    free_set(m, g_gpu);
    ordo__model_destroy(&m);
}

START_TEST(cuda_is_refused_exactly_without_a_device)
{
    const char *why = NULL;
    bool available = ordo__compute_cuda_available(&why);
    ordo__model_t *m = NULL;
    ORDO_CK_OK(ordo__nn_model("mlp", 4, &m));
    ordo__compute_ctx_t *c = NULL;
    if (available) {
        ORDO_CK_OK(ordo__compute_new(ORDO_COMPUTE_CUDA, m, 1.0, &c));
        ck_assert_ptr_nonnull(c);
        ordo__compute_destroy(&c);
    } else {
        ck_assert_ptr_nonnull(why);
        ORDO_CK_ERR(ordo__compute_new(ORDO_COMPUTE_CUDA, m, 1.0, &c), ORDO_ERR_NOTSUP);
        ck_assert(strstr(ordo__error_detail(), "compute cuda: "));
    }
    ck_assert_ptr_null(c);
    ordo__model_destroy(&m);
}
END_TEST

/* the cuda backend is a plugin (worker/compute_backend.h): each case runs in its own forked
 * process, so each loads (or fails to load) it afresh */
START_TEST(a_missing_cuda_plugin_is_named)
{
    setenv("ORDO_CUDA_PLUGIN", "/nonexistent/ordo/libordo_compute_cuda.so", 1);
    ordo__model_t *m = NULL;
    ORDO_CK_OK(ordo__nn_model("mlp", 4, &m));
    ordo__compute_ctx_t *c = NULL;
    ORDO_CK_ERR(ordo__compute_new(ORDO_COMPUTE_CUDA, m, 1.0, &c), ORDO_ERR_NOTSUP);
    const char *detail = ordo__error_detail();
    ck_assert_msg(strstr(detail, "compute cuda: cannot load /nonexistent/ordo/"
                                 "libordo_compute_cuda.so (ORDO_CUDA_PLUGIN): ") &&
                      strstr(detail, "No such file"),
                  "%s", detail);
    const char *why = NULL;
    ck_assert(!ordo__compute_cuda_available(&why));
    ck_assert_ptr_nonnull(strstr(why, "cannot load /nonexistent/ordo/libordo_compute_cuda.so"));
    ck_assert_ptr_null(c);
    ordo__model_destroy(&m);
}
END_TEST

START_TEST(a_library_that_is_not_the_cuda_plugin_is_named)
{
    setenv("ORDO_CUDA_PLUGIN", "libz.so.1", 1); /* loads (ordo links zlib), no entry point */
    ordo__model_t *m = NULL;
    ORDO_CK_OK(ordo__nn_model("mlp", 4, &m));
    ordo__compute_ctx_t *c = NULL;
    ORDO_CK_ERR(ordo__compute_new(ORDO_COMPUTE_CUDA, m, 1.0, &c), ORDO_ERR_NOTSUP);
    ck_assert_str_eq(ordo__error_detail(),
                     "compute cuda: libz.so.1: no ordo__compute_cuda_plugin in it");
    ordo__model_destroy(&m);
}
END_TEST

/* emulate and cpu never load the cuda plugin: the process maps no cuBLAS and no cudart */
START_TEST(emulate_and_cpu_map_no_cuda_library)
{
    ordo__model_t *m = NULL;
    ORDO_CK_OK(ordo__nn_model("mlp", 4, &m));
    float **p = alloc_set(m), **g = alloc_set(m);
    float x[4 * 784];
    int y[4];
    random_batch(7, 4, x, y);
    ordo__compute_ctx_t *c = NULL;
    ORDO_CK_OK(ordo__compute_new(ORDO_COMPUTE_EMULATE, m, 0.001, &c));
    ordo__compute_destroy(&c);
    ORDO_CK_OK(ordo__compute_new(ORDO_COMPUTE_CPU, m, 1.0, &c));
    ORDO_CK_OK(ordo__compute_bind(c, p, g));
    ORDO_CK_OK(ordo__compute_set_batch(c, x, y, 4));
    for (int o = 0; o < m->n_ops; o++)
        ORDO_CK_OK(ordo__compute_forward(c, o));
    ordo__compute_destroy(&c);
    FILE *f = fopen("/proc/self/maps", "r");
    ck_assert_ptr_nonnull(f);
    char line[1024];
    while (fgets(line, sizeof line, f))
        ck_assert_msg(!strstr(line, "libcublas") && !strstr(line, "libcudart") &&
                          !strstr(line, "libordo_compute_cuda"),
                      "mapped: %s", line);
    fclose(f);
    free_set(m, p);
    free_set(m, g);
    ordo__model_destroy(&m);
}
END_TEST

START_TEST(cuda_matches_cpu)
{
    compare_cuda_with_cpu("mlp");
    compare_cuda_with_cpu("cnn");
}
END_TEST

/* probe for ordo_ck_require: "cuda" is there when the backend is built and sees a device */
static const char *probe(const char *need)
{
    if (strcmp(need, "cuda") != 0) {
        fprintf(stderr, "ORDO_CK_NEEDS names '%s', which this suite cannot check\n", need);
        exit(2);
    }
    const char *why = NULL;
    if (ordo__compute_cuda_available(&why)) return NULL;
    return why ? why : "no CUDA device";
}

static Suite *compute_suite(void)
{
    Suite *s = suite_create("compute");
    TCase *t = tcase_create("emulate");
    tcase_add_test(t, emulate_runs_any_model_and_counts_calls);
    suite_add_tcase(s, t);
    t = tcase_create("cpu");
    tcase_set_timeout(t, 60);
    tcase_add_test(t, cpu_mlp_matches_the_kernel_chain);
    tcase_add_test(t, cpu_cnn_gradients_match_finite_differences);
    tcase_add_test(t, cpu_refuses_misuse);
    tcase_add_test(t, cuda_is_refused_exactly_without_a_device);
    tcase_add_test(t, a_missing_cuda_plugin_is_named);
    tcase_add_test(t, a_library_that_is_not_the_cuda_plugin_is_named);
    tcase_add_test(t, emulate_and_cpu_map_no_cuda_library);
    suite_add_tcase(s, t);
    /* Tagged "cuda": ctest's unit.compute.cuda runs it alone and skips without a device. */
    t = tcase_create("cuda");
    tcase_set_tags(t, "cuda");
    tcase_set_timeout(t, 60);
    tcase_add_test(t, cuda_matches_cpu);
    suite_add_tcase(s, t);
    return s;
}

ORDO_CK_MAIN_PROBE(compute_suite, probe)
