/* job: the model a run trains or emulates, built from the conf the same way on every
 * node: the synthetic job's tensor list, a profile file, or a built-in trainer. */
#ifndef ORDO_JOB_H
#define ORDO_JOB_H

#include "common/conf.h"
#include "core/model.h"

/* ordo_job_model builds the run's model from conf ([model] trainer, file, tensors, batch);
 * *out is owned by the caller (ordo_model_destroy). */
int ordo_job_model(const ordo_conf_t *conf, ordo_model_t **out);

/* ordo_job_parse_sizes parses a comma-separated list of sizes ("4KiB, 1MiB") into at most
 * max byte counts; returns how many, or a negative error naming the bad item. */
int ordo_job_parse_sizes(const char *list, int64_t *bytes, int max);

#endif
