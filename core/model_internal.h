/* model_internal: helpers shared by model.c (builder) and model_load.c (JSON loader); not
 * part of the model contract. */
#ifndef ORDO_MODEL_INTERNAL_H
#define ORDO_MODEL_INTERNAL_H

#include "core/model.h"

/* ordo__model_dtype_size returns the bytes per element of dtype, or 0 when unknown. */
size_t ordo__model_dtype_size(const char *dtype);

/* ordo__model_add_param_checked appends a parameter whose name is known unique and whose
 * 1..ORDO_MODEL_MAX_DIMS dims are positive; returns its index, ORDO_ERR_RANGE when the byte
 * count overflows, or ORDO_ERR_NOMEM. Sets no error detail. */
int ordo__model_add_param_checked(ordo__model_t *m, const char *name, int ndim,
                                  const int64_t *shape);

/* ordo__model_add_op_checked appends an op whose name is unique and whose input and
 * parameter indices are valid; returns its index or ORDO_ERR_NOMEM. Sets no error detail. */
int ordo__model_add_op_checked(ordo__model_t *m, const char *name, int n_inputs, const int *inputs,
                               int n_params, const int *params, double fwd_us, double bwd_us);

/* ordo__model_first_ops fills first_op and returns 0, or ORDO_ERR_INVAL with *unused_param the
 * index of a parameter no op reads (-1 when the model has no ops). Sets no error detail. */
int ordo__model_first_ops(ordo__model_t *m, int *unused_param);

#endif
