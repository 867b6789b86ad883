/* ps_plan: the worker's plan (core/plan.h): read once at join, its push credit and its
 * host-group backend taken, the start-up calibration's merge groups (the scheduler's PLAN)
 * and a collective re-plan applied, the push path following it. */
#include "client/ps.h"
#include "common/error.h"
#include "common/log.h"
#include "client/push.h"
#include "core/plan.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/ps_internal.h"

bool ordo__ps_take_credit(ordo__ps_t *w, const ordo__plan_t *plan)
{
    if (plan->credit_bytes < 0) return false;
    if (w->conf.credit_bytes == ORDO_CONF_AUTO_BYTES) /* else the conf's credit wins */
        ordo__credit_set_limit(&w->credit, plan->credit_bytes);
    return true;
}

void ordo__ps_credit_from_plan(ordo__ps_t *w)
{
    w->push_fifo = !w->plan->priorities;
    ordo__ps_take_credit(w, w->plan);
}

void ordo__ps_intra_from_plan(ordo__ps_t *w, ordo__plan_t *plan)
{
    if (!plan->has_intra || strcmp(plan->intra.backend, "auto") != 0) return;
    snprintf(plan->intra.backend, sizeof plan->intra.backend, "%s", w->intra);
    ORDO_INFO("intra.backend = auto: %s (intra.device %s)", w->intra,
              w->conf.intra_device == ORDO_DEVICE_CUDA ? "cuda" : "cpu");
}

/* ordo__ps_read_plan: every reader takes w->plan's fields, parsed once.
 * The text goes (nothing reads it again). */
int ordo__ps_read_plan(ordo__ps_t *w)
{
    const char *text = w->node.plan_json;
    int rc = ordo__plan_parse(text, text ? strlen(text) : 0, w->node.keys->n_keys,
                              w->node.n_servers, &w->plan);
    if (rc) return rc;
    free(w->node.plan_json);
    w->node.plan_json = NULL;
    ordo__ps_intra_from_plan(w, w->plan);
    return 0;
}

/* the scheduler's check of its step model against the first measured iterations:
 * {"step": {"credit_bytes": N}}, a new push credit (only with [order] credit_bytes = auto) */
static bool take_step_plan(ordo__ps_t *w, const ordo__plan_t *p)
{
    if (!ordo__ps_take_credit(w, p)) return false;
    if (w->node.rank == 0 && w->conf.credit_bytes == ORDO_CONF_AUTO_BYTES)
        ORDO_INFO("push credit now %lld bytes (the scheduler's check of the step model)",
                  (long long)w->credit.limit);
    return true;
}

/* the scheduler's PLAN: after a start-up calibration {"merge": {...}}, or a new credit */
int ordo__ps_on_plan(ordo__ps_t *w, ordo__msg_t *m)
{
    char buf[256];
    size_t len = 0;
    const char *d = ordo__msg_data(m, 0, &len);
    ordo__plan_t *p = NULL;
    int rc = ordo__plan_parse(d, d ? len : 0, w->node.keys->n_keys, w->node.n_servers, &p);
    if (!rc && take_step_plan(w, p)) {
        ordo__plan_destroy(&p);
        return 0;
    }
    if (!w->want_plan) {
        ORDO_DEBUG("ignored a PLAN");
    } else if (rc || w->merge_plan || !p->has_merge) {
        ORDO_WARN("dropped an unexpected PLAN from the scheduler (%s)%s%s",
                  ordo__msg_text(m, 0, buf, sizeof buf), rc ? ": " : "",
                  rc ? ordo__error_text(rc) : "");
    } else {
        w->merge_plan = p;
        p = NULL;
        ordo__ps_add_event(w, ORDO__EV_PLAN, -1, -1);
    }
    ordo__plan_destroy(&p);
    return 0;
}

int ordo__ps_replan_apply(ordo__ps_t *w, const char *plan_json, bool keep_path)
{
    ordo__plan_t *plan = NULL;
    const ordo__push_ops_t *ops;
    int rc = ordo__plan_parse(plan_json, plan_json ? strlen(plan_json) : 0, w->node.keys->n_keys,
                              w->node.n_servers, &plan);
    if (rc) return ordo__error_context(rc, "replan");
    ordo__push_ops_of_plan(plan, &ops);
    /* a path whose state is shared with other workers stays (a host group's memory, owners
     * and thread), and the next values may already be on their way (early pulls); only the
     * plan (the priorities the bound model requests by) and the credit change */
    bool keep = ops->kept_on_replan && w->path && w->path->ops == ops;
    if (keep_path && !keep) {
        rc = ordo__error_set(ORDO_ERR_PROTO,
                            "replan: the new plan asks for push path %s; a "
                            "bound model cannot change its push path (%s)",
                            ops->name, w->path ? w->path->ops->name : "none");
        goto fail;
    }
    if (!keep && (w->outstanding || w->pq_n)) {
        rc = ordo__error_set(ORDO_ERR_INVAL, "replan: %d transfers still in flight",
                            w->outstanding + w->pq_n);
        goto fail;
    }
    /* the group's segments are named by the start-up plan's run id, which a new plan changes */
    if (keep) plan->intra = w->plan->intra;
    ordo__ps_intra_from_plan(w, plan);
    ordo__plan_destroy(&w->plan);
    w->plan = plan;
    if (keep) {
        ordo__ps_credit_from_plan(w);
        ORDO_INFO("replan: new plan applied (push path %s kept: its shared memory and owners "
                  "stay, the new priorities order its requests)",
                  ops->name);
        return 0;
    }
    /* a merged path's groups come from the plan: the path follows it (nothing is in flight) */
    ordo__push_destroy(&w->path);
    if ((rc = ordo__push_new(ops, w, &w->path)) != 0)
        return ordo__error_context(rc, "replan: the push path of the new plan");
    ordo__ps_credit_from_plan(w); /* the re-plan's step model may have tuned it again */
    ORDO_INFO("replan: new plan applied (push path %s)", w->path->ops->name);
    return 0;
fail:
    ordo__plan_destroy(&plan);
    return rc;
}
