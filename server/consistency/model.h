/* model: a consistency model ([sync], docs/stragglers.md) as one table of operations. The
 * store (server/store.c) and the server's data and replica handlers (server/server_data.c,
 * server/replica.c) call through the table the conf chose at start and never test the mode:
 * bsp (bsp.c), bsp with backup workers (backup.c), ssp (ssp.c) and asp (asp.c) each fill one
 * table, and models.c lists them. A new model is one new file and one row there
 * (docs/architecture.md, "Consistency models"); scripts/check-layering.py refuses a test of
 * the mode anywhere else in server/. */
#ifndef ORDO__CONSISTENCY_MODEL_H
#define ORDO__CONSISTENCY_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "server/store.h"

struct ordo__slot; /* a slice held here (server/store_internal.h) */

typedef struct ordo__sync_model {
    const char *name; /* as the conf spells it: "bsp", "ssp", "asp"; "bsp+backup" */
    int mode;         /* the ordo__sync_t ([sync] mode) it implements */
    bool backup;      /* chosen when [sync] backup > 0: an iteration takes the first pushes */
    bool window;      /* rounds for staleness + 1 iterations at once ([sync] staleness) */
    bool clocks;      /* each slice keeps a push clock per worker (ordo__store_clocks) */
    bool elastic;     /* workers may leave, join or be restarted (ordo__store_leave, _join,
                       * _set_resend) */

    /* ---- the store: accept a push, complete a round, answer a pull ---------------------- */

    /* check_push: the model's checks of worker's push of iter to sl (the store checked the
     * slice, size, worker and membership already): 0, or 0 with *late set to a positive
     * ORDO_STORE_* for a push that will be left out, or a negative error with a detail */
    int (*check_push)(const ordo__store_t *s, const struct ordo__slot *sl, int slice, int worker,
                      int64_t iter, int *late);
    /* take_push: adds a checked push (g, kept alive by owner when not NULL, else borrowed
     * for the call) and applies the update when it completes a round: *updated */
    int (*take_push)(ordo__store_t *s, struct ordo__slot *sl, int worker, int64_t iter,
                     const ordo__grad_t *g, ordo__store_frame_t *owner, bool *updated);
    /* pull_ready: a pull of iter can be answered from a value at version (>= 0) */
    bool (*pull_ready)(const ordo__store_t *s, int64_t version, int64_t iter);
    /* answer_pull: a reference on the value a pull of iter gets (ordo__store_ref_pull) */
    int (*answer_pull)(ordo__store_t *s, struct ordo__slot *sl, int64_t iter, void **data,
                       size_t *bytes, void **hint);
    /* pushed: worker's push of iter is in (held, summed or applied; iter >= the version) */
    bool (*pushed)(const ordo__store_t *s, const struct ordo__slot *sl, int worker, int64_t iter);
    /* seq: the slice's update count, by which replicas tell how new a state is (version >= 0) */
    int64_t (*seq)(const ordo__store_t *s, const struct ordo__slot *sl);

    /* ---- the server and its replicas ([fault] replicas) --------------------------------- */

    bool newer_pulls;     /* a worker may pull an iteration older than the value (it is slow) */
    bool late_resends;    /* a re-sent push older than the version is late, not a duplicate */
    bool forwards_pushes; /* a primary forwards each push to its backups, which take it as it
                           * did, instead of sending the slice's state after an update; a new
                           * primary so sends no state either */
    /* push_need: the update count every live backup must hold before push of iter to slice
     * is acknowledged (taken already) */
    int64_t (*push_need)(const ordo__store_t *s, int slice, int64_t iter);
    /* pull_need: the same for a pull of iter (rides_push: the pull comes with a push, whose
     * acknowledgement it is); -1: none */
    int64_t (*pull_need)(const ordo__store_t *s, int slice, int64_t iter, bool rides_push);
} ordo__sync_model_t;

/* the models (one file each) */
extern const ordo__sync_model_t ordo__sync_bsp, ordo__sync_backup, ordo__sync_ssp, ordo__sync_asp;

/* ordo__sync_model_of returns the model of [sync] mode with backup workers (> 0) or none;
 * NULL when no model is that pair (models.c). */
const ordo__sync_model_t *ordo__sync_model_of(int mode, int backup);

/* shared rows: a value's version is iter - staleness or newer; the version is the seq */
bool ordo__sync_ready_within_staleness(const ordo__store_t *s, int64_t version, int64_t iter);
int64_t ordo__sync_seq_is_version(const ordo__store_t *s, const struct ordo__slot *sl);
/* shared rows of the replicas' needs: an update per iteration (bsp), an update per push taken
 * (ssp, asp: models.c) */
int64_t ordo__sync_push_need_iter(const ordo__store_t *s, int slice, int64_t iter);
int64_t ordo__sync_pull_need_iter(const ordo__store_t *s, int slice, int64_t iter, bool rides_push);
int64_t ordo__sync_push_need_seq(const ordo__store_t *s, int slice, int64_t iter);
int64_t ordo__sync_pull_need_seq(const ordo__store_t *s, int slice, int64_t iter, bool rides_push);

#endif
