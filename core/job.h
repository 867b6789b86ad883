/* job: the model a run trains or emulates, built from the conf the same way on every
 * node: the synthetic job's tensor list, a profile file, or a built-in trainer. */
#ifndef ORDO_JOB_H
#define ORDO_JOB_H

#include "common/conf.h"
#include "core/model.h"

/* ordo__job_model builds the run's model from conf ([model] trainer, file, tensors, batch;
 * trainer = declared fails: the workers' declarations make that model);
 * *out is owned by the caller (ordo__model_destroy). */
int ordo__job_model(const ordo__conf_t *conf, ordo__model_t **out);

/* ordo__job_model_declared builds the model of [model] trainer = declared from the workers'
 * declarations: parameter i named names[i] of numel[i] float32 elements, read by op i, ops in
 * a chain, zero times; the model is named "declared". ORDO_ERR_INVAL names a duplicate or empty
 * name or a count < 1. *out is the caller's. */
int ordo__job_model_declared(const char *const *names, const int64_t *numel, int n,
                            ordo__model_t **out);

/* ordo__job_parse_sizes parses a comma-separated list of sizes ("4KiB, 1MiB") into at most
 * max byte counts; returns how many, or a negative error naming the bad item. */
int ordo__job_parse_sizes(const char *list, int64_t *bytes, int max);

#endif
