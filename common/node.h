/* node: what servers and workers share about joining a cluster: connect to the scheduler,
 * register with role, endpoint and token, wait (bounded) for the WELCOME with the rank,
 * the server endpoints and the key map, and keep heartbeats going. The scheduler's
 * answers are validated like any other untrusted input. */
#ifndef ORDO_NODE_H
#define ORDO_NODE_H

#include "common/conf.h"
#include "common/keys.h"

#include <stdbool.h>
#include "common/transport.h"

typedef struct ordo__node {
    ordo__transport_t *tp;
    int sched_sock; /* DEALER to the scheduler */
    int role;
    int rank;
    int n_servers, n_workers;
    char **server_endpoints; /* n_servers strings */
    ordo__keys_t *keys;
    char run_dir[ORDO_CONF_PATH];
    char *plan_json; /* the scheduler's plan (order, merge, ...) or NULL */
    int64_t rejoin_iter; /* a restarted worker: the iteration it goes on at; -1 otherwise */
    const char *reg_tensors; /* set before joining: a JSON array the REGISTER carries as
                              * "tensors" (a worker's declared tensors), or NULL */
    const char *reg_intra; /* set before joining: the intra backend this worker resolves
                            * intra.backend = auto to ("shm", "nccl"), carried as "intra"
                            * for the scheduler's check of each group, or NULL */
    bool join; /* set before joining: a server that replaces a dead one in a running cluster
                * ([fault] replicas; the REGISTER carries "join": true) */
    ordo__msg_t *early; /* data messages that arrived before the WELCOME, in order */
    int n_early, cap_early;
    /* fault.scheduler = restart (common/node_rejoin.h) */
    char *reg_body;         /* the REGISTER's JSON, sent again to a new scheduler */
    uint64_t plan_digest;   /* of the WELCOME's key map and plan: a new scheduler compares */
    int64_t generation;     /* the newest scheduler generation this node obeyed (0: none) */
    int64_t map_seq;        /* [fault] replicas: the newest KEYMAP's "seq" applied (0: none) */
    int64_t lost_ns;        /* when the scheduler was found dead (0: it answers) */
    char *lost_body;        /* the REGISTER sent since, sent again now and then */
    int64_t sent_ns;        /* when it was last sent */
    int restart_sched;      /* ordo__fault_sched_t of the conf */
    int wait_ms;            /* fault.scheduler_wait_ms */
    int heartbeat_ms, timeout_ms, timeout_max_ms;
    char sched_addr[ORDO_CONF_STR];
} ordo__node_t;

/* The scheduler's REJECT of a restarted worker whose rank had finished its part of the run
 * (fault.worker = restart): nothing is left for it to do. */
#define ORDO_REJECT_FINISHED "this worker rank finished its part of the run"

/* ordo__node_join connects node (whose tp the caller created) to the scheduler named in
 * conf, registers with the given role and data endpoint (servers; NULL for workers) and
 * waits up to conf->startup_ms for the WELCOME. ORDO_ERR_AUTH when the token was refused,
 * ORDO_ERR_TIMEDOUT when no answer came, ORDO_ERR_ABORT when the cluster aborted. */
int ordo__node_join(ordo__node_t *node, const ordo__conf_t *conf, int role, const char *endpoint);

/* ordo__node_send_ctl sends a message to the scheduler stamped with the node's role/rank. */
int ordo__node_send_ctl(ordo__node_t *node, ordo__msg_t *m);

/* ordo__node_take_early moves the oldest data message that arrived while joining into m;
 * returns 0, or ORDO_ERR_AGAIN when there is none left. */
int ordo__node_take_early(ordo__node_t *node, ordo__msg_t *m);

/* ordo__node_fini frees what ordo__node_join filled (not the transport). */
void ordo__node_fini(ordo__node_t *node);

#endif
