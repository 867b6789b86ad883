/* runplan_step: the slice size and the push credit of a run, chosen by the training step
 * model (planner/step.h) from the run's model, op times, link and priorities, and the plan's
 * "step" member that carries them to the workers and the summary. */
#ifndef ORDO_RUNPLAN_STEP_H
#define ORDO_RUNPLAN_STEP_H

#include <jansson.h>

#include "common/conf.h"
#include "core/model.h"
#include "planner/oracle.h"

/* ordo_runplan_step, when ordo_conf_step_tuned(conf), tunes [order] segment_bytes and
 * credit_bytes (those set to auto) with ordo_step_tune under priority (per parameter) and
 * channel, models the step with the values used, logs them and sets plan's "step" member:
 * {"slice_bytes", "credit_bytes", "predicted_step_ms", "bound_ms", "compute_ms", "push_ms",
 *  "answer_ms", "messages"}. oracle may be NULL (the profile's times). Otherwise a no-op. */
int ordo_runplan_step(const ordo_conf_t *conf, const ordo_model_t *m, const ordo_oracle_t *oracle,
                      const int *channel, int n_channels, const int *priority, json_t *plan);

/* ordo_runplan_step_slice returns the slice size plan's "step" member chose, or
 * ordo_conf_segment_bytes(conf) when there is none. */
int64_t ordo_runplan_step_slice(const ordo_conf_t *conf, const json_t *plan);

#endif
