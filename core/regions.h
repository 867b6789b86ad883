/* regions: the scheduler's part of sparse (top-k) pushes. It splits a tensor's index space
 * [0, n) into S contiguous regions, one per server, balanced by where the workers' top-k
 * entries fall (reported as coarse position histograms every repartition_period
 * iterations), and it agrees one global threshold from the servers' magnitude histograms
 * (every threshold_period iterations) so that the servers' selections add up to about k.
 * Everything here is a pure, deterministic function of its inputs. */
#ifndef ORDO_REGIONS_H
#define ORDO_REGIONS_H

#include <stddef.h>
#include <stdint.h>

/* Region boundaries are an array of S + 1 uint32: bounds[0] = 0, bounds[S] = n, strictly
 * increasing; region s is [bounds[s], bounds[s+1]). */

/* Position histograms: nbins bins over [0, n); index i falls in bin floor(i * nbins / n),
 * so bin b starts at ceil(b * n / nbins). */
#define ORDO_REGIONS_MAX_BINS (1u << 24)

/* Magnitude histograms: a finite |x| falls in bin (float bits of |x|) >> 18, so a bin spans
 * 1/32 of a binary order of magnitude (about 3% relative width). */
#define ORDO_REGIONS_MAGHIST_SHIFT 18
#define ORDO_REGIONS_MAGHIST_BINS  (1u << (31 - ORDO_REGIONS_MAGHIST_SHIFT))

/* ordo_regions_bin_of returns the position-histogram bin of index i (i < n). */
static inline size_t ordo_regions_bin_of(uint64_t i, uint64_t n, size_t nbins)
{
    return (size_t)(i * nbins / n);
}

/* ordo_regions_bin_start returns the first index of bin b (b <= nbins; b = nbins gives n). */
static inline uint64_t ordo_regions_bin_start(size_t b, uint64_t n, size_t nbins)
{
    return ((uint64_t)b * n + nbins - 1) / nbins;
}

/* ordo__regions_even writes S + 1 boundaries splitting [0, n) into S near-equal regions;
 * requires 1 <= S <= n. */
int ordo__regions_even(uint32_t n, int S, uint32_t *bounds);

/* ordo__regions_check validates boundaries received from elsewhere: ORDO_ERR_PROTO with the
 * offending position when they do not start at 0, end at n, or strictly increase. */
int ordo__regions_check(const uint32_t *bounds, int S, uint32_t n);

/* ordo__regions_find returns the region holding index i (binary search; i < bounds[S]). */
int ordo__regions_find(const uint32_t *bounds, int S, uint32_t i);

/* ordo__regions_balance computes S contiguous regions of [0, n) whose expected loads are
 * equal: hist holds nbins counts (top-k entries per position bin, summed over workers);
 * entries are assumed uniform inside a bin, so a boundary may fall inside one. Every
 * region gets at least one index. An all-zero histogram gives the even split. */
int ordo__regions_balance(const uint64_t *hist, size_t nbins, uint32_t n, int S, uint32_t *bounds);

/* ordo__regions_load returns the expected load of [lo, hi) under hist (same interpolation
 * as ordo__regions_balance), for reports and tests. */
double ordo__regions_load(const uint64_t *hist, size_t nbins, uint32_t n, uint32_t lo, uint32_t hi);

/* A range of indices whose owner changes when boundaries change: the server `from` hands
 * [lo, hi) (parameters and optimizer state) to server `to`. */
typedef struct {
    int from, to;
    uint32_t lo, hi;
} ordo__regions_move_t;

/* ordo__regions_moves lists the ranges that change owner between two boundary arrays of the
 * same S and n, in index order; it returns their number (at most 2 * S) and writes up to
 * cap of them to out. */
size_t ordo__regions_moves(const uint32_t *old_bounds, const uint32_t *new_bounds, int S,
                          ordo__regions_move_t *out, size_t cap);

/* ordo__regions_maghist_add adds the magnitudes of n finite values to bins
 * (ORDO_REGIONS_MAGHIST_BINS counts). Non-finite values are not counted. */
void ordo__regions_maghist_add(uint64_t *bins, const float *x, size_t n);

/* ordo__regions_maghist_threshold returns the magnitude threshold t such that about k of the
 * counted values have |x| >= t (interpolating inside the bin where the k-th largest falls):
 * +INFINITY when k = 0, 0 when k is at least the total count. */
float ordo__regions_maghist_threshold(const uint64_t *bins, uint64_t k);

#endif
