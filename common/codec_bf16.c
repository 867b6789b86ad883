/* codec_bf16: bfloat16 on the wire, float32's range with 8 bits of mantissa: a frame is n
 * halves (the float's upper 16 bits, rounded to nearest even). The loops are written so the
 * compiler vectorises them (AVX-512 and AVX2 clones, picked at load time); every path gives
 * the same bits. */
#include "common/codec.h"

#include "common/error.h"
#include "common/wire.h"
#include "common/vec_clones.h" /* ORDO_VECTOR_CLONES */

#include <string.h>

/* a float's bits read in place (may_alias), and a frame's halves wherever ZeroMQ put them
 * (aligned(1): a frame may start at an odd address in its receive buffer) */
typedef uint32_t bits32_t __attribute__((may_alias));
typedef uint16_t half_any_t __attribute__((aligned(1), may_alias));

ORDO_VECTOR_CLONES
void ordo__codec_to_bf16(const float *src, int64_t n, uint16_t *dst)
{
    const bits32_t *u = (const bits32_t *)src;
    for (int64_t i = 0; i < n; i++) {
        uint32_t x = u[i];
        uint32_t rounded = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
        uint32_t quiet = (x >> 16) | 0x40u; /* a NaN stays a NaN (rounding could make it inf) */
        dst[i] = (uint16_t)((x & 0x7fffffffu) > 0x7f800000u ? quiet : rounded);
    }
}

ORDO_VECTOR_CLONES
void ordo__codec_from_bf16(const uint16_t *src, int64_t n, float *dst)
{
    const half_any_t *h = (const half_any_t *)src;
    bits32_t *u = (bits32_t *)dst;
    for (int64_t i = 0; i < n; i++) u[i] = (uint32_t)h[i] << 16;
}

/* acc += the halves as floats: one pass that reads 2 bytes a value, where decode then add
 * would write 4 and read them back */
ORDO_VECTOR_CLONES
static void add_bf16(const void *frame, int64_t n, float *restrict acc)
{
    const half_any_t *h = frame;
    for (int64_t i = 0; i < n; i++) {
        uint32_t u = (uint32_t)h[i] << 16;
        float f;
        memcpy(&f, &u, sizeof f);
        acc[i] += f;
    }
}

static size_t max_bytes(const ordo__codec_spec_t *c, int64_t n)
{
    (void)c;
    return (size_t)n * 2;
}

static int64_t encode(const ordo__codec_spec_t *c, const float *src, int64_t n, void *dst,
                      ordo__codec_io_t *io)
{
    (void)c, (void)io;
    ordo__codec_to_bf16(src, n, dst);
    return n * 2;
}

static int decode(const void *frame, size_t len, int64_t n, float *dst)
{
    if (len != (size_t)n * 2)
        return ordo__error_set(ORDO_ERR_PROTO, "a bf16 frame of %zu bytes for %lld values", len,
                              (long long)n);
    ordo__codec_from_bf16(frame, n, dst);
    return 0;
}

static int decode_add(const void *frame, size_t len, int64_t n, float *acc)
{
    if (len != (size_t)n * 2)
        return ordo__error_set(ORDO_ERR_PROTO, "a bf16 frame of %zu bytes for %lld values", len,
                              (long long)n);
    add_bf16(frame, n, acc);
    return 0;
}

static int decode_range(const void *frame, size_t len, int64_t n, int64_t off, int64_t count,
                        float *dst)
{
    if (len != (size_t)n * 2)
        return ordo__error_set(ORDO_ERR_PROTO, "a bf16 frame of %zu bytes for %lld values", len,
                              (long long)n);
    ordo__codec_from_bf16((const uint16_t *)((const char *)frame + 2 * off), count, dst);
    return 0;
}

const ordo__codec_ops_t ordo__codec_bf16_ops = {
    .name = "bf16",
    .id = ORDO__CODEC_BF16,
    .dtype = ORDO_DTYPE_BF16,
    .max_bytes = max_bytes,
    .encode = encode,
    .decode = decode,
    .decode_add = decode_add,
    .decode_range = decode_range,
};
