/* batches: the scheduler's batch service, a shared epoch ([sync] batches). The run's samples
 * are one stream: epoch e is a permutation of the data set's n indices (seeded by seed and e,
 * or 0 .. n - 1 unshuffled), epochs one after another, `samples` of them in all. A worker asks
 * for its next batch and gets the next `batch` indices of the stream (an epoch's last batch
 * may be shorter; a batch never crosses an epoch), so fast workers take more batches. The
 * batch a worker was handed last is its lease: a worker that dies returns it to the pool, and
 * the next request of any worker takes it first. A worker may ask for its next batch ahead,
 * while it still works on the last one (ordo__batches_prefetch): both are its leases then.
 * With `gate` (ssp and backup workers, whose
 * servers count iterations) the stream's end is an iteration: once the samples are all
 * handed out, requests for iterations up to the highest one handed out so far still get
 * batches (from the stream beyond the end, counted), later ones none, so that every worker
 * runs the same last iteration and no server waits for a push that never comes. */
#ifndef ORDO_BATCHES_H
#define ORDO_BATCHES_H

#include <stdbool.h>
#include <stdint.h>

typedef struct ordo__batches ordo__batches_t;

/* What every worker's request must agree on. */
typedef struct ordo__batches_spec {
    int64_t n;       /* samples in the data set, 1 .. 2^31 */
    int batch;       /* samples per batch, 1 .. ORDO_BATCH_MAX */
    int64_t samples; /* samples the run takes in all; 0: epochs without end */
    uint64_t seed;
    bool shuffle;
} ordo__batches_spec_t;

/* ordo__batches_next's outcomes beside a batch (0) */
enum { ORDO_BATCHES_END_EPOCH = 1, ORDO_BATCHES_END_RUN = 2 };

/* ordo__batches_new makes the service for spec (copied) and workers workers; gate as above.
 * ORDO_ERR_INVAL names a field out of range. *out is the caller's (ordo__batches_destroy). */
int ordo__batches_new(const ordo__batches_spec_t *spec, int workers, bool gate,
                     ordo__batches_t **out);

/* ordo__batches_same returns 0 when spec is the one b was made with, else ORDO_ERR_INVAL
 * naming the first field that differs. */
int ordo__batches_same(const ordo__batches_t *b, const ordo__batches_spec_t *spec);

/* ordo__batches_next hands worker its next batch: up to cap indices into idx (cap >= the
 * spec's batch), their number into *count and their epoch into *epoch. epoch is the epoch the
 * worker reads (-1: any): 0 with a batch, ORDO_BATCHES_END_EPOCH when the stream has moved
 * past that epoch (a batch a dead worker returned is handed out whatever its epoch), or
 * ORDO_BATCHES_END_RUN. iter is the worker's next iteration (-1: none; with gate, a request
 * without one gets no batch after the end). The worker's previous batch is done. */
int ordo__batches_next(ordo__batches_t *b, int worker, int64_t epoch, int64_t iter, int64_t *idx,
                      int cap, int *count, int64_t *epoch_out);

/* ordo__batches_prefetch is ordo__batches_next for a worker that asks ahead: the batch it was
 * handed last is still being worked on and stays leased with the new one (the one before it
 * is done). */
int ordo__batches_prefetch(ordo__batches_t *b, int worker, int64_t epoch, int64_t iter,
                          int64_t *idx, int cap, int *count, int64_t *epoch_out);

/* ordo__batches_release returns worker's leased batches to the pool (the worker died). */
void ordo__batches_release(ordo__batches_t *b, int worker);

/* A restarted scheduler (fault.scheduler = restart) rebuilds the service from what each
 * worker holds: ordo__batches_restore sets worker's lease in slot (0 the older, asked ahead;
 * 1 the last) to count indices of epoch; ordo__batches_seen moves the stream's position past
 * a batch some worker received (the newest one each holds: the position is the end of the
 * furthest; a batch whose answer died with the old scheduler is handed out again), and
 * ORDO_ERR_INVAL when the batch is no run of its epoch's stream; ordo__batches_set_count
 * sets how many batches worker received and the iteration of its newest one. */
int ordo__batches_restore(ordo__batches_t *b, int worker, int slot, int64_t epoch,
                         const int64_t *idx, int count);
int ordo__batches_seen(ordo__batches_t *b, int64_t epoch, const int64_t *idx, int count);
void ordo__batches_set_count(ordo__batches_t *b, int worker, int64_t handed, int64_t iter);

/* ordo__batches_last copies worker's last lease into idx (room for cap): 0, or
 * ORDO_BATCHES_END_RUN when it holds none (a request answered twice gets it again). */
int ordo__batches_last(const ordo__batches_t *b, int worker, int64_t *idx, int cap, int *count,
                      int64_t *epoch);

/* ordo__batches_samples returns the samples handed out so far (returned ones counted once). */
int64_t ordo__batches_samples(const ordo__batches_t *b);

/* ordo__batches_count returns how many batches worker was handed (-1: no such worker). */
int64_t ordo__batches_count(const ordo__batches_t *b, int worker);

/* ordo__batches_destroy frees *b and sets it to NULL; NULL-safe. */
void ordo__batches_destroy(ordo__batches_t **b);

#endif
