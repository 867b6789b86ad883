/* ps: the worker's side of the parameter server (ordo__ps_*): join the cluster, connect
 * to every server, and push and pull tensors asynchronously. A tensor (key) is sent as the
 * chunks of the key map; a pull completes when every chunk arrived, a push when every
 * chunk was acknowledged. Queued pushes leave in priority order (smallest first) while the
 * push credit allows ([order] credit_bytes, client/credit.h). Completions are reported as events by ordo__ps_poll. One thread
 * owns a handle; with net.io_thread = false the network (heartbeats included) only moves
 * inside its calls, so a thread that stops polling for fault.timeout_ms is declared dead. */
#ifndef ORDO_PS_H
#define ORDO_PS_H

#include <stdbool.h>
#include <stdint.h>

#include "common/conf.h"
#include "common/keys.h"
#include "common/wire.h"

typedef struct ordo__ps ordo__ps_t;
struct ordo__plan; /* core/plan.h */

typedef enum {
    ORDO__EV_PULL_DONE = 1,
    ORDO__EV_PUSH_DONE = 2,
    ORDO__EV_WAKE = 3,
    ORDO__EV_BARRIER = 4, /* every worker reached barrier ev.iter */
    ORDO__EV_HOOK = 5,    /* the message hook finished something: ev.key = its code */
    ORDO__EV_PROBE_DONE = 6, /* a calibration push was acknowledged: ev.key = its id */
    ORDO__EV_PLAN = 7,       /* the merge groups planned from the calibration arrived */
    ORDO__EV_BCAST = 8,      /* broadcast ev.iter completed: the root's bytes are in place */
    ORDO__EV_REPLAN = 9,     /* the scheduler answered this worker's REPLAN */
    ORDO__EV_BATCH = 10,     /* the scheduler answered this worker's BATCH_REQ */
    ORDO__EV_STATE = 11,     /* a peer's state (or a refusal) answered this worker's STATE_REQ */
    ORDO__EV_GRAD_FREE = 12  /* the path no longer reads key ev.key's gradient of ev.iter: its
                                push goes on from the path's own memory (ordo__ps_grad_free) */
} ordo__ps_ev_kind_t;

typedef struct ordo__ps_event {
    int kind;
    int key;
    int64_t iter;
    int64_t t_ns; /* monotonic time of completion */
} ordo__ps_event_t;

/* ordo__ps_new joins the cluster described by conf (registration, WELCOME, data
 * connections to every server). When the plan asks for a start-up calibration ([push]
 * calibrate = true) every worker then takes part in it (client/calibrate.h) and waits for the
 * scheduler's merge groups, so the handle it returns pushes merged either way. Fails with
 * ORDO_ERR_AUTH, ORDO_ERR_TIMEDOUT, ORDO_ERR_ABORT. */
int ordo__ps_new(const ordo__conf_t *conf, ordo__ps_t **out);

/* ordo__ps_op_times_fn measures the model's op times for the start-up calibration: 0 with
 * ordo-oracle/1 text in *out (malloc'd; NULL: nothing measured), or an error. */
typedef int (*ordo__ps_op_times_fn)(void *ctx, char **out);

/* ordo__ps_join is ordo__ps_new with the program's declared tensors and a way to measure op
 * times. tensors (NULL: none) is a JSON array of {"name", "numel", "update"} objects
 * (client/api.c writes it) that the REGISTER carries, so that with [model] trainer = declared
 * the scheduler builds the key map from them. When the plan asks for a start-up calibration,
 * worker 0 calls op_times (if not NULL) after its pushes were timed, while the other workers
 * wait, and sends the result with its fit; the scheduler plans the merge groups with those
 * times. */
int ordo__ps_join(const ordo__conf_t *conf, const char *tensors, ordo__ps_op_times_fn op_times,
                  void *ctx, ordo__ps_t **out);

/* ordo__ps_destroy leaves and frees; NULL-safe. */
void ordo__ps_destroy(ordo__ps_t **w);

int ordo__ps_rank(const ordo__ps_t *w);
int ordo__ps_n_workers(const ordo__ps_t *w);
int ordo__ps_n_servers(const ordo__ps_t *w);
const ordo__keys_t *ordo__ps_keys(const ordo__ps_t *w);
/* ordo__ps_plan returns the scheduler's plan (core/plan.h), borrowed from w: a re-plan
 * (ordo__ps_replan_apply) replaces it. */
const struct ordo__plan *ordo__ps_plan(const ordo__ps_t *w);

/* ordo__ps_grad_home returns where key's gradient may be computed so that a merged push
 * of it copies nothing (its place in a merge buffer, client/merge_buf.h, borrowed from w), or
 * NULL when it is pushed from wherever it is (dense and sparse pushes, chunked keys). A
 * gradient there must not be written again before its push was acknowledged (PUSH_DONE). */
float *ordo__ps_grad_home(const ordo__ps_t *w, int key);
/* ordo__ps_value_home returns where the path shares key's values so that a bound model reads
 * them in place (a host group's value in its shm segment, [intra] values = shared), borrowed
 * from w until it is destroyed, or NULL when values land in the caller's own buffer. Only the
 * path writes there: value t + 1 once every member of the group handed over gradient t. */
float *ordo__ps_value_home(const ordo__ps_t *w, int key);
/* ordo__ps_run_dir returns the run folder the scheduler named. */
const char *ordo__ps_run_dir(const ordo__ps_t *w);

/* ordo__ps_members tells, after a worker left the run (fault.worker = shrink: returns 1),
 * this worker's index among the live ones, their number and the iteration from which they
 * hold; 0 and the rank and the cluster's worker count while everyone is in. */
int ordo__ps_members(const ordo__ps_t *w, int *index, int *n_live, int64_t *since);

/* ordo__ps_rejoin_iter returns the iteration a restarted worker goes on at (fault.worker =
 * restart: the first its dead predecessor did not finish), or -1 for a worker of the start. */
int64_t ordo__ps_rejoin_iter(const ordo__ps_t *w);

/* ordo__ps_init sends key's initial value (copied) to its servers; servers keep the
 * first init of a slice and ignore later ones. */
int ordo__ps_init(ordo__ps_t *w, int key, const float *values);

/* ordo__ps_pull asks for key's value of iteration iter, to be written into dst (numel
 * floats, owned by the caller, untouched until the PULL_DONE event). */
int ordo__ps_pull(ordo__ps_t *w, int key, float *dst, int64_t iter, int priority);

/* ordo__ps_push queues key's gradient of iteration iter. src is sent zero-copy: the
 * caller keeps it unchanged until the PUSH_DONE event. When the scheduler's plan has a merge
 * member ([push] mode = merged) the gradient is copied into its group's merge buffer (or, for
 * a message holding one slice, sent from src), the group leaves as one message per server
 * once all its keys were pushed, and each of its keys gets its PUSH_DONE when the whole
 * group is acknowledged: every key of a group must then be pushed, in the same iteration. */
int ordo__ps_push(ordo__ps_t *w, int key, const float *src, int64_t iter, int priority);

/* ordo__ps_probe sends a calibration push of bytes (a multiple of 4, at most
 * ORDO_PROBE_MAX_BYTES) from src to server `server`: the server adds it to scratch memory and
 * acknowledges it (ORDO__EV_PROBE_DONE with ev.key = id); no value changes. It leaves at once,
 * paced by the emulated link like any push; src stays the caller's until the event. */
int ordo__ps_probe(ordo__ps_t *w, int server, const float *src, size_t bytes, int id);

/* ordo__ps_pushpull pushes key's gradient of iteration iter (as ordo__ps_push) and
 * pulls the value it produces, iteration iter + 1, into dst (as ordo__ps_pull), with one
 * message per chunk each way: the pull rides on the push and the server's answer acknowledges
 * both, so PUSH_DONE (iter) and PULL_DONE (iter + 1) come together. In merged mode it is a
 * push followed by a pull. */
int ordo__ps_pushpull(ordo__ps_t *w, int key, const float *src, float *dst, int64_t iter,
                         int priority);

/* ordo__ps_poll waits up to timeout_ms (-1 forever; 0 reads what has arrived without
 * blocking) for the next completion. Returns
 * ORDO_ERR_TIMEDOUT when none came, ORDO_ERR_ABORT when the cluster aborted, ORDO_ERR_PEERDEAD when
 * the scheduler went silent, ORDO_ERR_PROTO when a server refused a request (detail says). */
int ordo__ps_poll(ordo__ps_t *w, int timeout_ms, ordo__ps_event_t *ev);

/* ordo__ps_wake makes a thread blocked in ordo__ps_poll return an ORDO__EV_WAKE event;
 * the only call that other threads may make. */
void ordo__ps_wake(ordo__ps_t *w);

/* ordo__ps_outstanding counts pulls and pushes not yet complete. */
int ordo__ps_outstanding(const ordo__ps_t *w);

/* ordo__ps_queued counts the pushes queued and not yet handed to the transport: not yet
 * encoded, so their residuals (client/compress.h) are not yet updated. */
int ordo__ps_queued(const ordo__ps_t *w);

/* ordo__ps_wait_all polls until nothing is outstanding, discarding the events. */
int ordo__ps_wait_all(ordo__ps_t *w, int timeout_ms);

/* ordo__ps_report sends one iteration's stats (a JSON object) to the scheduler. */
int ordo__ps_report(ordo__ps_t *w, const char *json);

/* ordo__ps_barrier tells the scheduler this worker reached barrier id (ids increase);
 * ordo__ps_poll reports ORDO__EV_BARRIER with iter = id once every worker has. */
int ordo__ps_barrier(ordo__ps_t *w, int64_t id);

/* ordo__ps_broadcast joins broadcast id (ids increase) of bytes with root `root`: the
 * root's buf is sent (copied) to the scheduler, which relays it to every other worker; there
 * it is written into buf (the caller's, untouched until the event). ordo__ps_poll reports
 * ORDO__EV_BCAST with iter = id once it is in place. A worker whose size or root differs from
 * the others' makes the scheduler abort the run, naming it. */
int ordo__ps_broadcast(ordo__ps_t *w, int64_t id, int root, void *buf, size_t bytes);

/* ordo__ps_replan asks the scheduler for a collective re-plan (scheduler/replan.h):
 * worker 0 sends names_json (a JSON array of its tensor names) and profile (ordo-model/1
 * text), the others NULL for both. ordo__ps_poll reports ORDO__EV_REPLAN once the
 * scheduler answered; ordo__ps_replan_take then hands over the answer. */
int ordo__ps_replan(ordo__ps_t *w, const char *names_json, const char *profile);

/* ordo__ps_replan_take returns the scheduler's answer to the last REPLAN (JSON text: the
 * new plan, or {"error", "code"}; the caller frees it), or NULL when none is there. */
char *ordo__ps_replan_take(ordo__ps_t *w);

/* ordo__ps_replan_accepted says whether answer (ordo__ps_replan_take's) is a new plan, not
 * a refusal ({"error"}) nor text that does not parse. */
bool ordo__ps_replan_accepted(const char *answer);

/* ordo__ps_replan_apply makes plan_json (the scheduler's answer to REPLAN) the worker's
 * plan: ordo__ps_plan returns it, and the push path is made again from it (a merged
 * path takes the new merge groups). Only with nothing outstanding; on failure the worker
 * has no push path and must leave. A path kept on re-plans (client/push.h: a host group's),
 * when the new plan asks for it too, is kept instead, with whatever is in flight (a bound
 * model's early pulls): the plan and the push credit change, the group's shared memory,
 * owners and merge groups stay those of the join. keep_path (a bound model, which holds its
 * path): a plan that would change the path is refused, nothing changed. */
int ordo__ps_replan_apply(ordo__ps_t *w, const char *plan_json, bool keep_path);

/* ordo__ps_abort tells the scheduler this worker gives up (reason), so the run ends. */
void ordo__ps_abort(ordo__ps_t *w, const char *reason);

/* ordo__ps_finish tells the scheduler this worker is done (final JSON or NULL) and waits for
 * the SHUTDOWN as long as the scheduler lives (its heartbeats; an hour at most). */
int ordo__ps_finish(ordo__ps_t *w, const char *final_json);

/* A message hook takes the inbound PULL_RESP, ERROR and PLAN messages whose header key is
 * the hook's key (sparse pushes, client/sparse_push.h) instead of the push/pull engine. It
 * returns 0, a negative error (fatal: ordo__ps_poll returns it), or a positive code that
 * ordo__ps_poll reports as an ORDO__EV_HOOK event with ev.key = the code and ev.iter = the
 * message's iteration. It runs on the thread that polls and may call ordo__ps_send. */
typedef int (*ordo__ps_hook_fn)(void *ctx, ordo__msg_t *m);

/* ordo__ps_set_hook installs fn (NULL removes it) for messages with header key `key`. */
void ordo__ps_set_hook(ordo__ps_t *w, uint32_t key, ordo__ps_hook_fn fn, void *ctx);

/* ordo__ps_send sends m (type, iteration, key, chunk, dtype and frames set by the caller)
 * to server `server`, or to the scheduler when server is -1, stamping the sender's role,
 * rank and a request id; m's frames are consumed. */
int ordo__ps_send(ordo__ps_t *w, int server, ordo__msg_t *m);

/* ordo__ps_sync_stats copies, counted since the handle was made, the pulled slices by the
 * staleness of the value the server sent (stale[i]: i iterations stale; the last bucket
 * holds the rest, values newer than asked count as 0) and the pushed slices the servers left
 * out as late ([sync] backup) into *late. stale has ORDO_STALE_BUCKETS entries. */
#define ORDO_STALE_BUCKETS 64
void ordo__ps_sync_stats(const ordo__ps_t *w, int64_t *stale, int64_t *late);

/* ordo__ps_bytes returns payload bytes pushed and pulled so far. */
void ordo__ps_bytes(const ordo__ps_t *w, int64_t *pushed, int64_t *pulled);


/* ---- for the push paths (client/push.h), not for other callers ------------------------ */

struct ordo__push;

/* ordo__ps_push_path returns the push path w picked when it joined (owned by w). */
struct ordo__push *ordo__ps_push_path(const ordo__ps_t *w);

/* ordo__ps_queue_key queues the chunks of key's push of iter from src (zero-copy, as
 * ordo__ps_push); fused: each chunk also pulls iter + 1 into dst (as ordo__ps_pushpull;
 * dst is ignored otherwise). One PUSH_DONE when every chunk was acknowledged. */
int ordo__ps_queue_key(ordo__ps_t *w, int key, const float *src, float *dst,
                           int64_t iter, int priority, bool fused);

/* ordo__ps_push_begin counts key's push of iter as outstanding until
 * ordo__ps_push_done; the path sends it its own way. */
void ordo__ps_push_begin(ordo__ps_t *w, int key, int64_t iter);

/* ordo__ps_push_done completes key's push of iter: its PUSH_DONE event. */
void ordo__ps_push_done(ordo__ps_t *w, int key, int64_t iter);

/* ordo__ps_grad_free says, before its PUSH_DONE, that key's push of iter no longer reads the
 * caller's gradient (a host group's owner pushes the group's sum from its own memory): an
 * ORDO__EV_GRAD_FREE event, not a transfer (nothing outstanding changes). */
void ordo__ps_grad_free(ordo__ps_t *w, int key, int64_t iter);

/* ordo__ps_reserve makes room for `more` queued messages (ORDO_ERR_NOMEM). */
int ordo__ps_reserve(ordo__ps_t *w, int more);

/* ordo__ps_queue_part queues message `part` of the path's unit `group` in priority
 * order, in room made by ordo__ps_reserve; the path's send_part sends it when the link
 * frees up. ordo__ps_pump then hands out what may leave now. */
void ordo__ps_queue_part(ordo__ps_t *w, int group, int part, int64_t iter, int priority);
void ordo__ps_pump(ordo__ps_t *w);

/* ordo__ps_pull_begin counts key's pull of iter as outstanding until
 * ordo__ps_pull_done (its PULL_DONE event); the path fills the destination its own way,
 * and the key's own pull state stays free for a real pull meanwhile. */
void ordo__ps_pull_begin(ordo__ps_t *w, int key, int64_t iter);
void ordo__ps_pull_done(ordo__ps_t *w, int key, int64_t iter);

/* ordo__ps_post hands the path's local op an ORDO_MSG_INTRA with (code in chunk, key,
 * iter) on the thread that polls; the only path call other threads may make. */
void ordo__ps_post(ordo__ps_t *w, int code, int key, int64_t iter);

/* ordo__ps_set_trace lends w the run's trace (NULL: none) for the path's own spans;
 * ordo__ps_trace returns it. The lender clears it before destroying the trace. */
struct ordo__trace;
void ordo__ps_set_trace(ordo__ps_t *w, struct ordo__trace *t);
struct ordo__trace *ordo__ps_trace(const ordo__ps_t *w);

/* ---- the batch service (client/ps_batch.c) ---- */

/* ordo__ps_batch_request asks the scheduler for this worker's next batch: spec_json is the
 * {"n", "batch", "samples", "seed", "shuffle"} every worker sends alike, epoch the epoch it
 * reads (-1: any), iter its next iteration (-1: none). ORDO__EV_BATCH says the answer is
 * in. One request at a time (ORDO_ERR_INVAL otherwise). Once a batch of any epoch is taken,
 * the next one is asked for ahead (without backup workers): the request after it then sends
 * nothing and returns 1 when that answer is in already, else 0. */
int ordo__ps_batch_request(ordo__ps_t *w, const char *spec_json, int64_t epoch, int64_t iter);

/* ordo__ps_batch_unasked reports whether the answer in is one asked for ahead that the program
 * has not asked for yet (the bound thread leaves it until the program asks). */
bool ordo__ps_batch_unasked(const ordo__ps_t *w);

/* ordo__ps_batch_ready reports whether the answer to the request is in. */
bool ordo__ps_batch_ready(const ordo__ps_t *w);

/* ordo__ps_batch_take hands over the answer: 0 with the batch's indices in idx (cap of
 * them at most), their number in *count and epoch in *epoch; 1 the epoch asked for is over;
 * 2 the run's samples are all handed out; or the scheduler's refusal (ORDO_ERR_NOTSUP: the
 * service is off). */
int ordo__ps_batch_take(ordo__ps_t *w, int64_t *idx, int cap, int *count, int64_t *epoch);

/* ordo__ps_on_batch takes the scheduler's BATCH m (ps.c's message handler). */
int ordo__ps_on_batch(ordo__ps_t *w, ordo__msg_t *m);

/* ---- peer state (client/ps_state.c): ordo_commit_state, ordo_peer_state ---- */

/* ordo__ps_state_commit keeps a copy of this worker's state (bytes) as of iteration iter and
 * answers the peers' requests that waited for it. */
int ordo__ps_state_commit(ordo__ps_t *w, const void *state, size_t bytes, int64_t iter);

/* ordo__ps_state_request asks the scheduler for a live peer's state of iteration want or
 * later; ORDO__EV_STATE says the answer is in. One request at a time. */
int ordo__ps_state_request(ordo__ps_t *w, int64_t want);

/* ordo__ps_state_ready reports whether the answer to the request is in. */
bool ordo__ps_state_ready(const ordo__ps_t *w);

/* ordo__ps_state_take hands over the answer: 0 with *state (the caller frees it), *bytes and
 * *iter, or the refusal's error (the reason in the error text). */
int ordo__ps_state_take(ordo__ps_t *w, void **state, size_t *bytes, int64_t *iter);

/* ordo__ps_on_state_req and ordo__ps_on_state take the scheduler's STATE_REQ (a peer asks
 * for this worker's state) and STATE (the answer to this worker's request) (ps.c's message
 * handler). */
int ordo__ps_on_state_req(ordo__ps_t *w, ordo__msg_t *m);
int ordo__ps_on_state(ordo__ps_t *w, ordo__msg_t *m);

/* ordo__ps_newest_version returns the newest version of a value any server reported to this
 * worker (0: none yet); any thread may call it. */
int64_t ordo__ps_newest_version(const ordo__ps_t *w);

/* ordo__ps_relay is a blocking ordo__ps_broadcast: it joins broadcast id (every worker
 * of the run must join it with the same root and bytes) and returns once the root's bytes
 * are in buf, or an error: the run aborted, or nothing came within timeout_ms. For a path's
 * start-up (push_hier's nccl ids), before the run's first events; other events that arrive
 * meanwhile are dropped. */
int ordo__ps_relay(ordo__ps_t *w, int64_t id, int root, void *buf, size_t bytes,
                       int timeout_ms);

/* ordo__ps_conf returns the configuration w joined with. */
const ordo__conf_t *ordo__ps_conf(const ordo__ps_t *w);

/* ordo__ps_compress returns the worker's wire compression (client/compress.h), owned by w. */
struct ordo__compress *ordo__ps_compress(ordo__ps_t *w);

/* ordo__ps_count_push adds bytes to the payload bytes pushed (ordo__ps_bytes). */
void ordo__ps_count_push(ordo__ps_t *w, int64_t bytes);

#endif
