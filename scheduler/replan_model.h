/* replan_model: the model a collective re-plan (ordo_replan, docs/api.md) plans with. Worker 0
 * sends an ordo-model/1 profile whose parameters are the cluster's tensors, by name and
 * size, in any order; this module checks that and rebuilds the profile with its parameters
 * in tensor order, so that the run plan's priorities are indexed by tensor. */
#ifndef ORDO_REPLAN_MODEL_H
#define ORDO_REPLAN_MODEL_H

#include <stddef.h>

#include "core/model.h"

/* ordo__replan_model_match loads the profile (len bytes of ordo-model/1 text) and matches its
 * parameters to the cluster's tensors: names[i] (n names) is tensor i's name and numel[i]
 * its number of elements. On success *out is a new model (ordo__model_destroy) with the
 * profile's ops and times and parameter i = tensor i, in dtype. Fails with ORDO_ERR_FORMAT
 * naming "worker 0's profile", the JSON path and the reason: not a valid profile, a
 * parameter that is no tensor of the cluster, a size that differs, a tensor missing. */
int ordo__replan_model_match(const char *profile, size_t len, const char *const *names,
                            const int64_t *numel, int n, const char *dtype, ordo__model_t **out);

#endif
