/* regions: balanced region boundaries and the global threshold agreement for sparse pushes. */
#include "core/regions.h"

#include "common/error.h"

#include <math.h>
#include <string.h>

int ordo__regions_even(uint32_t n, int S, uint32_t *bounds)
{
    if (S < 1 || (uint32_t)S > n)
        return ordo__error_set(ORDO_ERR_INVAL, "regions: cannot split %u indices into %d regions", n,
                              S);
    for (int s = 0; s <= S; s++)
        bounds[s] = (uint32_t)((uint64_t)n * (uint64_t)s / (uint64_t)S);
    return 0;
}

int ordo__regions_check(const uint32_t *bounds, int S, uint32_t n)
{
    if (S < 1) return ordo__error_set(ORDO_ERR_PROTO, "regions: %d regions", S);
    if (bounds[0] != 0)
        return ordo__error_set(ORDO_ERR_PROTO, "regions: bounds[0] is %u, not 0", bounds[0]);
    if (bounds[S] != n)
        return ordo__error_set(ORDO_ERR_PROTO, "regions: bounds[%d] is %u, not n = %u", S, bounds[S],
                              n);
    for (int s = 0; s < S; s++)
        if (bounds[s + 1] <= bounds[s])
            return ordo__error_set(ORDO_ERR_PROTO,
                                  "regions: bounds[%d] = %u does not exceed bounds[%d] = %u", s + 1,
                                  bounds[s + 1], s, bounds[s]);
    return 0;
}

int ordo__regions_find(const uint32_t *bounds, int S, uint32_t i)
{
    int lo = 0, hi = S; /* invariant: bounds[lo] <= i < bounds[hi] */
    while (hi - lo > 1) {
        int mid = lo + (hi - lo) / 2;
        if (bounds[mid] <= i)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

int ordo__regions_balance(const uint64_t *hist, size_t nbins, uint32_t n, int S, uint32_t *bounds)
{
    if (nbins < 1 || nbins > ORDO_REGIONS_MAX_BINS)
        return ordo__error_set(ORDO_ERR_INVAL, "regions: %zu histogram bins (want 1..%u)", nbins,
                              ORDO_REGIONS_MAX_BINS);
    int rc = ordo__regions_even(n, S, bounds);
    if (rc < 0) return rc;
    uint64_t total = 0;
    for (size_t b = 0; b < nbins; b++)
        total += hist[b];
    if (total == 0) return 0;

    size_t b = 0;
    uint64_t cum = 0; /* sum of hist[0..b) */
    for (int j = 1; j < S; j++) {
        double target = (double)total * j / S;
        while (b < nbins && (double)(cum + hist[b]) < target)
            cum += hist[b++];
        double pos = n;
        if (b < nbins) {
            double s0 = (double)ordo_regions_bin_start(b, n, nbins);
            double s1 = (double)ordo_regions_bin_start(b + 1, n, nbins);
            double frac = hist[b] ? (target - (double)cum) / (double)hist[b] : 0.0;
            pos = s0 + frac * (s1 - s0);
        }
        /* Every region keeps at least one index, so later boundaries still fit. */
        double lower = (double)bounds[j - 1] + 1, upper = (double)n - (S - j);
        pos = nearbyint(pos);
        if (pos < lower) pos = lower;
        if (pos > upper) pos = upper;
        bounds[j] = (uint32_t)pos;
    }
    return 0;
}

double ordo__regions_load(const uint64_t *hist, size_t nbins, uint32_t n, uint32_t lo, uint32_t hi)
{
    double load = 0;
    if (lo >= hi) return 0;
    for (size_t b = ordo_regions_bin_of(lo, n, nbins); b < nbins; b++) {
        uint64_t s0 = ordo_regions_bin_start(b, n, nbins);
        uint64_t s1 = ordo_regions_bin_start(b + 1, n, nbins);
        if (s0 >= hi) break;
        if (s1 <= s0) continue;
        uint64_t a = s0 > lo ? s0 : lo, z = s1 < hi ? s1 : hi;
        if (z > a) load += (double)hist[b] * (double)(z - a) / (double)(s1 - s0);
    }
    return load;
}

size_t ordo__regions_moves(const uint32_t *old_bounds, const uint32_t *new_bounds, int S,
                          ordo__regions_move_t *out, size_t cap)
{
    size_t count = 0;
    int i = 0, j = 0;
    uint32_t pos = 0, n = old_bounds[S];
    while (pos < n && i < S && j < S) {
        uint32_t end =
            old_bounds[i + 1] < new_bounds[j + 1] ? old_bounds[i + 1] : new_bounds[j + 1];
        if (i != j && end > pos) {
            if (count < cap) out[count] = (ordo__regions_move_t){i, j, pos, end};
            count++;
        }
        pos = end;
        if (old_bounds[i + 1] == end) i++;
        if (new_bounds[j + 1] == end) j++;
    }
    return count;
}

void ordo__regions_maghist_add(uint64_t *bins, const float *x, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        uint32_t bits;
        memcpy(&bits, &x[i], 4);
        bits &= 0x7fffffffu;
        if (bits >= 0x7f800000u) continue; /* NaN or infinity */
        bins[bits >> ORDO_REGIONS_MAGHIST_SHIFT]++;
    }
}

float ordo__regions_maghist_threshold(const uint64_t *bins, uint64_t k)
{
    if (k == 0) return INFINITY;
    uint64_t total = 0;
    for (size_t b = 0; b < ORDO_REGIONS_MAGHIST_BINS; b++)
        total += bins[b];
    if (k >= total) return 0.0f;
    uint64_t cum = 0; /* count in bins above b */
    for (size_t b = ORDO_REGIONS_MAGHIST_BINS; b-- > 0;) {
        if (bins[b] == 0 || cum + bins[b] < k) {
            cum += bins[b];
            continue;
        }
        /* The k-th largest lies in bin b; take the need-th largest of its bins[b] values,
         * assuming them spread evenly over the bin's bit patterns (log-uniform). */
        uint64_t need = k - cum, width = 1ull << ORDO_REGIONS_MAGHIST_SHIFT;
        uint64_t drop = (need * width + bins[b] - 1) / bins[b];
        uint32_t bits = (uint32_t)(((uint64_t)(b + 1) << ORDO_REGIONS_MAGHIST_SHIFT) - drop);
        float t;
        memcpy(&t, &bits, 4);
        return t;
    }
    return 0.0f;
}
