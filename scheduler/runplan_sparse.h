/* runplan_sparse: the "sparse" member of the run's plan ([push] mode = sparse): the model's
 * parameters as one flat index space (model order), the number k of entries selected per
 * iteration, the threshold and repartition periods, the position-histogram size and the
 * first region boundaries (an even split; the scheduler re-balances them while the run
 * goes, see scheduler/sparse_coord.h). Parsed by nodes with ordo__sparse_wire_plan. */
#ifndef ORDO_RUNPLAN_SPARSE_H
#define ORDO_RUNPLAN_SPARSE_H

#include <jansson.h>

#include "common/conf.h"
#include "core/model.h"

/* ordo__runplan_sparse adds to plan, when conf's push mode is sparse,
 * "sparse": {"n", "k", "density", "nbins", "threshold_period", "repartition_period",
 * "bounds": [S + 1 boundaries]} for conf's number of servers; otherwise it changes nothing.
 * ORDO_ERR_INVAL (detail says why) when the model has more than 2^32 - 2 entries or fewer
 * entries than servers. */
int ordo__runplan_sparse(const ordo__conf_t *conf, const ordo__model_t *m, json_t *plan);

#endif
