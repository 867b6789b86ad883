/* pull_codec: pull answers in a compressed wire type (common/codec.h). A 16-bit cast encodes
 * the slice's value once per update; a lossy codec (onebit, index-value) encodes the change
 * from a copy of the value every worker holds, which this module tracks per slice: each
 * update's change c_t - c_(t-1) = D(E(v_t - c_(t-1))) is encoded once (what it leaves out stays
 * in v - c and goes with a later change: error feedback on the servers' side), a worker that
 * holds c_(t-1) gets the change, any other the copy c_t in float32. Either way the encoded
 * frame is shared by every answer that carries it (the W workers' pulls of one iteration):
 * a reference-counted block per slice, released by ZeroMQ when the last answer holding it
 * has gone out. */
#ifndef ORDO_PULL_CODEC_H
#define ORDO_PULL_CODEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/wire.h"

typedef struct ordo__pull_codec ordo__pull_codec_t;

/* ordo__pull_codec_new makes the cache of n_slices slices (all empty). */
int ordo__pull_codec_new(int n_slices, ordo__pull_codec_t **out);

/* ordo__pull_codec_destroy drops the cache's references and frees it (NULL-safe); blocks an
 * answer still holds live until ZeroMQ releases them. */
void ordo__pull_codec_destroy(ordo__pull_codec_t **pc);

/* ordo__pull_codec_attach adds slice's value (bytes of float32 at data) to answer r as one
 * frame in wire type dtype (ORDO_DTYPE_BF16 or ORDO_DTYPE_F16) and sets r's dtype: the copy
 * encoded for the same (data, seq, dtype) when there is one, else a new one. seq is the
 * slice's update count (server/store.h ordo__store_seq): a value that changed has a new one.
 * Returns 0, or a negative code when the answer should carry float32 instead (another dtype,
 * fp16 values out of range: reported once, out of memory); r is then untouched. */
int ordo__pull_codec_attach(ordo__pull_codec_t *pc, int slice, int64_t seq, const float *data,
                            size_t bytes, int dtype, ordo__msg_t *r);

/* ordo__pull_codec_note_k records that slice's pushes keep `fraction` of its values (an
 * index-value push): its lossy pulls keep as many (the top-k of the change). */
void ordo__pull_codec_note_k(ordo__pull_codec_t *pc, int slice, double fraction);

/* ordo__pull_codec_attach_delta adds to answer r, for a pull of iteration iter of slice whose
 * value is data (bytes of float32), in lossy wire type dtype: the change from the copy of
 * iter - 1 (dtype, ORDO_FLAG_DELTA) when have_prev and the copy's last step was that one, else
 * the copy of iter in float32. The copy advances to iter at the first answer of iter. Returns
 * 0, or a negative code when r should carry the value itself in float32 (a pull older than
 * the copy, out of memory); r is then untouched. */
int ordo__pull_codec_attach_delta(ordo__pull_codec_t *pc, int slice, int64_t iter,
                                  const float *data, size_t bytes, int dtype, bool have_prev,
                                  ordo__msg_t *r);

#endif
