/* runplan_intra: the "intra" member of the run's plan ([intra] backend with [cluster]
 * local_size > 1): the groups of consecutive worker ranks that sum their gradients inside a
 * host before the servers see them (client/push_hier.c), and the run id that names their
 * shared-memory segments. Servers read it to count one pusher per group. */
#ifndef ORDO_RUNPLAN_INTRA_H
#define ORDO_RUNPLAN_INTRA_H

#include <jansson.h>

#include "common/conf.h"

/* ordo__runplan_intra adds to plan, when conf asks for intra-host groups,
 * "intra": {"backend": "shm"|"nccl"|"auto", "local_size": L, "groups": W / L, "run": "ID"};
 * otherwise it changes nothing. ORDO_ERR_INVAL (detail says why) when the workers do not split
 * into groups of L or the push mode is sparse. */
int ordo__runplan_intra(const ordo__conf_t *conf, json_t *plan);

/* ordo__runplan_pushers is how many pushers the servers see: one per host group when conf
 * asks for groups (the workers / local_size), else every worker. */
int ordo__runplan_pushers(const ordo__conf_t *conf);

/* ordo__runplan_intra_check checks, when plan's intra backend is "auto" (each worker resolves
 * it: nccl for CUDA tensors where it loads, else shm), that the members of every group chose
 * the same backend: choice[r] is worker r's REGISTER "intra" (NULL: none said, shm). 0 when
 * they agree (or the plan has no auto groups); else ORDO_ERR_INVAL with a detail naming the
 * group, its members and their backends. nccl with conf's fault.replicas > 1 is refused as
 * for intra.backend = nccl. */
int ordo__runplan_intra_check(const ordo__conf_t *conf, const json_t *plan,
                             const char *const *choice, int workers);

#endif
