/* dataset: IDX reading and validation, normalization, sharding and the shuffled batch
 * iterator. IDX (LeCun's MNIST format): a big-endian magic 0x000008NN (unsigned bytes, NN
 * dimensions), NN big-endian 32-bit sizes, then the data. zlib reads gzip and plain files
 * alike. */
#include "worker/dataset.h"

#include "common/error.h"
#include "common/rng.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#define MAX_SAMPLES 100000000LL
/* Keeps the data-order streams apart from the parameter-initialization streams of the same
 * seed (worker/nn.c seeds with (seed, parameter index)). */
#define ORDO_DATASET_SEED_SALT 0xda7a5e7da7a5e7ULL
#define MAX_SIDE               4096

struct ordo__dataset {
    int64_t n;
    int rows, cols;
    uint8_t *pixels; /* n * rows * cols */
    uint8_t *labels; /* n */
    float lut[256];  /* normalized value of each byte */
};

struct ordo__dataset_iter {
    const ordo__dataset_t *ds;
    int worker;
    int batch;
    uint64_t seed;
    int64_t begin, len; /* the shard */
    int64_t per_epoch;  /* batches per epoch */
    int64_t *order;     /* shard indices, shuffled each epoch */
    int64_t next;       /* next batch within the epoch */
    int epoch;          /* epoch of the current order; -1 before the first */
    float *x;
    int *y;
};

/* ---- IDX reading ------------------------------------------------------------------------ */

/* read_exact reads len bytes; a short read is reported as truncation, naming what. */
static int read_exact(gzFile f, const char *path, void *buf, size_t len, const char *what)
{
    size_t got = 0;
    while (got < len) {
        size_t chunk = len - got > (1u << 30) ? (1u << 30) : len - got;
        int r = gzread(f, (char *)buf + got, (unsigned)chunk);
        if (r < 0) {
            int zerr;
            const char *msg = gzerror(f, &zerr);
            return ordo__error_set(ORDO_ERR_FORMAT, "%s: reading %s: %s", path, what, msg);
        }
        if (r == 0) break;
        got += (size_t)r;
    }
    if (got < len)
        return ordo__error_set(ORDO_ERR_FORMAT, "%s: truncated: %s needs %zu bytes, file has %zu", path,
                              what, len, got);
    return 0;
}

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* read_idx reads an IDX file of unsigned bytes with ndim dimensions (want_magic =
 * 0x800 + ndim); dims receives the sizes and *data the malloc'd payload. */
static int read_idx(const char *path, int ndim, uint32_t *dims, uint8_t **data)
{
    uint8_t *buf = NULL;
    int rc;
    gzFile f = gzopen(path, "rb");
    if (!f) {
        if (errno == ENOENT)
            return ordo__error_set(ORDO_ERR_NOTFOUND,
                                  "%s: no such file (install the "
                                  "dataset-fashion-mnist package or set model.data_dir)",
                                  path);
        return ordo__error_set(ORDO_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    }
    uint8_t head[4 + 4 * 3];
    if ((rc = read_exact(f, path, head, 4 + 4 * (size_t)ndim, "the header")) < 0) goto fail;
    uint32_t magic = be32(head);
    if (magic != 0x800u + (uint32_t)ndim) {
        rc = ordo__error_set(ORDO_ERR_FORMAT,
                            "%s: bad magic number 0x%08x (want 0x%08x: IDX unsigned bytes, "
                            "%d dimension%s)",
                            path, magic, 0x800u + ndim, ndim, ndim > 1 ? "s" : "");
        goto fail;
    }
    uint64_t total = 1;
    for (int d = 0; d < ndim; d++) {
        dims[d] = be32(head + 4 + 4 * d);
        uint32_t lim = d == 0 ? (uint32_t)MAX_SAMPLES : MAX_SIDE;
        if (dims[d] == 0 || dims[d] > lim) {
            rc = ordo__error_set(ORDO_ERR_FORMAT, "%s: dimension %d is %u (want 1..%u)", path, d,
                                dims[d], lim);
            goto fail;
        }
        total *= dims[d];
    }
    buf = malloc(total);
    if (!buf) {
        rc = ordo__error_set(ORDO_ERR_NOMEM, "%s: cannot allocate %llu bytes", path,
                            (unsigned long long)total);
        goto fail;
    }
    if ((rc = read_exact(f, path, buf, total, "the data")) < 0) goto fail;
    char extra;
    int r = gzread(f, &extra, 1);
    if (r != 0) {
        rc = ordo__error_set(ORDO_ERR_FORMAT, "%s: %s after %llu data bytes", path,
                            r > 0 ? "trailing bytes" : "corrupt stream", (unsigned long long)total);
        goto fail;
    }
    gzclose(f);
    *data = buf;
    return 0;
fail:
    free(buf);
    gzclose(f);
    return rc;
}

/* ---- data set --------------------------------------------------------------------------- */

int ordo__dataset_load_files(const char *images_path, const char *labels_path, ordo__dataset_t **out)
{
    int rc;
    uint32_t idims[3] = {0}, ldims[1] = {0};
    ordo__dataset_t *ds = calloc(1, sizeof(*ds));
    if (!ds) return ordo__error_set(ORDO_ERR_NOMEM, "dataset: out of memory");
    if ((rc = read_idx(images_path, 3, idims, &ds->pixels)) < 0) goto fail;
    if ((rc = read_idx(labels_path, 1, ldims, &ds->labels)) < 0) goto fail;
    if (idims[0] != ldims[0]) {
        rc = ordo__error_set(ORDO_ERR_FORMAT, "%s: %u labels, but %s holds %u images", labels_path,
                            ldims[0], images_path, idims[0]);
        goto fail;
    }
    ds->n = idims[0];
    ds->rows = (int)idims[1];
    ds->cols = (int)idims[2];
    for (int64_t i = 0; i < ds->n; i++) {
        if (ds->labels[i] >= ORDO_DATASET_CLASSES) {
            rc = ordo__error_set(ORDO_ERR_FORMAT, "%s: label %u of sample %lld is not in [0, %d)",
                                labels_path, ds->labels[i], (long long)i, ORDO_DATASET_CLASSES);
            goto fail;
        }
    }
    for (int v = 0; v < 256; v++)
        ds->lut[v] = ((float)v / 255.0f - ORDO_DATASET_MEAN) / ORDO_DATASET_STD;
    *out = ds;
    return 0;
fail:
    ordo__dataset_destroy(&ds);
    return rc;
}

int ordo__dataset_load(const char *dir, ordo__dataset_split_t split, ordo__dataset_t **out)
{
    const char *prefix = split == ORDO_DATASET_TRAIN ? "train" : "t10k";
    char images[4096], labels[4096];
    int a = snprintf(images, sizeof(images), "%s/%s-images-idx3-ubyte.gz", dir, prefix);
    int b = snprintf(labels, sizeof(labels), "%s/%s-labels-idx1-ubyte.gz", dir, prefix);
    if (a < 0 || b < 0 || (size_t)a >= sizeof(images) || (size_t)b >= sizeof(labels))
        return ordo__error_set(ORDO_ERR_INVAL, "%s: data set directory name too long", dir);
    return ordo__dataset_load_files(images, labels, out);
}

int64_t ordo__dataset_count(const ordo__dataset_t *ds)
{
    return ds->n;
}

int ordo__dataset_rows(const ordo__dataset_t *ds)
{
    return ds->rows;
}

int ordo__dataset_cols(const ordo__dataset_t *ds)
{
    return ds->cols;
}

int ordo__dataset_label(const ordo__dataset_t *ds, int64_t i)
{
    ORDO_ASSERT(i >= 0 && i < ds->n);
    return ds->labels[i];
}

/* gather_one writes sample i normalized to x. */
static void gather_one(const ordo__dataset_t *ds, int64_t i, float *restrict x)
{
    const int64_t f = (int64_t)ds->rows * ds->cols;
    const uint8_t *restrict p = ds->pixels + i * f;
    for (int64_t j = 0; j < f; j++)
        x[j] = ds->lut[p[j]];
}

void ordo__dataset_get(const ordo__dataset_t *ds, int64_t first, int n, float *x, int *labels)
{
    ORDO_ASSERT(first >= 0 && n >= 0 && first + n <= ds->n);
    const int64_t f = (int64_t)ds->rows * ds->cols;
    for (int i = 0; i < n; i++) {
        if (x) gather_one(ds, first + i, x + i * f);
        if (labels) labels[i] = ds->labels[first + i];
    }
}

void ordo__dataset_destroy(ordo__dataset_t **ds)
{
    if (!ds || !*ds) return;
    free((*ds)->pixels);
    free((*ds)->labels);
    free(*ds);
    *ds = NULL;
}

/* ---- shards and batches ----------------------------------------------------------------- */

void ordo__dataset_shard(int64_t n, int worker, int workers, int64_t *begin, int64_t *end)
{
    ORDO_ASSERT(workers >= 1 && worker >= 0 && worker < workers && n >= 0);
    *begin = n * worker / workers;
    *end = n * (worker + 1) / workers;
}

int ordo__dataset_iter_new(const ordo__dataset_t *ds, int worker, int workers, int batch,
                          uint64_t seed, ordo__dataset_iter_t **out)
{
    if (workers < 1 || worker < 0 || worker >= workers || batch < 1)
        return ordo__error_set(ORDO_ERR_INVAL, "dataset: bad worker %d of %d or batch %d", worker,
                              workers, batch);
    int64_t smallest = ds->n / workers;
    if (smallest < batch)
        return ordo__error_set(ORDO_ERR_INVAL,
                              "dataset: a shard of %lld samples (%lld over %d workers) is "
                              "smaller than the batch %d",
                              (long long)smallest, (long long)ds->n, workers, batch);
    ordo__dataset_iter_t *it = calloc(1, sizeof(*it));
    if (!it) return ordo__error_set(ORDO_ERR_NOMEM, "dataset: out of memory");
    int64_t end;
    ordo__dataset_shard(ds->n, worker, workers, &it->begin, &end);
    it->ds = ds;
    it->worker = worker;
    it->batch = batch;
    it->seed = seed;
    it->len = end - it->begin;
    it->per_epoch = smallest / batch;
    it->next = it->per_epoch; /* forces a shuffle on the first call */
    it->epoch = -1;
    it->order = malloc(sizeof(int64_t) * (size_t)it->len);
    it->x = malloc(sizeof(float) * (size_t)batch * (size_t)(ds->rows * ds->cols));
    it->y = malloc(sizeof(int) * (size_t)batch);
    if (!it->order || !it->x || !it->y) {
        ordo__dataset_iter_destroy(&it);
        return ordo__error_set(ORDO_ERR_NOMEM, "dataset: out of memory for the batch iterator");
    }
    *out = it;
    return 0;
}

int64_t ordo__dataset_iter_batches_per_epoch(const ordo__dataset_iter_t *it)
{
    return it->per_epoch;
}

int ordo__dataset_iter_next(ordo__dataset_iter_t *it, const float **x, const int **labels)
{
    if (it->next >= it->per_epoch) {
        it->epoch++;
        for (int64_t i = 0; i < it->len; i++)
            it->order[i] = it->begin + i;
        ordo__rng_t r;
        ordo__rng_seed2(&r, it->seed ^ ORDO_DATASET_SEED_SALT,
                       ((uint64_t)it->worker << 32) | (uint32_t)it->epoch);
        ordo__rng_shuffle(&r, it->order, it->len);
        it->next = 0;
    }
    const ordo__dataset_t *ds = it->ds;
    const int64_t f = (int64_t)ds->rows * ds->cols;
    const int64_t *idx = it->order + it->next * it->batch;
    for (int i = 0; i < it->batch; i++) {
        gather_one(ds, idx[i], it->x + i * f);
        it->y[i] = ds->labels[idx[i]];
    }
    it->next++;
    *x = it->x;
    *labels = it->y;
    return it->batch;
}

int ordo__dataset_iter_epoch(const ordo__dataset_iter_t *it)
{
    return it->epoch;
}

void ordo__dataset_iter_destroy(ordo__dataset_iter_t **it)
{
    if (!it || !*it) return;
    free((*it)->order);
    free((*it)->x);
    free((*it)->y);
    free(*it);
    *it = NULL;
}
