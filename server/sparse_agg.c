/* sparse_agg: summing sparse pushes of one region, global selection, SGD, pull answers. */
#include "server/sparse_agg.h"

#include "common/error.h"
#include "core/regions.h"
#include "core/sparsify.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define HASH_EMPTY   UINT32_MAX
#define HASH_MIN_CAP 1024

struct ordo__sparse_agg {
    uint32_t lo, hi;
    size_t m; /* hi - lo */
    int workers, kind, period, reuse_left;
    uint64_t iter;
    float thr; /* cached threshold, NAN before the first evaluation */
    uint8_t *pushed;
    int npushed;
    size_t touched;
    bool gathered, selected, applied;
    /* DENSE: sums by offset and a bitmap of touched offsets */
    float *sum;
    uint64_t *bitmap;
    /* HASH: open addressing with linear probing, load factor <= 1/2 */
    uint32_t *hkey;
    float *hval;
    size_t hcap;
    int hbits;
    /* this iteration's touched indices and sums, index order (structure of arrays) */
    uint32_t *cidx, *tidx, *scratch;
    float *cval, *tval;
    size_t ccap;
    ordo__coo_entry_t *sel;
    size_t nsel;
};

/* ==== accumulators ==================================================================== */

static int dense_alloc(ordo__sparse_agg_t *agg)
{
    free(agg->sum);
    free(agg->bitmap);
    agg->sum = calloc(agg->m, sizeof *agg->sum);
    agg->bitmap = calloc((agg->m + 63) / 64, sizeof *agg->bitmap);
    if (!agg->sum || !agg->bitmap)
        return ordo__error_set(ORDO_ERR_NOMEM, "sparse_agg: no memory for a region of %zu", agg->m);
    return 0;
}

static void dense_add(ordo__sparse_agg_t *agg, uint32_t index, float v)
{
    size_t off = index - agg->lo;
    uint64_t bit = 1ull << (off & 63), *word = &agg->bitmap[off >> 6];
    agg->touched += !(*word & bit);
    *word |= bit;
    agg->sum[off] += v;
}

static size_t hash_slot(uint32_t key, int bits)
{
    return (size_t)(((uint64_t)key * 0x9E3779B97F4A7C15ull) >> (64 - bits));
}

static void hash_put(uint32_t *keys, float *vals, size_t cap, int bits, uint32_t key, float v,
                     size_t *touched)
{
    size_t mask = cap - 1;
    for (size_t h = hash_slot(key, bits);; h = (h + 1) & mask) {
        if (keys[h] == key) {
            vals[h] += v;
            return;
        }
        if (keys[h] == HASH_EMPTY) {
            keys[h] = key;
            vals[h] = 0.0f + v; /* same rounding as the dense 0 + v */
            (*touched)++;
            return;
        }
    }
}

/* Grows the table so that `more` further keys keep the load factor at most 1/2. */
static int hash_reserve(ordo__sparse_agg_t *agg, size_t more)
{
    size_t need = 2 * (agg->touched + more), cap = agg->hcap;
    int bits = agg->hbits;
    if (cap >= need) return 0;
    while (cap < need) {
        cap *= 2;
        bits++;
    }
    uint32_t *keys = malloc(cap * sizeof *keys);
    float *vals = malloc(cap * sizeof *vals);
    if (!keys || !vals) {
        free(keys);
        free(vals);
        return ordo__error_set(ORDO_ERR_NOMEM, "sparse_agg: no memory for %zu hash slots", cap);
    }
    memset(keys, 0xff, cap * sizeof *keys);
    size_t moved = 0;
    for (size_t i = 0; i < agg->hcap; i++)
        if (agg->hkey[i] != HASH_EMPTY)
            hash_put(keys, vals, cap, bits, agg->hkey[i], agg->hval[i], &moved);
    free(agg->hkey);
    free(agg->hval);
    agg->hkey = keys;
    agg->hval = vals;
    agg->hcap = cap;
    agg->hbits = bits;
    return 0;
}

static int hash_alloc(ordo__sparse_agg_t *agg)
{
    free(agg->hkey);
    free(agg->hval);
    agg->hcap = HASH_MIN_CAP;
    agg->hbits = 10;
    agg->hkey = malloc(agg->hcap * sizeof *agg->hkey);
    agg->hval = malloc(agg->hcap * sizeof *agg->hval);
    if (!agg->hkey || !agg->hval)
        return ordo__error_set(ORDO_ERR_NOMEM, "sparse_agg: no memory for the hash table");
    memset(agg->hkey, 0xff, agg->hcap * sizeof *agg->hkey);
    return 0;
}

/* LSD radix sort of (key, value) pairs by key, 11 bits a pass; passes where every key has
 * the same digit are skipped (the high digits of a small region). */
static void radix_sort_pairs(uint32_t *k, float *v, uint32_t *tk, float *tv, size_t n)
{
    uint32_t *sk = k, *dk = tk;
    float *sv = v, *dv = tv;
    if (n < 2) return;
    for (int shift = 0; shift < 32; shift += 11) {
        size_t cnt[2048] = {0};
        for (size_t i = 0; i < n; i++)
            cnt[(sk[i] >> shift) & 2047]++;
        if (cnt[(sk[0] >> shift) & 2047] == n) continue;
        size_t pos = 0;
        for (int d = 0; d < 2048; d++) {
            size_t c = cnt[d];
            cnt[d] = pos;
            pos += c;
        }
        for (size_t i = 0; i < n; i++) {
            size_t p = cnt[(sk[i] >> shift) & 2047]++;
            dk[p] = sk[i];
            dv[p] = sv[i];
        }
        uint32_t *xk = sk;
        sk = dk;
        dk = xk;
        float *xv = sv;
        sv = dv;
        dv = xv;
    }
    if (sk != k) {
        memcpy(k, sk, n * sizeof *k);
        memcpy(v, sv, n * sizeof *v);
    }
}

static int reserve_candidates(ordo__sparse_agg_t *agg, size_t n)
{
    if (n <= agg->ccap) return 0;
    size_t cap = agg->ccap ? agg->ccap : 1024;
    while (cap < n)
        cap *= 2;
    uint32_t *p1 = realloc(agg->cidx, cap * sizeof *p1);
    if (p1) agg->cidx = p1;
    uint32_t *p2 = realloc(agg->tidx, cap * sizeof *p2);
    if (p2) agg->tidx = p2;
    uint32_t *p3 = realloc(agg->scratch, cap * sizeof *p3);
    if (p3) agg->scratch = p3;
    float *p4 = realloc(agg->cval, cap * sizeof *p4);
    if (p4) agg->cval = p4;
    float *p5 = realloc(agg->tval, cap * sizeof *p5);
    if (p5) agg->tval = p5;
    ordo__coo_entry_t *p6 = realloc(agg->sel, cap * sizeof *p6);
    if (p6) agg->sel = p6;
    if (!p1 || !p2 || !p3 || !p4 || !p5 || !p6)
        return ordo__error_set(ORDO_ERR_NOMEM, "sparse_agg: no memory for %zu candidates", cap);
    agg->ccap = cap;
    return 0;
}

/* Moves this iteration's sums into the candidate arrays in index order and clears the
 * accumulator, so the next iteration starts from zero at O(touched + m/64) cost. */
static int gather(ordo__sparse_agg_t *agg)
{
    if (agg->gathered) return 0;
    int rc = reserve_candidates(agg, agg->touched);
    if (rc < 0) return rc;
    size_t t = 0;
    if (agg->kind == ORDO_SPARSE_AGG_DENSE) {
        size_t words = (agg->m + 63) / 64;
        for (size_t w = 0; w < words; w++) {
            uint64_t x = agg->bitmap[w];
            if (!x) continue;
            agg->bitmap[w] = 0;
            while (x) {
                size_t off = w * 64 + (size_t)__builtin_ctzll(x);
                x &= x - 1;
                agg->cidx[t] = agg->lo + (uint32_t)off;
                agg->cval[t] = agg->sum[off];
                agg->sum[off] = 0.0f;
                t++;
            }
        }
    } else {
        for (size_t h = 0; h < agg->hcap && t < agg->touched; h++) {
            if (agg->hkey[h] == HASH_EMPTY) continue;
            agg->cidx[t] = agg->hkey[h];
            agg->cval[t] = agg->hval[h];
            agg->hkey[h] = HASH_EMPTY;
            t++;
        }
        radix_sort_pairs(agg->cidx, agg->cval, agg->tidx, agg->tval, t);
    }
    ORDO_ASSERT(t == agg->touched);
    agg->gathered = true;
    return 0;
}

/* ==== lifecycle ======================================================================= */

int ordo__sparse_agg_new(ordo__sparse_agg_t **out, uint32_t lo, uint32_t hi, int workers,
                        ordo__sparse_agg_kind_t kind, int threshold_period)
{
    if (lo >= hi) return ordo__error_set(ORDO_ERR_INVAL, "sparse_agg: empty region [%u, %u)", lo, hi);
    if (workers < 1) return ordo__error_set(ORDO_ERR_INVAL, "sparse_agg: %d workers", workers);
    if (kind != ORDO_SPARSE_AGG_DENSE && kind != ORDO_SPARSE_AGG_HASH)
        return ordo__error_set(ORDO_ERR_INVAL, "sparse_agg: unknown kind %d", (int)kind);
    if (threshold_period < 1)
        return ordo__error_set(ORDO_ERR_INVAL, "sparse_agg: threshold_period %d < 1", threshold_period);
    int rc = ORDO_ERR_NOMEM;
    ordo__sparse_agg_t *agg = calloc(1, sizeof *agg);
    if (!agg) return ordo__error_set(ORDO_ERR_NOMEM, "sparse_agg: no memory");
    agg->lo = lo;
    agg->hi = hi;
    agg->m = hi - lo;
    agg->workers = workers;
    agg->kind = kind;
    agg->period = threshold_period;
    agg->thr = NAN;
    agg->pushed = calloc((size_t)workers, 1);
    if (!agg->pushed) {
        rc = ordo__error_set(ORDO_ERR_NOMEM, "sparse_agg: no memory");
        goto fail;
    }
    rc = kind == ORDO_SPARSE_AGG_DENSE ? dense_alloc(agg) : hash_alloc(agg);
    if (rc < 0) goto fail;
    *out = agg;
    return 0;
fail:
    ordo__sparse_agg_destroy(&agg);
    return rc;
}

void ordo__sparse_agg_destroy(ordo__sparse_agg_t **p)
{
    if (!p || !*p) return;
    ordo__sparse_agg_t *agg = *p;
    free(agg->pushed);
    free(agg->sum);
    free(agg->bitmap);
    free(agg->hkey);
    free(agg->hval);
    free(agg->cidx);
    free(agg->tidx);
    free(agg->scratch);
    free(agg->cval);
    free(agg->tval);
    free(agg->sel);
    free(agg);
    *p = NULL;
}

int ordo__sparse_agg_set_range(ordo__sparse_agg_t *agg, uint32_t lo, uint32_t hi)
{
    if (lo >= hi) return ordo__error_set(ORDO_ERR_INVAL, "sparse_agg: empty region [%u, %u)", lo, hi);
    if (agg->npushed > 0)
        return ordo__error_set(ORDO_ERR_INVAL, "sparse_agg: cannot move region during iteration %llu",
                              (unsigned long long)agg->iter);
    agg->lo = lo;
    agg->hi = hi;
    agg->m = hi - lo;
    return agg->kind == ORDO_SPARSE_AGG_DENSE ? dense_alloc(agg) : 0;
}

/* ==== pushes ========================================================================== */

static int push_check(ordo__sparse_agg_t *agg, int worker)
{
    if (worker < 0 || worker >= agg->workers)
        return ordo__error_set(ORDO_ERR_PROTO, "sparse_agg: worker %d outside [0, %d)", worker,
                              agg->workers);
    if (agg->pushed[worker])
        return ordo__error_set(ORDO_ERR_PROTO, "sparse_agg: worker %d already pushed iteration %llu",
                              worker, (unsigned long long)agg->iter);
    if (agg->gathered)
        return ordo__error_set(ORDO_ERR_PROTO,
                              "sparse_agg: push from worker %d after iteration %llu was selected",
                              worker, (unsigned long long)agg->iter);
    return 0;
}

static void push_done(ordo__sparse_agg_t *agg, int worker)
{
    agg->pushed[worker] = 1;
    agg->npushed++;
}

int ordo__sparse_agg_push(ordo__sparse_agg_t *agg, int worker, const ordo__coo_entry_t *e,
                         size_t count)
{
    int rc = push_check(agg, worker);
    if (rc < 0) return rc;
    for (size_t i = 0; i < count; i++) {
        if (e[i].index < agg->lo || e[i].index >= agg->hi)
            return ordo__error_set(ORDO_ERR_PROTO,
                                  "sparse_agg: worker %d entry %zu: index %u outside [%u, %u)",
                                  worker, i, e[i].index, agg->lo, agg->hi);
        if (i > 0 && e[i].index <= e[i - 1].index)
            return ordo__error_set(ORDO_ERR_PROTO,
                                  "sparse_agg: worker %d entry %zu: index %u not increasing",
                                  worker, i, e[i].index);
        if (!isfinite(e[i].value))
            return ordo__error_set(ORDO_ERR_PROTO, "sparse_agg: worker %d entry %zu: value not finite",
                                  worker, i);
    }
    if (agg->kind == ORDO_SPARSE_AGG_DENSE) {
        for (size_t i = 0; i < count; i++)
            dense_add(agg, e[i].index, e[i].value);
    } else {
        if ((rc = hash_reserve(agg, count)) < 0) return rc;
        for (size_t i = 0; i < count; i++)
            hash_put(agg->hkey, agg->hval, agg->hcap, agg->hbits, e[i].index, e[i].value,
                     &agg->touched);
    }
    push_done(agg, worker);
    return 0;
}

int ordo__sparse_agg_push_coo(ordo__sparse_agg_t *agg, int worker, const uint8_t *buf, size_t len)
{
    size_t count;
    int rc = push_check(agg, worker);
    if (rc < 0) return rc;
    if ((rc = ordo__coo_check(buf, len, agg->lo, agg->hi, &count)) < 0) return rc;
    if (agg->kind == ORDO_SPARSE_AGG_DENSE) {
        for (size_t i = 0; i < count; i++) {
            ordo__coo_entry_t e = ordo__coo_get(buf, i);
            dense_add(agg, e.index, e.value);
        }
    } else {
        if ((rc = hash_reserve(agg, count)) < 0) return rc;
        for (size_t i = 0; i < count; i++) {
            ordo__coo_entry_t e = ordo__coo_get(buf, i);
            hash_put(agg->hkey, agg->hval, agg->hcap, agg->hbits, e.index, e.value, &agg->touched);
        }
    }
    push_done(agg, worker);
    return 0;
}

int ordo__sparse_agg_pushed(const ordo__sparse_agg_t *agg)
{
    return agg->npushed;
}

size_t ordo__sparse_agg_touched(const ordo__sparse_agg_t *agg)
{
    return agg->touched;
}

/* ==== selection ======================================================================= */

bool ordo__sparse_agg_threshold_due(const ordo__sparse_agg_t *agg)
{
    return isnan(agg->thr) || agg->reuse_left <= 0;
}

static int ready(ordo__sparse_agg_t *agg)
{
    if (agg->npushed < agg->workers)
        return ordo__error_set(ORDO_ERR_AGAIN, "sparse_agg: %d of %d workers pushed iteration %llu",
                              agg->npushed, agg->workers, (unsigned long long)agg->iter);
    if (agg->selected)
        return ordo__error_set(ORDO_ERR_INVAL, "sparse_agg: iteration %llu already selected",
                              (unsigned long long)agg->iter);
    return gather(agg);
}

int ordo__sparse_agg_maghist(ordo__sparse_agg_t *agg, uint64_t *bins)
{
    if (agg->npushed < agg->workers)
        return ordo__error_set(ORDO_ERR_AGAIN, "sparse_agg: %d of %d workers pushed iteration %llu",
                              agg->npushed, agg->workers, (unsigned long long)agg->iter);
    int rc = gather(agg);
    if (rc < 0) return rc;
    ordo__regions_maghist_add(bins, agg->cval, agg->touched);
    return 0;
}

/* Turns selected candidate positions into (index, sum) entries. */
static void finish_select(ordo__sparse_agg_t *agg, size_t nsel, bool fresh)
{
    for (size_t j = 0; j < nsel; j++)
        agg->sel[j].index = agg->cidx[agg->sel[j].index];
    agg->nsel = nsel;
    agg->selected = true;
    if (fresh)
        agg->reuse_left = agg->period - 1;
    else
        agg->reuse_left--;
}

int ordo__sparse_agg_select_topk(ordo__sparse_agg_t *agg, size_t k)
{
    int rc = ready(agg);
    if (rc < 0) return rc;
    size_t t = agg->touched;
    if (k >= t) {
        float minmag = INFINITY;
        for (size_t j = 0; j < t; j++) {
            agg->sel[j] = (ordo__coo_entry_t){(uint32_t)j, agg->cval[j]};
            minmag = fminf(minmag, fabsf(agg->cval[j]));
        }
        agg->thr = k >= agg->m || t == 0 ? 0.0f : minmag;
        finish_select(agg, t, true);
        return 0;
    }
    float thr;
    rc = ordo__sparsify_topk(agg->cval, t, k, agg->scratch, agg->sel, &thr);
    if (rc < 0) return rc;
    agg->thr = thr;
    finish_select(agg, k, true);
    return 0;
}

static int select_by(ordo__sparse_agg_t *agg, float thr, bool fresh)
{
    int rc = ready(agg);
    if (rc < 0) return rc;
    size_t c = ordo__sparsify_scan(agg->cval, agg->touched, thr, agg->sel, agg->touched);
    agg->thr = thr;
    finish_select(agg, c, fresh);
    return 0;
}

int ordo__sparse_agg_select_threshold(ordo__sparse_agg_t *agg, float thr)
{
    if (!(thr >= 0.0f))
        return ordo__error_set(ORDO_ERR_INVAL, "sparse_agg: threshold %g is not >= 0", (double)thr);
    return select_by(agg, thr, true);
}

int ordo__sparse_agg_select(ordo__sparse_agg_t *agg)
{
    if (ordo__sparse_agg_threshold_due(agg))
        return ordo__error_set(ORDO_ERR_AGAIN, "sparse_agg: threshold due at iteration %llu",
                              (unsigned long long)agg->iter);
    return select_by(agg, agg->thr, false);
}

const ordo__coo_entry_t *ordo__sparse_agg_selected(const ordo__sparse_agg_t *agg, size_t *count)
{
    *count = agg->selected ? agg->nsel : 0;
    return agg->sel;
}

/* ==== optimizer and pull answers ====================================================== */

int ordo__sparse_agg_apply_sgd(ordo__sparse_agg_t *agg, float *params, float *momentum,
                              const ordo__sparse_sgd_t *opt)
{
    if (!agg->selected)
        return ordo__error_set(ORDO_ERR_INVAL, "sparse_agg: apply before select in iteration %llu",
                              (unsigned long long)agg->iter);
    if (agg->applied)
        return ordo__error_set(ORDO_ERR_INVAL, "sparse_agg: iteration %llu already applied",
                              (unsigned long long)agg->iter);
    if (opt->momentum != 0.0f && !momentum)
        return ordo__error_set(ORDO_ERR_INVAL, "sparse_agg: momentum %g needs a momentum buffer",
                              (double)opt->momentum);
    float div = opt->mean ? (float)agg->workers : 1.0f;
    for (size_t j = 0; j < agg->nsel; j++) {
        size_t off = agg->sel[j].index - agg->lo;
        float d = agg->sel[j].value / div + opt->weight_decay * params[off];
        if (opt->momentum != 0.0f) {
            momentum[off] = opt->momentum * momentum[off] + d;
            d = momentum[off];
        }
        params[off] -= opt->lr * d;
    }
    agg->applied = true;
    return 0;
}

size_t ordo__sparse_agg_changed_size(const ordo__sparse_agg_t *agg)
{
    return ordo_coo_size(agg->selected ? agg->nsel : 0);
}

int ordo__sparse_agg_encode_changed(const ordo__sparse_agg_t *agg, const float *params, uint8_t *buf,
                                   size_t cap, size_t *len)
{
    size_t need = ordo__sparse_agg_changed_size(agg);
    if (need > cap)
        return ordo__error_set(ORDO_ERR_RANGE, "sparse_agg: pull answer needs %zu bytes, have %zu",
                              need, cap);
    size_t n = need / ORDO_COO_ENTRY_BYTES;
    for (size_t j = 0; j < n; j++) {
        ordo__coo_entry_t e = {agg->sel[j].index, params[agg->sel[j].index - agg->lo]};
        ordo__coo_encode(&e, 1, buf + ordo_coo_size(j));
    }
    *len = need;
    return 0;
}

void ordo__sparse_agg_next(ordo__sparse_agg_t *agg)
{
    if (!agg->gathered && agg->touched > 0 && gather(agg) < 0) {
        /* No memory to gather: clear the accumulator wholesale instead. */
        if (agg->kind == ORDO_SPARSE_AGG_DENSE) {
            memset(agg->sum, 0, agg->m * sizeof *agg->sum);
            memset(agg->bitmap, 0, (agg->m + 63) / 64 * sizeof *agg->bitmap);
        } else {
            memset(agg->hkey, 0xff, agg->hcap * sizeof *agg->hkey);
        }
    }
    memset(agg->pushed, 0, (size_t)agg->workers);
    agg->npushed = 0;
    agg->touched = 0;
    agg->gathered = agg->selected = agg->applied = false;
    agg->nsel = 0;
    agg->iter++;
}

uint64_t ordo__sparse_agg_iteration(const ordo__sparse_agg_t *agg)
{
    return agg->iter;
}

float ordo__sparse_agg_threshold(const ordo__sparse_agg_t *agg)
{
    return agg->thr;
}

uint32_t ordo__sparse_agg_lo(const ordo__sparse_agg_t *agg)
{
    return agg->lo;
}

uint32_t ordo__sparse_agg_hi(const ordo__sparse_agg_t *agg)
{
    return agg->hi;
}
