/* runplan_intra: the "intra" member of the run's plan ([intra] backend with [cluster]
 * local_size > 1): the groups of consecutive worker ranks that sum their gradients inside a
 * host before the servers see them (client/push_hier.c), and the run id that names their
 * shared-memory segments. Servers read it to count one pusher per group. */
#ifndef ORDO_RUNPLAN_INTRA_H
#define ORDO_RUNPLAN_INTRA_H

#include <jansson.h>

#include "common/conf.h"

/* ordo_runplan_intra adds to plan, when conf asks for intra-host groups,
 * "intra": {"backend": "shm"|"nccl", "local_size": L, "groups": W / L, "run": "ID"};
 * otherwise it changes nothing. ORDO_ERR_INVAL (detail says why) when the workers do not split
 * into groups of L or the push mode is sparse. */
int ordo_runplan_intra(const ordo_conf_t *conf, json_t *plan);

#endif
