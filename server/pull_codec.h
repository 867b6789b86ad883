/* pull_codec: pull answers in a 16-bit wire type (common/codec.h). The value of a slice is
 * encoded once per update and the encoded copy is shared by every answer that carries it (the
 * W workers' pulls of one iteration): a reference-counted block per slice, released by
 * ZeroMQ when the last answer holding it has gone out. */
#ifndef ORDO_PULL_CODEC_H
#define ORDO_PULL_CODEC_H

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
 * slice's update count (server/store.h ordo_store_seq): a value that changed has a new one.
 * Returns 0, or a negative code when the answer should carry float32 instead (another dtype,
 * fp16 values out of range: reported once, out of memory); r is then untouched. */
int ordo__pull_codec_attach(ordo__pull_codec_t *pc, int slice, int64_t seq, const float *data,
                            size_t bytes, int dtype, ordo_msg_t *r);

#endif
