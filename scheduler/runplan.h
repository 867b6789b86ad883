/* runplan: the plan the scheduler computes once at start-up and hands every node in its
 * WELCOME: the transfer priority of every parameter (from [order] policy), and, later, the
 * merge groups and sparse regions. */
#ifndef ORDO_RUNPLAN_H
#define ORDO_RUNPLAN_H

#include <jansson.h>

#include "common/conf.h"
#include "common/keys.h"
#include "scheduler/model.h"

/* ordo_runplan_make computes the run's plan as a JSON object (*out, caller decrefs):
 * {"policy": NAME, "priorities": [p per key] or null}. */
int ordo_runplan_make(const ordo_conf_t *conf, const ordo_model_t *m, const ordo_keys_t *keys,
                      json_t **out);

#endif
