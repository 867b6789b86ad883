/* vec: the vectorised float loops that servers (sums of pushes) and host groups (sums of
 * members' gradients) share. Every element sees the same operations in the same order
 * whatever the vector width, so results are the same bits on every CPU path. */
#ifndef ORDO_VEC_H
#define ORDO_VEC_H

#include <stdint.h>

#include "common/vec_clones.h" /* ORDO_VECTOR_CLONES */

/* ordo__vec_add adds n floats of src into acc (acc += src); the two must not overlap. */
void ordo__vec_add(float *restrict acc, const float *restrict src, int64_t n);

/* ordo__vec_sum writes a + b into dst (n floats; dst overlaps neither): the same bits as
 * copying a into dst and adding b, in one pass instead of two. */
void ordo__vec_sum(float *restrict dst, const float *restrict a, const float *restrict b,
                  int64_t n);

/* ordo__vec_sum_rows writes rows[0] + rows[1] + ... + rows[m - 1] into dst (n floats, m >= 1,
 * added in row order: the same bits as ordo__vec_sum of the first two then ordo__vec_add of each
 * further row), reading every row once and writing dst once, with stores that bypass the
 * caches (x86-64): for sums read back by another core, or much later, and larger than the
 * caches. dst overlaps no row. */
void ordo__vec_sum_rows(float *restrict dst, const float *const *rows, int m, int64_t n);

/* ordo__vec_copy_stream copies n floats from src to dst (no overlap) with stores that bypass
 * the caches (x86-64; memcpy elsewhere): a copy larger than the caches whose destination is
 * not read again soon needs no read of it first. */
void ordo__vec_copy_stream(float *restrict dst, const float *restrict src, int64_t n);

#endif
