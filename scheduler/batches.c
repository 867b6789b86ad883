/* batches: the scheduler's batch service (a shared epoch); see batches.h. */
#include "scheduler/batches.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/rng.h"
#include "common/wire.h"

#define MAX_N ((int64_t)1 << 31)

typedef struct batch {
    int64_t epoch;
    int count;
    int64_t *idx; /* spec.batch entries */
} batch_t;

struct ordo__batches {
    ordo__batches_spec_t spec;
    int workers;
    bool gate;
    int64_t pos;        /* the stream's next sample: epoch pos / n, place pos % n */
    int64_t perm_epoch; /* the epoch perm holds (-1: none) */
    int64_t *perm;
    batch_t *lease;     /* per worker two: [2w] the one before the last when the last was
                           asked for ahead (ordo__batches_prefetch), [2w + 1] the last (count
                           0: none) */
    batch_t *pool;      /* batches dead workers returned, handed out first */
    int n_pool;
    int64_t *handed;    /* per worker: batches handed out */
    int64_t max_iter;   /* gate: the highest iteration a batch was handed out for */
    int64_t last_iter;  /* gate: set once the samples are all handed out (-1 before) */
};

int ordo__batches_new(const ordo__batches_spec_t *spec, int workers, bool gate,
                     ordo__batches_t **out)
{
    if (spec->n < 1 || spec->n > MAX_N)
        return ordo__error_set(ORDO_ERR_INVAL, "batches: a data set of %lld samples (1 to %lld)",
                              (long long)spec->n, (long long)MAX_N);
    if (spec->batch < 1 || spec->batch > ORDO_BATCH_MAX)
        return ordo__error_set(ORDO_ERR_INVAL, "batches: batch %d (1 to %d)", spec->batch,
                              ORDO_BATCH_MAX);
    if (spec->samples < 0)
        return ordo__error_set(ORDO_ERR_INVAL, "batches: samples %lld (0: no end, or more)",
                              (long long)spec->samples);
    if (workers < 1) return ordo__error_set(ORDO_ERR_INVAL, "batches: %d workers", workers);
    ordo__batches_t *b = calloc(1, sizeof *b);
    if (!b) return ORDO_ERR_NOMEM;
    b->spec = *spec;
    b->workers = workers;
    b->gate = gate;
    b->perm_epoch = -1;
    b->max_iter = -1;
    b->last_iter = -1;
    b->perm = malloc(sizeof *b->perm * (size_t)spec->n);
    b->lease = calloc((size_t)workers * 2, sizeof *b->lease);
    b->pool = calloc((size_t)workers * 2, sizeof *b->pool);
    b->handed = calloc((size_t)workers, sizeof *b->handed);
    if (!b->perm || !b->lease || !b->pool || !b->handed) goto nomem;
    for (int w = 0; w < 2 * workers; w++) {
        b->lease[w].idx = malloc(sizeof(int64_t) * (size_t)spec->batch);
        b->pool[w].idx = malloc(sizeof(int64_t) * (size_t)spec->batch);
        if (!b->lease[w].idx || !b->pool[w].idx) goto nomem;
    }
    *out = b;
    return 0;
nomem:
    ordo__batches_destroy(&b);
    return ORDO_ERR_NOMEM;
}

int ordo__batches_same(const ordo__batches_t *b, const ordo__batches_spec_t *s)
{
    const ordo__batches_spec_t *o = &b->spec;
    if (s->n != o->n)
        return ordo__error_set(ORDO_ERR_INVAL, "batches: a data set of %lld samples, the run's has "
                              "%lld", (long long)s->n, (long long)o->n);
    if (s->batch != o->batch)
        return ordo__error_set(ORDO_ERR_INVAL, "batches: batch %d, the run's is %d", s->batch,
                              o->batch);
    if (s->samples != o->samples)
        return ordo__error_set(ORDO_ERR_INVAL, "batches: %lld samples in all, the run's %lld",
                              (long long)s->samples, (long long)o->samples);
    if (s->seed != o->seed || s->shuffle != o->shuffle)
        return ordo__error_set(ORDO_ERR_INVAL, "batches: another seed or shuffle than the run's");
    return 0;
}

/* the permutation of epoch e */
static void make_perm(ordo__batches_t *b, int64_t e)
{
    if (b->perm_epoch == e) return;
    for (int64_t i = 0; i < b->spec.n; i++)
        b->perm[i] = i;
    if (b->spec.shuffle) {
        ordo__rng_t r;
        ordo__rng_seed2(&r, b->spec.seed, (uint64_t)e);
        ordo__rng_shuffle(&r, b->perm, b->spec.n);
    }
    b->perm_epoch = e;
}

static void take(ordo__batches_t *b, int worker, const batch_t *from, int64_t *idx, int *count,
                 int64_t *epoch_out)
{
    batch_t *l = &b->lease[2 * worker + 1];
    memcpy(l->idx, from->idx, sizeof(int64_t) * (size_t)from->count);
    l->count = from->count;
    l->epoch = from->epoch;
    memcpy(idx, l->idx, sizeof(int64_t) * (size_t)l->count);
    *count = l->count;
    *epoch_out = l->epoch;
    b->handed[worker]++;
}

/* next hands worker its next batch; keep: the last one stays leased (asked for ahead) */
static int next(ordo__batches_t *b, int worker, int64_t epoch, int64_t iter, bool keep,
                int64_t *idx, int cap, int *count, int64_t *epoch_out)
{
    if (worker < 0 || worker >= b->workers)
        return ordo__error_set(ORDO_ERR_INVAL, "batches: no worker %d (%d)", worker, b->workers);
    if (cap < b->spec.batch)
        return ordo__error_set(ORDO_ERR_INVAL, "batches: room for %d indices, a batch is %d", cap,
                              b->spec.batch);
    batch_t *older = &b->lease[2 * worker], *last = &b->lease[2 * worker + 1];
    older->count = 0; /* done: the worker has moved past it */
    if (keep) {       /* the last one is being worked on: it becomes the older lease */
        int64_t *spare = older->idx;
        *older = *last;
        last->idx = spare;
    }
    last->count = 0;
    if (b->n_pool > 0) { /* a dead worker's batch first, whatever its epoch */
        batch_t t = b->pool[--b->n_pool];
        b->pool[b->n_pool].idx = last->idx;
        last->idx = t.idx; /* swap buffers: take copies into the lease */
        last->count = t.count;
        last->epoch = t.epoch;
        memcpy(idx, t.idx, sizeof(int64_t) * (size_t)t.count);
        *count = t.count;
        *epoch_out = t.epoch;
        b->handed[worker]++;
        if (iter > b->max_iter) b->max_iter = iter;
        return 0;
    }
    int64_t n = b->spec.n, e = b->pos / n;
    bool past_end = b->spec.samples > 0 && b->pos >= b->spec.samples;
    if (past_end) {
        if (!b->gate) return ORDO_BATCHES_END_RUN;
        if (b->last_iter < 0) b->last_iter = b->max_iter;
        if (iter < 0 || iter > b->last_iter) return ORDO_BATCHES_END_RUN;
    } else if (epoch >= 0 && e > epoch) {
        return ORDO_BATCHES_END_EPOCH;
    }
    int64_t end = (e + 1) * n;
    if (!past_end && b->spec.samples > 0 && b->spec.samples < end) end = b->spec.samples;
    int64_t len = end - b->pos < b->spec.batch ? end - b->pos : b->spec.batch;
    make_perm(b, e);
    batch_t t = {.epoch = e, .count = (int)len, .idx = b->perm + b->pos % n};
    take(b, worker, &t, idx, count, epoch_out);
    b->pos += len;
    if (iter > b->max_iter) b->max_iter = iter;
    return 0;
}

int ordo__batches_next(ordo__batches_t *b, int worker, int64_t epoch, int64_t iter, int64_t *idx,
                      int cap, int *count, int64_t *epoch_out)
{
    return next(b, worker, epoch, iter, false, idx, cap, count, epoch_out);
}

int ordo__batches_prefetch(ordo__batches_t *b, int worker, int64_t epoch, int64_t iter,
                          int64_t *idx, int cap, int *count, int64_t *epoch_out)
{
    return next(b, worker, epoch, iter, true, idx, cap, count, epoch_out);
}

void ordo__batches_release(ordo__batches_t *b, int worker)
{
    if (worker < 0 || worker >= b->workers) return;
    /* the last one on top: the older goes out again first (the pool is a stack) */
    for (int k = 2 * worker + 1; k >= 2 * worker; k--) {
        batch_t *l = &b->lease[k];
        if (l->count == 0) continue;
        batch_t *p = &b->pool[b->n_pool++]; /* at most two leases per worker: room for all */
        int64_t *spare = p->idx;
        *p = *l;
        l->idx = spare;
        l->count = 0;
    }
}

/* ---- a restarted scheduler's service, rebuilt from what the workers hold ---- */

int ordo__batches_restore(ordo__batches_t *b, int worker, int slot, int64_t epoch,
                         const int64_t *idx, int count)
{
    if (worker < 0 || worker >= b->workers || slot < 0 || slot > 1 || count < 1 ||
        count > b->spec.batch || epoch < 0)
        return ordo__error_set(ORDO_ERR_INVAL, "batches: worker %d's lease of %d samples of epoch "
                              "%lld does not fit the service", worker, count, (long long)epoch);
    batch_t *l = &b->lease[2 * worker + slot];
    memcpy(l->idx, idx, sizeof *idx * (size_t)count);
    l->count = count;
    l->epoch = epoch;
    return 0;
}

int ordo__batches_seen(ordo__batches_t *b, int64_t epoch, const int64_t *idx, int count)
{
    int64_t n = b->spec.n;
    if (epoch < 0 || count < 1 || count > b->spec.batch || epoch > INT64_MAX / n - 1)
        return ordo__error_set(ORDO_ERR_INVAL, "batches: a batch of %d samples of epoch %lld",
                              count, (long long)epoch);
    make_perm(b, epoch);
    int64_t at = -1;
    for (int64_t i = 0; i < n && at < 0; i++)
        if (b->perm[i] == idx[0]) at = i;
    bool whole = at >= 0 && at + count <= n;
    for (int i = 1; whole && i < count; i++)
        whole = b->perm[at + i] == idx[i];
    if (!whole)
        return ordo__error_set(ORDO_ERR_INVAL, "batches: a batch of epoch %lld (starting at "
                              "sample %lld) that is not a run of that epoch's stream",
                              (long long)epoch, (long long)idx[0]);
    if (epoch * n + at + count > b->pos) b->pos = epoch * n + at + count;
    return 0;
}

void ordo__batches_set_count(ordo__batches_t *b, int worker, int64_t handed, int64_t iter)
{
    if (worker < 0 || worker >= b->workers) return;
    b->handed[worker] = handed;
    if (iter > b->max_iter) b->max_iter = iter;
}

int ordo__batches_last(const ordo__batches_t *b, int worker, int64_t *idx, int cap, int *count,
                      int64_t *epoch)
{
    const batch_t *l = worker >= 0 && worker < b->workers ? &b->lease[2 * worker + 1] : NULL;
    if (!l || l->count == 0 || cap < l->count) return ORDO_BATCHES_END_RUN;
    memcpy(idx, l->idx, sizeof *idx * (size_t)l->count);
    *count = l->count;
    *epoch = l->epoch;
    return 0;
}

int64_t ordo__batches_samples(const ordo__batches_t *b)
{
    return b->pos;
}

int64_t ordo__batches_count(const ordo__batches_t *b, int worker)
{
    return worker < 0 || worker >= b->workers ? -1 : b->handed[worker];
}

void ordo__batches_destroy(ordo__batches_t **bp)
{
    ordo__batches_t *b = bp ? *bp : NULL;
    if (!b) return;
    for (int w = 0; w < 2 * b->workers; w++) {
        if (b->lease) free(b->lease[w].idx);
        if (b->pool) free(b->pool[w].idx);
    }
    free(b->lease);
    free(b->pool);
    free(b->perm);
    free(b->handed);
    free(b);
    *bp = NULL;
}
