/* codec_onebit: sign and scale (BytePS's onebit with scaling, signSGD's wire): a frame is a
 * float32 scale s, the mean of |x|, then one bit per value, set for a negative one (bit i of
 * byte i / 8, least significant first); value i decodes to -s or +s. 32 times fewer bytes than
 * float32; error feedback (on by default) carries what the sign dropped into the next push. */
#include "common/codec.h"

#include "common/error.h"
#include "common/wire.h"

#include <math.h>
#include <string.h>

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
    memset(bits, 0, (size_t)(n + 7) / 8);
    for (int64_t i = 0; i < n; i++)
        if (signbit(src[i])) bits[i >> 3] |= (uint8_t)(1u << (i & 7));
    memcpy(dst, &s, sizeof s);
    return (int64_t)max_bytes(c, n);
}

static int decode(const void *frame, size_t len, int64_t n, float *dst)
{
    float s;
    if (len != max_bytes(NULL, n))
        return ordo_error_set(ORDO_ERR_PROTO, "a onebit frame of %zu bytes for %lld values", len,
                              (long long)n);
    memcpy(&s, frame, sizeof s);
    if (!isfinite(s) || s < 0)
        return ordo_error_set(ORDO_ERR_PROTO, "a onebit frame's scale is %g", (double)s);
    const uint8_t *bits = (const uint8_t *)frame + sizeof s;
    for (int64_t i = 0; i < n; i++) dst[i] = (bits[i >> 3] >> (i & 7)) & 1u ? -s : s;
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
};
