/* backup: bsp with backup workers ([sync] mode = bsp, backup > 0). An iteration's update
 * takes the first workers - backup pushes to come, summed in rank order; a push that comes
 * after its iteration was applied is left out (ORDO_STORE_DROPPED), and the slow workers may
 * pull values newer than their iteration. */
#include "server/consistency/model.h"
#include "server/store_internal.h"

#include <string.h>

#include "common/conf.h"
#include "common/error.h"
#include "core/vec.h"

static int check_push(const ordo__store_t *s, const slot_t *sl, int slice, int worker, int64_t iter,
                      int *late)
{
    if (iter >= 0 && iter < sl->version) {
        *late = ORDO_STORE_DROPPED;
        return 0;
    }
    return ordo__store_check_round(s, sl, slice, worker, iter);
}

/* the first workers - backup pushes of the iteration are in (held): their sum, in rank order,
 * is applied */
static int apply_taken(ordo__store_t *s, slot_t *sl, round_t *rd, bool *updated)
{
    int w, rc, left = rd->taken;
    const float *sum = NULL;
    for (w = 0; w < s->n_workers && left > 1; w++) {
        if (!rd->held[w].owner) continue;
        if (!sum)
            ordo__grad_copy(rd->acc, &rd->held[w].g, sl->numel);
        else
            ordo__grad_add(rd->acc, &rd->held[w].g, sl->numel);
        sum = rd->acc;
        left--;
    }
    while (!rd->held[w].owner)
        w++;
    rc = ordo__store_apply(s, sl, rd, sum, &rd->held[w].g);
    for (w = 0; w < s->n_workers; w++) {
        ordo__store_frame_unref(rd->held[w].owner);
        rd->held[w] = (held_t){{0}, NULL};
    }
    *updated = rc == 0;
    return rc;
}

/* every push is held until the iteration has enough, then summed in worker order, so the sum
 * (and so the model) is the same bit for bit in every run */
static int take_push(ordo__store_t *s, slot_t *sl, int worker, int64_t iter,
                     const ordo__grad_t *g, ordo__store_frame_t *owner, bool *updated)
{
    round_t *rd = &sl->rounds[iter % s->n_rounds];
    ordo__store_frame_t *copy = NULL;
    ordo__grad_t mine = *g;
    if (ordo__store_keep(&mine, &owner, &copy) != 0) return ORDO_ERR_NOMEM;
    rd->pushed[worker] = 1;
    owner->refs++;
    rd->held[worker] = (held_t){mine, owner};
    ordo__store_frame_unref(copy);
    if (++rd->taken == s->n_workers - s->backup) return apply_taken(s, sl, rd, updated);
    return 0;
}

const ordo__sync_model_t ordo__sync_backup = {
    .name = "bsp+backup",
    .mode = ORDO_SYNC_BSP,
    .backup = true,
    .newer_pulls = true,
    .late_resends = true,
    .check_push = check_push,
    .take_push = take_push,
    .pull_ready = ordo__sync_ready_within_staleness,
    .answer_pull = ordo__store_answer_value,
    .pushed = ordo__store_round_pushed,
    .seq = ordo__sync_seq_is_version,
    .push_need = ordo__sync_push_need_iter,
    .pull_need = ordo__sync_pull_need_iter,
};
