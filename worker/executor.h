/* executor: runs one worker's iterations over a model graph on a bound libordo handle
 * (include/ordo/ordo.h, "a bound model"): the calling thread computes, the library's thread
 * moves the values and gradients. At the start of iteration t every value not already here
 * is asked for at once (in the plan's priority order); a forward op starts as soon as its
 * inputs are done and its parameters' values have arrived (the library's arrivals, taken as
 * they come); backward runs the ops in reverse listed order and each parameter's gradient is
 * handed over the moment its op's backward ends. With early pulls the next iteration's value
 * of a parameter is asked for right after its gradient left, so values travel during
 * backward. The executor reaches the cluster through the public API only. */
#ifndef ORDO_EXECUTOR_H
#define ORDO_EXECUTOR_H

#include <stdbool.h>
#include <stdint.h>

#include "common/conf.h"
#include "core/model.h"
#include "ordo/ordo.h"
#include "worker/compute.h"

typedef struct ordo__exec ordo__exec_t;

typedef struct ordo__exec_opts {
    ordo_t *ordo;                 /* the joined worker (borrowed); the executor binds it */
    const ordo__model_t *model;    /* its parameters are the keys, in order */
    ordo__compute_ctx_t *compute;  /* bound to params/grads by the executor */
    bool shuffle_pulls;           /* policy none: a seeded random request order per iteration */
    uint64_t seed;
    bool forward_only;            /* no backward, no pushes: every iteration reads version 0;
                                     with several workers, iterations start at a barrier */
    bool trace;                   /* spans into the library's trace (ordo_trace_span) */
    bool pull_early;              /* [order] pull = early: pull t + 1 right after each push of t */
    int64_t iterations;           /* pull_early: no early pulls in iteration iterations - 1 */
    double slowdown;              /* [straggle]: each op's compute is followed by a sleep of
                                     slowdown - 1 times its measured time (<= 1: none) */
    const ordo__conf_t *straggle;  /* [straggle] transient delays of this worker, slept before
                                     each forward pass and counted as compute (NULL: none) */
} ordo__exec_opts_t;

typedef struct ordo__exec_stats {
    int64_t t_start_ns, t_forward_end_ns, t_push_done_ns, t_end_ns;
    double step_ms;    /* iteration start to the last push acknowledged (or forward end) */
    double wait_ms;    /* compute thread blocked waiting for parameters */
    double compute_ms; /* time in forward and backward ops */
    int64_t bytes_push, bytes_pull;
    double loss;
    int correct;
    char extra[512]; /* further STATS members (",\"name\":value..."): sparse counters */
} ordo__exec_stats_t;

/* ordo__exec_new binds the handle (ordo_bind: the library's value and gradient buffers, its
 * thread) and the compute backend to those buffers. */
int ordo__exec_new(const ordo__exec_opts_t *o, ordo__exec_t **out);

/* ordo__exec_params returns the parameter buffers (model order; the library's value buffers,
 * ordo_value_buffer). Between iterations they are consistent only after ordo__exec_pull_all:
 * in host groups with shared values a tensor's next value overwrites it as soon as every
 * member pushed its gradient (a snapshot taken inside an iteration is consistent always). */
float *const *ordo__exec_params(const ordo__exec_t *e);

/* ordo__exec_init sends every parameter's initial value (params[i], copied) to the servers
 * (ordo_bound_init_from: the parameter buffers may be a host group's shared values, which
 * only the library writes). */
int ordo__exec_init(ordo__exec_t *e, float *const *params);

/* ordo__exec_compute_on binds the compute context to params (model order, borrowed until the
 * next call) for forward passes the caller runs between iterations, such as an evaluation of
 * a snapshot; NULL binds it back to the parameter buffers. */
int ordo__exec_compute_on(ordo__exec_t *e, float *const *params);

/* ordo__exec_iteration runs iteration t on a batch (x, labels, n; NULL for emulation). */
int ordo__exec_iteration(ordo__exec_t *e, int64_t t, const float *x, const int *labels, int n,
                        ordo__exec_stats_t *st);

/* ordo__exec_pull_all pulls every parameter's value of iteration t into the buffers
 * (the final model after the last iteration). */
int ordo__exec_pull_all(ordo__exec_t *e, int64_t t);

/* ordo__exec_barrier waits until every worker has called it as many times. */
int ordo__exec_barrier(ordo__exec_t *e);

/* ordo__exec_snapshot makes the next ordo__exec_iteration copy the parameters it computes with
 * (model order, one block of the model's total element count, borrowed) into block when its
 * forward pass ends: the values after as many updates as the iteration's number, before any
 * of its pushes (or early pulls) can change them. */
void ordo__exec_snapshot(ordo__exec_t *e, float *block);

/* ordo__exec_report sends one iteration's stats (JSON) to the scheduler (ordo_report). */
int ordo__exec_report(ordo__exec_t *e, const char *json);

/* ordo__exec_destroy unbinds the handle and frees; NULL-safe. */
void ordo__exec_destroy(ordo__exec_t **e);

/* ordo__exec_path_state saves (save) the push path's own state to the file path between
 * iterations, or restores it before the first (client/push.h, state); 0 without doing
 * anything when the path keeps none (dense, merged). */
int ordo__exec_path_state(ordo__exec_t *e, const char *path, bool save);

#endif
