/* server: the server daemon as a library object. An ordo__server_t holds this node's shard
 * of the parameters, sums the workers' pushes of each iteration, applies the optimizer and
 * answers pulls once the value for the requested iteration is ready, handing the answers to
 * the transport through the enforcement module in the plan's priority order. It is built
 * from a node that has already joined the cluster, so a test can give it a hand-made key
 * map and drive it message by message (ordo__server_handle) without a scheduler. */
#ifndef ORDO_SERVER_H
#define ORDO_SERVER_H

#include <stdint.h>

#include "common/conf.h"
#include "common/node.h"
#include "common/wire.h"

typedef struct ordo__server ordo__server_t;

typedef struct ordo__server_stats {
    uint64_t pushes;   /* pushes summed (merged pushes count once) */
    uint64_t pulls;    /* pulls accepted */
    uint64_t dropped;  /* malformed or out-of-place messages refused */
    uint64_t probes;   /* calibration probes summed */
    uint64_t released; /* pull answers handed to the transport */
    uint64_t shard_bytes; /* the parameter bytes this server holds */
    uint64_t late;     /* pushes left out as late ([sync] backup) */
} ordo__server_stats_t;

/* ordo__server_new builds the server for node, which has joined the cluster (rank, workers,
 * key map, plan, run folder) and whose transport has the data ROUTER socket data_sock.
 * On success the server takes node's contents (transport included) and clears *node; on
 * failure *node is left as it was. conf is copied. */
int ordo__server_new(const ordo__conf_t *conf, ordo__node_t *node, int data_sock,
                    ordo__server_t **out);

/* ordo__server_handle takes one message from the transport (data or the scheduler's) and
 * hands whatever answers it made ready to the transport; m stays the caller's to close.
 * Returns 0 to go on, 1 after an orderly SHUTDOWN, ORDO_ERR_ABORT when the run was aborted
 * or the scheduler fell silent. Bad messages are answered with ERROR and counted. */
int ordo__server_handle(ordo__server_t *s, ordo__msg_t *m);

/* ordo__server_run handles the messages that came while joining, then receives and handles
 * messages until SHUTDOWN (returns 0), an abort or the stop signal (ORDO_ERR_ABORT); it
 * writes the trace when [output] trace is on. */
int ordo__server_run(ordo__server_t *s);

/* ordo__server_get_stats copies the message counters and the shard's size into out. */
void ordo__server_get_stats(const ordo__server_t *s, ordo__server_stats_t *out);

/* ordo__server_destroy frees the server and its transport (unsent messages get a second to
 * leave after an orderly end, none after an abort); NULL-safe, sets *s to NULL. */
void ordo__server_destroy(ordo__server_t **s);

#endif
