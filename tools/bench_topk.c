/* bench_topk: benchmarks of top-k selection (sort, quickselect, threshold scan) on
 * gradient-like data, and of the server's sparse accumulators (dense vs hash). */
#include "tools/bench_topk.h"

#include "common/clock.h"
#include "core/coo.h"
#include "common/error.h"
#include "server/sparse_agg.h"
#include "core/sparsify.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ==== options and helpers ============================================================= */

typedef struct {
    size_t n;
    double density, overlap;
    int reps, workers;
    bool json;
    const char *dist;
} opts_t;

static int usage(const char *cmd, const char *msg)
{
    fprintf(stderr, "ordo-bench %s: %s (try --help)\n", cmd, msg);
    return 2;
}

/* Parses --key VALUE and --key=VALUE; returns 0, 1 for --help, or 2 on a usage error. */
static int parse(int argc, char **argv, opts_t *o, bool aggregate)
{
    const char *cmd = argc > 0 ? argv[0] : "?";
    for (int i = 1; i < argc; i++) {
        char key[32];
        const char *a = argv[i], *val = NULL, *eq = strchr(a, '=');
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) return 1;
        if (strcmp(a, "--json") == 0) {
            o->json = true;
            continue;
        }
        if (strncmp(a, "--", 2) != 0) return usage(cmd, "unexpected argument");
        size_t kl = eq ? (size_t)(eq - a) : strlen(a);
        if (kl >= sizeof key) return usage(cmd, "unknown option");
        memcpy(key, a, kl);
        key[kl] = '\0';
        if (eq)
            val = eq + 1;
        else if (i + 1 < argc)
            val = argv[++i];
        else
            return usage(cmd, "option needs a value");
        char *end;
        double v = strtod(val, &end);
        bool num_ok = *val && *end == '\0' && isfinite(v);
        if (strcmp(key, "--n") == 0 && num_ok && v >= 1 && v <= 4e9)
            o->n = (size_t)v;
        else if (strcmp(key, "--density") == 0 && num_ok && v > 0 && v <= 1)
            o->density = v;
        else if (strcmp(key, "--reps") == 0 && num_ok && v >= 1 && v <= 1000)
            o->reps = (int)v;
        else if (!aggregate && strcmp(key, "--dist") == 0)
            o->dist = val;
        else if (aggregate && strcmp(key, "--workers") == 0 && num_ok && v >= 1 && v <= 1024)
            o->workers = (int)v;
        else if (aggregate && strcmp(key, "--overlap") == 0 && num_ok && v >= 0 && v <= 1)
            o->overlap = v;
        else {
            fprintf(stderr, "ordo-bench %s: bad option or value '%s' (try --help)\n", cmd, a);
            return 2;
        }
    }
    return 0;
}

static uint64_t rng_next(uint64_t *s) /* splitmix64 */
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static double rng_unit(uint64_t *s) /* uniform in (0, 1) */
{
    return ((double)(rng_next(s) >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

static double rng_normal(uint64_t *s)
{
    return sqrt(-2.0 * log(rng_unit(s))) * cos(6.283185307179586 * rng_unit(s));
}

static double rng_laplace(uint64_t *s, double b)
{
    double u = rng_unit(s) - 0.5;
    return u < 0 ? b * log(1 + 2 * u) : -b * log(1 - 2 * u);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

static double ms_since(int64_t t0)
{
    return (double)(ordo__clock_ns() - t0) / 1e6;
}

/* ==== the full-sort baseline: introsort specialized for uint32 keys =================== */

static void swap_u32(uint32_t *a, size_t i, size_t j)
{
    uint32_t t = a[i];
    a[i] = a[j];
    a[j] = t;
}

static void heap_sift(uint32_t *a, size_t root, size_t n)
{
    for (size_t c; (c = 2 * root + 1) < n; root = c) {
        if (c + 1 < n && a[c + 1] > a[c]) c++;
        if (a[root] >= a[c]) return;
        swap_u32(a, root, c);
    }
}

static void intro_rec(uint32_t *a, size_t n, int depth)
{
    while (n > 24) {
        if (depth-- == 0) {
            for (size_t i = n / 2; i-- > 0;)
                heap_sift(a, i, n);
            for (size_t e = n; e-- > 1;) {
                swap_u32(a, 0, e);
                heap_sift(a, 0, e);
            }
            return;
        }
        size_t mid = n / 2;
        if (a[mid] < a[0]) swap_u32(a, mid, 0);
        if (a[n - 1] < a[0]) swap_u32(a, n - 1, 0);
        if (a[n - 1] < a[mid]) swap_u32(a, n - 1, mid);
        swap_u32(a, 0, mid); /* the median of three leads: Hoare then splits inside [0, n-1) */
        uint32_t p = a[0];
        size_t i = (size_t)-1, j = n;
        for (;;) {
            do
                i++;
            while (a[i] < p);
            do
                j--;
            while (a[j] > p);
            if (i >= j) break;
            swap_u32(a, i, j);
        }
        size_t left = j + 1; /* [0, left) <= p <= [left, n) */
        if (left < n - left) {
            intro_rec(a, left, depth);
            a += left;
            n -= left;
        } else {
            intro_rec(a + left, n - left, depth);
            n = left;
        }
    }
    for (size_t i = 1; i < n; i++) {
        uint32_t v = a[i];
        size_t j = i;
        for (; j > 0 && a[j - 1] > v; j--)
            a[j] = a[j - 1];
        a[j] = v;
    }
}

static void introsort_u32(uint32_t *a, size_t n)
{
    int depth = 0;
    for (size_t m = n; m > 1; m >>= 1)
        depth += 2;
    intro_rec(a, n, depth);
}

/* ==== topk ============================================================================ */

static const char *const dists[] = {"gaussian", "laplace", "layered", "sparse"};

/* Fills x with n gradient-like values: gaussian N(0, 0.01^2); laplace (heavy-tailed,
 * b = 0.01); layered (40 consecutive "layers" of random sizes, each gaussian with a scale
 * drawn log-uniformly in [1e-5, 1e-1]); sparse (50% exact zeros, 40% tiny N(0, 1e-6^2),
 * 10% laplace b = 0.01). */
static void fill(const char *dist, float *x, size_t n, uint64_t seed)
{
    uint64_t s = seed;
    if (strcmp(dist, "gaussian") == 0) {
        for (size_t i = 0; i < n; i++)
            x[i] = (float)(0.01 * rng_normal(&s));
    } else if (strcmp(dist, "laplace") == 0) {
        for (size_t i = 0; i < n; i++)
            x[i] = (float)rng_laplace(&s, 0.01);
    } else if (strcmp(dist, "layered") == 0) {
        size_t i = 0;
        while (i < n) {
            size_t len = (size_t)(rng_unit(&s) * 2.0 * (double)n / 40.0) + 1;
            double scale = pow(10.0, -5.0 + 4.0 * rng_unit(&s));
            for (size_t e = i + len < n ? i + len : n; i < e; i++)
                x[i] = (float)(scale * rng_normal(&s));
        }
    } else {
        for (size_t i = 0; i < n; i++) {
            double u = rng_unit(&s);
            x[i] =
                u < 0.5 ? 0.0f : (float)(u < 0.9 ? 1e-6 * rng_normal(&s) : rng_laplace(&s, 0.01));
        }
    }
}

typedef struct {
    double sort_ms, qsel_ms, scan_ms, sort_thr_ms, qsel_thr_ms;
    size_t selected;
} topk_row_t;

/* Times the three ways to the top-k entries (COO of the k largest magnitudes):
 *   sort:        magnitude copy, introsort, k-th largest read off, then the take pass
 *   quickselect: ordo__sparsify_topk = magnitude copy, Floyd-Rivest, then the take pass
 *   scan:        the take pass alone, with the threshold known (Ok-Topk's reuse)
 * The take pass is ordo__sparsify_scan; *_thr_ms are the parts before it. */
static int topk_one(const opts_t *o, const char *dist, topk_row_t *row)
{
    int rc = ORDO_ERR_NOMEM;
    size_t n = o->n, k = ordo__sparsify_k_for(n, o->density), cap = 2 * k + 1024;
    float *x = malloc(n * sizeof *x);
    uint32_t *m = malloc(n * sizeof *m);
    ordo__coo_entry_t *out = malloc(cap * sizeof *out);
    double *t = calloc(5 * (size_t)o->reps, sizeof(double));
    if (!x || !m || !out || !t) {
        fprintf(stderr, "ordo-bench topk: out of memory for n = %zu\n", n);
        goto done;
    }
    double *t_sort = t, *t_qsel = t + o->reps, *t_scan = t + 2 * o->reps;
    double *t_sort_thr = t + 3 * o->reps, *t_qsel_thr = t + 4 * o->reps;
    fill(dist, x, n, 42);
    memset(out, 0, cap * sizeof *out);
    memset(m, 0, n * sizeof *m);
    for (int r = 0; r < o->reps; r++) {
        int64_t t0 = ordo__clock_ns();
        if ((rc = ordo__sparsify_magnitudes(x, n, m)) < 0) goto done;
        introsort_u32(m, n);
        float thr_sort;
        memcpy(&thr_sort, &m[n - k], 4);
        t_sort_thr[r] = ms_since(t0);
        size_t c_sort = ordo__sparsify_scan(x, n, thr_sort, out, cap);
        t_sort[r] = ms_since(t0);

        t0 = ordo__clock_ns();
        uint32_t thr_bits;
        if ((rc = ordo__sparsify_magnitudes(x, n, m)) < 0) goto done;
        ordo__sparsify_select_u32(m, n, n - k);
        thr_bits = m[n - k];
        t_qsel_thr[r] = ms_since(t0);
        float thr;
        t0 = ordo__clock_ns();
        if ((rc = ordo__sparsify_topk(x, n, k, m, out, &thr)) < 0) goto done;
        t_qsel[r] = ms_since(t0);

        t0 = ordo__clock_ns();
        row->selected = ordo__sparsify_scan(x, n, thr, out, cap);
        t_scan[r] = ms_since(t0);
        if (thr != thr_sort || memcmp(&thr, &thr_bits, 4) != 0 || c_sort != row->selected) {
            fprintf(stderr, "ordo-bench topk: %s: sort and quickselect disagree\n", dist);
            rc = ORDO_ERR_INVAL;
            goto done;
        }
    }
    row->sort_ms = median(t_sort, o->reps);
    row->qsel_ms = median(t_qsel, o->reps);
    row->scan_ms = median(t_scan, o->reps);
    row->sort_thr_ms = median(t_sort_thr, o->reps);
    row->qsel_thr_ms = median(t_qsel_thr, o->reps);
    rc = 0;
done:
    free(x);
    free(m);
    free(out);
    free(t);
    return rc;
}

int ordo__bench_topk(int argc, char **argv)
{
    opts_t o = {.n = 25000000, .density = 0.01, .reps = 5};
    int prc = parse(argc, argv, &o, false);
    if (prc == 1) {
        printf("usage: ordo-bench topk [--n N] [--density D] [--reps R] [--dist NAME] [--json]\n"
               "  selects the k = density * N largest magnitudes of N floats as COO entries three\n"
               "  ways, median of R runs: full sort of a magnitude copy (introsort) then a take\n"
               "  pass; Floyd-Rivest quickselect on a magnitude copy then the take pass; and\n"
               "  the take pass alone with the threshold known (the threshold scan).\n"
               "  qsel_thr/sort_thr: the parts before the take pass (threshold only).\n"
               "  distributions: gaussian laplace layered sparse (default: all)\n");
        return 0;
    }
    if (prc) return prc;
    bool any = false;
    for (size_t d = 0; d < sizeof dists / sizeof *dists; d++)
        any |= !o.dist || strcmp(o.dist, dists[d]) == 0;
    if (!any) return usage(argv[0], "unknown --dist (gaussian|laplace|layered|sparse)");
    if (!o.json)
        printf("%-9s %9s %7s %9s %8s %8s %9s %9s %10s %8s\n", "dist", "n", "k", "sort_ms",
               "qsel_ms", "scan_ms", "qsel/scan", "sort/scan", "(qsel_thr", "sort_thr)");
    for (size_t d = 0; d < sizeof dists / sizeof *dists; d++) {
        if (o.dist && strcmp(o.dist, dists[d]) != 0) continue;
        topk_row_t row = {0};
        if (topk_one(&o, dists[d], &row) < 0) return 1;
        size_t k = ordo__sparsify_k_for(o.n, o.density);
        if (o.json)
            printf("{\"dist\":\"%s\",\"n\":%zu,\"k\":%zu,\"sort_ms\":%.3f,"
                   "\"quickselect_ms\":%.3f,\"scan_ms\":%.3f}\n",
                   dists[d], o.n, k, row.sort_ms, row.qsel_ms, row.scan_ms);
        else
            printf("%-9s %9zu %7zu %9.1f %8.1f %8.2f %8.1fx %8.1fx %10.1f %8.1f\n", dists[d], o.n,
                   k, row.sort_ms, row.qsel_ms, row.scan_ms, row.qsel_ms / row.scan_ms,
                   row.sort_ms / row.scan_ms, row.qsel_thr_ms, row.sort_thr_ms);
        fflush(stdout);
    }
    return 0;
}

/* ==== aggregate ======================================================================= */

/* Makes W sorted pushes of k entries each over [0, n): a share `overlap` of every push is a
 * common index set (workers' top-k overlap in practice), the rest drawn per worker. */
static int make_pushes(const opts_t *o, size_t k, uint8_t **bufs, size_t *lens)
{
    size_t n = o->n, common = (size_t)(o->overlap * (double)k);
    uint8_t *mark = calloc(n, 1);
    ordo__coo_entry_t *e = malloc(k * sizeof *e);
    if (!mark || !e) goto fail;
    uint64_t s = 7;
    for (size_t c = 0; c < common;) {
        size_t i = (size_t)(rng_next(&s) % n);
        if (!mark[i]) mark[i] = 1, c++;
    }
    for (int w = 0; w < o->workers; w++) {
        for (size_t c = common; c < k;) {
            size_t i = (size_t)(rng_next(&s) % n);
            if (!mark[i]) mark[i] = 2, c++;
        }
        size_t c = 0;
        for (size_t i = 0; i < n; i++) {
            if (!mark[i]) continue;
            e[c++] = (ordo__coo_entry_t){(uint32_t)i, (float)(0.01 * rng_normal(&s))};
            if (mark[i] == 2) mark[i] = 0;
        }
        bufs[w] = malloc(ordo_coo_size(c) + 1);
        if (!bufs[w]) goto fail;
        ordo__coo_encode(e, c, bufs[w]);
        lens[w] = ordo_coo_size(c);
    }
    free(mark);
    free(e);
    return 0;
fail:
    free(mark);
    free(e);
    return ORDO_ERR_NOMEM;
}

static int agg_time(const opts_t *o, ordo__sparse_agg_kind_t kind, uint8_t **bufs, size_t *lens,
                    double *ms, size_t *touched)
{
    ordo__sparse_agg_t *agg = NULL;
    double *t = calloc((size_t)o->reps + 1, sizeof *t);
    int rc =
        t ? ordo__sparse_agg_new(&agg, 0, (uint32_t)o->n, o->workers, kind, 1000000) : ORDO_ERR_NOMEM;
    if (rc < 0) goto done;
    for (int r = 0; r <= o->reps; r++) { /* run 0 warms the memory up */
        int64_t t0 = ordo__clock_ns();
        for (int w = 0; w < o->workers; w++)
            if ((rc = ordo__sparse_agg_push_coo(agg, w, bufs[w], lens[w])) < 0) goto done;
        *touched = ordo__sparse_agg_touched(agg);
        if ((rc = ordo__sparse_agg_select_threshold(agg, 0.02f)) < 0) goto done;
        ordo__sparse_agg_next(agg);
        t[r] = ms_since(t0);
    }
    *ms = median(t + 1, o->reps);
done:
    ordo__sparse_agg_destroy(&agg);
    free(t);
    return rc;
}

int ordo__bench_aggregate(int argc, char **argv)
{
    opts_t o = {.n = 25000000, .density = 0.01, .reps = 5, .workers = 8, .overlap = 0.5};
    int prc = parse(argc, argv, &o, true);
    if (prc == 1) {
        printf("usage: ordo-bench aggregate [--n N] [--density D] [--workers W] [--overlap F]\n"
               "                            [--reps R] [--json]\n"
               "  times one server iteration on a region of N indices: W COO pushes of\n"
               "  k = density * N entries (a share F common to all workers) are validated and\n"
               "  summed, gathered in index order, selected by a threshold, and cleared;\n"
               "  dense accumulator (float per index + touched bitmap) vs hash table.\n");
        return 0;
    }
    if (prc) return prc;
    if (o.n > UINT32_MAX) return usage(argv[0], "--n must be below 2^32");
    size_t k = ordo__sparsify_k_for(o.n, o.density);
    int rc = 1;
    uint8_t **bufs = calloc((size_t)o.workers, sizeof *bufs);
    size_t *lens = calloc((size_t)o.workers, sizeof *lens);
    if (!bufs || !lens || make_pushes(&o, k, bufs, lens) < 0) {
        fprintf(stderr, "ordo-bench aggregate: out of memory\n");
        goto done;
    }
    static const char *const names[] = {"dense", "hash"};
    double ms[2];
    size_t touched = 0;
    for (int v = 0; v < 2; v++) {
        if (agg_time(&o, (ordo__sparse_agg_kind_t)v, bufs, lens, &ms[v], &touched) < 0) {
            fprintf(stderr, "ordo-bench aggregate: %s\n", ordo__error_text(ORDO_ERR_INVAL));
            goto done;
        }
    }
    if (!o.json)
        printf("%-8s %10s %8s %8s %9s %10s %9s\n", "variant", "n", "k", "workers", "touched", "ms",
               "vs dense");
    for (int v = 0; v < 2; v++) {
        if (o.json)
            printf("{\"variant\":\"%s\",\"n\":%zu,\"k\":%zu,\"workers\":%d,\"touched\":%zu,"
                   "\"ms\":%.3f}\n",
                   names[v], o.n, k, o.workers, touched, ms[v]);
        else
            printf("%-8s %10zu %8zu %8d %9zu %10.2f %8.2fx\n", names[v], o.n, k, o.workers, touched,
                   ms[v], ms[v] / ms[0]);
    }
    rc = 0;
done:
    for (int w = 0; bufs && w < o.workers; w++)
        free(bufs[w]);
    free(bufs);
    free(lens);
    return rc;
}
