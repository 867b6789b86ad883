/* codec_onebit: sign and scale (BytePS's onebit with scaling, signSGD's wire): a frame is a
 * float32 scale s, the mean of |x|, then one bit per value, set for a negative one (bit i of
 * byte i / 8, least significant first); value i decodes to -s or +s. 32 times fewer bytes than
 * float32; error feedback (on by default) carries what the sign dropped into the next push. */
#include "core/codec.h"

#include "common/error.h"
#include "common/wire.h"

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
    if (!isfinite(s)) return ordo_error_set(ORDO_ERR_RANGE, "onebit: a value is not finite");
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
        return ordo_error_set(ORDO_ERR_PROTO, "a onebit frame of %zu bytes for %lld values", len,
                              (long long)n);
    memcpy(s, frame, sizeof *s);
    if (!isfinite(*s) || *s < 0)
        return ordo_error_set(ORDO_ERR_PROTO, "a onebit frame's scale is %g", (double)*s);
    return 0;
}

static int decode(const void *frame, size_t len, int64_t n, float *dst)
{
    float s;
    int rc = check_frame(frame, len, n, &s);
    if (rc) return rc;
    const uint8_t *bits = (const uint8_t *)frame + sizeof s;
    /* value i is s with bit i as its sign (s >= 0): a byte at a time, no branch */
    uint32_t sb;
    memcpy(&sb, &s, sizeof sb);
    bits32_t *u = (bits32_t *)dst;
    for (int64_t b = 0; b < n / 8; b++)
        for (int j = 0; j < 8; j++) u[8 * b + j] = sb | (uint32_t)((bits[b] >> j) & 1u) << 31;
    for (int64_t i = n / 8 * 8; i < n; i++) u[i] = sb | (uint32_t)((bits[i >> 3] >> (i & 7)) & 1u) << 31;
    return 0;
}

static int decode_add(const void *frame, size_t len, int64_t n, float *acc)
{
    float s;
    int rc = check_frame(frame, len, n, &s);
    if (rc) return rc;
    const uint8_t *bits = (const uint8_t *)frame + sizeof s;
    uint32_t sb;
    memcpy(&sb, &s, sizeof sb);
    for (int64_t b = 0; b < n / 8; b++)
        for (int j = 0; j < 8; j++) {
            uint32_t v = sb | (uint32_t)((bits[b] >> j) & 1u) << 31;
            float f;
            memcpy(&f, &v, sizeof f);
            acc[8 * b + j] += f;
        }
    for (int64_t i = n / 8 * 8; i < n; i++) {
        uint32_t v = sb | (uint32_t)((bits[i >> 3] >> (i & 7)) & 1u) << 31;
        float f;
        memcpy(&f, &v, sizeof f);
        acc[i] += f;
    }
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
