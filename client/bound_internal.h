/* bound_internal: the state of a bound model (client/bound.h) shared by its files: bound.c
 * (the thread, the life cycle and the iteration calls) and bound_coll.c (the program's calls
 * that run collectives or services on the thread: barriers, broadcasts, re-plans, the batch
 * service). Not for other callers. */
#ifndef ORDO_BOUND_INTERNAL_H
#define ORDO_BOUND_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "client/bound.h"
#include "client/push.h"

typedef enum {
    CMD_START,  /* ask for the values of iter not asked for yet */
    CMD_PUSH,   /* key's gradient of iter is complete */
    CMD_GRADS_DONE,
    CMD_INIT,   /* buf: the initial values (float *[n]); NULL: the value buffers */
    CMD_REPORT, /* text: owned by the command */
    CMD_BARRIER,
    CMD_BATCH, /* ask the batch service (text: the spec; key: the epoch) */
    CMD_BCAST, /* broadcast iter (the id) from root key into buf (bytes) */
    CMD_REPLAN, /* ask for a re-plan (text: worker 0's names, buf: its profile; both owned) */
    CMD_STOP
} cmd_kind_t;

typedef struct {
    cmd_kind_t kind;
    int key;
    int64_t iter;
    char *text;
    void *buf; /* CMD_BCAST: the program's buffer (it waits until the broadcast is done) */
    size_t bytes;
} cmd_t;

struct ordo__bound {
    ordo__bound_opts_t o;
    int n;
    float **values, **grads;
    float *value_block, *grad_block;
    /* the value buffers are the path's shared values (a host group's segment, [intra] values
     * = shared): only the path writes them, so initial values come from the program's own
     * buffers (ordo__bound_init_from) */
    bool shared;
    float **own; /* per key its place in value_block (the value buffers unless shared) */
    int *order;                 /* request order: by priority */
    int *pull_keys, *pull_prio; /* one iteration's requests (the thread's) */
    uint64_t rng;
    pthread_t thread;
    bool started;
    ordo__push_t *path; /* owned by ps; its ops run on the thread, on_event/have/stats under mu */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    /* under mu */
    cmd_t *q;
    int q_head, q_n, q_cap;
    ordo_arrival_t *arr;
    int a_head, a_n, a_cap;
    int64_t *ready_iter; /* per key: the iteration whose value is in (-1: none) */
    int64_t cur_pull;    /* the iteration pulls_left counts */
    int pulls_left;
    /* pushes: a path of key-by-key pushes (ops->key_pushes) counts per key the newest
     * iteration whose push completed (PUSH_DONE) and whose gradient buffer the path no longer
     * reads (freed: PUSH_DONE, or ORDO__EV_GRAD_FREE before it: a host group's sum left the
     * members' memory); frees_left counts the keys whose buffer of free_iter is not free yet.
     * A path of whole iterations counts one PUSHED per iteration (pushes_left). */
    int64_t *pushed, *freed;
    int64_t free_iter;
    int frees_left, pushes_left;
    int pushes_out; /* key-by-key pushes handed over and not yet completed (held ones too) */
    int fatal;
    char fatal_msg[512]; /* its detail, taken on the thread that failed (the detail is per thread) */
    bool init_done;
    int64_t barrier_done, barrier_want;
    int64_t bcast_done, bcast_want;
    /* the re-plan asked for: its answer (the thread applied an accepted one, apply_rc) */
    bool replan_asked, replan_done;
    char *replan_text;
    int replan_rc;
    /* the batch service: an answer the thread took (batch_rc: 0 a batch, 1 and 2 the ends,
     * < 0 refused), into batch_idx (batch_cap), valid while batch_done */
    bool batch_asked, batch_done;
    int batch_rc, batch_n, batch_cap;
    int64_t *batch_idx;
    /* the thread's */
    int64_t *want_iter; /* per key: the last iteration asked for */
    /* per key: the newest iteration handed to the path, and a push handed over by the program
     * while that one is still outstanding (-1: none), which waits for its PUSH_DONE: one push
     * per key in flight (a host group's owner pushes from one sum buffer per key) */
    int64_t *handed, *held;
    int64_t held_n; /* pushes that were held (logged at the end) */
    int64_t *pull_start_ns;
    /* [2 * n]: per key and iteration parity (a push of t may complete after the program
     * handed over t + 1), written by the program's thread before it posts the push */
    int64_t *push_start_ns;
};

/* ordo__bound_post_cmd queues c for the thread (c.text is the queue's, freed on failure). */
int ordo__bound_post_cmd(ordo__bound_t *b, cmd_t c);

/* ordo__bound_wait_for waits (under mu) until done(b) or the fatal error, up to timeout_ms
 * (-1: no limit); 0, ORDO_ERR_TIMEDOUT or the fatal error. */
int ordo__bound_wait_for(ordo__bound_t *b, bool (*done)(const ordo__bound_t *), int timeout_ms);

/* ordo__bound_by_priority: qsort's comparison of keys by ordo__bound_sort_ctx's priorities
 * (ties by key); the caller sets the context first, on the program's thread. */
extern const ordo__bound_t *ordo__bound_sort_ctx;
int ordo__bound_by_priority(const void *x, const void *y);

#endif
