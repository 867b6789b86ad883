/* Tests of common/codec: the wire codecs' values against independent references (bf16 and fp16
 * rounding on chosen bit patterns, over random ones and exhaustively, on the vector and the
 * scalar paths), onebit, topk and randomk, the error-feedback decorator over several steps,
 * spec parsing and formatting, and the refusal of malformed frames with the reason. */
#include "common/wire.h"
#include "common/codec.h"
#include "core/vec.h"
#include "ordo_check.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

/* ==== helpers ========================================================================= */

static uint64_t rng_next(uint64_t *s) /* splitmix64 */
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static float f_of(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static uint32_t u_of(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* a random float bit pattern of every class: normals, subnormals, zeros, inf, NaN, and values
 * a half-ulp of bf16 from the next (ties and their neighbours) */
static uint32_t any_bits(uint64_t *s)
{
    uint64_t r = rng_next(s);
    uint32_t u = (uint32_t)r;
    switch ((r >> 32) % 8) {
    case 0:
        return u & 0x807fffffu; /* subnormal or zero */
    case 1:
        return u | 0x7f800000u; /* inf or NaN */
    case 2:
        return (u & 0xffff0000u) | 0x8000u; /* a tie */
    case 3:
        return (u & 0xffff0000u) | (0x7fffu + (r >> 40) % 3); /* beside a tie */
    case 4:
        return (u & 0x80000000u) | (0x7f7f0000u + (u & 0xffffu)); /* near the largest */
    default:
        return u;
    }
}

/* bf16 by the FPU: the two neighbours in double, the nearer one, ties to the even one */
static uint16_t bf16_ref(uint32_t x)
{
    uint32_t e = (x >> 23) & 0xffu, up = x >> 16;
    if ((x & 0x7fffffffu) == 0x7f800000u || (x & 0xffffu) == 0) return (uint16_t)up;
    double ax = fabs((double)f_of(x)), lo = fabs((double)f_of(up << 16));
    double ulp = ldexp(1.0, (e ? (int)e : 1) - 127 - 7), hi = lo + ulp;
    bool round_up = ax - lo > hi - ax || (ax - lo == hi - ax && (up & 1u));
    return (uint16_t)(round_up ? up + 1 : up);
}

static bool bf16_is_nan(uint16_t h)
{
    return (h & 0x7f80u) == 0x7f80u && (h & 0x7fu);
}

/* the value of half h by its definition */
static double half_value(uint16_t h)
{
    int e = (h >> 10) & 0x1f, m = h & 0x3ff;
    double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(1024 + m, e - 25);
    return h & 0x8000 ? -v : v;
}

/* the nearest half to finite v with |v| < 65520 (ties to even), by bisection over the
 * positive halves 0x0000..0x7bff, whose values increase with their bits */
static uint16_t half_ref(float v)
{
    double a = fabs((double)v);
    unsigned lo = 0, hi = 0x7bff;
    while (hi - lo > 1) {
        unsigned mid = (lo + hi) / 2;
        if (half_value((uint16_t)mid) <= a)
            lo = mid;
        else
            hi = mid;
    }
    double dl = a - half_value((uint16_t)lo), dh = half_value((uint16_t)hi) - a;
    unsigned h = dl < dh ? lo : dh < dl ? hi : (lo & 1u) ? hi : lo;
    if (a >= half_value(0x7bff)) h = 0x7bff; /* (65504, 65520): down to the largest */
    return (uint16_t)(h | (signbit(v) ? 0x8000u : 0));
}

static bool half_fits(float v)
{
    return isfinite(v) && fabsf(v) < 65520.0f;
}

/* a float for fp16: every exponent from below half's subnormals to beyond its range */
static float half_range_float(uint64_t *s)
{
    uint64_t r = rng_next(s);
    uint32_t e = 127u - 30u + (uint32_t)((r >> 32) % 48u);
    return f_of(((uint32_t)(r >> 63) << 31) | (e << 23) | ((uint32_t)r & 0x7fffffu));
}

/* ==== bf16 =========================================================================== */

START_TEST(bf16_rounds_chosen_patterns_to_nearest_even)
{
    static const struct {
        uint32_t in;
        uint16_t out;
    } cases[] = {
        {0x3f808000u, 0x3f80}, /* a tie, even below: down */
        {0x3f818000u, 0x3f82}, /* a tie, odd below: up */
        {0xbf818000u, 0xbf82}, /* the same, negative */
        {0x3f808001u, 0x3f81}, /* above the tie */
        {0x3f807fffu, 0x3f80}, /* below it */
        {0x3fff8000u, 0x4000}, /* 1.99609375 carries into the exponent: 2 */
        {0x7f7f7fffu, 0x7f7f}, /* below the tie at the top: the largest bf16 */
        {0x7f7f8000u, 0x7f80}, /* the tie above the largest bf16 rounds to inf (IEEE) */
        {0x7f7fffffu, 0x7f80}, /* FLT_MAX is past it: inf */
        {0xff7fffffu, 0xff80}, /* -FLT_MAX: -inf */
        {0x7f800000u, 0x7f80}, /* inf */
        {0xff800000u, 0xff80}, /* -inf */
        {0x00000000u, 0x0000}, /* +0 */
        {0x80000000u, 0x8000}, /* -0 */
        {0x00000001u, 0x0000}, /* the smallest subnormal: to +0 */
        {0x80000001u, 0x8000}, /* and to -0 */
        {0x00008000u, 0x0000}, /* a subnormal tie, even below */
        {0x00018000u, 0x0002}, /* a subnormal tie, odd below */
        {0x0000c000u, 0x0001}, /* above a subnormal tie */
        {0x807fffffu, 0x8080}, /* the largest subnormal carries into the smallest normal */
        {0x3f800000u, 0x3f80}, /* 1 is exact */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint16_t h;
        ordo__codec_to_bf16((const float[]){f_of(cases[i].in)}, 1, &h);
        ck_assert_msg(h == cases[i].out, "bf16(0x%08x) = 0x%04x, want 0x%04x", cases[i].in, h,
                      cases[i].out);
        float back;
        ordo__codec_from_bf16(&h, 1, &back);
        ck_assert_uint_eq(u_of(back), (uint32_t)h << 16);
    }
    /* NaNs stay NaNs, with their sign, even those whose upper half alone would read inf */
    static const uint32_t nans[] = {0x7fc00000u, 0xffc00000u, 0x7f800001u,
                                    0xff800001u, 0x7f80ffffu, 0x7fffffffu};
    for (size_t i = 0; i < sizeof nans / sizeof nans[0]; i++) {
        uint16_t h;
        ordo__codec_to_bf16((const float[]){f_of(nans[i])}, 1, &h);
        ck_assert_msg(bf16_is_nan(h) && (h >> 15) == (nans[i] >> 31), "bf16(0x%08x) = 0x%04x",
                      nans[i], h);
    }
}
END_TEST

START_TEST(bf16_vector_path_equals_reference_over_random_patterns)
{
    enum { N = 1 << 20 };
    uint32_t *in = malloc(N * sizeof *in);
    uint16_t *h = malloc(N * sizeof *h);
    float *back = malloc(N * sizeof *back);
    uint64_t s = 1;
    for (int i = 0; i < N; i++)
        in[i] = any_bits(&s);
    ordo__codec_to_bf16((const float *)in, N, h);
    ordo__codec_from_bf16(h, N, back);
    int64_t bad = 0;
    for (int i = 0; i < N; i++) {
        bool nan_in = (in[i] & 0x7fffffffu) > 0x7f800000u;
        bool ok =
            nan_in ? bf16_is_nan(h[i]) && (h[i] >> 15) == (in[i] >> 31) : h[i] == bf16_ref(in[i]);
        if (!ok && bad++ < 5) fprintf(stderr, "bf16(0x%08x) = 0x%04x\n", in[i], h[i]);
        bad += u_of(back[i]) != (uint32_t)h[i] << 16;
    }
    ck_assert_int_eq(bad, 0);
    /* every length and start (the vector loops' heads and tails) gives the same halves */
    for (int off = 0; off < 9; off++)
        for (int n = 0; n < 70; n++) {
            uint16_t part[80];
            ordo__codec_to_bf16((const float *)in + 1000 + off, n, part);
            ck_assert_int_eq(memcmp(part, h + 1000 + off, (size_t)n * 2), 0);
        }
    free(in);
    free(h);
    free(back);
}
END_TEST

/* ==== fp16 =========================================================================== */

/* from_fp16 of all 65536 halves on the path now chosen, against their definition */
static void check_from_fp16_exhaustive(float mult)
{
    uint16_t *h = malloc(65536 * sizeof *h);
    float *f = malloc(65536 * sizeof *f);
    for (int i = 0; i < 65536; i++)
        h[i] = (uint16_t)i;
    ordo__codec_from_fp16(h, 65536, mult, f);
    for (int i = 0; i < 65536; i++) {
        float want = (float)half_value((uint16_t)i) * mult;
        if (isnan(want))
            ck_assert_msg(isnan(f[i]), "half 0x%04x: %g", i, (double)f[i]);
        else
            ck_assert_msg(u_of(f[i]) == u_of(want), "half 0x%04x * %g: %a, want %a", i,
                          (double)mult, (double)f[i], (double)want);
    }
    free(h);
    free(f);
}

/* to_fp16 of n floats x scale on the path now chosen against half_ref; returns its count */
static int64_t check_to_fp16(const float *x, int64_t n, float scale)
{
    uint16_t *h = malloc((size_t)n * sizeof *h);
    int64_t bad = ordo__codec_to_fp16(x, n, scale, h), want_bad = 0;
    for (int64_t i = 0; i < n; i++) {
        float v = x[i] * scale;
        if (!half_fits(v)) {
            want_bad++;
            continue;
        }
        uint16_t want = half_ref(v);
        ck_assert_msg(h[i] == want, "fp16(%a * %g) = 0x%04x, want 0x%04x", (double)x[i],
                      (double)scale, h[i], want);
    }
    ck_assert_int_eq(bad, want_bad);
    free(h);
    return bad;
}

START_TEST(fp16_conversions_equal_references_on_both_paths)
{
    enum { N = 1 << 18 };
    float *x = malloc((N + 65536) * sizeof *x);
    uint64_t s = 2;
    for (int i = 0; i < N; i++)
        x[i] = half_range_float(&s);
    /* every midpoint between two positive halves (ties), and the top of the range */
    int n = N;
    for (unsigned h = 0; h < 0x7bff; h++)
        x[n++] = (float)((half_value((uint16_t)h) + half_value((uint16_t)(h + 1))) / 2);
    const float edge[] = {65504.0f,      65519.996f,    65520.0f,      -65520.0f, 65536.0f,
                          INFINITY,      -INFINITY,     NAN,           0.0f,      -0.0f,
                          5.9604645e-8f, 2.9802322e-8f, 2.9802326e-8f, 1e-30f};
    for (size_t i = 0; i < sizeof edge / sizeof edge[0]; i++)
        x[n++] = edge[i];
    int64_t counts[2][3];
    for (int simd = 0; simd < 2; simd++) {
        ordo__codec_set_simd(simd);
        check_from_fp16_exhaustive(1.0f);
        check_from_fp16_exhaustive(3.0f);
        counts[simd][0] = check_to_fp16(x, n, 1.0f);
        counts[simd][1] = check_to_fp16(x, n, 0.25f);
        counts[simd][2] = check_to_fp16(x, n, 1.0f / 3.0f);
    }
    ordo__codec_set_simd(true);
    for (int j = 0; j < 3; j++)
        ck_assert_int_eq(counts[0][j], counts[1][j]);
    ck_assert_int_gt(counts[0][0], counts[0][1]); /* scaling down brings values into range */
    free(x);
}
END_TEST

START_TEST(fp16_paths_give_the_same_bits)
{
    enum { N = 1 << 20 };
    float *x = malloc(N * sizeof *x);
    uint16_t *a = malloc(N * sizeof *a), *b = malloc(N * sizeof *b);
    float *fa = malloc(N * sizeof *fa), *fb = malloc(N * sizeof *fb);
    uint64_t s = 3;
    for (int i = 0; i < N; i++)
        x[i] = i % 2 ? f_of(any_bits(&s)) : half_range_float(&s);
    ordo__codec_set_simd(true);
    int64_t bad_a = ordo__codec_to_fp16(x, N, 0.5f, a);
    ordo__codec_from_fp16(a, N, 2.0f, fa);
    ordo__codec_set_simd(false);
    int64_t bad_b = ordo__codec_to_fp16(x, N, 0.5f, b);
    ordo__codec_from_fp16(a, N, 2.0f, fb);
    ordo__codec_set_simd(true);
    ck_assert_int_eq(bad_a, bad_b);
    for (int i = 0; i < N; i++) {
        if (half_fits(x[i] * 0.5f)) ck_assert_uint_eq(a[i], b[i]);
        ck_assert_msg(u_of(fa[i]) == u_of(fb[i]) || (isnan(fa[i]) && isnan(fb[i])),
                      "half 0x%04x: %a vs %a", a[i], (double)fa[i], (double)fb[i]);
    }
    free(x), free(a), free(b), free(fa), free(fb);
}
END_TEST

START_TEST(fp16_encode_scales_and_refuses_overflow)
{
    const ordo__codec_ops_t *ops = ordo__codec_ops(ORDO__CODEC_FP16);
    ck_assert_uint_eq(ops->dtype, ORDO_DTYPE_F16);
    const float x[4] = {99968.0f, -3.0f, 0.5f, 65504.0f};
    uint8_t frame[4 + 8];
    ordo__codec_io_t io = {.overflow = -1};
    /* unscaled, 99968 does not fit: refused and counted, never sent as inf */
    ordo__codec_spec_t c = {.id = ORDO__CODEC_FP16};
    ck_assert_int_eq(ops->encode(&c, x, 4, frame, &io), ORDO_ERR_RANGE);
    ck_assert_int_eq(io.overflow, 1);
    const float y[3] = {INFINITY, NAN, 70000.0f};
    ck_assert_int_eq(ops->encode(&c, y, 3, frame, &io), ORDO_ERR_RANGE);
    ck_assert_int_eq(io.overflow, 3);
    ck_assert_str_eq(
        ordo__error_detail(),
        "fp16: 3 of 3 values do not fit (|x * 1| rounds past 65504, or is inf or NaN)");
    /* scale 1/4 (4 workers): the frame's multiplier is 4, the halves are x / 4 */
    c.scale = 0.25f;
    ck_assert_int_eq(ops->max_bytes(&c, 4), sizeof frame);
    ck_assert_int_eq(ops->encode(&c, x, 4, frame, &io), (int64_t)sizeof frame);
    ck_assert_int_eq(io.overflow, 0);
    float mult;
    memcpy(&mult, frame, 4);
    ck_assert_float_eq(mult, 4.0f);
    uint16_t h[4];
    memcpy(h, frame + 4, sizeof h);
    ck_assert_uint_eq(h[0], 0x761a); /* 24992 */
    ck_assert_uint_eq(h[1], 0xba00); /* -0.75 */
    ck_assert_uint_eq(h[2], 0x3000); /* 0.125 */
    ck_assert_uint_eq(h[3], 0x73ff); /* 16376 */
    float out[4];
    ORDO_CK_OK(ordo__codec_decode(ORDO_DTYPE_F16, frame, sizeof frame, 4, out));
    ck_assert_float_eq(out[0], 99968.0f); /* 24992 is a half: exact */
    ck_assert_float_eq(out[1], -3.0f);
    ck_assert_float_eq(out[2], 0.5f);
    ck_assert_float_eq(out[3], 65504.0f);
    /* a scale whose inverse is not finite would make a frame the receiver refuses */
    c.scale = 1e-39f;
    ck_assert_int_eq(ops->encode(&c, x, 4, frame, &io), ORDO_ERR_INVAL);
    ck_assert_ptr_nonnull(strstr(ordo__error_detail(), "no finite inverse"));
    /* scale 0 means 1 */
    c.scale = 0;
    ck_assert_int_eq(ops->encode(&c, x + 1, 3, frame, &io), 4 + 6);
    memcpy(&mult, frame, 4);
    ck_assert_float_eq(mult, 1.0f);
}
END_TEST

/* ==== onebit, topk, randomk ========================================================== */

START_TEST(onebit_sends_signs_and_mean_magnitude)
{
    const ordo__codec_ops_t *ops = ordo__codec_ops(ORDO__CODEC_ONEBIT);
    ordo__codec_spec_t c = {.id = ORDO__CODEC_ONEBIT};
    const float x[10] = {1, -2, 3, -4, 0.0f, -0.0f, 0.5f, -0.5f, 2, -1};
    uint8_t frame[4 + 2];
    ck_assert_int_eq(ops->max_bytes(&c, 10), 6);
    ck_assert_int_eq(ops->encode(&c, x, 10, frame, NULL), 6);
    float s;
    memcpy(&s, frame, 4);
    ck_assert_float_eq(s, 1.4f);       /* 14 / 10 */
    ck_assert_uint_eq(frame[4], 0xaa); /* values 1, 3, 5, 7 negative (-0 counts as negative) */
    ck_assert_uint_eq(frame[5], 0x02); /* value 9 */
    float out[10];
    ORDO_CK_OK(ordo__codec_decode(ORDO_DTYPE_ONEBIT, frame, 6, 10, out));
    for (int i = 0; i < 10; i++)
        ck_assert_float_eq(out[i], signbit(x[i]) ? -1.4f : 1.4f);
    /* the scale is the double sum of |x| over n, then cast (a float sum would lose the 1s) */
    float big[3] = {16777216.0f, 1.0f, 1.0f};
    ck_assert_int_eq(ops->encode(&c, big, 3, frame, NULL), 5);
    memcpy(&s, frame, 4);
    ck_assert_float_eq(s, (float)(16777218.0 / 3));
    /* a value that is not finite is refused */
    const float inf[2] = {1, INFINITY};
    ck_assert_int_eq(ops->encode(&c, inf, 2, frame, NULL), ORDO_ERR_RANGE);
}
END_TEST

/* the top k of x by magnitude (NaN first), ties in index order: a selection by k passes */
static void topk_ref(const float *x, int64_t n, int64_t k, uint32_t *idx)
{
    char *taken = calloc((size_t)n, 1);
    for (int64_t j = 0; j < k; j++) {
        int64_t best = -1;
        for (int64_t i = 0; i < n; i++) {
            if (taken[i]) continue;
            float a = isnan(x[i]) ? INFINITY : fabsf(x[i]);
            float b = best < 0 ? -1 : isnan(x[best]) ? INFINITY : fabsf(x[best]);
            if (a > b) best = i;
        }
        taken[best] = 1;
    }
    for (int64_t i = 0, j = 0; i < n; i++)
        if (taken[i]) idx[j++] = (uint32_t)i;
    free(taken);
}

START_TEST(topk_keeps_largest_magnitudes_ties_in_index_order)
{
    const ordo__codec_ops_t *ops = ordo__codec_ops(ORDO__CODEC_TOPK);
    const float x[8] = {0.5f, -3, 1, 3, -0.5f, 2, -3, 0};
    ordo__codec_spec_t c = {.id = ORDO__CODEC_TOPK, .k = 3};
    uint8_t frame[8 * 8];
    ck_assert_int_eq(ops->encode(&c, x, 8, frame, NULL), 24);
    uint32_t idx[3];
    float val[3];
    memcpy(idx, frame, 12);
    memcpy(val, frame + 12, 12);
    ck_assert_uint_eq(idx[0], 1);
    ck_assert_uint_eq(idx[1], 3);
    ck_assert_uint_eq(idx[2], 6);
    ck_assert_float_eq(val[0], -3);
    ck_assert_float_eq(val[1], 3);
    ck_assert_float_eq(val[2], -3);
    c.k = 4; /* then 2 */
    ck_assert_int_eq(ops->encode(&c, x, 8, frame, NULL), 32);
    uint32_t i4[4];
    memcpy(i4, frame, 16);
    ck_assert_uint_eq(i4[0], 1);
    ck_assert_uint_eq(i4[1], 3);
    ck_assert_uint_eq(i4[2], 5);
    ck_assert_uint_eq(i4[3], 6);
    c.k = 6; /* 1, then one of the ties at 0.5: the first in index order */
    ck_assert_int_eq(ops->encode(&c, x, 8, frame, NULL), 48);
    uint32_t i6[6];
    memcpy(i6, frame, 24);
    const uint32_t want_idx[6] = {0, 1, 2, 3, 5, 6};
    ck_assert_int_eq(memcmp(i6, want_idx, sizeof i6), 0);
    float out[8];
    ORDO_CK_OK(ordo__codec_decode(ORDO_DTYPE_KV, frame, 48, 8, out));
    const float want[8] = {0.5f, -3, 1, 3, 0, 2, -3, 0};
    for (int i = 0; i < 8; i++)
        ck_assert_float_eq(out[i], want[i]);
    /* random inputs with many ties and some NaNs, k as count and fraction, against the
     * reference */
    uint64_t s = 4;
    for (int trial = 0; trial < 300; trial++) {
        int64_t n = 1 + (int64_t)(rng_next(&s) % 300);
        float *v = malloc((size_t)n * sizeof *v);
        for (int64_t i = 0; i < n; i++) {
            uint64_t r = rng_next(&s);
            v[i] = r % 50 == 0 ? NAN : (float)((int)(r >> 8) % 9 - 4) * (trial % 2 ? 1 : 0.1f);
        }
        c.k = trial % 3 ? (double)(1 + rng_next(&s) % (uint64_t)n) : 0.3;
        int64_t k = ordo__codec_k(&c, n);
        uint8_t *f = malloc((size_t)k * 8);
        uint32_t *got = malloc((size_t)k * 4), *ref = malloc((size_t)k * 4);
        ck_assert_int_eq(ops->encode(&c, v, n, f, NULL), k * 8);
        memcpy(got, f, (size_t)k * 4);
        topk_ref(v, n, k, ref);
        ck_assert_msg(memcmp(got, ref, (size_t)k * 4) == 0, "trial %d: n %lld k %lld", trial,
                      (long long)n, (long long)k);
        for (int64_t j = 0; j < k; j++)
            ck_assert_int_eq(memcmp(f + (k + j) * 4, &v[ref[j]], 4), 0);
        free(v), free(f), free(got), free(ref);
    }
}
END_TEST

START_TEST(k_is_a_count_or_a_fraction_within_bounds)
{
    ordo__codec_spec_t c = {.id = ORDO__CODEC_TOPK, .k = 3};
    ck_assert_int_eq(ordo__codec_k(&c, 10), 3);
    ck_assert_int_eq(ordo__codec_k(&c, 2), 2); /* at most n */
    ck_assert_int_eq(ordo__codec_k(&c, 0), 0); /* an empty tensor keeps nothing */
    c.k = 0.5;
    ck_assert_int_eq(ordo__codec_k(&c, 10), 5);
    ck_assert_int_eq(ordo__codec_k(&c, 7), 4); /* 3.5 rounds to 4 */
    c.k = 0.01;
    ck_assert_int_eq(ordo__codec_k(&c, 10), 1); /* at least 1 */
    ck_assert_int_eq(ordo__codec_k(&c, 1000), 10);
    ck_assert_double_eq_tol(ordo__codec_bytes_per_value(&c, 1000), 0.08, 1e-12);
    /* topk and randomk of an empty tensor: an empty frame that decodes */
    float none[1];
    for (int id = ORDO__CODEC_TOPK; id <= ORDO__CODEC_RANDOMK; id++) {
        c.id = id;
        ck_assert_int_eq(ordo__codec_ops(id)->encode(&c, none, 0, none, NULL), 0);
    }
    ORDO_CK_OK(ordo__codec_decode(ORDO_DTYPE_KV, none, 0, 0, none));
}
END_TEST

static void randomk_indices(int64_t n, double k, uint64_t seed, uint32_t *idx, float *vals)
{
    ordo__codec_spec_t c = {.id = ORDO__CODEC_RANDOMK, .k = k};
    int64_t kk = ordo__codec_k(&c, n);
    float *x = malloc((size_t)n * sizeof *x);
    uint8_t *f = malloc((size_t)kk * 8);
    for (int64_t i = 0; i < n; i++)
        x[i] = (float)i + 0.25f;
    ordo__codec_io_t io = {.seed = seed};
    ck_assert_int_eq(ordo__codec_ops(ORDO__CODEC_RANDOMK)->encode(&c, x, n, f, &io), kk * 8);
    memcpy(idx, f, (size_t)kk * 4);
    if (vals) memcpy(vals, f + kk * 4, (size_t)kk * 4);
    free(x), free(f);
}

START_TEST(randomk_is_seeded_increasing_and_uniform)
{
    uint32_t a[10], b[10];
    float va[10];
    randomk_indices(100, 10, 77, a, va);
    randomk_indices(100, 10, 77, b, NULL);
    ck_assert_int_eq(memcmp(a, b, sizeof a), 0); /* the same seed: the same indices */
    for (int j = 0; j < 10; j++) {
        ck_assert(j == 0 || a[j] > a[j - 1]);
        ck_assert_uint_lt(a[j], 100);
        ck_assert_float_eq(va[j], (float)a[j] + 0.25f); /* the values at them */
    }
    randomk_indices(100, 10, 78, b, NULL);
    ck_assert_int_ne(memcmp(a, b, sizeof a), 0);
    /* each index is chosen about k / n of the time over many seeds (expected 2000 of 20000,
     * sd 42: 15 % is over 7 sd), and every selection is increasing and complete */
    int hits[100] = {0};
    for (uint64_t seed = 0; seed < 20000; seed++) {
        randomk_indices(100, 0.1, seed, a, NULL);
        for (int j = 0; j < 10; j++) {
            ck_assert(j == 0 || a[j] > a[j - 1]);
            hits[a[j]]++;
        }
    }
    for (int i = 0; i < 100; i++)
        ck_assert_msg(hits[i] > 1700 && hits[i] < 2300, "index %d chosen %d times", i, hits[i]);
    /* k = n takes everything */
    uint32_t all[7];
    randomk_indices(7, 7, 5, all, NULL);
    for (uint32_t j = 0; j < 7; j++)
        ck_assert_uint_eq(all[j], j);
}
END_TEST

/* ==== error feedback ================================================================= */

START_TEST(ef_residual_is_what_the_frame_left_out)
{
    /* onebit by hand: two steps */
    ordo__codec_spec_t c = {.id = ORDO__CODEC_ONEBIT, .ef = true};
    const float x[4] = {1, -2, 3, -4};
    float res[4] = {0}, scratch[4];
    uint8_t frame[5];
    ck_assert_int_eq(ordo__codec_encode_ef(&c, x, 4, res, scratch, frame, NULL), 5);
    const float r1[4] = {-1.5f, 0.5f, 0.5f, -1.5f}; /* s = 2.5 */
    for (int i = 0; i < 4; i++)
        ck_assert_float_eq(res[i], r1[i]);
    ck_assert_int_eq(ordo__codec_encode_ef(&c, x, 4, res, scratch, frame, NULL), 5);
    const float r2[4] = {2.25f, 1.25f, 0.75f, -2.75f}; /* x + r1 = -.5 -1.5 3.5 -5.5, s = 2.75 */
    for (int i = 0; i < 4; i++)
        ck_assert_float_eq(res[i], r2[i]);
    /* onebit, topk and randomk over ten steps: residual = (src + old residual) - decoded */
    const int ids[3] = {ORDO__CODEC_ONEBIT, ORDO__CODEC_TOPK, ORDO__CODEC_RANDOMK};
    enum { N = 1000 };
    uint64_t s = 5;
    for (int t = 0; t < 3; t++) {
        c = (ordo__codec_spec_t){.id = ids[t], .k = 0.05, .ef = true};
        const ordo__codec_ops_t *ops = ordo__codec_ops(c.id);
        float *src = malloc(N * 4), *r = calloc(N, 4), *want = calloc(N, 4), *sum = malloc(N * 4);
        float *dec = malloc(N * 4), *sc = malloc(N * 4);
        uint8_t *f = malloc(ops->max_bytes(&c, N)), *g = malloc(ops->max_bytes(&c, N));
        for (int step = 0; step < 10; step++) {
            for (int i = 0; i < N; i++)
                src[i] = (float)((int64_t)(rng_next(&s) % 2001) - 1000) / 997;
            ordo__codec_io_t io = {.seed = (uint64_t)step};
            for (int i = 0; i < N; i++)
                sum[i] = src[i] + want[i];
            int64_t len = ops->encode(&c, sum, N, g, &io);
            ORDO_CK_OK(ops->decode(g, (size_t)len, N, dec));
            for (int i = 0; i < N; i++)
                want[i] = sum[i] - dec[i];
            ck_assert_int_eq(ordo__codec_encode_ef(&c, src, N, r, sc, f, &io), len);
            ck_assert_int_eq(memcmp(f, g, (size_t)len), 0);
            ck_assert_int_eq(memcmp(r, want, N * 4), 0);
        }
        /* topk: the kept entries leave no residual, the others keep everything */
        if (c.id == ORDO__CODEC_TOPK)
            for (int i = 0; i < N; i++)
                ck_assert(dec[i] == 0 ? r[i] == sum[i] : r[i] == 0);
        free(src), free(r), free(want), free(sum), free(dec), free(sc), free(f), free(g);
    }
    /* with ef off the residual is untouched, the frame the plain encoding */
    c = (ordo__codec_spec_t){.id = ORDO__CODEC_TOPK, .k = 2, .ef = false};
    float keep[4] = {7, 7, 7, 7};
    uint8_t f1[16], f2[16];
    ck_assert_int_eq(ordo__codec_encode_ef(&c, x, 4, keep, scratch, f1, NULL), 16);
    ck_assert_int_eq(ordo__codec_ops(c.id)->encode(&c, x, 4, f2, NULL), 16);
    ck_assert_int_eq(memcmp(f1, f2, 16), 0);
    for (int i = 0; i < 4; i++)
        ck_assert_float_eq(keep[i], 7);
    /* an fp16 overflow under ef leaves the residual as it was */
    c = (ordo__codec_spec_t){.id = ORDO__CODEC_FP16, .ef = true};
    const float big[4] = {1, 2, 1e6f, 3};
    uint8_t f3[12];
    ordo__codec_io_t io = {0};
    ck_assert_int_eq(ordo__codec_encode_ef(&c, big, 4, keep, scratch, f3, &io), ORDO_ERR_RANGE);
    ck_assert_int_eq(io.overflow, 1);
    for (int i = 0; i < 4; i++)
        ck_assert_float_eq(keep[i], 7);
}
END_TEST

/* ==== specs ========================================================================== */

START_TEST(specs_round_trip)
{
    static const char *const good[] = {"none",
                                       "bf16",
                                       "fp16",
                                       "onebit",
                                       "topk:10",
                                       "topk:0.01",
                                       "randomk:5",
                                       "randomk:0.5",
                                       "onebit,ef=none",
                                       "topk:3,ef=none",
                                       "bf16,ef=vanilla",
                                       "fp16,ef=vanilla",
                                       "topk:1234567",
                                       "topk:0.1234567",
                                       "randomk:2147483647",
                                       "none,ef=vanilla",
                                       "topk:0.001953125"};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
        ordo__codec_spec_t a, b;
        char text[96];
        ORDO_CK_OK(ordo__codec_parse(good[i], &a));
        ck_assert_str_eq(ordo__codec_format(&a, text, sizeof text), good[i]);
        ORDO_CK_OK(ordo__codec_parse(text, &b));
        ck_assert_int_eq(a.id, b.id);
        ck_assert(a.k == b.k && a.ef == b.ef);
    }
    ordo__codec_spec_t c;
    ORDO_CK_OK(ordo__codec_parse("topk:0.01", &c));
    ck_assert(c.id == ORDO__CODEC_TOPK && c.k == 0.01 && c.ef);
    ORDO_CK_OK(ordo__codec_parse("bf16", &c));
    ck_assert(c.id == ORDO__CODEC_BF16 && !c.ef); /* the casts: no ef by default */
    ORDO_CK_OK(ordo__codec_parse("onebit,ef=none", &c));
    ck_assert(c.id == ORDO__CODEC_ONEBIT && !c.ef);
    /* a non-canonical form reads as its canonical one */
    char text[96];
    ORDO_CK_OK(ordo__codec_parse("topk:1e3,ef=vanilla", &c));
    ck_assert_str_eq(ordo__codec_format(&c, text, sizeof text), "topk:1000");
    ORDO_CK_OK(ordo__codec_parse("onebit,pull=delta,ef=none", &c));
    ck_assert(c.pull_delta && !c.ef);
    ck_assert_str_eq(ordo__codec_format(&c, text, sizeof text), "onebit,ef=none,pull=delta");
    ORDO_CK_OK(ordo__codec_parse("topk:0.5,pull=float32", &c));
    ck_assert(!c.pull_delta);
}
END_TEST

static void refused(const char *text, const char *words)
{
    ordo__codec_spec_t c = {.id = 99};
    ordo__error_clear();
    ORDO_CK_ERR(ordo__codec_parse(text, &c), ORDO_ERR_INVAL);
    ck_assert_int_eq(c.id, 99); /* out is written only on success */
    ck_assert_msg(strstr(ordo__error_detail(), words), "\"%s\": \"%s\" does not say \"%s\"",
                  text ? text : "(null)", ordo__error_detail(), words);
}

START_TEST(bad_specs_are_refused_naming_the_problem)
{
    refused("zstd", "unknown codec \"zstd\"");
    refused("", "unknown codec \"\"");
    refused("TOPK:5", "unknown codec");
    refused(NULL, "no compression given");
    refused("topk", "topk needs k");
    refused("randomk,ef=none", "randomk needs k");
    refused("topk:0", "k \"0\" is out of range");
    refused("topk:-1", "k \"-1\" is out of range");
    refused("topk:1.5", "k \"1.5\" is out of range");
    refused("topk:abc", "k \"abc\" is out of range");
    refused("topk:", "k \"\" is out of range");
    refused("topk:5x", "k \"5x\" is out of range");
    refused("topk:nan", "out of range");
    refused("topk:inf", "out of range");
    refused("topk:1e300", "out of range");
    refused("topk:2147483648", "out of range");
    refused("bf16:3", "bf16 takes no k");
    refused("onebit,ef=momentum", "unknown option \"ef=momentum\"");
    refused("topk:5,ef=vanilla,x", "unknown option");
    refused("bf16,pull=delta", "unknown option \"pull=delta\""); /* a cast's pulls are casts */
    refused("onebit,pull=maybe", "unknown option \"pull=maybe\"");
    char lng[200];
    memset(lng, 'a', sizeof lng - 1);
    lng[sizeof lng - 1] = '\0';
    refused(lng, "too long");
}
END_TEST

/* ==== malformed frames =============================================================== */

static void proto(int dtype, const void *frame, size_t len, int64_t n, const char *words)
{
    float dst[16], acc[16];
    for (int i = 0; i < 16; i++)
        acc[i] = (float)i;
    ordo__error_clear();
    ORDO_CK_ERR(ordo__codec_decode(dtype, frame, len, n, dst), ORDO_ERR_PROTO);
    ck_assert_msg(strstr(ordo__error_detail(), words), "\"%s\" does not say \"%s\"",
                  ordo__error_detail(), words);
    ORDO_CK_ERR(ordo__codec_decode_add(dtype, frame, len, n, acc), ORDO_ERR_PROTO);
    for (int i = 0; i < 16; i++)
        ck_assert_float_eq(acc[i], (float)i); /* untouched */
}

START_TEST(malformed_frames_are_refused)
{
    uint8_t z[200] = {0};
    proto(ORDO_DTYPE_F32, z, 15, 4, "float32 frame of 15 bytes for 4 values");
    proto(ORDO_DTYPE_F32, z, 17, 4, "float32 frame of 17");
    proto(ORDO_DTYPE_BF16, z, 7, 4, "bf16 frame of 7 bytes for 4 values");
    proto(ORDO_DTYPE_BF16, z, 9, 4, "bf16 frame of 9");
    proto(ORDO_DTYPE_F16, z, 8, 4, "fp16 frame of 8 bytes for 4 values"); /* no multiplier */
    proto(ORDO_DTYPE_F16, z, 13, 4, "fp16 frame of 13");
    proto(ORDO_DTYPE_ONEBIT, z, 5, 9, "onebit frame of 5 bytes for 9 values");
    proto(ORDO_DTYPE_ONEBIT, z, 7, 9, "onebit frame of 7");
    proto(ORDO_DTYPE_KV, z, 7, 4, "sparse frame of 7 bytes");
    proto(ORDO_DTYPE_KV, z, 40, 4, "sparse frame of 40 bytes for 4 values");
    proto(ORDO_DTYPE_COO, z, 8, 4, "dtype 3 is no tensor payload");
    proto(99, z, 8, 4, "dtype 99");
    proto(ORDO_DTYPE_F32, z, 0, -1, "a frame for -1 values");
    proto(ORDO_DTYPE_KV, z, 0, -1, "a frame for -1 values");
    /* fp16 multipliers and onebit scales that no sender writes */
    const float mults[] = {0.0f, -0.0f, NAN, INFINITY, -INFINITY};
    for (size_t i = 0; i < sizeof mults / sizeof mults[0]; i++) {
        uint8_t f[4 + 8] = {0};
        memcpy(f, &mults[i], 4);
        proto(ORDO_DTYPE_F16, f, sizeof f, 4, "fp16 frame's multiplier is");
    }
    const float scales[] = {-1.0f, NAN, INFINITY, -INFINITY};
    for (size_t i = 0; i < sizeof scales / sizeof scales[0]; i++) {
        uint8_t f[4 + 1] = {0};
        memcpy(f, &scales[i], 4);
        proto(ORDO_DTYPE_ONEBIT, f, sizeof f, 4, "onebit frame's scale is");
    }
    /* sparse indices: out of range, not increasing, duplicated (values are 1s) */
    const uint32_t bad_idx[][3] = {{0, 1, 8}, {0, 4, 2}, {3, 3, 5}, {0xffffffffu, 0, 1}};
    for (size_t i = 0; i < sizeof bad_idx / sizeof bad_idx[0]; i++) {
        uint8_t f[24];
        memcpy(f, bad_idx[i], 12);
        for (int j = 0; j < 3; j++)
            memcpy(f + 12 + 4 * j, &(float){1}, 4);
        proto(ORDO_DTYPE_KV, f, sizeof f, 8, "out of range or not increasing");
    }
}
END_TEST

/* ==== decode_add ===================================================================== */

/* encode_at_odd encodes x[0..n) with codec id (k 0.1, fp16 scale 0.5, randomk seed 9) into
 * frame (n * 8 + 8 bytes) and copies it to odd + 1: frames may sit at odd addresses in
 * ZeroMQ's buffers. Returns the frame's length. */
static int64_t encode_at_odd(int id, const float *x, int64_t n, uint8_t *frame, uint8_t *odd)
{
    ordo__codec_spec_t c = {.id = id, .k = 0.1, .scale = 0.5f};
    ordo__codec_io_t io = {.seed = 9};
    int64_t len = ordo__codec_ops(id)->encode(&c, x, n, frame, &io);
    ck_assert_int_gt(len, 0);
    memcpy(odd + 1, frame, (size_t)len);
    return len;
}

START_TEST(decode_add_equals_decode_then_add)
{
    enum { N = 4099 };
    float *x = malloc(N * 4), *acc = malloc(N * 4), *want = malloc(N * 4), *dec = malloc(N * 4);
    uint8_t *frame = malloc(N * 8 + 8), *odd = malloc(N * 8 + 9);
    uint64_t s = 6;
    for (int i = 0; i < N; i++)
        x[i] = (float)((int64_t)(rng_next(&s) % 20001) - 10000) / 3001;
    for (int id = 0; id < ORDO__CODEC_MAX; id++) {
        const ordo__codec_ops_t *ops = ordo__codec_ops(id);
        int64_t len = encode_at_odd(id, x, N, frame, odd);
        for (int simd = 0; simd < 2; simd++) {
            ordo__codec_set_simd(simd);
            for (int i = 0; i < N; i++)
                want[i] = acc[i] = (float)i / 7;
            ORDO_CK_OK(ordo__codec_decode(ops->dtype, odd + 1, (size_t)len, N, dec));
            ordo__vec_add(want, dec, N);
            ORDO_CK_OK(ordo__codec_decode_add(ops->dtype, odd + 1, (size_t)len, N, acc));
            ck_assert_msg(memcmp(acc, want, N * 4) == 0, "%s, simd %d", ops->name, simd);
        }
    }
    ordo__codec_set_simd(true);
    free(x), free(acc), free(want), free(dec), free(frame), free(odd);
}
END_TEST

START_TEST(decode_range_equals_a_part_of_decode)
{
    enum { N = 4099 };
    float *x = malloc(N * 4), *whole = malloc(N * 4), *part = malloc(N * 4);
    uint8_t *frame = malloc(N * 8 + 8), *odd = malloc(N * 8 + 9);
    uint64_t s = 7;
    for (int i = 0; i < N; i++)
        x[i] = (float)((int64_t)(rng_next(&s) % 20001) - 10000) / 3001;
    for (int id = 0; id < ORDO__CODEC_MAX; id++) {
        const ordo__codec_ops_t *ops = ordo__codec_ops(id);
        int64_t len = encode_at_odd(id, x, N, frame, odd);
        bool ranged = id == ORDO__CODEC_NONE || id == ORDO__CODEC_BF16 || id == ORDO__CODEC_FP16;
        ck_assert_msg(ordo__codec_ranged(ops->dtype) == ranged, "%s", ops->name);
        if (!ranged) { /* values with no fixed place: refused, never misread */
            ck_assert_int_eq(ordo__codec_decode_range(ops->dtype, odd + 1, (size_t)len, N, 0, 1,
                                                      part), ORDO_ERR_PROTO);
            continue;
        }
        ORDO_CK_OK(ordo__codec_decode(ops->dtype, odd + 1, (size_t)len, N, whole));
        const int64_t cuts[][2] = {{0, N}, {0, 1}, {1, 7}, {4095, 4}, {N - 1, 1}, {17, 0}};
        for (size_t k = 0; k < sizeof cuts / sizeof cuts[0]; k++) {
            int64_t off = cuts[k][0], n = cuts[k][1];
            ORDO_CK_OK(ordo__codec_decode_range(ops->dtype, odd + 1, (size_t)len, N, off, n, part));
            ck_assert_msg(memcmp(part, whole + off, (size_t)n * 4) == 0, "%s [%lld, +%lld)",
                          ops->name, (long long)off, (long long)n);
        }
        /* a range past the end, a negative one, and a frame a value short are refused */
        ck_assert_int_eq(ordo__codec_decode_range(ops->dtype, odd + 1, (size_t)len, N, N - 1, 2,
                                                  part), ORDO_ERR_PROTO);
        ck_assert_int_eq(ordo__codec_decode_range(ops->dtype, odd + 1, (size_t)len, N, -1, 1,
                                                  part), ORDO_ERR_PROTO);
        ck_assert_int_eq(ordo__codec_decode_range(ops->dtype, odd + 1, (size_t)len - 2, N, 0, 0,
                                                  part), ORDO_ERR_PROTO);
    }
    free(x), free(whole), free(part), free(frame), free(odd);
}
END_TEST

START_TEST(table_and_dtypes_agree)
{
    for (int id = 0; id < ORDO__CODEC_MAX; id++) {
        const ordo__codec_ops_t *ops = ordo__codec_ops(id);
        ck_assert_ptr_nonnull(ops);
        ck_assert_int_eq(ops->id, id);
        ck_assert_ptr_nonnull(ops->decode_add);
        ck_assert_int_eq(ordo__codec_of_dtype(ops->dtype)->dtype, ops->dtype);
    }
    ck_assert_ptr_null(ordo__codec_ops(-1));
    ordo__codec_spec_t bad = {.id = ORDO__CODEC_MAX};
    float v[1] = {1}, r[1] = {0}, sc[1];
    uint8_t f[8];
    ck_assert_int_eq(ordo__codec_encode_ef(&bad, v, 1, r, sc, f, NULL), ORDO_ERR_INVAL);
    ck_assert_ptr_null(ordo__codec_ops(ORDO__CODEC_MAX));
    ck_assert_ptr_null(ordo__codec_of_dtype(ORDO_DTYPE_COO));
    ck_assert_str_eq(ordo__codec_of_dtype(ORDO_DTYPE_F32)->name, "none");
    ordo__codec_spec_t c = {.id = ORDO__CODEC_BF16};
    ck_assert_double_eq(ordo__codec_bytes_per_value(&c, 1000), 2.0);
    c.id = ORDO__CODEC_ONEBIT;
    ck_assert_double_eq(ordo__codec_bytes_per_value(&c, 800), (4.0 + 100) / 800);
}
END_TEST

static Suite *codec_suite(void)
{
    Suite *s = suite_create("codec");
    struct {
        const char *name;
        const TTest *test;
    } cases[] = {
        {"bf16_patterns", bf16_rounds_chosen_patterns_to_nearest_even},
        {"bf16_random", bf16_vector_path_equals_reference_over_random_patterns},
        {"fp16_reference", fp16_conversions_equal_references_on_both_paths},
        {"fp16_paths", fp16_paths_give_the_same_bits},
        {"fp16_encode", fp16_encode_scales_and_refuses_overflow},
        {"onebit", onebit_sends_signs_and_mean_magnitude},
        {"topk", topk_keeps_largest_magnitudes_ties_in_index_order},
        {"k", k_is_a_count_or_a_fraction_within_bounds},
        {"randomk", randomk_is_seeded_increasing_and_uniform},
        {"ef", ef_residual_is_what_the_frame_left_out},
        {"spec_round_trip", specs_round_trip},
        {"spec_refused", bad_specs_are_refused_naming_the_problem},
        {"malformed", malformed_frames_are_refused},
        {"decode_add", decode_add_equals_decode_then_add},
        {"decode_range", decode_range_equals_a_part_of_decode},
        {"table", table_and_dtypes_agree},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        TCase *t = tcase_create(cases[i].name);
        tcase_set_timeout(t, 120);
        tcase_add_test(t, cases[i].test);
        suite_add_tcase(s, t);
    }
    return s;
}

ORDO_CK_MAIN(codec_suite)
