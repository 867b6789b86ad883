/* codec_fp16: IEEE half precision on the wire. A frame is a float32 multiplier m, then n
 * halves h: the values are h * m. The sender scales before the cast (1 / workers, as DDP's
 * fp16 hook divides before it casts, so that the sum of the workers' values keeps fp16's
 * range) and m undoes it. A value that would not fit (|x| > 65504 after rounding, inf, NaN)
 * is never sent as inf: encode refuses the frame (ORDO_ERR_RANGE) and counts them, and the
 * caller sends that message in float32. Conversions use F16C where the CPU has it (chosen at
 * run time) and a scalar path that gives the same bits elsewhere. */
#include "common/codec.h"

#include "common/error.h"
#include "common/wire.h"

#include <math.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define HAVE_F16C_PATH 1
#endif

/* float to half, round to nearest even (F. Giesen's float_to_half_fast3_rtne) */
static uint16_t to_half(float f)
{
    uint32_t x;
    memcpy(&x, &f, sizeof x);
    uint32_t sign = (x >> 16) & 0x8000u;
    x &= 0x7fffffffu;
    uint32_t o;
    if (x >= (127u + 16u) << 23) { /* 65536 and up, inf, NaN */
        o = x > 0x7f800000u ? 0x7e00u : 0x7c00u;
    } else if (x < 113u << 23) { /* a subnormal half (or zero): let the FPU round */
        const uint32_t magic_u = ((127u - 15u) + (23u - 10u) + 1u) << 23;
        float magic, v;
        memcpy(&magic, &magic_u, sizeof magic);
        memcpy(&v, &x, sizeof v);
        v += magic;
        memcpy(&o, &v, sizeof o);
        o -= magic_u;
    } else {
        uint32_t odd = (x >> 13) & 1u;
        x += ((uint32_t)(15 - 127) << 23) + 0xfffu;
        x += odd;
        o = x >> 13; /* 65520 and up carry into the exponent: inf */
    }
    return (uint16_t)(sign | o);
}

static float from_half(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu, x;
    if (e == 0) {
        float v = (float)m * 5.9604644775390625e-8f; /* 2^-24 */
        return sign ? -v : v;
    }
    x = e == 31 ? sign | 0x7f800000u | (m << 13) : sign | ((e + 112u) << 23) | (m << 13);
    float f;
    memcpy(&f, &x, sizeof f);
    return f;
}

#ifdef HAVE_F16C_PATH
__attribute__((target("avx,f16c"))) static int64_t to_fp16_f16c(const float *src, int64_t n,
                                                               float scale, uint16_t *dst)
{
    int64_t i = 0, bad = 0;
    __m256 s = _mm256_set1_ps(scale);
    for (; i + 8 <= n; i += 8) {
        __m128i h = _mm256_cvtps_ph(_mm256_mul_ps(_mm256_loadu_ps(src + i), s),
                                    _MM_FROUND_TO_NEAREST_INT);
        _mm_storeu_si128((__m128i *)(dst + i), h);
        /* all-ones exponent: inf or NaN (an overflow rounds to inf) */
        __m128i e = _mm_and_si128(h, _mm_set1_epi16(0x7c00));
        __m128i is = _mm_cmpeq_epi16(e, _mm_set1_epi16(0x7c00));
        bad += __builtin_popcount((unsigned)_mm_movemask_epi8(is)) / 2;
    }
    for (; i < n; i++) {
        dst[i] = to_half(src[i] * scale);
        bad += (dst[i] & 0x7c00u) == 0x7c00u;
    }
    return bad;
}

__attribute__((target("avx,f16c"))) static void from_fp16_f16c(const uint16_t *src, int64_t n,
                                                              float mult, float *dst)
{
    int64_t i = 0;
    __m256 m = _mm256_set1_ps(mult);
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(dst + i, _mm256_mul_ps(_mm256_cvtph_ps(_mm_loadu_si128(
                                                    (const __m128i *)(src + i))),
                                                m));
    for (; i < n; i++) dst[i] = from_half(src[i]) * mult;
}

static int have_f16c(void)
{
    static int have = -1;
    if (have < 0) {
        __builtin_cpu_init();
        have = __builtin_cpu_supports("avx") && __builtin_cpu_supports("f16c");
    }
    return have;
}
#endif

int64_t ordo__codec_to_fp16(const float *src, int64_t n, float scale, uint16_t *dst)
{
#ifdef HAVE_F16C_PATH
    if (have_f16c()) return to_fp16_f16c(src, n, scale, dst);
#endif
    int64_t bad = 0;
    for (int64_t i = 0; i < n; i++) {
        dst[i] = to_half(src[i] * scale);
        bad += (dst[i] & 0x7c00u) == 0x7c00u;
    }
    return bad;
}

void ordo__codec_from_fp16(const uint16_t *src, int64_t n, float mult, float *dst)
{
#ifdef HAVE_F16C_PATH
    if (have_f16c()) {
        from_fp16_f16c(src, n, mult, dst);
        return;
    }
#endif
    for (int64_t i = 0; i < n; i++) dst[i] = from_half(src[i]) * mult;
}

static size_t max_bytes(const ordo__codec_spec_t *c, int64_t n)
{
    (void)c;
    return sizeof(float) + (size_t)n * 2;
}

static int64_t encode(const ordo__codec_spec_t *c, const float *src, int64_t n, void *dst,
                      ordo__codec_io_t *io)
{
    float scale = c->scale > 0 ? c->scale : 1.0f, mult = 1.0f / scale;
    int64_t bad = ordo__codec_to_fp16(src, n, scale, (uint16_t *)((char *)dst + sizeof mult));
    if (io) io->overflow = bad;
    if (bad) return ORDO_ERR_RANGE;
    memcpy(dst, &mult, sizeof mult);
    return (int64_t)max_bytes(c, n);
}

static int decode(const void *frame, size_t len, int64_t n, float *dst)
{
    float mult;
    if (len != sizeof mult + (size_t)n * 2)
        return ordo_error_set(ORDO_ERR_PROTO, "an fp16 frame of %zu bytes for %lld values", len,
                              (long long)n);
    memcpy(&mult, frame, sizeof mult);
    if (!isfinite(mult) || mult == 0)
        return ordo_error_set(ORDO_ERR_PROTO, "an fp16 frame's multiplier is %g", (double)mult);
    /* the halves start 4 bytes in: aligned for uint16_t whenever the frame is */
    ordo__codec_from_fp16((const uint16_t *)((const char *)frame + sizeof mult), n, mult, dst);
    return 0;
}

const ordo__codec_ops_t ordo__codec_fp16_ops = {
    .name = "fp16",
    .id = ORDO__CODEC_FP16,
    .dtype = ORDO_DTYPE_F16,
    .max_bytes = max_bytes,
    .encode = encode,
    .decode = decode,
};
