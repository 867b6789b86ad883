/* asp: asynchronous ([sync] mode = asp). Every push is an update of its own, applied as it
 * comes; each slice keeps a push clock per worker (the iteration of its next push), and its
 * version is the smallest. A pull is answered at once, with whatever value is there. */
#include "server/consistency/model.h"
#include "server/store_internal.h"

#include "common/conf.h"
#include "common/error.h"

static int check_push(const ordo__store_t *s, const slot_t *sl, int slice, int worker, int64_t iter,
                      int *late)
{
    (void)s;
    (void)late;
    if (iter != sl->clock[worker])
        return ordo__error_set(ORDO_ERR_PROTO,
                              "push of iteration %lld to slice %d from worker %d, "
                              "whose next is %lld",
                              (long long)iter, slice, worker, (long long)sl->clock[worker]);
    return 0;
}

static int take_push(ordo__store_t *s, slot_t *sl, int worker, int64_t iter,
                     const ordo__grad_t *g, ordo__store_frame_t *owner, bool *updated)
{
    (void)iter;
    (void)owner;
    int rc = ordo__store_step(s, sl, NULL, g);
    if (rc) return rc;
    sl->clock[worker]++;
    int64_t v = sl->clock[0];
    for (int w = 1; w < s->n_workers; w++)
        if (sl->clock[w] < v) v = sl->clock[w];
    sl->version = v;
    *updated = true;
    return 0;
}

static bool pull_ready(const ordo__store_t *s, int64_t version, int64_t iter)
{
    (void)s;
    (void)version;
    (void)iter;
    return true;
}

static bool pushed(const ordo__store_t *s, const slot_t *sl, int worker, int64_t iter)
{
    (void)s;
    return iter < sl->clock[worker];
}

/* the pushes applied: the sum of the workers' push clocks */
static int64_t seq(const ordo__store_t *s, const slot_t *sl)
{
    int64_t n = 0;
    for (int w = 0; w < s->n_workers; w++)
        n += sl->clock[w];
    return n;
}

const ordo__sync_model_t ordo__sync_asp = {
    .name = "asp",
    .mode = ORDO_SYNC_ASP,
    .clocks = true,
    .newer_pulls = true,
    .check_push = check_push,
    .take_push = take_push,
    .pull_ready = pull_ready,
    .answer_pull = ordo__store_answer_value,
    .pushed = pushed,
    .seq = seq,
    .push_need = ordo__sync_push_need_seq,
    .pull_need = ordo__sync_pull_need_seq,
};
