/* dataset: the Fashion-MNIST data set from IDX files (gzip-compressed or plain), read with
 * zlib and validated (magic numbers, dimensions, counts, label range, truncation) with
 * errors naming the file. Pixels stay bytes in memory and are normalized to floats when a
 * batch is gathered: x = (pixel / 255 - ORDO_DATASET_MEAN) / ORDO_DATASET_STD. A worker's
 * shard and its per-epoch shuffled batches come from the iterator, deterministically from
 * a seed. */
#ifndef ORDO_DATASET_H
#define ORDO_DATASET_H

#include <stdint.h>

#define ORDO_DATASET_CLASSES 10
#define ORDO_DATASET_MEAN    0.2860f /* Fashion-MNIST training-set pixel mean (of pixel/255) */
#define ORDO_DATASET_STD     0.3530f /* and standard deviation */

typedef enum { ORDO_DATASET_TRAIN, ORDO_DATASET_TEST } ordo__dataset_split_t;

typedef struct ordo__dataset ordo__dataset_t;
typedef struct ordo__dataset_iter ordo__dataset_iter_t;

/* ordo__dataset_load reads the split's two files from dir ("train-images-idx3-ubyte.gz" and
 * "train-labels-idx1-ubyte.gz", or the "t10k-" pair); *out owns the data. Fails with
 * ORDO_ERR_NOTFOUND (missing file) or ORDO_ERR_FORMAT, the detail naming the file and the fault. */
int ordo__dataset_load(const char *dir, ordo__dataset_split_t split, ordo__dataset_t **out);

/* ordo__dataset_load_files reads an IDX image file (magic 0x803, n x rows x cols bytes) and
 * the matching IDX label file (magic 0x801, n bytes in [0, 10)). */
int ordo__dataset_load_files(const char *images_path, const char *labels_path, ordo__dataset_t **out);

/* ordo__dataset_count returns the number of samples. */
int64_t ordo__dataset_count(const ordo__dataset_t *ds);

/* ordo__dataset_rows and ordo__dataset_cols return the image size; features = rows * cols. */
int ordo__dataset_rows(const ordo__dataset_t *ds);
int ordo__dataset_cols(const ordo__dataset_t *ds);

/* ordo__dataset_label returns sample i's label (0 <= i < count). */
int ordo__dataset_label(const ordo__dataset_t *ds, int64_t i);

/* ordo__dataset_get writes samples [first, first + n) normalized into x[n, rows*cols] and
 * their labels into labels[n] (either may be NULL); the range must lie inside the set. */
void ordo__dataset_get(const ordo__dataset_t *ds, int64_t first, int n, float *x, int *labels);

/* ordo__dataset_destroy frees *ds and sets it to NULL; NULL-safe. */
void ordo__dataset_destroy(ordo__dataset_t **ds);

/* ordo__dataset_shard gives worker w of W its contiguous shard [*begin, *end) of n samples:
 * begin = n*w/W. The shards of all W workers partition [0, n) exactly. */
void ordo__dataset_shard(int64_t n, int worker, int workers, int64_t *begin, int64_t *end);

/* ordo__dataset_iter_new makes worker w's batch iterator over its shard of ds (which must
 * outlive it). Every epoch reshuffles the shard with a generator seeded from (seed, worker,
 * epoch): ordo__rng_seed2(seed ^ 0xda7a5e7da7a5e7, worker << 32 | epoch). An epoch yields
 * floor((count / workers) / batch) full batches, the same number on every worker (a
 * shard's left-over samples wait for a later epoch's shuffle). Fails with ORDO_ERR_INVAL when
 * a shard holds fewer than batch samples. */
int ordo__dataset_iter_new(const ordo__dataset_t *ds, int worker, int workers, int batch,
                          uint64_t seed, ordo__dataset_iter_t **out);

/* ordo__dataset_iter_batches_per_epoch returns the number of batches of one epoch. */
int64_t ordo__dataset_iter_batches_per_epoch(const ordo__dataset_iter_t *it);

/* ordo__dataset_iter_next gathers the next batch into the iterator's own buffers and points
 * *x ([batch, rows*cols] floats) and *labels ([batch]) at them until the next call; it
 * starts a new epoch when the current one is exhausted. Returns the batch size. */
int ordo__dataset_iter_next(ordo__dataset_iter_t *it, const float **x, const int **labels);

/* ordo__dataset_iter_epoch returns the epoch (from 0) of the batch last returned. */
int ordo__dataset_iter_epoch(const ordo__dataset_iter_t *it);

/* ordo__dataset_iter_destroy frees *it and sets it to NULL; NULL-safe. */
void ordo__dataset_iter_destroy(ordo__dataset_iter_t **it);

#endif
