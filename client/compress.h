/* compress: a worker's wire compression (common/codec.h): each key's codec (the conf's
 * [push] compression, or the one its tensor was declared with), the error-feedback residuals
 * of what it pushes, and the encoding of a push into one frame. The push paths (client/ps.c
 * for dense pushes, client/push_merged.c for merged ones) call it on their way to the wire;
 * pulls ask for a key's pull type and decode what comes back. */
#ifndef ORDO_COMPRESS_H
#define ORDO_COMPRESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/codec.h"
#include "common/conf.h"
#include "common/keys.h"

typedef struct ordo__compress ordo__compress_t;
struct ordo__plan;

/* ordo__compress_new makes the state of n_keys keys: each takes the conf's
 * [push] compression (auto: the codec the plan's "compression" member chose for it), or
 * tensors[key]'s "compression" member when tensors (the declarations' JSON array, may be
 * NULL) has one; fp16 scales by 1 / workers. n_units residual slots are
 * kept (pushes are encoded per unit: a slice, or a merged part). ORDO_ERR_INVAL naming the
 * tensor for a bad spec. */
int ordo__compress_new(const ordo__conf_t *conf, const ordo__keys_t *keys, const char *tensors,
                       const struct ordo__plan *plan, int n_workers, int n_units, ordo__compress_t **out);

/* ordo__compress_destroy frees c and sets *c to NULL (NULL-safe). */
void ordo__compress_destroy(ordo__compress_t **c);

/* ordo__compress_units adds n more residual slots and returns the first one's index, or a
 * negative code (a merged path's parts). */
int ordo__compress_units(ordo__compress_t *c, int n);

/* ordo__compress_spec returns key's codec spec. */
const ordo__codec_spec_t *ordo__compress_spec(const ordo__compress_t *c, int key);

/* ordo__compress_any tells whether some key is pushed in another wire type than float32. */
int ordo__compress_any(const ordo__compress_t *c);

/* ordo__compress_pull_dtype is the wire type key's pulls ask for: a codec's own, or float32
 * (none; a lossy codec's where the run cannot keep the workers' copies in step: under ssp or
 * asp, fault.worker = restart, replicas). */
int ordo__compress_pull_dtype(const ordo__compress_t *c, int key);

/* ordo__compress_pull_flags returns the header flags of a pull of slice (of key) for
 * iteration iter: ORDO_FLAG_HAVE_PREV when the key's pulls are lossy and this worker holds its
 * answer of iter - 1, else 0. */
uint32_t ordo__compress_pull_flags(const ordo__compress_t *c, int key, int slice, int64_t iter);

/* ordo__compress_take_pull writes the n values of slice an answer of iteration iter brought
 * (frame of len bytes, wire dtype, header flags) into dst: decoded, or for a lossy key's
 * answer added to (ORDO_FLAG_DELTA) or taken as the copy of the servers' value this worker
 * keeps. ORDO_ERR_PROTO with a detail for a malformed frame or a change with no copy under
 * it; dst is then unchanged. */
int ordo__compress_take_pull(ordo__compress_t *c, int key, int slice, int64_t iter, int dtype,
                             uint32_t flags, const void *frame, size_t len, int64_t n,
                             float *dst);

/* ordo__compress_encode encodes n floats of src, pushed as unit `unit` of key, into a frame:
 * 1 and *out (*len bytes, *dtype its wire type) when it is encoded, 0 when it goes as float32
 * as it is (the key is not compressed, or fp16 values out of range this time: reported once
 * per tensor), or a negative code. The frame is the unit's own buffer while no earlier frame
 * of the unit is still on its way, else a new one; either way the caller hands it to ZeroMQ
 * with ordo__compress_frame_free and *hint, which release it. seed is the push's iteration:
 * it drives randomk (the same for every worker in one step) and, for kept residuals, names
 * the push (encoding one iteration's push again starts from the same residual). */
int ordo__compress_encode(ordo__compress_t *c, int key, int unit, const float *src, int64_t n,
                          uint64_t seed, void **out, size_t *len, int *dtype, void **hint);

/* ordo__compress_frame_free releases a frame of ordo__compress_encode (a zmq_free_fn). */
void ordo__compress_frame_free(void *data, void *hint);

/* ordo__compress_key_bytes sets the bytes one push and one pull of key put on the wire, its
 * slices (keys) encoded one by one (exact but for fp16 pushes sent as float32). */
void ordo__compress_key_bytes(const ordo__compress_t *c, const ordo__keys_t *keys, int key,
                              int64_t *push, int64_t *pull);

/* ordo__compress_keep keeps the error-feedback residuals in files under dir (made if
 * missing), one per unit, mapped shared: they outlive the process (not the node), so a
 * worker restarted with its rank (fault.worker = restart) goes on from its predecessor's.
 * Each file holds the residuals after the unit's last three pushes, tagged with their
 * iterations; a push of iteration t starts from the one after the unit's newest push before
 * t. rejoin >= 0 (the iteration a restarted worker goes on at): the files there are taken
 * up (a missing one is warned about once, and its unit starts from zeros); else they are
 * started afresh. ORDO_ERR_IO naming dir when it cannot be made. */
int ordo__compress_keep(ordo__compress_t *c, const char *dir, int64_t rejoin);

/* ordo__compress_has_state says whether some key's codec keeps error-feedback residuals: a
 * worker's state a checkpoint must hold for a resumed run to go on exactly. */
bool ordo__compress_has_state(const ordo__compress_t *c);

/* ordo__compress_state saves (save) every unit's residual as of the last push into the file
 * path (written durably: temporary file, fsync, rename, CRC-32 trailer; docs/formats.md), or
 * loads them back from it before the first push of a resumed run (kept units get them as
 * their newest slot; after a push: ORDO_ERR_INVAL). A file that is not whole, of another
 * format or of other units, or whose residuals for a slice do not fit its tensor (another
 * size, or a codec here that keeps none) is refused (ORDO_ERR_FORMAT naming the file and
 * what differs); ORDO_ERR_IO naming it when it cannot be read or written. */
int ordo__compress_state(ordo__compress_t *c, const char *path, bool save);

/* ordo__compress_residual returns unit's residual (n floats) or NULL when it has none yet
 * (kept: the one of the newest push). */
float *ordo__compress_residual(ordo__compress_t *c, int unit, int64_t *n);

#endif
