/* runlog: metrics.jsonl and summary.json of a run. The summary is kept as the records come,
 * in memory that does not grow with the iterations: streaming histograms for the
 * distributions, sums for the means, and a window of the iterations still being reported
 * for the straggler effect. metrics.jsonl is the whole record. */
#include "scheduler/runlog.h"
#include "common/durable.h"
#include "common/error.h"
#include "common/histo.h"
#include "common/log.h"
#include "scheduler/runlog_sparse.h"
#include "scheduler/runlog_sync.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* an iteration whose workers are still reporting: what its straggler effect needs */
typedef struct {
    int64_t iter; /* -1: free */
    int n;
    int64_t min_pd, max_pd, min_start, max_end;
} open_iter_t;

/* iterations reported at once; a record more than this many iterations behind the newest
 * one of its slot is left out of the straggler effect (asp runs can drift that far) */
#define OPEN_ITERS 1024

/* the figures of one set of records: all of them, or those after warm-up */
typedef struct {
    ordo__histo_t step, compute, wait;
    int64_t n, eff_n, samples, t0, t1, strag_n, intra_n;
    double eff_sum, bytes_sum, strag_sum, intra_red, intra_gat;
} totals_t;

struct ordo__runlog {
    char dir[ORDO_CONF_PATH];
    ordo__conf_t conf;
    int n_workers;
    FILE *metrics;
    /* metrics.jsonl's lines not written yet (a full disk, a failed write): written first at the
     * next record, so none is lost and none torn (flush_metrics) */
    char *pending;
    size_t n_pending, cap_pending;
    int64_t lines_pending, lines_dropped;
    bool failing;
    int64_t max_iter;
    totals_t all, warm; /* warm: iterations >= conf.warmup */
    open_iter_t open[OPEN_ITERS];
    ordo__runlog_sparse_t *sparse;
    ordo__runlog_sync_t sync;
    json_t **finals; /* per worker */
    json_t *sections; /* members the summary carries as given (ordo__runlog_set_section) */
};

static void totals_init(totals_t *t)
{
    memset(t, 0, sizeof *t);
    ordo__histo_init(&t->step);
    ordo__histo_init(&t->compute);
    ordo__histo_init(&t->wait);
    t->t0 = INT64_MAX;
}

static int mkdirs(const char *path)
{
    char tmp[ORDO_CONF_PATH];
    snprintf(tmp, sizeof tmp, "%s", path);
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        if (mkdir(tmp, 0755) != 0 && errno != EEXIST) return -1;
        *p = '/';
    }
    return (mkdir(tmp, 0755) != 0 && errno != EEXIST) ? -1 : 0;
}

static int make(const char *dir, const ordo__conf_t *conf, int n_workers, const char *mode,
                ordo__runlog_t **out)
{
    if (mkdirs(dir) != 0)
        return ordo__error_set(ORDO_ERR_IO, "cannot create run folder %s: %s", dir, strerror(errno));
    ordo__runlog_t *r = calloc(1, sizeof *r);
    if (!r) return ORDO_ERR_NOMEM;
    snprintf(r->dir, sizeof r->dir, "%s", dir);
    r->conf = *conf;
    r->n_workers = n_workers;
    r->finals = calloc((size_t)n_workers, sizeof *r->finals);
    r->max_iter = -1;
    totals_init(&r->all);
    totals_init(&r->warm);
    for (int i = 0; i < OPEN_ITERS; i++)
        r->open[i].iter = -1;
    ordo__runlog_sync_init(&r->sync);
    char path[ORDO_CONF_PATH + 32];
    snprintf(path, sizeof path, "%s/metrics.jsonl", dir);
    r->metrics = fopen(path, mode);
    if (!r->metrics || !r->finals || ordo__runlog_sparse_new(n_workers, &r->sparse) != 0) {
        int rc = ordo__error_set(ORDO_ERR_IO, "cannot open %s: %s", path, strerror(errno));
        ordo__runlog_destroy(&r);
        return rc;
    }
    *out = r;
    return 0;
}

int ordo__runlog_new(const char *dir, const ordo__conf_t *conf, int n_workers, ordo__runlog_t **out)
{
    return make(dir, conf, n_workers, "w", out);
}

static void record(ordo__runlog_t *r, const ordo__iter_stats_t *s);
static void flush_metrics(ordo__runlog_t *r);

int ordo__runlog_continue(const char *dir, const ordo__conf_t *conf, int n_workers,
                         ordo_runlog_seen_fn seen, void *ctx, ordo__runlog_t **out)
{
    char path[ORDO_CONF_PATH + 32];
    snprintf(path, sizeof path, "%s/metrics.jsonl", dir);
    FILE *f = fopen(path, "r");
    if (!f)
        return ordo__error_set(ORDO_ERR_IO, "cannot read the run's %s: %s", path, strerror(errno));
    ordo__runlog_t *r = NULL;
    int rc = make(dir, conf, n_workers, "a", &r);
    char line[8192];
    int64_t n = 0, skipped = 0;
    while (!rc && fgets(line, sizeof line, f)) {
        ordo__iter_stats_t st;
        if (ordo__runlog_parse_stats(line, n_workers, &st) != 0) { /* a torn last line */
            skipped++;
            continue;
        }
        record(r, &st);
        seen(ctx, st.worker, st.iter);
        n++;
    }
    fclose(f);
    if (rc) return rc;
    ORDO_INFO("run log: %lld records of %s taken up%s", (long long)n, path,
              skipped ? " (lines it could not read left out)" : "");
    *out = r;
    return 0;
}

void ordo__runlog_destroy(ordo__runlog_t **rp)
{
    ordo__runlog_t *r = *rp;
    if (!r) return;
    if (r->metrics) flush_metrics(r);
    if (r->lines_pending || r->lines_dropped)
        ORDO_ERROR("%s/metrics.jsonl: %lld records could not be written (the disk stayed full)",
                   r->dir, (long long)(r->lines_pending + r->lines_dropped));
    free(r->pending);
    if (r->metrics) fclose(r->metrics);
    json_decref(r->sections);
    if (r->finals)
        for (int i = 0; i < r->n_workers; i++)
            json_decref(r->finals[i]);
    free(r->finals);
    ordo__runlog_sparse_destroy(&r->sparse);
    free(r);
    *rp = NULL;
}

static double num_or_nan(json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

int ordo__runlog_parse_stats(const char *text, int n_workers, ordo__iter_stats_t *s)
{
    json_error_t jerr;
    json_t *o = json_loads(text, 0, &jerr);
    if (!o || !json_is_object(o)) {
        json_decref(o);
        return ordo__error_set(ORDO_ERR_PROTO, "STATS: not a JSON object");
    }
    memset(s, 0, sizeof *s);
    json_t *w = json_object_get(o, "worker"), *it = json_object_get(o, "iter");
    int rc = 0;
    if (!json_is_integer(w) || json_integer_value(w) < 0 || json_integer_value(w) >= n_workers ||
        !json_is_integer(it) || json_integer_value(it) < 0) {
        rc = ordo__error_set(ORDO_ERR_PROTO, "STATS: bad worker or iter");
        goto done;
    }
    s->worker = (int)json_integer_value(w);
    s->iter = json_integer_value(it);
    s->step_ms = num_or_nan(o, "step_ms");
    s->wait_ms = num_or_nan(o, "wait_ms");
    s->compute_ms = num_or_nan(o, "compute_ms");
    s->efficiency = num_or_nan(o, "efficiency");
    s->loss = num_or_nan(o, "loss");
    double bp = num_or_nan(o, "bytes_push"), bl = num_or_nan(o, "bytes_pull");
    double sm = num_or_nan(o, "samples");
    double ts = num_or_nan(o, "t_start_ns"), tp = num_or_nan(o, "t_push_done_ns");
    double te = num_or_nan(o, "t_end_ns");
    if (!(s->step_ms >= 0) || !(s->wait_ms >= 0) || !(s->compute_ms >= 0) || !(bp >= 0) ||
        !(bl >= 0) || !(sm >= 0) || !(ts >= 0) || !(tp >= ts) || !(te >= ts)) {
        rc = ordo__error_set(ORDO_ERR_PROTO, "STATS: missing or negative figures");
        goto done;
    }
    s->bytes_push = (int64_t)bp;
    s->bytes_pull = (int64_t)bl;
    s->samples = (int)sm;
    s->t_start_ns = (int64_t)ts;
    s->t_push_done_ns = (int64_t)tp;
    s->t_end_ns = (int64_t)te;
    /* keep further members (sparse counters, per-op figures) for metrics.jsonl */
    json_t *extra = json_object();
    const char *k;
    json_t *v;
    static const char *known[] = {
        "worker",     "iter", "step_ms", "wait_ms",    "compute_ms",     "bytes_push", "bytes_pull",
        "efficiency", "loss", "samples", "t_start_ns", "t_push_done_ns", "t_end_ns",   NULL};
    json_object_foreach(o, k, v)
    {
        int skip = 0;
        for (int i = 0; known[i]; i++)
            skip |= !strcmp(k, known[i]);
        if (!skip && (json_is_number(v) || json_is_string(v) || json_is_array(v)))
            json_object_set(extra, k, v);
    }
    char *et = json_dumps(extra, JSON_COMPACT);
    json_decref(extra);
    if (et && strlen(et) > 2 && strlen(et) - 2 < sizeof s->extra)
        snprintf(s->extra, sizeof s->extra, "%.*s", (int)strlen(et) - 2, et + 1);
    free(et);
done:
    json_decref(o);
    return rc;
}

/* close_iter counts open iteration o's straggler effect (the longest wait of a worker for
 * the last one to finish pushing, over the iteration time) into the totals, when every
 * worker reported it */
static void close_iter(const ordo__runlog_t *r, const open_iter_t *o, totals_t *all, totals_t *warm)
{
    if (o->iter < 0 || o->n != r->n_workers || o->max_end <= o->min_start) return;
    double e = (double)(o->max_pd - o->min_pd) / (double)(o->max_end - o->min_start);
    all->strag_sum += e;
    all->strag_n++;
    if (o->iter >= r->conf.warmup) {
        warm->strag_sum += e;
        warm->strag_n++;
    }
}

/* the intra-host phases' busy times (client/push_hier.c reports intra_reduce_ms and
 * intra_gather_ms with its stats) */
static void add_intra(totals_t *t, const ordo__iter_stats_t *s)
{
    if (!strstr(s->extra, "intra_reduce_ms")) return;
    char text[sizeof s->extra + 4];
    snprintf(text, sizeof text, "{%s}", s->extra);
    json_t *o = json_loads(text, 0, NULL);
    t->intra_red += json_number_value(json_object_get(o, "intra_reduce_ms"));
    t->intra_gat += json_number_value(json_object_get(o, "intra_gather_ms"));
    t->intra_n++;
    json_decref(o);
}

static void add_totals(totals_t *t, const ordo__iter_stats_t *s)
{
    ordo__histo_add(&t->step, s->step_ms);
    ordo__histo_add(&t->compute, s->compute_ms);
    ordo__histo_add(&t->wait, s->wait_ms);
    t->n++;
    if (!isnan(s->efficiency)) {
        t->eff_sum += s->efficiency;
        t->eff_n++;
    }
    t->bytes_sum += (double)(s->bytes_push + s->bytes_pull);
    t->samples += s->samples;
    if (s->t_start_ns < t->t0) t->t0 = s->t_start_ns;
    if (s->t_end_ns > t->t1) t->t1 = s->t_end_ns;
    add_intra(t, s);
}

/* add_open counts s into its iteration's slot, closing the older iteration it replaces */
static void add_open(ordo__runlog_t *r, const ordo__iter_stats_t *s)
{
    open_iter_t *o = &r->open[s->iter % OPEN_ITERS];
    if (o->iter > s->iter) return; /* too late: that iteration's slot was reused */
    if (o->iter != s->iter) {
        close_iter(r, o, &r->all, &r->warm);
        *o = (open_iter_t){.iter = s->iter, .min_pd = INT64_MAX, .min_start = INT64_MAX};
    }
    o->n++;
    if (s->t_push_done_ns > o->max_pd) o->max_pd = s->t_push_done_ns;
    if (s->t_push_done_ns < o->min_pd) o->min_pd = s->t_push_done_ns;
    if (s->t_start_ns < o->min_start) o->min_start = s->t_start_ns;
    if (s->t_end_ns > o->max_end) o->max_end = s->t_end_ns;
}

/* record counts s into the summary's figures */
static void record(ordo__runlog_t *r, const ordo__iter_stats_t *s)
{
    if (s->iter > r->max_iter) r->max_iter = s->iter;
    add_totals(&r->all, s);
    if (s->iter >= r->conf.warmup) add_totals(&r->warm, s);
    add_open(r, s);
    ordo__runlog_sparse_add(r->sparse, s);
    ordo__runlog_sync_add(&r->sync, s, &r->conf);
}

/* the most metrics.jsonl bytes kept in memory while the file cannot be written */
#define PENDING_MAX ((size_t)64 << 20)

/* flush_metrics appends the pending lines to metrics.jsonl in one write; a write that fails
 * or stops short is cut back off the file (no torn line) and the lines stay pending */
static void flush_metrics(ordo__runlog_t *r)
{
    if (!r->n_pending) return;
    int fd = fileno(r->metrics);
    off_t end = lseek(fd, 0, SEEK_END);
    ssize_t n = end < 0 ? -1 : write(fd, r->pending, r->n_pending);
    if (n == (ssize_t)r->n_pending) {
        if (r->failing)
            ORDO_INFO("%s/metrics.jsonl: wrote the %lld records kept back while it could not be "
                      "written", r->dir, (long long)r->lines_pending);
        r->failing = false;
        r->n_pending = 0;
        r->lines_pending = 0;
        return;
    }
    const char *why = n < 0 ? strerror(errno) : "the write stopped short (a full disk?)";
    if (n > 0 && ftruncate(fd, end) != 0)
        ORDO_ERROR("%s/metrics.jsonl: cannot cut a torn line off: %s", r->dir, strerror(errno));
    if (!r->failing)
        ORDO_WARN("cannot write %s/metrics.jsonl: %s; its records are kept in memory (up to %zu "
                  "MiB) and written once it can be", r->dir, why, PENDING_MAX >> 20);
    r->failing = true;
}

int ordo__runlog_add(ordo__runlog_t *r, const ordo__iter_stats_t *s)
{
    record(r, s);
    char line[2048];
    int len = snprintf(line, sizeof line,
                       "{\"worker\":%d,\"iter\":%lld,\"step_ms\":%.4f,\"wait_ms\":%.4f,"
                       "\"compute_ms\":%.4f,\"bytes_push\":%lld,\"bytes_pull\":%lld,"
                       "\"efficiency\":",
                       s->worker, (long long)s->iter, s->step_ms, s->wait_ms, s->compute_ms,
                       (long long)s->bytes_push, (long long)s->bytes_pull);
#define PUT(...) len += snprintf(line + len, sizeof line - (size_t)len, __VA_ARGS__)
    if (isnan(s->efficiency))
        PUT("null");
    else
        PUT("%.4f", s->efficiency);
    if (!isnan(s->loss)) PUT(",\"loss\":%.6f", s->loss);
    if (s->extra[0]) PUT(",%s", s->extra);
    if (r->conf.fault_scheduler == ORDO_SCHED_RESTART) /* what a new scheduler takes up */
        PUT(",\"samples\":%d,\"t_start_ns\":%lld,\"t_push_done_ns\":%lld,\"t_end_ns\":%lld",
            s->samples, (long long)s->t_start_ns, (long long)s->t_push_done_ns,
            (long long)s->t_end_ns);
    PUT("}\n");
#undef PUT
    if (len >= (int)sizeof line) return ordo__error_set(ORDO_ERR_RANGE, "a metrics record "
                                                        "longer than %zu bytes", sizeof line);
    if (r->n_pending + (size_t)len > r->cap_pending) {
        size_t cap = r->cap_pending ? 2 * r->cap_pending : 4096;
        while (cap < r->n_pending + (size_t)len)
            cap *= 2;
        char *p = cap <= PENDING_MAX ? realloc(r->pending, cap) : NULL;
        if (!p) { /* past the bound: this record is lost, said once at the end */
            r->lines_dropped++;
            flush_metrics(r);
            return 0;
        }
        r->pending = p;
        r->cap_pending = cap;
    }
    memcpy(r->pending + r->n_pending, line, (size_t)len);
    r->n_pending += (size_t)len;
    r->lines_pending++;
    return 0;
}

void ordo__runlog_flush(ordo__runlog_t *r)
{
    if (r && r->metrics) flush_metrics(r);
}

int ordo__runlog_final(ordo__runlog_t *r, int worker, const char *text)
{
    if (worker < 0 || worker >= r->n_workers) return ORDO_ERR_INVAL;
    json_t *o = json_loads(text, 0, NULL);
    if (!json_is_object(o)) {
        json_decref(o);
        return ordo__error_set(ORDO_ERR_PROTO, "DONE: body is not a JSON object");
    }
    json_decref(r->finals[worker]);
    r->finals[worker] = o;
    return 0;
}

static json_t *num(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

/* {"mean", "p50", "p95"} of a histogram (the quantiles within ORDO_HISTO_REL_ERR) */
static json_t *distribution(const ordo__histo_t *h)
{
    json_t *o = json_object();
    json_object_set_new(o, "mean", num(ordo__histo_mean(h)));
    json_object_set_new(o, "p50", num(ordo__histo_quantile(h, 0.5)));
    json_object_set_new(o, "p95", num(ordo__histo_quantile(h, 0.95)));
    return o;
}

int ordo__runlog_set_section(ordo__runlog_t *r, const char *name, json_t *value)
{
    if (!r->sections && !(r->sections = json_object())) {
        json_decref(value);
        return ORDO_ERR_NOMEM;
    }
    return json_object_set_new(r->sections, name, value) == 0 ? 0 : ORDO_ERR_NOMEM;
}

/* how long the end of a run waits for room on a full disk (fault.disk_full = retry) */
#define SUMMARY_WAIT_MS 60000

/* write_summary writes root as RUN/summary.json, durably: a full disk leaves no half-written
 * summary (common/durable.h); a failed write is reported naming the path */
static int write_summary(ordo__runlog_t *r, json_t *root)
{
    char path[ORDO_CONF_PATH + 32];
    snprintf(path, sizeof path, "%s/summary.json", r->dir);
    ordo__durable_t *d;
    int rc = ordo__durable_open(path, &d);
    if (!rc) {
        (void)json_dumpf(root, ordo__durable_file(d), JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        rc = ordo__durable_commit(&d, false, NULL);
    }
    return rc;
}

int ordo__runlog_write_summary(ordo__runlog_t *r, char **text)
{
    int64_t max_iter = r->max_iter;
    int warm = r->conf.warmup;
    bool all = warm > max_iter; /* too short a run to leave anything out */
    if (all) warm = 0;
    /* the iterations still open are counted into copies: more records may come */
    totals_t ta = r->all, tw = r->warm;
    for (int i = 0; i < OPEN_ITERS; i++)
        close_iter(r, &r->open[i], &ta, &tw);
    const totals_t *t = all ? &ta : &tw;
    int64_t ns = t->n;

    json_t *root = json_object();
    char *conf_json = ordo__conf_to_json(&r->conf);
    json_object_set_new(root, "conf", json_loads(conf_json, 0, NULL));
    free(conf_json);
    json_object_set_new(root, "workers", json_integer(r->n_workers));
    json_object_set_new(root, "iterations", json_integer(max_iter + 1));
    json_object_set_new(root, "warmup", json_integer(warm));
    double secs = t->t1 > t->t0 ? (double)(t->t1 - t->t0) / 1e9 : NAN;
    json_object_set_new(root, "throughput_samples_per_s", num((double)t->samples / secs));
    json_object_set_new(root, "step_ms", distribution(&t->step));
    json_object_set_new(root, "compute_ms", distribution(&t->compute));
    json_object_set_new(root, "wait_ms", distribution(&t->wait));
    json_object_set_new(root, "straggler_effect",
                        num(t->strag_n ? t->strag_sum / (double)t->strag_n : NAN));
    json_object_set_new(root, "efficiency_mean",
                        num(t->eff_n ? t->eff_sum / (double)t->eff_n : NAN));
    json_object_set_new(root, "bytes_per_iter", num(ns ? t->bytes_sum / (double)ns : NAN));
    /* every worker's bytes to and from the servers in one iteration, together */
    json_object_set_new(root, "network_bytes_per_iter",
                        num(ns ? t->bytes_sum / (double)ns * r->n_workers : NAN));
    if (t->intra_n)
        json_object_set_new(root, "intra_ms",
                            json_pack("{s:f,s:f}", "reduce", t->intra_red / (double)t->intra_n,
                                      "gather", t->intra_gat / (double)t->intra_n));
    json_t *sparse = ordo__runlog_sparse_section(r->sparse);
    if (sparse) json_object_set_new(root, "sparse", sparse);
    ordo__runlog_sync_write(root, &r->sync, &r->conf);
    if (r->sections) json_object_update(root, r->sections);
    /* the step model's prediction (scheduler/runplan_step.h) against the measured median */
    json_t *pred = json_object_get(json_object_get(root, "order_step"), "predicted_step_ms");
    if (json_is_number(pred) && ns > 0) {
        json_t *os = json_object_get(root, "order_step");
        double p50 = ordo__histo_quantile(&t->step, 0.5);
        json_object_set_new(os, "measured_step_ms", num(p50));
        json_object_set_new(os, "measured_over_predicted", num(p50 / json_number_value(pred)));
    }
    /* training results: the mean over workers of what they reported */
    static const char *finals[] = {"final_loss", "test_accuracy", NULL};
    for (int f = 0; finals[f]; f++) {
        double sum = 0;
        int cnt = 0;
        for (int w = 0; w < r->n_workers; w++) {
            json_t *v = r->finals[w] ? json_object_get(r->finals[w], finals[f]) : NULL;
            if (json_is_number(v)) {
                sum += json_number_value(v);
                cnt++;
            }
        }
        if (cnt) json_object_set_new(root, finals[f], json_real(sum / cnt));
    }
    flush_metrics(r);
    int rc = write_summary(r, root);
    /* [fault] disk_full = retry: the end of the run waits a while for room (a disk that filled
     * up for a moment), for the summary and the metrics records kept back */
    for (int waited = 0; (rc || r->n_pending) && r->conf.disk_full == ORDO_DISK_FULL_RETRY &&
                         waited < SUMMARY_WAIT_MS;
         waited += 250) {
        if (waited == 0)
            ORDO_WARN("%s: waiting up to %d s for room for summary.json and %lld metrics records "
                      "(fault.disk_full = retry)", r->dir, SUMMARY_WAIT_MS / 1000,
                      (long long)r->lines_pending);
        struct timespec nap = {.tv_sec = 0, .tv_nsec = 250000000};
        nanosleep(&nap, NULL);
        flush_metrics(r);
        if (rc) rc = write_summary(r, root);
    }
    if (text) *text = json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(root);
    return rc;
}

