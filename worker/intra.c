/* intra: picks an intra-host backend by name, frees it, and the vectorised sum they share. */
#include "worker/intra.h"
#include "common/error.h"

#include <string.h>

/* as server/optim.c: compiled for AVX-512 and AVX2 besides the baseline, the loader picks */
#if defined(__x86_64__) && defined(__has_attribute)
#if __has_attribute(target_clones) && !defined(__SANITIZE_ADDRESS__)
#define VECTOR_CLONES __attribute__((target_clones("avx512f", "avx2", "default")))
#endif
#endif
#ifndef VECTOR_CLONES
#define VECTOR_CLONES
#endif

VECTOR_CLONES
void ordo_intra_sum(float *restrict acc, const float *restrict src, int64_t n)
{
    for (int64_t i = 0; i < n; i++) acc[i] += src[i];
}

int ordo_intra_new(const char *backend, const ordo_intra_opts_t *o, ordo_intra_t **out)
{
    const ordo_intra_ops_t *ops = NULL;
    if (backend && strcmp(backend, "shm") == 0) ops = &ordo__intra_shm_ops;
    if (backend && strcmp(backend, "nccl") == 0 && &ordo__intra_nccl_ops != NULL)
        ops = &ordo__intra_nccl_ops;
    if (!ops)
        return ordo_error_set(ORDO_EINVAL,
                              "intra.backend %s: not in this build (shm%s)",
                              backend ? backend : "(none)",
                              &ordo__intra_nccl_ops != NULL
                                  ? ", nccl"
                                  : "; nccl needs the CUDA toolkit and NCCL at build time, "
                                    "and is in ordo-worker, not in libordo");
    return ops->create(o, out);
}

void ordo_intra_destroy(ordo_intra_t **pit)
{
    ordo_intra_t *it = *pit;
    if (!it) return;
    it->ops->destroy(it);
    *pit = NULL;
}
