/* sparsify_internal: what worker/sparsify.c (the per-tensor state) and
 * worker/sparsify_select.c (the selection primitives) share; not part of the contract. */
#ifndef ORDO_SPARSIFY_INTERNAL_H
#define ORDO_SPARSIFY_INTERNAL_H

#include "core/sparsify.h"

#include <string.h>

static inline uint32_t ordo__float_bits(float f)
{
    uint32_t b;
    memcpy(&b, &f, 4);
    return b;
}

static inline float ordo__bits_float(uint32_t b)
{
    float f;
    memcpy(&f, &b, 4);
    return f;
}

/* ordo__sparsify_kth_bits writes the bit pattern of the k-th largest |x| (1 <= k <= n) to
 * *out, using scratch (n uint32, or NULL to allocate); rejects NaN/Inf (ORDO_ERR_INVAL). */
int ordo__sparsify_kth_bits(const float *x, size_t n, size_t k, uint32_t *scratch, uint32_t *out);

/* ordo__sparsify_take_topk writes exactly the top k of x to out (cap >= k entries) given tb,
 * the k-th largest magnitude's bits: the entries above it and the lowest-indexed ties. */
size_t ordo__sparsify_take_topk(const float *x, size_t n, size_t k, uint32_t tb,
                                ordo__coo_entry_t *out, size_t cap);

/* ordo__sparsify_scan_with is ordo__sparsify_scan on a given path (3 AVX-512, 2 AVX2,
 * 1 SSE2, 0 portable), so tests check every path the CPU has; SIZE_MAX if it has not. */
size_t ordo__sparsify_scan_with(const float *x, size_t n, float thr, ordo__coo_entry_t *out,
                                size_t cap, int path);

#endif
