/* store: a server's shard of the parameters. For every slice the key map gives this
 * server it keeps the current value (in a reference-counted buffer, so a pull response
 * can go out zero-copy while the next update writes a fresh buffer), the sum of the
 * current iteration's pushes, which workers pushed, the optimizer state and the version
 * (the iteration whose value it holds). Values become ready for iteration t+1 when all W
 * pushes of iteration t are summed and the optimizer has run. The consistency model
 * ([sync], docs/stragglers.md) changes that: ssp sums up to staleness + 1 iterations at
 * once (each applied in iteration order once complete), asp applies every push as it comes,
 * and backup workers apply the first W - backup pushes of an iteration and drop the rest. */
#ifndef ORDO_STORE_H
#define ORDO_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <zmq.h>

#include "common/conf.h"
#include "common/keys.h"
#include "common/wire.h" /* ORDO_DTYPE_*: an ordo__grad_t's dtype */
#include "server/optim.h"

typedef struct ordo__store ordo__store_t;

/* A value buffer shared with in-flight sends. */
typedef struct ordo__vbuf ordo__vbuf_t;

/* ordo__store_new makes the shard of server `rank` for n_workers workers. */
int ordo__store_new(const ordo__keys_t *keys, int rank, int n_workers, const ordo__optim_t *opt,
                   float scale, ordo__store_t **out);

/* ordo__store_set_update gives every slice of key held here its own update rule (copied) in
 * place of the store's; an average rule (opt->average) needs no initial value: the slices
 * start at version 0. Before the first push. */
int ordo__store_set_update(ordo__store_t *s, int key, const ordo__optim_t *opt);
/* ordo__store_set_sync chooses the consistency model (ORDO_SYNC_BSP with backup workers,
 * ORDO_SYNC_SSP with staleness, ORDO_SYNC_ASP; common/conf.h) before the first push; a new
 * store is bsp. ORDO_ERR_INVAL on values the conf would refuse. */
int ordo__store_set_sync(ordo__store_t *s, int mode, int staleness, int backup);

/* ordo__store_model returns the store's consistency model (server/consistency/model.h): the
 * server and its replicas ask it, not the mode, what the model does. */
const struct ordo__sync_model *ordo__store_model(const ordo__store_t *s);

/* A push returns this (positive) when it came after its iteration was applied without it
 * (backup workers): it was counted (ordo__store_dropped) and left out. */
#define ORDO_STORE_DROPPED 1

/* A push returns this (positive) when the store already holds or applied the same worker's
 * push of that iteration and re-sends are on (ordo__store_set_resend): it is counted
 * (ordo__store_resent), acknowledged and left out, so a restarted worker that pushes again
 * what its dead predecessor pushed applies nothing twice. */
#define ORDO_STORE_DUPLICATE 2

/* ordo__store_set_resend turns on (bsp without backup workers only; ORDO_ERR_INVAL otherwise)
 * the recognition of re-sent pushes (ORDO_STORE_DUPLICATE), which are errors by default, and
 * keeps each slice's value before its last update beside the current one (twice the values'
 * memory): a restarted worker goes on at the first iteration its predecessor did not finish,
 * which the others may have completed for some slices with the pushes it had sent, and its
 * pull of that iteration then gets exactly that iteration's values (ordo__store_ref_pull), so
 * the gradients it computes are its predecessor's. */
int ordo__store_set_resend(ordo__store_t *s, bool on);

/* ordo__store_leave takes worker out of the run (fault.worker = shrink; bsp without backup
 * workers): the rounds stop waiting for it (a push of it already held is summed), its later
 * pushes are refused, and with mean each update is scaled over the pushes it had. The slices
 * whose value advanced because of it go to updated_slices (room for every slice), their
 * count to *n_updated. */
int ordo__store_leave(ordo__store_t *s, int worker, bool mean, int *updated_slices, int *n_updated);

/* ordo__store_set_members makes a store for more workers than the run starts with ([fault]
 * max_workers): workers present .. n_workers - 1 are not in the run until ordo__store_join;
 * with mean each update is scaled over the pushes it had. bsp without backup workers only. */
int ordo__store_set_members(ordo__store_t *s, int present, bool mean);

/* ordo__store_join takes worker (a free place, ordo__store_set_members) into the run from
 * iteration iter on: the rounds of iter and later wait for its push. ORDO_ERR_INVAL when a
 * slice here is past iter already (the join came too late) or the place is not free. */
int ordo__store_join(ordo__store_t *s, int worker, int64_t iter);

/* ordo__store_member says where worker stands in the run: ORDO_STORE_MEMBER_IN (from the
 * start), ORDO_STORE_MEMBER_LEFT (ordo__store_leave), ORDO_STORE_MEMBER_JOINED
 * (ordo__store_join; *join_at its iteration) or ORDO_STORE_MEMBER_FREE (a place no worker
 * took yet). A new scheduler rebuilds the membership from it (fault.scheduler = restart). */
enum {
    ORDO_STORE_MEMBER_IN,
    ORDO_STORE_MEMBER_LEFT,
    ORDO_STORE_MEMBER_JOINED,
    ORDO_STORE_MEMBER_FREE
};
int ordo__store_member(const ordo__store_t *s, int worker, int64_t *join_at);

/* ordo__store_resent counts the re-sent pushes left out. */
uint64_t ordo__store_resent(const ordo__store_t *s);

/* ordo__store_destroy frees the store; buffers still held by sends live until released. */
void ordo__store_destroy(ordo__store_t **s);

/* ordo__store_owns tells whether slice (an index into keys->slices) lives here: this server
 * is its primary or, with [fault] replicas, one of its backups. */
bool ordo__store_owns(const ordo__store_t *s, int slice);

/* ordo__store_init sets the initial value (version 0) of a slice; a second init of an
 * initialized slice is ignored (returns 0 and sets *ignored). bytes must equal numel*4. */
int ordo__store_init(ordo__store_t *s, int slice, const void *data, size_t bytes, bool *ignored);

/* a push's values as they came on the wire: float32, or a 16-bit cast whose values sit at
 * fixed places in its frame (common/codec.h, ordo__codec_ranged). The store sums and applies
 * a cast straight from its frame, never decoding it whole into float32; the sums are the same
 * bits as decoding first, and the value and its sums stay float32. */
typedef struct ordo__grad {
    const void *data; /* len bytes; float-aligned for float32 */
    size_t len;
    uint8_t dtype;    /* ORDO_DTYPE_F32, or a ranged cast (ORDO_DTYPE_BF16, ORDO_DTYPE_F16) */
} ordo__grad_t;

/* ordo__store_push adds one worker's gradient for iteration iter. Rejects (ORDO_ERR_PROTO /
 * ORDO_ERR_INVAL with a detail) a wrong size, a stale or future iteration, a duplicate push of
 * the same worker, an uninitialized slice. Sets *updated when this push completed the
 * iteration and the value advanced to version iter+1. */
int ordo__store_push(ordo__store_t *s, int slice, int worker, int64_t iter, const void *data,
                    size_t bytes, bool *updated);

/* ordo__store_push_frame is ordo__store_push over a received ZeroMQ frame of wire dtype
 * (float32 or a ranged cast: see ordo__grad_t; a malformed frame is refused), which it moves
 * out of *frame (on success and on failures after the checks). Pushes are summed in worker
 * rank order whatever order they arrive in (a push that comes before its turn is held,
 * uncopied, until the ones before it are in), so the sum is the same bit for bit in every
 * run and every push mode: worker 0's frame itself becomes the running sum (no copy), the
 * others add into it in turn, and the last is summed and applied in one pass. */
int ordo__store_push_frame(ordo__store_t *s, int slice, int worker, int64_t iter, int dtype,
                          zmq_msg_t *frame, bool *updated);

/* A received payload the store can keep past a call (shared by the slices of a merged push):
 * reference counted, used by the server's main thread only. */
typedef struct ordo__store_frame ordo__store_frame_t;

/* ordo__store_frame_wrap moves frame into a new shared frame (one reference, the caller's);
 * when its bytes are not float-aligned it keeps an aligned copy instead. NULL when out of
 * memory. */
ordo__store_frame_t *ordo__store_frame_wrap(zmq_msg_t *frame);

/* ordo__store_frame_data returns the frame's (float-aligned) bytes and sets *len. */
const void *ordo__store_frame_data(ordo__store_frame_t *f, size_t *len);

/* ordo__store_frame_unref drops one reference; the last frees the frame. NULL-safe. */
void ordo__store_frame_unref(ordo__store_frame_t *f);

/* ordo__store_check_push runs ordo__store_push's checks without pushing (a merged push checks
 * all its slices before adding any): 0, a positive ORDO_STORE_* for a push that will be left
 * out, or a negative error. g is checked: a float32 one's size (its data is not read), a
 * cast's frame whole. */
int ordo__store_check_push(ordo__store_t *s, int slice, int worker, int64_t iter,
                           const ordo__grad_t *g);

/* ordo__store_push_ref is ordo__store_push for data inside owner (NULL: data is borrowed for
 * the call only); the store takes its own references on owner for what it keeps. */
int ordo__store_push_ref(ordo__store_t *s, int slice, int worker, int64_t iter, const float *data,
                        size_t bytes, ordo__store_frame_t *owner, bool *updated);

/* ordo__store_push_grad is ordo__store_push_ref for values in any wire dtype ordo__grad_t
 * takes. */
int ordo__store_push_grad(ordo__store_t *s, int slice, int worker, int64_t iter,
                          const ordo__grad_t *g, ordo__store_frame_t *owner, bool *updated);

/* ordo__store_ready tells whether a pull of iteration iter can be answered now: bsp and backup
 * workers when the version is at least iter, ssp at least iter - staleness, asp once the
 * slice has its initial value. */
bool ordo__store_ready(const ordo__store_t *s, int slice, int64_t iter);

/* ordo__store_pushed tells whether worker's push of iteration iter to slice is already in:
 * summed into the round (bsp, ssp) or applied (iter below the version; asp: below the
 * worker's push clock). Re-sent pushes after a promotion ([fault] replicas) are recognised by
 * it. */
bool ordo__store_pushed(const ordo__store_t *s, int slice, int worker, int64_t iter);

/* ordo__store_install replaces the slice's state with a replica's: its value (bytes), its
 * momentum (mom NULL: zero) and its version; pushes summed so far are dropped (a backup
 * holds none). The primary sends it after each update ([fault] replicas). */
int ordo__store_install(ordo__store_t *s, int slice, int64_t version, const void *value,
                       size_t bytes, const void *mom, size_t mom_bytes);

/* ordo__store_seq returns the slice's update count, by which replicas tell how new a state is
 * (-1 before init): the version under bsp, under asp the pushes applied (the sum of the
 * workers' push clocks), under ssp the pushes taken into its rounds since its initial value
 * (a backup takes the same pushes, forwarded by the primary). */
int64_t ordo__store_seq(const ordo__store_t *s, int slice);

/* ordo__store_clocks returns the slice's per-worker push clocks under asp (the iteration of
 * each worker's next push; n_workers of them), NULL otherwise. */
const int64_t *ordo__store_clocks(const ordo__store_t *s, int slice);

/* ordo__store_install_clocks sets an asp slice's push clocks to a replica's (n entries, one per
 * worker, any alignment) after ordo__store_install, and its version to their smallest. */
int ordo__store_install_clocks(ordo__store_t *s, int slice, const void *clocks, size_t bytes);

/* ordo__store_dropped counts the pushes dropped as late (backup workers). */
uint64_t ordo__store_dropped(const ordo__store_t *s);

/* ordo__store_version returns the version of the slice's value (-1 before init): the number
 * of iterations whose pushes it holds all of (asp: the smallest number of pushes applied of
 * one worker), so a pull of iteration t sees a value t - version iterations stale. */
int64_t ordo__store_version(const ordo__store_t *s, int slice);

/* ordo__store_ref takes a reference on the slice's current value for a zero-copy send:
 * data and bytes describe it; pass ordo__store_unref_cb and *hint to zmq_msg_init_data. */
void ordo__store_ref(ordo__store_t *s, int slice, void **data, size_t *bytes, void **hint);

/* ordo__store_pull_version returns the version of the value a pull of iteration iter gets: the
 * slice's, or iter when re-sends are on and iter is the version before the last update. */
int64_t ordo__store_pull_version(const ordo__store_t *s, int slice, int64_t iter);

/* ordo__store_ref_pull is ordo__store_ref for the answer to a pull of iteration iter. With
 * re-sends on, a pull of the iteration before the last update gets the value kept from then.
 * Under ssp,
 * when the value is behind iter, the answer is a fresh buffer: the value after the updates of
 * iterations version .. iter - 1 made from the pushes that have arrived so far (on scratch
 * copies of the momentum; the stored value and momentum are untouched until each iteration
 * is complete), so a worker ahead reads what the others have pushed (docs/stragglers.md).
 * ORDO_ERR_NOMEM. */
int ordo__store_ref_pull(ordo__store_t *s, int slice, int64_t iter, void **data, size_t *bytes,
                        void **hint);

/* ordo__store_unref_cb releases a reference taken by ordo__store_ref (ZeroMQ free fn). */
void ordo__store_unref_cb(void *data, void *hint);

/* ordo__store_copy_value copies the slice's current value to dst (tests, checkpoints). */
void ordo__store_copy_value(const ordo__store_t *s, int slice, float *dst);

/* ordo__store_momentum returns the slice's momentum buffer (its numel floats; NULL when the
 * optimizer has no momentum): checkpoints copy it, a resumed run overwrites it before the
 * first update. */
float *ordo__store_momentum(ordo__store_t *s, int slice);

/* ordo__store_numel returns the slice's float count (0 when it does not live here). */
int64_t ordo__store_numel(const ordo__store_t *s, int slice);

/* ordo__store_bytes returns the bytes of values held (for logs). */
int64_t ordo__store_bytes(const ordo__store_t *s);

#endif
