/* ssp: stale synchronous ([sync] mode = ssp, staleness s). The store keeps rounds for s + 1
 * iterations at once; each is applied in iteration order once every worker's push of it is
 * in, and a pull of iteration t is answered once the value is at t - s at least, with the
 * pushes of the later iterations that have arrived so far folded into a copy
 * (docs/stragglers.md). With replicas a primary forwards every push to its backups, which
 * take it as it did. */
#include "server/consistency/model.h"
#include "server/store_internal.h"

#include <stdlib.h>
#include <string.h>

#include "common/conf.h"
#include "common/error.h"
#include "core/vec.h"

static int check_push(const ordo__store_t *s, const slot_t *sl, int slice, int worker, int64_t iter,
                      int *late)
{
    (void)late;
    return ordo__store_check_round(s, sl, slice, worker, iter);
}

/* a value behind iter is answered with a fresh buffer: the updates of iterations version ..
 * iter - 1 as if their pushes received so far were all, on scratch copies of the gradient sum
 * and the momentum (the stored value and momentum are untouched until each is complete) */
static int answer_pull(ordo__store_t *s, slot_t *sl, int64_t iter, void **data, size_t *bytes,
                       void **hint)
{
    if (sl->version >= iter) return ordo__store_answer_value(s, sl, iter, data, bytes, hint);
    ordo__vbuf_t *b = ordo__store_vbuf_new(sl->numel);
    if (!b) return ORDO_ERR_NOMEM;
    memcpy(b->data, sl->value->data, (size_t)sl->numel * sizeof(float));
    size_t n = (size_t)sl->numel;
    float *g = malloc(n * sizeof *g), *mom = sl->mom ? malloc(n * sizeof *mom) : NULL;
    if (!g || (sl->mom && !mom)) {
        free(g);
        free(mom);
        ordo__store_vbuf_unref(b);
        return ORDO_ERR_NOMEM;
    }
    if (mom) memcpy(mom, sl->mom, n * sizeof *mom);
    for (int64_t t = sl->version; t < iter; t++) {
        round_t *rd = &sl->rounds[t % s->n_rounds];
        if (rd->sum)
            memcpy(g, rd->sum, n * sizeof *g);
        else
            memset(g, 0, n * sizeof *g);
        for (int w = 0; w < s->n_workers; w++)
            if (rd->held[w].owner) ordo__grad_add(g, &rd->held[w].g, sl->numel);
        ordo__optim_step(&sl->opt, b->data, b->data, mom, g, s->scale, sl->numel);
    }
    free(g);
    free(mom);
    *data = b->data;
    *bytes = (size_t)sl->numel * sizeof(float);
    *hint = b;
    return 0;
}

/* the pushes taken into its rounds since its initial value (a backup takes the same pushes,
 * forwarded by the primary) */
static int64_t seq(const ordo__store_t *s, const slot_t *sl)
{
    (void)s;
    return sl->taken;
}

const ordo__sync_model_t ordo__sync_ssp = {
    .name = "ssp",
    .mode = ORDO_SYNC_SSP,
    .window = true,
    .forwards_pushes = true,
    .check_push = check_push,
    .take_push = ordo__store_take_in_order,
    .pull_ready = ordo__sync_ready_within_staleness,
    .answer_pull = answer_pull,
    .pushed = ordo__store_round_pushed,
    .seq = seq,
    .push_need = ordo__sync_push_need_seq,
    .pull_need = ordo__sync_pull_need_seq,
};
