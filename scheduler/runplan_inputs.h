/* runplan_inputs: what every planner of the run (runplan.c's order, runplan_merge.c,
 * runplan_step.c, runplan_compress.c) reads of the conf, the model and the key map: the link
 * rate, each key's channel, and the measured or scaled op times. It calls no planner. */
#ifndef ORDO_RUNPLAN_INPUTS_H
#define ORDO_RUNPLAN_INPUTS_H

#include "common/conf.h"
#include "common/keys.h"
#include "core/model.h"
#include "planner/oracle.h"

/* The link rate the planners assume when [net] bandwidth is 0 (no emulation): 10gbit. */
#define ORDO_RUNPLAN_DEFAULT_BPS 10e9

/* ordo__runplan_oracle sets *out to the oracle planning uses: the conf's [order] oracle file,
 * or the profile's op times scaled by compute_scale when the run emulates compute at another
 * scale, or NULL (the profile's times). Caller destroys it. */
int ordo__runplan_oracle(const ordo__conf_t *conf, const ordo__model_t *m, ordo__oracle_t **out);

/* ordo__runplan_bps returns the link rate the planners assume for conf: [order]
 * plan_bandwidth, else [net] bandwidth, else ORDO_RUNPLAN_DEFAULT_BPS. */
double ordo__runplan_bps(const ordo__conf_t *conf);

/* ordo__runplan_channels writes each key's planning channel into channel[n_keys]: the
 * server holding most of its bytes (ties: the server of its lowest chunk). */
void ordo__runplan_channels(const ordo__keys_t *keys, int *channel);

#endif
