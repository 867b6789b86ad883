/* sparse_coord: the scheduler's part of sparse pushes while a run goes (docs/sparse-live.md).
 * It gathers the servers' magnitude histograms of an iteration whose global threshold is due
 * and answers every server with one threshold, so that the servers' selections add up to
 * about k; and it gathers the workers' position histograms every repartition_period
 * iterations and sends servers and workers new region boundaries that balance the load
 * (entries pushed per server), in force from the next iteration. Received histograms are
 * validated; a bad or out-of-place one is refused with a reason and changes nothing. */
#ifndef ORDO_SPARSE_COORD_H
#define ORDO_SPARSE_COORD_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "core/sparse_wire.h"
#include "common/wire.h"

typedef struct ordo__sparse_coord ordo__sparse_coord_t;

/* How the coordinator sends: one PLAN message with key ORDO_SPARSE_KEY, chunk = sub (an
 * ordo__sparse_msg_t), iteration iter and one payload frame (a copy of len bytes) to every
 * node of role (ORDO_ROLE_SERVER or ORDO_ROLE_WORKER). */
typedef void (*ordo_sparse_coord_send_fn)(void *ctx, int role, int sub, int64_t iter,
                                          const void *payload, size_t len);

/* ordo__sparse_coord_new makes the coordinator for plan (the run's plan object) and a cluster
 * of `servers` and `workers`; *out is NULL (and 0 returned) when the plan has no sparse
 * member. send and ctx are kept for the coordinator's life. */
int ordo__sparse_coord_new(const json_t *plan, int servers, int workers,
                          ordo_sparse_coord_send_fn send, void *ctx, ordo__sparse_coord_t **out);

/* ordo__sparse_coord_destroy frees the coordinator and sets *c to NULL; NULL-safe. */
void ordo__sparse_coord_destroy(ordo__sparse_coord_t **c);

/* ordo__sparse_coord_on_msg takes a sparse PLAN message from the node (role, rank): a
 * worker's POSHIST or a server's MAGHIST. When the last histogram of a round is in, it
 * sends the round's answer (REGIONS to servers and workers, or THRESHOLD to servers).
 * Returns ORDO_ERR_PROTO with a detail for a message that does not fit (wrong role, size,
 * iteration, a duplicate); the caller logs and drops it. */
int ordo__sparse_coord_on_msg(ordo__sparse_coord_t *c, int role, int rank, ordo__msg_t *m);

/* ordo__sparse_coord_epoch returns the number of re-balancings sent so far. */
uint32_t ordo__sparse_coord_epoch(const ordo__sparse_coord_t *c);

/* ordo__sparse_coord_bounds returns the boundaries most recently sent (S + 1 entries). */
const uint32_t *ordo__sparse_coord_bounds(const ordo__sparse_coord_t *c);

#endif
