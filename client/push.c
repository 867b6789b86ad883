/* push: picks a push path from the plan and [push] mode, and frees it. */
#include "client/push.h"
#include "common/error.h"

#include <jansson.h>

#include <stdlib.h>

/* one row per path, indexed by ordo_push_mode_t */
static const ordo__push_ops_t *const paths[] = {
    [ORDO_PUSH_DENSE] = &ordo__push_dense_ops,
    [ORDO_PUSH_MERGED] = &ordo__push_merged_ops,
    [ORDO_PUSH_SPARSE] = &ordo__push_sparse_ops,
    [ORDO__PUSH_HIER] = &ordo__push_hier_ops,
};

int ordo__push_mode_of_plan(const char *plan_json, int *mode)
{
    /* as the paths read their members: a plan that does not parse has neither */
    json_t *plan = plan_json ? json_loads(plan_json, 0, NULL) : NULL;
    json_t *merge = json_object_get(plan, "merge");
    int m = json_is_object(json_object_get(plan, "intra"))  ? ORDO__PUSH_HIER
            : merge && !json_is_null(merge)                   ? ORDO_PUSH_MERGED
            : json_is_object(json_object_get(plan, "sparse")) ? ORDO_PUSH_SPARSE
                                                              : ORDO_PUSH_DENSE;
    json_decref(plan);
    *mode = m;
    return 0;
}

int ordo__push_ops_for(int mode, const ordo__push_ops_t **ops)
{
    if (mode < 0 || mode >= (int)(sizeof paths / sizeof paths[0]) || !paths[mode])
        return ordo_error_set(ORDO_ERR_INVAL, "no push path for push.mode %d", mode);
    *ops = paths[mode];
    return 0;
}

int ordo__push_new(int mode, ordo__ps_t *ps, ordo__push_t **out)
{
    const ordo__push_ops_t *ops;
    int rc = ordo__push_ops_for(mode, &ops);
    if (rc) return rc;
    ordo__push_t *p = NULL;
    if ((rc = ops->create(ps, &p)) != 0) return rc;
    p->ops = ops;
    p->ps = ps;
    *out = p;
    return 0;
}

void ordo__push_destroy(ordo__push_t **pp)
{
    ordo__push_t *p = *pp;
    if (!p) return;
    p->ops->destroy(p);
    *pp = NULL;
}
