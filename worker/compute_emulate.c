/* compute_emulate: the emulated backend. Each op takes its profiled fwd_us or bwd_us times
 * compute_scale, slept with ordo__clock_sleep_until (kernel sleep, then a short spin). The
 * emulated device keeps its own timeline: when the OS wakes the thread late (a loaded host
 * can be milliseconds late), the overshoot is taken off the following ops, so the time over
 * a pass, and the compute_ms the executor measures around the ops, matches the profile while
 * single ops may come out shorter. Data buffers are ignored, so it runs any model. */
#include "common/clock.h"
#include "common/error.h"
#include "worker/compute_backend.h"

#include <stdlib.h>

typedef struct emulate {
    const ordo__model_t *m;
    double scale;
    int64_t late_ns; /* how much longer than asked the ops so far took (>= 0) */
    int64_t cap_ns;  /* at most one whole pass is owed */
} emulate_t;

static int em_bind(void *impl, float *const *params, float *const *grads)
{
    return 0;
}

static int em_set_batch(void *impl, const float *x, const int *labels, int n)
{
    return 0;
}

static void sleep_us(emulate_t *e, double us)
{
    int64_t want = (int64_t)(us * e->scale * 1e3 + 0.5);
    int64_t t0 = ordo__clock_ns();
    if (want - e->late_ns > 0) ordo__clock_sleep_until(t0 + want - e->late_ns);
    e->late_ns += ordo__clock_ns() - t0 - want;
    if (e->late_ns < 0) e->late_ns = 0;
    if (e->late_ns > e->cap_ns) e->late_ns = e->cap_ns;
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

int ordo__compute_emulate_new(const ordo__model_t *m, double compute_scale, void **impl,
                              const ordo__compute_ops_t **ops)
{
    emulate_t *e = calloc(1, sizeof *e);
    if (!e) return ordo__error_set(ORDO_ERR_NOMEM, "compute emulate: out of memory");
    e->m = m;
    e->scale = compute_scale;
    double pass_us = 0;
    for (int i = 0; i < m->n_ops; i++)
        pass_us += m->ops[i].fwd_us + m->ops[i].bwd_us;
    e->cap_ns = (int64_t)(pass_us * compute_scale * 1e3);
    *impl = e;
    *ops = &emulate_ops;
    return 0;
}
