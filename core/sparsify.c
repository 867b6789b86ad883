/* sparsify: the per-tensor state of sparse pushes (residual, cached threshold, packing,
 * pull-side residual rule); the selection primitives are in sparsify_select.c. */
#include "core/sparsify_internal.h"
#include "common/le.h"

#include "common/error.h"
#include "core/regions.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ==== per-tensor state ================================================================ */

struct ordo__sparsify {
    size_t n, k;
    int period;
    int reuse_left; /* iterations the cached threshold may still be reused */
    uint64_t iter;
    float thr;
    bool last_exact;
    float *residual;
    uint32_t *scratch; /* n magnitudes, allocated at the first exact evaluation */
    ordo__coo_entry_t *sel;
    size_t nsel, cap;
};

size_t ordo__sparsify_k_for(size_t n, double density)
{
    if (n == 0) return 0;
    double k = nearbyint(density * (double)n);
    if (k < 1) return 1;
    if (k > (double)n) return n;
    return (size_t)k;
}

int ordo__sparsify_new(ordo__sparsify_t **out, size_t n, size_t k, int threshold_period)
{
    if (n < 1 || n > UINT32_MAX)
        return ordo__error_set(ORDO_ERR_INVAL, "sparsify: tensor size %zu outside [1, 2^32)", n);
    if (k < 1 || k > n)
        return ordo__error_set(ORDO_ERR_INVAL, "sparsify: k = %zu outside [1, %zu]", k, n);
    if (threshold_period < 1)
        return ordo__error_set(ORDO_ERR_INVAL, "sparsify: threshold_period %d < 1", threshold_period);
    ordo__sparsify_t *sp = calloc(1, sizeof *sp);
    if (!sp) goto fail;
    sp->n = n;
    sp->k = k;
    sp->period = threshold_period;
    sp->cap = k >= n / ORDO_SPARSIFY_OVERSHOOT ? n : ORDO_SPARSIFY_OVERSHOOT * k;
    sp->residual = calloc(n, sizeof *sp->residual);
    sp->sel = malloc(sp->cap * sizeof *sp->sel);
    if (!sp->residual || !sp->sel) goto fail;
    *out = sp;
    return 0;
fail:
    ordo__sparsify_destroy(&sp);
    return ordo__error_set(ORDO_ERR_NOMEM, "sparsify: no memory for a tensor of %zu", n);
}

void ordo__sparsify_destroy(ordo__sparsify_t **p)
{
    if (!p || !*p) return;
    ordo__sparsify_t *sp = *p;
    free(sp->residual);
    free(sp->scratch);
    free(sp->sel);
    free(sp);
    *p = NULL;
}

/* Checks that residual + grad is finite everywhere without changing the residual, so a
 * rejected gradient leaves the state as it was. */
static int check_acc(const float *res, const float *g, size_t n)
{
    uint32_t bad = 0;
    for (size_t i = 0; i < n; i++)
        bad |= (ordo__float_bits(res[i] + g[i]) & 0x7fffffffu) + 0x00800000u;
    if (!(bad & 0x80000000u)) return 0;
    int rc = ordo__sparsify_check_finite(g, n, "gradient");
    if (rc < 0) return rc;
    for (size_t i = 0; i < n; i++)
        if (!isfinite(res[i] + g[i]))
            return ordo__error_set(ORDO_ERR_RANGE,
                                  "sparsify: entry %zu overflows (residual %g + gradient %g)", i,
                                  (double)res[i], (double)g[i]);
    return 0;
}

static int select_exact(ordo__sparsify_t *sp)
{
    if (!sp->scratch) {
        sp->scratch = malloc(sp->n * sizeof *sp->scratch);
        if (!sp->scratch)
            return ordo__error_set(ORDO_ERR_NOMEM, "sparsify: no memory for %zu magnitudes", sp->n);
    }
    uint32_t tb;
    int rc = ordo__sparsify_kth_bits(sp->residual, sp->n, sp->k, sp->scratch, &tb);
    if (rc < 0) return rc;
    sp->nsel = ordo__sparsify_take_topk(sp->residual, sp->n, sp->k, tb, sp->sel, sp->cap);
    sp->thr = ordo__bits_float(tb);
    sp->reuse_left = sp->period - 1;
    sp->last_exact = true;
    return 0;
}

int ordo__sparsify_push(ordo__sparsify_t *sp, const float *grad)
{
    int rc = check_acc(sp->residual, grad, sp->n);
    if (rc < 0) return rc;
    float *restrict acc = sp->residual;
    for (size_t i = 0; i < sp->n; i++)
        acc[i] += grad[i];
    sp->iter++;
    if (sp->k == sp->n) {
        sp->thr = 0.0f;
        sp->nsel = ordo__sparsify_scan(acc, sp->n, 0.0f, sp->sel, sp->cap);
        sp->last_exact = true;
        return 0;
    }
    if (sp->iter == 1 || sp->reuse_left <= 0) return select_exact(sp);
    size_t c = ordo__sparsify_scan(acc, sp->n, sp->thr, sp->sel, sp->cap);
    if (c > sp->cap) return select_exact(sp); /* distribution moved: re-evaluate now */
    sp->nsel = c;
    sp->reuse_left--;
    sp->last_exact = false;
    return 0;
}

const ordo__coo_entry_t *ordo__sparsify_selected(const ordo__sparsify_t *sp, size_t *count)
{
    *count = sp->nsel;
    return sp->sel;
}

/* First selected position whose index is >= i. */
static size_t sel_lower_bound(const ordo__sparsify_t *sp, uint32_t i)
{
    size_t lo = 0, hi = sp->nsel;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (sp->sel[mid].index < i)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

size_t ordo__sparsify_region_count(const ordo__sparsify_t *sp, uint32_t lo, uint32_t hi)
{
    if (hi <= lo) return 0;
    return sel_lower_bound(sp, hi) - sel_lower_bound(sp, lo);
}

int ordo__sparsify_pack_region(const ordo__sparsify_t *sp, uint32_t lo, uint32_t hi, uint8_t *buf,
                              size_t cap, size_t *len)
{
    if (hi < lo || hi > sp->n)
        return ordo__error_set(ORDO_ERR_INVAL, "sparsify: region [%u, %u) outside [0, %zu)", lo, hi,
                              sp->n);
    size_t first = sel_lower_bound(sp, lo), count = sel_lower_bound(sp, hi) - first;
    if (ordo_coo_size(count) > cap)
        return ordo__error_set(ORDO_ERR_RANGE, "sparsify: region [%u, %u) needs %zu bytes, have %zu",
                              lo, hi, ordo_coo_size(count), cap);
    ordo__coo_encode(sp->sel + first, count, buf);
    *len = ordo_coo_size(count);
    return 0;
}

int ordo__sparsify_commit(ordo__sparsify_t *sp, const uint32_t *idx, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        if (idx[i] >= sp->n)
            return ordo__error_set(ORDO_ERR_INVAL, "sparsify: commit index %u out of range %zu", idx[i],
                                  sp->n);
        if (i > 0 && idx[i] <= idx[i - 1])
            return ordo__error_set(ORDO_ERR_INVAL, "sparsify: commit indices not increasing at %zu", i);
    }
    if (count == 0) return 0;
    size_t j = sel_lower_bound(sp, idx[0]);
    for (size_t i = 0; i < count && j < sp->nsel;) {
        if (sp->sel[j].index < idx[i])
            j++;
        else if (sp->sel[j].index > idx[i])
            i++;
        else {
            sp->residual[idx[i]] = 0.0f;
            i++;
            j++;
        }
    }
    return 0;
}

int ordo__sparsify_apply_pull(ordo__sparsify_t *sp, const uint8_t *buf, size_t len, uint32_t lo,
                             uint32_t hi, float *params, size_t *consumed)
{
    if (hi < lo || hi > sp->n)
        return ordo__error_set(ORDO_ERR_INVAL, "sparsify: region [%u, %u) outside [0, %zu)", lo, hi,
                              sp->n);
    size_t count, used = 0;
    int rc = ordo__coo_check(buf, len, lo, hi, &count);
    if (rc < 0) return rc;
    size_t j = sel_lower_bound(sp, lo);
    for (size_t i = 0; i < count; i++) {
        ordo__coo_entry_t e = ordo__coo_get(buf, i);
        if (params) params[e.index] = e.value;
        while (j < sp->nsel && sp->sel[j].index < e.index)
            j++;
        if (j < sp->nsel && sp->sel[j].index == e.index) {
            sp->residual[e.index] = 0.0f;
            used++;
        }
    }
    if (consumed) *consumed = used;
    return 0;
}

int ordo__sparsify_position_hist(const ordo__sparsify_t *sp, size_t nbins, uint64_t *counts)
{
    if (nbins < 1 || nbins > ORDO_REGIONS_MAX_BINS)
        return ordo__error_set(ORDO_ERR_INVAL, "sparsify: %zu histogram bins", nbins);
    for (size_t i = 0; i < sp->nsel; i++)
        counts[ordo_regions_bin_of(sp->sel[i].index, sp->n, nbins)]++;
    return 0;
}

const float *ordo__sparsify_residual(const ordo__sparsify_t *sp)
{
    return sp->residual;
}

size_t ordo__sparsify_n(const ordo__sparsify_t *sp)
{
    return sp->n;
}

size_t ordo__sparsify_k(const ordo__sparsify_t *sp)
{
    return sp->k;
}

float ordo__sparsify_threshold(const ordo__sparsify_t *sp)
{
    return sp->thr;
}

bool ordo__sparsify_last_exact(const ordo__sparsify_t *sp)
{
    return sp->last_exact;
}

uint64_t ordo__sparsify_iteration(const ordo__sparsify_t *sp)
{
    return sp->iter;
}

/* ---- state (checkpoints) ---------------------------------------------------------------- */

#define STATE_MAGIC "ORDOSPR1"
#define STATE_HEAD 44 /* magic, n, k, iter, reuse_left, thr, last_exact + 3 pad */

size_t ordo__sparsify_state_size(const ordo__sparsify_t *sp)
{
    return STATE_HEAD + sp->n * 4;
}

void ordo__sparsify_state_get(const ordo__sparsify_t *sp, uint8_t *buf)
{
    memcpy(buf, STATE_MAGIC, 8);
    ordo_put_le(buf + 8, sp->n, 8);
    ordo_put_le(buf + 16, sp->k, 8);
    ordo_put_le(buf + 24, sp->iter, 8);
    ordo_put_le(buf + 32, (uint32_t)sp->reuse_left, 4);
    ordo_put_le(buf + 36, ordo__float_bits(sp->thr), 4);
    buf[40] = sp->last_exact;
    buf[41] = buf[42] = buf[43] = 0;
    for (size_t i = 0; i < sp->n; i++)
        ordo_put_le(buf + STATE_HEAD + 4 * i, ordo__float_bits(sp->residual[i]), 4);
}

int ordo__sparsify_state_set(ordo__sparsify_t *sp, const uint8_t *buf, size_t len)
{
    if (len < STATE_HEAD || memcmp(buf, STATE_MAGIC, 8) != 0)
        return ordo__error_set(ORDO_ERR_FORMAT, "sparsify state: not an %s record", STATE_MAGIC);
    uint64_t n = ordo_get_le(buf + 8, 8), k = ordo_get_le(buf + 16, 8);
    if (n != sp->n || k != sp->k || len != STATE_HEAD + n * 4)
        return ordo__error_set(ORDO_ERR_FORMAT, "sparsify state: %llu entries selecting %llu in %zu "
                              "bytes, this run %zu selecting %zu", (unsigned long long)n,
                              (unsigned long long)k, len, sp->n, sp->k);
    int32_t reuse = (int32_t)(uint32_t)ordo_get_le(buf + 32, 4);
    float thr = ordo__bits_float((uint32_t)ordo_get_le(buf + 36, 4));
    if (reuse < 0 || reuse > sp->period || !isfinite(thr) || thr < 0 || buf[40] > 1)
        return ordo__error_set(ORDO_ERR_FORMAT, "sparsify state: bad threshold state (reuse %d, "
                              "threshold %g)", reuse, (double)thr);
    for (size_t i = 0; i < sp->n; i++) {
        float r = ordo__bits_float((uint32_t)ordo_get_le(buf + STATE_HEAD + 4 * i, 4));
        if (!isfinite(r))
            return ordo__error_set(ORDO_ERR_FORMAT, "sparsify state: residual %zu is not finite", i);
    }
    for (size_t i = 0; i < sp->n; i++)
        sp->residual[i] = ordo__bits_float((uint32_t)ordo_get_le(buf + STATE_HEAD + 4 * i, 4));
    sp->iter = ordo_get_le(buf + 24, 8);
    sp->reuse_left = reuse;
    sp->thr = thr;
    sp->last_exact = buf[40];
    sp->nsel = 0;
    return 0;
}
