/* oracle: the time oracle of the ordering planners and the simulator. It turns a model
 * profile plus link parameters (and, when given, a measured ordo-oracle/1 file) into the
 * per-op and per-transfer times the planners use; it also reads, validates, builds and
 * writes ordo-oracle/1 files, keeping the minimum of repeated measurements as the paper
 * does. */
#ifndef ORDO_ORACLE_H
#define ORDO_ORACLE_H

#include <stdio.h>

#include "core/model.h"

/* The times one plan or simulation uses, all in microseconds. */
typedef struct ordo__oracle_times {
    int n_params;
    int n_ops;
    double *recv_us; /* per parameter: transfer time of its pull (the recv op) */
    double *send_us; /* per parameter: transfer time of its gradient push */
    double *fwd_us;  /* per op: forward time */
    double *bwd_us;  /* per op: backward time */
} ordo__oracle_times_t;

/* A measured time oracle (ordo-oracle/1): per-op and optional per-parameter times. */
typedef struct ordo__oracle ordo__oracle_t;

/* ordo__oracle_transfer_us returns latency_us + bytes * 8 / bandwidth_bps in microseconds;
 * bandwidth_bps 0 means an unlimited link (the latency alone). */
double ordo__oracle_transfer_us(long long bytes, double bandwidth_bps, double latency_us);

/* ordo__oracle_times_new fills *out with the times of model m: op times from the profile,
 * transfer times from the link (bandwidth_bps, latency_us); every time the oracle o
 * measured (o may be NULL) replaces the computed one. Fails with ORDO_ERR_INVAL when o was
 * measured on another model (the detail names both). Free with ordo__oracle_times_destroy. */
int ordo__oracle_times_new(const ordo__model_t *m, double bandwidth_bps, double latency_us,
                          const ordo__oracle_t *o, ordo__oracle_times_t **out);

/* ordo__oracle_times_destroy frees *t and sets *t = NULL; NULL-safe. */
void ordo__oracle_times_destroy(ordo__oracle_times_t **t);

/* ordo__oracle_new starts an empty oracle for model m, to be filled by observations (a
 * profiling run); it keeps m's names, so m may be freed afterwards. */
int ordo__oracle_new(const ordo__model_t *m, ordo__oracle_t **out);

/* ordo__oracle_observe_op records one measured iteration of op (an index into m->ops): the
 * oracle keeps the minimum per op; a negative time means "not measured" and is ignored. */
void ordo__oracle_observe_op(ordo__oracle_t *o, int op, double fwd_us, double bwd_us);

/* ordo__oracle_observe_transfer records one measured pull (recv_us) and push (send_us) of
 * parameter param, keeping the minimum of each; negative means not measured. */
void ordo__oracle_observe_transfer(ordo__oracle_t *o, int param, double recv_us, double send_us);

/* ordo__oracle_write writes o as ordo-oracle/1 JSON to out (only measured entries). */
int ordo__oracle_write(const ordo__oracle_t *o, FILE *out);

/* ordo__oracle_load_string parses and validates ordo-oracle/1 text against model m (names
 * must exist, times be finite and >= 0, the model name match); name stands for the file in
 * messages. On failure returns ORDO_ERR_FORMAT with "NAME: $.ops[2].fwd_us: reason". */
int ordo__oracle_load_string(const char *json, const char *name, const ordo__model_t *m,
                            ordo__oracle_t **out);

/* ordo__oracle_load_file is ordo__oracle_load_string over a file (ORDO_ERR_NOTFOUND when it
 * cannot be read). */
int ordo__oracle_load_file(const char *path, const ordo__model_t *m, ordo__oracle_t **out);

/* ordo__oracle_observe_trace folds the compute ops of one worker's Chrome trace (the
 * trace-worker-R.json of a run with output.trace = true: complete events of category
 * "forward" and "backward" named after the model's ops) into o, keeping each op's minimum;
 * other events are skipped. A file that is not a trace-event object, an event whose name
 * is not an op of the model or whose dur is not a number >= 0, or a trace without compute
 * events fails with ORDO_ERR_FORMAT, "FILE: $.traceEvents[3].dur: reason" (ORDO_ERR_NOTFOUND
 * when the file cannot be read). *n_events (may be NULL) gets the events folded in. */
int ordo__oracle_observe_trace(ordo__oracle_t *o, const char *path, int *n_events);

/* ordo__oracle_timed_model returns in *out a copy of m whose op times are o's where o has
 * measured them (m's elsewhere), for planners that read a model's own times (the merge
 * planner). ORDO_ERR_INVAL when o was measured on another model. Free with ordo__model_destroy. */
int ordo__oracle_timed_model(const ordo__model_t *m, const ordo__oracle_t *o, ordo__model_t **out);

/* ordo__oracle_timed_model_file is ordo__oracle_load_file then ordo__oracle_timed_model: m with
 * the op times measured in the ordo-oracle/1 file at path. */
int ordo__oracle_timed_model_file(const char *path, const ordo__model_t *m, ordo__model_t **out);

/* ordo__oracle_destroy frees *o and sets *o = NULL; NULL-safe. */
void ordo__oracle_destroy(ordo__oracle_t **o);

#endif
