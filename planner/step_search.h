/* step_search: the `search` policy in training. TAO and the search of search.h score orders
 * by the forward pass with every pull at the start (TicTac's set-up); in training the step
 * model (step.h) is the score that counts: gradients ready in backward order, slices behind a
 * credit, answers greedy by priority, the next forward pass waiting per parameter. This is an
 * iterated local search over the whole priority order scored by ordo__step_simulate with a
 * fixed slice size and credit: a move swaps two parameters' places or moves one to another's
 * place, moves that are not worse are taken, and after a plateau of tries without a strict
 * improvement it restarts from the best order with a few random moves. It returns the best
 * order seen, so never one modelled slower than its start. */
#ifndef ORDO_STEP_SEARCH_H
#define ORDO_STEP_SEARCH_H

#include "planner/search.h"
#include "planner/step.h"

/* What one step search gives. */
typedef struct ordo__step_search_result {
    double start_us; /* the modelled step of the start order */
    double step_us;  /* the modelled step of the order returned (<= start_us) */
    long evals;      /* steps modelled */
    /* ordo__step_search_plan only: the starts it chose between */
    double planned_us; /* the modelled step of the planned order */
    double listed_us;  /* the modelled step of the listed (forward) order */
    int from_listed;   /* 1: the search started from the listed order */
} ordo__step_search_result_t;

/* ordo__step_search searches from start_priority (per parameter, smaller first; ties by
 * index) under o (its slice and credit fixed, neither auto) and writes the best order found
 * into priority as 0..n-1 (it may alias start_priority); so->maximize is ignored, budget_ms
 * and max_evals bound it as for ordo__search_run (same seed and cap, same result). */
int ordo__step_search(const ordo__model_t *m, const ordo__oracle_times_t *t,
                     const int *start_priority, const ordo__step_opts_t *o,
                     const ordo__search_opts_t *so, int *priority, ordo__step_search_result_t *res);

/* ordo__step_search_plan is the training search of a plan: it starts from the better of
 * priority (the planned order) and the listed order (the parameters' forward order, layer by
 * layer) under o, and replaces priority with the order found (0..n-1). */
int ordo__step_search_plan(const ordo__model_t *m, const ordo__oracle_times_t *t, int *priority,
                          const ordo__step_opts_t *o, const ordo__search_opts_t *so,
                          ordo__step_search_result_t *res);

#endif
