/* fence: a server's side of fencing late workers (docs/durability.md, "Fencing"). A worker's
 * process introduces each data connection with a HELLO carrying its heartbeat id (the id its
 * REGISTER gave the scheduler); when the scheduler declares the worker dead it tells the
 * servers that id (MEMBERS "fenced"), and from then on every message on that process's
 * connections is refused, answered with an error naming the fence: the late pushes of a
 * paused worker or of one behind a partition are never applied, whatever rank a new process
 * of the same worker holds by then. */
#ifndef ORDO_SRV_FENCE_H
#define ORDO_SRV_FENCE_H

#include <stdbool.h>
#include <stdint.h>

#include "common/wire.h"

typedef struct ordo__srv_fence ordo__srv_fence_t;

/* ordo__srv_fence_new makes the table for a run of n_workers ranks (*out, caller destroys). */
int ordo__srv_fence_new(int n_workers, ordo__srv_fence_t **out);

/* ordo__srv_fence_destroy frees *f and sets it to NULL; NULL-safe. */
void ordo__srv_fence_destroy(ordo__srv_fence_t **f);

/* ordo__srv_fence_add fences worker rank's process whose heartbeat id is beat, declared dead
 * at iteration iter in membership generation `generation` (the scheduler's MEMBERS). */
void ordo__srv_fence_add(ordo__srv_fence_t *f, int rank, uint64_t beat, int64_t iter,
                         int64_t generation);

/* ordo__srv_fence_check looks at a worker's message m (its rank already checked): a HELLO is
 * remembered as the connection of the process whose heartbeat id it carries (hdr.req). It
 * returns NULL when m may be handled, or the reason it is refused (valid until the next
 * call): a message on a connection of a fenced process. */
const char *ordo__srv_fence_check(ordo__srv_fence_t *f, const ordo__msg_t *m);

/* ordo__srv_fence_beat returns the heartbeat id of the newest connection of worker rank that
 * is not fenced (0: none seen): a new scheduler fences with it a worker that died while no
 * scheduler ran (fault.scheduler = restart). */
uint64_t ordo__srv_fence_beat(const ordo__srv_fence_t *f, int rank);

/* ordo__srv_fence_refused returns how many messages were refused. */
uint64_t ordo__srv_fence_refused(const ordo__srv_fence_t *f);

#endif
