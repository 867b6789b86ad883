/* sparsify: exact and threshold top-k selection, and the per-tensor residual state. */
#include "worker/sparsify.h"

#include "common/error.h"
#include "scheduler/regions.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

/* ==== selection primitives ============================================================ */

#define MAG_NONFINITE 0x7f800000u /* magnitude bits at or above this: Inf or NaN */

static uint32_t float_bits(float f)
{
    uint32_t b;
    memcpy(&b, &f, 4);
    return b;
}

static float bits_float(uint32_t b)
{
    float f;
    memcpy(&f, &b, 4);
    return f;
}

static int report_nonfinite(const float *x, size_t n, const char *what)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i]))
            return ordo_error_set(ORDO_EINVAL, "%s entry %zu is %s", what, i,
                                  isnan(x[i]) ? "NaN" : "infinite");
    return 0;
}

int ordo_sparsify_check_finite(const float *x, size_t n, const char *what)
{
    /* Bit 31 of (|x| bits + 2^23) is set exactly for Inf/NaN: a branch-free OR-reduction. */
    uint32_t bad = 0;
    for (size_t i = 0; i < n; i++)
        bad |= (float_bits(x[i]) & 0x7fffffffu) + 0x00800000u;
    if (!(bad & 0x80000000u)) return 0;
    return report_nonfinite(x, n, what);
}

int ordo_sparsify_magnitudes(const float *x, size_t n, uint32_t *m)
{
    uint32_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t b = float_bits(x[i]) & 0x7fffffffu;
        m[i] = b;
        bad |= b + 0x00800000u;
    }
    if (!(bad & 0x80000000u)) return 0;
    return report_nonfinite(x, n, "input");
}

static void swap_u32(uint32_t *a, ptrdiff_t i, ptrdiff_t j)
{
    uint32_t t = a[i];
    a[i] = a[j];
    a[j] = t;
}

static void sift_down(uint32_t *a, size_t root, size_t n)
{
    for (;;) {
        size_t c = 2 * root + 1;
        if (c >= n) return;
        if (c + 1 < n && a[c + 1] > a[c]) c++;
        if (a[root] >= a[c]) return;
        swap_u32(a, (ptrdiff_t)root, (ptrdiff_t)c);
        root = c;
    }
}

static void heapsort_u32(uint32_t *a, size_t n)
{
    for (size_t i = n / 2; i-- > 0;)
        sift_down(a, i, n);
    for (size_t end = n; end-- > 1;) {
        swap_u32(a, 0, (ptrdiff_t)end);
        sift_down(a, 0, end);
    }
}

/* Floyd & Rivest, "Algorithm 489: SELECT" (CACM 1975): partition around a pivot that a
 * recursive selection on a small sample around rank k makes nearly exact, so each round
 * keeps only a sliver of the range. The algorithm assumes the sample is random; gradients
 * are not (layers of different scales sit side by side), so the sample positions are first
 * filled with randomly chosen elements. Each call may run 16 + 2 log2(range) rounds; past
 * that it heapsorts what is left (introselect's idea), so no input makes it quadratic. */
static void fr_select(uint32_t *a, ptrdiff_t left, ptrdiff_t right, ptrdiff_t k, uint64_t *rng)
{
    int budget = 16;
    for (ptrdiff_t m = right - left; m > 1; m >>= 1)
        budget += 2;
    while (right > left) {
        if (--budget < 0) {
            heapsort_u32(a + left, (size_t)(right - left + 1));
            return;
        }
        if (right - left > 600) {
            double n = (double)(right - left + 1), i = (double)(k - left + 1);
            double z = log(n), s = 0.5 * exp(2.0 * z / 3.0);
            double sd = 0.5 * sqrt(z * s * (n - s) / n) * (i - n / 2 < 0 ? -1 : 1);
            ptrdiff_t nl = (ptrdiff_t)((double)k - i * s / n + sd);
            ptrdiff_t nr = (ptrdiff_t)((double)k + (n - i) * s / n + sd);
            nl = nl > left ? nl : left;
            nr = nr < right ? nr : right;
            for (ptrdiff_t p = nl; p <= nr; p++) {
                *rng ^= *rng << 13; /* xorshift64 */
                *rng ^= *rng >> 7;
                *rng ^= *rng << 17;
                swap_u32(a, p, left + (ptrdiff_t)(*rng % (uint64_t)(right - left + 1)));
            }
            fr_select(a, nl, nr, k, rng);
        }
        uint32_t t = a[k];
        ptrdiff_t i = left, j = right;
        swap_u32(a, left, k);
        if (a[right] > t) swap_u32(a, right, left);
        while (i < j) {
            swap_u32(a, i, j);
            i++;
            j--;
            while (a[i] < t)
                i++;
            while (a[j] > t)
                j--;
        }
        if (a[left] == t)
            swap_u32(a, left, j);
        else {
            j++;
            swap_u32(a, j, right);
        }
        if (j <= k) left = j + 1;
        if (k <= j) right = j - 1;
    }
}

void ordo_sparsify_select_u32(uint32_t *a, size_t n, size_t r)
{
    ORDO_ASSERT(r < n);
    uint64_t rng = 0x9E3779B97F4A7C15ull; /* fixed seed: results are reproducible */
    fr_select(a, 0, (ptrdiff_t)n - 1, (ptrdiff_t)r, &rng);
}

static int kth_bits(const float *x, size_t n, size_t k, uint32_t *scratch, uint32_t *out)
{
    uint32_t *m = scratch ? scratch : malloc(n * sizeof *m);
    if (!m) return ordo_error_set(ORDO_ENOMEM, "sparsify: no memory for %zu magnitudes", n);
    int rc = ordo_sparsify_magnitudes(x, n, m);
    if (rc == 0) {
        ordo_sparsify_select_u32(m, n, n - k);
        *out = m[n - k];
    }
    if (!scratch) free(m);
    return rc;
}

int ordo_sparsify_kth_magnitude(const float *x, size_t n, size_t k, uint32_t *scratch, float *thr)
{
    if (k < 1 || k > n)
        return ordo_error_set(ORDO_EINVAL, "sparsify: k = %zu outside [1, %zu]", k, n);
    uint32_t b;
    int rc = kth_bits(x, n, k, scratch, &b);
    if (rc < 0) return rc;
    *thr = bits_float(b);
    return 0;
}

/* Writes exactly k entries: magnitude bits above tb, then equal ones in index order. Two
 * plain passes; used when ties at the threshold are too many for the scan's buffer. */
static size_t take_exact(const float *x, size_t n, size_t k, uint32_t tb, ordo_coo_entry_t *out)
{
    size_t above = 0;
    for (size_t i = 0; i < n; i++)
        above += (float_bits(x[i]) & 0x7fffffffu) > tb;
    size_t equal_left = k - above, w = 0;
    for (size_t i = 0; i < n && w < k; i++) {
        uint32_t b = float_bits(x[i]) & 0x7fffffffu;
        if (b > tb || (b == tb && equal_left > 0)) {
            equal_left -= b == tb;
            out[w].index = (uint32_t)i;
            out[w].value = x[i];
            w++;
        }
    }
    ORDO_ASSERT(w == k);
    return w;
}

/* Selects exactly the top k of x given tb, the k-th largest magnitude's bits, into out (cap
 * >= k entries): one threshold scan, then, only when several entries tie at tb, a trim that
 * keeps the lowest-indexed ties. */
static size_t take_topk(const float *x, size_t n, size_t k, uint32_t tb, ordo_coo_entry_t *out,
                        size_t cap)
{
    size_t c = ordo_sparsify_scan(x, n, bits_float(tb), out, cap);
    if (c == k) return k;
    if (c > cap) return take_exact(x, n, k, tb, out);
    size_t above = 0, w = 0;
    for (size_t j = 0; j < c; j++)
        above += (float_bits(out[j].value) & 0x7fffffffu) > tb;
    size_t equal_left = k - above;
    for (size_t j = 0; j < c; j++) {
        uint32_t b = float_bits(out[j].value) & 0x7fffffffu;
        if (b > tb || equal_left > 0) {
            equal_left -= b == tb;
            out[w++] = out[j];
        }
    }
    ORDO_ASSERT(w == k);
    return w;
}

int ordo_sparsify_topk(const float *x, size_t n, size_t k, uint32_t *scratch, ordo_coo_entry_t *out,
                       float *thr)
{
    if (k > n) return ordo_error_set(ORDO_EINVAL, "sparsify: k = %zu exceeds n = %zu", k, n);
    if (k == 0) {
        int rc = ordo_sparsify_check_finite(x, n, "input");
        if (rc == 0) *thr = INFINITY;
        return rc;
    }
    uint32_t tb;
    int rc = kth_bits(x, n, k, scratch, &tb); /* rejects NaN/Inf while copying magnitudes */
    if (rc < 0) return rc;
    take_topk(x, n, k, tb, out, k);
    *thr = bits_float(tb);
    return 0;
}

/* The scan takes blocks of 32: a mask of the qualifying lanes is built with vector compares
 * (SSE2 movemask where available; a vectorizable count otherwise), blocks with none are
 * skipped, and the hits are written without a data-dependent branch per element. */
enum { SCAN_BLOCK = 32 };

size_t ordo_sparsify_scan(const float *restrict x, size_t n, float thr,
                          ordo_coo_entry_t *restrict out, size_t cap)
{
    size_t w = 0, i = 0;
#if defined(__SSE2__)
    const __m128 t4 = _mm_set1_ps(thr), abs4 = _mm_castsi128_ps(_mm_set1_epi32(0x7fffffff));
    for (; i + SCAN_BLOCK <= n; i += SCAN_BLOCK) {
        uint32_t m = 0;
        for (int j = 0; j < SCAN_BLOCK; j += 4) {
            __m128 v = _mm_and_ps(_mm_loadu_ps(x + i + j), abs4);
            m |= (uint32_t)_mm_movemask_ps(_mm_cmpge_ps(v, t4)) << j;
        }
        while (m) {
            size_t j = i + (size_t)__builtin_ctz(m);
            m &= m - 1;
            if (w < cap) out[w] = (ordo_coo_entry_t){(uint32_t)j, x[j]};
            w++;
        }
    }
#else
    for (; i + SCAN_BLOCK <= n; i += SCAN_BLOCK) {
        unsigned c = 0;
        for (int j = 0; j < SCAN_BLOCK; j++)
            c += fabsf(x[i + j]) >= thr;
        if (c == 0) continue;
        if (w + SCAN_BLOCK <= cap) {
            /* Predicated stores: every entry is written, only qualifying ones advance w. */
            for (int j = 0; j < SCAN_BLOCK; j++) {
                out[w].index = (uint32_t)(i + j);
                out[w].value = x[i + j];
                w += fabsf(x[i + j]) >= thr;
            }
            continue;
        }
        for (int j = 0; j < SCAN_BLOCK; j++) {
            if (fabsf(x[i + j]) >= thr) {
                if (w < cap) out[w] = (ordo_coo_entry_t){(uint32_t)(i + j), x[i + j]};
                w++;
            }
        }
    }
#endif
    for (; i < n; i++) {
        if (fabsf(x[i]) >= thr) {
            if (w < cap) out[w] = (ordo_coo_entry_t){(uint32_t)i, x[i]};
            w++;
        }
    }
    return w;
}

/* ==== per-tensor state ================================================================ */

struct ordo_sparsify {
    size_t n, k;
    int period;
    int reuse_left; /* iterations the cached threshold may still be reused */
    uint64_t iter;
    float thr;
    bool last_exact;
    float *residual;
    uint32_t *scratch; /* n magnitudes, allocated at the first exact evaluation */
    ordo_coo_entry_t *sel;
    size_t nsel, cap;
};

size_t ordo_sparsify_k_for(size_t n, double density)
{
    if (n == 0) return 0;
    double k = nearbyint(density * (double)n);
    if (k < 1) return 1;
    if (k > (double)n) return n;
    return (size_t)k;
}

int ordo_sparsify_new(ordo_sparsify_t **out, size_t n, size_t k, int threshold_period)
{
    if (n < 1 || n > UINT32_MAX)
        return ordo_error_set(ORDO_EINVAL, "sparsify: tensor size %zu outside [1, 2^32)", n);
    if (k < 1 || k > n)
        return ordo_error_set(ORDO_EINVAL, "sparsify: k = %zu outside [1, %zu]", k, n);
    if (threshold_period < 1)
        return ordo_error_set(ORDO_EINVAL, "sparsify: threshold_period %d < 1", threshold_period);
    ordo_sparsify_t *sp = calloc(1, sizeof *sp);
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
    ordo_sparsify_destroy(&sp);
    return ordo_error_set(ORDO_ENOMEM, "sparsify: no memory for a tensor of %zu", n);
}

void ordo_sparsify_destroy(ordo_sparsify_t **p)
{
    if (!p || !*p) return;
    ordo_sparsify_t *sp = *p;
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
        bad |= (float_bits(res[i] + g[i]) & 0x7fffffffu) + 0x00800000u;
    if (!(bad & 0x80000000u)) return 0;
    int rc = ordo_sparsify_check_finite(g, n, "gradient");
    if (rc < 0) return rc;
    for (size_t i = 0; i < n; i++)
        if (!isfinite(res[i] + g[i]))
            return ordo_error_set(ORDO_ERANGE,
                                  "sparsify: entry %zu overflows (residual %g + gradient %g)", i,
                                  (double)res[i], (double)g[i]);
    return 0;
}

static int select_exact(ordo_sparsify_t *sp)
{
    if (!sp->scratch) {
        sp->scratch = malloc(sp->n * sizeof *sp->scratch);
        if (!sp->scratch)
            return ordo_error_set(ORDO_ENOMEM, "sparsify: no memory for %zu magnitudes", sp->n);
    }
    uint32_t tb;
    int rc = kth_bits(sp->residual, sp->n, sp->k, sp->scratch, &tb);
    if (rc < 0) return rc;
    sp->nsel = take_topk(sp->residual, sp->n, sp->k, tb, sp->sel, sp->cap);
    sp->thr = bits_float(tb);
    sp->reuse_left = sp->period - 1;
    sp->last_exact = true;
    return 0;
}

int ordo_sparsify_push(ordo_sparsify_t *sp, const float *grad)
{
    int rc = check_acc(sp->residual, grad, sp->n);
    if (rc < 0) return rc;
    float *restrict acc = sp->residual;
    for (size_t i = 0; i < sp->n; i++)
        acc[i] += grad[i];
    sp->iter++;
    if (sp->k == sp->n) {
        sp->thr = 0.0f;
        sp->nsel = ordo_sparsify_scan(acc, sp->n, 0.0f, sp->sel, sp->cap);
        sp->last_exact = true;
        return 0;
    }
    if (sp->iter == 1 || sp->reuse_left <= 0) return select_exact(sp);
    size_t c = ordo_sparsify_scan(acc, sp->n, sp->thr, sp->sel, sp->cap);
    if (c > sp->cap) return select_exact(sp); /* distribution moved: re-evaluate now */
    sp->nsel = c;
    sp->reuse_left--;
    sp->last_exact = false;
    return 0;
}

const ordo_coo_entry_t *ordo_sparsify_selected(const ordo_sparsify_t *sp, size_t *count)
{
    *count = sp->nsel;
    return sp->sel;
}

/* First selected position whose index is >= i. */
static size_t sel_lower_bound(const ordo_sparsify_t *sp, uint32_t i)
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

size_t ordo_sparsify_region_count(const ordo_sparsify_t *sp, uint32_t lo, uint32_t hi)
{
    if (hi <= lo) return 0;
    return sel_lower_bound(sp, hi) - sel_lower_bound(sp, lo);
}

int ordo_sparsify_pack_region(const ordo_sparsify_t *sp, uint32_t lo, uint32_t hi, uint8_t *buf,
                              size_t cap, size_t *len)
{
    if (hi < lo || hi > sp->n)
        return ordo_error_set(ORDO_EINVAL, "sparsify: region [%u, %u) outside [0, %zu)", lo, hi,
                              sp->n);
    size_t first = sel_lower_bound(sp, lo), count = sel_lower_bound(sp, hi) - first;
    if (ordo_coo_size(count) > cap)
        return ordo_error_set(ORDO_ERANGE, "sparsify: region [%u, %u) needs %zu bytes, have %zu",
                              lo, hi, ordo_coo_size(count), cap);
    ordo_coo_encode(sp->sel + first, count, buf);
    *len = ordo_coo_size(count);
    return 0;
}

int ordo_sparsify_commit(ordo_sparsify_t *sp, const uint32_t *idx, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        if (idx[i] >= sp->n)
            return ordo_error_set(ORDO_EINVAL, "sparsify: commit index %u out of range %zu", idx[i],
                                  sp->n);
        if (i > 0 && idx[i] <= idx[i - 1])
            return ordo_error_set(ORDO_EINVAL, "sparsify: commit indices not increasing at %zu", i);
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

int ordo_sparsify_apply_pull(ordo_sparsify_t *sp, const uint8_t *buf, size_t len, uint32_t lo,
                             uint32_t hi, float *params, size_t *consumed)
{
    if (hi < lo || hi > sp->n)
        return ordo_error_set(ORDO_EINVAL, "sparsify: region [%u, %u) outside [0, %zu)", lo, hi,
                              sp->n);
    size_t count, used = 0;
    int rc = ordo_coo_check(buf, len, lo, hi, &count);
    if (rc < 0) return rc;
    size_t j = sel_lower_bound(sp, lo);
    for (size_t i = 0; i < count; i++) {
        ordo_coo_entry_t e = ordo_coo_get(buf, i);
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

int ordo_sparsify_position_hist(const ordo_sparsify_t *sp, size_t nbins, uint64_t *counts)
{
    if (nbins < 1 || nbins > ORDO_REGIONS_MAX_BINS)
        return ordo_error_set(ORDO_EINVAL, "sparsify: %zu histogram bins", nbins);
    for (size_t i = 0; i < sp->nsel; i++)
        counts[ordo_regions_bin_of(sp->sel[i].index, sp->n, nbins)]++;
    return 0;
}

const float *ordo_sparsify_residual(const ordo_sparsify_t *sp)
{
    return sp->residual;
}

size_t ordo_sparsify_n(const ordo_sparsify_t *sp)
{
    return sp->n;
}

size_t ordo_sparsify_k(const ordo_sparsify_t *sp)
{
    return sp->k;
}

float ordo_sparsify_threshold(const ordo_sparsify_t *sp)
{
    return sp->thr;
}

bool ordo_sparsify_last_exact(const ordo_sparsify_t *sp)
{
    return sp->last_exact;
}

uint64_t ordo_sparsify_iteration(const ordo_sparsify_t *sp)
{
    return sp->iter;
}
