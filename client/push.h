/* push: the worker's push paths ([push] mode) behind one ops table, one file per path:
 * push_dense.c (every gradient leaves as its own chunks), push_merged.c (gradients are put
 * into the plan's merge groups, client/merge_buf.h, and a complete group leaves as one message
 * per server) and push_sparse.c (the whole gradient is sparsified once per iteration,
 * client/sparse_push.h). The push/pull library (client/ps.c) picks the path once when it
 * joins, from the scheduler's plan, and owns it; it calls the key-level ops from
 * ordo__ps_push / ordo__ps_pushpull and for the messages it does not know. The executor
 * (worker/executor.c) binds the path to its model and calls the iteration-level ops on its
 * communication thread. A new path is a new file and one row in push.c's table. Callers
 * outside the path files ask the table what a path can do (key_pushes, whole_iterations,
 * kept_on_replan, value_home), never which path it is. */
#ifndef ORDO_PUSH_H
#define ORDO_PUSH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/wire.h"
#include "core/model.h"
#include "client/ps.h"

typedef struct ordo__push ordo__push_t;

/* what a completion event of the path finished, as far as the executor is concerned */
typedef enum {
    ORDO__PUSH_DONE_NONE = 0,
    ORDO__PUSH_DONE_PULLED = 1, /* every parameter's value of ev.iter is in */
    ORDO__PUSH_DONE_PUSHED = 2  /* every push of the iteration was answered */
} ordo__push_done_t;

typedef struct ordo__push_ops {
    const char *name; /* for messages: "dense", "merged", "sparse", "hier" */
    int mode;         /* the [push] mode it implements (ordo__push_mode_t), or -1: a path a
                         plan member other than the mode picks (host groups: "intra") */
    /* ordo__push_new's work for this path: the state for worker ps (joined; its keys and plan
     * are final). */
    int (*create)(ordo__ps_t *ps, ordo__push_t **out);
    void (*destroy)(ordo__push_t *p);

    /* --- key level: client/ps.c, on the thread that owns the handle --- */
    /* push queues key's gradient of iter (checked: a key in range, no push outstanding). */
    int (*push)(ordo__push_t *p, int key, const float *src, int64_t iter, int priority);
    /* pushpull pushes key's gradient of iter and pulls iter + 1 into dst (no pull
     * outstanding either). */
    int (*pushpull)(ordo__push_t *p, int key, const float *src, float *dst, int64_t iter,
                    int priority);
    /* send_part sends message `part` of the path's unit `group`, queued with
     * ordo__ps_queue_part, now that the link is free. */
    void (*send_part)(ordo__push_t *p, int group, int part, int64_t iter, int priority);
    /* group_ack takes a PUSH_ACK flagged ORDO_FLAG_GROUP; 0 or a fatal error. */
    int (*group_ack)(ordo__push_t *p, const ordo__msg_t *m);
    /* grad_home returns where key's gradient may be computed so that its push copies
     * nothing, or NULL (ordo__ps_grad_home). */
    float *(*grad_home)(const ordo__push_t *p, int key);

    /* --- iteration level: worker/executor.c --- */
    /* key_pushes: gradients leave key by key, each completing with its own PUSH_DONE (so a
     * pull may follow each push); false: an iteration's pushes complete as one
     * ORDO__PUSH_DONE_PUSHED. */
    bool key_pushes;
    /* whole_iterations: the path moves whole iterations only (a bound model's calls): no
     * key-level transfers (ordo_push, ordo_pull) through it. */
    bool whole_iterations;
    /* kept_on_replan: the path's state is shared with other workers (a host group's memory,
     * owners and thread), so a re-plan that asks for the same path keeps it, in flight
     * transfers included, and only the plan's priorities and credit change. */
    bool kept_on_replan;
    /* bind gives the path the value and gradient blocks (each one block of the key map's
     * floats, keys in order, borrowed until unbind). */
    int (*bind)(ordo__push_t *p, float *params, const float *grads);
    /* unbind drops what bind made; after it no message writes into the blocks. */
    void (*unbind)(ordo__push_t *p);
    /* init sends every parameter's initial value (values[key], borrowed for the call). */
    int (*init)(ordo__push_t *p, float *const *values);
    /* pulls asks for the values of iteration iter: keys[0..n) in request order with their
     * priorities, each into dst[key]; a whole-model path asks for everything at once. */
    int (*pulls)(ordo__push_t *p, int64_t iter, const int *keys, const int *priority, int n,
                 float *const *dst);
    /* grad_ready: key's gradient of iter (at grad) is complete; push it, or not yet. */
    int (*grad_ready)(ordo__push_t *p, int key, const float *grad, int64_t iter, int priority);
    /* grads_done: the backward pass of iter ended (every gradient is complete). */
    int (*grads_done)(ordo__push_t *p, int64_t iter);
    /* The following three run under the executor's lock. on_event takes an ORDO__EV_HOOK
     * event and says what it finished; have says whether the values of iteration iter are
     * already local (nothing to pull); stats overrides the iteration's bytes and appends
     * STATS members to extra (size bytes) after an iteration that pushed. */
    ordo__push_done_t (*on_event)(ordo__push_t *p, const ordo__ps_event_t *ev);
    bool (*have)(const ordo__push_t *p, int64_t iter);
    void (*stats)(const ordo__push_t *p, int64_t *bytes_push, int64_t *bytes_pull, char *extra,
                  size_t size);

    /* --- optional (NULL: not used by the path) --- */
    /* local takes an ORDO_MSG_INTRA the path posted to itself (ordo__ps_post); 0 or a
     * fatal error. */
    int (*local)(ordo__push_t *p, const ordo__msg_t *m);
    /* pulled: key's pull of iter completed; true when the path took it for itself (no
     * PULL_DONE event follows), false when the event goes to the caller as usual. */
    bool (*pulled)(ordo__push_t *p, int key, int64_t iter);
    /* value_home: where the path shares key's values for a bound model to read in place
     * (ordo__ps_value_home), or NULL: into the caller's block (pulls' dst). */
    float *(*value_home)(const ordo__push_t *p, int key);
    /* stop ends the path's own threads before the handle's transport goes away. */
    void (*stop)(ordo__push_t *p);
    /* state saves (save) the path's own state between iterations to the file path, or
     * restores it from there: checkpoints and fault.resume (sparse: residuals, thresholds). */
    int (*state)(ordo__push_t *p, const char *path, bool save);
    /* moved: a KEYMAP ([fault] replicas) moved slices to new primaries (was: each slice's
     * primary before it); the path queues again the messages it sent to the old ones that
     * were not acknowledged, and returns how many (or a negative error). */
    int (*moved)(ordo__push_t *p, const int *was);
} ordo__push_ops_t;

/* The part every path's state starts with. */
struct ordo__push {
    const ordo__push_ops_t *ops;
    ordo__ps_t *ps; /* borrowed: the handle that owns the path */
};

/* ordo__push_ops_of_plan sets *ops to the path the scheduler's plan asks for: host groups
 * (an "intra" member) the hierarchical path, which pushes dense or merged inside; else the
 * [push] mode the plan carries: a merge member merged, a sparse member sparse, else dense. */
void ordo__push_ops_of_plan(const struct ordo__plan *plan, const ordo__push_ops_t **ops);

/* ordo__push_ops_for sets *ops to the table of [push] mode `mode` (ordo__push_mode_t);
 * ORDO_ERR_INVAL naming the mode when there is none. */
int ordo__push_ops_for(int mode, const ordo__push_ops_t **ops);

/* ordo__push_new makes the path of table ops for worker ps; the caller owns it. */
int ordo__push_new(const ordo__push_ops_t *ops, ordo__ps_t *ps, ordo__push_t **out);

/* ordo__push_destroy frees *p and sets it to NULL; NULL-safe. */
void ordo__push_destroy(ordo__push_t **p);

/* ---- shared by the path files (not for other callers) ----------------------------- */

/* The dense path's ops; the merged path pushes through the same iteration-level ops and the
 * sparse path through the same key-level ones. */
int ordo__push_dense_push(ordo__push_t *p, int key, const float *src, int64_t iter, int priority);
int ordo__push_dense_pushpull(ordo__push_t *p, int key, const float *src, float *dst, int64_t iter,
                              int priority);
void ordo__push_dense_send_part(ordo__push_t *p, int group, int part, int64_t iter, int priority);
int ordo__push_dense_group_ack(ordo__push_t *p, const ordo__msg_t *m);
float *ordo__push_dense_grad_home(const ordo__push_t *p, int key);
int ordo__push_dense_bind(ordo__push_t *p, float *params, const float *grads);
void ordo__push_dense_unbind(ordo__push_t *p);
int ordo__push_dense_init(ordo__push_t *p, float *const *values);
int ordo__push_dense_pulls(ordo__push_t *p, int64_t iter, const int *keys, const int *priority,
                           int n, float *const *dst);
int ordo__push_dense_grad_ready(ordo__push_t *p, int key, const float *grad, int64_t iter,
                                int priority);
int ordo__push_dense_grads_done(ordo__push_t *p, int64_t iter);
ordo__push_done_t ordo__push_dense_on_event(ordo__push_t *p, const ordo__ps_event_t *ev);
bool ordo__push_dense_have(const ordo__push_t *p, int64_t iter);
void ordo__push_dense_stats(const ordo__push_t *p, int64_t *bytes_push, int64_t *bytes_pull,
                            char *extra, size_t size);

extern const ordo__push_ops_t ordo__push_dense_ops, ordo__push_merged_ops, ordo__push_sparse_ops,
    ordo__push_hier_ops;

#endif
