/* ps_internal: the worker object's state, shared by the files of the push/pull library
 * (ps.c: the data path and the event loop; ps_ctl.c: the control messages). Nothing outside
 * client/ps*.c includes it. */
#ifndef ORDO_PS_INTERNAL_H
#define ORDO_PS_INTERNAL_H

#include <jansson.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/conf.h"
#include "common/node.h"
#include "client/compress.h"
#include "client/credit.h"
#include "client/ps.h"
#include "client/push.h"
#include "core/plan.h"

/* a handler of one inbound message type: 0, or a fatal error (ps_msgs.c) */
typedef int (*ordo__ps_msg_fn)(ordo__ps_t *w, ordo__msg_t *m);

typedef struct {
    float *pull_dst;
    int64_t pull_iter;
    int pull_left; /* chunks still to come; 0 = no pull outstanding */
    int push_left; /* chunks still to be acknowledged */
    int64_t push_iter;
    bool fused; /* the push carries the pull (ordo__ps_pushpull) */
} keystate_t;

typedef struct {
    int slice; /* -1: message `part` of the push path's unit `group` (its send_part) */
    int group, part;
    int priority;
    uint64_t seq;
    int64_t iter;
    const float *src;
    bool fused; /* ORDO_FLAG_PULL: the server answers with the value of iter + 1 */
} queued_push_t;

struct ordo__ps {
    ordo__conf_t conf;
    ordo__node_t node;
    const ordo__ps_msg_fn *msgs; /* by message type: the table of ps_msgs.c, set at join */
    ordo__plan_t *plan; /* the scheduler's plan, read once at join (core/plan.h); a re-plan
                         * replaces it */
    int *server_sock; /* per server rank */
    keystate_t *ks;
    uint8_t *got; /* per slice: chunk of the current pull arrived */
    uint8_t *sent;           /* per slice: its push left and is not acknowledged yet */
    queued_push_t *last;     /* per slice: that push (re-sent when its primary dies) */
    uint8_t *repull;         /* per slice: after a promotion, its pull goes again once the
                              * push re-sent before it is acknowledged (ps_repl.c) */
    float **init_val; /* [fault] replicas: per slice, a copy of the INIT sent, kept until the
                       * slice's first value arrives (re-sent when its primary dies) */
    queued_push_t *pq;
    bool push_fifo; /* the plan has no priorities (none, fifo): queued pushes leave in the
                       order they were queued, whatever priority they carry */
    int pq_n, pq_cap;
    ordo__credit_t credit; /* how much of the queue may be on the link (client/credit.h) */
    uint64_t seq, req;
    ordo__ps_event_t *ev;
    int ev_head, ev_n, ev_cap;
    int outstanding;
    ordo__push_t *path; /* how pushes leave: dense, merged or sparse (client/push.h) */
    ordo__compress_t *compress; /* each key's wire type and residuals (client/compress.h) */
    const char *intra; /* the intra backend this worker takes for a plan's "auto" */
    int64_t bytes_push, bytes_pull;
    int64_t stale[ORDO_STALE_BUCKETS]; /* pulled slices by staleness ([sync]) */
    int64_t late;                      /* pushed slices the servers left out as late */
    int64_t fenced_answers;            /* answers of servers declared dead, dropped */
    int64_t stale_sent[ORDO_STALE_BUCKETS], late_sent; /* what the last report counted */
    bool aborted;
    ordo__plan_t *merge_plan; /* the scheduler's PLAN with the merge groups after a
                               * calibration, until the plan takes them */
    bool want_plan;     /* calibrating: that PLAN is due */
    int probes_out;     /* calibration probes not yet acknowledged */
    int64_t bcast_id;   /* the broadcast in flight (0: none) */
    void *bcast_dst;    /* where its bytes go */
    size_t bcast_bytes;
    char *replan_reply; /* the scheduler's answer to the last REPLAN, until taken */
    /* the batch service (client/ps_batch.c): the request in flight and its answer */
    bool batch_out, batch_in; /* a BATCH_REQ is in flight; its answer arrived, not taken */
    uint64_t batch_req;       /* its request id */
    int batch_status;         /* the answer: 0 a batch, 1 the epoch's end, 2 the run's, < 0 refused */
    int64_t *batch_idx, batch_epoch;
    int batch_n, batch_cap;
    char batch_err[256];
    /* the next batch asked for ahead when a batch of any epoch was taken (client/ps_batch.c):
     * batch_ahead marks the request in flight (or its answer) as one; batch_asked whether the
     * program has asked for it since */
    bool batch_ahead, batch_asked;
    bool batch_any;          /* the request in flight (or its answer) is for any epoch */
    char *batch_spec;        /* the last request's spec (the request ahead sends it again) */
    int64_t batch_last_iter; /* the last request's iteration */
    /* fault.scheduler = restart: the service's state of this worker, kept by the scheduler's
     * rules (client/ps_batch.c), for a new scheduler to rebuild the service from */
    struct ordo__ps_lease {
        int64_t epoch;
        int n, cap;
        int64_t *idx;
    } batch_lease[2], batch_newest; /* the older lease (asked ahead) and the last; the newest
                                     * batch received */
    int64_t batch_handed;     /* batches received */
    int64_t batch_top_iter;   /* the highest iteration a batch was received for (-1: none) */
    uint64_t batch_answered;  /* the request id of the newest answer taken in */
    uint32_t batch_req_key, batch_req_flags; /* the request in flight, to send it again */
    int64_t batch_req_iter;
    /* the newest value version a server reported (a DROPPED push's acknowledgement, a newer
     * pull): backup workers start the current iteration from it */
    _Atomic long long newest_version;
    /* the message hook (sparse pushes) */
    ordo__ps_hook_fn hook;
    void *hook_ctx;
    uint32_t hook_key;
    struct ordo__trace *trace; /* lent by the model run for the push path's spans */
    /* fault.worker = shrink: this worker's place among the live ones, their number and the
     * iteration from which they hold (MEMBERS); written by the communication thread */
    _Atomic int live_index, n_live;
    _Atomic long long live_since;
    /* peer state (client/ps_state.c): this worker's committed state, the peers' requests
     * waiting for a later commit, and the answer to this worker's own request */
    void *state;
    size_t state_len;
    int64_t state_iter; /* -1: nothing committed */
    struct {
        int rank;
        uint64_t req;
        int64_t want;
    } state_wait[16];
    int n_state_wait;
    bool state_out, state_in;
    uint64_t state_req;
    int state_status;
    void *state_got;
    size_t state_got_len;
    int64_t state_got_iter;
    char state_err[256];
    /* fault.scheduler = restart (client/ps_rejoin.c): what a new scheduler is told and sent
     * again: the reports of the last moments (those in flight when the scheduler died may
     * be lost), the barrier waited at, the DONE sent */
    struct ordo__ps_report {
        int64_t iter, t_ns;
        char *text;
    } *reports;
    int n_reports, cap_reports;
    /* the records held for the next STATS message ([output] stats_every, ps_stats.c): one
     * line each, stats_n of them in stats_held[0, stats_len) */
    char *stats_held;
    size_t stats_len, stats_cap;
    int stats_n;
    bool barrier_out;        /* a BARRIER is waiting for its BARRIER_DONE */
    int64_t barrier_id;
    char *done_body;         /* the DONE sent (NULL: none yet) */
};

/* ordo__ps_keep_report keeps the report json of iteration iter for a new scheduler (only
 * under fault.scheduler = restart). */
void ordo__ps_keep_report(ordo__ps_t *w, const char *json);

/* ordo__ps_sched_lost takes the heartbeats' verdict that the scheduler is dead (PEER_DEAD
 * without text): 0 under fault.scheduler = restart (the worker goes on and registers again),
 * else ORDO_ERR_PEERDEAD. */
int ordo__ps_sched_lost(ordo__ps_t *w, const ordo__msg_t *m);

/* ordo__ps_rejoined takes a new scheduler's WELCOME and sends it the reports it lacks. */
int ordo__ps_rejoined(ordo__ps_t *w, ordo__msg_t *m);

/* ordo__ps_batch_state returns what the batch service holds of this worker (a new
 * reference: {"spec", "req", "handed", "iter", "leases": [older, last], "newest"}, each batch
 * [epoch, [indices]] or null), or NULL when the program never asked for a batch. */
json_t *ordo__ps_batch_state(const ordo__ps_t *w);

/* ordo__ps_batch_resend sends the BATCH_REQ in flight again (the same request id) to a new
 * scheduler: the old one may have died with it or with its answer. */
int ordo__ps_batch_resend(ordo__ps_t *w);

/* ordo__ps_batch_free frees what ps_batch.c keeps. */
void ordo__ps_batch_free(ordo__ps_t *w);

/* ordo__ps_stats_report sends the report json (one iteration's record) to the scheduler:
 * at once when [output] stats_every resolves to 1, else it holds it and sends every
 * stats_every records in one STATS message, one record a line (ps_stats.c). */
int ordo__ps_stats_report(ordo__ps_t *w, const char *json);

/* ordo__ps_stats_flush sends the records held, if any, in one STATS message (before DONE). */
int ordo__ps_stats_flush(ordo__ps_t *w);

/* ordo__ps_stats_drop forgets the records held (a new scheduler is sent the kept reports
 * instead: ps_rejoin.c) and ordo__ps_stats_free frees the buffer. */
void ordo__ps_stats_drop(ordo__ps_t *w);
void ordo__ps_stats_free(ordo__ps_t *w);

/* ordo__ps_rejoin_free frees what ps_rejoin.c keeps. */
void ordo__ps_rejoin_free(ordo__ps_t *w);

/* ordo__ps_send_init sends the kept initial value of slice (init_val) to its server. */
int ordo__ps_send_init(ordo__ps_t *w, int slice);

/* ordo__ps_send_pull sends the PULL of slice for iteration iter to its server. */
int ordo__ps_send_pull(ordo__ps_t *w, int slice, int64_t iter);

/* ordo__ps_on_keymap applies the scheduler's KEYMAP ([fault] replicas, ps_repl.c): the
 * dead servers' slices move to their backups, and the pushes and pulls of those slices not
 * answered yet are sent again, to the new primaries. */
int ordo__ps_on_keymap(ordo__ps_t *w, ordo__msg_t *m);

/* ordo__ps_add_event queues an event for ordo__ps_poll. */
void ordo__ps_add_event(ordo__ps_t *w, int kind, int key, int64_t iter);

/* ---- messages (ps_msgs.c: the table; each handler with the state it changes) ---- */

/* The worker's table: ordo__ps_msgs[type] handles a message of that type (NULL: ignored). */
extern const ordo__ps_msg_fn ordo__ps_msgs[ORDO_MSG_TYPE_MAX];

/* ordo__ps_handle gives m to the hook (its key) or to w->msgs' handler of its type. */
int ordo__ps_handle(ordo__ps_t *w, ordo__msg_t *m);

/* ps.c: a value of a key (or of one chunk) arrived; a server applied a push. */
int ordo__ps_on_pull_resp(ordo__ps_t *w, ordo__msg_t *m);
int ordo__ps_on_push_ack(ordo__ps_t *w, ordo__msg_t *m);

/* ps_ctl.c: a barrier released, a broadcast's bytes, the live workers changed (MEMBERS). */
int ordo__ps_on_barrier_done(ordo__ps_t *w, ordo__msg_t *m);
int ordo__ps_on_bcast(ordo__ps_t *w, ordo__msg_t *m);
int ordo__ps_on_members(ordo__ps_t *w, ordo__msg_t *m);

/* ---- the plan (ps_plan.c) ---- */

/* ordo__ps_read_plan parses the plan the WELCOME brought into w->plan, once (its text goes)
 * and resolves an intra backend "auto"; 0 or the parser's error naming the member. */
int ordo__ps_read_plan(ordo__ps_t *w);

/* ordo__ps_on_plan takes the scheduler's PLAN: a new push credit (the step model's check), or
 * after a start-up calibration the merge groups (w->merge_plan, ORDO__EV_PLAN). */
int ordo__ps_on_plan(ordo__ps_t *w, ordo__msg_t *m);

/* ordo__ps_credit_from_plan takes the push credit of the plan's step member when
 * [order] credit_bytes is auto (the start-up's plan, or a re-plan's), and whether queued
 * pushes follow priorities (the plan has them) or leave first in, first out. */
void ordo__ps_credit_from_plan(ordo__ps_t *w);

/* ordo__ps_intra_from_plan rewrites plan's intra backend "auto" (each worker resolves it;
 * the scheduler checked that every group's members agree) into w's choice, w->intra. */
void ordo__ps_intra_from_plan(ordo__ps_t *w, ordo__plan_t *plan);

/* ordo__ps_take_credit applies plan's {"step": {"credit_bytes": N}} when [order]
 * credit_bytes is auto; false when plan has no such member. */
bool ordo__ps_take_credit(ordo__ps_t *w, const ordo__plan_t *plan);

/* ordo__ps_send_ctl sends a control message of type with JSON text (may be NULL) to the
 * scheduler. */
int ordo__ps_send_ctl(ordo__ps_t *w, int type, const char *text);

/* ordo__ps_take_replan keeps the scheduler's answer to this worker's REPLAN (m's body)
 * for ordo__ps_replan_take and reports ORDO__EV_REPLAN. */
int ordo__ps_take_replan(ordo__ps_t *w, ordo__msg_t *m);

#endif
