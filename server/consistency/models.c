/* models: the table of consistency models ([sync]) and the rows they share. A new model is a
 * file of its own and one row in MODELS. */
#include "server/consistency/model.h"
#include "server/store_internal.h"

#include <stddef.h>

static const ordo__sync_model_t *const MODELS[] = {
    &ordo__sync_bsp,
    &ordo__sync_backup,
    &ordo__sync_ssp,
    &ordo__sync_asp,
};

const ordo__sync_model_t *ordo__sync_model_of(int mode, int backup)
{
    for (size_t i = 0; i < sizeof MODELS / sizeof *MODELS; i++)
        if (MODELS[i]->mode == mode && MODELS[i]->backup == (backup > 0)) return MODELS[i];
    return NULL;
}

bool ordo__sync_ready_within_staleness(const ordo__store_t *s, int64_t version, int64_t iter)
{
    return version >= iter - s->staleness;
}

int64_t ordo__sync_seq_is_version(const ordo__store_t *s, const slot_t *sl)
{
    (void)s;
    return sl->version;
}

int64_t ordo__sync_push_need_iter(const ordo__store_t *s, int slice, int64_t iter)
{
    (void)s;
    (void)slice;
    return iter + 1; /* the version the push's iteration completes */
}

int64_t ordo__sync_pull_need_iter(const ordo__store_t *s, int slice, int64_t iter, bool rides_push)
{
    (void)s;
    (void)slice;
    (void)rides_push;
    return iter;
}

int64_t ordo__sync_push_need_seq(const ordo__store_t *s, int slice, int64_t iter)
{
    (void)iter;
    return ordo__store_seq(s, slice); /* the count right after the push was taken */
}

int64_t ordo__sync_pull_need_seq(const ordo__store_t *s, int slice, int64_t iter, bool rides_push)
{
    /* a plain pull takes the value the model allows at once (its pushes not yet on the
     * backups were not acknowledged: their senders send them again if this server dies); one
     * riding on a push also acknowledges it, so it waits for the backups to hold that push */
    (void)iter;
    return rides_push ? ordo__store_seq(s, slice) : -1;
}
