/* replan_model: a worker's profile matched to the cluster's tensors, for a collective re-plan. */
#include "scheduler/replan_model.h"
#include "common/error.h"

#include <stdlib.h>
#include <string.h>

#define WHO "worker 0's profile"

/* tensor_of finds the tensor named name, or -1 */
static int tensor_of(const char *const *names, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (names[i] && strcmp(names[i], name) == 0) return i;
    return -1;
}

/* match fills param_of[tensor] with the profile's parameter of each tensor */
static int match(const ordo__model_t *p, const char *const *names, const int64_t *numel, int n,
                 int *param_of)
{
    for (int t = 0; t < n; t++)
        param_of[t] = -1;
    for (int i = 0; i < p->n_params; i++) {
        const ordo__model_param_t *pp = &p->params[i];
        int t = tensor_of(names, n, pp->name);
        if (t < 0)
            return ordo__error_set(ORDO_ERR_FORMAT,
                                  WHO ": $.params[%d]: '%s' is not one of the cluster's %d "
                                      "tensors",
                                  i, pp->name, n);
        if (pp->numel != numel[t])
            return ordo__error_set(ORDO_ERR_FORMAT,
                                  WHO ": $.params[%d]: '%s' has %lld elements, the cluster's "
                                      "tensor %d has %lld",
                                  i, pp->name, (long long)pp->numel, t, (long long)numel[t]);
        param_of[t] = i;
    }
    for (int t = 0; t < n; t++)
        if (param_of[t] < 0)
            return ordo__error_set(ORDO_ERR_FORMAT,
                                  WHO ": $.params: the cluster's tensor %d '%s' is "
                                      "missing",
                                  t, names[t] ? names[t] : "?");
    return 0;
}

/* rebuild copies p's ops over the parameters in tensor order */
static int rebuild(const ordo__model_t *p, const int *param_of, int n, const char *dtype,
                   ordo__model_t **out)
{
    ordo__model_t *m = ordo__model_new(p->name, p->batch, dtype);
    const char **list = NULL;
    int rc = m ? 0 : ORDO_ERR_NOMEM, most = 1;
    for (int t = 0; !rc && t < n; t++) {
        const ordo__model_param_t *pp = &p->params[param_of[t]];
        int idx = ordo__model_add_param(m, pp->name, pp->ndim, pp->shape);
        if (idx < 0) rc = idx;
    }
    for (int o = 0; o < p->n_ops; o++) {
        if (p->ops[o].n_inputs > most) most = p->ops[o].n_inputs;
        if (p->ops[o].n_params > most) most = p->ops[o].n_params;
    }
    if (!rc && !(list = malloc(sizeof *list * (size_t)most * 2))) rc = ORDO_ERR_NOMEM;
    for (int o = 0; !rc && o < p->n_ops; o++) {
        const ordo__model_op_t *op = &p->ops[o];
        const char **in = list, **pa = list + most;
        for (int j = 0; j < op->n_inputs; j++)
            in[j] = p->ops[op->inputs[j]].name;
        for (int j = 0; j < op->n_params; j++)
            pa[j] = p->params[op->params[j]].name;
        int idx = ordo__model_add_op(m, op->name, op->n_inputs, in, op->n_params, pa, op->fwd_us,
                                    op->bwd_us);
        if (idx < 0) rc = idx;
    }
    if (!rc) rc = ordo__model_check(m);
    free(list);
    if (rc) {
        ordo__model_destroy(&m);
        return ordo__error_context(rc, WHO);
    }
    *out = m;
    return 0;
}

int ordo__replan_model_match(const char *profile, size_t len, const char *const *names,
                            const int64_t *numel, int n, const char *dtype, ordo__model_t **out)
{
    ordo__model_t *p = NULL;
    int *param_of = NULL;
    int rc = ordo__model_load_buffer(profile, len, WHO, &p);
    if (rc) return rc;
    if (!(param_of = malloc(sizeof *param_of * (size_t)(n > 0 ? n : 1)))) rc = ORDO_ERR_NOMEM;
    if (!rc) rc = match(p, names, numel, n, param_of);
    if (!rc) rc = rebuild(p, param_of, n, dtype, out);
    free(param_of);
    ordo__model_destroy(&p);
    return rc;
}
