/* step_search: iterated local search over the priority order, scored by the training step
 * model (step_search.h). */
#include "planner/step_search.h"
#include "planner/seq_move.h"

#include "common/clock.h"
#include "common/error.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define PERTURB_MOVES 3 /* random moves from the best order at a restart */

typedef struct {
    const ordo__model_t *m;
    const ordo__oracle_times_t *t;
    const ordo__step_opts_t *o;
    int n;
    int *prio; /* scratch: the priorities of the order being scored */
    uint64_t rng;
    long evals;
} step_search_t;

/* score models the step of seq (the parameters, first to last) */
static int score(step_search_t *s, const int *seq, double *step_us)
{
    for (int r = 0; r < s->n; r++)
        s->prio[seq[r]] = r;
    ordo__step_result_t res;
    int rc = ordo__step_simulate(s->m, s->t, s->prio, s->o, &res);
    s->evals++;
    *step_us = res.step_us;
    return rc;
}

/* a strict improvement beyond rounding noise */
static int improves(double f, double ref)
{
    return f < ref - 1e-9 * fabs(ref);
}

/* random_move swaps two places of seq or moves one parameter to another's place */
static void random_move(step_search_t *s, int *seq)
{
    int i = ordo__rng_below(&s->rng, s->n), j;
    do
        j = ordo__rng_below(&s->rng, s->n);
    while (j == i);
    ordo_seq_move(seq, i, j, (int)(ordo__rng_next(&s->rng) & 1));
}

static int out_of_budget(const step_search_t *s, const ordo__search_opts_t *so, int64_t deadline)
{
    if (so->max_evals > 0 && s->evals >= so->max_evals) return 1;
    return so->budget_ms > 0 && ordo__clock_ns() >= deadline;
}

/* start_seq lists the parameters by start priority, ties by index (a stable insertion sort:
 * models have hundreds of parameters at most) */
static void start_seq(const int *prio, int n, int *seq)
{
    for (int p = 0; p < n; p++) {
        int k = p;
        while (k > 0 && prio[seq[k - 1]] > prio[p]) {
            seq[k] = seq[k - 1];
            k--;
        }
        seq[k] = p;
    }
}

int ordo__step_search(const ordo__model_t *m, const ordo__oracle_times_t *t,
                     const int *start_priority, const ordo__step_opts_t *o,
                     const ordo__search_opts_t *so, int *priority, ordo__step_search_result_t *res)
{
    if (!m || !t || !start_priority || !o || !so || !priority)
        return ordo__error_set(ORDO_ERR_INVAL, "ordo__step_search: bad args");
    if (so->budget_ms <= 0 && so->max_evals <= 0)
        return ordo__error_set(ORDO_ERR_INVAL, "ordo__step_search: no budget and no evaluation cap");
    if (o->slice_bytes < 0 || o->credit_bytes < 0)
        return ordo__error_set(ORDO_ERR_INVAL, "ordo__step_search: the slice and credit must be set");
    int n = m->n_params, rc = 0;
    int64_t deadline = ordo__clock_ns() + (int64_t)so->budget_ms * 1000000;
    step_search_t s = {.m = m, .t = t, .o = o, .n = n, .rng = so->seed};
    int *cur = malloc(sizeof *cur * (size_t)n), *cand = malloc(sizeof *cand * (size_t)n);
    int *best = malloc(sizeof *best * (size_t)n);
    s.prio = malloc(sizeof *s.prio * (size_t)n);
    if (!cur || !cand || !best || !s.prio) {
        rc = ordo__error_set(ORDO_ERR_NOMEM, "ordo__step_search: out of memory");
        goto done;
    }
    start_seq(start_priority, n, cur);
    memcpy(best, cur, sizeof *cur * (size_t)n);
    double fcur, fbest, fstart;
    if ((rc = score(&s, cur, &fcur)) != 0) goto done;
    fbest = fstart = fcur;
    /* plateau patience: a few tries per parameter (the step model is flat over most moves:
     * whatever does not change the busiest resource's idle time changes nothing) */
    long limit = 4L * n, stale = 0;
    if (limit < 32) limit = 32;
    while (n > 1 && !out_of_budget(&s, so, deadline)) {
        memcpy(cand, cur, sizeof *cur * (size_t)n);
        random_move(&s, cand);
        double f;
        if ((rc = score(&s, cand, &f)) != 0) goto done;
        if (f <= fcur + 1e-9 * fabs(fcur)) { /* not worse: taken (sideways crosses plateaus) */
            stale = improves(f, fcur) ? 0 : stale + 1;
            memcpy(cur, cand, sizeof *cur * (size_t)n);
            fcur = f;
            if (improves(f, fbest)) {
                memcpy(best, cur, sizeof *cur * (size_t)n);
                fbest = f;
            }
        } else {
            stale++;
        }
        if (stale >= limit) { /* restart near the best order */
            memcpy(cur, best, sizeof *cur * (size_t)n);
            for (int k = 0; k < PERTURB_MOVES; k++)
                random_move(&s, cur);
            if ((rc = score(&s, cur, &fcur)) != 0) goto done;
            stale = 0;
        }
    }
    for (int r = 0; r < n; r++)
        priority[best[r]] = r;
    if (res) *res = (ordo__step_search_result_t){.start_us = fstart, .step_us = fbest,
                                                 .evals = s.evals};
done:
    free(cur);
    free(cand);
    free(best);
    free(s.prio);
    return rc;
}

int ordo__step_search_plan(const ordo__model_t *m, const ordo__oracle_times_t *t, int *priority,
                          const ordo__step_opts_t *o, const ordo__search_opts_t *so,
                          ordo__step_search_result_t *res)
{
    if (!m || !t || !priority || !o || !so || !res)
        return ordo__error_set(ORDO_ERR_INVAL, "ordo__step_search_plan: bad args");
    int n = m->n_params;
    int *listed = malloc(sizeof *listed * (size_t)(n > 0 ? n : 1));
    if (!listed) return ordo__error_set(ORDO_ERR_NOMEM, "ordo__step_search_plan: out of memory");
    for (int p = 0; p < n; p++)
        listed[p] = p;
    ordo__step_result_t planned, forward;
    int rc = ordo__step_simulate(m, t, priority, o, &planned);
    if (!rc) rc = ordo__step_simulate(m, t, listed, o, &forward);
    int from_listed = !rc && forward.step_us < planned.step_us;
    if (!rc) rc = ordo__step_search(m, t, from_listed ? listed : priority, o, so, priority, res);
    if (!rc) {
        res->planned_us = planned.step_us;
        res->listed_us = forward.step_us;
        res->from_listed = from_listed;
    }
    free(listed);
    return rc;
}
