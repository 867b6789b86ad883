/* batch_feed: the model run's side of the batch service; see batch_feed.h. */
#include "worker/batch_feed.h"

#include <stdio.h>
#include <stdlib.h>

#include "common/error.h"

struct ordo__batch_feed {
    ordo_t *o;
    const ordo__dataset_t *train;
    int batch, features;
    int64_t *idx;
    float *x;
    int *labels;
};

int ordo__batch_feed_new(ordo_t *o, const ordo__dataset_t *train, int batch, int64_t samples,
                        uint64_t seed, ordo__batch_feed_t **out)
{
    ordo__batch_feed_t *f = calloc(1, sizeof *f);
    if (!f) return ORDO_ERR_NOMEM;
    f->o = o;
    f->train = train;
    f->batch = batch;
    f->features = ordo__dataset_rows(train) * ordo__dataset_cols(train);
    f->idx = malloc(sizeof *f->idx * (size_t)batch);
    f->x = malloc(sizeof *f->x * (size_t)batch * (size_t)f->features);
    f->labels = malloc(sizeof *f->labels * (size_t)batch);
    if (!f->idx || !f->x || !f->labels) {
        ordo__batch_feed_destroy(&f);
        return ORDO_ERR_NOMEM;
    }
    int rc = ordo_batches(o, ordo__dataset_count(train), batch, samples, seed & INT64_MAX, 1);
    if (rc) {
        ordo__batch_feed_destroy(&f);
        return rc;
    }
    *out = f;
    return 0;
}

int ordo__batch_feed_next(ordo__batch_feed_t *f, const float **x, const int **labels, int *n)
{
    int count = 0;
    int rc = ordo_next_batch(f->o, -1, f->idx, f->batch, &count, -1);
    if (rc < 0) return ordo__error_context(rc, "the batch service");
    if (rc > 0) return 1; /* the end of an epoch does not concern a run that reads any */
    int64_t total = ordo__dataset_count(f->train);
    for (int i = 0; i < count; i++) {
        if (f->idx[i] < 0 || f->idx[i] >= total)
            return ordo__error_set(ORDO_ERR_PROTO, "the batch service sent sample %lld of %lld",
                                  (long long)f->idx[i], (long long)total);
        ordo__dataset_get(f->train, f->idx[i], 1, f->x + (size_t)i * (size_t)f->features,
                         f->labels + i);
    }
    *x = f->x;
    *labels = f->labels;
    *n = count;
    return 0;
}

void ordo__batch_feed_destroy(ordo__batch_feed_t **fp)
{
    ordo__batch_feed_t *f = fp ? *fp : NULL;
    if (!f) return;
    free(f->idx);
    free(f->x);
    free(f->labels);
    free(f);
    *fp = NULL;
}
