/* batch_feed: the model run's side of the batch service; see batch_feed.h. */
#include "worker/batch_feed.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/error.h"

struct ordo_batch_feed {
    const ordo_dataset_t *train;
    int batch, features;
    char *spec; /* the BATCH_REQ body */
    int64_t *idx;
    float *x;
    int *labels;
};

int ordo_batch_feed_new(const ordo_dataset_t *train, int batch, int64_t samples, uint64_t seed,
                        ordo_batch_feed_t **out)
{
    ordo_batch_feed_t *f = calloc(1, sizeof *f);
    if (!f) return ORDO_ERR_NOMEM;
    f->train = train;
    f->batch = batch;
    f->features = ordo_dataset_rows(train) * ordo_dataset_cols(train);
    f->idx = malloc(sizeof *f->idx * (size_t)batch);
    f->x = malloc(sizeof *f->x * (size_t)batch * (size_t)f->features);
    f->labels = malloc(sizeof *f->labels * (size_t)batch);
    if (!f->idx || !f->x || !f->labels ||
        asprintf(&f->spec, "{\"n\":%lld,\"batch\":%d,\"samples\":%lld,\"seed\":%" PRIu64
                 ",\"shuffle\":true}", (long long)ordo_dataset_count(train), batch,
                 (long long)samples, seed & INT64_MAX) < 0) {
        f->spec = NULL;
        ordo_batch_feed_destroy(&f);
        return ORDO_ERR_NOMEM;
    }
    *out = f;
    return 0;
}

int ordo_batch_feed_next(ordo_batch_feed_t *f, ordo_exec_t *ex, int64_t iter, const float **x,
                         const int **labels, int *n)
{
    int count = 0;
    int rc = ordo_exec_next_batch(ex, f->spec, iter, f->idx, f->batch, &count);
    if (rc < 0) return ordo_error_context(rc, "the batch service");
    if (rc > 0) return 1; /* the end of an epoch does not concern a run that reads any */
    int64_t total = ordo_dataset_count(f->train);
    for (int i = 0; i < count; i++) {
        if (f->idx[i] < 0 || f->idx[i] >= total)
            return ordo_error_set(ORDO_ERR_PROTO, "the batch service sent sample %lld of %lld",
                                  (long long)f->idx[i], (long long)total);
        ordo_dataset_get(f->train, f->idx[i], 1, f->x + (size_t)i * (size_t)f->features,
                         f->labels + i);
    }
    *x = f->x;
    *labels = f->labels;
    *n = count;
    return 0;
}

void ordo_batch_feed_destroy(ordo_batch_feed_t **fp)
{
    ordo_batch_feed_t *f = fp ? *fp : NULL;
    if (!f) return;
    free(f->spec);
    free(f->idx);
    free(f->x);
    free(f->labels);
    free(f);
    *fp = NULL;
}
