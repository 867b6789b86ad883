/* bound_coll: a bound model's calls (client/bound.h) that run a collective or a service of the
 * scheduler on the library's thread: barriers, broadcasts, re-plans (applied by the thread,
 * between iterations) and the batch service; the thread takes their answers in bound.c. */
#include "client/bound.h"
#include "client/bound_internal.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"

static bool barrier_reached(const ordo__bound_t *b)
{
    return b->barrier_done >= b->barrier_want;
}

int ordo__bound_barrier(ordo__bound_t *b, int64_t id, int timeout_ms)
{
    int rc = ordo__bound_post_cmd(b, (cmd_t){CMD_BARRIER, 0, id, NULL, NULL, 0});
    if (rc) return rc;
    pthread_mutex_lock(&b->mu);
    b->barrier_want = id;
    rc = ordo__bound_wait_for(b, barrier_reached, timeout_ms);
    pthread_mutex_unlock(&b->mu);
    return rc;
}

static bool bcast_reached(const ordo__bound_t *b)
{
    return b->bcast_done >= b->bcast_want;
}

int ordo__bound_broadcast(ordo__bound_t *b, int64_t id, int root, void *buf, size_t bytes,
                          int timeout_ms)
{
    /* after a timed-out wait the program calls again with the same id: not sent twice */
    pthread_mutex_lock(&b->mu);
    bool sent = b->bcast_want >= id;
    b->bcast_want = id;
    pthread_mutex_unlock(&b->mu);
    if (!sent) {
        int rc = ordo__bound_post_cmd(b, (cmd_t){CMD_BCAST, root, id, NULL, buf, bytes});
        if (rc) return rc;
    }
    pthread_mutex_lock(&b->mu);
    int rc = ordo__bound_wait_for(b, bcast_reached, timeout_ms);
    pthread_mutex_unlock(&b->mu);
    return rc;
}

static bool replan_answered(const ordo__bound_t *b)
{
    return b->replan_done;
}

int ordo__bound_replan(ordo__bound_t *b, char *names, char *profile, int timeout_ms,
                       char **answer)
{
    /* after a timed-out wait the program calls again: the same re-plan, not asked twice */
    pthread_mutex_lock(&b->mu);
    bool asked = b->replan_asked;
    if (!asked) {
        b->replan_asked = true;
        b->replan_done = false;
    }
    pthread_mutex_unlock(&b->mu);
    int rc = 0;
    if (!asked) {
        rc = ordo__bound_post_cmd(b, (cmd_t){CMD_REPLAN, 0, 0, names, profile, 0});
        if (rc) {
            free(profile);
            b->replan_asked = false;
            return rc;
        }
    } else {
        free(names);
        free(profile);
    }
    pthread_mutex_lock(&b->mu);
    rc = ordo__bound_wait_for(b, replan_answered, timeout_ms);
    if (!rc) {
        *answer = b->replan_text;
        b->replan_text = NULL;
        rc = b->replan_rc;
    }
    if (rc != ORDO_ERR_TIMEDOUT) b->replan_asked = false;
    pthread_mutex_unlock(&b->mu);
    return rc;
}

void ordo__bound_reorder(ordo__bound_t *b)
{
    pthread_mutex_lock(&b->mu);
    ordo__bound_sort_ctx = b;
    qsort(b->order, (size_t)b->n, sizeof *b->order, ordo__bound_by_priority);
    pthread_mutex_unlock(&b->mu);
}

int ordo__bound_report(ordo__bound_t *b, const char *json)
{
    char *copy = strdup(json);
    if (!copy) return ORDO_ERR_NOMEM;
    return ordo__bound_post_cmd(b, (cmd_t){CMD_REPORT, 0, 0, copy, NULL, 0});
}

static bool batch_answered(const ordo__bound_t *b)
{
    return b->batch_done;
}

int ordo__bound_batch(ordo__bound_t *b, const char *spec, int64_t epoch, int64_t iter,
                      int64_t *idx, int cap, int *count, int *answer, int timeout_ms)
{
    /* after a timed-out wait, calling again waits for the same answer */
    pthread_mutex_lock(&b->mu);
    bool asked = b->batch_asked;
    if (!asked) {
        if (b->batch_cap < cap) {
            int64_t *p = realloc(b->batch_idx, sizeof *p * (size_t)cap);
            if (!p) {
                pthread_mutex_unlock(&b->mu);
                return ORDO_ERR_NOMEM;
            }
            b->batch_idx = p;
            b->batch_cap = cap;
        }
        b->batch_done = false;
        b->batch_asked = true;
    }
    pthread_mutex_unlock(&b->mu);
    if (!asked) {
        char *copy = strdup(spec);
        int rc = copy ? ordo__bound_post_cmd(b, (cmd_t){CMD_BATCH, (int)epoch, iter, copy, NULL, 0})
                      : ORDO_ERR_NOMEM;
        if (rc) {
            b->batch_asked = false;
            return rc;
        }
    }
    pthread_mutex_lock(&b->mu);
    int rc = ordo__bound_wait_for(b, batch_answered, timeout_ms);
    if (!rc) {
        *answer = b->batch_rc;
        int n = b->batch_n < cap ? b->batch_n : cap;
        if (*answer == 0) memcpy(idx, b->batch_idx, sizeof *idx * (size_t)n);
        *count = *answer == 0 ? n : 0;
        b->batch_asked = false;
    } else if (rc != ORDO_ERR_TIMEDOUT) {
        b->batch_asked = false;
    }
    pthread_mutex_unlock(&b->mu);
    return rc;
}
