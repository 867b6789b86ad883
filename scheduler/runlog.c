/* runlog: metrics.jsonl and summary.json of a run. */
#include "scheduler/runlog.h"
#include "common/error.h"
#include "common/log.h"
#include "scheduler/runlog_sparse.h"
#include "scheduler/runlog_sync.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct ordo_runlog {
    char dir[ORDO_CONF_PATH];
    ordo_conf_t conf;
    int n_workers;
    FILE *metrics;
    ordo_iter_stats_t *recs;
    int n, cap;
    json_t **finals; /* per worker */
    json_t *sections; /* members the summary carries as given (ordo_runlog_set_section) */
};

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

int ordo_runlog_new(const char *dir, const ordo_conf_t *conf, int n_workers, ordo_runlog_t **out)
{
    if (mkdirs(dir) != 0)
        return ordo_error_set(ORDO_ERR_IO, "cannot create run folder %s: %s", dir, strerror(errno));
    ordo_runlog_t *r = calloc(1, sizeof *r);
    if (!r) return ORDO_ERR_NOMEM;
    snprintf(r->dir, sizeof r->dir, "%s", dir);
    r->conf = *conf;
    r->n_workers = n_workers;
    r->finals = calloc((size_t)n_workers, sizeof *r->finals);
    char path[ORDO_CONF_PATH + 32];
    snprintf(path, sizeof path, "%s/metrics.jsonl", dir);
    r->metrics = fopen(path, "w");
    if (!r->metrics || !r->finals) {
        int rc = ordo_error_set(ORDO_ERR_IO, "cannot open %s: %s", path, strerror(errno));
        ordo_runlog_destroy(&r);
        return rc;
    }
    *out = r;
    return 0;
}

void ordo_runlog_destroy(ordo_runlog_t **rp)
{
    ordo_runlog_t *r = *rp;
    if (!r) return;
    if (r->metrics) fclose(r->metrics);
    json_decref(r->sections);
    if (r->finals)
        for (int i = 0; i < r->n_workers; i++)
            json_decref(r->finals[i]);
    free(r->finals);
    free(r->recs);
    free(r);
    *rp = NULL;
}

static double num_or_nan(json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

int ordo_runlog_parse_stats(const char *text, int n_workers, ordo_iter_stats_t *s)
{
    json_error_t jerr;
    json_t *o = json_loads(text, 0, &jerr);
    if (!o || !json_is_object(o)) {
        json_decref(o);
        return ordo_error_set(ORDO_ERR_PROTO, "STATS: not a JSON object");
    }
    memset(s, 0, sizeof *s);
    json_t *w = json_object_get(o, "worker"), *it = json_object_get(o, "iter");
    int rc = 0;
    if (!json_is_integer(w) || json_integer_value(w) < 0 || json_integer_value(w) >= n_workers ||
        !json_is_integer(it) || json_integer_value(it) < 0) {
        rc = ordo_error_set(ORDO_ERR_PROTO, "STATS: bad worker or iter");
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
        rc = ordo_error_set(ORDO_ERR_PROTO, "STATS: missing or negative figures");
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

int ordo_runlog_add(ordo_runlog_t *r, const ordo_iter_stats_t *s)
{
    if (r->n == r->cap) {
        int cap = r->cap ? r->cap * 2 : 1024;
        ordo_iter_stats_t *p = realloc(r->recs, sizeof *p * (size_t)cap);
        if (!p) return ORDO_ERR_NOMEM;
        r->recs = p;
        r->cap = cap;
    }
    r->recs[r->n++] = *s;
    fprintf(r->metrics,
            "{\"worker\":%d,\"iter\":%lld,\"step_ms\":%.4f,\"wait_ms\":%.4f,\"compute_ms\":%.4f,"
            "\"bytes_push\":%lld,\"bytes_pull\":%lld,\"efficiency\":",
            s->worker, (long long)s->iter, s->step_ms, s->wait_ms, s->compute_ms,
            (long long)s->bytes_push, (long long)s->bytes_pull);
    if (isnan(s->efficiency))
        fputs("null", r->metrics);
    else
        fprintf(r->metrics, "%.4f", s->efficiency);
    if (!isnan(s->loss)) fprintf(r->metrics, ",\"loss\":%.6f", s->loss);
    if (s->extra[0]) fprintf(r->metrics, ",%s", s->extra);
    fputs("}\n", r->metrics);
    fflush(r->metrics);
    return 0;
}

int ordo_runlog_final(ordo_runlog_t *r, int worker, const char *text)
{
    if (worker < 0 || worker >= r->n_workers) return ORDO_ERR_INVAL;
    json_t *o = json_loads(text, 0, NULL);
    if (!json_is_object(o)) {
        json_decref(o);
        return ordo_error_set(ORDO_ERR_PROTO, "DONE: body is not a JSON object");
    }
    json_decref(r->finals[worker]);
    r->finals[worker] = o;
    return 0;
}

/* the mean per worker and iteration of the intra-host phases' busy times (worker/push_hier.c
 * reports intra_reduce_ms and intra_gather_ms with its stats); NULL when no run had them */
static json_t *intra_summary(const ordo_runlog_t *r, int64_t warm)
{
    double red = 0, gat = 0;
    int n = 0;
    for (int i = 0; i < r->n; i++) {
        const ordo_iter_stats_t *s = &r->recs[i];
        if (s->iter < warm || !strstr(s->extra, "intra_reduce_ms")) continue;
        char text[sizeof s->extra + 4];
        snprintf(text, sizeof text, "{%s}", s->extra);
        json_t *o = json_loads(text, 0, NULL);
        double a = json_number_value(json_object_get(o, "intra_reduce_ms"));
        double b = json_number_value(json_object_get(o, "intra_gather_ms"));
        json_decref(o);
        red += a;
        gat += b;
        n++;
    }
    if (!n) return NULL;
    return json_pack("{s:f,s:f}", "reduce", red / n, "gather", gat / n);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double pct(const double *sorted, int n, double p)
{
    if (n == 0) return NAN;
    double idx = p * (n - 1);
    int lo = (int)floor(idx), hi = (int)ceil(idx);
    return sorted[lo] + (sorted[hi] - sorted[lo]) * (idx - lo);
}

static json_t *num(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

/* {"mean", "p50", "p95"} of n sorted values */
static json_t *distribution(const double *sorted, int n)
{
    double mean = 0;
    for (int i = 0; i < n; i++)
        mean += sorted[i];
    json_t *o = json_object();
    json_object_set_new(o, "mean", num(n ? mean / n : NAN));
    json_object_set_new(o, "p50", num(pct(sorted, n, 0.5)));
    json_object_set_new(o, "p95", num(pct(sorted, n, 0.95)));
    return o;
}

int ordo_runlog_set_section(ordo_runlog_t *r, const char *name, json_t *value)
{
    if (!r->sections && !(r->sections = json_object())) {
        json_decref(value);
        return ORDO_ERR_NOMEM;
    }
    return json_object_set_new(r->sections, name, value) == 0 ? 0 : ORDO_ERR_NOMEM;
}

int ordo_runlog_write_summary(ordo_runlog_t *r, char **text)
{
    int warm = r->conf.warmup;
    int64_t max_iter = -1;
    for (int i = 0; i < r->n; i++)
        if (r->recs[i].iter > max_iter) max_iter = r->recs[i].iter;
    if (warm > max_iter) warm = 0; /* too short a run to leave anything out */
    double *steps = malloc(sizeof *steps * ((size_t)r->n + 1));
    double *computes = malloc(sizeof *computes * ((size_t)r->n + 1));
    double *waits = malloc(sizeof *waits * ((size_t)r->n + 1));
    if (!steps || !computes || !waits) {
        free(steps);
        free(computes);
        free(waits);
        return ORDO_ERR_NOMEM;
    }
    int ns = 0;
    double eff_sum = 0, bytes_sum = 0;
    int eff_n = 0;
    int64_t samples = 0, t0 = INT64_MAX, t1 = 0;
    for (int i = 0; i < r->n; i++) {
        const ordo_iter_stats_t *s = &r->recs[i];
        if (s->iter < warm) continue;
        computes[ns] = s->compute_ms;
        waits[ns] = s->wait_ms;
        steps[ns++] = s->step_ms;
        if (!isnan(s->efficiency)) {
            eff_sum += s->efficiency;
            eff_n++;
        }
        bytes_sum += (double)(s->bytes_push + s->bytes_pull);
        samples += s->samples;
        if (s->t_start_ns < t0) t0 = s->t_start_ns;
        if (s->t_end_ns > t1) t1 = s->t_end_ns;
    }
    qsort(steps, (size_t)ns, sizeof *steps, cmp_double);
    qsort(computes, (size_t)ns, sizeof *computes, cmp_double);
    qsort(waits, (size_t)ns, sizeof *waits, cmp_double);

    /* straggler effect: per iteration, the longest wait of a worker for the last one to
     * finish pushing, over the iteration time; averaged over iterations */
    double strag_sum = 0;
    int strag_n = 0;
    for (int64_t it = warm; it <= max_iter; it++) {
        int64_t last = 0, first_start = INT64_MAX, last_end = 0;
        int cnt = 0;
        for (int i = 0; i < r->n; i++) {
            const ordo_iter_stats_t *s = &r->recs[i];
            if (s->iter != it) continue;
            cnt++;
            if (s->t_push_done_ns > last) last = s->t_push_done_ns;
            if (s->t_start_ns < first_start) first_start = s->t_start_ns;
            if (s->t_end_ns > last_end) last_end = s->t_end_ns;
        }
        if (cnt != r->n_workers || last_end <= first_start) continue;
        int64_t worst = 0;
        for (int i = 0; i < r->n; i++) {
            const ordo_iter_stats_t *s = &r->recs[i];
            if (s->iter == it && last - s->t_push_done_ns > worst) worst = last - s->t_push_done_ns;
        }
        strag_sum += (double)worst / (double)(last_end - first_start);
        strag_n++;
    }

    json_t *root = json_object();
    char *conf_json = ordo_conf_to_json(&r->conf);
    json_object_set_new(root, "conf", json_loads(conf_json, 0, NULL));
    free(conf_json);
    json_object_set_new(root, "workers", json_integer(r->n_workers));
    json_object_set_new(root, "iterations", json_integer(max_iter + 1));
    json_object_set_new(root, "warmup", json_integer(warm));
    double secs = t1 > t0 ? (double)(t1 - t0) / 1e9 : NAN;
    json_object_set_new(root, "throughput_samples_per_s", num((double)samples / secs));
    json_object_set_new(root, "step_ms", distribution(steps, ns));
    json_object_set_new(root, "compute_ms", distribution(computes, ns));
    json_object_set_new(root, "wait_ms", distribution(waits, ns));
    json_object_set_new(root, "straggler_effect", num(strag_n ? strag_sum / strag_n : NAN));
    json_object_set_new(root, "efficiency_mean", num(eff_n ? eff_sum / eff_n : NAN));
    json_object_set_new(root, "bytes_per_iter", num(ns ? bytes_sum / ns : NAN));
    /* every worker's bytes to and from the servers in one iteration, together */
    json_object_set_new(root, "network_bytes_per_iter",
                        num(ns ? bytes_sum / ns * r->n_workers : NAN));
    json_t *intra = intra_summary(r, warm);
    if (intra) json_object_set_new(root, "intra_ms", intra);
    json_t *sparse = ordo_runlog_sparse_summary(r->recs, r->n, r->n_workers);
    if (sparse) json_object_set_new(root, "sparse", sparse);
    ordo_runlog_sync_summary(root, r->recs, r->n, &r->conf);
    if (r->sections) json_object_update(root, r->sections);
    /* the step model's prediction (scheduler/runplan_step.h) against the measured median */
    json_t *pred = json_object_get(json_object_get(root, "order_step"), "predicted_step_ms");
    if (json_is_number(pred) && ns > 0) {
        json_t *os = json_object_get(root, "order_step");
        double p50 = pct(steps, ns, 0.5);
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
    free(steps);
    free(computes);
    free(waits);
    char path[ORDO_CONF_PATH + 32];
    snprintf(path, sizeof path, "%s/summary.json", r->dir);
    int rc = 0;
    if (json_dump_file(root, path, JSON_INDENT(2) | JSON_PRESERVE_ORDER) != 0)
        rc = ordo_error_set(ORDO_ERR_IO, "cannot write %s", path);
    if (text) *text = json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(root);
    return rc;
}

