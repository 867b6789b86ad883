/* codec_sparse: topk (the k values of largest magnitude) and randomk (k values at indices
 * drawn from a seed every worker shares for the step), BytePS's sparse compressors. Both
 * write the same frame: k uint32 indices, strictly increasing, then their k float32 values;
 * the others decode to zero. k is a count or a fraction of the tensor (ordo__codec_k). Error
 * feedback (on by default) keeps what was left out for the next push. */
#include "common/codec.h"

#include "common/error.h"
#include "common/wire.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static size_t max_bytes(const ordo__codec_spec_t *c, int64_t n)
{
    return (size_t)ordo__codec_k(c, n) * 8;
}

/* the k-th largest of a[0..n) (1 <= k <= n), reordering a: quickselect, median of three */
static float kth_largest(float *a, int64_t n, int64_t k)
{
    int64_t lo = 0, hi = n - 1, want = k - 1;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        float x = a[lo], y = a[mid], z = a[hi];
        float pivot = x < y ? (y < z ? y : x < z ? z : x) : (x < z ? x : y < z ? z : y);
        int64_t i = lo, j = hi;
        while (i <= j) {
            while (a[i] > pivot) i++;
            while (a[j] < pivot) j--;
            if (i <= j) {
                float t = a[i];
                a[i++] = a[j];
                a[j--] = t;
            }
        }
        if (want <= j)
            hi = j;
        else if (want >= i)
            lo = i;
        else
            return a[want];
    }
    return a[want];
}

static int64_t write_frame(const float *src, const uint32_t *idx, int64_t k, void *dst)
{
    uint8_t *out = dst;
    memcpy(out, idx, (size_t)k * 4);
    for (int64_t j = 0; j < k; j++) memcpy(out + (size_t)(k + j) * 4, &src[idx[j]], 4);
    return k * 8;
}

static int64_t encode_topk(const ordo__codec_spec_t *c, const float *src, int64_t n, void *dst,
                           ordo__codec_io_t *io)
{
    (void)io;
    int64_t k = ordo__codec_k(c, n);
    float *mag = malloc((size_t)n * sizeof *mag);
    uint32_t *idx = malloc((size_t)k * sizeof *idx);
    if (!mag || !idx) {
        free(mag), free(idx);
        return ORDO_ERR_NOMEM;
    }
    for (int64_t i = 0; i < n; i++) mag[i] = isnan(src[i]) ? INFINITY : fabsf(src[i]);
    float t = kth_largest(mag, n, k);
    /* every value above the threshold, then those equal to it in index order until k */
    int64_t above = 0;
    for (int64_t i = 0; i < n; i++) above += (isnan(src[i]) ? INFINITY : fabsf(src[i])) > t;
    int64_t ties = k - above, m = 0;
    for (int64_t i = 0; i < n && m < k; i++) {
        float a = isnan(src[i]) ? INFINITY : fabsf(src[i]);
        if (a > t || (a == t && ties-- > 0)) idx[m++] = (uint32_t)i;
    }
    int64_t len = write_frame(src, idx, k, dst);
    free(mag);
    free(idx);
    return len;
}

/* splitmix64: the randomk selection's generator (the same indices on every CPU) */
static uint64_t next(uint64_t *s)
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static int64_t encode_randomk(const ordo__codec_spec_t *c, const float *src, int64_t n,
                              void *dst, ordo__codec_io_t *io)
{
    int64_t k = ordo__codec_k(c, n);
    uint32_t *idx = malloc((size_t)k * sizeof *idx);
    if (!idx) return ORDO_ERR_NOMEM;
    uint64_t s = io ? io->seed : 0;
    /* selection sampling (Knuth's algorithm S): k of n, in increasing order, in one pass */
    int64_t m = 0;
    for (int64_t i = 0; i < n && m < k; i++) {
        double u = (double)(next(&s) >> 11) * 0x1p-53;
        if (u * (double)(n - i) < (double)(k - m)) idx[m++] = (uint32_t)i;
    }
    int64_t len = write_frame(src, idx, k, dst);
    free(idx);
    return len;
}

static int decode(const void *frame, size_t len, int64_t n, float *dst)
{
    if (len % 8 || len / 8 > (size_t)n)
        return ordo_error_set(ORDO_ERR_PROTO,
                              "a sparse frame of %zu bytes for %lld values (8 bytes a value, at "
                              "most all of them)",
                              len, (long long)n);
    int64_t k = (int64_t)(len / 8);
    const uint8_t *in = frame;
    memset(dst, 0, (size_t)n * sizeof *dst);
    int64_t prev = -1;
    for (int64_t j = 0; j < k; j++) {
        uint32_t i;
        memcpy(&i, in + (size_t)j * 4, 4);
        if ((int64_t)i <= prev || (int64_t)i >= n)
            return ordo_error_set(ORDO_ERR_PROTO,
                                  "a sparse frame's index %u (entry %lld) is out of range or not "
                                  "increasing (%lld values)",
                                  i, (long long)j, (long long)n);
        memcpy(&dst[i], in + (size_t)(k + j) * 4, 4);
        prev = i;
    }
    return 0;
}

const ordo__codec_ops_t ordo__codec_topk_ops = {
    .name = "topk",
    .id = ORDO__CODEC_TOPK,
    .dtype = ORDO_DTYPE_KV,
    .lossy = true,
    .needs_k = true,
    .max_bytes = max_bytes,
    .encode = encode_topk,
    .decode = decode,
};

const ordo__codec_ops_t ordo__codec_randomk_ops = {
    .name = "randomk",
    .id = ORDO__CODEC_RANDOMK,
    .dtype = ORDO_DTYPE_KV,
    .lossy = true,
    .needs_k = true,
    .max_bytes = max_bytes,
    .encode = encode_randomk,
    .decode = decode,
};
