/* intra: picks an intra-host backend by name and frees it. */
#include "client/intra.h"
#include "common/error.h"

#include <string.h>

int ordo__intra_new(const char *backend, const ordo__intra_opts_t *o, ordo__intra_t **out)
{
    const ordo__intra_ops_t *ops = NULL;
    if (backend && strcmp(backend, "shm") == 0) ops = &ordo__intra_shm_ops;
    if (backend && strcmp(backend, "nccl") == 0 && &ordo__intra_nccl_ops != NULL)
        ops = &ordo__intra_nccl_ops;
    if (!ops)
        return ordo_error_set(ORDO_ERR_INVAL,
                              "intra.backend %s: not in this build (shm%s)",
                              backend ? backend : "(none)",
                              &ordo__intra_nccl_ops != NULL
                                  ? ", nccl"
                                  : "; nccl needs the CUDA toolkit and NCCL at build time, "
                                    "and is in ordo-worker, not in libordo");
    return ops->create(o, out);
}

void ordo__intra_destroy(ordo__intra_t **pit)
{
    ordo__intra_t *it = *pit;
    if (!it) return;
    it->ops->destroy(it);
    *pit = NULL;
}
