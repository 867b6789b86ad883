/* sparse_push: a worker's side of sparse pushes ([push] mode = sparse) in the live system.
 * The model's parameters are one flat index space (model order; the executor keeps them,
 * and the gradients, in one contiguous block each). Per iteration the whole gradient goes
 * through the top-k sparsifier with residuals (worker/sparsify), the selection is sent as
 * one COO push per server region, and the servers' answers (the entries they selected,
 * with their new values) are patched into the local parameters while the residual keeps
 * every entry that was not both pushed by this worker and selected globally. Every
 * repartition_period iterations the worker reports where its selection fell to the
 * scheduler, and packs from the next iteration on with the regions the scheduler sends
 * back. Whole-model pulls (the initial values, the final model) read the servers' dense
 * values. Everything here runs on the executor's communication thread: requests start with
 * ordo__sparse_push_pull / ordo__sparse_push_iteration and complete as ORDO__EV_HOOK events of
 * the push/pull library (ev.key = ORDO_SPARSE_PUSH_PULLED or ORDO_SPARSE_PUSH_PUSHED). */
#ifndef ORDO_SPARSE_PUSH_H
#define ORDO_SPARSE_PUSH_H

#include <stdbool.h>
#include <stdint.h>

#include "core/model.h"
#include "client/ps.h"

typedef struct ordo__sparse_push ordo__sparse_push_t;

/* completion codes (ORDO__EV_HOOK's ev.key) */
enum { ORDO_SPARSE_PUSH_PULLED = 1, ORDO_SPARSE_PUSH_PUSHED = 2 };

/* ordo__sparse_push_new makes the sparse side of worker ps for model m when the scheduler's
 * plan has a sparse member (*out is NULL and 0 returned otherwise), and installs its message
 * hook on ps. params and grads are the model's parameters and gradients, each one block of
 * ordo__model_total_numel(m) floats in model order (borrowed for its life). */
int ordo__sparse_push_new(ordo__ps_t *ps, float *params,
                         const float *grads, ordo__sparse_push_t **out);

/* ordo__sparse_push_destroy removes the hook, frees, sets *sp to NULL; NULL-safe. */
void ordo__sparse_push_destroy(ordo__sparse_push_t **sp);

/* ordo__sparse_push_init sends the initial values (values[p] holds parameter p, borrowed for
 * the call) to the servers, each its region of the first regions. */
int ordo__sparse_push_init(ordo__sparse_push_t *sp, float *const *values);

/* ordo__sparse_push_pull asks every server for its region's values after `version` updates
 * and writes them into the parameters; completes with ORDO_SPARSE_PUSH_PULLED. When the
 * local copy already claims that version, the values are compared with it and differences
 * are logged. */
int ordo__sparse_push_pull(ordo__sparse_push_t *sp, int64_t version);

/* ordo__sparse_push_iteration sparsifies the gradients of iteration iter and pushes them;
 * completes with ORDO_SPARSE_PUSH_PUSHED once every server's answer is applied (the
 * parameters are then version iter + 1). A NaN or infinite gradient is an error. */
int ordo__sparse_push_iteration(ordo__sparse_push_t *sp, int64_t iter);

/* ordo__sparse_push_version returns the version of the local parameters (-1 before any). */
int64_t ordo__sparse_push_version(const ordo__sparse_push_t *sp);

/* ordo__sparse_push_stats returns, for the last completed push, its payload bytes pushed and
 * pulled, and the further STATS members as JSON text to append (",\"sparse_k\":..."):
 * sparse_k, sparse_local (entries this worker pushed), sparse_global (entries the servers
 * selected), sparse_consumed (pushed and selected), sparse_exact (1 when the local
 * threshold was evaluated exactly), sparse_epoch (regions used), sparse_load_sS (entries
 * pushed to server S), sparse_ctl_bytes (histogram bytes sent to the scheduler) and
 * sparse_dense_pull_bytes (whole-model pulls since the previous push). The text stays valid
 * until the next completion. */
const char *ordo__sparse_push_stats(const ordo__sparse_push_t *sp, int64_t *bytes_push,
                                   int64_t *bytes_pull);

/* ordo__sparse_push_state saves (save) the worker's sparsifier state, its residuals and
 * threshold, to the file path, or restores it from there ([fault] checkpoint_every and
 * resume); between iterations only. Errors name the file. */
int ordo__sparse_push_state(ordo__sparse_push_t *sp, const char *path, bool save);

#endif
