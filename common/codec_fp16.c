/* codec_fp16: IEEE half precision on the wire. A frame is a float32 multiplier m, then n
 * halves h: the values are h * m. The sender scales before the cast (1 / workers, as DDP's
 * fp16 hook divides before it casts, so that the sum of the workers' values keeps fp16's
 * range) and m undoes it. A value that would not fit (|x| > 65504 after rounding, inf, NaN)
 * is never sent as inf: encode refuses the frame (ORDO_ERR_RANGE) and counts them, and the
 * caller sends that message in float32. Conversions use F16C where the CPU has it (chosen at
 * run time) and portable loops that give the same bits elsewhere. */
#include "common/codec.h"

#include "common/error.h"
#include "common/wire.h"
#include "common/vec_clones.h" /* ORDO_VECTOR_CLONES */

#include <math.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#include <immintrin.h>
#define HAVE_F16C_PATH 1
#endif

/* a frame's halves wherever ZeroMQ put them (a frame may start at an odd address) */
typedef uint16_t half_any_t __attribute__((aligned(1), may_alias));

static inline uint32_t bits_of(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static inline float float_of(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* float to half, round to nearest even (F. Giesen's float_to_half_fast3_rtne), its three
 * cases computed alike and one chosen, without branches, so that the compiler vectorises the
 * loops that call it (the path of CPUs without F16C, and of other architectures) */
static inline uint16_t to_half(float f)
{
    uint32_t x = bits_of(f), sign = (x >> 16) & 0x8000u;
    x &= 0x7fffffffu;
    /* 65536 and up, inf, NaN (0x7e00) */
    uint32_t big = 0x7c00u | (uint32_t)(x > 0x7f800000u) << 9;
    /* a subnormal half (or zero): the FPU rounds when the value is added to 0.5 */
    const uint32_t magic_u = ((127u - 15u) + (23u - 10u) + 1u) << 23;
    uint32_t sub = bits_of(float_of(x) + float_of(magic_u)) - magic_u;
    /* a normal half: 65520 and up carry into the exponent, inf (x past 2^16 wraps, unused) */
    uint32_t norm = (x + ((uint32_t)(15 - 127) << 23) + 0xfffu + ((x >> 13) & 1u)) >> 13;
    /* masks, not branches: GCC will not if-convert the nested choice */
    uint32_t is_big = 0u - (uint32_t)(x >= (127u + 16u) << 23);
    uint32_t is_sub = 0u - (uint32_t)(x < 113u << 23);
    uint32_t o = (big & is_big) | (sub & is_sub) | (norm & ~(is_big | is_sub));
    return (uint16_t)(sign | o);
}

/* half to float (Giesen's half_to_float), without branches: a subnormal half is 2^-14 times
 * (1 + m / 1024) less 2^-14, exact */
static inline float from_half(uint16_t h)
{
    uint32_t o = (uint32_t)(h & 0x7fffu) << 13, e = o & 0x0f800000u;
    o += (127u - 15u) << 23;
    o += (uint32_t)(e == 0x0f800000u) * ((128u - 16u) << 23); /* inf, NaN: all ones */
    uint32_t sub = bits_of(float_of(o + (1u << 23)) - 0x1p-14f);
    uint32_t is_sub = 0u - (uint32_t)(e == 0);
    return float_of((sub & is_sub) | (o & ~is_sub) | (uint32_t)(h & 0x8000u) << 16);
}

/* the portable loops (the compiler's vector clones where it has them) */
ORDO_VECTOR_CLONES
static int64_t to_fp16_any(const float *src, int64_t n, float scale, uint16_t *dst)
{
    int64_t bad = 0;
    for (int64_t i = 0; i < n; i++) {
        uint16_t h = to_half(src[i] * scale);
        dst[i] = h;
        bad += (h & 0x7c00u) == 0x7c00u;
    }
    return bad;
}

ORDO_VECTOR_CLONES
static void from_fp16_any(const half_any_t *h, int64_t n, float mult, float *dst)
{
    for (int64_t i = 0; i < n; i++)
        dst[i] = from_half(h[i]) * mult;
}

ORDO_VECTOR_CLONES
static void add_fp16_any(const half_any_t *h, int64_t n, float mult, float *restrict acc)
{
    for (int64_t i = 0; i < n; i++)
        acc[i] += from_half(h[i]) * mult;
}

#ifdef HAVE_F16C_PATH
__attribute__((target("avx,f16c"))) static int64_t to_fp16_f16c(const float *src, int64_t n,
                                                                float scale, uint16_t *dst)
{
    int64_t i = 0, bad = 0;
    __m256 s = _mm256_set1_ps(scale);
    for (; i + 8 <= n; i += 8) {
        __m128i h =
            _mm256_cvtps_ph(_mm256_mul_ps(_mm256_loadu_ps(src + i), s), _MM_FROUND_TO_NEAREST_INT);
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
        _mm256_storeu_ps(
            dst + i,
            _mm256_mul_ps(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(src + i))), m));
    for (; i < n; i++)
        dst[i] = from_half(((const half_any_t *)src)[i]) * mult;
}

/* acc += h * mult, the multiply and the add rounded apart (no FMA: the same bits as decode
 * then add) */
__attribute__((target("avx,f16c"))) static void add_fp16_f16c(const void *src, int64_t n,
                                                              float mult, float *acc)
{
    const half_any_t *h = src;
    int64_t i = 0;
    __m256 m = _mm256_set1_ps(mult);
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_mul_ps(_mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(h + i))), m);
        _mm256_storeu_ps(acc + i, _mm256_add_ps(_mm256_loadu_ps(acc + i), v));
    }
    for (; i < n; i++)
        acc[i] += from_half(h[i]) * mult;
}

/* both read and written with relaxed atomics: pushes convert on several threads at once */
static bool simd_off; /* ordo__codec_set_simd(false): the scalar paths only */

static int have_f16c(void)
{
    static int have = -1;
    int h = __atomic_load_n(&have, __ATOMIC_RELAXED);
    if (h < 0) {
        /* cpuid, not __builtin_cpu_supports: clang (14) knows no "f16c" there. F16C and AVX,
         * and the OS saving the ymm registers (OSXSAVE, XCR0 bits 1 and 2). */
        unsigned a = 0, b = 0, c = 0, d = 0, lo = 0, hi = 0;
        h = __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C) && (c & bit_AVX) && (c & bit_OSXSAVE);
        if (h) {
            __asm__("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
            h = (lo & 6u) == 6u;
        }
        __atomic_store_n(&have, h, __ATOMIC_RELAXED);
    }
    return h && !__atomic_load_n(&simd_off, __ATOMIC_RELAXED);
}
#endif

bool ordo__codec_set_simd(bool on)
{
#ifdef HAVE_F16C_PATH
    return !__atomic_exchange_n(&simd_off, !on, __ATOMIC_RELAXED);
#else
    (void)on;
    return false;
#endif
}

int64_t ordo__codec_to_fp16(const float *src, int64_t n, float scale, uint16_t *dst)
{
#ifdef HAVE_F16C_PATH
    if (have_f16c()) return to_fp16_f16c(src, n, scale, dst);
#endif
    return to_fp16_any(src, n, scale, dst);
}

void ordo__codec_from_fp16(const uint16_t *src, int64_t n, float mult, float *dst)
{
#ifdef HAVE_F16C_PATH
    if (have_f16c()) {
        from_fp16_f16c(src, n, mult, dst);
        return;
    }
#endif
    from_fp16_any((const half_any_t *)src, n, mult, dst);
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
    if (!isfinite(scale) || !isfinite(mult)) /* the receiver would refuse the frame */
        return ordo__error_set(ORDO_ERR_INVAL, "fp16: scale %g has no finite inverse",
                              (double)scale);
    int64_t bad = ordo__codec_to_fp16(src, n, scale, (uint16_t *)((char *)dst + sizeof mult));
    if (io) io->overflow = bad;
    if (bad) /* a detail of its own: a stale one would name another failure */
        return ordo__error_set(ORDO_ERR_RANGE,
                              "fp16: %lld of %lld values do not fit (|x * %g| rounds past 65504, "
                              "or is inf or NaN)",
                              (long long)bad, (long long)n, (double)scale);
    memcpy(dst, &mult, sizeof mult);
    return (int64_t)max_bytes(c, n);
}

/* check_frame reads a frame's multiplier once its length and value are checked */
static int check_frame(const void *frame, size_t len, int64_t n, float *mult)
{
    if (len != sizeof *mult + (size_t)n * 2)
        return ordo__error_set(ORDO_ERR_PROTO, "an fp16 frame of %zu bytes for %lld values", len,
                              (long long)n);
    memcpy(mult, frame, sizeof *mult);
    if (!isfinite(*mult) || *mult == 0)
        return ordo__error_set(ORDO_ERR_PROTO, "an fp16 frame's multiplier is %g", (double)*mult);
    return 0;
}

static int decode(const void *frame, size_t len, int64_t n, float *dst)
{
    float mult;
    int rc = check_frame(frame, len, n, &mult);
    if (rc) return rc;
    /* the halves start 4 bytes in; the loops read them unaligned */
    ordo__codec_from_fp16((const uint16_t *)((const char *)frame + sizeof mult), n, mult, dst);
    return 0;
}

static int decode_add(const void *frame, size_t len, int64_t n, float *acc)
{
    float mult;
    int rc = check_frame(frame, len, n, &mult);
    if (rc) return rc;
    const half_any_t *h = (const half_any_t *)((const char *)frame + sizeof mult);
#ifdef HAVE_F16C_PATH
    if (have_f16c()) {
        add_fp16_f16c(h, n, mult, acc);
        return 0;
    }
#endif
    add_fp16_any(h, n, mult, acc);
    return 0;
}

static int decode_range(const void *frame, size_t len, int64_t n, int64_t off, int64_t count,
                        float *dst)
{
    float mult;
    int rc = check_frame(frame, len, n, &mult);
    if (rc) return rc;
    const char *halves = (const char *)frame + sizeof mult + 2 * off;
    ordo__codec_from_fp16((const uint16_t *)halves, count, mult, dst);
    return 0;
}

const ordo__codec_ops_t ordo__codec_fp16_ops = {
    .name = "fp16",
    .id = ORDO__CODEC_FP16,
    .dtype = ORDO_DTYPE_F16,
    .max_bytes = max_bytes,
    .encode = encode,
    .decode = decode,
    .decode_add = decode_add,
    .decode_range = decode_range,
};
