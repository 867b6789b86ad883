/* batch_feed: the model run's side of the batch service ([sync] batches): it asks the
 * scheduler, through the public API (ordo_batches, ordo_next_batch), for the next batch of
 * sample indices of the shared epoch and gathers those samples of the training set into one
 * batch for the compute backend. */
#ifndef ORDO_BATCH_FEED_H
#define ORDO_BATCH_FEED_H

#include <stdint.h>

#include "ordo/ordo.h"
#include "worker/dataset.h"

typedef struct ordo__batch_feed ordo__batch_feed_t;

/* ordo__batch_feed_new makes a feed of worker o (borrowed) over train (borrowed; both must
 * outlive the feed) in batches of batch, samples in all (the run's length), shuffled with
 * seed, and describes it to the batch service (ordo_batches). */
int ordo__batch_feed_new(ordo_t *o, const ordo__dataset_t *train, int batch, int64_t samples,
                        uint64_t seed, ordo__batch_feed_t **out);

/* ordo__batch_feed_next fetches the next batch: 0 with *x, *labels (the feed's, valid until
 * the next call) and *n samples, 1 when the run's samples are all handed out, or an error
 * (the service refused: the scheduler's reason). */
int ordo__batch_feed_next(ordo__batch_feed_t *f, const float **x, const int **labels, int *n);

/* ordo__batch_feed_destroy frees *f and sets it to NULL; NULL-safe. */
void ordo__batch_feed_destroy(ordo__batch_feed_t **f);

#endif
