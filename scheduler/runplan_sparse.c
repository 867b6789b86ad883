/* runplan_sparse: the plan's sparse member. */
#include "scheduler/runplan_sparse.h"
#include "common/error.h"
#include "common/log.h"
#include "core/sparse_wire.h"
#include "core/regions.h"
#include "core/sparsify.h"

#include <stdint.h>
#include <stdlib.h>

int ordo__runplan_sparse(const ordo__conf_t *conf, const ordo__model_t *m, json_t *plan)
{
    if (conf->push_mode != ORDO_PUSH_SPARSE) return 0;
    int64_t n = ordo__model_total_numel(m);
    int S = conf->servers;
    if (n >= (int64_t)UINT32_MAX || n < S)
        return ordo__error_set(ORDO_ERR_INVAL,
                              "push.mode = sparse: the model has %lld entries; it needs at least "
                              "one per server (%d) and fewer than 2^32 - 1",
                              (long long)n, S);
    uint32_t *bounds = malloc(sizeof *bounds * ((size_t)S + 1));
    if (!bounds) return ORDO_ERR_NOMEM;
    int rc = ordo__regions_even((uint32_t)n, S, bounds);
    if (rc) {
        free(bounds);
        return rc;
    }
    size_t k = ordo__sparsify_k_for((size_t)n, conf->density);
    int nbins = n < ORDO_SPARSE_DEFAULT_BINS ? (int)n : ORDO_SPARSE_DEFAULT_BINS;
    json_t *b = json_array();
    for (int s = 0; s <= S; s++)
        json_array_append_new(b, json_integer(bounds[s]));
    free(bounds);
    json_object_set_new(plan, "sparse",
                        json_pack("{s:I,s:I,s:f,s:i,s:i,s:i,s:o}", "n", (json_int_t)n, "k",
                                  (json_int_t)k, "density", conf->density, "nbins", nbins,
                                  "threshold_period", conf->threshold_period, "repartition_period",
                                  conf->repartition_period, "bounds", b));
    ORDO_INFO("sparse: %lld entries in one index space, k = %zu (density %g) per iteration, "
              "exact thresholds every %d iterations, regions re-balanced every %d over %d "
              "servers",
              (long long)n, k, conf->density, conf->threshold_period, conf->repartition_period, S);
    return 0;
}
