/* declared: the model of a run whose workers declare their tensors ([model] trainer =
 * declared). Each worker's registration carries a JSON array of {"name", "numel", "update"}
 * objects (client/api.c writes it); every worker's must equal worker 0's, and the model and
 * the per-key update rules for the plan are built from them. */
#ifndef ORDO_DECLARED_H
#define ORDO_DECLARED_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "core/model.h"

/* ordo__declared_model checks the n_workers declarations (by_rank[w]: worker w's array,
 * borrowed) and builds *model (named "declared", the caller's) and *updates (a new reference:
 * per key its update rule object or null; NULL when no tensor declared one). sparse says the
 * run pushes sparse, whose servers run one SGD: then the rules must all be the same sgd. On a difference, a malformed
 * declaration or a bad model it returns ORDO_ERR_INVAL with why naming the worker and tensor
 * ("worker 1 declared tensor 3 \"fc.bias\" of 10 elements, worker 0 \"fc.bias\" of 20"). */
int ordo__declared_model(json_t *const *by_rank, int n_workers, bool sparse, ordo__model_t **model,
                        json_t **updates, char *why, size_t wsz);

#endif
