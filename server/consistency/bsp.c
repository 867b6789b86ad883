/* bsp: bulk synchronous ([sync] mode = bsp, no backup workers). An iteration's update sums
 * every worker's push in rank order; a pull of iteration t waits for the update of t - 1.
 * Workers may leave, join or be restarted (re-sent pushes recognised). */
#include "server/consistency/model.h"
#include "server/store_internal.h"

#include "common/conf.h"

/* an iteration before the version was applied with every worker's push, and a push marked in
 * the round is held or summed: with re-sends on, either is a restarted worker's again */
static int check_push(const ordo__store_t *s, const slot_t *sl, int slice, int worker, int64_t iter,
                      int *late)
{
    if (s->resend && iter >= 0 &&
        (iter < sl->version || (iter == sl->version && sl->rounds[0].pushed[worker]))) {
        *late = ORDO_STORE_DUPLICATE;
        return 0;
    }
    return ordo__store_check_round(s, sl, slice, worker, iter);
}

const ordo__sync_model_t ordo__sync_bsp = {
    .name = "bsp",
    .mode = ORDO_SYNC_BSP,
    .elastic = true,
    .check_push = check_push,
    .take_push = ordo__store_take_in_order,
    .pull_ready = ordo__sync_ready_within_staleness,
    .answer_pull = ordo__store_answer_value,
    .pushed = ordo__store_round_pushed,
    .seq = ordo__sync_seq_is_version,
    .push_need = ordo__sync_push_need_iter,
    .pull_need = ordo__sync_pull_need_iter,
};
