/* compute: picks the backend, checks every call's arguments once for all backends, counts
 * calls and forwards them through the backend's vtable. */
#include "worker/compute.h"

#include "common/error.h"
#include "worker/compute_backend.h"

#include <stdlib.h>

struct ordo__compute_ctx {
    int kind;
    const ordo__model_t *m;
    void *impl;
    const ordo__compute_ops_t *ops;
    bool bound;
    bool have_batch;
    long n_forward, n_backward;
};

const char *ordo__compute_kind_name(int kind)
{
    switch (kind) {
    case ORDO_COMPUTE_EMULATE:
        return "emulate";
    case ORDO_COMPUTE_CPU:
        return "cpu";
    case ORDO_COMPUTE_CUDA:
        return "cuda";
    default:
        return "unknown";
    }
}

bool ordo__compute_cuda_available(const char **why)
{
    const ordo__compute_cuda_backend_t *b = ordo__compute_cuda(why);
    return b && b->probe(why) == 1;
}

int ordo__compute_new(int kind, const ordo__model_t *m, double compute_scale,
                     ordo__compute_ctx_t **out)
{
    if (!m || !out || !(compute_scale > 0))
        return ordo__error_set(ORDO_ERR_INVAL, "compute: missing model or compute_scale %g <= 0",
                              compute_scale);
    ordo__compute_ctx_t *c = calloc(1, sizeof *c);
    if (!c) return ordo__error_set(ORDO_ERR_NOMEM, "compute: out of memory");
    c->kind = kind;
    c->m = m;
    int rc;
    switch (kind) {
    case ORDO_COMPUTE_EMULATE:
        rc = ordo__compute_emulate_new(m, compute_scale, &c->impl, &c->ops);
        break;
    case ORDO_COMPUTE_CPU:
        rc = ordo__compute_cpu_new(m, &c->impl, &c->ops);
        break;
    case ORDO_COMPUTE_CUDA: {
        const char *why = NULL;
        const ordo__compute_cuda_backend_t *b = ordo__compute_cuda(&why);
        if (!b || b->probe(&why) != 1)
            rc = ordo__error_set(ORDO_ERR_NOTSUP, "compute cuda: %s", why);
        else
            rc = b->create(m, &c->impl, &c->ops);
        break;
    }
    default:
        rc = ordo__error_set(ORDO_ERR_INVAL, "compute: unknown backend kind %d", kind);
        break;
    }
    if (rc < 0) {
        free(c);
        return rc;
    }
    *out = c;
    return 0;
}

int ordo__compute_bind(ordo__compute_ctx_t *c, float *const *params, float *const *grads)
{
    if (c->kind != ORDO_COMPUTE_EMULATE) {
        if (!params || !grads)
            return ordo__error_set(ORDO_ERR_INVAL, "compute %s: bind needs params and grads",
                                  ordo__compute_kind_name(c->kind));
        for (int p = 0; p < c->m->n_params; p++)
            if (!params[p] || !grads[p])
                return ordo__error_set(ORDO_ERR_INVAL, "compute %s: no buffer for parameter '%s'",
                                      ordo__compute_kind_name(c->kind), c->m->params[p].name);
    }
    int rc = c->ops->bind(c->impl, params, grads);
    if (rc < 0) return rc;
    c->bound = true;
    return 0;
}

int ordo__compute_set_batch(ordo__compute_ctx_t *c, const float *x, const int *labels, int n)
{
    if (n < 1 || n > c->m->batch)
        return ordo__error_set(ORDO_ERR_INVAL, "compute: batch of %d samples, model %s takes 1..%d", n,
                              c->m->name, c->m->batch);
    if (c->kind != ORDO_COMPUTE_EMULATE) {
        if (!x || !labels)
            return ordo__error_set(ORDO_ERR_INVAL, "compute: set_batch needs x and labels");
        for (int i = 0; i < n; i++)
            if (labels[i] < 0 || labels[i] >= 10)
                return ordo__error_set(ORDO_ERR_INVAL,
                                      "compute: label %d of sample %d is not in "
                                      "[0, 10)",
                                      labels[i], i);
    }
    int rc = c->ops->set_batch(c->impl, x, labels, n);
    if (rc < 0) return rc;
    c->have_batch = true;
    return 0;
}

/* ready checks what forward and backward need: a valid op, bound buffers and a batch. */
static int ready(const ordo__compute_ctx_t *c, int op, const char *what)
{
    if (op < 0 || op >= c->m->n_ops)
        return ordo__error_set(ORDO_ERR_INVAL, "compute: %s of op %d, model %s has %d ops", what, op,
                              c->m->name, c->m->n_ops);
    if (c->kind != ORDO_COMPUTE_EMULATE && (!c->bound || !c->have_batch))
        return ordo__error_set(ORDO_ERR_INVAL, "compute %s: %s of op '%s' before %s",
                              ordo__compute_kind_name(c->kind), what, c->m->ops[op].name,
                              c->bound ? "set_batch" : "bind");
    return 0;
}

int ordo__compute_forward(ordo__compute_ctx_t *c, int op)
{
    int rc = ready(c, op, "forward");
    if (rc < 0 || (rc = c->ops->forward(c->impl, op)) < 0) return rc;
    c->n_forward++;
    return 0;
}

int ordo__compute_backward(ordo__compute_ctx_t *c, int op)
{
    int rc = ready(c, op, "backward");
    if (rc < 0 || (rc = c->ops->backward(c->impl, op)) < 0) return rc;
    c->n_backward++;
    return 0;
}

int ordo__compute_loss(ordo__compute_ctx_t *c, double *loss, int *correct)
{
    double l = 0;
    int k = 0;
    int rc = c->ops->loss(c->impl, &l, &k);
    if (rc < 0) return rc;
    *loss = l;
    *correct = k;
    return 0;
}

int ordo__compute_kind(const ordo__compute_ctx_t *c)
{
    return c->kind;
}

void ordo__compute_calls(const ordo__compute_ctx_t *c, long *forward, long *backward)
{
    *forward = c->n_forward;
    *backward = c->n_backward;
}

void ordo__compute_destroy(ordo__compute_ctx_t **c)
{
    if (!c || !*c) return;
    if ((*c)->ops) (*c)->ops->destroy((*c)->impl);
    free(*c);
    *c = NULL;
}
