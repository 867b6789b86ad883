/* codec_f32: float32 on the wire, the codec of no compression: the frame is the values. */
#include "common/codec.h"

#include "common/error.h"
#include "common/wire.h"
#include "common/vec_clones.h" /* ORDO_VECTOR_CLONES */

#include <string.h>

static size_t max_bytes(const ordo__codec_spec_t *c, int64_t n)
{
    (void)c;
    return (size_t)n * sizeof(float);
}

static int64_t encode(const ordo__codec_spec_t *c, const float *src, int64_t n, void *dst,
                      ordo__codec_io_t *io)
{
    (void)c, (void)io;
    memcpy(dst, src, (size_t)n * sizeof(float));
    return n * (int64_t)sizeof(float);
}

static int decode(const void *frame, size_t len, int64_t n, float *dst)
{
    if (len != (size_t)n * sizeof(float))
        return ordo__error_set(ORDO_ERR_PROTO, "a float32 frame of %zu bytes for %lld values", len,
                              (long long)n);
    memcpy(dst, frame, len);
    return 0;
}

/* a frame may sit unaligned in ZeroMQ's receive buffer */
typedef float float_any_t __attribute__((aligned(1), may_alias));

ORDO_VECTOR_CLONES
static void add_f32(const void *frame, int64_t n, float *restrict acc)
{
    const float_any_t *v = frame;
    for (int64_t i = 0; i < n; i++) acc[i] += v[i];
}

static int decode_add(const void *frame, size_t len, int64_t n, float *acc)
{
    if (len != (size_t)n * sizeof(float))
        return ordo__error_set(ORDO_ERR_PROTO, "a float32 frame of %zu bytes for %lld values", len,
                              (long long)n);
    add_f32(frame, n, acc);
    return 0;
}

static int decode_range(const void *frame, size_t len, int64_t n, int64_t off, int64_t count,
                        float *dst)
{
    if (len != (size_t)n * sizeof(float))
        return ordo__error_set(ORDO_ERR_PROTO, "a float32 frame of %zu bytes for %lld values", len,
                              (long long)n);
    memcpy(dst, (const float_any_t *)frame + off, (size_t)count * sizeof(float));
    return 0;
}

const ordo__codec_ops_t ordo__codec_f32_ops = {
    .name = "none",
    .id = ORDO__CODEC_NONE,
    .dtype = ORDO_DTYPE_F32,
    .max_bytes = max_bytes,
    .encode = encode,
    .decode = decode,
    .decode_add = decode_add,
    .decode_range = decode_range,
};
