/* runplan: the run's plan from the conf, the model and the key map. */
#include "scheduler/runplan.h"
#include "common/error.h"

int ordo_runplan_make(const ordo_conf_t *conf, const ordo_model_t *m, const ordo_keys_t *keys,
                      json_t **out)
{
    (void)m;
    (void)keys;
    json_t *plan = json_object();
    json_object_set_new(plan, "policy", json_string(conf->policy));
    json_object_set_new(plan, "priorities", json_null());
    *out = plan;
    return 0;
}
