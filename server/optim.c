/* optim: vectorizable gradient sums and SGD updates. */
#include "server/optim.h"

void ordo_optim_sum(float *restrict acc, const float *restrict src, int64_t n)
{
    for (int64_t i = 0; i < n; i++) acc[i] += src[i];
}

/* The in-place and out-of-place variants are separate so each has restrict pointers. */
static void step_inplace(float *restrict w, float *restrict mom, const float *restrict g,
                         float lr, float mu, float wd, float scale, int64_t n)
{
    if (mom) {
        for (int64_t i = 0; i < n; i++) {
            float gi = scale * g[i] + wd * w[i];
            float v = mu * mom[i] + gi;
            mom[i] = v;
            w[i] -= lr * v;
        }
    } else {
        for (int64_t i = 0; i < n; i++) w[i] -= lr * (scale * g[i] + wd * w[i]);
    }
}

static void step_copy(float *restrict out, const float *restrict w, float *restrict mom,
                      const float *restrict g, float lr, float mu, float wd, float scale, int64_t n)
{
    if (mom) {
        for (int64_t i = 0; i < n; i++) {
            float gi = scale * g[i] + wd * w[i];
            float v = mu * mom[i] + gi;
            mom[i] = v;
            out[i] = w[i] - lr * v;
        }
    } else {
        for (int64_t i = 0; i < n; i++) out[i] = w[i] - lr * (scale * g[i] + wd * w[i]);
    }
}

void ordo_optim_step(const ordo_optim_t *o, float *out_w, const float *w, float *mom,
                     const float *g, float scale, int64_t n)
{
    float *m = o->momentum > 0 ? mom : 0;
    if (out_w == w)
        step_inplace(out_w, m, g, o->lr, o->momentum, o->weight_decay, scale, n);
    else
        step_copy(out_w, w, m, g, o->lr, o->momentum, o->weight_decay, scale, n);
}

/* fused variants: gradient = acc + g, read once */
static void step2_copy(float *restrict out, const float *restrict w, float *restrict mom,
                       const float *restrict acc, const float *restrict g, float lr, float mu,
                       float wd, float scale, int64_t n)
{
    if (mom) {
        for (int64_t i = 0; i < n; i++) {
            float gi = scale * (acc[i] + g[i]) + wd * w[i];
            float v = mu * mom[i] + gi;
            mom[i] = v;
            out[i] = w[i] - lr * v;
        }
    } else {
        for (int64_t i = 0; i < n; i++) out[i] = w[i] - lr * (scale * (acc[i] + g[i]) + wd * w[i]);
    }
}

static void step2_inplace(float *restrict w, float *restrict mom, const float *restrict acc,
                          const float *restrict g, float lr, float mu, float wd, float scale,
                          int64_t n)
{
    if (mom) {
        for (int64_t i = 0; i < n; i++) {
            float gi = scale * (acc[i] + g[i]) + wd * w[i];
            float v = mu * mom[i] + gi;
            mom[i] = v;
            w[i] -= lr * v;
        }
    } else {
        for (int64_t i = 0; i < n; i++) w[i] -= lr * (scale * (acc[i] + g[i]) + wd * w[i]);
    }
}

void ordo_optim_step_sum(const ordo_optim_t *o, float *out_w, const float *w, float *mom,
                         const float *acc, const float *g, float scale, int64_t n)
{
    if (!acc) {
        ordo_optim_step(o, out_w, w, mom, g, scale, n);
        return;
    }
    float *m = o->momentum > 0 ? mom : 0;
    if (out_w == w)
        step2_inplace(out_w, m, acc, g, o->lr, o->momentum, o->weight_decay, scale, n);
    else
        step2_copy(out_w, w, m, acc, g, o->lr, o->momentum, o->weight_decay, scale, n);
}
