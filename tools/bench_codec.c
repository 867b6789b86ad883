/* bench_codec: throughput of the wire codecs' encode and decode, and of the server's sum of a
 * push in each wire type, against float32's memcpy and add. */
#include "tools/bench_codec.h"

#include "common/clock.h"
#include "common/error.h"
#include "common/codec.h"
#include "core/vec.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* the specs measured: each codec, sparse at 1 % (fp16 scaled as for 4 workers) */
static const char *const specs[] = {"none", "bf16", "fp16", "onebit", "topk:0.01", "randomk:0.01"};

typedef struct {
    int64_t n;
    int reps;
    bool json;
} opts_t;

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* the median of reps timings, in nanoseconds per value */
static double median_ns(int64_t *t, int reps, int64_t n)
{
    qsort(t, (size_t)reps, sizeof *t, cmp_i64);
    double m = reps % 2 ? (double)t[reps / 2] : 0.5 * (double)(t[reps / 2 - 1] + t[reps / 2]);
    return m / (double)n;
}

static uint64_t rng_next(uint64_t *s) /* splitmix64 */
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* gradient-like values: N(0, 0.01^2) by Box-Muller */
static void fill(float *x, int64_t n)
{
    uint64_t s = 42;
    for (int64_t i = 0; i < n; i++) {
        double u = ((double)(rng_next(&s) >> 11) + 0.5) * 0x1p-53;
        double v = (double)(rng_next(&s) >> 11) * 0x1p-53;
        x[i] = (float)(0.01 * sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v));
    }
}

typedef struct {
    const char *name;
    double bytes_per_value;
    double enc_ns, enc_ef_ns, dec_ns; /* per value */
    double dec_then_add_ns, dec_add_ns;
    double f32_add_ns;  /* ordo__vec_add of a float32 push, timed beside this row's sums */
    double fused_ratio; /* the median over rounds of fused / float32 add */
} row_t;

/* the buffers every row reuses */
typedef struct {
    float *x, *acc, *dec, *res, *scratch;
    void *frame;
} bufs_t;

#define TIME(dst, expr)                                                                            \
    do {                                                                                           \
        for (int r_ = -1; r_ < o->reps; r_++) { /* run -1 warms up */                              \
            int64_t t0_ = ordo__clock_ns();                                                         \
            if ((rc = (expr)) < 0) goto fail;                                                      \
            if (r_ >= 0) t[r_] = ordo__clock_ns() - t0_;                                            \
        }                                                                                          \
        dst = median_ns(t, o->reps, o->n);                                                         \
    } while (0)

static int64_t enc_plain(const ordo__codec_ops_t *ops, const ordo__codec_spec_t *c, bufs_t *b,
                         int64_t n, uint64_t seed)
{
    ordo__codec_io_t io = {.seed = seed};
    return ops->encode(c, b->x, n, b->frame, &io);
}

static int64_t enc_ef(const ordo__codec_spec_t *c, bufs_t *b, int64_t n, uint64_t seed)
{
    ordo__codec_io_t io = {.seed = seed};
    return ordo__codec_encode_ef(c, b->x, n, b->res, b->scratch, b->frame, &io);
}

static int dec_then_add(int dtype, bufs_t *b, size_t len, int64_t n)
{
    int rc = ordo__codec_decode(dtype, b->frame, len, n, b->dec);
    if (rc == 0) ordo__vec_add(b->acc, b->dec, n);
    return rc;
}

/* server_sums times the three ways to sum a push, a round of each in turn so that a shared
 * machine's load falls on all three alike: decode then add, the fused decode_add, and the
 * float32 add; fused_ratio is the median of the rounds' fused / float32 ratios. */
static int server_sums(const opts_t *o, int dtype, bufs_t *b, size_t len, int64_t *t, row_t *row)
{
    int64_t n = o->n, *t2 = calloc(3 * (size_t)o->reps, sizeof *t2);
    if (!t2) return ORDO_ERR_NOMEM;
    int64_t *t_f32 = t2, *t_sep = t2 + o->reps, *t_fused = t2 + 2 * o->reps;
    int rc = 0;
    for (int r = -1; r < o->reps && rc == 0; r++) { /* round -1 warms up */
        int64_t t0 = ordo__clock_ns();
        rc = dec_then_add(dtype, b, len, n);
        int64_t t1 = ordo__clock_ns();
        if (rc == 0) rc = ordo__codec_decode_add(dtype, b->frame, len, n, b->acc);
        int64_t t2_ = ordo__clock_ns();
        ordo__vec_add(b->acc, b->x, n);
        int64_t t3 = ordo__clock_ns();
        if (r < 0) continue;
        t_sep[r] = t1 - t0, t_fused[r] = t2_ - t1, t_f32[r] = t3 - t2_;
        t[r] = (int64_t)(1e6 * (double)t_fused[r] / (double)(t_f32[r] ? t_f32[r] : 1));
    }
    if (rc == 0) {
        row->dec_then_add_ns = median_ns(t_sep, o->reps, n);
        row->dec_add_ns = median_ns(t_fused, o->reps, n);
        row->f32_add_ns = median_ns(t_f32, o->reps, n);
        row->fused_ratio = median_ns(t, o->reps, 1) / 1e6;
    }
    free(t2);
    return rc;
}

static int measure(const opts_t *o, const char *spec, bufs_t *b, int64_t *t, row_t *row)
{
    ordo__codec_spec_t c;
    int rc = ordo__codec_parse(spec, &c);
    if (rc < 0) return rc;
    c.scale = 0.25f;
    c.ef = true; /* encode_ef is timed with it on, whatever the codec's default */
    const ordo__codec_ops_t *ops = ordo__codec_ops(c.id);
    int64_t n = o->n, len = 0;
    row->name = spec;
    row->bytes_per_value = ordo__codec_bytes_per_value(&c, n);
    TIME(row->enc_ns, (int)(len = enc_plain(ops, &c, b, n, (uint64_t)r_)));
    memset(b->res, 0, (size_t)n * sizeof(float));
    TIME(row->enc_ef_ns, (int)enc_ef(&c, b, n, (uint64_t)r_));
    if ((len = enc_plain(ops, &c, b, n, 1)) < 0) return (int)len;
    TIME(row->dec_ns, ordo__codec_decode(ops->dtype, b->frame, (size_t)len, n, b->dec));
    return server_sums(o, ops->dtype, b, (size_t)len, t, row);
fail:
    return rc;
}

static int baselines(const opts_t *o, bufs_t *b, int64_t *t, double *memcpy_ns, double *add_ns)
{
    int rc = 0;
    TIME(*memcpy_ns, (memcpy(b->dec, b->x, (size_t)o->n * sizeof(float)), 0));
    TIME(*add_ns, (ordo__vec_add(b->acc, b->x, o->n), 0));
    return 0;
fail:
    return rc;
}

static int parse(int argc, char **argv, opts_t *o)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            printf(
                "usage: ordo-bench codec [--n N (4194304)] [--reps R (7)] [--scalar] [--json]\n"
                "  per codec (%s, %s, %s scaled by 1/4, %s, %s, %s), on N gradient-like floats,\n"
                "  median of R: encode, encode under error feedback and decode, in ns and\n"
                "  millions of values per second, and bytes per value on the wire; the server's\n"
                "  sum of a push per value: decode then ordo__vec_add, and the fused\n"
                "  ordo__codec_decode_add; beside a float32 memcpy and ordo__vec_add of a float32\n"
                "  push. --scalar turns the hand-written vector paths (F16C) off.\n",
                specs[0], specs[1], specs[2], specs[3], specs[4], specs[5]);
            return 1;
        }
        if (!strcmp(a, "--json")) {
            o->json = true;
        } else if (!strcmp(a, "--scalar")) {
            ordo__codec_set_simd(false);
        } else if ((!strcmp(a, "--n") || !strcmp(a, "--reps")) && i + 1 < argc) {
            char *end;
            long long v = strtoll(argv[++i], &end, 10);
            bool n = !strcmp(a, "--n");
            if (*end || v < 1 || v > (n ? (1LL << 30) : 1000)) {
                fprintf(stderr, "ordo-bench codec: bad %s '%s' (try --help)\n", a, argv[i]);
                return 2;
            }
            if (n)
                o->n = v;
            else
                o->reps = (int)v;
        } else {
            fprintf(stderr, "ordo-bench codec: bad option '%s' (try --help)\n", a);
            return 2;
        }
    }
    return 0;
}

/* the 1-minute load average, or -1 (figures from a busy machine say so) */
static double load1(void)
{
    double l = -1;
    FILE *f = fopen("/proc/loadavg", "r");
    if (f) {
        if (fscanf(f, "%lf", &l) != 1) l = -1;
        fclose(f);
    }
    return l;
}

static double mvs(double ns_per_value)
{
    return 1e3 / ns_per_value; /* millions of values per second */
}

int ordo__bench_codec(int argc, char **argv)
{
    opts_t o = {.n = 4194304, .reps = 7};
    int prc = parse(argc, argv, &o);
    if (prc) return prc == 1 ? 0 : prc;
    size_t bytes = (size_t)o.n * sizeof(float);
    bufs_t b = {malloc(bytes),          malloc(bytes), malloc(bytes),
                calloc((size_t)o.n, 4), malloc(bytes), malloc(bytes + 64)};
    int64_t *t = calloc((size_t)o.reps, sizeof *t);
    int status = 1, rc = 0;
    if (!b.x || !b.acc || !b.dec || !b.res || !b.scratch || !b.frame || !t) {
        fprintf(stderr, "ordo-bench codec: out of memory for n = %lld\n", (long long)o.n);
        goto done;
    }
    fill(b.x, o.n);
    memset(b.acc, 0, bytes);
    double cpy_ns = 0, add_ns = 0;
    if ((rc = baselines(&o, &b, t, &cpy_ns, &add_ns)) < 0) goto done;
    if (o.json) {
        printf("{\"codec\":\"memcpy\",\"n\":%lld,\"bytes_per_value\":4,\"ns_per_value\":%.4f,"
               "\"values_per_s\":%.4g,\"load1\":%.2f}\n",
               (long long)o.n, cpy_ns, 1e9 / cpy_ns, load1());
        printf("{\"codec\":\"vec_add\",\"n\":%lld,\"bytes_per_value\":4,\"ns_per_value\":%.4f,"
               "\"values_per_s\":%.4g,\"load1\":%.2f}\n",
               (long long)o.n, add_ns, 1e9 / add_ns, load1());
    } else {
        printf("n = %lld values, load average %.2f; float32 memcpy %.3f ns/value (%.0f M/s), "
               "ordo__vec_add %.3f ns/value (%.0f M/s)\n",
               (long long)o.n, load1(), cpy_ns, mvs(cpy_ns), add_ns, mvs(add_ns));
        printf("%-13s %8s %9s %10s %9s %10s %8s %8s %9s\n", "codec", "B/value", "enc M/s",
               "enc_ef M/s", "dec M/s", "dec+add ns", "fused ns", "f32add ns", "fused/f32");
    }
    for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
        row_t row = {0};
        if ((rc = measure(&o, specs[i], &b, t, &row)) < 0) goto done;
        if (o.json)
            printf("{\"codec\":\"%s\",\"n\":%lld,\"bytes_per_value\":%.4f,\"encode_values_per_s\":"
                   "%.4g,\"encode_ef_values_per_s\":%.4g,\"decode_values_per_s\":%.4g,"
                   "\"decode_then_add_ns_per_value\":%.4f,\"decode_add_ns_per_value\":%.4f,"
                   "\"f32_add_ns_per_value\":%.4f,\"fused_over_f32_add\":%.3f,\"load1\":%.2f}\n",
                   row.name, (long long)o.n, row.bytes_per_value, 1e9 / row.enc_ns,
                   1e9 / row.enc_ef_ns, 1e9 / row.dec_ns, row.dec_then_add_ns, row.dec_add_ns,
                   row.f32_add_ns, row.fused_ratio, load1());
        else
            printf("%-13s %8.3f %9.0f %10.0f %9.0f %10.3f %8.3f %9.3f %8.2fx\n", row.name,
                   row.bytes_per_value, mvs(row.enc_ns), mvs(row.enc_ef_ns), mvs(row.dec_ns),
                   row.dec_then_add_ns, row.dec_add_ns, row.f32_add_ns, row.fused_ratio);
        fflush(stdout);
    }
    status = 0;
done:
    if (rc < 0) fprintf(stderr, "ordo-bench codec: %s\n", ordo__error_text(rc));
    free(b.x), free(b.acc), free(b.dec), free(b.res), free(b.scratch), free(b.frame), free(t);
    return status;
}
