/* sparsify_select: the selection primitives of worker/sparsify.h: NaN/Inf checks, magnitude
 * copies, Floyd-Rivest selection, exact top-k with ties by index, and the threshold scan. */
#include "core/sparsify_internal.h"

#include "common/error.h"
#include "common/select.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAG_NONFINITE 0x7f800000u /* magnitude bits at or above this: Inf or NaN */

static int report_nonfinite(const float *x, size_t n, const char *what)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(x[i]))
            return ordo__error_set(ORDO_ERR_INVAL, "%s entry %zu is %s", what, i,
                                  isnan(x[i]) ? "NaN" : "infinite");
    return 0;
}

int ordo__sparsify_check_finite(const float *x, size_t n, const char *what)
{
    /* Bit 31 of (|x| bits + 2^23) is set exactly for Inf/NaN: a branch-free OR-reduction. */
    uint32_t bad = 0;
    for (size_t i = 0; i < n; i++)
        bad |= (ordo__float_bits(x[i]) & 0x7fffffffu) + 0x00800000u;
    if (!(bad & 0x80000000u)) return 0;
    return report_nonfinite(x, n, what);
}

int ordo__sparsify_magnitudes(const float *x, size_t n, uint32_t *m)
{
    uint32_t bad = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t b = ordo__float_bits(x[i]) & 0x7fffffffu;
        m[i] = b;
        bad |= b + 0x00800000u;
    }
    if (!(bad & 0x80000000u)) return 0;
    return report_nonfinite(x, n, "input");
}

void ordo__sparsify_select_u32(uint32_t *a, size_t n, size_t r)
{
    ordo__select_u32(a, n, r); /* common/select.h: the wire codecs' top-k selects with it too */
}

int ordo__sparsify_kth_bits(const float *x, size_t n, size_t k, uint32_t *scratch, uint32_t *out)
{
    uint32_t *m = scratch ? scratch : malloc(n * sizeof *m);
    if (!m) return ordo__error_set(ORDO_ERR_NOMEM, "sparsify: no memory for %zu magnitudes", n);
    int rc = ordo__sparsify_magnitudes(x, n, m);
    if (rc == 0) {
        ordo__sparsify_select_u32(m, n, n - k);
        *out = m[n - k];
    }
    if (!scratch) free(m);
    return rc;
}

int ordo__sparsify_kth_magnitude(const float *x, size_t n, size_t k, uint32_t *scratch, float *thr)
{
    if (k < 1 || k > n)
        return ordo__error_set(ORDO_ERR_INVAL, "sparsify: k = %zu outside [1, %zu]", k, n);
    uint32_t b;
    int rc = ordo__sparsify_kth_bits(x, n, k, scratch, &b);
    if (rc < 0) return rc;
    *thr = ordo__bits_float(b);
    return 0;
}

/* Writes exactly k entries: magnitude bits above tb, then equal ones in index order. Two
 * plain passes; used when ties at the threshold are too many for the scan's buffer. */
static size_t take_exact(const float *x, size_t n, size_t k, uint32_t tb, ordo__coo_entry_t *out)
{
    size_t above = 0;
    for (size_t i = 0; i < n; i++)
        above += (ordo__float_bits(x[i]) & 0x7fffffffu) > tb;
    size_t equal_left = k - above, w = 0;
    for (size_t i = 0; i < n && w < k; i++) {
        uint32_t b = ordo__float_bits(x[i]) & 0x7fffffffu;
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
size_t ordo__sparsify_take_topk(const float *x, size_t n, size_t k, uint32_t tb,
                                ordo__coo_entry_t *out, size_t cap)
{
    size_t c = ordo__sparsify_scan(x, n, ordo__bits_float(tb), out, cap);
    if (c == k) return k;
    if (c > cap) return take_exact(x, n, k, tb, out);
    size_t above = 0, w = 0;
    for (size_t j = 0; j < c; j++)
        above += (ordo__float_bits(out[j].value) & 0x7fffffffu) > tb;
    size_t equal_left = k - above;
    for (size_t j = 0; j < c; j++) {
        uint32_t b = ordo__float_bits(out[j].value) & 0x7fffffffu;
        if (b > tb || equal_left > 0) {
            equal_left -= b == tb;
            out[w++] = out[j];
        }
    }
    ORDO_ASSERT(w == k);
    return w;
}

int ordo__sparsify_topk(const float *x, size_t n, size_t k, uint32_t *scratch, ordo__coo_entry_t *out,
                       float *thr)
{
    if (k > n) return ordo__error_set(ORDO_ERR_INVAL, "sparsify: k = %zu exceeds n = %zu", k, n);
    if (k == 0) {
        int rc = ordo__sparsify_check_finite(x, n, "input");
        if (rc == 0) *thr = INFINITY;
        return rc;
    }
    uint32_t tb;
    int rc = ordo__sparsify_kth_bits(x, n, k, scratch,
                                     &tb); /* rejects NaN/Inf while copying magnitudes */
    if (rc < 0) return rc;
    ordo__sparsify_take_topk(x, n, k, tb, out, k);
    *thr = ordo__bits_float(tb);
    return 0;
}

/* The scan goes by blocks of 64: a 64-bit mask of the qualifying lanes is built with vector
 * compares, blocks without any are skipped after a single test, and the few hits are
 * written by walking the mask's set bits, with no data-dependent branch per element. On
 * x86-64 the widest of AVX-512, AVX2 and SSE2 the CPU has is picked at run time; elsewhere
 * a portable loop the compiler vectorizes counts each block first. */
enum { SCAN_BLOCK = 64 };
/* Prefetching 4 KiB ahead (one line a block) measured 10-25% faster at 25M floats than
 * leaving it to the hardware prefetcher alone. */
enum { SCAN_PREFETCH = 1024 };

/* Writes the entries flagged in mask (bit j = x[i + j]) and returns the new count. */
static inline size_t emit_mask(const float *x, size_t i, uint64_t m, ordo__coo_entry_t *out,
                               size_t cap, size_t w)
{
    while (m) {
        size_t j = i + (size_t)__builtin_ctzll(m);
        m &= m - 1;
        if (w < cap) out[w] = (ordo__coo_entry_t){(uint32_t)j, x[j]};
        w++;
    }
    return w;
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define SCAN_X86 1

/* AVX-512: while 16 free slots remain, the hits among 16 lanes are compressed into
 * registers (indices and values), interleaved into (index, value) pairs and stored as 16
 * entries at once; the count advances by the number of hits and the next store overwrites
 * the unused rest. Near the capacity it goes on with 64-entry masks and checked writes. */
__attribute__((target("avx512f,popcnt"))) static size_t
scan_avx512(const float *x, size_t n, float thr, ordo__coo_entry_t *out, size_t cap, size_t *done)
{
    const __m512 t = _mm512_set1_ps(thr);
    const __m512i abs = _mm512_set1_epi32(0x7fffffff);
    const __m512i iota = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    const __m512i lo = _mm512_setr_epi32(0, 16, 1, 17, 2, 18, 3, 19, 4, 20, 5, 21, 6, 22, 7, 23);
    const __m512i hi =
        _mm512_setr_epi32(8, 24, 9, 25, 10, 26, 11, 27, 12, 28, 13, 29, 14, 30, 15, 31);
    size_t w = 0, i = 0;
    for (; i + 16 <= n && w + 16 <= cap; i += 16) {
        if (i + SCAN_PREFETCH < n) __builtin_prefetch(x + i + SCAN_PREFETCH);
        __m512i raw = _mm512_loadu_si512(x + i);
        __mmask16 k =
            _mm512_cmp_ps_mask(_mm512_castsi512_ps(_mm512_and_si512(raw, abs)), t, _CMP_GE_OQ);
        if (!k) continue;
        __m512i ix = _mm512_maskz_compress_epi32(
            k, _mm512_add_epi32(iota, _mm512_set1_epi32((int)(uint32_t)i)));
        __m512i vv = _mm512_maskz_compress_epi32(k, raw);
        _mm512_storeu_si512(out + w, _mm512_permutex2var_epi32(ix, lo, vv));
        _mm512_storeu_si512(out + w + 8, _mm512_permutex2var_epi32(ix, hi, vv));
        w += (size_t)__builtin_popcount(k);
    }
    for (; i + SCAN_BLOCK <= n; i += SCAN_BLOCK) {
        uint64_t m = 0;
        for (int j = 0; j < SCAN_BLOCK; j += 16) {
            __m512i v = _mm512_and_si512(_mm512_loadu_si512(x + i + j), abs);
            m |= (uint64_t)_mm512_cmp_ps_mask(_mm512_castsi512_ps(v), t, _CMP_GE_OQ) << j;
        }
        if (m) w = emit_mask(x, i, m, out, cap, w);
    }
    *done = i;
    return w;
}

__attribute__((target("avx2"))) static size_t
scan_avx2(const float *x, size_t n, float thr, ordo__coo_entry_t *out, size_t cap, size_t *done)
{
    const __m256 t = _mm256_set1_ps(thr);
    const __m256 abs = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
    size_t w = 0, i = 0;
    for (; i + SCAN_BLOCK <= n; i += SCAN_BLOCK) {
        if (i + SCAN_PREFETCH < n) __builtin_prefetch(x + i + SCAN_PREFETCH);
        uint64_t m = 0;
        for (int j = 0; j < SCAN_BLOCK; j += 8) {
            __m256 v = _mm256_and_ps(_mm256_loadu_ps(x + i + j), abs);
            m |= (uint64_t)(uint32_t)_mm256_movemask_ps(_mm256_cmp_ps(v, t, _CMP_GE_OQ)) << j;
        }
        if (m) w = emit_mask(x, i, m, out, cap, w);
    }
    *done = i;
    return w;
}

static size_t scan_sse2(const float *x, size_t n, float thr, ordo__coo_entry_t *out, size_t cap,
                        size_t *done)
{
    const __m128 t = _mm_set1_ps(thr), abs = _mm_castsi128_ps(_mm_set1_epi32(0x7fffffff));
    size_t w = 0, i = 0;
    for (; i + SCAN_BLOCK <= n; i += SCAN_BLOCK) {
        if (i + SCAN_PREFETCH < n) __builtin_prefetch(x + i + SCAN_PREFETCH);
        uint64_t m = 0;
        for (int j = 0; j < SCAN_BLOCK; j += 4) {
            __m128 v = _mm_and_ps(_mm_loadu_ps(x + i + j), abs);
            m |= (uint64_t)(uint32_t)_mm_movemask_ps(_mm_cmpge_ps(v, t)) << j;
        }
        if (m) w = emit_mask(x, i, m, out, cap, w);
    }
    *done = i;
    return w;
}
#endif

static size_t scan_portable(const float *restrict x, size_t n, float thr,
                            ordo__coo_entry_t *restrict out, size_t cap, size_t *done)
{
    size_t w = 0, i = 0;
    for (; i + SCAN_BLOCK <= n; i += SCAN_BLOCK) {
        unsigned c = 0;
        for (int j = 0; j < SCAN_BLOCK; j++)
            c += fabsf(x[i + j]) >= thr;
        if (c == 0) continue;
        if (i + SCAN_PREFETCH < n) __builtin_prefetch(x + i + SCAN_PREFETCH);
        uint64_t m = 0;
        for (int j = 0; j < SCAN_BLOCK; j++)
            m |= (uint64_t)(fabsf(x[i + j]) >= thr) << j;
        w = emit_mask(x, i, m, out, cap, w);
    }
    *done = i;
    return w;
}

/* The best path this CPU has: 3 AVX-512, 2 AVX2, 1 SSE2, 0 portable. */
static int scan_best(void)
{
#if SCAN_X86
    if (__builtin_cpu_supports("avx512f")) return 3;
    if (__builtin_cpu_supports("avx2")) return 2;
    return 1;
#else
    return 0;
#endif
}

size_t ordo__sparsify_scan_with(const float *x, size_t n, float thr, ordo__coo_entry_t *out,
                                size_t cap, int path)
{
    size_t i, w;
    if (path > scan_best()) return SIZE_MAX;
    switch (path) {
#if SCAN_X86
    case 3:
        w = scan_avx512(x, n, thr, out, cap, &i);
        break;
    case 2:
        w = scan_avx2(x, n, thr, out, cap, &i);
        break;
    case 1:
        w = scan_sse2(x, n, thr, out, cap, &i);
        break;
#endif
    default:
        w = scan_portable(x, n, thr, out, cap, &i);
        break;
    }
    for (; i < n; i++) {
        if (fabsf(x[i]) >= thr) {
            if (w < cap) out[w] = (ordo__coo_entry_t){(uint32_t)i, x[i]};
            w++;
        }
    }
    return w;
}

size_t ordo__sparsify_scan(const float *restrict x, size_t n, float thr,
                          ordo__coo_entry_t *restrict out, size_t cap)
{
    return ordo__sparsify_scan_with(x, n, thr, out, cap, scan_best());
}
