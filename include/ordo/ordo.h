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

/* ordo_declare_compression sets the wire type of the declared tensor's pushes and pulls in
 * place of the conf's [push] compression: "none" (float32), "bf16", "fp16", "onebit",
 * "topk:K" or "randomk:K" (K a count >= 1 or a fraction in (0, 1)), optionally followed by
 * ",ef=vanilla" or ",ef=none" (error feedback; on by default for onebit, topk and randomk).
 * Servers sum and update in float32 whatever the wire carries. Only before ordo_join; every
 * worker must declare the same, or the join is refused naming the tensor and both codecs.
 * An unknown codec or a k out of range fails with ORDO_ERR_INVAL naming the tensor. */
ORDO_API int ordo_declare_compression(ordo_t *o, int tensor, const char *codec);

/* ordo_new_args is ordo_new with a daemon's command line: "-c FILE" names the conf file and
 * each "--section.key=VALUE" sets one key, over the file and the ORDO_SECTION_KEY environment
 * variables (ordo-worker's own arguments; argv[0] is the program's name and is skipped).
 * An unknown argument fails with ORDO_ERR_INVAL naming it. *out is the caller's. */
ORDO_API int ordo_new_args(int argc, char *const *argv, ordo_t **out);

/* ordo_op_times_fn measures the program's op times for the start-up calibration ([push]
 * calibrate = true): 0 with ordo-oracle/1 text in *json (malloc'd, the library frees it;
 * NULL: nothing measured), or a negative ORDO_ERR_* code. */
typedef int (*ordo_op_times_fn)(void *ctx, char **json);

/* ordo_set_op_times gives ordo_join a way to measure op times: when the plan asks for a
 * start-up calibration, worker 0 calls fn(ctx, ...) after its pushes were timed, while the
 * other workers wait, and the scheduler plans the merge groups with those times. Only before
 * ordo_join; fn NULL removes it. */
ORDO_API int ordo_set_op_times(ordo_t *o, ordo_op_times_fn fn, void *ctx);

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

/* ordo_leave_with is ordo_leave that hands the scheduler the run's final figures for
 * summary.json: final_json is a JSON object ("{\"test_accuracy\":0.88}"; NULL: none). With
 * [output] trace = true the library's trace (ordo_trace_span) is written to the run folder
 * as trace-worker-RANK.json first. */
ORDO_API int ordo_leave_with(ordo_t *o, const char *final_json);

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
 * after timeout_ms (-1: no limit): calling again waits for the same re-plan. On a bound model
 * (ordo_bind) it runs on the library's thread, only in host groups (else ORDO_ERR_NOTSUP) and
 * only between ordo_iter_end(t) and ordo_iter_begin(t + 1) (else ORDO_ERR_INVAL); host groups keep their shared memory and
 * owners, the new priorities order the next iterations' requests. */
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

/* ---- the run: membership, folder, metrics, traces, saved state ----------------------- */

/* ordo_run_dir returns the run folder the scheduler named (runs/RUN), "" before ordo_join;
 * the text lives as long as o. */
ORDO_API const char *ordo_run_dir(const ordo_t *o);

/* ordo_resume_iter returns the iteration a restarted worker goes on at ([fault] worker =
 * restart: the first its dead predecessor did not finish; every tensor's version starts
 * there), or -1 for a worker of the run's start. */
ORDO_API int64_t ordo_resume_iter(const ordo_t *o);

/* ordo_members tells, after a worker left the run ([fault] worker = shrink: returns 1), this
 * worker's index among the live ones, their number and the iteration from which they hold;
 * it returns 0 with the rank, the cluster's worker count and 0 while everyone is in. Any
 * out-parameter may be NULL. */
ORDO_API int ordo_members(ordo_t *o, int *index, int *live, int64_t *since);

/* ordo_server_load gives the bytes of the cluster's tensors that server holds (as primary)
 * and in how many slices they travel; for a program that models its links. */
ORDO_API int ordo_server_load(const ordo_t *o, int server, int64_t *bytes, int *slices);

/* ordo_report sends one iteration's stats, a JSON object, to the scheduler (a line of
 * metrics.jsonl; its "step_ms", "wait_ms", "samples", "bytes_push" and friends feed
 * summary.json, docs/formats.md): for a program that measures its iterations itself
 * (ordo-worker); ordo_step measures them for you. json is copied. */
ORDO_API int ordo_report(ordo_t *o, const char *json);

/* ordo_trace_span records one span in the library's trace ([output] trace = true; otherwise
 * it does nothing): name and cat (copied), track (a row of the trace: 0 .. 63), its start
 * and duration in CLOCK_MONOTONIC nanoseconds, args a JSON object or NULL. The library
 * records its own transfers there (tracks 1 pulls, 3 pushes, 4.. its paths) and writes the
 * file at ordo_leave_with. */
ORDO_API void ordo_trace_span(ordo_t *o, const char *name, const char *cat, int track,
                              int64_t t0_ns, int64_t dur_ns, const char *args);

/* ordo_trace_track names track of the library's trace ("compute"); a no-op without one. */
ORDO_API void ordo_trace_track(ordo_t *o, int track, const char *name);

/* ordo_save_state writes this worker's push-path state between iterations to the file path
 * (sparse pushes: residuals and thresholds; a codec with error feedback: its residuals, bound
 * or not: unbound, once every push of the iteration completed), for a checkpoint;
 * ordo_load_state reads it back after ordo_join and before the first push ([fault] resume,
 * a program's own checkpoint); a load after a push fails with ORDO_ERR_INVAL, a file of other
 * tensors or codecs with ORDO_ERR_FORMAT naming the file and what differs. Both return 0
 * without touching the file when the path keeps none (dense or merged float32 or 16-bit
 * pushes). The residuals are one worker's: each rank saves and loads its own. */
ORDO_API int ordo_save_state(ordo_t *o, const char *path);
ORDO_API int ordo_load_state(ordo_t *o, const char *path);

/* ---- a bound model: the library drives whole iterations -------------------------------- */

/* For a program that trains the cluster's tensors as one model, iteration by iteration
 * (ordo-worker is one). After ordo_bind the library holds each tensor's value buffer and
 * gradient buffer, asks for each iteration's values in the plan's order, pushes each
 * gradient the moment the program says it is complete, on whatever path the plan names
 * (dense, merged groups, sparse, host groups), and reports each value as it arrives. A
 * thread of the library then owns the connection: ordo_init, ordo_push, ordo_pull,
 * ordo_pushpull, ordo_wait, ordo_test and ordo_wait_all fail with ORDO_ERR_INVAL until
 * ordo_unbind; ordo_barrier, ordo_broadcast, ordo_report, ordo_step, ordo_save_state and
 * ordo_load_state go through that thread. One program thread makes the bound calls. */
typedef struct ordo_bind_opts {
    int pull_early;     /* 1: ask for iteration t + 1's value of a tensor right after its
                           push of t (the servers answer once every worker pushed) */
    int shuffle;        /* 1: request each iteration's values in a seeded random order (the
                           plan is none) instead of the plan's priorities */
    uint64_t seed;      /* of the shuffle */
    int64_t iterations; /* iterations the program will run (no early pulls after the last);
                           -1: unknown */
    int forward_only;   /* 1: no pushes; every iteration reads the values after 0 updates */
} ordo_bind_opts_t;

/* ordo_bind makes the value and gradient buffers (one block each, in tensor order) and
 * starts the library's thread; opts NULL takes the conf's [order] pull and policy. Only
 * after ordo_join, once. */
ORDO_API int ordo_bind(ordo_t *o, const ordo_bind_opts_t *opts);

/* ordo_value_buffer returns where tensor's values land (numel floats, the library's; valid
 * until ordo_unbind); read a value of iteration t only after its arrival. NULL when unbound
 * or no such tensor. In host groups with the shm backend and [intra] values = shared (the
 * default) it is the group's shared memory, which only the library writes: the program must
 * not write it (initial values: ordo_bound_init_from), and tensor's value of iteration t is
 * overwritten with that of t + 1 as soon as every member of the group handed over its
 * gradient of t (ordo_grad_ready). So value t holds from its arrival until this worker's
 * ordo_grad_ready(tensor, t); between iterations t and t + 1, read the buffers only after
 * ordo_pull_values(o, t + 1) returned (they then hold the values after t + 1 updates and stay
 * until this worker's next ordo_grad_ready). Otherwise (flat paths, [intra] values = copy,
 * nccl) the buffer is this worker's own and a value stays until the next one arrives. */
ORDO_API float *ordo_value_buffer(ordo_t *o, int tensor);

/* ordo_grad_buffer returns where the program computes tensor's gradient so that its push
 * copies nothing (a merged path's group buffer, or the gradient block); the library reads
 * it from ordo_grad_ready until the iteration's ordo_iter_end returns. */
ORDO_API float *ordo_grad_buffer(ordo_t *o, int tensor);

/* ordo_bound_init sends the values now in the value buffers as the tensors' initial values
 * (one worker, rank 0, inits; servers keep the first). ORDO_ERR_INVAL when the value buffers
 * are a host group's shared memory (ordo_value_buffer): use ordo_bound_init_from. */
ORDO_API int ordo_bound_init(ordo_t *o);

/* ordo_bound_init_from sends values[t] (tensor t's numel floats, the caller's, copied) as
 * the tensors' initial values, as ordo_bound_init does, without writing the value buffers
 * where they are shared (with flat paths they receive the copy). */
ORDO_API int ordo_bound_init_from(ordo_t *o, const float *const *values);

/* ordo_iter_begin starts iteration iter (counted from 0 for this binding): the values of
 * iter that are not here yet are asked for, in the plan's order; in training, those already
 * here (early pulls, or an ordo_pull_values(o, iter) before it) count as arrived. */
ORDO_API int ordo_iter_begin(ordo_t *o, int64_t iter);

/* ordo_arrival_t is one completion: tensor's value of iteration iter is in its value buffer
 * since t_ns (CLOCK_MONOTONIC nanoseconds). */
typedef struct ordo_arrival {
    int tensor;
    int64_t iter;
    int64_t t_ns;
} ordo_arrival_t;

/* ordo_next_arrival takes the oldest arrival not yet taken, waiting up to timeout_ms (-1: no
 * limit; 0: only what is there): 0, ORDO_ERR_TIMEDOUT when none came, or the cluster's
 * failure. Every value the library brings in is reported once, in arrival order (early
 * pulls' values of the next iteration included); ordo_iter_begin(t) drops the arrivals of
 * iterations before t not taken by then. */
ORDO_API int ordo_next_arrival(ordo_t *o, ordo_arrival_t *a, int timeout_ms);

/* ordo_grad_ready hands over tensor's gradient of iteration iter, complete in its gradient
 * buffer: it is pushed now, or with its merge group or host group once those are complete. */
ORDO_API int ordo_grad_ready(ordo_t *o, int tensor, int64_t iter);

/* ordo_iter_end ends iteration iter: the backward pass is over (with merged or host-group
 * paths the last groups leave now), then it waits up to timeout_ms (-1: no limit) until
 * every gradient buffer is free again and every value of iter arrived. A gradient buffer is
 * free once its push of iter was acknowledged; in host groups once the group summed it (the
 * owner pushes the sum from the library's own memory, and those pushes may still be on
 * their way to the servers while iteration iter + 1 runs: a tensor's push of iter + 1 leaves
 * only after its push of iter completed, and its value of iter + 1 arrives only after that
 * push was applied). The gradient buffers are free again when it returns 0. */
ORDO_API int ordo_iter_end(ordo_t *o, int64_t iter, int timeout_ms);

/* ordo_iter_bytes gives the payload bytes the last ended iteration pushed and pulled as its
 * path counts them (a merged message's, a sparse push's), and appends the path's own
 * counters to extra as JSON members (",\"name\":value", at most size bytes; may be NULL). */
ORDO_API int ordo_iter_bytes(ordo_t *o, int64_t *pushed, int64_t *pulled, char *extra,
                             size_t size);

/* ordo_pull_values asks for every tensor's value after iter updates and waits up to
 * timeout_ms for them (the final model after the last iteration). In host groups the owners
 * asked for them with their last pushes already: it waits until every value of iter is
 * in the value buffers (with shared values: completely published), so that a program may read
 * them between iterations iter - 1 and iter (evaluation) or after the last one. */
ORDO_API int ordo_pull_values(ordo_t *o, int64_t iter, int timeout_ms);

/* ordo_unbind waits until every push handed over was answered (the last iteration's may
 * still be on the wire after ordo_iter_end, and in host groups their answers are the values
 * the other members read), then stops the library's thread and frees the buffers; the
 * key-level calls work again. ordo_leave unbinds the same way first, ordo_destroy without
 * waiting. */
ORDO_API int ordo_unbind(ordo_t *o);

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

/* ordo_commit_state keeps a copy of the program's own state (bytes the program makes and
 * reads: its parameters and optimizer state in ordo.torch gradients mode, where the servers
 * hold no parameters) as of the iteration it is at (every tensor's gradients pushed so far).
 * A worker that restarted or joined the run asks a live peer for it (ordo_peer_state): commit
 * after every step, between iterations. The copy is sent from within the library's calls
 * (a peer waiting at its next pull answers); a request for an iteration not committed yet is
 * answered at the commit that reaches it. */
ORDO_API int ordo_commit_state(ordo_t *o, const void *state, size_t bytes);

/* ordo_peer_state asks a live peer (through the scheduler: the lowest-ranked worker that has
 * finished an iteration) for its committed state of this worker's iteration or later, and
 * waits up to timeout_ms (-1: no limit): *bytes its size and *iter its iteration. It is
 * copied into buf when capacity allows (buf NULL: only the size; call again with room: the
 * same state, not asked again); once copied every tensor's version and ordo_step's iteration
 * are *iter: the program goes on from there. ORDO_ERR_NOTSUP: no peer has a state to give
 * (the reason in ordo_last_error); ORDO_ERR_TIMEDOUT: calling again waits for the same answer. */
ORDO_API int ordo_peer_state(ordo_t *o, void *buf, size_t capacity, size_t *bytes, int64_t *iter,
                             int timeout_ms);

/* ordo_servers_version returns the newest version of a value any server reported to this
 * worker (its pulls' answers, and under backup workers a late push's acknowledgement): how far
 * the servers got. Under backup workers a worker behind it starts that iteration instead of
 * finishing stale work. -1 before any answer; safe from any thread. */
ORDO_API int64_t ordo_servers_version(const ordo_t *o);

#ifdef __cplusplus
}
#endif

#endif
