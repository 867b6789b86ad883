/* model: the model graph of an ordo-model/1 profile (docs/models.md): parameters with their
 * shapes and bytes, ops in forward topological order with their inputs, parameters and
 * profiled forward/backward times. Loading validates everything and names the file, the
 * JSON path and the reason of any rejection. The planners, the simulator and the worker's
 * executor all read this structure; it is immutable once loaded. */
#ifndef ORDO_MODEL_H
#define ORDO_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define ORDO_MODEL_MAX_DIMS 8

typedef struct ordo__model_param {
    char *name;
    int ndim;
    int64_t shape[ORDO_MODEL_MAX_DIMS];
    int64_t numel; /* product of shape */
    int64_t bytes; /* numel * dtype size */
    int first_op;  /* index of the first op (forward order) that reads it */
    bool occasional; /* not transferred every iteration (a declared metric): pushed alone */
} ordo__model_param_t;

typedef struct ordo__model_op {
    char *name;
    int n_inputs;
    int *inputs; /* indices of earlier ops */
    int n_params;
    int *params; /* indices into model->params */
    double fwd_us;
    double bwd_us;
} ordo__model_op_t;

typedef struct ordo__model {
    char *name;
    int batch;
    char dtype[16];    /* "float32", "float16", "float64", "bfloat16" */
    size_t dtype_size; /* bytes per element */
    int n_params;
    ordo__model_param_t *params;
    int n_ops;
    ordo__model_op_t *ops;
} ordo__model_t;

/* ordo__model_load_file reads and validates an ordo-model/1 JSON file; on success *out owns a
 * new model (free with ordo__model_destroy). On failure returns ORDO_ERR_FORMAT (or
 * ORDO_ERR_NOTFOUND) and ordo__error_detail() reads "FILE: $.ops[3].inputs[0]: reason". */
int ordo__model_load_file(const char *path, ordo__model_t **out);

/* ordo__model_load_string is ordo__model_load_file over JSON text; name stands for the file
 * in messages. */
int ordo__model_load_string(const char *json, const char *name, ordo__model_t **out);

/* ordo__model_load_buffer is ordo__model_load_string over len bytes that need not end in a
 * NUL (fuzz targets, files read by the caller). */
int ordo__model_load_buffer(const char *data, size_t len, const char *name, ordo__model_t **out);

/* ordo__model_new starts an empty model for building in code (tests, synthetic jobs); dtype
 * NULL means "float32". Returns NULL when out of memory, or (with an error detail) when name
 * is NULL, batch < 1 or dtype is unknown. */
ordo__model_t *ordo__model_new(const char *name, int batch, const char *dtype);

/* ordo__model_add_param appends a parameter; returns its index or a negative error:
 * ORDO_ERR_INVAL (empty or duplicate name, ndim outside 1..ORDO_MODEL_MAX_DIMS, a dim < 1),
 * ORDO_ERR_RANGE (the byte count overflows), ORDO_ERR_NOMEM. */
int ordo__model_add_param(ordo__model_t *m, const char *name, int ndim, const int64_t *shape);

/* ordo__model_add_op appends an op reading the named earlier ops and parameters; returns its
 * index or a negative error: ORDO_ERR_NOTFOUND (an input is not an earlier op, or a parameter
 * is unknown), ORDO_ERR_INVAL (duplicate op name, a name listed twice, negative or NaN times). */
int ordo__model_add_op(ordo__model_t *m, const char *name, int n_inputs, const char *const *inputs,
                      int n_params, const char *const *params, double fwd_us, double bwd_us);

/* ordo__model_check validates a built model (every parameter used by some op, at least one
 * op) and fills derived fields (first_op); loading calls it. Returns 0 or ORDO_ERR_INVAL. */
int ordo__model_check(ordo__model_t *m);

/* ordo__model_from_sizes builds the synthetic job's model: tensor i of bytes[i] bytes
 * (rounded up to whole float32 elements) read by op i, ops in a chain, zero times. The model
 * is named "sizes", batch 1; parameter i is "p<i>" of shape [ceil(bytes/4)], op i "op<i>".
 * Returns ORDO_ERR_INVAL when n < 1 or a size is < 1. */
int ordo__model_from_sizes(const int64_t *bytes, int n, ordo__model_t **out);

/* ordo__model_param_index returns the index of the named parameter, or -1. */
int ordo__model_param_index(const ordo__model_t *m, const char *name);

/* ordo__model_op_index returns the index of the named op, or -1. */
int ordo__model_op_index(const ordo__model_t *m, const char *name);

/* ordo__model_total_numel returns the number of parameter elements. */
int64_t ordo__model_total_numel(const ordo__model_t *m);

/* ordo__model_total_bytes returns the bytes of all parameters. */
int64_t ordo__model_total_bytes(const ordo__model_t *m);

/* ordo__model_total_us returns the sum of forward (and, when with_bwd, backward) op times. */
double ordo__model_total_us(const ordo__model_t *m, int with_bwd);

/* ordo__model_destroy frees *m and sets *m = NULL; NULL-safe. */
void ordo__model_destroy(ordo__model_t **m);

#endif
