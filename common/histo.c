/* histo: log-spaced buckets for quantiles of a stream in constant memory. */
#include "common/histo.h"

#include <math.h>
#include <string.h>

void ordo__histo_init(ordo__histo_t *h)
{
    memset(h, 0, sizeof *h);
    h->min = INFINITY;
    h->max = -INFINITY;
}

/* bucket 0 holds values below ORDO_HISTO_MIN; bucket b >= 1 holds [MIN g^(b-1), MIN g^b) */
static int bucket_of(double v)
{
    if (v < ORDO_HISTO_MIN) return 0;
    int b = 1 + (int)floor(log(v / ORDO_HISTO_MIN) / log(ORDO_HISTO_GROWTH));
    return b >= ORDO_HISTO_BUCKETS ? ORDO_HISTO_BUCKETS - 1 : b;
}

/* the value a bucket stands for: its geometric middle */
static double value_of(int b)
{
    if (b == 0) return ORDO_HISTO_MIN / 2;
    return ORDO_HISTO_MIN * pow(ORDO_HISTO_GROWTH, b - 0.5);
}

void ordo__histo_add(ordo__histo_t *h, double v)
{
    if (!(v >= 0)) return;
    h->counts[bucket_of(v)]++;
    h->n++;
    h->sum += v;
    if (v < h->min) h->min = v;
    if (v > h->max) h->max = v;
}

double ordo__histo_mean(const ordo__histo_t *h)
{
    return h->n ? h->sum / (double)h->n : NAN;
}

/* the value of the element of rank r (0-based) in sorted order, to the bucket's precision */
static double at_rank(const ordo__histo_t *h, int64_t r)
{
    if (r <= 0) return h->min;
    if (r >= h->n - 1) return h->max;
    int64_t seen = 0;
    for (int b = 0; b < ORDO_HISTO_BUCKETS; b++) {
        seen += h->counts[b];
        if (seen > r) {
            double v = value_of(b);
            return v < h->min ? h->min : v > h->max ? h->max : v;
        }
    }
    return h->max;
}

double ordo__histo_quantile(const ordo__histo_t *h, double q)
{
    if (h->n == 0) return NAN;
    double idx = q * (double)(h->n - 1);
    int64_t lo = (int64_t)floor(idx), hi = (int64_t)ceil(idx);
    double a = at_rank(h, lo), b = lo == hi ? a : at_rank(h, hi);
    return a + (b - a) * (idx - (double)lo);
}
