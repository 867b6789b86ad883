/* sparse_agg: a server's aggregation of sparse (top-k) pushes for one index region
 * [lo, hi) of a tensor. Per iteration it sums the W workers' COO pushes, selects the global
 * top entries of the sums (exactly k, or by a threshold that is re-evaluated every
 * threshold_period iterations, by the server alone or agreed through the scheduler, and
 * reused in between), applies SGD to the selected entries only, and encodes the pull answer:
 * the selected ("changed") entries with their new parameter values. Sums of entries that
 * are not selected are dropped: the workers keep those values in their residuals (see
 * worker/sparsify.h), so dropping them loses nothing and keeping them would count them
 * twice.
 *
 * Two accumulators behind one interface: DENSE (a float per index of the region plus a
 * touched bitmap, which enumerates touched indices already in order) and HASH (open
 * addressing keyed by index, sorted by a radix sort when gathered). DENSE is the default;
 * docs/sparse.md §4 says why; docs/results/sparse.md has the measurements.
 *
 * SGD on a selected entry i, with s_i the sum of the pushes and W the number of workers:
 *   g = s_i / W (aggregate = mean) or s_i (aggregate = sum)
 *   d = g + weight_decay * w_i
 *   m_i = momentum * m_i + d ;  w_i -= lr * m_i        (w_i -= lr * d when momentum = 0)
 * Entries not selected keep both w_i and m_i unchanged (no decay, no momentum step): their
 * gradient is still in the workers' residuals and arrives when it grows, and only the
 * selected entries change, so a pull answer has exactly the selected entries. */
#ifndef ORDO_SPARSE_AGG_H
#define ORDO_SPARSE_AGG_H

#include "core/coo.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct ordo__sparse_agg ordo__sparse_agg_t;

typedef enum {
    ORDO_SPARSE_AGG_DENSE = 0, /* default: float per index + touched bitmap */
    ORDO_SPARSE_AGG_HASH = 1,  /* open-addressing hash of touched indices */
} ordo__sparse_agg_kind_t;

/* The optimizer for the selected entries (formula in the file comment). */
typedef struct {
    float lr;
    float momentum;
    float weight_decay;
    bool mean; /* true: divide sums by the number of workers (conf aggregate = mean) */
} ordo__sparse_sgd_t;

/* ordo__sparse_agg_new makes an aggregator for region [lo, hi) (lo < hi) and W >= 1 workers,
 * of the given kind, re-evaluating its threshold every threshold_period >= 1 iterations. */
int ordo__sparse_agg_new(ordo__sparse_agg_t **out, uint32_t lo, uint32_t hi, int workers,
                        ordo__sparse_agg_kind_t kind, int threshold_period);

/* ordo__sparse_agg_destroy frees the aggregator and sets *p to NULL; NULL-safe. */
void ordo__sparse_agg_destroy(ordo__sparse_agg_t **p);

/* ordo__sparse_agg_set_range moves the aggregator to region [lo, hi) after repartitioning;
 * only between iterations (ORDO_ERR_INVAL while pushes of the current one are held). */
int ordo__sparse_agg_set_range(ordo__sparse_agg_t *agg, uint32_t lo, uint32_t hi);

/* ordo__sparse_agg_push adds worker's count entries (borrowed) to this iteration's sums.
 * Entries are validated first (index in [lo, hi), strictly increasing, finite value);
 * a bad push, a second push from the same worker, a worker outside [0, W) or a push after
 * selection is rejected with ORDO_ERR_PROTO and changes nothing. */
int ordo__sparse_agg_push(ordo__sparse_agg_t *agg, int worker, const ordo__coo_entry_t *entries,
                         size_t count);

/* ordo__sparse_agg_push_coo is ordo__sparse_agg_push for a COO payload (see common/coo.h),
 * read in place. */
int ordo__sparse_agg_push_coo(ordo__sparse_agg_t *agg, int worker, const uint8_t *buf, size_t len);

/* ordo__sparse_agg_pushed returns how many workers have pushed in this iteration. */
int ordo__sparse_agg_pushed(const ordo__sparse_agg_t *agg);

/* ordo__sparse_agg_touched returns how many distinct indices this iteration's pushes hold. */
size_t ordo__sparse_agg_touched(const ordo__sparse_agg_t *agg);

/* ordo__sparse_agg_threshold_due tells whether this iteration must re-evaluate the
 * threshold (no threshold yet, or threshold_period iterations since the last evaluation):
 * then call ordo__sparse_agg_select_topk, or obtain one from the scheduler (see
 * ordo__sparse_agg_maghist) and call ordo__sparse_agg_select_threshold. */
bool ordo__sparse_agg_threshold_due(const ordo__sparse_agg_t *agg);

/* ordo__sparse_agg_maghist adds the magnitudes of this iteration's sums to bins
 * (ORDO_REGIONS_MAGHIST_BINS counts, scheduler/regions.h): each server sends these to the
 * scheduler, which sums them and returns ordo__regions_maghist_threshold(sum, k) so that the
 * servers' selections add up to about k. ORDO_ERR_AGAIN until all W workers have pushed. */
int ordo__sparse_agg_maghist(ordo__sparse_agg_t *agg, uint64_t *bins);

/* ordo__sparse_agg_select_topk selects exactly min(k, touched) entries of the largest |sum|
 * (ties by index) and caches the k-th largest magnitude as the threshold to reuse (0 when
 * k covers the whole region, so density 100% keeps selecting everything). ORDO_ERR_AGAIN
 * until all W workers have pushed. */
int ordo__sparse_agg_select_topk(ordo__sparse_agg_t *agg, size_t k);

/* ordo__sparse_agg_select_threshold selects the entries with |sum| >= thr and caches thr
 * (a fresh evaluation, e.g. from the scheduler). ORDO_ERR_INVAL when thr is negative or NaN;
 * ORDO_ERR_AGAIN until all W workers have pushed. */
int ordo__sparse_agg_select_threshold(ordo__sparse_agg_t *agg, float thr);

/* ordo__sparse_agg_select selects with the cached threshold; ORDO_ERR_AGAIN when the
 * threshold is due (ordo__sparse_agg_threshold_due) or not all workers have pushed. */
int ordo__sparse_agg_select(ordo__sparse_agg_t *agg);

/* ordo__sparse_agg_selected returns the selected entries (index order; values are the sums
 * of the pushes) and their count; valid until ordo__sparse_agg_next. */
const ordo__coo_entry_t *ordo__sparse_agg_selected(const ordo__sparse_agg_t *agg, size_t *count);

/* ordo__sparse_agg_apply_sgd updates the selected entries of params and momentum, arrays of
 * the region (element 0 is index lo, hi - lo floats each); momentum may be NULL when
 * opt->momentum is 0. Call once per iteration, after a select. */
int ordo__sparse_agg_apply_sgd(ordo__sparse_agg_t *agg, float *params, float *momentum,
                              const ordo__sparse_sgd_t *opt);

/* ordo__sparse_agg_changed_size returns the byte size of the pull answer. */
size_t ordo__sparse_agg_changed_size(const ordo__sparse_agg_t *agg);

/* ordo__sparse_agg_encode_changed writes the pull answer into buf (cap bytes): a COO payload
 * of (index, params[index - lo]) for every selected entry; params is the region's array. */
int ordo__sparse_agg_encode_changed(const ordo__sparse_agg_t *agg, const float *params, uint8_t *buf,
                                   size_t cap, size_t *len);

/* ordo__sparse_agg_next ends the iteration: discards its sums (also when it was not
 * selected) and counts one more iteration. */
void ordo__sparse_agg_next(ordo__sparse_agg_t *agg);

/* Accessors: iterations completed, the cached threshold (NAN before the first), region. */
uint64_t ordo__sparse_agg_iteration(const ordo__sparse_agg_t *agg);
float ordo__sparse_agg_threshold(const ordo__sparse_agg_t *agg);
uint32_t ordo__sparse_agg_lo(const ordo__sparse_agg_t *agg);
uint32_t ordo__sparse_agg_hi(const ordo__sparse_agg_t *agg);

#endif
