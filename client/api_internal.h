/* api_internal: what the files of the public C API share (client/api.c, api_coll.c): the
 * state of an ordo_t and the helpers every call goes through. Not installed. */
#ifndef ORDO_API_INTERNAL_H
#define ORDO_API_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "common/conf.h"
#include "ordo/ordo.h"
#include "client/bound.h"
#include "client/ps.h"

struct ordo__trace;

enum { NEW, JOINED, LEFT };
enum { NEED_PUSH = 1, NEED_PULL = 2 };

typedef struct tensor {
    char *name;
    int64_t numel;
    int64_t version; /* gradients pushed so far */
    int push_op;     /* the op slot of the push in flight, -1: none */
    int pull_op;
    ordo_update_t update; /* ordo_declare_update's rule (kind ORDO_UPDATE_CONF: none) */
    int priority;         /* the plan's (ordo_tensor_priority) */
    bool occasional;      /* ordo_declare_occasional */
    char compression[96]; /* ordo_declare_compression ("": the conf's [push] compression) */
} tensor_t;

/* One transfer. A handle is (generation << 32) | (slot + 1), so a stale handle is refused. */
typedef struct op {
    uint32_t gen;
    bool used, done, detached;
    uint8_t need; /* NEED_PUSH | NEED_PULL still to complete */
    int tensor;
    int next_free;
} op_t;

struct ordo {
    ordo__conf_t conf;
    ordo__ps_t *w;
    int state;
    int failed; /* the cluster's failure, sticky: every later call returns it */
    char failed_msg[700];
    int rank, size, servers;
    tensor_t *t;
    int n_tensors, cap_tensors;
    op_t *ops;
    int cap_ops, free_op, in_flight;
    int64_t barrier_sent, barrier_done;
    int64_t bcast_sent, bcast_done;
    bool replan_sent, replan_answered; /* ordo_replan: asked, and the scheduler answered */
    /* ordo_step: the iteration being measured, its start, the time spent waiting in it, its
     * last push, and the bytes counted at its start */
    int64_t step_iter, step_t0_ns, step_wait_ns, step_push_ns, step_bytes_push, step_bytes_pull;
    ordo_op_times_fn op_times; /* ordo_set_op_times */
    void *op_times_ctx;
    ordo__bound_t *bound;      /* ordo_bind: the library's thread owns w meanwhile */
    bool bound_in_iter;        /* between ordo_iter_begin(bound_iter) and its ordo_iter_end */
    int64_t bound_iter;
    int *priority;             /* [n_tensors] while bound: the plan's */
    int64_t *numel;            /* [n_tensors] while bound */
    const char **names;        /* [n_tensors] while bound */
    struct ordo__trace *trace;  /* [output] trace = true: the library's trace */
    char *batch_spec; /* ordo_batches: the request body (JSON), NULL before */
    bool batch_asked; /* ordo_next_batch: a request is in flight (a timed-out call's) */
    /* ordo_peer_state (client/api_state.c): a request in flight, and the answer kept until
     * a call with room takes it */
    bool state_asked, state_have;
    void *state_buf;
    size_t state_bytes;
    int64_t state_iter;
};

/* ordo__api_fail returns rc with a message: the detail already set, else the code's text. */
int ordo__api_fail(int rc);

/* ordo__api_cluster_failed records the cluster's failure rc (sticky: every later call returns
 * it) and returns it. */
int ordo__api_cluster_failed(ordo_t *o, int rc);

/* ordo__api_usable returns 0 when o has joined and the cluster has not failed, else why not
 * (fn names the call in the message). */
int ordo__api_usable(ordo_t *o, const char *fn);

/* ordo__api_unbound returns 0 when o is not bound (ordo_bind), else ORDO_ERR_INVAL naming fn:
 * the library's thread owns the connection meanwhile. */
int ordo__api_unbound(const ordo_t *o, const char *fn);

/* ordo__api_unbind ends o's binding, if any, and frees what it made (destroy and leave). */
void ordo__api_unbind(ordo_t *o);

/* ordo__api_report sends json to the scheduler: through the bound model's thread while
 * bound, directly otherwise. */
int ordo__api_report(ordo_t *o, const char *json);

/* ordo__api_check_tensor returns 0 when tensor is one of o's, else ORDO_ERR_INVAL naming fn. */
int ordo__api_check_tensor(const ordo_t *o, int tensor, const char *fn);

/* ordo__api_wait_until makes progress until done(o, arg) holds, up to timeout_ms (-1: no
 * limit); the time is counted as the iteration's wait (ordo_step). */
int ordo__api_wait_until(ordo_t *o, bool (*done)(const ordo_t *, int64_t), int64_t arg,
                         int timeout_ms);

/* ordo__api_set_priorities takes each tensor's priority from the plan's priorities, or the
 * tensor's index when the plan has none. */
void ordo__api_set_priorities(ordo_t *o, const struct ordo__plan *plan);

#endif
