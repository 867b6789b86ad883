/* sparse_srv_internal: what the files of the server's sparse module share (sparse_srv.c:
 * messages and the iteration; sparse_srv_regions.c: region switches and handovers): the
 * state and a few helpers. Not part of the module's contract. */
#ifndef ORDO_SPARSE_SRV_INTERNAL_H
#define ORDO_SPARSE_SRV_INTERNAL_H

#include "core/regions.h"
#include "server/sparse_agg.h"
#include "server/sparse_srv.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* on an iteration that reuses the global threshold, a server selects between 1/GLOBAL_SLACK
 * and GLOBAL_SLACK times what it selected at the last agreed threshold (its share of k);
 * when the cached threshold would select outside that range it takes its exact top `share`
 * entries instead (docs/sparse-live.md) */
#define GLOBAL_SLACK 1.15

typedef struct {
    int worker;
    int64_t version;
    uint32_t epoch; /* the regions the worker expects at that version */
    uint64_t req;
} dpull_t;

/* a growable list of kept messages */
typedef struct {
    ordo__msg_t *m;
    int n, cap;
} msglist_t;

struct ordo__sparse_srv {
    ordo__node_t *node;
    int data_sock, rank, S, W;
    ordo__sparse_plan_t plan;
    ordo__sparse_sgd_t sgd;
    float *params, *momentum; /* n floats each; only the own region is current */
    bool initialized;
    ordo__sparse_agg_t *agg;
    uint32_t *bounds, epoch; /* regions in force */
    int64_t t;               /* iterations completed: the region's values are version t */
    /* regions announced by the scheduler, in force from iteration next_E */
    bool has_next;
    uint32_t *next_bounds, next_epoch;
    int64_t next_E;
    /* this iteration's pushes, validated, per worker; pushes packed with later regions */
    ordo__msg_t *held;
    bool *has_held;
    int n_held;
    msglist_t future;
    bool summed, waiting_thr, selected;
    size_t share; /* entries selected at the last agreed (exact) threshold */
    /* where each worker is (its data connection), and the request id of its push */
    uint8_t (*rid)[ORDO_WIRE_MAX_RID];
    size_t *rid_len;
    uint64_t *push_req;
    /* ranges this server gains at the current switch and still waits for; handovers kept */
    ordo__regions_move_t *moves, *incoming;
    int n_incoming;
    msglist_t handovers;
    int *peer_sock; /* per server: DEALER to it (-1 not yet) */
    /* whole-region pulls waiting for their version */
    dpull_t *dp;
    int n_dp, cap_dp;
    uint64_t *maghist;
    uint8_t *buf;
    size_t buf_cap;
    /* [fault] checkpoint_every: the momentum of the region after every `ckpt_every` updates,
     * counted from ckpt_base (a resumed run's start), into ckpt_dir (sparse_srv_ckpt.c) */
    int ckpt_every;
    int64_t ckpt_base;
    char ckpt_dir[4096];
    /* totals for the log */
    uint64_t entries_in, entries_out, handed_over, received_over, capped;
};

/* the region in force on this server */
static inline uint32_t ordo__ssrv_lo(const ordo__sparse_srv_t *srv)
{
    return srv->bounds[srv->rank];
}

static inline uint32_t ordo__ssrv_hi(const ordo__sparse_srv_t *srv)
{
    return srv->bounds[srv->rank + 1];
}

/* ordo__ssrv_list_add moves m into the list (ORDO_ERR_NOMEM when it cannot grow). */
int ordo__ssrv_list_add(msglist_t *l, ordo__msg_t *m);

/* ordo__ssrv_list_remove closes entry i and fills its place with the last one. */
void ordo__ssrv_list_remove(msglist_t *l, int i);

/* ordo__ssrv_refuse logs and drops m, answering a worker with ERROR (its run then stops). */
void ordo__ssrv_refuse(ordo__sparse_srv_t *srv, const ordo__msg_t *m, const char *why);

/* ordo__ssrv_switch_regions puts the announced regions in force at the current iteration:
 * hands the ranges that leave to their new owners, lists the ranges that come, moves the
 * aggregator (sparse_srv_regions.c). */
int ordo__ssrv_switch_regions(ordo__sparse_srv_t *srv);

/* ordo__ssrv_take_handovers applies the kept handovers the current switch waits for. */
void ordo__ssrv_take_handovers(ordo__sparse_srv_t *srv);

/* ordo__ssrv_on_handover keeps another server's handover (checked when it is applied). */
void ordo__ssrv_on_handover(ordo__sparse_srv_t *srv, ordo__msg_t *m);

/* ordo__ssrv_ckpt_due writes the region's momentum when the iteration just finished ends a
 * checkpoint interval; errors are logged (sparse_srv_ckpt.c). */
void ordo__ssrv_ckpt_due(ordo__sparse_srv_t *srv);

#endif
