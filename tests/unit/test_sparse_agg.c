/* Tests of server/sparse_agg: summing pushes, validation, selection, SGD, pull answers, and
 * end to end with worker/sparsify and scheduler/regions: residual accounting over several
 * steps with threshold reuse, and density 100% against dense SGD. */
#include "server/sparse_agg.h"
#include "ordo_check.h"
#include "core/regions.h"
#include "core/sparsify.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng_state;

static uint32_t rnd(void)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rng_state >> 33);
}

static void expect_detail(const char *want)
{
    ck_assert_msg(strstr(ordo__error_detail(), want) != NULL, "detail '%s' lacks '%s'",
                  ordo__error_detail(), want);
}

START_TEST(pushes_are_validated)
{
    for (int kind = 0; kind < 2; kind++) {
        ordo__sparse_agg_t *agg;
        ORDO_CK_OK(ordo__sparse_agg_new(&agg, 10, 20, 2, (ordo__sparse_agg_kind_t)kind, 4));
        ordo__coo_entry_t out_of_range[2] = {{10, 1.0f}, {20, 2.0f}};
        ORDO_CK_ERR(ordo__sparse_agg_push(agg, 0, out_of_range, 2), ORDO_ERR_PROTO);
        expect_detail("worker 0 entry 1: index 20 outside [10, 20)");
        ordo__coo_entry_t dup[2] = {{12, 1.0f}, {12, 2.0f}};
        ORDO_CK_ERR(ordo__sparse_agg_push(agg, 0, dup, 2), ORDO_ERR_PROTO);
        expect_detail("index 12 not increasing");
        ordo__coo_entry_t nan[1] = {{12, NAN}};
        ORDO_CK_ERR(ordo__sparse_agg_push(agg, 1, nan, 1), ORDO_ERR_PROTO);
        expect_detail("value not finite");
        ordo__coo_entry_t ok[2] = {{11, 1.0f}, {15, 2.0f}};
        ORDO_CK_ERR(ordo__sparse_agg_push(agg, 2, ok, 2), ORDO_ERR_PROTO);
        expect_detail("worker 2 outside [0, 2)");
        ck_assert_int_eq(ordo__sparse_agg_pushed(agg), 0); /* rejected pushes left no trace */
        ck_assert_uint_eq(ordo__sparse_agg_touched(agg), 0);

        ORDO_CK_OK(ordo__sparse_agg_push(agg, 0, ok, 2));
        ORDO_CK_ERR(ordo__sparse_agg_push(agg, 0, ok, 2), ORDO_ERR_PROTO);
        expect_detail("worker 0 already pushed iteration 0");
        ORDO_CK_ERR(ordo__sparse_agg_select_topk(agg, 1), ORDO_ERR_AGAIN);
        expect_detail("1 of 2 workers pushed iteration 0");
        uint8_t bad[12] = {0};
        ORDO_CK_ERR(ordo__sparse_agg_push_coo(agg, 1, bad, sizeof bad), ORDO_ERR_PROTO);
        expect_detail("not a multiple of 8");
        uint8_t buf[16];
        ordo__coo_encode(ok, 2, buf);
        ORDO_CK_OK(ordo__sparse_agg_push_coo(agg, 1, buf, sizeof buf));
        ck_assert_uint_eq(ordo__sparse_agg_touched(agg), 2);
        ORDO_CK_OK(ordo__sparse_agg_select_topk(agg, 1));
        ORDO_CK_ERR(ordo__sparse_agg_select_topk(agg, 1), ORDO_ERR_INVAL);
        size_t c;
        const ordo__coo_entry_t *sel = ordo__sparse_agg_selected(agg, &c);
        ck_assert_uint_eq(c, 1);
        ck_assert_uint_eq(sel[0].index, 15);
        ck_assert_float_eq(sel[0].value, 4.0f);
        ordo__sparse_agg_next(agg);
        ck_assert_uint_eq(ordo__sparse_agg_iteration(agg), 1);
        ck_assert_int_eq(ordo__sparse_agg_pushed(agg), 0);
        ordo__sparse_agg_destroy(&agg);
        ck_assert_ptr_null(agg);
    }
    ordo__sparse_agg_t *agg = NULL;
    ORDO_CK_ERR(ordo__sparse_agg_new(&agg, 5, 5, 1, ORDO_SPARSE_AGG_DENSE, 1), ORDO_ERR_INVAL);
    ORDO_CK_ERR(ordo__sparse_agg_new(&agg, 0, 5, 0, ORDO_SPARSE_AGG_DENSE, 1), ORDO_ERR_INVAL);
    ORDO_CK_ERR(ordo__sparse_agg_new(&agg, 0, 5, 1, (ordo__sparse_agg_kind_t)7, 1), ORDO_ERR_INVAL);
    ck_assert_ptr_null(agg);
}
END_TEST

/* Random pushes from W workers; both accumulators must select exactly the brute-force
 * top-k of the sums (ties by index) over many iterations, reusing their tables. */
START_TEST(dense_and_hash_select_the_true_topk)
{
    enum { LO = 1000, M = 300, W = 3 };
    ordo__sparse_agg_t *agg[2];
    for (int kind = 0; kind < 2; kind++)
        ORDO_CK_OK(ordo__sparse_agg_new(&agg[kind], LO, LO + M, W, (ordo__sparse_agg_kind_t)kind, 1));
    rng_state = 5;
    ordo__coo_entry_t push[M];
    for (int it = 0; it < 20; it++) {
        float sum[M] = {0};
        unsigned char touched[M] = {0};
        for (int w = 0; w < W; w++) {
            size_t c = 0;
            for (uint32_t i = 0; i < M; i++) {
                if (rnd() % 100 >= (uint32_t)(10 + 20 * w)) continue;
                float v = (float)((int)(rnd() % 9) - 4); /* small integers: many ties */
                push[c++] = (ordo__coo_entry_t){LO + i, v};
                sum[i] += v;
                touched[i] = 1;
            }
            for (int kind = 0; kind < 2; kind++)
                ORDO_CK_OK(ordo__sparse_agg_push(agg[kind], w, push, c));
        }
        size_t k = 5 + (size_t)it * 7, ntouched = 0;
        for (int i = 0; i < M; i++)
            ntouched += touched[i];
        /* brute force: repeatedly take the largest |sum| among touched, lowest index first */
        unsigned char want[M] = {0};
        for (size_t taken = 0; taken < k && taken < ntouched; taken++) {
            int best = -1;
            for (int i = 0; i < M; i++)
                if (touched[i] && !want[i] && (best < 0 || fabsf(sum[i]) > fabsf(sum[best])))
                    best = i;
            want[best] = 1;
        }
        for (int kind = 0; kind < 2; kind++) {
            ck_assert_uint_eq(ordo__sparse_agg_touched(agg[kind]), ntouched);
            ORDO_CK_OK(ordo__sparse_agg_select_topk(agg[kind], k));
            size_t c;
            const ordo__coo_entry_t *sel = ordo__sparse_agg_selected(agg[kind], &c);
            ck_assert_uint_eq(c, k < ntouched ? k : ntouched);
            size_t j = 0;
            for (int i = 0; i < M; i++) {
                if (!want[i]) continue;
                ck_assert_uint_eq(sel[j].index, LO + i);
                ck_assert_float_eq(sel[j].value, sum[i]);
                j++;
            }
            ordo__sparse_agg_next(agg[kind]);
        }
    }
    for (int kind = 0; kind < 2; kind++)
        ordo__sparse_agg_destroy(&agg[kind]);
}
END_TEST

START_TEST(threshold_is_due_every_period)
{
    ordo__sparse_agg_t *agg;
    ORDO_CK_OK(ordo__sparse_agg_new(&agg, 0, 10, 1, ORDO_SPARSE_AGG_DENSE, 3));
    ordo__coo_entry_t e[3] = {{1, 1.0f}, {2, -5.0f}, {3, 3.0f}};
    bool due[7];
    for (int it = 0; it < 7; it++) {
        ORDO_CK_OK(ordo__sparse_agg_push(agg, 0, e, 3));
        due[it] = ordo__sparse_agg_threshold_due(agg);
        if (due[it]) {
            ORDO_CK_ERR(ordo__sparse_agg_select(agg), ORDO_ERR_AGAIN);
            expect_detail("threshold due");
            ORDO_CK_OK(ordo__sparse_agg_select_topk(agg, 2));
            ck_assert_float_eq(ordo__sparse_agg_threshold(agg), 3.0f);
        } else {
            ORDO_CK_OK(ordo__sparse_agg_select(agg));
        }
        size_t c;
        ordo__sparse_agg_selected(agg, &c);
        ck_assert_uint_eq(c, 2);
        ordo__sparse_agg_next(agg);
    }
    ck_assert(due[0] && !due[1] && !due[2] && due[3] && !due[4] && !due[5] && due[6]);
    ORDO_CK_OK(ordo__sparse_agg_push(agg, 0, e, 3));
    ORDO_CK_ERR(ordo__sparse_agg_select_threshold(agg, -1.0f), ORDO_ERR_INVAL);
    ORDO_CK_ERR(ordo__sparse_agg_select_threshold(agg, NAN), ORDO_ERR_INVAL);
    ORDO_CK_OK(ordo__sparse_agg_select_threshold(agg, 1.0f)); /* e.g. from the scheduler */
    size_t c;
    ordo__sparse_agg_selected(agg, &c);
    ck_assert_uint_eq(c, 3);
    ordo__sparse_agg_destroy(&agg);
}
END_TEST

START_TEST(sgd_touches_selected_entries_only)
{
    ordo__sparse_agg_t *agg;
    ORDO_CK_OK(ordo__sparse_agg_new(&agg, 100, 104, 2, ORDO_SPARSE_AGG_HASH, 1));
    float w[4] = {1.0f, 2.0f, 3.0f, 4.0f}, m[4] = {0.5f, 0.5f, 0.5f, 0.5f};
    ordo__coo_entry_t a[2] = {{100, 4.0f}, {102, 1.0f}}, b[2] = {{100, 2.0f}, {103, -8.0f}};
    ORDO_CK_OK(ordo__sparse_agg_push(agg, 0, a, 2));
    ORDO_CK_OK(ordo__sparse_agg_push(agg, 1, b, 2));
    ORDO_CK_ERR(ordo__sparse_agg_apply_sgd(agg, w, m, &(ordo__sparse_sgd_t){0.1f, 0, 0, true}),
                ORDO_ERR_INVAL);
    ORDO_CK_OK(ordo__sparse_agg_select_topk(agg, 2)); /* sums 6 (100), 1 (102), -8 (103) */
    ordo__sparse_sgd_t opt = {.lr = 0.5f, .momentum = 0.9f, .weight_decay = 0.1f, .mean = true};
    ORDO_CK_ERR(ordo__sparse_agg_apply_sgd(agg, w, NULL, &opt), ORDO_ERR_INVAL);
    ORDO_CK_OK(ordo__sparse_agg_apply_sgd(agg, w, m, &opt));
    /* index 100: d = 6/2 + 0.1*1 = 3.1; m = 0.45 + 3.1 = 3.55; w = 1 - 1.775 = -0.775 */
    ck_assert_float_eq_tol(m[0], 3.55f, 1e-6f);
    ck_assert_float_eq_tol(w[0], -0.775f, 1e-6f);
    /* index 103: d = -8/2 + 0.4 = -3.6; m = 0.45 - 3.6 = -3.15; w = 4 + 1.575 = 5.575 */
    ck_assert_float_eq_tol(m[3], -3.15f, 1e-6f);
    ck_assert_float_eq_tol(w[3], 5.575f, 1e-6f);
    ck_assert_float_eq(w[1], 2.0f); /* untouched */
    ck_assert_float_eq(m[1], 0.5f); /* momentum of unselected entries is frozen */
    ck_assert_float_eq(w[2], 3.0f); /* pushed but not selected: no decay, no step */
    ck_assert_float_eq(m[2], 0.5f);
    ORDO_CK_ERR(ordo__sparse_agg_apply_sgd(agg, w, m, &opt), ORDO_ERR_INVAL);
    expect_detail("already applied");

    ck_assert_uint_eq(ordo__sparse_agg_changed_size(agg), 16);
    uint8_t buf[16];
    size_t len;
    ORDO_CK_ERR(ordo__sparse_agg_encode_changed(agg, w, buf, 15, &len), ORDO_ERR_RANGE);
    ORDO_CK_OK(ordo__sparse_agg_encode_changed(agg, w, buf, sizeof buf, &len));
    ordo__coo_entry_t got[2];
    size_t c;
    ORDO_CK_OK(ordo__coo_decode(buf, len, 100, 104, got, 2, &c));
    ck_assert_uint_eq(c, 2);
    ck_assert_uint_eq(got[0].index, 100);
    ck_assert_float_eq(got[0].value, w[0]);
    ck_assert_uint_eq(got[1].index, 103);
    ck_assert_float_eq(got[1].value, w[3]);
    ordo__sparse_agg_destroy(&agg);
}
END_TEST

/* ---- end to end: W workers, S servers ----------------------------------------------- */

enum { N = 64, W = 3, S = 2 };

typedef struct {
    ordo__sparsify_t *sp[W];
    ordo__sparse_agg_t *agg[S];
    uint32_t bounds[S + 1];
    float server_w[N], server_m[N], local_w[W][N];
} cluster_t;

static void cluster_new(cluster_t *c, size_t k_local, int period, uint32_t split)
{
    memset(c, 0, sizeof *c);
    c->bounds[0] = 0;
    c->bounds[1] = split;
    c->bounds[2] = N;
    ORDO_CK_OK(ordo__regions_check(c->bounds, S, N));
    for (int w = 0; w < W; w++)
        ORDO_CK_OK(ordo__sparsify_new(&c->sp[w], N, k_local, period));
    for (int s = 0; s < S; s++)
        ORDO_CK_OK(ordo__sparse_agg_new(&c->agg[s], c->bounds[s], c->bounds[s + 1], W,
                                       s ? ORDO_SPARSE_AGG_HASH : ORDO_SPARSE_AGG_DENSE, period));
}

static void cluster_destroy(cluster_t *c)
{
    for (int w = 0; w < W; w++)
        ordo__sparsify_destroy(&c->sp[w]);
    for (int s = 0; s < S; s++)
        ordo__sparse_agg_destroy(&c->agg[s]);
}

/* One iteration: pushes over the wire format, global selection (exact on due iterations:
 * per server select_topk(k_server), or the scheduler's threshold when k_server is 0), SGD,
 * pull answers applied by every worker. U receives the applied sums per index. */
static void cluster_step(cluster_t *c, float g[W][N], size_t k_global, size_t k_server,
                         const ordo__sparse_sgd_t *opt, float *U)
{
    uint8_t buf[N * 8];
    size_t len;
    for (int w = 0; w < W; w++) {
        ORDO_CK_OK(ordo__sparsify_push(c->sp[w], g[w]));
        for (int s = 0; s < S; s++) {
            ORDO_CK_OK(ordo__sparsify_pack_region(c->sp[w], c->bounds[s], c->bounds[s + 1], buf,
                                                 sizeof buf, &len));
            ORDO_CK_OK(ordo__sparse_agg_push_coo(c->agg[s], w, buf, len));
        }
    }
    if (ordo__sparse_agg_threshold_due(c->agg[0])) {
        if (k_server) {
            for (int s = 0; s < S; s++)
                ORDO_CK_OK(ordo__sparse_agg_select_topk(c->agg[s], k_server));
        } else {
            uint64_t *bins = calloc(ORDO_REGIONS_MAGHIST_BINS, sizeof *bins);
            for (int s = 0; s < S; s++)
                ORDO_CK_OK(ordo__sparse_agg_maghist(c->agg[s], bins));
            float thr = ordo__regions_maghist_threshold(bins, k_global);
            free(bins);
            for (int s = 0; s < S; s++)
                ORDO_CK_OK(ordo__sparse_agg_select_threshold(c->agg[s], thr));
        }
    } else {
        for (int s = 0; s < S; s++)
            ORDO_CK_OK(ordo__sparse_agg_select(c->agg[s]));
    }
    memset(U, 0, N * sizeof *U);
    for (int s = 0; s < S; s++) {
        size_t cnt;
        const ordo__coo_entry_t *sel = ordo__sparse_agg_selected(c->agg[s], &cnt);
        for (size_t j = 0; j < cnt; j++)
            U[sel[j].index] = sel[j].value;
        uint32_t lo = c->bounds[s];
        ORDO_CK_OK(ordo__sparse_agg_apply_sgd(c->agg[s], c->server_w + lo, c->server_m + lo, opt));
        ORDO_CK_OK(
            ordo__sparse_agg_encode_changed(c->agg[s], c->server_w + lo, buf, sizeof buf, &len));
        for (int w = 0; w < W; w++)
            ORDO_CK_OK(ordo__sparsify_apply_pull(c->sp[w], buf, len, lo, c->bounds[s + 1],
                                                c->local_w[w], NULL));
        ordo__sparse_agg_next(c->agg[s]);
    }
}

START_TEST(residual_accounting_loses_nothing)
{
    cluster_t c;
    cluster_new(&c, 6, 3, 24);
    ordo__sparse_sgd_t opt = {.lr = 0.01f, .momentum = 0.9f, .weight_decay = 0.0f, .mean = true};
    static float g[W][N];
    float U[N];
    double total_g[N] = {0}, total_u[N] = {0};
    int reused = 0, kept_pushed = 0, partial = 0;
    rng_state = 9;
    for (int step = 0; step < 12; step++) {
        float before[N] = {0};
        for (int w = 0; w < W; w++)
            for (int i = 0; i < N; i++) {
                /* Integers (exact in float); a few hot indices shared by all workers. */
                g[w][i] = (float)((int)(rnd() % 7) - 3) + (i % 9 == 0 ? 6.0f : 0.0f);
                before[i] += ordo__sparsify_residual(c.sp[w])[i] + g[w][i];
                total_g[i] += g[w][i];
            }
        /* Remember what each worker pushed, to see the residual rule at work. */
        cluster_step(&c, g, 8, 0, &opt, U);
        for (int w = 0; w < W; w++) {
            reused += !ordo__sparsify_last_exact(c.sp[w]);
            size_t cnt;
            const ordo__coo_entry_t *sel = ordo__sparsify_selected(c.sp[w], &cnt);
            for (size_t j = 0; j < cnt; j++) {
                float r = ordo__sparsify_residual(c.sp[w])[sel[j].index];
                if (U[sel[j].index] == 0.0f) {
                    ck_assert_float_eq(r, sel[j].value); /* pushed, not selected: kept */
                    kept_pushed++;
                } else {
                    ck_assert_float_eq(r, 0.0f); /* pushed and selected: applied */
                }
            }
        }
        for (int i = 0; i < N; i++) {
            float after = U[i];
            int pushers = 0;
            for (int w = 0; w < W; w++) {
                after += ordo__sparsify_residual(c.sp[w])[i];
                pushers += ordo__sparsify_region_count(c.sp[w], (uint32_t)i, (uint32_t)i + 1) > 0;
            }
            partial += U[i] != 0.0f && pushers < W;
            /* Σ_w (applied + residual) = Σ_w (previous residual + gradient), exactly. */
            ck_assert_msg(after == before[i], "step %d index %d: %g != %g", step, i, after,
                          before[i]);
            total_u[i] += U[i];
        }
    }
    for (int i = 0; i < N; i++) {
        double res = 0;
        for (int w = 0; w < W; w++)
            res += ordo__sparsify_residual(c.sp[w])[i];
        ck_assert_msg(total_u[i] + res == total_g[i], "index %d: %g + %g != %g", i, total_u[i], res,
                      total_g[i]);
    }
    /* The run exercised threshold reuse, pushed-but-unselected entries and entries selected
     * globally although only some workers pushed them. */
    ck_assert_int_gt(reused, 0);
    ck_assert_int_gt(kept_pushed, 0);
    ck_assert_int_gt(partial, 0);
    /* Every worker's local copy equals the servers' parameters. */
    for (int w = 0; w < W; w++)
        ck_assert_mem_eq(c.local_w[w], c.server_w, sizeof c.server_w);
    cluster_destroy(&c);
}
END_TEST

START_TEST(density_one_equals_dense_sgd)
{
    cluster_t c;
    cluster_new(&c, N, 2, 17);
    ordo__sparse_sgd_t opt = {.lr = 0.05f, .momentum = 0.9f, .weight_decay = 0.01f, .mean = true};
    float ref_w[N], ref_m[N] = {0}, U[N];
    static float g[W][N];
    rng_state = 21;
    for (int i = 0; i < N; i++) {
        ref_w[i] = (float)((int)(rnd() % 2001) - 1000) / 1000.0f;
        c.server_w[i] = ref_w[i];
        for (int w = 0; w < W; w++)
            c.local_w[w][i] = ref_w[i];
    }
    for (int step = 0; step < 8; step++) {
        for (int w = 0; w < W; w++)
            for (int i = 0; i < N; i++)
                g[w][i] = (float)((int)(rnd() % 20001) - 10000) / 7919.0f;
        for (int i = 0; i < 5; i++)
            g[0][i] = g[1][i] = g[2][i] = 0.0f; /* zero gradients too */
        cluster_step(&c, g, N, N, &opt, U);
        for (int i = 0; i < N; i++) { /* dense SGD, same formula */
            float s = 0.0f;
            for (int w = 0; w < W; w++)
                s += g[w][i];
            float d = s / (float)W + opt.weight_decay * ref_w[i];
            ref_m[i] = opt.momentum * ref_m[i] + d;
            ref_w[i] -= opt.lr * ref_m[i];
        }
        for (int i = 0; i < N; i++) {
            float tol = 1e-6f * fmaxf(fabsf(ref_w[i]), 1e-3f);
            ck_assert_float_eq_tol(c.server_w[i], ref_w[i], tol);
            for (int w = 0; w < W; w++)
                ck_assert_float_eq_tol(c.local_w[w][i], ref_w[i], tol);
        }
    }
    cluster_destroy(&c);
}
END_TEST

/* Pushes the same skewed values (exponential, scales differing by server) every time. */
static void push_skewed(ordo__sparse_agg_t *agg[2])
{
    static ordo__coo_entry_t e[5000];
    rng_state = 4;
    for (int s = 0; s < 2; s++) {
        size_t c = 0;
        for (uint32_t i = ordo__sparse_agg_lo(agg[s]); i < ordo__sparse_agg_hi(agg[s]); i += 2) {
            double u = ((double)rnd() + 0.5) / 4294967296.0;
            e[c++] = (ordo__coo_entry_t){i, (float)((s ? 2e-3 : 1e-3) * -log(u))};
        }
        ORDO_CK_OK(ordo__sparse_agg_push(agg[s], 0, e, c));
    }
}

/* The scheduler's threshold from the servers' magnitude histograms makes their selections
 * add up to about k. */
START_TEST(servers_selections_add_up_to_k)
{
    ordo__sparse_agg_t *agg[2];
    ORDO_CK_OK(ordo__sparse_agg_new(&agg[0], 0, 4000, 1, ORDO_SPARSE_AGG_DENSE, 8));
    ORDO_CK_OK(ordo__sparse_agg_new(&agg[1], 4000, 10000, 1, ORDO_SPARSE_AGG_HASH, 8));
    size_t ks[] = {50, 300, 2000};
    for (size_t j = 0; j < 3; j++) {
        push_skewed(agg);
        uint64_t *bins = calloc(ORDO_REGIONS_MAGHIST_BINS, sizeof *bins);
        for (int s = 0; s < 2; s++)
            ORDO_CK_OK(ordo__sparse_agg_maghist(agg[s], bins));
        float thr = ordo__regions_maghist_threshold(bins, ks[j]);
        free(bins);
        size_t total = 0, c;
        for (int s = 0; s < 2; s++) {
            ORDO_CK_OK(ordo__sparse_agg_select_threshold(agg[s], thr));
            ordo__sparse_agg_selected(agg[s], &c);
            total += c;
            ordo__sparse_agg_next(agg[s]);
        }
        ck_assert_msg(total >= ks[j] * 95 / 100 && total <= ks[j] * 105 / 100,
                      "k = %zu: selections add up to %zu", ks[j], total);
    }
    ordo__sparse_agg_destroy(&agg[0]);
    ordo__sparse_agg_destroy(&agg[1]);
}
END_TEST

START_TEST(region_can_move_between_iterations)
{
    ordo__sparse_agg_t *agg;
    ORDO_CK_OK(ordo__sparse_agg_new(&agg, 0, 10, 1, ORDO_SPARSE_AGG_DENSE, 1));
    ordo__coo_entry_t e[1] = {{5, 1.0f}};
    ORDO_CK_OK(ordo__sparse_agg_push(agg, 0, e, 1));
    ORDO_CK_ERR(ordo__sparse_agg_set_range(agg, 5, 30), ORDO_ERR_INVAL);
    ordo__sparse_agg_next(agg); /* discards the unselected iteration */
    ORDO_CK_OK(ordo__sparse_agg_set_range(agg, 5, 30));
    ordo__coo_entry_t f[2] = {{5, 1.0f}, {29, 2.0f}};
    ORDO_CK_OK(ordo__sparse_agg_push(agg, 0, f, 2));
    ck_assert_uint_eq(ordo__sparse_agg_touched(agg), 2);
    ORDO_CK_OK(ordo__sparse_agg_select_topk(agg, 5));
    size_t c;
    const ordo__coo_entry_t *sel = ordo__sparse_agg_selected(agg, &c);
    ck_assert_uint_eq(c, 2);
    ck_assert_float_eq(sel[0].value, 1.0f); /* the discarded push did not leak in */
    ordo__sparse_agg_destroy(&agg);
}
END_TEST

static Suite *sparse_agg_suite(void)
{
    Suite *s = suite_create("sparse_agg");
    TCase *tc = tcase_create("aggregate");
    tcase_add_test(tc, pushes_are_validated);
    tcase_add_test(tc, dense_and_hash_select_the_true_topk);
    tcase_add_test(tc, threshold_is_due_every_period);
    tcase_add_test(tc, sgd_touches_selected_entries_only);
    tcase_add_test(tc, servers_selections_add_up_to_k);
    tcase_add_test(tc, region_can_move_between_iterations);
    suite_add_tcase(s, tc);
    tc = tcase_create("end_to_end");
    tcase_add_test(tc, residual_accounting_loses_nothing);
    tcase_add_test(tc, density_one_equals_dense_sgd);
    suite_add_tcase(s, tc);
    return s;
}

ORDO_CK_MAIN(sparse_agg_suite)
