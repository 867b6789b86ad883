/* bound: the library's side of a bound model (include/ordo/ordo.h, "a bound model"): a
 * thread that owns the push/pull library while the program computes, asks for each
 * iteration's values in the plan's order (or early, right after each push), hands each
 * gradient to the push path (client/push.h) the moment the program says it is complete,
 * and queues every value's arrival for the program to take. The program's thread and this
 * one meet through a mutex-protected command queue, an arrival queue and a condition
 * variable; nothing polls or sleeps to wait. client/api_bound.c puts the public calls on it;
 * bound.c runs the thread and the iteration calls, bound_coll.c the collectives and services. */
#ifndef ORDO_BOUND_H
#define ORDO_BOUND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ordo/ordo.h"
#include "client/ps.h"

typedef struct ordo__bound ordo__bound_t;

/* What a binding needs to know of its tensors and its run. */
typedef struct ordo__bound_opts {
    ordo__ps_t *ps;          /* borrowed: the joined worker; the binding's thread owns it */
    int n;                   /* tensors = keys */
    const int64_t *numel;    /* [n] */
    const char *const *name; /* [n] for the trace */
    const int *priority;     /* [n] the plan's, 0 first */
    ordo_bind_opts_t run;
    struct ordo__trace *trace; /* NULL: none; pulls on track 1, pushes on track 3 */
} ordo__bound_opts_t;

/* ordo__bound_new makes the buffers, binds the push path to them and starts the thread. */
int ordo__bound_new(const ordo__bound_opts_t *o, ordo__bound_t **out);

/* ordo__bound_destroy stops the thread, unbinds the path and frees; NULL-safe. */
void ordo__bound_destroy(ordo__bound_t **b);

float *ordo__bound_value(const ordo__bound_t *b, int key);
float *ordo__bound_grad(const ordo__bound_t *b, int key);

/* The calls of the public API, on the program's thread (include/ordo/ordo.h says what each
 * does); each returns 0 or an ORDO_ERR_* code, the binding's fatal error once there is one. */
/* ordo__bound_init sends the value buffers as the initial values: ORDO_ERR_INVAL when they
 * are the path's shared values (host groups under [intra] values = shared,
 * ordo__ps_value_home); ordo__bound_init_from sends values[i] (numel[i] floats each, the
 * caller's, copied) instead. */
int ordo__bound_init(ordo__bound_t *b);
int ordo__bound_init_from(ordo__bound_t *b, const float *const *values);
int ordo__bound_iter_begin(ordo__bound_t *b, int64_t iter);
int ordo__bound_next_arrival(ordo__bound_t *b, ordo_arrival_t *a, int timeout_ms);
int ordo__bound_grad_ready(ordo__bound_t *b, int key, int64_t iter);
int ordo__bound_iter_end(ordo__bound_t *b, int64_t iter, int timeout_ms);
/* ordo__bound_drain waits up to timeout_ms until every push handed over was answered (after
 * ordo_iter_end the last ones may still be on the wire: a host group's owner must not leave
 * before the values they bring are in the group's memory); 0, ORDO_ERR_TIMEDOUT (logged) or
 * the binding's fatal error. ordo_unbind and ordo_leave call it before unbinding. */
int ordo__bound_drain(ordo__bound_t *b, int timeout_ms);
#define ORDO__BOUND_DRAIN_MS 600000 /* a bound on it: a dead peer fails the binding sooner */
void ordo__bound_iter_bytes(ordo__bound_t *b, int64_t *pushed, int64_t *pulled, char *extra,
                            size_t size);
int ordo__bound_pull_values(ordo__bound_t *b, int64_t iter, int timeout_ms);
/* ordo__bound_barrier joins barrier id (ids increase) and waits for every worker. */
int ordo__bound_barrier(ordo__bound_t *b, int64_t id, int timeout_ms);
/* ordo__bound_broadcast sends root's bytes of buf (the program's, untouched until it returns)
 * as broadcast id (ids increase; the same id again after a timeout waits for the same one)
 * and waits up to timeout_ms until every worker's buf holds them. */
int ordo__bound_broadcast(ordo__bound_t *b, int64_t id, int root, void *buf, size_t bytes,
                          int timeout_ms);
/* ordo__bound_replan asks for a collective re-plan through the thread (names and profile:
 * worker 0's request, ordo__ps_replan's; owned by the call, NULL elsewhere) and waits up to
 * timeout_ms for the scheduler's answer, which the thread applies when it is a plan
 * (ordo__ps_replan_apply, the host group's path kept). Only between iterations (the caller
 * checks). 0 with *answer the answer's text (the caller frees it, a refusal included);
 * ORDO_ERR_TIMEDOUT (calling again waits for the same one); or the binding's fatal error. */
int ordo__bound_replan(ordo__bound_t *b, char *names, char *profile, int timeout_ms,
                       char **answer);
/* ordo__bound_reorder sorts the request order again by the priorities (the opts' array,
 * which the caller changed after a re-plan); between iterations only. */
void ordo__bound_reorder(ordo__bound_t *b);
/* ordo__bound_report sends json (copied) to the scheduler from the binding's thread. */
int ordo__bound_report(ordo__bound_t *b, const char *json);
/* ordo__bound_state saves or restores the push path's own state (client/push.h, state). */
int ordo__bound_state(ordo__bound_t *b, const char *path, bool save);
/* ordo__bound_batch asks the batch service (client/ps.h, ordo__ps_batch_request: spec, epoch,
 * iter) through the thread and waits up to timeout_ms. It returns 0 when the service
 * answered, with *answer 0 and *count indices in idx (cap), 1 or 2 (the ends) or its
 * refusal; ORDO_ERR_TIMEDOUT (calling again waits for the same answer); or the binding's
 * fatal error. */
int ordo__bound_batch(ordo__bound_t *b, const char *spec, int64_t epoch, int64_t iter,
                      int64_t *idx, int cap, int *count, int *answer, int timeout_ms);

/* ordo__bound_forward_only reports whether the binding pushes nothing. */
bool ordo__bound_forward_only(const ordo__bound_t *b);

/* ordo__bound_pulls_early reports whether the binding asks for values early (not on paths
 * whose pushes are not key by key, nor forward-only). */
bool ordo__bound_pulls_early(const ordo__bound_t *b);

#endif
