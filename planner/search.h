/* search: the `search` ordering policy, beyond the paper. Starting from a given order
 * (TAO's), it improves the order by iterated local search (swap and insert moves between
 * recvs of one channel, perturbation from the best order at a local optimum), scoring every
 * candidate with the simulator; it keeps the best order seen, so it never returns one worse
 * than its start. Also the makespan bounds of `ordo-plan bounds`. */
#ifndef ORDO_SEARCH_H
#define ORDO_SEARCH_H

#include <stdint.h>

#include "planner/sim.h"

typedef struct ordo__search_opts {
    int budget_ms;  /* wall-clock budget; 0 = no time limit (then max_evals must be set) */
    long max_evals; /* stop after this many simulations; 0 = no cap. Tests use this alone,
                       which makes the result independent of timing */
    uint64_t seed;  /* random seed (same seed and cap, same result) */
    int maximize;   /* look for the worst order instead of the best */
} ordo__search_opts_t;

/* ordo__search_opts_default sets a 2000 ms budget, no cap, seed 1, minimize. */
void ordo__search_opts_default(ordo__search_opts_t *o);

/* What one search gives. */
typedef struct ordo__search_result {
    double start_us;    /* simulated makespan of the start order */
    double makespan_us; /* simulated makespan of the order returned (never above start_us
                           when minimizing, never below when maximizing) */
    long evals;         /* simulations made */
} ordo__search_result_t;

/* ordo__search_run searches from start_priority and writes the best order found into
 * priority (0..n-1, a total order; it may alias start_priority); *res (may be NULL) gets
 * the figures of the search. */
int ordo__search_run(ordo__sim_t *sim, const int *start_priority, const ordo__search_opts_t *o,
                    int *priority, ordo__search_result_t *res);

/* Result of ordo__search_bounds. */
typedef struct ordo__search_bounds {
    double best_us;  /* smallest makespan found */
    double worst_us; /* largest makespan found */
    int exhaustive;  /* 1 when every order was simulated (exact bounds) */
} ordo__search_bounds_t;

/* ordo__search_bounds finds the best and worst makespans: exhaustively when the model has at
 * most ORDO_SIM_EXHAUSTIVE_MAX recvs, else by searching from start_priority in both
 * directions with options o (maximize is ignored). best_priority and worst_priority (either
 * may be NULL) get orders reaching them. */
int ordo__search_bounds(ordo__sim_t *sim, const int *start_priority, const ordo__search_opts_t *o,
                       ordo__search_bounds_t *out, int *best_priority, int *worst_priority);

#endif
