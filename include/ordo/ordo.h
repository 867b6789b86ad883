/* ordo: the public C API of libordo. A program joins an ordo cluster as one of its workers,
 * declares its tensors, and pushes gradients and pulls parameters asynchronously, with a
 * priority per transfer; the servers aggregate and update. Everything a program outside the
 * tree may use is in this header (docs/api.md). Handles are opaque; every function that can
 * fail returns 0 or a negative ORDO_ERR_* code, and ordo_last_error() says why. */
#ifndef ORDO_ORDO_H
#define ORDO_ORDO_H

#include <stddef.h>
#include <stdint.h>

#include "ordo/version.h"

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define ORDO_API __attribute__((visibility("default")))
#else
#define ORDO_API
#endif

/* ---- errors ---------------------------------------------------------------------------- */

/* Return codes: 0 is success, failures are negative. */
enum {
    ORDO_ERR_INVAL = -1,    /* bad argument, conf key or value, or call out of sequence */
    ORDO_ERR_NOMEM = -2,    /* out of memory */
    ORDO_ERR_PROTO = -3,    /* a peer sent something unexpected, or refused a request */
    ORDO_ERR_IO = -4,       /* system call or socket failure */
    ORDO_ERR_TIMEDOUT = -5, /* a bounded wait ran out (the operation is still in flight) */
    ORDO_ERR_CLOSED = -6,   /* the handle already left the cluster */
    ORDO_ERR_NOTFOUND = -7, /* no such file, key, tensor or handle */
    ORDO_ERR_PEERDEAD = -8, /* the scheduler or a server stopped answering */
    ORDO_ERR_AUTH = -9,     /* wrong cluster token */
    ORDO_ERR_RANGE = -10,   /* value out of range */
    ORDO_ERR_FORMAT = -11,  /* malformed conf file */
    ORDO_ERR_AGAIN = -12,   /* not complete yet (ordo_test), or interrupted (ordo_interrupt) */
    ORDO_ERR_FULL = -13,    /* a bounded queue is full */
    ORDO_ERR_NOTSUP = -14,  /* not supported in this build or mode */
    ORDO_ERR_ABORT = -15    /* the cluster aborted the run (another node failed or gave up) */
};

/* ordo_strerror returns a static text for code (e.g. "bad argument or value"). */
ORDO_API const char *ordo_strerror(int code);

/* ordo_last_error returns the calling thread's message about its last failed ordo call:
 * what was wrong and where ("conf.ini:4: [optimizer] lr: not a number"). It is valid after a
 * call returned non-zero, until the thread's next ordo call; never NULL. */
ORDO_API const char *ordo_last_error(void);

/* ordo_version returns the library's version, "MAJOR.MINOR.PATCH" (compare it with
 * ORDO_VERSION_STRING, the headers' version). */
ORDO_API const char *ordo_version(void);

/* ---- joining and leaving --------------------------------------------------------------- */

/* ordo_t is one worker's membership in a cluster; ordo_handle_t names one asynchronous
 * transfer (never 0). */
typedef struct ordo ordo_t;
typedef int64_t ordo_handle_t;

/* ordo_new makes a worker handle from conf_path (an INI conf file; NULL: the file named by
 * the ORDO_CONF environment variable when set, else none) and the
 * ORDO_SECTION_KEY environment variables, in that order, over the defaults; nothing is
 * connected yet. [net] io_thread defaults to true here, so that heartbeats go on while the
 * program computes. *out is the caller's (ordo_destroy). */
ORDO_API int ordo_new(const char *conf_path, ordo_t **out);

/* ordo_set sets one conf key ("section.key" or a key name unique across sections, e.g.
 * "cluster.scheduler", "optimizer.lr") from text, over the file and the environment; only
 * before ordo_join. An unknown key or a bad value fails with ORDO_ERR_INVAL naming it. */
ORDO_API int ordo_set(ordo_t *o, const char *key, const char *value);

/* ordo_declare declares the program's next tensor: its name (copied; used in messages) and
 * its number of float32 elements; *tensor gets its index (0, 1, ... in declaration order),
 * which push, pull and init take. Only before ordo_join. */
ORDO_API int ordo_declare(ordo_t *o, const char *name, int64_t numel, int *tensor);

/* ordo_update_t is the update rule of one tensor, declared by the workers (ordo_declare_update):
 * ORDO_UPDATE_CONF applies the conf's [optimizer] (the default); ORDO_UPDATE_SGD has the
 * servers run torch.optim.SGD's step with lr, momentum and weight_decay (d = g + wd*p;
 * buf = momentum*buf + d, the first step buf = d; p -= lr*buf); ORDO_UPDATE_AVERAGE keeps no
 * parameter: a pull of version v returns the mean of the workers' v-th pushes of the tensor
 * (their sum with [optimizer] aggregate = sum), summed in worker order. */
typedef struct ordo_update {
    int kind;
    double lr, momentum, weight_decay;
} ordo_update_t;

enum { ORDO_UPDATE_CONF = 0, ORDO_UPDATE_SGD = 1, ORDO_UPDATE_AVERAGE = 2 };

/* ordo_declare_update sets the update rule of the declared tensor (u is copied). Only before
 * ordo_join; every worker must declare the same rules, or the run aborts naming the tensor. */
ORDO_API int ordo_declare_update(ordo_t *o, int tensor, const ordo_update_t *u);

/* ordo_declare_occasional marks the declared tensor as one the program does not transfer every
 * iteration (a metric, a count): merged pushes keep it out of their groups, which wait for all
 * their tensors. Only before ordo_join; every worker must mark the same tensors. */
ORDO_API int ordo_declare_occasional(ordo_t *o, int tensor);

/* ordo_join checks the conf, registers with the scheduler and connects to every server;
 * it returns once the whole cluster is up. With [model] trainer = declared the workers'
 * declarations (names, sizes, update rules, in order; all workers the same, or the run aborts
 * naming the first difference) are the cluster's tensors. Otherwise the declared tensors must
 * match the cluster's tensors (its job's [model]) in number and sizes, in order: a mismatch
 * fails with ORDO_ERR_INVAL naming the tensor; a program that declared none takes the
 * cluster's. */
ORDO_API int ordo_join(ordo_t *o);

/* ordo_leave waits for the transfers in flight, tells the scheduler this worker is done and
 * waits (bounded by [fault] timeout_ms) for the cluster to shut down; the run ends when
 * every worker has left. The handle then only answers ordo_rank and friends. */
ORDO_API int ordo_leave(ordo_t *o);

/* ordo_abort tells the scheduler this worker gives up (reason, for every node's log); the
 * whole run ends. */
ORDO_API void ordo_abort(ordo_t *o, const char *reason);

/* ordo_destroy closes and frees *o and sets it to NULL; NULL-safe. A joined handle that did
 * not leave aborts the run first ("the program ended without ordo_leave"). */
ORDO_API void ordo_destroy(ordo_t **o);

/* ---- the cluster ----------------------------------------------------------------------- */

/* ordo_rank returns this worker's rank (0 .. ordo_size - 1), -1 before ordo_join. */
ORDO_API int ordo_rank(const ordo_t *o);

/* ordo_size returns the number of workers, -1 before ordo_join. */
ORDO_API int ordo_size(const ordo_t *o);

/* ordo_num_servers returns the number of servers, -1 before ordo_join. */
ORDO_API int ordo_num_servers(const ordo_t *o);

/* ordo_num_tensors returns the number of tensors: the declared ones, or after ordo_join the
 * cluster's. */
ORDO_API int ordo_num_tensors(const ordo_t *o);

/* ordo_tensor_numel returns tensor's number of elements, or a negative code when there is no
 * such tensor. */
ORDO_API int64_t ordo_tensor_numel(const ordo_t *o, int tensor);

/* ordo_tensor_name returns tensor's declared name ("tensorN" for the cluster's tensors that
 * were not declared), or NULL when there is no such tensor; the text lives as long as o. */
ORDO_API const char *ordo_tensor_name(const ordo_t *o, int tensor);

/* ordo_tensor_version returns how many gradients of tensor this worker pushed: the next
 * ordo_pull gets the value after that many updates. A process that took a dead worker's
 * place ([fault] worker = restart) starts at the iteration its predecessor did not finish. */
ORDO_API int64_t ordo_tensor_version(const ordo_t *o, int tensor);

/* ---- re-planning the transfer order --------------------------------------------------- */

/* ordo_replan re-plans the order of transfers from a profile of the program's model, for
 * every worker at once. Every worker calls it at the same point (an iteration boundary); it
 * first waits for this worker's own transfers. Worker 0 passes profile_json, ordo-model/1
 * text whose parameters are exactly the cluster's tensors (same names and sizes, any order),
 * the others NULL (ignored elsewhere). The scheduler plans as at start-up ([order] policy,
 * [push] mode), the servers switch their enforcement to the new priorities, and then every
 * call returns 0. A profile that cannot be planned fails every worker's call with the
 * reason (ORDO_ERR_FORMAT: not JSON, an unknown tensor, a size that differs; ORDO_ERR_NOTSUP:
 * [push] mode merged or sparse); the cluster goes on with its old plan. ORDO_ERR_TIMEDOUT
 * after timeout_ms (-1: no limit): calling again waits for the same re-plan. */
ORDO_API int ordo_replan(ordo_t *o, const char *profile_json, int timeout_ms);

/* ordo_tensor_priority returns tensor's priority in the cluster's plan (the start-up plan,
 * or the last ordo_replan's; smaller goes first): pass it to ordo_pull and ordo_push. With
 * no ordered plan (policies none and fifo) it is the tensor's index. A negative code when
 * there is no such tensor. */
ORDO_API int ordo_tensor_priority(const ordo_t *o, int tensor);

/* ---- transfers ------------------------------------------------------------------------- */

/* ordo_init sends tensor's initial value (numel floats, copied before it returns) to its
 * servers. The servers keep the first init of each piece, so one worker (rank 0) inits and
 * the others pull. */
ORDO_API int ordo_init(ordo_t *o, int tensor, const float *values);

/* ordo_push queues tensor's gradient: the servers apply the aggregate of every worker's
 * gradient number ordo_tensor_version with the conf's [optimizer]. grad (numel floats) is sent
 * without a copy and must stay valid and unchanged until the transfer completes. Transfers
 * leave in priority order, lowest first. *h (if h is not NULL) names it for ordo_wait and
 * ordo_test; with h NULL nobody waits for it but ordo_wait_all. A tensor has at most one push
 * in flight. */
ORDO_API int ordo_push(ordo_t *o, int tensor, const float *grad, int priority, ordo_handle_t *h);

/* ordo_pull fetches tensor's value after ordo_tensor_version updates into dst (numel floats,
 * the caller's, written until the transfer completes; read it only after). The servers
 * answer once every worker pushed that many gradients. A tensor has at most one pull in
 * flight. h as in ordo_push. */
ORDO_API int ordo_pull(ordo_t *o, int tensor, float *dst, int priority, ordo_handle_t *h);

/* ordo_pushpull is ordo_push of grad followed by ordo_pull of the value that push produces
 * into dst, with one message each way; it completes when both did. grad and dst must not
 * overlap. */
ORDO_API int ordo_pushpull(ordo_t *o, int tensor, const float *grad, float *dst, int priority,
                           ordo_handle_t *h);

/* ordo_wait waits up to timeout_ms (-1: no limit) for h to complete and releases it.
 * ORDO_ERR_TIMEDOUT leaves h in flight; ORDO_ERR_AGAIN means ordo_interrupt woke the wait.
 * A failure of the cluster (ORDO_ERR_ABORT, ORDO_ERR_PEERDEAD, ORDO_ERR_PROTO) fails every
 * transfer and every later call. */
ORDO_API int ordo_wait(ordo_t *o, ordo_handle_t h, int timeout_ms);

/* ordo_test makes progress without blocking: 0 (and h released) when h
 * completed, ORDO_ERR_AGAIN while it is in flight, or the cluster's failure. */
ORDO_API int ordo_test(ordo_t *o, ordo_handle_t h);

/* ordo_wait_all waits up to timeout_ms (-1: no limit) for every transfer in flight and
 * releases every handle. */
ORDO_API int ordo_wait_all(ordo_t *o, int timeout_ms);

/* ordo_barrier returns once every worker called it as many times, waiting up to timeout_ms
 * (-1: no limit); transfers keep completing meanwhile. */
ORDO_API int ordo_barrier(ordo_t *o, int timeout_ms);

/* ordo_broadcast copies root's bytes of buf into every worker's buf, through the scheduler: a
 * collective every worker calls in the same order with the same bytes. A size that differs
 * from root's or a root out of range fails (ORDO_ERR_INVAL); waits up to timeout_ms (-1: no
 * limit); transfers keep completing meanwhile. */
ORDO_API int ordo_broadcast(ordo_t *o, void *buf, size_t bytes, int root, int timeout_ms);

/* ordo_step marks the end of one training iteration for the run's metrics: its time since the
 * last ordo_step (or ordo_join), the part spent waiting in ordo_wait, ordo_wait_all and
 * ordo_barrier, the bytes moved, samples (>= 0) and loss (NAN: none) go to the scheduler
 * (metrics.jsonl, summary.json's step_ms, throughput and straggler effect). Optional. */
ORDO_API int ordo_step(ordo_t *o, int samples, double loss);

/* ordo_interrupt makes a call of another thread blocked in ordo_wait, ordo_wait_all or
 * ordo_barrier return ORDO_ERR_AGAIN soon. The only function that may be called while
 * another thread is inside a call on o. */
ORDO_API void ordo_interrupt(ordo_t *o);

/* ---- the batch service: a shared epoch ------------------------------------------------ */

/* ordo_next_batch's outcomes beside a batch (0): not errors. */
enum {
    ORDO_BATCH_END_OF_EPOCH = 1, /* the epoch asked for has no batch left: go on to the next */
    ORDO_BATCH_END_OF_RUN = 2    /* the run's samples are all handed out: stop training */
};

/* ordo_batches describes the data set the program reads to the cluster's batch service
 * ([sync] batches; on by default under ssp, asp and backup workers, docs/stragglers.md):
 * dataset_size samples (indices 0 .. dataset_size - 1), batch samples per batch, samples
 * the run reads in all (0: no end; the program stops after its epochs), and the shuffle:
 * each epoch a permutation seeded by seed and the epoch (shuffle 0: in order). Every worker
 * passes the same values (the first request fixes them for the run; a request with others
 * is refused with ORDO_ERR_INVAL). Copied; any time, before or after ordo_join. */
ORDO_API int ordo_batches(ordo_t *o, int64_t dataset_size, int batch, int64_t samples,
                          uint64_t seed, int shuffle);

/* ordo_next_batch asks the batch service for this worker's next batch and waits up to
 * timeout_ms (-1: no limit) for it: 0 with *count (1 .. batch) sample indices in indices
 * (room for capacity, at least the batch), ORDO_BATCH_END_OF_EPOCH when epoch (>= 0; -1:
 * any) has no batch left, ORDO_BATCH_END_OF_RUN when the run's samples are all handed out.
 * Workers share one stream of batches, so a fast worker takes more of them. The batch
 * stays leased to this worker until its next call: if the worker dies before, the batch
 * goes to the next worker that asks. Under ssp and backup workers (whose servers count
 * iterations) the end of the run is an iteration, the one of the last batch handed out (by
 * the tensors' versions, ordo_tensor_version): a worker still before it gets a batch more.
 * ORDO_ERR_NOTSUP: the service is off (bsp: each worker reads its own shard);
 * ORDO_ERR_TIMEDOUT: calling again waits for the same answer; ORDO_ERR_INVAL: no
 * ordo_batches, or a spec that differs from the run's. */
ORDO_API int ordo_next_batch(ordo_t *o, int64_t epoch, int64_t *indices, int capacity,
                             int *count, int timeout_ms);

#ifdef __cplusplus
}
#endif

#endif
