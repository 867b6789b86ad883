/* Tests of scheduler/regions: balanced boundaries on skewed histograms, validation, owner
 * moves, and the global threshold from magnitude histograms. */
#include "core/regions.h"
#include "ordo_check.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng_state;

static double unit(void)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return ((double)(rng_state >> 11) + 0.5) / 9007199254740992.0;
}

/* Positions of top-k entries for one worker, three skews: density falling exponentially
 * along the tensor (150x from first to last index); half of them in a hot band of 2% (an
 * embedding) over a uniform rest; power-law peaks at both ends. */
static uint32_t skewed_position(uint32_t n, int shape)
{
    double u = unit();
    if (shape == 0) return (uint32_t)(n * -log(1 - u * (1 - exp(-5.0))) / 5.0);
    if (shape == 1)
        return u < 0.5 ? (uint32_t)(n * (0.70 + 0.02 * unit())) : (uint32_t)(n * unit());
    return u < 0.3 ? (uint32_t)(n * pow(unit(), 2.0)) : (uint32_t)(n * (1 - pow(unit(), 2.0)));
}

START_TEST(balance_keeps_loads_within_1_5x_of_mean)
{
    enum { NPOS = 40000, BINS = 1024, WORKERS = 4 };
    uint32_t n = 1000000;
    static uint32_t pos[WORKERS * NPOS];
    for (int shape = 0; shape < 3; shape++) {
        rng_state = 100 + (uint64_t)shape;
        uint64_t hist[BINS] = {0};
        for (int i = 0; i < WORKERS * NPOS; i++) {
            pos[i] = skewed_position(n, shape);
            if (pos[i] >= n) pos[i] = n - 1;
            hist[ordo_regions_bin_of(pos[i], n, BINS)]++;
        }
        int sizes[] = {2, 3, 4, 8, 16}, skewed = 0;
        for (int j = 0; j < 5; j++) {
            int S = sizes[j];
            uint32_t bounds[17], again[17], even[17];
            ORDO_CK_OK(ordo__regions_balance(hist, BINS, n, S, bounds));
            ORDO_CK_OK(ordo__regions_check(bounds, S, n));
            ORDO_CK_OK(ordo__regions_balance(hist, BINS, n, S, again));
            ck_assert_mem_eq(bounds, again, (size_t)(S + 1) * sizeof *bounds); /* deterministic */
            ORDO_CK_OK(ordo__regions_even(n, S, even));
            double load[17] = {0}, even_load[17] = {0}, mean = (double)WORKERS * NPOS / S;
            for (int i = 0; i < WORKERS * NPOS; i++) {
                load[ordo__regions_find(bounds, S, pos[i])]++;
                even_load[ordo__regions_find(even, S, pos[i])]++;
            }
            double worst = 0, worst_even = 0;
            for (int s = 0; s < S; s++) {
                worst = fmax(worst, load[s] / mean);
                worst_even = fmax(worst_even, even_load[s] / mean);
                double expected = ordo__regions_load(hist, BINS, n, bounds[s], bounds[s + 1]);
                /* balanced on the histogram, up to rounding boundaries to whole indices */
                ck_assert_msg(fabs(expected - mean) <= 0.02 * mean, "expected load %.0f vs %.0f",
                              expected, mean);
            }
            ck_assert_msg(worst <= 1.5, "shape %d, S = %d: max load %.2f x mean", shape, S, worst);
            ck_assert_msg(worst < worst_even, "shape %d, S = %d: balance did not help", shape, S);
            skewed += worst_even > 1.5;
        }
        ck_assert_int_ge(skewed, 3); /* the even split was far off for most S */
    }
}
END_TEST

START_TEST(balance_edges_and_validation)
{
    uint64_t zero[8] = {0};
    uint32_t b[9];
    ORDO_CK_OK(ordo__regions_balance(zero, 8, 100, 4, b)); /* no information: even */
    ck_assert_uint_eq(b[0], 0);
    ck_assert_uint_eq(b[1], 25);
    ck_assert_uint_eq(b[2], 50);
    ck_assert_uint_eq(b[4], 100);
    uint64_t spike[8] = {0, 0, 0, 1000, 0, 0, 0, 0};
    ORDO_CK_OK(ordo__regions_balance(spike, 8, 10, 8, b)); /* n = S: one index each */
    ORDO_CK_OK(ordo__regions_check(b, 8, 10));             /* every region non-empty ... */
    int r = ordo__regions_find(b, 8, 4); /* ... and the hot index alone in its own */
    ck_assert_uint_eq(b[r], 4);
    ck_assert_uint_eq(b[r + 1], 5);
    ORDO_CK_ERR(ordo__regions_balance(spike, 8, 4, 5, b), ORDO_ERR_INVAL);
    ORDO_CK_ERR(ordo__regions_balance(spike, 0, 100, 2, b), ORDO_ERR_INVAL);
    uint32_t bad[3] = {0, 50, 40};
    ORDO_CK_ERR(ordo__regions_check(bad, 2, 40), ORDO_ERR_PROTO);
    ck_assert(strstr(ordo__error_detail(), "bounds[2] = 40 does not exceed bounds[1] = 50"));
    uint32_t bad2[3] = {1, 5, 40};
    ORDO_CK_ERR(ordo__regions_check(bad2, 2, 40), ORDO_ERR_PROTO);
    uint32_t bad3[3] = {0, 5, 41};
    ORDO_CK_ERR(ordo__regions_check(bad3, 2, 40), ORDO_ERR_PROTO);
    ck_assert(strstr(ordo__error_detail(), "not n = 40"));
    ck_assert_uint_eq(ordo_regions_bin_start(3, 10, 4), 8); /* bins of [0,10) by 4: 0 3 5 8 */
    ck_assert_uint_eq(ordo_regions_bin_of(7, 10, 4), 2);
    ck_assert_uint_eq(ordo_regions_bin_of(8, 10, 4), 3);
}
END_TEST

START_TEST(moves_list_changed_owners)
{
    uint32_t old_b[4] = {0, 30, 60, 90}, new_b[4] = {0, 20, 70, 90};
    ordo__regions_move_t mv[6];
    size_t c = ordo__regions_moves(old_b, new_b, 3, mv, 6);
    ck_assert_uint_eq(c, 2);
    ck_assert(mv[0].from == 0 && mv[0].to == 1 && mv[0].lo == 20 && mv[0].hi == 30);
    ck_assert(mv[1].from == 2 && mv[1].to == 1 && mv[1].lo == 60 && mv[1].hi == 70);
    ck_assert_uint_eq(ordo__regions_moves(old_b, old_b, 3, mv, 6), 0);
    uint32_t shift[4] = {0, 70, 80, 90};
    c = ordo__regions_moves(old_b, shift, 3, mv, 1); /* cap 1: count is still complete */
    ck_assert_uint_eq(c, 3);                        /* 1->0 [30,60), 2->0 [60,70), 2->1 [70,80) */
    ck_assert(mv[0].from == 1 && mv[0].to == 0 && mv[0].lo == 30 && mv[0].hi == 60);
}
END_TEST

START_TEST(maghist_threshold_counts_about_k)
{
    enum { NV = 100000 };
    float *x = malloc(NV * sizeof *x);
    rng_state = 77;
    for (int i = 0; i < NV; i++)
        x[i] = (float)(1e-3 * log(unit()) * (i % 2 ? 1 : -1));
    uint64_t *bins = calloc(ORDO_REGIONS_MAGHIST_BINS, sizeof *bins);
    ordo__regions_maghist_add(bins, x, NV);
    size_t ks[] = {1, 10, 100, 1000, 10000, 50000};
    for (size_t j = 0; j < sizeof ks / sizeof *ks; j++) {
        float t = ordo__regions_maghist_threshold(bins, ks[j]);
        size_t c = 0;
        for (int i = 0; i < NV; i++)
            c += fabsf(x[i]) >= t;
        double err = fabs((double)c - (double)ks[j]);
        ck_assert_msg(err <= 0.05 * (double)ks[j] + 2, "k = %zu: %zu selected", ks[j], c);
    }
    ck_assert(isinf(ordo__regions_maghist_threshold(bins, 0)));
    ck_assert_float_eq(ordo__regions_maghist_threshold(bins, NV), 0.0f);
    ck_assert_float_eq(ordo__regions_maghist_threshold(bins, NV + 5), 0.0f);
    float odd[3] = {NAN, INFINITY, 1.0f}; /* non-finite values are not counted */
    uint64_t *b2 = calloc(ORDO_REGIONS_MAGHIST_BINS, sizeof *b2);
    ordo__regions_maghist_add(b2, odd, 3);
    uint64_t total = 0;
    for (unsigned i = 0; i < ORDO_REGIONS_MAGHIST_BINS; i++)
        total += b2[i];
    ck_assert_uint_eq(total, 1);
    free(b2);
    free(bins);
    free(x);
}
END_TEST

static Suite *regions_suite(void)
{
    Suite *s = suite_create("regions");
    TCase *tc = tcase_create("balance");
    tcase_add_test(tc, balance_keeps_loads_within_1_5x_of_mean);
    tcase_add_test(tc, balance_edges_and_validation);
    tcase_add_test(tc, moves_list_changed_owners);
    suite_add_tcase(s, tc);
    tc = tcase_create("threshold");
    tcase_add_test(tc, maghist_threshold_counts_about_k);
    suite_add_tcase(s, tc);
    return s;
}

ORDO_CK_MAIN(regions_suite)
