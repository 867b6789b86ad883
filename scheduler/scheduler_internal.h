/* scheduler_internal: the scheduler object's state and the helpers its files share
 * (scheduler.c: the object, rendezvous and loop; scheduler_ctl.c: barriers, broadcasts,
 * calibration, re-plans). Nothing outside scheduler/scheduler*.c includes it. */
#ifndef ORDO_SCHEDULER_INTERNAL_H
#define ORDO_SCHEDULER_INTERNAL_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "common/conf.h"
#include "common/keys.h"
#include "common/liveness.h"
#include "common/transport.h"
#include "core/model.h"
#include "scheduler/replan.h"
#include "scheduler/runlog.h"
#include "scheduler/scheduler.h"
#include "scheduler/sparse_coord.h"

typedef struct {
    uint8_t rid[ORDO_WIRE_MAX_RID];
    size_t rid_len;
    int role;
    int want_rank;
    int rank;
    int pid;
    char endpoint[256];
    int64_t last_seen_ns;
    uint64_t beat;                       /* the id its heartbeat thread's messages carry */
    uint8_t hb_rid[ORDO_WIRE_MAX_RID];   /* that thread's socket (probes go there) */
    size_t hb_rid_len;
    ordo__liveness_t live;                /* the verdict on it (common/liveness.h) */
    bool done;
    bool dead;          /* fault.worker = restart | shrink: it died (restart: not back yet) */
    int64_t dead_ns;    /* when it was found dead */
    int restarts;       /* restart: how many times this rank was restarted */
    int64_t next_iter;  /* a worker: the first iteration it has not reported (STATS) */
    bool recovering;    /* a restarted worker that has not finished an iteration yet */
    bool gone; /* a server declared dead whose slices went to backups ([fault] replicas) */
    json_t *tensors; /* a worker's declared tensors ([model] trainer = declared), or NULL */
    char intra[8];   /* a worker's choice for intra.backend = auto ("shm", "nccl"), or "" */
    char compression[96]; /* a worker's [push] compression, as it registered ("": none said) */
    json_t *rejoin;   /* what it held when it registered with a restarted scheduler, or NULL */
    bool at_barrier;  /* counted at the barrier the workers gather at */
    uint64_t batch_req; /* the request id of its last BATCH_REQ answered (0: none) */
} member_t;

struct ordo__scheduler {
    ordo__conf_t conf;
    ordo__transport_t *tp;
    int sock;
    member_t *members;
    int n_members, n_servers, n_workers;
    bool welcomed;
    bool declared;   /* [model] trainer = declared: the workers' declarations are the model */
    json_t *updates; /* declared: each key's update rule (null: the conf's), for the plan */
    int n_done;
    ordo__runlog_t *log;
    ordo__model_t *model;
    ordo__keys_t *keys;
    json_t *plan;            /* computed once at start-up, sent in every WELCOME */
    int64_t barrier_id;      /* the barrier workers are gathering at (-1: none) */
    int barrier_n;           /* workers arrived at it */
    int64_t bcast_id;        /* the broadcast workers are gathering at */
    int bcast_n, bcast_root; /* workers arrived at it, and its root */
    uint64_t bcast_bytes;    /* its size (every worker's must match) */
    int bcast_first;         /* the worker that came first (its size and root rule) */
    ordo__msg_t bcast_data;   /* the root's message, kept until all arrived */
    bool have_bcast_data;
    ordo__sparse_coord_t *sparse; /* [push] mode = sparse: thresholds and regions */
    bool calibrating; /* [push] calibrate: the merge groups wait for worker 0's calibration */
    char run_dir[ORDO_CONF_PATH + ORDO_CONF_STR + 64];
    char endpoint[256];    /* where it listens */
    int64_t start_ns;      /* when it started listening (the start-up timeout counts from it) */
    uint64_t cp_msgs[ORDO_MSG_TYPE_MAX], cp_bytes[ORDO_MSG_TYPE_MAX]; /* taken, by type
                                                                    (control_plane.c) */
    bool aborted;          /* the run was aborted: ABORT sent, summary written */
    char *summary;         /* the summary's JSON text once the run completed */
    ordo__replan_t *replan; /* collective re-plans (ordo_replan) */
    int n_live;            /* workers in the run (fault.worker = shrink: fewer after deaths) */
    int worker_deaths, n_restarts, n_shrinks, n_joins; /* membership changes (summary.json) */
    FILE *members_log;     /* RUN/membership.jsonl: one line per change */
    struct ordo__replicas *repl; /* [fault] replicas > 1: promotions (scheduler/replicas.h) */
    struct ordo__batches *batches;  /* [sync] batches: the shared epoch, made at the first
                                      BATCH_REQ (scheduler/batches.h) */
    struct ordo__step_check *step_check; /* the step model's check (step_check.c) */
    bool step_check_off;                /* no step model in the plan, or checked already */
    int64_t wall_first_ns, wall_last_ns; /* the first iteration's start, the last one's end */
    /* fault.scheduler = restart (scheduler/restart.c) */
    int64_t generation;    /* 1 for the run's first scheduler, one more per restart (0: off) */
    bool restarted;        /* this one took over a run whose scheduler died */
    uint64_t plan_digest;  /* of the key map and plan (common/node_rejoin.h) */
    struct ordo__sched_seen {
        uint8_t *bits; /* one per iteration: its report is in the run log */
        int64_t cap;   /* bytes */
        int64_t prefix; /* every iteration up to this one is (-1: none) */
    } *reported;       /* per worker */
    ordo__msg_t *stash;     /* what came before every member registered again */
    int n_stash, cap_stash;
    int versions_due;      /* servers welcomed back that have not said their version yet */
    char cannot_rebuild[512]; /* why a member's state contradicts the run ("": none does) */
    char intra_run[64];       /* the run's id in its host groups' plan (taken over) */
    int n_refused;            /* members refused since */
    int64_t first_rejoin_ns, last_rejoin_ns; /* when the first and the newest member came back */
    bool servers_given_up; /* [fault] replicas: the servers not back are taken as dead */
    json_t *prior; /* a restarted scheduler: its predecessor's RUN/scheduler.json, or NULL */
    int64_t isolated_ns; /* when every member was found silent at once (0: some are heard) */
    int restarts;        /* how many schedulers ran this run before this one */
    json_t *rejoin_map;  /* [fault] replicas: the newest replica map a member registered
                          * again with (scheduler/replicas.h), or NULL */
    int64_t rejoin_seq;  /* its seq */
    int (*rebuild_handle)(struct ordo__scheduler *, ordo__msg_t *); /* replays the stash */
    int64_t rebuild_ns;       /* when the servers were welcomed back */
    int64_t reports_wait_ns;  /* every worker done, the end held for reports sent again (0: not) */
    char abort_why[600];      /* why the run was aborted ("" while it runs) */
    int *past_restarts;       /* restarts of each rank before this scheduler (membership.jsonl) */
    uint8_t *fresh;           /* a new process of the rank registered in the rebuild (kept) */
    struct ordo__sched_beat {
        uint64_t beat;
        int64_t ns;
    } *beats;                 /* heartbeats of members not registered yet in the rebuild */
    int n_beats;
    struct ordo__sched_fence *fence;     /* fenced processes and the generation (fence.c) */
};

typedef ordo__scheduler_t sched_t;

/* ordo__sched_member_fresh starts m's liveness afresh for a new process: its heartbeat id
 * from the REGISTER body o ("beat"), no heartbeat socket known yet. */
void ordo__sched_member_fresh(sched_t *s, member_t *m, json_t *o);

/* ---- fault.scheduler = restart (scheduler/restart.c) ---- */

/* ordo__sched_restart_open reads RUN/scheduler.json (the run folder known): found, this
 * scheduler restarts the run with the next generation; else it is generation 1. */
int ordo__sched_restart_open(sched_t *s);

/* ordo__sched_restart_plan gives a restarted scheduler's plan what its predecessor's had of
 * its own (the host groups' run id, which names their shared memory). */
void ordo__sched_restart_plan(sched_t *s);

/* ordo__sched_restart_listening writes RUN/scheduler.json with the address listened at and
 * puts the restarts into the summary. */
int ordo__sched_restart_listening(sched_t *s);

/* ordo__sched_restart_close frees the rebuild's state; ended: the run is over (completed or
 * aborted), so RUN/scheduler.json goes. */
void ordo__sched_restart_close(sched_t *s, bool ended);

/* ordo__sched_restart_save writes RUN/scheduler.json again (under fault.scheduler =
 * restart): the generation, the address, and what summary.json must carry on past a restart
 * (the replicas' promotions and joins). */
void ordo__sched_restart_save(sched_t *s);

/* ordo__sched_restart_stash takes m while a restarted run is rebuilt: a server's current
 * version, or anything else kept (moved) until every member is back. -1 when m is to be
 * handled now, else handle's codes. */
int ordo__sched_restart_stash(sched_t *s, ordo__msg_t *m);

/* ordo__sched_restart_seen records that the run log holds worker's report of iter
 * (ordo_runlog_seen_fn; ctx the scheduler). */
void ordo__sched_restart_seen(void *ctx, int worker, int64_t iter);

/* ordo__sched_restart_linger: a restarted scheduler that aborted the run before every member
 * registered again stays for twice the time a member takes to find its predecessor silent,
 * answering each member that registers late with the ABORT, so that none waits
 * fault.scheduler_wait_ms for a scheduler that is gone. */
void ordo__sched_restart_linger(sched_t *s);

/* ordo__sched_all_done: 1 when every live worker is done and the run log holds each
 * worker's reports up to the newest it registered again with (a worker done while no
 * scheduler ran sends again after the WELCOME the reports the old scheduler died with),
 * or they did not come within fault.timeout_max_ms (a warning names them); else 0. */
int ordo__sched_all_done(sched_t *s);

/* ordo__sched_restart_old_stats reports whether worker's report of iter is in the run log
 * already (a report sent again to a new scheduler), and records iter otherwise. */
bool ordo__sched_restart_old_stats(sched_t *s, int worker, int64_t iter);

/* ordo__sched_restart_register takes a REGISTER (body o) to a scheduler of a run under
 * fault.scheduler = restart that carries "rejoin", or any REGISTER to a restarted one;
 * once every member is back it welcomes them and replays the kept messages through handle.
 * Returns handle's codes: 0, 1 (every worker done), ORDO_ERR_ABORT. */
int ordo__sched_restart_register(sched_t *s, ordo__msg_t *m, json_t *o,
                                 int (*handle)(sched_t *, ordo__msg_t *));

/* ordo__sched_isolated (isolated.c), under fault.scheduler = restart, takes a scheduler that hears
 * none of its members within fault.timeout_ms as the one cut off (its host partitioned, or
 * the process paused): nobody is declared dead, and it waits up to fault.scheduler_wait_ms
 * for them to register again (they found it silent too). 1 while it is so, and on the turn
 * it hears one again (every member's timeout starts afresh then); 0 otherwise; the abort's
 * code once the wait is over. */
int ordo__sched_isolated(sched_t *s, int64_t now);

/* ordo__sched_restart_wait bounds a restarted run's rebuild (the scheduler's liveness
 * check before the WELCOME): under fault.worker = restart | shrink, once every server is back
 * and the wait window passed, the run is rebuilt without the workers that did not register
 * again (they died while no scheduler ran); with [fault] replicas, a server that registered
 * and fell silent, or that stayed away well past the time a live member takes to find the
 * old scheduler dead and register again, is taken as dead (scheduler/replicas.h);
 * otherwise fault.startup_ms aborts it. */
int ordo__sched_restart_wait(sched_t *s, int (*handle)(sched_t *, ordo__msg_t *));

/* ordo__sched_restart_keep keeps message m (moved) until the rebuild is over; ORDO_ERR_NOMEM
 * when too many wait (m is dropped, counted). */
int ordo__sched_restart_keep(sched_t *s, ordo__msg_t *m);

/* ---- the membership a restarted run rebuilds (scheduler/restart_members.c) ---- */

/* ordo__sched_restart_history reads RUN/membership.jsonl of a restarted run: the counts of
 * its changes (summary.json), each rank's restarts (fault.restarts) and the generation. */
int ordo__sched_restart_history(sched_t *s);

/* ordo__sched_restart_expected: whether worker r is in the run as the servers that registered
 * again say (r < cluster.workers and it did not leave; a higher r joined). */
bool ordo__sched_restart_expected(const sched_t *s, int r);

/* ordo__sched_restart_servers_in (restart.c): every server registered again, or is listed
 * dead in the members' replica map, or was taken as dead in the rebuild. */
bool ordo__sched_restart_servers_in(const sched_t *s);

/* ordo__sched_restart_all_in: every server is in (ordo__sched_restart_servers_in), and every
 * expected worker registered again, or a new process of its rank is kept (fault.worker =
 * restart). */
bool ordo__sched_restart_all_in(sched_t *s);

/* ordo__sched_restart_beat notes a heartbeat with id beat from a process that has not
 * registered again (a restarted run being rebuilt): the worker it is from is alive. */
void ordo__sched_restart_beat(sched_t *s, uint64_t beat);

/* ordo__sched_restart_quiet: every server is back, and each expected worker that did not
 * register again is known by its heartbeat id (the servers') and sent no heartbeat for the
 * timeout and a probe's time (fault.timeout_max_ms + 2 x heartbeat_ms): it is dead. */
bool ordo__sched_restart_quiet(const sched_t *s);

/* ordo__sched_restart_window_ms: how long a rebuild waits for the workers before the run's
 * policy takes those that did not register again. */
int64_t ordo__sched_restart_window_ms(const sched_t *s);

/* ordo__sched_restart_fresh keeps the REGISTER m (body o) of a new worker process that comes
 * while the run is rebuilt (a restarted worker under fault.worker = restart, or one that
 * joins under fault.max_workers); false when it is neither (the caller refuses it). */
bool ordo__sched_restart_fresh(sched_t *s, ordo__msg_t *m, json_t *o);

/* ordo__sched_restart_refuse_left refuses the workers that registered again although the
 * servers took them out of the run (fault.worker = shrink), and drops them from the rebuild. */
int ordo__sched_restart_refuse_left(sched_t *s);

/* ordo__sched_restart_adopt sets up the workers of a rebuilt run once they were welcomed:
 * each one's next iteration and restarts; a worker that did not register again is dead and
 * the run's policy takes it; 0 or the abort's code. */
int ordo__sched_restart_adopt(sched_t *s);

/* ordo__sched_generation_set makes the generation go on after generation (the newest in
 * membership.jsonl, read by a restarted scheduler), if its own is not past it already. */
void ordo__sched_generation_set(sched_t *s, int64_t generation);

/* ordo__sched_plan_declared makes the model, key map and plan from the workers' declared
 * tensors ([model] trainer = declared); 0 or the abort's code. */
int ordo__sched_plan_declared(sched_t *s);

/* ordo__sched_member_name writes m's role, rank, pid and endpoint into buf and returns it. */
const char *ordo__sched_member_name(const member_t *m, char *buf, size_t size);

/* ordo__sched_generation_next starts a new generation and returns its number (fence.c): every
 * membership change does (a worker's death, restart, recovery, shrink or join; a server's
 * promotion or join; a member back with a scheduler it found silent), and so does a
 * scheduler's restart (restart.c: its predecessor's + 1). The run starts as generation 1;
 * under fault.scheduler = restart the number is kept in RUN/scheduler.json at once. */
int64_t ordo__sched_generation_next(sched_t *s);

/* ordo__sched_fence fences the process of member m, a worker declared dead at iteration iter
 * in membership generation `generation`: its connections are remembered and the servers
 * told. Call before m takes a new process (ordo__sched_member_fresh). */
void ordo__sched_fence(sched_t *s, const member_t *m, int64_t iter, int64_t generation);

/* ordo__sched_fence_refuse answers message m with ABORT ("fenced: ...") and returns true when
 * it comes from a fenced process; the caller then drops it. */
bool ordo__sched_fence_refuse(sched_t *s, const ordo__msg_t *m);

/* ordo__sched_fence_destroy frees the fencing state. */
void ordo__sched_fence_destroy(sched_t *s);

/* ordo__sched_cp_count counts message m, taken by the scheduler, by its type. */
void ordo__sched_cp_count(sched_t *s, ordo__msg_t *m);

/* ordo__sched_cp_summary puts the counts, the members, the wall time and the scheduler's CPU
 * into the summary ("control_plane") and logs them in one line. */
void ordo__sched_cp_summary(sched_t *s);

/* ordo__sched_msg_to initialises *m as a message of type from the scheduler to the node rid
 * (its socket, routing id and header); the caller adds fields and frames and sends it. */
void ordo__sched_msg_to(const sched_t *s, const uint8_t *rid, size_t rid_len, int type,
                        ordo__msg_t *m);

/* ordo__sched_reply sends a message of type (JSON text, may be NULL) to the node rid. */
void ordo__sched_reply(sched_t *s, const uint8_t *rid, size_t rid_len, int type, const char *text);

/* ordo__sched_abort_run tells every node the run is aborted (why), writes the summary and
 * returns ORDO_ERR_ABORT. */
int ordo__sched_abort_run(sched_t *s, const char *why);

/* ordo__sched_welcome_text returns the WELCOME body for member m (caller frees): its rank,
 * the cluster and key maps, the run folder and the plan; rejoin >= 0 adds the iteration a
 * restarted worker goes on at. NULL when out of memory. */
char *ordo__sched_welcome_text(sched_t *s, const member_t *m, int64_t rejoin);

/* ---- membership (scheduler/membership.c): fault.worker = restart | shrink ---- */

/* ordo__sched_member_silent handles member m found silent for silent_ms: under fault.worker
 * = restart or shrink a worker's death is a membership change, anything else aborts the
 * run. 0 to go on, or ORDO_ERR_ABORT. */
int ordo__sched_member_silent(sched_t *s, member_t *m, int64_t silent_ms);

/* ordo__sched_rejoin takes the registration (o, from m) of a restarted worker after the
 * cluster formed (fault.worker = restart): it takes the rank of the dead worker it names,
 * gets the WELCOME with the iteration to go on at, or is refused. 0, or ORDO_ERR_ABORT when
 * the rank has no restarts left. */
int ordo__sched_rejoin(sched_t *s, const ordo__msg_t *m, json_t *o);

/* ordo__sched_record appends membership event ("death", "restart", "recovered", "shrink",
 * "join") of worker m at iteration iter to RUN/membership.jsonl. */
void ordo__sched_record(sched_t *s, const char *event, const member_t *m, int64_t iter);

/* ordo__sched_send_members sends member m a MEMBERS message of iteration iter (JSON text). */
void ordo__sched_send_members(sched_t *s, const member_t *m, int64_t iter, const char *text);

/* ordo__sched_tell_members sends MEMBERS (the live workers, and change = "left" or "joined"
 * with rank, from iteration iter on) to every live server and worker. */
void ordo__sched_tell_members(sched_t *s, const char *change, int rank, int64_t iter);

/* ---- growth (scheduler/grow.c): fault.max_workers ---- */

/* ordo__sched_grow takes the registration (o, from m) of a worker that joins the running job
 * with a rank from cluster.workers to fault.max_workers - 1 (scripts/ordo-launch
 * --add-worker): it gets the WELCOME with the iteration it starts at (two past the newest
 * one reported) and the servers and workers are told (MEMBERS "joined"); or it is refused,
 * naming why. */
void ordo__sched_grow(sched_t *s, const ordo__msg_t *m, json_t *o);

/* ---- peer state (scheduler/peer_state.c): ordo_peer_state ---- */

/* ordo__sched_on_state_req forwards worker mb's STATE_REQ m to a live peer that finished an
 * iteration (the lowest rank), or answers mb with an error when there is none. */
void ordo__sched_on_state_req(sched_t *s, member_t *mb, ordo__msg_t *m);

/* ordo__sched_on_state relays the STATE m of worker mb to the worker that asked (its key). */
void ordo__sched_on_state(sched_t *s, member_t *mb, ordo__msg_t *m);

/* ordo__sched_on_stats notes that worker mb finished iteration iter. */
void ordo__sched_on_stats(sched_t *s, member_t *mb, int64_t iter);

/* ordo__sched_membership_close puts the membership counts into the run's summary. */
void ordo__sched_membership_close(sched_t *s);

/* ordo__sched_on_barrier counts worker mb at barrier id and releases all when all live
 * workers came (mb NULL: only the check, after a worker left). */
void ordo__sched_on_barrier(sched_t *s, member_t *mb, int64_t id);

/* ordo__sched_on_bcast gathers broadcast m from worker mb and relays the root's bytes once
 * every worker came; a size or root that differs aborts the run naming both workers. */
int ordo__sched_on_bcast(sched_t *s, member_t *mb, ordo__msg_t *m);

/* ordo__sched_on_calibration plans the merge groups from worker 0's calibration m. */
int ordo__sched_on_calibration(sched_t *s, ordo__msg_t *m);

/* ordo__sched_replan_send sends a re-plan's text to the nodes of role (ordo__replan_new's
 * send callback; ctx is the scheduler). */
void ordo__sched_replan_send(void *ctx, int role, const char *text);

/* ordo__sched_on_replan hands worker mb's REPLAN m to the collective. */
int ordo__sched_on_replan(sched_t *s, member_t *mb, ordo__msg_t *m);

/* ---- the batch service (scheduler/batch_service.c): [sync] batches ---- */

/* ordo__sched_on_batch_req answers worker mb's BATCH_REQ m with its next batch, the end of
 * its epoch or of the run, or a refusal (the service off, a spec that differs). */
void ordo__sched_on_batch_req(sched_t *s, member_t *mb, ordo__msg_t *m);

/* ordo__sched_batches_rejoin rebuilds a restarted scheduler's batch service from what the
 * workers registered again with (their leases, newest batches, counts and the last request
 * answered): 0, or an error with why filled. */
int ordo__sched_batches_rejoin(sched_t *s, char *why, size_t wsz);

/* ordo__sched_batches_dead returns the batch a dead worker mb was handed to the pool. */
void ordo__sched_batches_dead(sched_t *s, const member_t *mb);

/* ordo__sched_batches_stats notes an iteration's start and end (the run's wall time). */
void ordo__sched_batches_stats(sched_t *s, int64_t t_start_ns, int64_t t_end_ns);

/* ordo__sched_step_check_stats takes one worker's stats into the check of the plan's step
 * model against the first measured iterations (step_check.c); ..._free frees its state. */
void ordo__sched_step_check_stats(sched_t *s, const ordo__iter_stats_t *st);
/* ordo__sched_step_check_replanned starts the check again after a re-plan, on its plan and the
 * profile's model, from a few iterations on. */
void ordo__sched_step_check_replanned(sched_t *s);
void ordo__sched_step_check_free(sched_t *s);

/* ordo__sched_batches_close puts wall_s, samples and batches into the run's summary. */
void ordo__sched_batches_close(sched_t *s);

#endif
