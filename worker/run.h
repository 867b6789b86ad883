/* run: the jobs ordo-worker runs on a joined libordo handle: the synthetic job that checks
 * every pulled value against the closed form of the servers' sums (run.c), and model jobs
 * (profiles with emulated compute, the built-in mlp and cnn trainers) driven by the graph
 * executor (run_model.c). Both use the public API (include/ordo/ordo.h) only. */
#ifndef ORDO_RUN_H
#define ORDO_RUN_H

#include "common/conf.h"
#include "ordo/ordo.h"

/* ordo__run_synthetic pushes and pulls the conf's tensors ([model] tensors) on o for
 * [model] iterations and checks each pulled value; ORDO_ERR_PROTO when any was wrong. It does
 * not leave (the caller calls ordo_leave). */
int ordo__run_synthetic(ordo_t *o, const ordo__conf_t *conf);

/* ordo__run_declare declares the model job's parameters on o (before ordo_join), so that the
 * handle's tensors carry their names and the cluster's key map is checked against them. */
int ordo__run_declare(ordo_t *o, const ordo__conf_t *conf);

/* ordo__run_model runs the conf's model job on o (rank 0 also gives the servers the initial
 * values, writes checkpoints and params.bin, and evaluates a trained model) and leaves the
 * cluster with the final figures (ordo_leave_with). */
int ordo__run_model(ordo_t *o, const ordo__conf_t *conf);

/* ordo__run_op_times measures the model's op times for the start-up calibration ([push]
 * calibrate with real compute; ctx is the ordo__conf_t) as ordo-oracle/1 text in *out
 * (caller frees); *out stays NULL when there is nothing to measure. An ordo_op_times_fn
 * (ordo_set_op_times). */
int ordo__run_op_times(void *ctx, char **out);

#endif
