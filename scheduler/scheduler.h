/* scheduler: the scheduler daemon as a library object: the run plan, the rendezvous
 * (registration, ranks, the WELCOME with the cluster and key maps), barriers, heartbeats
 * and dead-node detection, run statistics, the merge groups from worker 0's calibration,
 * the sparse coordinator's messages, and the orderly end or the abort of the run. A test
 * builds one, connects its own sockets to ordo__scheduler_endpoint and feeds what arrives to
 * ordo__scheduler_handle, message by message. */
#ifndef ORDO_SCHEDULER_H
#define ORDO_SCHEDULER_H

#include "common/conf.h"
#include "common/transport.h"
#include "common/wire.h"

typedef struct ordo__scheduler ordo__scheduler_t;

/* ordo__scheduler_new makes the model and key map the conf names, plans the run, creates the
 * run folder and its log, and listens on [cluster] scheduler (port 0: any free port); conf is
 * copied. Errors say what failed ("cannot plan the run: ..."). */
int ordo__scheduler_new(const ordo__conf_t *conf, ordo__scheduler_t **out);

/* ordo__scheduler_endpoint returns the endpoint it listens on ("tcp://127.0.0.1:PORT"). */
const char *ordo__scheduler_endpoint(const ordo__scheduler_t *s);

/* ordo__scheduler_run_dir returns the run folder (summary.json, traces, checkpoints). */
const char *ordo__scheduler_run_dir(const ordo__scheduler_t *s);

/* ordo__scheduler_transport returns the transport whose messages ordo__scheduler_handle takes
 * (for a caller that runs its own loop, such as a test); the scheduler owns it. */
ordo__transport_t *ordo__scheduler_transport(ordo__scheduler_t *s);

/* ordo__scheduler_handle takes one message from a node (m stays the caller's to close) and
 * sends the answers it makes. Returns 0 to go on, 1 when every worker is done, ORDO_ERR_ABORT
 * when the run was aborted (every node was told; the summary is written). */
int ordo__scheduler_handle(ordo__scheduler_t *s, ordo__msg_t *m);

/* ordo__scheduler_check aborts the run (ORDO_ERR_ABORT) when a node has been silent longer
 * than [fault] timeout_ms, or the cluster did not fill up within startup_ms; else 0. */
int ordo__scheduler_check(ordo__scheduler_t *s);

/* ordo__scheduler_run receives and handles messages until every worker is done, then sends
 * SHUTDOWN and writes summary.json (0, or the error writing it); ORDO_ERR_ABORT when the run
 * was aborted, by a node, a silent node or the stop signal. */
int ordo__scheduler_run(ordo__scheduler_t *s);

/* ordo__scheduler_summary returns the summary's JSON text after a completed run, else NULL;
 * the scheduler owns it. */
const char *ordo__scheduler_summary(const ordo__scheduler_t *s);

/* ordo__scheduler_destroy frees the scheduler; its transport gets a moment to deliver the
 * last messages (SHUTDOWN or ABORT). NULL-safe, sets *s to NULL. */
void ordo__scheduler_destroy(ordo__scheduler_t **s);

#endif
