/* compute_cpu: the CPU backend. It runs the built-in networks' ops (worker/nn.h's layer
 * table) with worker/kernels.h, keeping every op's output and output-gradient buffer and
 * the im2col and pooling workspaces allocated from creation on, sized for the model's
 * batch. OpenBLAS runs one thread per process (several ordo processes share a host). */
#include "common/error.h"
#include "worker/compute_backend.h"
#include "worker/kernels.h"
#include "core/nn.h"

#include <stdlib.h>
#include <string.h>

typedef struct cpu {
    const ordo__model_t *m;
    ordo__nn_layer_t *layers;
    int *consumer;  /* per op: the op reading its output, -1 for the loss */
    float **out;    /* per op: output [batch, out_len] (loss: softmax probabilities) */
    float **dout;   /* per op: gradient of the loss w.r.t. the output */
    int32_t **arg;  /* per pool op: arg-max positions */
    float *col;     /* im2col workspace, the largest conv's */
    bool *fwd_done; /* per op, within the current pass */
    bool *bwd_done;
    float *const *params;
    float *const *grads;
    const float *x;
    const int *labels;
    int n;
    double loss;
    int correct;
} cpu_t;

static void cpu_destroy(void *impl)
{
    cpu_t *c = impl;
    if (!c) return;
    for (int o = 0; o < c->m->n_ops; o++) {
        if (c->out) free(c->out[o]);
        if (c->dout) free(c->dout[o]);
        if (c->arg) free(c->arg[o]);
    }
    free(c->out);
    free(c->dout);
    free(c->arg);
    free(c->col);
    free(c->fwd_done);
    free(c->bwd_done);
    free(c->consumer);
    free(c->layers);
    free(c);
}

static int cpu_bind(void *impl, float *const *params, float *const *grads)
{
    cpu_t *c = impl;
    c->params = params;
    c->grads = grads;
    return 0;
}

static int cpu_set_batch(void *impl, const float *x, const int *labels, int n)
{
    cpu_t *c = impl;
    c->x = x;
    c->labels = labels;
    c->n = n;
    memset(c->fwd_done, 0, sizeof(bool) * (size_t)c->m->n_ops);
    memset(c->bwd_done, 0, sizeof(bool) * (size_t)c->m->n_ops);
    return 0;
}

static void conv_geometry(const cpu_t *c, const ordo__nn_layer_t *l, ordo__conv_t *g)
{
    bool ok = ordo__kernels_conv_init(g, c->n, l->in_c, l->in_h, l->in_w, l->out_c, l->k, l->pad, 1);
    ORDO_ASSERT(ok); /* ordo__nn_layers checked the geometry */
}

static int cpu_forward(void *impl, int o)
{
    cpu_t *c = impl;
    const ordo__nn_layer_t *l = &c->layers[o];
    if (l->input >= 0 && !c->fwd_done[l->input])
        return ordo__error_set(ORDO_ERR_INVAL, "compute cpu: forward of op '%s' before its input '%s'",
                              c->m->ops[o].name, c->m->ops[l->input].name);
    const float *in = l->input < 0 ? c->x : c->out[l->input];
    float *y = c->out[o];
    const int n = c->n;
    switch (l->kind) {
    case ORDO_NN_DENSE:
        ordo__kernels_dense_fwd(n, l->in_c, l->out_c, in, c->params[l->weight], c->params[l->bias],
                               y);
        break;
    case ORDO_NN_CONV: {
        ordo__conv_t g;
        conv_geometry(c, l, &g);
        ordo__kernels_conv2d_fwd(&g, in, c->params[l->weight], c->params[l->bias], y, c->col);
        break;
    }
    case ORDO_NN_RELU:
        ordo__kernels_relu_fwd(n * ordo__nn_layer_in_len(l), in, y);
        break;
    case ORDO_NN_POOL:
        ordo__kernels_maxpool_fwd((int64_t)n * l->in_c, l->in_h, l->in_w, in, y, c->arg[o]);
        break;
    case ORDO_NN_XENT:
        ordo__kernels_xent_fwd(n, l->in_c, in, c->labels, y, &c->loss, &c->correct);
        break;
    }
    c->fwd_done[o] = true;
    c->bwd_done[o] = false;
    return 0;
}

static int cpu_backward(void *impl, int o)
{
    cpu_t *c = impl;
    const ordo__nn_layer_t *l = &c->layers[o];
    int next = c->consumer[o];
    if (!c->fwd_done[o] || (next >= 0 && !c->bwd_done[next]))
        return ordo__error_set(ORDO_ERR_INVAL, "compute cpu: backward of op '%s' before %s",
                              c->m->ops[o].name,
                              !c->fwd_done[o] ? "its forward" : c->m->ops[next].name);
    const float *in = l->input < 0 ? c->x : c->out[l->input];
    /* The first op's input gradient is the data's: nobody needs it. */
    float *dx = l->input < 0 ? NULL : c->dout[l->input];
    const float *dy = c->dout[o];
    const int n = c->n;
    switch (l->kind) {
    case ORDO_NN_DENSE:
        ordo__kernels_dense_bwd(n, l->in_c, l->out_c, in, c->params[l->weight], dy, dx,
                               c->grads[l->weight], c->grads[l->bias]);
        break;
    case ORDO_NN_CONV: {
        ordo__conv_t g;
        conv_geometry(c, l, &g);
        ordo__kernels_conv2d_bwd(&g, in, c->params[l->weight], dy, dx, c->grads[l->weight],
                                c->grads[l->bias], c->col);
        break;
    }
    case ORDO_NN_RELU:
        if (dx) ordo__kernels_relu_bwd(n * ordo__nn_layer_in_len(l), in, dy, dx);
        break;
    case ORDO_NN_POOL:
        if (dx) ordo__kernels_maxpool_bwd((int64_t)n * l->in_c, l->in_h, l->in_w, dy, c->arg[o], dx);
        break;
    case ORDO_NN_XENT:
        if (dx) ordo__kernels_xent_bwd(n, l->in_c, c->out[o], c->labels, dx);
        break;
    }
    c->bwd_done[o] = true;
    return 0;
}

static int cpu_loss(void *impl, double *loss, int *correct)
{
    cpu_t *c = impl;
    int last = c->m->n_ops - 1;
    if (!c->fwd_done[last])
        return ordo__error_set(ORDO_ERR_INVAL, "compute cpu: no loss before a complete forward pass");
    *loss = c->loss;
    *correct = c->correct;
    return 0;
}

static const ordo__compute_ops_t cpu_ops = {
    .bind = cpu_bind,
    .set_batch = cpu_set_batch,
    .forward = cpu_forward,
    .backward = cpu_backward,
    .loss = cpu_loss,
    .destroy = cpu_destroy,
};

int ordo__compute_cpu_new(const ordo__model_t *m, void **impl, const ordo__compute_ops_t **ops)
{
    int rc;
    const size_t n_ops = (size_t)m->n_ops;
    cpu_t *c = calloc(1, sizeof *c);
    if (!c) return ordo__error_set(ORDO_ERR_NOMEM, "compute cpu: out of memory");
    c->m = m;
    if ((rc = ordo__nn_layers(m, &c->layers)) < 0) goto fail;
    c->out = calloc(n_ops, sizeof *c->out);
    c->dout = calloc(n_ops, sizeof *c->dout);
    c->arg = calloc(n_ops, sizeof *c->arg);
    c->consumer = malloc(n_ops * sizeof *c->consumer);
    c->fwd_done = calloc(n_ops, sizeof *c->fwd_done);
    c->bwd_done = calloc(n_ops, sizeof *c->bwd_done);
    if (!c->out || !c->dout || !c->arg || !c->consumer || !c->fwd_done || !c->bwd_done) goto nomem;
    int64_t col_len = 0;
    for (int o = 0; o < m->n_ops; o++) {
        const ordo__nn_layer_t *l = &c->layers[o];
        c->consumer[o] = -1;
        if (l->input >= 0) c->consumer[l->input] = o;
        /* The loss op's output buffer holds the softmax of its input. */
        int64_t len = (int64_t)m->batch * (l->kind == ORDO_NN_XENT ? ordo__nn_layer_in_len(l)
                                                                   : ordo__nn_layer_out_len(l));
        c->out[o] = malloc(sizeof(float) * (size_t)len);
        c->dout[o] = malloc(sizeof(float) * (size_t)len);
        if (!c->out[o] || !c->dout[o]) goto nomem;
        if (l->kind == ORDO_NN_POOL &&
            !(c->arg[o] = malloc(sizeof(int32_t) * (size_t)(m->batch * ordo__nn_layer_out_len(l)))))
            goto nomem;
        if (l->kind == ORDO_NN_CONV) {
            int64_t len1 = (int64_t)l->in_c * l->k * l->k * l->out_h * l->out_w;
            if (len1 > col_len) col_len = len1;
        }
    }
    if (col_len > 0 && !(c->col = malloc(sizeof(float) * (size_t)col_len))) goto nomem;
    ordo__kernels_set_threads(1);
    *impl = c;
    *ops = &cpu_ops;
    return 0;
nomem:
    rc = ordo__error_set(ORDO_ERR_NOMEM, "compute cpu: out of memory for model %s (batch %d)", m->name,
                        m->batch);
fail:
    cpu_destroy(c);
    return rc;
}
