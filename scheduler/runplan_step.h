/* runplan_step: the slice size and the push credit of a run, chosen by the training step
 * model (planner/step.h) from the run's model, op times, link and priorities, and the plan's
 * "step" member that carries them to the workers and the summary. */
#ifndef ORDO_RUNPLAN_STEP_H
#define ORDO_RUNPLAN_STEP_H

#include <jansson.h>

#include <stdint.h>

#include "common/conf.h"
#include "common/keys.h"
#include "core/model.h"
#include "planner/oracle.h"
#include "planner/step.h"

/* ordo__runplan_step_opts returns the step model's inputs for conf's run: its pushers (one per
 * host group), link, per-message costs, and the conf's slice and credit (maybe auto: < 0). */
ordo__step_opts_t ordo__runplan_step_opts(const ordo__conf_t *conf, const int *channel,
                                        int n_channels);

/* ordo__runplan_step, when ordo__conf_step_tuned(conf), tunes [order] segment_bytes and
 * credit_bytes (those set to auto) with ordo__step_tune under priority (per parameter) and
 * channel, models the step with the values used, logs them and sets plan's "step" member:
 * {"slice_bytes", "credit_bytes", "predicted_step_ms", "bound_ms", "compute_ms", "push_ms",
 *  "answer_ms", "messages"}. oracle may be NULL (the profile's times). Otherwise a no-op. */
int ordo__runplan_step(const ordo__conf_t *conf, const ordo__model_t *m, const ordo__oracle_t *oracle,
                      const int *channel, int n_channels, const int *priority, json_t *plan);

/* ordo__runplan_step_search, for the search policy when ordo__conf_step_tuned(conf), improves
 * priority (the planned order, per parameter) for training: it starts from the better of it
 * and the listed (forward) order under the training step model, with the slice and credit
 * tuned for the planned order, searches within [order] search_budget_ms
 * (ordo__step_search), writes the order found into priority (0..n-1) and sets plan's
 * "step_search" member {"start": "planned"|"listed", "planned_ms", "listed_ms", "found_ms",
 * "evals"}. Otherwise a no-op. */
int ordo__runplan_step_search(const ordo__conf_t *conf, const ordo__model_t *m,
                             const ordo__oracle_t *oracle, const int *channel, int n_channels,
                             int *priority, json_t *plan);

/* ordo__runplan_step_slice returns the slice size plan's "step" member chose, or
 * ordo__conf_segment_bytes(conf) when there is none. */
int64_t ordo__runplan_step_slice(const ordo__conf_t *conf, const json_t *plan);

/* The first measured steps of a run (after the warm-up): the median over every worker. */
typedef struct ordo__step_window {
    int64_t from_iter, to_iter; /* iterations [from_iter, to_iter) */
    double step_ms, compute_ms; /* medians of the workers' step and compute times */
} ordo__step_window_t;

/* ordo__runplan_step_check compares the measured window w with plan's "step" prediction and
 * records it as step's "check" member {"from_iter", "to_iter", "measured_step_ms",
 * "measured_compute_ms", "measured_over_predicted", "agrees"}. When the two are more than
 * 15 % apart it fits the model (ordo__step_correct: compute factor, per-message cost), adds
 * "compute_factor", "msg_us", "corrected_step_ms", "credit_bytes" and, when the credit is
 * auto and the corrected model chooses another, sets step's "credit_bytes" to it
 * ("credit_bytes_planned": the old one) and *new_credit to it; else *new_credit = -1. A plan
 * without a step member is left alone. keys is the run's key map (the planning channels). */
int ordo__runplan_step_check(const ordo__conf_t *conf, const ordo__model_t *m,
                            const ordo__keys_t *keys, json_t *plan, const ordo__step_window_t *w,
                            int64_t *new_credit);

#endif
