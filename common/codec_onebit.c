/* codec_onebit: sign and scale (BytePS's onebit with scaling, signSGD's wire): a frame is a
 * float32 scale s, the mean of |x|, then one bit per value, set for a negative one (bit i of
 * byte i / 8, least significant first); value i decodes to -s or +s. 32 times fewer bytes than
 * float32; error feedback (on by default) carries what the sign dropped into the next push. */
#include "common/codec.h"

#include "common/error.h"
#include "common/wire.h"
#include "common/vec_clones.h" /* ORDO_VECTOR_CLONES */

#include <math.h>
#include <string.h>

/* a float's bits read and written in place */
typedef uint32_t bits32_t __attribute__((may_alias));

/* the signs of 8 values as one byte, least significant first */
static inline uint8_t signs8(const bits32_t *u)
{
    uint32_t b = 0;
    for (int j = 0; j < 8; j++) b |= (u[j] >> 31) << j;
    return (uint8_t)b;
}

static size_t max_bytes(const ordo__codec_spec_t *c, int64_t n)
{
    (void)c;
    return sizeof(float) + (size_t)(n + 7) / 8;
}

static int64_t encode(const ordo__codec_spec_t *c, const float *src, int64_t n, void *dst,
                      ordo__codec_io_t *io)
{
    (void)io;
    double l1 = 0;
    for (int64_t i = 0; i < n; i++) l1 += fabsf(src[i]);
    float s = n > 0 ? (float)(l1 / (double)n) : 0.0f;
    if (!isfinite(s)) return ordo__error_set(ORDO_ERR_RANGE, "onebit: a value is not finite");
    uint8_t *bits = (uint8_t *)dst + sizeof s;
    const bits32_t *u = (const bits32_t *)src;
    int64_t full = n / 8;
    for (int64_t b = 0; b < full; b++) bits[b] = signs8(u + 8 * b); /* a byte at a time */
    if (n % 8) {
        bits32_t last[8] = {0};
        memcpy(last, u + 8 * full, (size_t)(n % 8) * sizeof *u);
        bits[full] = signs8(last);
    }
    memcpy(dst, &s, sizeof s);
    return (int64_t)max_bytes(c, n);
}

/* check_frame reads a frame's scale once its length and value are checked */
static int check_frame(const void *frame, size_t len, int64_t n, float *s)
{
    if (len != max_bytes(NULL, n))
        return ordo__error_set(ORDO_ERR_PROTO, "a onebit frame of %zu bytes for %lld values", len,
                              (long long)n);
    memcpy(s, frame, sizeof *s);
    if (!isfinite(*s) || *s < 0)
        return ordo__error_set(ORDO_ERR_PROTO, "a onebit frame's scale is %g", (double)*s);
    return 0;
}

/* the signs of values 32 w .. 32 w + 31 as one word (bytes 4 w .. 4 w + 3, little-endian) */
static inline uint32_t sign_word(const uint8_t *bits, int64_t w)
{
    const uint8_t *p = bits + 4 * w;
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* value i is s with bit i as its sign (s >= 0): 32 values a word, no branch, so that the
 * compiler's clones shift the word by each lane's index */
ORDO_VECTOR_CLONES
static void expand(const uint8_t *bits, int64_t n, uint32_t sb, bits32_t *restrict u)
{
    for (int64_t w = 0; w < n / 32; w++) {
        uint32_t word = sign_word(bits, w);
        for (int j = 0; j < 32; j++) u[32 * w + j] = sb | ((word >> j) & 1u) << 31;
    }
    for (int64_t i = n / 32 * 32; i < n; i++) u[i] = sb | (uint32_t)((bits[i >> 3] >> (i & 7)) & 1u) << 31;
}

ORDO_VECTOR_CLONES
static void expand_add(const uint8_t *bits, int64_t n, uint32_t sb, float *restrict acc)
{
    for (int64_t w = 0; w < n / 32; w++) {
        uint32_t word = sign_word(bits, w);
        for (int j = 0; j < 32; j++) {
            uint32_t v = sb | ((word >> j) & 1u) << 31;
            float f;
            memcpy(&f, &v, sizeof f);
            acc[32 * w + j] += f;
        }
    }
    for (int64_t i = n / 32 * 32; i < n; i++) {
        uint32_t v = sb | (uint32_t)((bits[i >> 3] >> (i & 7)) & 1u) << 31;
        float f;
        memcpy(&f, &v, sizeof f);
        acc[i] += f;
    }
}

static int decode(const void *frame, size_t len, int64_t n, float *dst)
{
    float s;
    int rc = check_frame(frame, len, n, &s);
    if (rc) return rc;
    uint32_t sb;
    memcpy(&sb, &s, sizeof sb);
    expand((const uint8_t *)frame + sizeof s, n, sb, (bits32_t *)dst);
    return 0;
}

static int decode_add(const void *frame, size_t len, int64_t n, float *acc)
{
    float s;
    int rc = check_frame(frame, len, n, &s);
    if (rc) return rc;
    uint32_t sb;
    memcpy(&sb, &s, sizeof sb);
    expand_add((const uint8_t *)frame + sizeof s, n, sb, acc);
    return 0;
}

const ordo__codec_ops_t ordo__codec_onebit_ops = {
    .name = "onebit",
    .id = ORDO__CODEC_ONEBIT,
    .dtype = ORDO_DTYPE_ONEBIT,
    .lossy = true,
    .max_bytes = max_bytes,
    .encode = encode,
    .decode = decode,
    .decode_add = decode_add,
};
