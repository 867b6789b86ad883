/* runlog_sparse: the sparse section of the run summary. */
#include "scheduler/runlog_sparse.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SERVERS 256

/* the sparse counters of one record */
typedef struct {
    int64_t iter;
    double bytes; /* pushed + pulled */
    double k, local, global, consumed, epoch;
    double load[MAX_SERVERS];
    int servers;
} rec_t;

static double get(json_t *o, const char *name)
{
    json_t *v = json_object_get(o, name);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

static int parse(const ordo_iter_stats_t *s, rec_t *r)
{
    char text[sizeof s->extra + 4];
    snprintf(text, sizeof text, "{%s}", s->extra);
    json_t *o = json_loads(text, 0, NULL);
    if (!o) return -1;
    r->k = get(o, "sparse_k");
    r->local = get(o, "sparse_local");
    r->global = get(o, "sparse_global");
    r->consumed = get(o, "sparse_consumed");
    r->epoch = get(o, "sparse_epoch");
    r->servers = 0;
    for (int i = 0; i < MAX_SERVERS; i++) {
        char name[32];
        snprintf(name, sizeof name, "sparse_load_s%d", i);
        double v = get(o, name);
        if (isnan(v)) break;
        r->load[r->servers++] = v;
    }
    json_decref(o);
    return isnan(r->k) || isnan(r->epoch) || r->servers == 0 ? -1 : 0;
}

static json_t *num(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}

/* max over servers of load / mean load; 1 when nothing was pushed */
static double imbalance(const double *load, int S)
{
    double max = 0, sum = 0;
    for (int s = 0; s < S; s++) {
        sum += load[s];
        if (load[s] > max) max = load[s];
    }
    return sum > 0 ? max * S / sum : 1.0;
}

json_t *ordo_runlog_sparse_summary(const ordo_iter_stats_t *recs, int n, int n_workers)
{
    rec_t *r = malloc(sizeof *r * ((size_t)n + 1));
    if (!r) return NULL;
    int m = 0, S = 0, epochs = 0;
    int64_t iters = 0;
    for (int i = 0; i < n; i++) {
        if (parse(&recs[i], &r[m]) != 0) continue;
        if (S == 0) S = r[m].servers;
        if (r[m].servers != S) continue;
        r[m].iter = recs[i].iter;
        r[m].bytes = (double)(recs[i].bytes_push + recs[i].bytes_pull);
        if ((int)r[m].epoch + 1 > epochs) epochs = (int)r[m].epoch + 1;
        if (recs[i].iter + 1 > iters) iters = recs[i].iter + 1;
        m++;
    }
    json_t *out = NULL;
    if (m == 0 || epochs > 1000000) goto done;
    double k = r[0].k, bound = 2.0 * 8.0 * k * 1.25;
    double local = 0, local_max = 0, global = 0, global_max = 0, consumed = 0;
    double bytes = 0, bytes_max = 0;
    double *by_epoch = calloc((size_t)epochs * (size_t)S, sizeof *by_epoch);
    double *by_iter = calloc((size_t)iters * (size_t)S, sizeof *by_iter);
    int *iter_epoch = malloc(sizeof *iter_epoch * ((size_t)iters + 1));
    int *iter_n = calloc((size_t)iters + 1, sizeof *iter_n);
    if (!by_epoch || !by_iter || !iter_epoch || !iter_n) goto free_all;
    for (int j = 0; j < m; j++) {
        const rec_t *x = &r[j];
        double b = x->bytes;
        local += x->local;
        global += x->global;
        consumed += x->consumed;
        bytes += b;
        if (x->local > local_max) local_max = x->local;
        if (x->global > global_max) global_max = x->global;
        if (b > bytes_max) bytes_max = b;
        int e = (int)x->epoch;
        int64_t it = x->iter;
        iter_epoch[it] = e;
        iter_n[it]++;
        for (int s = 0; s < S; s++) {
            by_epoch[(size_t)e * S + s] += x->load[s];
            by_iter[(size_t)it * S + s] += x->load[s];
        }
    }
    out = json_object();
    json_object_set_new(out, "k", json_integer((json_int_t)k));
    json_object_set_new(out, "local_mean", num(local / m));
    json_object_set_new(out, "local_max", num(local_max));
    json_object_set_new(out, "global_mean", num(global / m));
    json_object_set_new(out, "global_max", num(global_max));
    json_object_set_new(out, "global_over_k", num(global / m / k));
    json_object_set_new(out, "consumed_mean", num(consumed / m));
    json_object_set_new(out, "bytes_per_worker_iter_mean", num(bytes / m));
    json_object_set_new(out, "bytes_per_worker_iter_max", num(bytes_max));
    json_object_set_new(out, "bytes_bound", num(bound));
    json_object_set_new(out, "bytes_over_bound_max", num(bytes_max / bound));
    json_object_set_new(out, "servers", json_integer(S));
    json_t *per_epoch = json_array(), *load_mean = json_array();
    double after = NAN, iter_after = NAN;
    for (int e = 0; e < epochs; e++) {
        double im = imbalance(&by_epoch[(size_t)e * S], S);
        json_array_append_new(per_epoch, num(im));
        if (e > 0 && (isnan(after) || im > after)) after = im;
    }
    for (int s = 0; s < S; s++) {
        double sum = 0;
        for (int e = 0; e < epochs; e++)
            sum += by_epoch[(size_t)e * S + s];
        json_array_append_new(load_mean, num(sum / (double)iters));
    }
    for (int64_t it = 0; it < iters; it++) {
        if (iter_n[it] != n_workers || iter_epoch[it] == 0) continue;
        double im = imbalance(&by_iter[(size_t)it * S], S);
        if (isnan(iter_after) || im > iter_after) iter_after = im;
    }
    json_object_set_new(out, "load_per_server_mean", load_mean);
    json_object_set_new(out, "epochs", json_integer(epochs));
    json_object_set_new(out, "imbalance_by_epoch", per_epoch);
    json_object_set_new(out, "imbalance_after_rebalance_max", num(after));
    json_object_set_new(out, "imbalance_iter_after_rebalance_max", num(iter_after));
free_all:
    free(by_epoch);
    free(by_iter);
    free(iter_epoch);
    free(iter_n);
done:
    free(r);
    return out;
}
