/* step_check: the scheduler's check of the step model over the run's first measured
 * iterations after the warm-up (docs/training-order.md). The window's median step goes to
 * ordo__runplan_step_check; a credit it changes goes to every worker in a PLAN
 * {"step": {"credit_bytes": N}}, and the summary's order_step shows the check. */
#include <stdlib.h>

#include "common/error.h"
#include "common/log.h"
#include "scheduler/runplan_step.h"
#include "scheduler/scheduler_internal.h"

#define STEP_CHECK_ITERS 10 /* iterations measured before the check */
#define STEP_CHECK_SKIP 2   /* after a re-plan: iterations left out before the window */

struct ordo__step_check {
    int64_t from, to; /* the window [from, to) */
    double *step, *compute;
    int n, cap;
    bool done;
    int64_t newest;   /* the newest iteration reported */
    bool replanned;   /* the window is after a re-plan: its plan and model are the replan's */
};

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void send_credit(sched_t *s, int64_t credit)
{
    char text[96];
    snprintf(text, sizeof text, "{\"step\": {\"credit_bytes\": %lld}}", (long long)credit);
    for (int i = 0; i < s->n_members; i++) {
        member_t *m = &s->members[i];
        if (m->role == ORDO_ROLE_WORKER && !m->dead && !m->done)
            ordo__sched_reply(s, m->rid, m->rid_len, ORDO_MSG_PLAN, text);
    }
}

static void check(sched_t *s, struct ordo__step_check *c)
{
    c->done = true;
    ordo__step_window_t w = {.from_iter = c->from,
                            .to_iter = c->to,
                            .step_ms = median(c->step, c->n),
                            .compute_ms = median(c->compute, c->n)};
    int64_t credit = -1;
    json_t *plan = c->replanned ? ordo__replan_last_plan(s->replan) : s->plan;
    const ordo__model_t *model = c->replanned ? ordo__replan_last_model(s->replan) : s->model;
    if (!plan || !model || !json_is_object(json_object_get(plan, "step"))) return;
    int rc = ordo__runplan_step_check(&s->conf, model, s->keys, plan, &w, &credit);
    if (rc) {
        ORDO_WARN("order: the step model's check failed (%s); the run keeps its plan",
                  ordo__error_text(rc));
        return;
    }
    if (credit >= 0) send_credit(s, credit);
    json_t *step = json_object_get(plan, "step");
    if (step && s->log) ordo__runlog_set_section(s->log, "order_step", json_deep_copy(step));
}

/* the check's state, made at its first use (NULL: no step model, or out of memory) */
static struct ordo__step_check *state(sched_t *s)
{
    if (s->step_check || s->step_check_off) return s->step_check;
    struct ordo__step_check *c = s->step_check = calloc(1, sizeof *c);
    int cap = STEP_CHECK_ITERS * s->conf.workers;
    if (c) {
        c->step = malloc(sizeof *c->step * (size_t)cap);
        c->compute = malloc(sizeof *c->compute * (size_t)cap);
    }
    if (!c || !c->step || !c->compute) {
        ordo__sched_step_check_free(s);
        s->step_check_off = true;
        return NULL;
    }
    c->cap = cap;
    c->from = s->conf.warmup;
    c->to = c->from + STEP_CHECK_ITERS;
    c->newest = -1;
    return c;
}

void ordo__sched_step_check_stats(sched_t *s, const ordo__iter_stats_t *st)
{
    if (!s->step_check && !json_is_object(json_object_get(s->plan, "step")))
        s->step_check_off = true;
    struct ordo__step_check *c = state(s);
    if (!c) return;
    if (st->iter > c->newest) c->newest = st->iter;
    if (c->done) return;
    if (st->iter >= c->from && st->iter < c->to && c->n < c->cap) {
        c->step[c->n] = st->step_ms;
        c->compute[c->n] = st->compute_ms;
        c->n++;
    }
    /* every live worker's window is in, or one is two iterations past it */
    if (c->n >= STEP_CHECK_ITERS * s->n_live || (st->iter >= c->to + 2 && c->n > 0)) check(s, c);
}

void ordo__sched_step_check_replanned(sched_t *s)
{
    json_t *plan = ordo__replan_last_plan(s->replan);
    if (!json_is_object(json_object_get(plan, "step"))) return;
    /* the re-plan's step model replaces the start-up's in the summary until its check */
    if (s->log)
        ordo__runlog_set_section(s->log, "order_step",
                                json_deep_copy(json_object_get(plan, "step")));
    s->step_check_off = false; /* a start-up plan without a step model may get one now */
    struct ordo__step_check *c = state(s);
    if (!c) return;
    c->replanned = true;
    c->done = false;
    c->n = 0;
    c->from = (c->newest > s->conf.warmup - 1 ? c->newest : s->conf.warmup - 1) + 1 + STEP_CHECK_SKIP;
    c->to = c->from + STEP_CHECK_ITERS;
}

void ordo__sched_step_check_free(sched_t *s)
{
    struct ordo__step_check *c = s->step_check;
    if (!c) return;
    free(c->step);
    free(c->compute);
    free(c);
    s->step_check = NULL;
}
