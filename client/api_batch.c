/* api_batch: the public C API's calls for elastic training (include/ordo/ordo.h): the batch
 * service (ordo_batches describes the data set, ordo_next_batch asks the scheduler for this
 * worker's next batch; client/ps_batch.c carries the messages), and where a restarted worker
 * goes on. */
#include "ordo/ordo.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "common/error.h"
#include "common/wire.h"
#include "client/api_internal.h"
#include "client/bound.h"
#include "client/ps.h"

int ordo_batches(ordo_t *o, int64_t dataset_size, int batch, int64_t samples, uint64_t seed,
                 int shuffle)
{
    if (!o) return ordo__api_fail(ORDO_ERR_INVAL);
    if (dataset_size < 1 || batch < 1 || batch > ORDO_BATCH_MAX || samples < 0 ||
        seed > (uint64_t)INT64_MAX)
        return ordo__error_set(ORDO_ERR_INVAL, "ordo_batches: a data set of %lld samples, batch %d "
                              "(1 to %d), %lld samples in all, seed %" PRIu64 " (below 2^63)",
                              (long long)dataset_size, batch, ORDO_BATCH_MAX, (long long)samples,
                              seed);
    char *text = NULL;
    if (asprintf(&text, "{\"n\":%lld,\"batch\":%d,\"samples\":%lld,\"seed\":%" PRIu64
                 ",\"shuffle\":%s}", (long long)dataset_size, batch, (long long)samples, seed,
                 shuffle ? "true" : "false") < 0)
        return ordo__api_fail(ORDO_ERR_NOMEM);
    free(o->batch_spec);
    o->batch_spec = text;
    return 0;
}

/* the next push's iteration: the fewest gradients any tensor has had pushed (-1: none) */
static int64_t next_iteration(const ordo_t *o)
{
    int64_t v = -1;
    for (int i = 0; i < o->n_tensors; i++)
        if (v < 0 || o->t[i].version < v) v = o->t[i].version;
    return v;
}

static bool answered(const ordo_t *o, int64_t unused)
{
    (void)unused;
    return ordo__ps_batch_ready(o->w);
}

int ordo_next_batch(ordo_t *o, int64_t epoch, int64_t *indices, int capacity, int *count,
                    int timeout_ms)
{
    int rc = ordo__api_usable(o, "ordo_next_batch");
    if (rc) return rc;
    if (!o->batch_spec)
        return ordo__error_set(ORDO_ERR_INVAL, "ordo_next_batch: describe the data set with "
                              "ordo_batches first");
    if (!indices || !count || capacity < 1 || epoch < -1)
        return ordo__error_set(ORDO_ERR_INVAL, "ordo_next_batch: %s", epoch < -1 ? "a negative epoch"
                              : "no room for the indices");
    if (o->bound) { /* the library's thread owns the connection */
        int64_t iter = next_iteration(o);
        /* backup workers: a worker the servers left behind goes on where they are (the
         * program's next iteration, as the loop that asks for this batch will find) */
        int64_t newest = ordo__ps_newest_version(o->w);
        if (o->conf.backup > 0 && newest > iter) iter = newest;
        int answer = 0;
        rc = ordo__bound_batch(o->bound, o->batch_spec, epoch, iter, indices, capacity, count,
                               &answer, timeout_ms);
        if (rc == ORDO_ERR_TIMEDOUT || rc == ORDO_ERR_NOMEM) return ordo__api_fail(rc);
        if (rc) return ordo__api_cluster_failed(o, rc);
        return answer;
    }
    /* after a timed-out or interrupted wait, calling again waits for the same answer */
    if (!o->batch_asked) {
        if ((rc = ordo__ps_batch_request(o->w, o->batch_spec, epoch, next_iteration(o))) < 0)
            return rc == ORDO_ERR_RANGE || rc == ORDO_ERR_INVAL ? rc
                                                                 : ordo__api_cluster_failed(o, rc);
        o->batch_asked = true;
    }
    if ((rc = ordo__api_wait_until(o, answered, 0, timeout_ms)) != 0) return rc;
    o->batch_asked = false;
    int64_t e;
    return ordo__ps_batch_take(o->w, indices, capacity, count, &e);
}


int64_t ordo_servers_version(const ordo_t *o)
{
    return o && o->w ? ordo__ps_newest_version(o->w) : -1;
}
