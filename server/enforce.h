/* enforce: the server's enforcement module, which decides when a ready pull response is
 * handed to the network. Per worker it keeps the ready responses of that worker's current
 * iteration and a counter of the transfers already handed over in it.
 * - fifo: responses leave in the order they became ready (no plan).
 * - strict: a response of normalized priority p leaves only once every slice of smaller
 *   priority that the worker's round expects has been handed over (TicTac's enforcement);
 *   equal p may leave in any order. A round expects the slices the worker got in its
 *   previous round, of the iteration before (or, forward only, of the same one): a tensor
 *   that is not transferred every round holds nothing back, and a worker's first round
 *   (also the first after a re-plan) is released by priority without waiting, since the
 *   server cannot know yet which transfers a round has.
 * - greedy: whenever the egress link is free, the ready response with the smallest
 *   normalized priority (over all workers) leaves; the link never idles while one is held.
 * A worker's round (and its counter of transfers handed over, reported in the release info)
 * starts when its first response of a new iteration arrives, and also when the counter
 * reaches `round` (every transfer of this server to the worker handed over), so that runs
 * that pull the same version every iteration (forward only) start each iteration afresh.
 * In every mode a response is handed to the network only while the egress link is free (or
 * about to be), and the workers share it byte-fairly (the worker with the fewest bytes
 * handed over in its iteration goes first), as separate connections share a NIC, instead of
 * one worker's whole iteration queueing ahead of the others' in the link's FIFO. With the
 * serial share (ordo__enforce_set_share) the worker with the most bytes handed over in its
 * iteration goes first instead: workers are served one after another, and the first served
 * start computing while the link still sends to the others.
 * Normalized priority (docs/ordering-live.md, "In the live system"): the number of this
 * server's slices with a strictly smaller plan priority. */
#ifndef ORDO_ENFORCE_H
#define ORDO_ENFORCE_H

#include <stdbool.h>
#include <stdint.h>

#include "common/wire.h"

typedef enum { ORDO_ENFORCE_MODE_FIFO = -1 } ordo__enforce_fifo_t;

typedef struct ordo__enforce ordo__enforce_t;

/* What ordo__enforce_next tells about a release (for the server's trace). */
typedef struct ordo__enforce_release {
    int worker;
    int64_t iter;
    int slice;
    int norm;         /* its normalized priority (0 under fifo) */
    int64_t counter;  /* the worker's counter when it was released (before counting it) */
    int held;         /* responses still held after this release, all workers */
    int64_t ready_ns; /* when it was handed to the module (ordo__clock_ns) */
} ordo__enforce_release_t;

/* ordo__enforce_new: mode is ORDO_ENFORCE_MODE_FIFO, ORDO_ENFORCE_STRICT or
 * ORDO_ENFORCE_GREEDY (common/conf.h); norm_prio gives each slice's normalized priority
 * (indexed by slice; only this server's slices are used; may be NULL for fifo); round is
 * the number of this server's slices (transfers per worker per iteration; 0 = unknown). */
int ordo__enforce_new(int mode, int n_workers, int n_slices, const int *norm_prio, int round,
                     ordo__enforce_t **out);

/* ordo__enforce_set_share chooses how the workers share the link: ORDO_SHARE_FAIR (the
 * default) or ORDO_SHARE_SERIAL (common/conf.h). Returns 0 or ORDO_ERR_INVAL. */
int ordo__enforce_set_share(ordo__enforce_t *e, int share);

/* ordo__enforce_destroy frees the module and closes messages it still holds. */
void ordo__enforce_destroy(ordo__enforce_t **e);

/* ordo__enforce_add hands over a ready response of worker for slice in iteration iter; the
 * module takes m's frames (m is left empty). */
int ordo__enforce_add(ordo__enforce_t *e, int worker, int64_t iter, int slice, ordo__msg_t *m);

/* ordo__enforce_next releases the next response allowed to go now into out (link_free: the
 * egress link can take a message now; without it nothing goes). Returns 0 with a message
 * (and, when info is not NULL, what was released), ORDO_ERR_AGAIN with none. */
int ordo__enforce_next(ordo__enforce_t *e, bool link_free, ordo__msg_t *out,
                      ordo__enforce_release_t *info);

/* ordo__enforce_pending counts responses held back. */
int ordo__enforce_pending(const ordo__enforce_t *e);

/* ordo__enforce_normalize computes normalized priorities for one server: out[s] = number of
 * slices on `server` whose priority (prio_of_slice) is strictly smaller than slice s's. */
void ordo__enforce_normalize(const int *prio_of_slice, const int *server_of_slice, int n_slices,
                            int server, int *out);

#endif
