/* Tests of worker/kernels: known forward values and finite-difference checks of every
 * op's backward (dense, relu, conv2d, max-pool, softmax cross-entropy). A check perturbs one
 * input element by +-eps, recomputes the forward, and compares the slope of the scalar
 * L = sum(r * y) (r fixed and random, L summed in double) with the backward's gradient. */
#include "ordo_check.h"
#include "worker/kernels.h"
#include "common/rng.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define EPS     1e-3f
#define REL_TOL 1e-2
#define ABS_TOL 2e-3

static void fill(ordo__rng_t *r, float *v, int64_t n, float lo, float hi)
{
    for (int64_t i = 0; i < n; i++)
        v[i] = lo + (hi - lo) * (float)ordo__rng_uniform(r);
}

static double dot(const float *a, const float *b, int64_t n)
{
    double s = 0;
    for (int64_t i = 0; i < n; i++)
        s += (double)a[i] * b[i];
    return s;
}

/* fd_check compares analytic[i] with the central difference of loss() in v[i], for every i;
 * loss recomputes the forward from the current v. Returns the number of checked elements. */
static int fd_check(float *v, int64_t len, double (*loss)(void *), void *ctx, const float *analytic,
                    const char *what)
{
    for (int64_t i = 0; i < len; i++) {
        float keep = v[i];
        v[i] = keep + EPS;
        double up = loss(ctx);
        v[i] = keep - EPS;
        double down = loss(ctx);
        v[i] = keep;
        double num = (up - down) / (2.0 * (double)EPS);
        double ana = analytic[i];
        double tol = ABS_TOL + REL_TOL * fmax(fabs(num), fabs(ana));
        ck_assert_msg(fabs(num - ana) <= tol, "%s[%lld]: numeric %.6f vs backward %.6f", what,
                      (long long)i, num, ana);
    }
    return (int)len;
}

/* ---- sgemm and dense ------------------------------------------------------------------- */

START_TEST(sgemm_transposes)
{
    const float a[6] = {1, 2, 3, 4, 5, 6}; /* [2,3] */
    const float b[6] = {1, 0, 0, 1, 1, 1}; /* [3,2] */
    float c[4] = {0};
    ordo__kernels_sgemm(false, false, 2, 2, 3, 1.0f, a, 3, b, 2, 0.0f, c, 2);
    ck_assert_float_eq(c[0], 4);
    ck_assert_float_eq(c[1], 5);
    ck_assert_float_eq(c[2], 10);
    ck_assert_float_eq(c[3], 11);
    /* a^T a: [3,3], entry (0,0) = 1 + 16, (1,2) = 2*3 + 5*6 */
    float d[9];
    ordo__kernels_sgemm(true, false, 3, 3, 2, 1.0f, a, 3, a, 3, 0.0f, d, 3);
    ck_assert_float_eq(d[0], 17);
    ck_assert_float_eq(d[5], 36);
    /* a a^T with beta = 1 adds onto c */
    ordo__kernels_sgemm(false, true, 2, 2, 3, 1.0f, a, 3, a, 3, 1.0f, c, 2);
    ck_assert_float_eq(c[0], 4 + 14);
    ck_assert_float_eq(c[3], 11 + 77);
}
END_TEST

START_TEST(dense_forward_values)
{
    const float w[6] = {1, 2, 3, 4, 5, 6}, b[2] = {0.5f, -1};
    const float x[6] = {1, 0, -1, 2, 1, 0};
    float y[4];
    ordo__kernels_dense_fwd(2, 3, 2, x, w, b, y);
    ck_assert_float_eq(y[0], -1.5f);
    ck_assert_float_eq(y[1], -3.0f);
    ck_assert_float_eq(y[2], 4.5f);
    ck_assert_float_eq(y[3], 12.0f);
}
END_TEST

enum { DN = 3, DIN = 5, DOUT = 4 };
typedef struct {
    float x[DN * DIN], w[DOUT * DIN], b[DOUT], y[DN * DOUT], r[DN * DOUT];
} dense_case_t;

static double dense_loss(void *p)
{
    dense_case_t *d = p;
    ordo__kernels_dense_fwd(DN, DIN, DOUT, d->x, d->w, d->b, d->y);
    return dot(d->y, d->r, DN * DOUT);
}

START_TEST(dense_backward_matches_finite_differences)
{
    dense_case_t d;
    ordo__rng_t r;
    ordo__rng_seed(&r, 7);
    fill(&r, d.x, DN * DIN, -1, 1);
    fill(&r, d.w, DOUT * DIN, -1, 1);
    fill(&r, d.b, DOUT, -1, 1);
    fill(&r, d.r, DN * DOUT, -1, 1);
    float dx[DN * DIN], dw[DOUT * DIN], db[DOUT];
    memset(dw, 0x7f, sizeof dw); /* backward must overwrite, not accumulate */
    ordo__kernels_dense_bwd(DN, DIN, DOUT, d.x, d.w, d.r, dx, dw, db);
    int n = fd_check(d.x, DN * DIN, dense_loss, &d, dx, "dense dx");
    n += fd_check(d.w, DOUT * DIN, dense_loss, &d, dw, "dense dw");
    n += fd_check(d.b, DOUT, dense_loss, &d, db, "dense db");
    ck_assert_int_eq(n, DN * DIN + DOUT * DIN + DOUT);
    /* dx may be skipped */
    float dw2[DOUT * DIN];
    ordo__kernels_dense_bwd(DN, DIN, DOUT, d.x, d.w, d.r, NULL, dw2, db);
    ck_assert_mem_eq(dw, dw2, sizeof dw);
}
END_TEST

/* ---- relu ------------------------------------------------------------------------------ */

enum { RN = 40 };
typedef struct {
    float x[RN], y[RN], r[RN];
} relu_case_t;

static double relu_loss(void *p)
{
    relu_case_t *c = p;
    ordo__kernels_relu_fwd(RN, c->x, c->y);
    return dot(c->y, c->r, RN);
}

START_TEST(relu_forward_and_backward)
{
    const float x[4] = {-2, 0, 0.5f, 3};
    float y[4];
    ordo__kernels_relu_fwd(4, x, y);
    ck_assert_float_eq(y[0], 0);
    ck_assert_float_eq(y[1], 0);
    ck_assert_float_eq(y[2], 0.5f);
    ck_assert_float_eq(y[3], 3);

    relu_case_t c;
    ordo__rng_t r;
    ordo__rng_seed(&r, 11);
    fill(&r, c.x, RN, -1, 1);
    for (int i = 0; i < RN; i++) /* keep clear of the kink at 0 */
        c.x[i] += c.x[i] >= 0 ? 0.01f : -0.01f;
    fill(&r, c.r, RN, -1, 1);
    float dx[RN];
    ordo__kernels_relu_bwd(RN, c.x, c.r, dx);
    ck_assert_int_eq(fd_check(c.x, RN, relu_loss, &c, dx, "relu dx"), RN);
}
END_TEST

/* ---- conv2d ------------------------------------------------------------------------------ */

START_TEST(conv_forward_values)
{
    /* 3x3 input 1..9, one 3x3 kernel of ones, pad 1: each output sums its neighbourhood. */
    ordo__conv_t g;
    ck_assert(ordo__kernels_conv_init(&g, 1, 1, 3, 3, 1, 3, 1, 1));
    ck_assert_int_eq(g.out_h, 3);
    ck_assert_int_eq(g.out_w, 3);
    ck_assert_int_eq(ordo__kernels_conv_col_len(&g), 9 * 9);
    float x[9], w[9], b[1] = {0.25f}, y[9], col[81];
    for (int i = 0; i < 9; i++) {
        x[i] = (float)(i + 1);
        w[i] = 1;
    }
    ordo__kernels_conv2d_fwd(&g, x, w, b, y, col);
    ck_assert_float_eq(y[0], 12.25f); /* 1+2+4+5 */
    ck_assert_float_eq(y[4], 45.25f); /* all */
    ck_assert_float_eq(y[8], 28.25f); /* 5+6+8+9 */
    ck_assert(!ordo__kernels_conv_init(&g, 1, 1, 2, 2, 1, 5, 0, 1));
    ck_assert(!ordo__kernels_conv_init(&g, 0, 1, 8, 8, 1, 3, 1, 1));
}
END_TEST

/* naive_conv is the definition of the convolution, for comparison. */
static void naive_conv(const ordo__conv_t *g, const float *x, const float *w, const float *b,
                       float *y)
{
    for (int s = 0; s < g->n; s++)
        for (int o = 0; o < g->out_c; o++)
            for (int oh = 0; oh < g->out_h; oh++)
                for (int ow = 0; ow < g->out_w; ow++) {
                    double sum = b[o];
                    for (int c = 0; c < g->in_c; c++)
                        for (int ki = 0; ki < g->k; ki++)
                            for (int kj = 0; kj < g->k; kj++) {
                                int ih = oh * g->stride - g->pad + ki;
                                int iw = ow * g->stride - g->pad + kj;
                                if (ih < 0 || ih >= g->in_h || iw < 0 || iw >= g->in_w) continue;
                                sum +=
                                    (double)x[((s * g->in_c + c) * g->in_h + ih) * g->in_w + iw] *
                                    w[((o * g->in_c + c) * g->k + ki) * g->k + kj];
                            }
                    y[((s * g->out_c + o) * g->out_h + oh) * g->out_w + ow] = (float)sum;
                }
}

START_TEST(conv_forward_matches_definition)
{
    const int shapes[][4] = {{3, 1, 1}, {5, 2, 1}, {3, 0, 2}, {3, 1, 2}}; /* k, pad, stride */
    for (size_t t = 0; t < sizeof shapes / sizeof shapes[0]; t++) {
        ordo__conv_t g;
        ck_assert(
            ordo__kernels_conv_init(&g, 2, 3, 7, 6, 4, shapes[t][0], shapes[t][1], shapes[t][2]));
        int64_t xl = 2 * 3 * 7 * 6, wl = 4 * 3 * g.k * g.k, yl = 2 * 4 * g.out_h * g.out_w;
        float x[252], w[4 * 3 * 25], b[4], y[2 * 4 * 42], want[2 * 4 * 42];
        float col[3 * 25 * 42];
        ordo__rng_t r;
        ordo__rng_seed(&r, 100 + t);
        fill(&r, x, xl, -1, 1);
        fill(&r, w, wl, -1, 1);
        fill(&r, b, 4, -1, 1);
        ordo__kernels_conv2d_fwd(&g, x, w, b, y, col);
        naive_conv(&g, x, w, b, want);
        for (int64_t i = 0; i < yl; i++)
            ck_assert_msg(fabsf(y[i] - want[i]) < 1e-4f, "shape %zu: y[%lld] = %f, want %f", t,
                          (long long)i, y[i], want[i]);
    }
}
END_TEST

enum { CN = 2, CIC = 2, CH = 5, CW = 4, COC = 3, CK = 3 };
typedef struct {
    ordo__conv_t g;
    float x[CN * CIC * CH * CW], w[COC * CIC * CK * CK], b[COC];
    float y[CN * COC * CH * CW], r[CN * COC * CH * CW], col[CIC * CK * CK * CH * CW];
} conv_case_t;

static double conv_loss(void *p)
{
    conv_case_t *c = p;
    ordo__kernels_conv2d_fwd(&c->g, c->x, c->w, c->b, c->y, c->col);
    return dot(c->y, c->r, CN * COC * c->g.out_h * c->g.out_w);
}

START_TEST(conv_backward_matches_finite_differences)
{
    /* "same" (pad 1) and strided, unpadded geometries */
    const int geo[2][2] = {{1, 1}, {0, 2}};
    for (int t = 0; t < 2; t++) {
        conv_case_t c;
        ck_assert(ordo__kernels_conv_init(&c.g, CN, CIC, CH, CW, COC, CK, geo[t][0], geo[t][1]));
        ordo__rng_t r;
        ordo__rng_seed(&r, 21 + t);
        fill(&r, c.x, sizeof c.x / sizeof(float), -1, 1);
        fill(&r, c.w, sizeof c.w / sizeof(float), -1, 1);
        fill(&r, c.b, COC, -1, 1);
        fill(&r, c.r, sizeof c.r / sizeof(float), -1, 1);
        float dx[sizeof c.x / sizeof(float)], dw[sizeof c.w / sizeof(float)], db[COC];
        ordo__kernels_conv2d_bwd(&c.g, c.x, c.w, c.r, dx, dw, db, c.col);
        fd_check(c.x, sizeof c.x / sizeof(float), conv_loss, &c, dx, "conv dx");
        fd_check(c.w, sizeof c.w / sizeof(float), conv_loss, &c, dw, "conv dw");
        fd_check(c.b, COC, conv_loss, &c, db, "conv db");
    }
}
END_TEST

/* ---- max-pool ---------------------------------------------------------------------------- */

START_TEST(maxpool_forward_values)
{
    const float x[16] = {1, 2, 5, 3, /**/ 4, 0, 1, 1, /**/ -1, -2, 7, 7, /**/ -3, -4, 6, 8};
    float y[4];
    int32_t arg[4];
    ordo__kernels_maxpool_fwd(1, 4, 4, x, y, arg);
    ck_assert_float_eq(y[0], 4);
    ck_assert_float_eq(y[1], 5);
    ck_assert_float_eq(y[2], -1);
    ck_assert_float_eq(y[3], 8);
    ck_assert_int_eq(arg[0], 4);
    ck_assert_int_eq(arg[1], 2);
    ck_assert_int_eq(arg[2], 8);
    ck_assert_int_eq(arg[3], 15);
    const float dy[4] = {1, 2, 3, 4};
    float dx[16];
    ordo__kernels_maxpool_bwd(1, 4, 4, dy, arg, dx);
    ck_assert_float_eq(dx[4], 1);
    ck_assert_float_eq(dx[2], 2);
    ck_assert_float_eq(dx[8], 3);
    ck_assert_float_eq(dx[15], 4);
    float sum = 0;
    for (int i = 0; i < 16; i++)
        sum += dx[i];
    ck_assert_float_eq(sum, 10);
}
END_TEST

enum { PP = 3, PH = 4, PW = 6 };
typedef struct {
    float x[PP * PH * PW], y[PP * PH * PW / 4], r[PP * PH * PW / 4];
    int32_t arg[PP * PH * PW / 4];
} pool_case_t;

static double pool_loss(void *p)
{
    pool_case_t *c = p;
    ordo__kernels_maxpool_fwd(PP, PH, PW, c->x, c->y, c->arg);
    return dot(c->y, c->r, PP * PH * PW / 4);
}

START_TEST(maxpool_backward_matches_finite_differences)
{
    pool_case_t c;
    ordo__rng_t r;
    ordo__rng_seed(&r, 31);
    /* distinct values 0.01 apart, shuffled, so no perturbation changes a window's maximum */
    int64_t idx[PP * PH * PW];
    for (int i = 0; i < PP * PH * PW; i++)
        idx[i] = i;
    ordo__rng_shuffle(&r, idx, PP * PH * PW);
    for (int i = 0; i < PP * PH * PW; i++)
        c.x[i] = 0.01f * (float)idx[i] - 0.3f;
    fill(&r, c.r, PP * PH * PW / 4, -1, 1);
    pool_loss(&c);
    float dx[PP * PH * PW];
    ordo__kernels_maxpool_bwd(PP, PH, PW, c.r, c.arg, dx);
    ck_assert_int_eq(fd_check(c.x, PP * PH * PW, pool_loss, &c, dx, "pool dx"), PP * PH * PW);
}
END_TEST

/* ---- softmax cross-entropy --------------------------------------------------------------- */

START_TEST(xent_forward_values)
{
    float z[20] = {0}, p[20];
    int labels[2] = {0, 3};
    z[10 + 3] = 2.0f; /* sample 1 predicts its label */
    double loss;
    int correct;
    ordo__kernels_xent_fwd(2, 10, z, labels, p, &loss, &correct);
    double l0 = log(10.0);
    double l1 = log(9.0 + exp(2.0)) - 2.0;
    ck_assert_double_eq_tol(loss, (l0 + l1) / 2, 1e-6);
    ck_assert_int_eq(correct, 2); /* all-zero logits: arg-max is class 0, the label */
    ck_assert_float_eq_tol(p[0], 0.1f, 1e-6f);
    ck_assert_float_eq_tol(p[13], (float)(exp(2.0) / (9.0 + exp(2.0))), 1e-6f);
    /* stable for huge logits */
    float big[10] = {1000, -1000};
    float pb[10];
    int lb = 1;
    ordo__kernels_xent_fwd(1, 10, big, &lb, pb, &loss, &correct);
    ck_assert_double_eq_tol(loss, 2000.0, 1e-3);
    ck_assert_int_eq(correct, 0);
    ck_assert(isfinite(pb[1]));
}
END_TEST

enum { XN = 4, XC = 10 };
typedef struct {
    float z[XN * XC], p[XN * XC];
    int labels[XN];
} xent_case_t;

static double xent_loss(void *p)
{
    xent_case_t *c = p;
    double loss;
    int correct;
    ordo__kernels_xent_fwd(XN, XC, c->z, c->labels, c->p, &loss, &correct);
    return loss;
}

START_TEST(xent_backward_matches_finite_differences)
{
    xent_case_t c;
    ordo__rng_t r;
    ordo__rng_seed(&r, 41);
    fill(&r, c.z, XN * XC, -2, 2);
    for (int i = 0; i < XN; i++)
        c.labels[i] = (int)ordo__rng_below(&r, XC);
    xent_loss(&c);
    float dz[XN * XC];
    ordo__kernels_xent_bwd(XN, XC, c.p, c.labels, dz);
    /* each row of the gradient sums to zero */
    for (int i = 0; i < XN; i++) {
        double s = 0;
        for (int j = 0; j < XC; j++)
            s += dz[i * XC + j];
        ck_assert_double_eq_tol(s, 0.0, 1e-6);
    }
    ck_assert_int_eq(fd_check(c.z, XN * XC, xent_loss, &c, dz, "xent dz"), XN * XC);
}
END_TEST

static Suite *kernels_suite(void)
{
    Suite *s = suite_create("kernels");
    TCase *t = tcase_create("dense");
    tcase_add_test(t, sgemm_transposes);
    tcase_add_test(t, dense_forward_values);
    tcase_add_test(t, dense_backward_matches_finite_differences);
    suite_add_tcase(s, t);
    t = tcase_create("relu");
    tcase_add_test(t, relu_forward_and_backward);
    suite_add_tcase(s, t);
    t = tcase_create("conv2d");
    tcase_add_test(t, conv_forward_values);
    tcase_add_test(t, conv_forward_matches_definition);
    tcase_add_test(t, conv_backward_matches_finite_differences);
    suite_add_tcase(s, t);
    t = tcase_create("maxpool");
    tcase_add_test(t, maxpool_forward_values);
    tcase_add_test(t, maxpool_backward_matches_finite_differences);
    suite_add_tcase(s, t);
    t = tcase_create("xent");
    tcase_add_test(t, xent_forward_values);
    tcase_add_test(t, xent_backward_matches_finite_differences);
    suite_add_tcase(s, t);
    return s;
}

ORDO_CK_MAIN(kernels_suite)
