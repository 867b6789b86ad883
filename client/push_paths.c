/* push_paths: the push paths there are, and which one a plan asks for. */
#include "client/push.h"
#include "common/error.h"
#include "core/plan.h"

/* one row per [push] mode, indexed by ordo__push_mode_t */
static const ordo__push_ops_t *const modes[] = {
    [ORDO_PUSH_DENSE] = &ordo__push_dense_ops,
    [ORDO_PUSH_MERGED] = &ordo__push_merged_ops,
    [ORDO_PUSH_SPARSE] = &ordo__push_sparse_ops,
};

void ordo__push_ops_of_plan(const ordo__plan_t *plan, const ordo__push_ops_t **ops)
{
    *ops = plan->has_intra    ? &ordo__push_hier_ops
           : plan->has_merge  ? modes[ORDO_PUSH_MERGED]
           : plan->has_sparse ? modes[ORDO_PUSH_SPARSE]
                              : modes[ORDO_PUSH_DENSE];
}

int ordo__push_ops_for(int mode, const ordo__push_ops_t **ops)
{
    if (mode < 0 || mode >= (int)(sizeof modes / sizeof modes[0]) || !modes[mode])
        return ordo__error_set(ORDO_ERR_INVAL, "no push path for push.mode %d", mode);
    *ops = modes[mode];
    return 0;
}
