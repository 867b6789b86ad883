/* runplan_inputs: what every planner of the run reads (runplan_inputs.h). */
#include "scheduler/runplan_inputs.h"
#include "common/error.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void ordo__runplan_channels(const ordo__keys_t *keys, int *channel)
{
    int64_t *bytes = calloc((size_t)keys->n_servers, sizeof *bytes);
    for (int k = 0; k < keys->n_keys; k++) {
        int first = keys->first_slice[k];
        int best = keys->slices[first].server;
        if (bytes && keys->n_chunks[k] > 1) {
            memset(bytes, 0, sizeof *bytes * (size_t)keys->n_servers);
            for (int c = 0; c < keys->n_chunks[k]; c++)
                bytes[keys->slices[first + c].server] += keys->slices[first + c].numel;
            for (int c = 0; c < keys->n_chunks[k]; c++) {
                int s = keys->slices[first + c].server;
                if (bytes[s] > bytes[best]) best = s;
            }
        }
        channel[k] = best;
    }
    free(bytes);
}

int ordo__runplan_oracle(const ordo__conf_t *conf, const ordo__model_t *m, ordo__oracle_t **out)
{
    *out = NULL;
    if (conf->oracle[0]) {
        int rc = ordo__oracle_load_file(conf->oracle, m, out);
        if (rc) return ordo__error_context(rc, "order.oracle");
        return 0;
    }
    if (conf->compute != ORDO_COMPUTE_EMULATE || conf->compute_scale == 1.0) return 0;
    ordo__oracle_t *o = NULL;
    int rc = ordo__oracle_new(m, &o);
    if (rc) return rc;
    for (int op = 0; op < m->n_ops; op++)
        ordo__oracle_observe_op(o, op, m->ops[op].fwd_us * conf->compute_scale,
                               m->ops[op].bwd_us * conf->compute_scale);
    *out = o;
    return 0;
}

double ordo__runplan_bps(const ordo__conf_t *conf)
{
    if (conf->plan_bandwidth_bps > 0) return conf->plan_bandwidth_bps;
    return conf->bandwidth_bps > 0 ? conf->bandwidth_bps : ORDO_RUNPLAN_DEFAULT_BPS;
}
