/* compute_emulate: the emulated backend. Each op sleeps its profiled fwd_us or bwd_us times
 * compute_scale with ordo_clock_sleep_ns (kernel sleep then a short spin, ~µs precision);
 * data buffers are ignored, so it runs any model, profiles of real networks included. */
#include "common/clock.h"
#include "common/error.h"
#include "worker/compute_backend.h"

#include <stdlib.h>

typedef struct emulate {
    const ordo_model_t *m;
    double scale;
} emulate_t;

static int em_bind(void *impl, float *const *params, float *const *grads)
{
    return 0;
}

static int em_set_batch(void *impl, const float *x, const int *labels, int n)
{
    return 0;
}

static void sleep_us(const emulate_t *e, double us)
{
    double ns = us * e->scale * 1e3;
    if (ns >= 1.0) ordo_clock_sleep_ns((int64_t)(ns + 0.5));
}

static int em_forward(void *impl, int op)
{
    emulate_t *e = impl;
    sleep_us(e, e->m->ops[op].fwd_us);
    return 0;
}

static int em_backward(void *impl, int op)
{
    emulate_t *e = impl;
    sleep_us(e, e->m->ops[op].bwd_us);
    return 0;
}

static int em_loss(void *impl, double *loss, int *correct)
{
    *loss = 0.0;
    *correct = 0;
    return 0;
}

static void em_destroy(void *impl)
{
    free(impl);
}

static const ordo__compute_ops_t emulate_ops = {
    .bind = em_bind,
    .set_batch = em_set_batch,
    .forward = em_forward,
    .backward = em_backward,
    .loss = em_loss,
    .destroy = em_destroy,
};

int ordo__compute_emulate_new(const ordo_model_t *m, double compute_scale, void **impl,
                              const ordo__compute_ops_t **ops)
{
    emulate_t *e = calloc(1, sizeof *e);
    if (!e) return ordo_error_set(ORDO_ENOMEM, "compute emulate: out of memory");
    e->m = m;
    e->scale = compute_scale;
    *impl = e;
    *ops = &emulate_ops;
    return 0;
}
