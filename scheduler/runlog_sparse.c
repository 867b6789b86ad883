/* runlog_sparse: the sparse section of the run summary. */
#include "scheduler/runlog_sparse.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_SERVERS 256
#define MAX_EPOCHS  1000000
#define WINDOW      256 /* iterations whose per-server loads are still gathered */

/* the sparse counters of one record */
typedef struct {
    double k, local, global, consumed, epoch;
    double load[MAX_SERVERS];
    int servers;
} rec_t;

/* one iteration whose records are still coming in */
typedef struct {
    int64_t iter; /* -1: free */
    int n, epoch;
} slot_t;

struct ordo__runlog_sparse {
    int n_workers;
    int m, S, epochs;
    int64_t iters;
    double k;
    double local, local_max, global, global_max, consumed, bytes, bytes_max;
    double *by_epoch;   /* epochs x S loads */
    int cap_epochs;
    double *load;       /* S: every load, summed */
    slot_t slots[WINDOW];
    double *slot_load;  /* WINDOW x S */
    double iter_after;  /* the largest imbalance of a complete iteration after epoch 0 */
};

static double get(json_t *o, const char *name)
{
    json_t *v = json_object_get(o, name);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

static int parse(const ordo__iter_stats_t *s, rec_t *r)
{
    if (!strstr(s->extra, "\"sparse_k\"")) return -1;
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
    return isnan(r->k) || !(r->epoch >= 0) || r->epoch >= MAX_EPOCHS || r->servers == 0 ? -1 : 0;
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

int ordo__runlog_sparse_new(int n_workers, ordo__runlog_sparse_t **out)
{
    ordo__runlog_sparse_t *a = calloc(1, sizeof *a);
    if (!a) return -1;
    a->n_workers = n_workers;
    a->iter_after = NAN;
    for (int i = 0; i < WINDOW; i++)
        a->slots[i].iter = -1;
    *out = a;
    return 0;
}

void ordo__runlog_sparse_destroy(ordo__runlog_sparse_t **ap)
{
    ordo__runlog_sparse_t *a = *ap;
    if (!a) return;
    free(a->by_epoch);
    free(a->load);
    free(a->slot_load);
    free(a);
    *ap = NULL;
}

/* close_slot counts slot i's iteration when every worker reported it (after epoch 0) */
static void close_slot(const ordo__runlog_sparse_t *a, double *iter_after, int i)
{
    const slot_t *sl = &a->slots[i];
    if (sl->iter < 0 || sl->n != a->n_workers || sl->epoch == 0) return;
    double im = imbalance(&a->slot_load[(size_t)i * a->S], a->S);
    if (isnan(*iter_after) || im > *iter_after) *iter_after = im;
}

/* first: the sizes of everything per server come from the first record */
static int start(ordo__runlog_sparse_t *a, const rec_t *x)
{
    a->S = x->servers;
    a->k = x->k;
    a->load = calloc((size_t)a->S, sizeof *a->load);
    a->slot_load = calloc((size_t)WINDOW * (size_t)a->S, sizeof *a->slot_load);
    return a->load && a->slot_load ? 0 : -1;
}

static int grow_epochs(ordo__runlog_sparse_t *a, int epochs)
{
    if (epochs <= a->cap_epochs) return 0;
    int cap = a->cap_epochs ? a->cap_epochs : 16;
    while (cap < epochs) cap *= 2;
    double *p = realloc(a->by_epoch, sizeof *p * (size_t)cap * (size_t)a->S);
    if (!p) return -1;
    memset(p + (size_t)a->cap_epochs * a->S, 0,
           sizeof *p * (size_t)(cap - a->cap_epochs) * (size_t)a->S);
    a->by_epoch = p;
    a->cap_epochs = cap;
    return 0;
}

void ordo__runlog_sparse_add(ordo__runlog_sparse_t *a, const ordo__iter_stats_t *s)
{
    rec_t x;
    if (parse(s, &x) != 0) return;
    if (a->m == 0 && start(a, &x) != 0) return;
    if (x.servers != a->S) return;
    int e = (int)x.epoch;
    if (grow_epochs(a, e + 1) != 0) return;
    double b = (double)(s->bytes_push + s->bytes_pull);
    a->m++;
    a->local += x.local;
    a->global += x.global;
    a->consumed += x.consumed;
    a->bytes += b;
    if (x.local > a->local_max) a->local_max = x.local;
    if (x.global > a->global_max) a->global_max = x.global;
    if (b > a->bytes_max) a->bytes_max = b;
    if (e + 1 > a->epochs) a->epochs = e + 1;
    if (s->iter + 1 > a->iters) a->iters = s->iter + 1;
    int i = (int)(s->iter % WINDOW);
    slot_t *sl = &a->slots[i];
    if (sl->iter != s->iter && sl->iter > s->iter) sl = NULL; /* too late to count per iteration */
    if (sl && sl->iter != s->iter) {
        close_slot(a, &a->iter_after, i);
        sl->iter = s->iter;
        sl->n = 0;
        memset(&a->slot_load[(size_t)i * a->S], 0, sizeof(double) * (size_t)a->S);
    }
    if (sl) {
        sl->n++;
        sl->epoch = e;
    }
    for (int j = 0; j < a->S; j++) {
        a->by_epoch[(size_t)e * a->S + j] += x.load[j];
        a->load[j] += x.load[j];
        if (sl) a->slot_load[(size_t)i * a->S + j] += x.load[j];
    }
}

json_t *ordo__runlog_sparse_section(const ordo__runlog_sparse_t *a)
{
    if (a->m == 0) return NULL;
    int m = a->m, S = a->S;
    double k = a->k, bound = 2.0 * 8.0 * k * 1.25;
    json_t *out = json_object();
    json_object_set_new(out, "k", json_integer((json_int_t)k));
    json_object_set_new(out, "local_mean", num(a->local / m));
    json_object_set_new(out, "local_max", num(a->local_max));
    json_object_set_new(out, "global_mean", num(a->global / m));
    json_object_set_new(out, "global_max", num(a->global_max));
    json_object_set_new(out, "global_over_k", num(a->global / m / k));
    json_object_set_new(out, "consumed_mean", num(a->consumed / m));
    json_object_set_new(out, "bytes_per_worker_iter_mean", num(a->bytes / m));
    json_object_set_new(out, "bytes_per_worker_iter_max", num(a->bytes_max));
    json_object_set_new(out, "bytes_bound", num(bound));
    json_object_set_new(out, "bytes_over_bound_max", num(a->bytes_max / bound));
    json_object_set_new(out, "servers", json_integer(S));
    json_t *per_epoch = json_array(), *load_mean = json_array();
    double after = NAN;
    for (int e = 0; e < a->epochs; e++) {
        double im = imbalance(&a->by_epoch[(size_t)e * S], S);
        json_array_append_new(per_epoch, num(im));
        if (e > 0 && (isnan(after) || im > after)) after = im;
    }
    for (int s = 0; s < S; s++)
        json_array_append_new(load_mean, num(a->load[s] / (double)a->iters));
    double iter_after = a->iter_after; /* and the iterations still in the window */
    for (int i = 0; i < WINDOW; i++)
        close_slot(a, &iter_after, i);
    json_object_set_new(out, "load_per_server_mean", load_mean);
    json_object_set_new(out, "epochs", json_integer(a->epochs));
    json_object_set_new(out, "imbalance_by_epoch", per_epoch);
    json_object_set_new(out, "imbalance_after_rebalance_max", num(after));
    json_object_set_new(out, "imbalance_iter_after_rebalance_max", num(iter_after));
    return out;
}

json_t *ordo__runlog_sparse_summary(const ordo__iter_stats_t *recs, int n, int n_workers)
{
    ordo__runlog_sparse_t *a;
    if (ordo__runlog_sparse_new(n_workers, &a) != 0) return NULL;
    for (int i = 0; i < n; i++)
        ordo__runlog_sparse_add(a, &recs[i]);
    json_t *out = ordo__runlog_sparse_section(a);
    ordo__runlog_sparse_destroy(&a);
    return out;
}
