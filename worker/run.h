/* run: the jobs ordo-worker runs on a joined worker: the synthetic job that checks every
 * pulled value against the closed form of the servers' sums, and model jobs (profiles with
 * emulated compute, the built-in mlp and cnn trainers) driven by the graph executor. */
#ifndef ORDO_RUN_H
#define ORDO_RUN_H

#include "common/conf.h"
#include "client/ps.h"

/* ordo_run_synthetic pushes and pulls the conf's tensors ([model] tensors) on w for
 * [model] iterations and checks each pulled value; ORDO_ERR_PROTO when any was wrong. It does
 * not finish the worker (the caller calls ordo__ps_finish). */
int ordo_run_synthetic(ordo__ps_t *w, const ordo_conf_t *conf);

/* ordo_run_model runs the conf's model job on w (rank 0 also gives the servers the initial
 * values, writes checkpoints and params.bin, and evaluates a trained model) and finishes the
 * worker with the final figures. */
int ordo_run_model(ordo__ps_t *w, const ordo_conf_t *conf);

/* ordo_run_op_times measures the model's op times for the start-up calibration ([push]
 * calibrate with real compute; ctx is the ordo_conf_t) as ordo-oracle/1 text in *out
 * (caller frees); *out stays NULL when there is nothing to measure. The callback of
 * ordo__ps_join. */
int ordo_run_op_times(void *ctx, char **out);

#endif
