/* step: a model of one steady-state training step (forward, backward, gradient pushes, the
 * servers' answers and the next forward pass) under a priority order, with tensors cut into
 * slices and a credit on each worker's push queue (docs/ordering-live.md, "The training step").
 * W identical workers run in step; each server's egress link carries every worker's copy of
 * an answer, greedily by priority; each worker's egress link carries its pushes, handed to
 * the link smallest priority first while less than the credit is ahead on it. It also gives
 * the resource bound: the fastest step any order could give on these links and compute. */
#ifndef ORDO_STEP_H
#define ORDO_STEP_H

#include <stdint.h>

#include "common/keys.h"
#include "core/model.h"
#include "planner/oracle.h"

/* What the step model is given besides the model and its op times. */
typedef struct ordo__step_opts {
    int n_workers;              /* W, at least 1 */
    int n_channels;             /* servers */
    const int *channel;         /* per parameter: its server (NULL: all on 0) */
    double bandwidth_bps;       /* every process's egress rate (0: unlimited) */
    double latency_us;          /* one way, per message */
    double msg_us;              /* link time each message costs beyond its bytes */
    int64_t slice_bytes;        /* tensors travel in slices of at most this (0: whole tensors) */
    int64_t credit_bytes;       /* a worker's pushes ahead on its link before the next may go */
    int early_pulls;            /* 1: each value is asked for with its push; 0: at the step start */
    int64_t credit_floor_bytes; /* tuning: no credit below this (what the worker's wake-ups,
                                   whole milliseconds, can keep the link busy with) */
    const double *wire_factor;  /* per parameter: its link time over float32's (a compressed
                                   wire type, its conversions counted in; NULL: all 1) */
    /* what a cluster adds (planner/cluster.c); left 0 (NULL) they change nothing */
    double server_bandwidth_bps; /* the servers' egress rate (0: bandwidth_bps) */
    double push_wire_scale;      /* bytes on the wire per byte of a gradient (0: 1) */
    double answer_wire_scale;    /* bytes on the wire per byte of a value (0: 1) */
    const ordo__keys_t *keys;     /* the key map (key = parameter index): a slice's server is
                                    its chunk's, overriding channel (NULL: channel) */
} ordo__step_opts_t;

/* The modelled step. */
typedef struct ordo__step_result {
    double step_us;    /* steady-state time of one step (the last of several simulated) */
    double bound_us;   /* the busiest resource's work per step: no order gives less */
    double compute_us; /* forward + backward compute of one step */
    double push_us;    /* a worker's egress link per step (its pushes) */
    double answer_us;  /* the busiest server's egress link per step (answers to W workers) */
    int n_messages;    /* slices per worker per step */
} ordo__step_result_t;

/* ordo__step_simulate models a steady-state step of m with op times t (recv_us/send_us are not
 * used: transfers follow the link and the slices) under priority (per parameter, 0 first;
 * NULL: all equal, i.e. no order: pushes in order of readiness) and fills *out. */
int ordo__step_simulate(const ordo__model_t *m, const ordo__oracle_times_t *t, const int *priority,
                       const ordo__step_opts_t *o, ordo__step_result_t *out);

/* ordo__step_tune picks, among a few slice sizes and credits (each credit raised to
 * o->credit_floor_bytes), the pair of the shortest modelled step (ties: the larger slice, then
 * the larger credit) and writes it with its result; *slice_bytes and *credit_bytes are left
 * alone on an error. Only what o leaves negative (auto) is tuned: a slice or credit of 0 or
 * more is kept as given. */
int ordo__step_tune(const ordo__model_t *m, const ordo__oracle_times_t *t, const int *priority,
                   const ordo__step_opts_t *o, int64_t *slice_bytes, int64_t *credit_bytes,
                   ordo__step_result_t *out);

/* ordo__step_tune_auto fills in what o leaves auto (a negative slice or credit) with the tuned
 * values for this order (ordo__step_tune); o is left as it was on an error. */
int ordo__step_tune_auto(const ordo__model_t *m, const ordo__oracle_times_t *t, const int *priority,
                        ordo__step_opts_t *o);

/* What a check of the model against measured steps found (ordo__step_correct). */
typedef struct ordo__step_fit {
    double compute_factor; /* measured compute over the modelled one (0.05 to 20) */
    double msg_us;         /* the per-message cost that makes the modelled step the measured one */
    int64_t credit_bytes;  /* the credit tuned again on the corrected model (slice kept) */
    ordo__step_result_t r;  /* the corrected model's step at that credit */
} ordo__step_fit_t;

/* ordo__step_correct fits the model to a measured step: op times are scaled by the measured
 * compute over the modelled one (measured_compute_us <= 0: not scaled), then the per-message
 * cost is set to the one that makes the modelled step measured_step_us (0 when the model is
 * slower even without it), and the credit is tuned again on that model with o's slice. */
int ordo__step_correct(const ordo__model_t *m, const ordo__oracle_times_t *t, const int *priority,
                      const ordo__step_opts_t *o, double measured_step_us,
                      double measured_compute_us, ordo__step_fit_t *out);

#endif
