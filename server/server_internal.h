/* server_internal: the server object's state, shared by server.c (bring-up, loop, the
 * scheduler's messages, release of answers), server_data.c (the data port's handlers) and the
 * replication hooks (replica.c, replica_none.c). What one part alone keeps lives in that
 * part's own object (the store, the consistency model, the probes, the replicas' state). Not
 * part of the contract. */
#ifndef ORDO_SERVER_INTERNAL_H
#define ORDO_SERVER_INTERNAL_H

#include "common/conf.h"
#include "common/node.h"
#include "common/trace.h"
#include "server/ckpt.h"
#include "server/enforce.h"
#include "server/merged.h"
#include "server/probe.h"
#include "server/replica.h"
#include "server/server.h"
#include "server/sparse_srv.h"
#include "server/store.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    int worker;
    int64_t iter;
    int64_t need; /* [fault] replicas: the update count every live backup must hold first */
    uint64_t req;
    uint32_t flags; /* for the answer's header (ORDO_FLAG_DROPPED) */
    uint8_t dtype;  /* the wire type the answer's values go in (ORDO_DTYPE_F32, BF16, F16, a
                       lossy one: server/pull_codec.h) */
    bool have_prev; /* lossy pulls: the worker holds its answer of iter - 1 */
    uint8_t rid[ORDO_WIRE_MAX_RID];
    size_t rid_len;
} ordo__waiter_t;

typedef struct {
    ordo__waiter_t *w;
    int n, cap;
} ordo__waitlist_t;

struct ordo__server {
    ordo__conf_t conf;
    ordo__node_t node;
    int data_sock;
    ordo__store_t *store;
    int64_t resume_base; /* fault.resume: the updates the run started after */
    ordo__merged_t *merged;    /* checks merged pushes */
    ordo__sparse_srv_t *sparse; /* [push] mode = sparse: the plan's sparse member */
    ordo__enforce_t *enforce;
    ordo__waitlist_t *waiting; /* per slice */
    int *prio;                 /* plan priority per slice (for response headers) */
    uint64_t n_push, n_pull, n_refused; /* n_refused: requests answered with ERROR */
    struct ordo__pull_codec *pull_codec; /* 16-bit pull answers (server/pull_codec.h) */
    int64_t link_end_ns; /* when the emulated link finishes what was released so far */
    uint64_t n_released;
    ordo__trace_t *trace; /* [output] trace: one event per released response */
    char **names;        /* parameter name per key, from the plan (NULL: "key K") */
    ordo__probe_t probe; /* calibration pushes ([push] calibrate; server/probe.h) */
    ordo__srv_ckpt_t *ckpt; /* [fault] checkpoint_every: the momentum's part (server/ckpt.h) */
    int end_rc;            /* how the run ended: 0, or ORDO_ERR_ABORT (sets the linger) */
    int local_size;        /* the plan's intra groups: one pusher per local_size workers */
    bool has_declared_sgd; /* the workers declared sgd rules; the first is declared_sgd */
    ordo__optim_t declared_sgd;
    struct ordo__replica *repl; /* [fault] replicas > 1 (server/replica.h), else NULL */
    struct ordo__srv_fence *fence; /* workers' processes and the fenced ones (server/fence.h) */
    const ordo__replication_t *replication; /* the data handlers' hooks (server/replica.h) */
};

struct json_t;

/* ordo__server_fenced checks a worker's data message against the fencing table (made at its
 * first use): NULL to handle it, or why it is refused (server/fence.h). */
const char *ordo__server_fenced(ordo__server_t *s, const ordo__msg_t *m);

/* ordo__server_on_fenced takes a MEMBERS body o: true when it fenced a worker's process
 * ("fenced": rank, "beat", "iter", "generation"), false when it is about something else. */
bool ordo__server_on_fenced(ordo__server_t *s, struct json_t *o);

/* ordo__server_pusher maps a pushing worker's rank to its pusher index in the store: its
 * intra-host group (client/push_hier.c) when the plan has groups, else the rank itself. */
static inline int ordo__server_pusher(const ordo__server_t *s, int rank)
{
    return s->local_size > 1 ? rank / s->local_size : rank;
}

/* ordo__server_on_members takes the scheduler's MEMBERS (fault.worker = shrink): the worker
 * that left no longer holds up an update, and the pulls its absence completes are answered;
 * or, with "joined" (fault.max_workers), the rounds from "iter" on wait for the new worker
 * too. Non-zero: the join came too late here, the server cannot go on (server_data.c). */
int ordo__server_on_members(ordo__server_t *s, ordo__msg_t *m);

/* ordo__server_wake answers the pulls of slice that can be answered now (server_data.c). */
void ordo__server_wake(ordo__server_t *s, int slice);

/* ordo__server_refuse answers m with ERROR carrying why, counts and logs it (server_data.c). */
void ordo__server_refuse(ordo__server_t *s, const ordo__msg_t *m, const char *why);

/* ordo__server_on_data handles one message from the data port (server_data.c). */
void ordo__server_on_data(ordo__server_t *s, ordo__msg_t *m);

#endif
