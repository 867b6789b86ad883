/* histo: a bounded streaming histogram of positive values with log-spaced buckets. It takes
 * any number of values in constant memory and answers their count, exact mean, min and max,
 * and quantiles within ORDO_HISTO_REL_ERR relative error (values between ORDO_HISTO_MIN and
 * ORDO_HISTO_MAX; smaller ones count as ORDO_HISTO_MIN's bucket, larger as the top one). */
#ifndef ORDO_HISTO_H
#define ORDO_HISTO_H

#include <stdint.h>

#define ORDO_HISTO_MIN     1e-4 /* smallest value told apart (1e-4 ms = 0.1 us) */
#define ORDO_HISTO_MAX     1e8  /* largest value told apart */
#define ORDO_HISTO_GROWTH  1.02 /* each bucket's upper bound over its lower one */
#define ORDO_HISTO_REL_ERR 0.01 /* sqrt(GROWTH) - 1, rounded up: a quantile's relative error */
#define ORDO_HISTO_BUCKETS 1400 /* log(MAX / MIN) / log(GROWTH) = 1396, and one below MIN */

typedef struct ordo__histo {
    int64_t n;
    double sum, min, max;
    int64_t counts[ORDO_HISTO_BUCKETS];
} ordo__histo_t;

/* ordo__histo_init empties h (callers embed the struct: about 11 KB). */
void ordo__histo_init(ordo__histo_t *h);

/* ordo__histo_add counts value v; NaN and negative values are ignored. */
void ordo__histo_add(ordo__histo_t *h, double v);

/* ordo__histo_mean returns the exact mean of the values added, NaN when none. */
double ordo__histo_mean(const ordo__histo_t *h);

/* ordo__histo_quantile returns the q-quantile (0 <= q <= 1) with the same rank rule as a
 * sorted array interpolated at q * (n - 1): the value of the bucket holding that rank (its
 * geometric middle, clamped to the exact min and max), so within ORDO_HISTO_REL_ERR of the
 * value a sort would give. NaN when the histogram is empty. */
double ordo__histo_quantile(const ordo__histo_t *h, double q);

#endif
