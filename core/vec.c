/* vec: vectorised float loops shared by the server's sums and the host groups' sums. */
#include "core/vec.h"

ORDO_VECTOR_CLONES
void ordo_vec_add(float *restrict acc, const float *restrict src, int64_t n)
{
    for (int64_t i = 0; i < n; i++) acc[i] += src[i];
}

ORDO_VECTOR_CLONES
void ordo_vec_sum(float *restrict dst, const float *restrict a, const float *restrict b,
                  int64_t n)
{
    for (int64_t i = 0; i < n; i++) dst[i] = a[i] + b[i];
}
