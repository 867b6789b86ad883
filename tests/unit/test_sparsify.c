/* Tests of worker/sparsify: exact top-k on adversarial inputs, the threshold scan, the
 * residual state with threshold reuse, packing per region and the pull-side residual rule. */
#include "core/sparsify.h"
#include "ordo_check.h"
#include "core/regions.h"
#include "core/sparsify_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng_state;

static uint32_t rnd(void)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (uint32_t)(rng_state >> 33);
}

/* Reference top-k: order by magnitude descending then index ascending, take k, return the
 * chosen indices in index order (sel[i] = 1 when chosen). */
static const float *ref_x;
static int ref_cmp(const void *a, const void *b)
{
    size_t i = *(const size_t *)a, j = *(const size_t *)b;
    float x = fabsf(ref_x[i]), y = fabsf(ref_x[j]);
    if (x != y) return x > y ? -1 : 1;
    return (i > j) - (i < j);
}

static void ref_topk(const float *x, size_t n, size_t k, unsigned char *sel)
{
    size_t *ord = malloc(n * sizeof *ord);
    for (size_t i = 0; i < n; i++)
        ord[i] = i;
    ref_x = x;
    qsort(ord, n, sizeof *ord, ref_cmp);
    memset(sel, 0, n);
    for (size_t i = 0; i < k; i++)
        sel[ord[i]] = 1;
    free(ord);
}

static void check_topk(const float *x, size_t n, size_t k)
{
    ordo__coo_entry_t *out = malloc((k + 1) * sizeof *out);
    unsigned char *want = malloc(n);
    float thr;
    ORDO_CK_OK(ordo__sparsify_topk(x, n, k, NULL, out, &thr));
    ref_topk(x, n, k, want);
    size_t j = 0;
    for (size_t i = 0; i < n; i++) {
        if (!want[i]) continue;
        ck_assert_msg(j < k, "n=%zu k=%zu: too few selected", n, k);
        ck_assert_msg(out[j].index == i, "n=%zu k=%zu: entry %zu is index %u, want %zu", n, k, j,
                      out[j].index, i);
        ck_assert(memcmp(&out[j].value, &x[i], sizeof(float)) == 0);
        j++;
    }
    if (k > 0) { /* thr is the k-th largest magnitude: the smallest one selected */
        float mn = INFINITY;
        for (size_t i = 0; i < k; i++)
            mn = fminf(mn, fabsf(out[i].value));
        ck_assert_float_eq(thr, mn);
    } else {
        ck_assert(isinf(thr));
    }
    free(out);
    free(want);
}

START_TEST(topk_matches_reference_with_ties)
{
    static const float pool[] = {0.0f, -0.0f, 1.0f, -1.0f, 2.0f, -2.0f, 0.5f, -0.5f, 3.0f};
    rng_state = 1;
    for (size_t n = 1; n <= 80; n++) {
        float *x = malloc(n * sizeof *x);
        for (int trial = 0; trial < 4; trial++) {
            for (size_t i = 0; i < n; i++)
                x[i] = pool[rnd() % (trial < 2 ? 9 : 3)];
            for (size_t k = 0; k <= n; k++)
                check_topk(x, n, k);
        }
        free(x);
    }
}
END_TEST

START_TEST(topk_large_inputs_exercise_sampling)
{
    size_t n = 20000;
    float *x = malloc(n * sizeof *x);
    rng_state = 7;
    for (int pattern = 0; pattern < 5; pattern++) {
        for (size_t i = 0; i < n; i++) {
            switch (pattern) {
            case 0:
                x[i] = (float)(rnd() % 1000000) - 500000.0f;
                break; /* random */
            case 1:
                x[i] = (float)i;
                break; /* sorted */
            case 2:
                x[i] = (float)(n - i);
                break; /* reversed */
            case 3:
                x[i] = (float)(rnd() % 4);
                break; /* few values */
            default:
                x[i] = (float)(i < n / 2 ? i : n - i) * ((i / 1000) % 2 ? 1e-3f : 1e3f);
            }
        }
        size_t ks[] = {1, 2, 200, 4999, 10000, 19999, 20000};
        for (size_t j = 0; j < sizeof ks / sizeof *ks; j++)
            check_topk(x, n, ks[j]);
    }
    free(x);
}
END_TEST

START_TEST(topk_all_equal_and_edges)
{
    float x[100];
    for (int i = 0; i < 100; i++)
        x[i] = i % 2 ? 3.0f : -3.0f;
    ordo__coo_entry_t out[100];
    float thr;
    ORDO_CK_OK(ordo__sparsify_topk(x, 100, 10, NULL, out, &thr));
    ck_assert_float_eq(thr, 3.0f);
    for (uint32_t i = 0; i < 10; i++)
        ck_assert_uint_eq(out[i].index, i);
    ORDO_CK_OK(ordo__sparsify_topk(x, 100, 0, NULL, out, &thr)); /* k = 0: nothing */
    ck_assert(isinf(thr));
    ORDO_CK_OK(ordo__sparsify_topk(x, 100, 100, NULL, out, &thr)); /* k = n: everything */
    for (uint32_t i = 0; i < 100; i++)
        ck_assert_uint_eq(out[i].index, i);
    ORDO_CK_ERR(ordo__sparsify_topk(x, 100, 101, NULL, out, &thr), ORDO_ERR_INVAL);
    ck_assert(strstr(ordo__error_detail(), "k = 101 exceeds n = 100"));
    ORDO_CK_ERR(ordo__sparsify_kth_magnitude(x, 100, 0, NULL, &thr), ORDO_ERR_INVAL);
    ORDO_CK_OK(ordo__sparsify_kth_magnitude(x, 100, 100, NULL, &thr));
    ck_assert_float_eq(thr, 3.0f);
}
END_TEST

START_TEST(nan_and_inf_are_rejected)
{
    float x[40];
    for (int i = 0; i < 40; i++)
        x[i] = (float)i;
    ordo__coo_entry_t out[40];
    float thr = 42.0f;
    x[5] = NAN;
    ORDO_CK_ERR(ordo__sparsify_topk(x, 40, 3, NULL, out, &thr), ORDO_ERR_INVAL);
    ck_assert_str_eq(ordo__error_detail(), "input entry 5 is NaN");
    ORDO_CK_ERR(ordo__sparsify_topk(x, 40, 0, NULL, out, &thr), ORDO_ERR_INVAL); /* even k = 0 */
    ORDO_CK_ERR(ordo__sparsify_kth_magnitude(x, 40, 3, NULL, &thr), ORDO_ERR_INVAL);
    ck_assert_float_eq(thr, 42.0f);
    x[5] = 5.0f;
    x[39] = -INFINITY;
    ORDO_CK_ERR(ordo__sparsify_topk(x, 40, 3, NULL, out, &thr), ORDO_ERR_INVAL);
    ck_assert_str_eq(ordo__error_detail(), "input entry 39 is infinite");
    ORDO_CK_ERR(ordo__sparsify_check_finite(x, 40, "gradient"), ORDO_ERR_INVAL);
    ck_assert_str_eq(ordo__error_detail(), "gradient entry 39 is infinite");
    x[39] = 39.0f;
    ORDO_CK_OK(ordo__sparsify_check_finite(x, 40, "gradient"));
}
END_TEST

START_TEST(select_u32_places_the_rank)
{
    size_t n = 3001;
    uint32_t *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
    rng_state = 3;
    for (int pattern = 0; pattern < 4; pattern++) {
        for (size_t r = 0; r < n; r += 250) {
            for (size_t i = 0; i < n; i++)
                a[i] = pattern == 0   ? rnd()
                       : pattern == 1 ? (uint32_t)(n - i)
                       : pattern == 2 ? 7u
                                      : (uint32_t)(i % 17);
            memcpy(b, a, n * sizeof *a);
            ordo__sparsify_select_u32(a, n, r);
            size_t less = 0, leq = 0; /* a[r] must have rank r among the originals */
            for (size_t i = 0; i < n; i++) {
                less += b[i] < a[r];
                leq += b[i] <= a[r];
            }
            ck_assert(less <= r && r < leq);
            for (size_t i = 0; i < r; i++)
                ck_assert(a[i] <= a[r]);
            for (size_t i = r + 1; i < n; i++)
                ck_assert(a[i] >= a[r]);
        }
    }
    free(a);
    free(b);
}
END_TEST

START_TEST(scan_selects_by_threshold)
{
    size_t n = 1000; /* not a multiple of the block size */
    float *x = malloc(n * sizeof *x);
    ordo__coo_entry_t *out = malloc(n * sizeof *out);
    rng_state = 11;
    for (size_t i = 0; i < n; i++)
        x[i] = ((float)(rnd() % 2001) - 1000.0f) / 100.0f;
    x[999] = 9.99f;
    size_t want = 0;
    for (size_t i = 0; i < n; i++)
        want += fabsf(x[i]) >= 9.0f;
    size_t c = ordo__sparsify_scan(x, n, 9.0f, out, n);
    ck_assert_uint_eq(c, want);
    for (size_t j = 0; j < c; j++) {
        ck_assert(fabsf(x[out[j].index]) >= 9.0f);
        ck_assert_float_eq(out[j].value, x[out[j].index]);
        if (j) ck_assert_uint_gt(out[j].index, out[j - 1].index);
    }
    ck_assert_uint_eq(out[c - 1].index, 999);
    /* A small buffer gets the first entries and the true count comes back. */
    ordo__coo_entry_t few[3];
    ck_assert_uint_eq(ordo__sparsify_scan(x, n, 9.0f, few, 3), want);
    ck_assert_mem_eq(few, out, sizeof few);
    /* Every vector path this CPU has, and the portable loop, agree, capacities included. */
    ordo__coo_entry_t *alt = malloc(n * sizeof *alt), *ref = malloc(n * sizeof *ref);
    size_t caps[] = {0, 1, 5, 17, want, n};
    float thrs[] = {7.5f, 0.0f, 0.5f};
    int paths = 0;
    for (size_t t = 0; t < 3; t++)
        for (size_t j = 0; j < 6; j++)
            for (size_t len = n - 130; len <= n; len += 13) {
                size_t a = ordo__sparsify_scan_with(x, len, thrs[t], ref, caps[j], 0);
                for (int path = 1; path <= 3; path++) {
                    size_t b = ordo__sparsify_scan_with(x, len, thrs[t], alt, caps[j], path);
                    if (b == SIZE_MAX) continue;
                    paths += t == 0 && j == 0 && len == n - 130;
                    ck_assert_uint_eq(a, b);
                    ck_assert_mem_eq(ref, alt, (a < caps[j] ? a : caps[j]) * sizeof *out);
                }
            }
    ck_assert_uint_eq(ordo__sparsify_scan(x, n, 7.5f, alt, n),
                      ordo__sparsify_scan_with(x, n, 7.5f, ref, n, 0));
    free(alt);
    free(ref);
#if defined(__x86_64__)
    ck_assert_int_ge(paths, 1); /* SSE2 at least */
#endif
    /* Threshold 0 selects everything, zeros included; +inf selects nothing. */
    x[0] = -0.0f;
    ck_assert_uint_eq(ordo__sparsify_scan(x, n, 0.0f, out, n), n);
    ck_assert_uint_eq(ordo__sparsify_scan(x, n, INFINITY, out, n), 0);
    free(x);
    free(out);
}
END_TEST

START_TEST(state_validation_and_k)
{
    ordo__sparsify_t *sp = NULL;
    ORDO_CK_ERR(ordo__sparsify_new(&sp, 0, 1, 4), ORDO_ERR_INVAL);
    ORDO_CK_ERR(ordo__sparsify_new(&sp, 10, 11, 4), ORDO_ERR_INVAL);
    ORDO_CK_ERR(ordo__sparsify_new(&sp, 10, 0, 4), ORDO_ERR_INVAL);
    ORDO_CK_ERR(ordo__sparsify_new(&sp, 10, 2, 0), ORDO_ERR_INVAL);
    ck_assert_ptr_null(sp);
    ck_assert_uint_eq(ordo__sparsify_k_for(1000, 0.01), 10);
    ck_assert_uint_eq(ordo__sparsify_k_for(10, 0.01), 1);
    ck_assert_uint_eq(ordo__sparsify_k_for(10, 1.0), 10);
    ck_assert_uint_eq(ordo__sparsify_k_for(0, 0.5), 0);
    ordo__sparsify_destroy(&sp); /* NULL-safe */
}
END_TEST

START_TEST(threshold_is_reused_between_exact_evaluations)
{
    size_t n = 64, k = 4;
    ordo__sparsify_t *sp;
    ORDO_CK_OK(ordo__sparsify_new(&sp, n, k, 3));
    float g[64];
    for (size_t i = 0; i < n; i++)
        g[i] = i < 4 ? 10.0f + (float)i : 1e-3f;
    bool exact[7];
    size_t counts[7];
    for (int t = 0; t < 7; t++) {
        if (t == 4) g[10] = g[11] = 20.0f; /* two more large entries appear */
        ORDO_CK_OK(ordo__sparsify_push(sp, g));
        exact[t] = ordo__sparsify_last_exact(sp);
        size_t c;
        const ordo__coo_entry_t *sel = ordo__sparsify_selected(sp, &c);
        counts[t] = c;
        uint32_t idx[8];
        for (size_t j = 0; j < c; j++)
            idx[j] = sel[j].index;
        ORDO_CK_OK(ordo__sparsify_commit(sp, idx, c)); /* all pushed entries applied */
        if (t < 3) ck_assert_float_eq(ordo__sparsify_threshold(sp), 10.0f);
    }
    ck_assert_uint_eq(ordo__sparsify_iteration(sp), 7);
    ck_assert(exact[0] && !exact[1] && !exact[2] && exact[3] && !exact[4] && !exact[5] && exact[6]);
    ck_assert_uint_eq(counts[0], k);
    ck_assert_uint_eq(counts[1], k); /* reused threshold 10 */
    ck_assert_uint_eq(counts[3], k);
    ck_assert_uint_eq(counts[4], 6); /* reuse is not exactly k: 6 entries reach 10 */
    ck_assert_uint_eq(counts[6], k); /* re-evaluated: exactly k again */
    ck_assert_float_eq(ordo__sparsify_threshold(sp), 12.0f); /* 20 20 13 12 */
    ordo__sparsify_destroy(&sp);
}
END_TEST

START_TEST(overshoot_forces_reevaluation)
{
    size_t n = 100, k = 5;
    ordo__sparsify_t *sp;
    ORDO_CK_OK(ordo__sparsify_new(&sp, n, k, 10));
    float g[100];
    for (size_t i = 0; i < n; i++)
        g[i] = (float)i / 100.0f;
    ORDO_CK_OK(ordo__sparsify_push(sp, g)); /* exact: 95..99, threshold 0.95 */
    ck_assert(ordo__sparsify_last_exact(sp));
    ck_assert_float_eq(ordo__sparsify_threshold(sp), 0.95f);
    uint32_t all[100];
    for (uint32_t i = 0; i < 100; i++)
        all[i] = i;
    ORDO_CK_OK(ordo__sparsify_commit(sp, all, n));
    /* Small gradients: reuse selects nothing, everything stays in the residual. */
    for (size_t i = 0; i < n; i++)
        g[i] = 0.001f;
    ORDO_CK_OK(ordo__sparsify_push(sp, g));
    size_t c;
    ordo__sparsify_selected(sp, &c);
    ck_assert(!ordo__sparsify_last_exact(sp));
    ck_assert_uint_eq(c, 0);
    /* A jump: the reused threshold would pick 100 > 2k, so it is re-evaluated now. */
    for (size_t i = 0; i < n; i++)
        g[i] = 10.0f + (float)i;
    ORDO_CK_OK(ordo__sparsify_push(sp, g));
    ordo__sparsify_selected(sp, &c);
    ck_assert(ordo__sparsify_last_exact(sp));
    ck_assert_uint_eq(c, k);
    ordo__sparsify_destroy(&sp);
}
END_TEST

START_TEST(bad_gradient_leaves_state_unchanged)
{
    size_t n = 50;
    ordo__sparsify_t *sp;
    ORDO_CK_OK(ordo__sparsify_new(&sp, n, 5, 4));
    float g[50], before[50];
    for (size_t i = 0; i < n; i++)
        g[i] = (float)i;
    g[7] = 3e38f;
    ORDO_CK_OK(ordo__sparsify_push(sp, g));
    ORDO_CK_OK(ordo__sparsify_commit(sp, NULL, 0)); /* nothing applied: residual = acc */
    memcpy(before, ordo__sparsify_residual(sp), sizeof before);
    g[3] = NAN;
    ORDO_CK_ERR(ordo__sparsify_push(sp, g), ORDO_ERR_INVAL);
    ck_assert_str_eq(ordo__error_detail(), "gradient entry 3 is NaN");
    ck_assert_mem_eq(ordo__sparsify_residual(sp), before, sizeof before);
    g[3] = 3.0f;
    ORDO_CK_ERR(ordo__sparsify_push(sp, g), ORDO_ERR_RANGE); /* 3e38 + 3e38 overflows */
    ck_assert(strstr(ordo__error_detail(), "entry 7 overflows"));
    ck_assert_mem_eq(ordo__sparsify_residual(sp), before, sizeof before);
    ck_assert_uint_eq(ordo__sparsify_iteration(sp), 1);
    ordo__sparsify_destroy(&sp);
}
END_TEST

START_TEST(density_one_selects_everything)
{
    ordo__sparsify_t *sp;
    ORDO_CK_OK(ordo__sparsify_new(&sp, 40, 40, 2));
    float g[40];
    for (int t = 0; t < 4; t++) {
        for (int i = 0; i < 40; i++)
            g[i] = (float)((i * 7 + t) % 11) - 5.0f; /* zeros too */
        ORDO_CK_OK(ordo__sparsify_push(sp, g));
        size_t c;
        ordo__sparsify_selected(sp, &c);
        ck_assert_uint_eq(c, 40);
        ck_assert_float_eq(ordo__sparsify_threshold(sp), 0.0f);
        uint32_t all[40];
        for (uint32_t i = 0; i < 40; i++)
            all[i] = i;
        ORDO_CK_OK(ordo__sparsify_commit(sp, all, 40));
        for (int i = 0; i < 40; i++)
            ck_assert_float_eq(ordo__sparsify_residual(sp)[i], 0.0f);
    }
    ordo__sparsify_destroy(&sp);
}
END_TEST

START_TEST(pack_regions_and_apply_pulls)
{
    size_t n = 32, k = 6;
    ordo__sparsify_t *sp;
    ORDO_CK_OK(ordo__sparsify_new(&sp, n, k, 4));
    float g[32], params[32];
    for (size_t i = 0; i < n; i++) {
        g[i] = (i % 5 == 0) ? 10.0f + (float)i : 1.0f; /* 0 5 10 15 20 25 30 are large */
        params[i] = 100.0f;
    }
    ORDO_CK_OK(ordo__sparsify_push(sp, g)); /* top 6: 5 10 15 20 25 30 */
    uint32_t bounds[3] = {0, 12, 32};
    ck_assert_uint_eq(ordo__sparsify_region_count(sp, 0, 12), 2);
    ck_assert_uint_eq(ordo__sparsify_region_count(sp, 12, 32), 4);
    uint8_t buf[64];
    size_t len;
    ORDO_CK_ERR(ordo__sparsify_pack_region(sp, 12, 32, buf, 31, &len), ORDO_ERR_RANGE);
    ORDO_CK_OK(ordo__sparsify_pack_region(sp, bounds[1], bounds[2], buf, sizeof buf, &len));
    ck_assert_uint_eq(len, 32);
    ordo__coo_entry_t e[4];
    size_t c;
    ORDO_CK_OK(ordo__coo_decode(buf, len, 12, 32, e, 4, &c));
    ck_assert_uint_eq(e[0].index, 15);
    ck_assert_float_eq(e[0].value, 25.0f);
    ck_assert_uint_eq(e[3].index, 30);

    /* The server of region 1 selected 15 and 25 (pushed) and 13 (not pushed by us). */
    ordo__coo_entry_t ans[3] = {{13, -1.0f}, {15, -2.0f}, {25, -3.0f}};
    ordo__coo_encode(ans, 3, buf);
    size_t consumed = 0;
    ORDO_CK_ERR(ordo__sparsify_apply_pull(sp, buf, 24, 0, 12, params, &consumed), ORDO_ERR_PROTO);
    ck_assert_float_eq(params[13], 100.0f); /* rejected: nothing changed */
    ORDO_CK_OK(ordo__sparsify_apply_pull(sp, buf, 24, 12, 32, params, &consumed));
    ck_assert_uint_eq(consumed, 2);
    ck_assert_float_eq(params[13], -1.0f);
    ck_assert_float_eq(params[25], -3.0f);
    const float *res = ordo__sparsify_residual(sp);
    ck_assert_float_eq(res[15], 0.0f); /* pushed and selected: applied */
    ck_assert_float_eq(res[25], 0.0f);
    ck_assert_float_eq(res[20], 30.0f); /* pushed, not selected: stays */
    ck_assert_float_eq(res[13], 1.0f);  /* not pushed: stays although selected elsewhere */
    ck_assert_float_eq(res[5], 15.0f);  /* region 0's pull has not come: stays */
    uint32_t idx[2] = {5, 6};
    ORDO_CK_OK(ordo__sparsify_commit(sp, idx, 2));
    ck_assert_float_eq(res[5], 0.0f);
    ck_assert_float_eq(res[6], 1.0f);
    uint32_t bad[2] = {6, 5};
    ORDO_CK_ERR(ordo__sparsify_commit(sp, bad, 2), ORDO_ERR_INVAL);

    uint64_t hist[4] = {0};
    ORDO_CK_OK(ordo__sparsify_position_hist(sp, 4, hist)); /* bins of 8: 5 | 10 15 | 20 | 25 30 */
    ck_assert_uint_eq(hist[0], 1);
    ck_assert_uint_eq(hist[1], 2);
    ck_assert_uint_eq(hist[2], 1);
    ck_assert_uint_eq(hist[3], 2);
    ordo__sparsify_destroy(&sp);
}
END_TEST


/* a state record taken between iterations and restored into a fresh sparsifier: the later
 * pushes select exactly what the original's do (residuals, cached threshold, reuse count);
 * a record of another size, a truncated one and a non-finite residual are refused */
START_TEST(state_record_round_trip)
{
    size_t n = 200, k = 7;
    ordo__sparsify_t *a, *b, *c;
    ORDO_CK_OK(ordo__sparsify_new(&a, n, k, 4));
    ORDO_CK_OK(ordo__sparsify_new(&b, n, k, 4));
    ORDO_CK_OK(ordo__sparsify_new(&c, n + 1, k, 4));
    float g[200];
    uint32_t idx[200];
    for (int t = 0; t < 12; t++) {
        if (t == 6) { /* checkpoint */
            size_t size = ordo__sparsify_state_size(a);
            uint8_t *rec = malloc(size);
            ordo__sparsify_state_get(a, rec);
            ORDO_CK_OK(ordo__sparsify_state_set(b, rec, size));
            ck_assert_int_eq(ordo__sparsify_state_set(c, rec, size), ORDO_ERR_FORMAT);
            ck_assert_int_eq(ordo__sparsify_state_set(b, rec, size - 4), ORDO_ERR_FORMAT);
            float nan = NAN;
            memcpy(rec + size - 4, &nan, 4);
            ck_assert_int_eq(ordo__sparsify_state_set(b, rec, size), ORDO_ERR_FORMAT);
            free(rec);
        }
        for (size_t i = 0; i < n; i++)
            g[i] = (float)sin((double)(i * 7 + (size_t)t * 13)) * (1.0f + (float)(i % 5));
        ordo__sparsify_t *run[2] = {a, b};
        for (int r = 0; r < (t >= 6 ? 2 : 1); r++) {
            ORDO_CK_OK(ordo__sparsify_push(run[r], g));
            size_t cnt;
            const ordo__coo_entry_t *sel = ordo__sparsify_selected(run[r], &cnt);
            for (size_t j = 0; j < cnt && j < 3; j++) /* the servers took a few of them */
                idx[j] = sel[j].index;
            ORDO_CK_OK(ordo__sparsify_commit(run[r], idx, cnt < 3 ? cnt : 3));
        }
        if (t >= 6) {
            size_t ca, cb;
            const ordo__coo_entry_t *sa = ordo__sparsify_selected(a, &ca);
            const ordo__coo_entry_t *sb = ordo__sparsify_selected(b, &cb);
            ck_assert_uint_eq(ca, cb);
            for (size_t j = 0; j < ca; j++) {
                ck_assert_uint_eq(sa[j].index, sb[j].index);
                ck_assert(memcmp(&sa[j].value, &sb[j].value, 4) == 0);
            }
            ck_assert(ordo__sparsify_last_exact(a) == ordo__sparsify_last_exact(b));
            ck_assert(memcmp(ordo__sparsify_residual(a), ordo__sparsify_residual(b), n * 4) == 0);
        }
    }
    ordo__sparsify_destroy(&a);
    ordo__sparsify_destroy(&b);
    ordo__sparsify_destroy(&c);
}
END_TEST

static Suite *sparsify_suite(void)
{
    Suite *s = suite_create("sparsify");
    TCase *tc = tcase_create("selection");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, topk_matches_reference_with_ties);
    tcase_add_test(tc, topk_large_inputs_exercise_sampling);
    tcase_add_test(tc, topk_all_equal_and_edges);
    tcase_add_test(tc, nan_and_inf_are_rejected);
    tcase_add_test(tc, select_u32_places_the_rank);
    tcase_add_test(tc, scan_selects_by_threshold);
    suite_add_tcase(s, tc);
    tc = tcase_create("state");
    tcase_add_test(tc, state_validation_and_k);
    tcase_add_test(tc, threshold_is_reused_between_exact_evaluations);
    tcase_add_test(tc, overshoot_forces_reevaluation);
    tcase_add_test(tc, bad_gradient_leaves_state_unchanged);
    tcase_add_test(tc, density_one_selects_everything);
    tcase_add_test(tc, pack_regions_and_apply_pulls);
    tcase_add_test(tc, state_record_round_trip);
    suite_add_tcase(s, tc);
    return s;
}

ORDO_CK_MAIN(sparsify_suite)
