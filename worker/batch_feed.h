/* batch_feed: the model run's side of the batch service ([sync] batches): it asks the
 * scheduler, through the executor, for the next batch of sample indices of the shared epoch
 * and gathers those samples of the training set into one batch for the compute backend. */
#ifndef ORDO_BATCH_FEED_H
#define ORDO_BATCH_FEED_H

#include <stdint.h>

#include "worker/dataset.h"
#include "worker/executor.h"

typedef struct ordo_batch_feed ordo_batch_feed_t;

/* ordo_batch_feed_new makes a feed over train (borrowed; it must outlive the feed) in
 * batches of batch, samples in all (the run's length), shuffled with seed. */
int ordo_batch_feed_new(const ordo_dataset_t *train, int batch, int64_t samples, uint64_t seed,
                        ordo_batch_feed_t **out);

/* ordo_batch_feed_next fetches the batch for iteration iter: 0 with *x, *labels (the
 * feed's, valid until the next call) and *n samples, 1 when the run's samples are all
 * handed out, or an error (the service refused: the scheduler's reason). */
int ordo_batch_feed_next(ordo_batch_feed_t *f, ordo_exec_t *ex, int64_t iter, const float **x,
                         const int **labels, int *n);

/* ordo_batch_feed_destroy frees *f and sets it to NULL; NULL-safe. */
void ordo_batch_feed_destroy(ordo_batch_feed_t **f);

#endif
