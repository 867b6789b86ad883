/* runplan_compress: [push] compression = auto: the step model (planner/step.h) decides, per
 * tensor, between float32 and a 16-bit wire type, weighing the link time a cast saves against
 * the time its conversions take (measured here, on this CPU), and the plan's "compression"
 * member carries each key's codec to the workers and the reasons to the summary. */
#ifndef ORDO_RUNPLAN_COMPRESS_H
#define ORDO_RUNPLAN_COMPRESS_H

#include <jansson.h>

#include "common/conf.h"
#include "core/model.h"
#include "planner/oracle.h"

/* ordo__runplan_compress, when conf's [push] compression is auto or auto:CODEC (bf16, the
 * default, or fp16), sets plan's "compression" member: {"policy": "auto", "codec",
 * "keys": [codec spec per key], "compressed": N, "conversion_ns_per_value",
 * "link_bps", "float32_step_ms", "chosen_step_ms", "why"}. priority may be NULL (no order);
 * oracle may be NULL (the profile's times). Otherwise a no-op. */
int ordo__runplan_compress(const ordo__conf_t *conf, const ordo__model_t *m,
                          const ordo__oracle_t *oracle, const int *channel, int n_channels,
                          const int *priority, json_t *plan);

#endif
