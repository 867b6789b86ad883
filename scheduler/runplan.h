/* runplan: the plan the scheduler computes once at start-up and hands every node in its
 * WELCOME: the transfer priority of every parameter (from [order] policy, planned with the
 * ordering library on the run's model, link and key map), and, later, the merge groups and
 * sparse regions. */
#ifndef ORDO_RUNPLAN_H
#define ORDO_RUNPLAN_H

#include <jansson.h>

#include "common/conf.h"
#include "common/keys.h"
#include "core/model.h"
#include "planner/oracle.h"
#include "scheduler/runplan_inputs.h"

/* ordo__runplan_make computes the run's plan as a JSON object (*out, caller decrefs):
 * {"policy": NAME, "priorities": [p per key] or null, "params": [name per key],
 *  "simulated": {"forward_us", "E", "bandwidth_bps", "latency_us"} or null}.
 * priorities is null for none and fifo (servers release in arrival order; under none each
 * worker also shuffles its requests per iteration), computed by TIO, TAO or search, or read
 * from an ordo-order/1 file for file:PATH. Planning uses ordo__runplan_bps and [net] latency_us, one
 * channel per server (a key's channel is the server holding most of its bytes), the [order] oracle
 * file when set, else the profile's op times times [model] compute_scale. It logs the policy and
 * the simulated forward makespan. Fails (ORDO_ERR_FORMAT, ORDO_ERR_NOTFOUND, ...) with a detail naming
 * the file and the reason when the order or oracle file is missing or does not fit the model. */
int ordo__runplan_make(const ordo__conf_t *conf, const ordo__model_t *m, const ordo__keys_t *keys,
                      json_t **out);

#endif
