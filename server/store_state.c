/* store_state: what replicas and checkpoints read from a store (values, momentum, push
 * records, update counts, asp clocks) and install into one (a slice's whole state). */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "server/consistency/model.h"
#include "server/store_internal.h"

void ordo__store_copy_value(const ordo__store_t *s, int slice, float *dst)
{
    const slot_t *sl = &s->slots[s->slot_of[slice]];
    memcpy(dst, sl->value->data, (size_t)sl->numel * sizeof(float));
}

float *ordo__store_momentum(ordo__store_t *s, int slice)
{
    return ordo__store_owns(s, slice) ? s->slots[s->slot_of[slice]].mom : NULL;
}

int64_t ordo__store_numel(const ordo__store_t *s, int slice)
{
    return ordo__store_owns(s, slice) ? s->slots[s->slot_of[slice]].numel : 0;
}

int64_t ordo__store_bytes(const ordo__store_t *s)
{
    int64_t b = 0;
    for (int i = 0; i < s->n_slots; i++) b += s->slots[i].numel * 4;
    return b;
}

bool ordo__store_pushed(const ordo__store_t *s, int slice, int worker, int64_t iter)
{
    if (!ordo__store_owns(s, slice) || worker < 0 || worker >= s->n_workers) return false;
    const slot_t *sl = &s->slots[s->slot_of[slice]];
    if (iter < sl->version) return true;
    return s->model->pushed(s, sl, worker, iter);
}

bool ordo__store_round_pushed(const ordo__store_t *s, const slot_t *sl, int worker, int64_t iter)
{
    if (iter >= sl->version + s->n_rounds) return false;
    return sl->rounds[iter % s->n_rounds].pushed[worker] != 0;
}

int64_t ordo__store_seq(const ordo__store_t *s, int slice)
{
    const slot_t *sl = &s->slots[s->slot_of[slice]];
    return sl->version < 0 ? sl->version : s->model->seq(s, sl);
}

const int64_t *ordo__store_clocks(const ordo__store_t *s, int slice)
{
    if (!ordo__store_owns(s, slice) || !s->model->clocks) return NULL;
    return s->slots[s->slot_of[slice]].clock;
}

int ordo__store_install_clocks(ordo__store_t *s, int slice, const void *clocks, size_t bytes)
{
    if (!ordo__store_owns(s, slice) || !s->model->clocks)
        return ordo__error_set(ORDO_ERR_INVAL, "slice %d keeps no push clocks here", slice);
    if (bytes != sizeof(int64_t) * (size_t)s->n_workers)
        return ordo__error_set(ORDO_ERR_PROTO, "slice %d: %zu bytes of push clocks, expected %zu",
                              slice, bytes, sizeof(int64_t) * (size_t)s->n_workers);
    slot_t *sl = &s->slots[s->slot_of[slice]];
    memcpy(sl->clock, clocks, bytes);
    int64_t v = sl->clock[0];
    for (int w = 1; w < s->n_workers; w++)
        if (sl->clock[w] < v) v = sl->clock[w];
    sl->version = v;
    return 0;
}

int ordo__store_install(ordo__store_t *s, int slice, int64_t version, const void *value,
                       size_t bytes, const void *mom, size_t mom_bytes)
{
    if (!ordo__store_owns(s, slice)) return ordo__error_set(ORDO_ERR_INVAL, "slice %d is not here", slice);
    slot_t *sl = &s->slots[s->slot_of[slice]];
    int rc = ordo__store_check_size(sl, slice, bytes);
    if (rc) return rc;
    if (version < 0) return ordo__error_set(ORDO_ERR_PROTO, "slice %d: version %lld", slice, (long long)version);
    if (mom && (!sl->mom || mom_bytes != bytes))
        return ordo__error_set(ORDO_ERR_PROTO, "slice %d: %zu bytes of momentum, expected %s", slice,
                              mom_bytes, sl->mom ? "the value's size" : "none");
    bool keep = s->resend && sl->version >= 0 && version == sl->version + 1;
    if (keep || atomic_load(&sl->value->refs) != 1) { /* a send still reads the old value */
        ordo__vbuf_t *nb = ordo__store_vbuf_new(sl->numel);
        if (!nb) return ORDO_ERR_NOMEM;
        /* re-sends on and the state is the next update's: the old value is the one before it */
        ordo__store_vbuf_unref(sl->prev);
        sl->prev = keep ? sl->value : NULL;
        sl->prev_version = keep ? sl->version : -1;
        if (!keep) ordo__store_vbuf_unref(sl->value);
        sl->value = nb;
    } else {
        ordo__store_vbuf_unref(sl->prev); /* a state of another version: what was kept is not its past */
        sl->prev = NULL;
        sl->prev_version = -1;
    }
    memcpy(sl->value->data, value, bytes);
    if (sl->mom) {
        if (mom)
            memcpy(sl->mom, mom, bytes);
        else
            memset(sl->mom, 0, bytes);
    }
    for (int r = 0; r < s->n_rounds; r++) /* round r holds the iteration = r mod n_rounds */
        ordo__store_round_reset(s, &sl->rounds[r],
                    version + ((r - version % s->n_rounds) + s->n_rounds) % s->n_rounds);
    sl->version = version;
    return 0;
}
