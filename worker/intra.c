/* intra: picks an intra-host backend by name and frees it. */
#include "worker/intra.h"
#include "common/error.h"

#include <string.h>

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
