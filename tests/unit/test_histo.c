/* Tests of common/histo: quantiles of a stream within the stated relative error of the
 * sorted array's, the exact mean, min and max, constant memory whatever the count, and the
 * empty and out-of-range cases. */
#include "common/histo.h"
#include "ordo_check.h"

#include <math.h>
#include <stdlib.h>

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double sorted_pct(const double *v, int n, double q)
{
    double idx = q * (n - 1);
    int lo = (int)floor(idx), hi = (int)ceil(idx);
    return v[lo] + (v[hi] - v[lo]) * (idx - lo);
}

START_TEST(quantiles_within_error)
{
    enum { N = 100000 };
    double *v = malloc(sizeof *v * N);
    ordo__histo_t *h = malloc(sizeof *h);
    ordo__histo_init(h);
    unsigned s = 12345;
    double sum = 0;
    for (int i = 0; i < N; i++) {
        s = s * 1103515245u + 12345u;
        /* a long-tailed spread over four decades, like step times under load */
        v[i] = 0.5 * exp(9.0 * (double)(s >> 8) / (double)(1u << 24));
        sum += v[i];
        ordo__histo_add(h, v[i]);
    }
    qsort(v, N, sizeof *v, cmp);
    ck_assert_int_eq(h->n, N);
    ck_assert_double_eq_tol(ordo__histo_mean(h), sum / N, 1e-9 * sum / N);
    static const double qs[] = {0, 0.01, 0.25, 0.5, 0.9, 0.95, 0.99, 1};
    for (size_t i = 0; i < sizeof qs / sizeof *qs; i++) {
        double want = sorted_pct(v, N, qs[i]), got = ordo__histo_quantile(h, qs[i]);
        ck_assert_msg(fabs(got - want) <= ORDO_HISTO_REL_ERR * want, "q %.2f: %.6g, sorted %.6g",
                      qs[i], got, want);
    }
    ck_assert_double_eq(ordo__histo_quantile(h, 0), v[0]);
    ck_assert_double_eq(ordo__histo_quantile(h, 1), v[N - 1]);
    free(v);
    free(h);
}
END_TEST

START_TEST(empty_small_and_bad_values)
{
    ordo__histo_t h;
    ordo__histo_init(&h);
    ck_assert(isnan(ordo__histo_quantile(&h, 0.5)));
    ck_assert(isnan(ordo__histo_mean(&h)));
    ordo__histo_add(&h, NAN);
    ordo__histo_add(&h, -1);
    ck_assert_int_eq(h.n, 0);
    ordo__histo_add(&h, 0);
    ordo__histo_add(&h, 1e12); /* above the top bucket: kept as the exact max */
    ck_assert_int_eq(h.n, 2);
    ck_assert_double_eq(ordo__histo_quantile(&h, 0), 0);
    ck_assert_double_eq(ordo__histo_quantile(&h, 1), 1e12);
    ordo__histo_init(&h);
    ordo__histo_add(&h, 7.25);
    ck_assert_double_eq(ordo__histo_quantile(&h, 0.5), 7.25);
    ck_assert_double_eq(ordo__histo_quantile(&h, 0.95), 7.25);
}
END_TEST

static Suite *histo_suite(void)
{
    Suite *s = suite_create("histo");
    TCase *t = tcase_create("quantiles");
    tcase_add_test(t, quantiles_within_error);
    tcase_add_test(t, empty_small_and_bad_values);
    suite_add_tcase(s, t);
    return s;
}

ORDO_CK_MAIN(histo_suite)
