/* codec_sparse: topk (the k values of largest magnitude) and randomk (k values at indices
 * drawn from a seed every worker shares for the step), BytePS's sparse compressors. Both
 * write the same frame: k uint32 indices, strictly increasing, then their k float32 values;
 * the others decode to zero. k is a count or a fraction of the tensor (ordo__codec_k). Error
 * feedback (on by default) keeps what was left out for the next push. */
#include "common/codec.h"

#include "common/error.h"
#include "common/wire.h"
#include "common/select.h" /* ordo__select_u32 */

#include <math.h>
#include <stdlib.h>
#include <string.h>

static size_t max_bytes(const ordo__codec_spec_t *c, int64_t n)
{
    return (size_t)ordo__codec_k(c, n) * 8;
}

/* a float's bits read in place */
typedef uint32_t bits32_t __attribute__((may_alias));

/* the sort key of |x|: its bits, whose unsigned order is the order of the magnitudes; a NaN
 * counts as infinite (the same key: NaNs and infs tie, in index order) */
static inline uint32_t mag_key(uint32_t u)
{
    u &= 0x7fffffffu;
    return u > 0x7f800000u ? 0x7f800000u : u;
}

/* write_entry puts index i and its value as entry j of a frame of k */
static inline void write_entry(uint8_t *out, int64_t k, int64_t j, uint32_t i, const float *src)
{
    memcpy(out + (size_t)j * 4, &i, 4);
    memcpy(out + (size_t)(k + j) * 4, &src[i], 4);
}

/* a sparse frame's indices are uint32 */
static int too_long(int64_t n)
{
    return ordo__error_set(ORDO_ERR_INVAL, "a sparse frame indexes at most 2^32 values, not %lld",
                          (long long)n);
}

static int64_t encode_topk(const ordo__codec_spec_t *c, const float *src, int64_t n, void *dst,
                           ordo__codec_io_t *io)
{
    (void)io;
    int64_t k = ordo__codec_k(c, n);
    if (k == 0) return 0; /* an empty tensor: an empty frame */
    if (n > (int64_t)UINT32_MAX + 1) return too_long(n);
    uint32_t *m = malloc((size_t)n * sizeof *m);
    if (!m) return ordo__error_set(ORDO_ERR_NOMEM, "topk: no memory for %lld keys", (long long)n);
    const bits32_t *u = (const bits32_t *)src;
    for (int64_t i = 0; i < n; i++) m[i] = mag_key(u[i]);
    /* the k-th largest key by Floyd-Rivest selection (core/sparsify, the sparse pushes' own) */
    ordo__select_u32(m, (size_t)n, (size_t)(n - k));
    uint32_t t = m[n - k];
    free(m);
    /* every value above the threshold, then those equal to it in index order until k */
    int64_t above = 0;
    for (int64_t i = 0; i < n; i++) above += mag_key(u[i]) > t;
    int64_t ties = k - above, j = 0;
    uint8_t *out = dst;
    for (int64_t i = 0; i < n && j < k; i++) {
        uint32_t key = mag_key(u[i]);
        if (key > t || (key == t && ties-- > 0)) write_entry(out, k, j++, (uint32_t)i, src);
    }
    return k * 8;
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
    if (k == 0) return 0;
    if (n > (int64_t)UINT32_MAX + 1) return too_long(n);
    uint64_t s = io ? io->seed : 0;
    /* selection sampling (Knuth's algorithm S): k of n, in increasing order, in one pass */
    int64_t m = 0;
    for (int64_t i = 0; i < n && m < k; i++) {
        double u = (double)(next(&s) >> 11) * 0x1p-53;
        if (u * (double)(n - i) < (double)(k - m)) write_entry(dst, k, m++, (uint32_t)i, src);
    }
    return k * 8;
}

/* check_frame returns the frame's k once its length and indices are checked */
static int64_t check_frame(const void *frame, size_t len, int64_t n)
{
    if (len % 8 || len / 8 > (size_t)n)
        return ordo__error_set(ORDO_ERR_PROTO,
                              "a sparse frame of %zu bytes for %lld values (8 bytes a value, at "
                              "most all of them)",
                              len, (long long)n);
    int64_t k = (int64_t)(len / 8), prev = -1;
    const uint8_t *in = frame;
    for (int64_t j = 0; j < k; j++) {
        uint32_t i;
        memcpy(&i, in + (size_t)j * 4, 4);
        if ((int64_t)i <= prev || (int64_t)i >= n)
            return ordo__error_set(ORDO_ERR_PROTO,
                                  "a sparse frame's index %u (entry %lld) is out of range or not "
                                  "increasing (%lld values)",
                                  i, (long long)j, (long long)n);
        prev = i;
    }
    return k;
}

static int decode(const void *frame, size_t len, int64_t n, float *dst)
{
    int64_t k = check_frame(frame, len, n);
    if (k < 0) return (int)k;
    const uint8_t *in = frame;
    memset(dst, 0, (size_t)n * sizeof *dst);
    for (int64_t j = 0; j < k; j++) {
        uint32_t i;
        memcpy(&i, in + (size_t)j * 4, 4);
        memcpy(&dst[i], in + (size_t)(k + j) * 4, 4);
    }
    return 0;
}

/* acc += the frame's values at their indices; the entries it does not carry are left as they
 * are (decode then add would add +0: the same values, but a -0 there would become +0) */
static int decode_add(const void *frame, size_t len, int64_t n, float *acc)
{
    int64_t k = check_frame(frame, len, n);
    if (k < 0) return (int)k;
    const uint8_t *in = frame;
    for (int64_t j = 0; j < k; j++) {
        uint32_t i;
        float v;
        memcpy(&i, in + (size_t)j * 4, 4);
        memcpy(&v, in + (size_t)(k + j) * 4, 4);
        acc[i] += v;
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
    .decode_add = decode_add,
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
    .decode_add = decode_add,
};
