/* nn: builds the built-in networks with the model builder, derives the per-op layer table
 * the CPU and CUDA backends run, initializes parameters and implements the optimizer step. */
#include "core/nn.h"

#include "common/error.h"
#include "common/rng.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Op-time estimates feed only the planners: a dense or conv op at 20 GFLOP/s, elementwise
 * ops at 1 element/ns, backward twice the forward. */
#define EST_FLOPS_PER_US 2e4
#define EST_ELEMS_PER_US 1e3

static double flops_us(double flops)
{
    double us = flops / EST_FLOPS_PER_US;
    return us < 1.0 ? 1.0 : us;
}

static double elems_us(double elems)
{
    double us = elems / EST_ELEMS_PER_US;
    return us < 1.0 ? 1.0 : us;
}

/* ---- building ---------------------------------------------------------------------------- */

typedef struct builder {
    ordo__model_t *m;
    const char *prev; /* name of the last op added; NULL = the data batch */
    int c, h, w;      /* per-sample shape of prev's output */
    int rc;
} builder_t;

static void add_op(builder_t *b, const char *name, int n_params, const char *const *params,
                   double fwd_us, double bwd_us)
{
    if (b->rc < 0) return;
    const char *in[1] = {b->prev};
    int rc = ordo__model_add_op(b->m, name, b->prev ? 1 : 0, in, n_params, params, fwd_us, bwd_us);
    if (rc < 0) {
        b->rc = rc;
        return;
    }
    b->prev = b->m->ops[rc].name;
}

static void add_weighted(builder_t *b, const char *name, int ndim, const int64_t *shape,
                         int64_t bias_len, double flops)
{
    char wname[64], bname[64];
    snprintf(wname, sizeof wname, "%s.w", name);
    snprintf(bname, sizeof bname, "%s.b", name);
    if (b->rc >= 0 && (b->rc = ordo__model_add_param(b->m, wname, ndim, shape)) >= 0)
        b->rc = ordo__model_add_param(b->m, bname, 1, &bias_len);
    const char *params[2] = {wname, bname};
    add_op(b, name, 2, params, flops_us(flops), flops_us(2 * flops));
}

static void add_dense(builder_t *b, const char *name, int out)
{
    int64_t in = (int64_t)b->c * b->h * b->w;
    int64_t shape[2] = {out, in};
    add_weighted(b, name, 2, shape, out, 2.0 * b->m->batch * (double)in * out);
    b->c = out;
    b->h = b->w = 1;
}

static void add_conv(builder_t *b, const char *name, int out_c, int k)
{
    int64_t shape[4] = {out_c, b->c, k, k};
    double flops = 2.0 * b->m->batch * out_c * b->c * k * k * (double)b->h * b->w;
    add_weighted(b, name, 4, shape, out_c, flops);
    b->c = out_c;
}

static void add_plain(builder_t *b, const char *name)
{
    double elems = (double)b->m->batch * b->c * b->h * b->w;
    add_op(b, name, 0, NULL, elems_us(elems), elems_us(elems));
    if (strncmp(name, "pool", 4) == 0) {
        b->h /= 2;
        b->w /= 2;
    }
}

int ordo__nn_model(const char *name, int batch, ordo__model_t **out)
{
    if (!name || (strcmp(name, "mlp") != 0 && strcmp(name, "cnn") != 0))
        return ordo__error_set(ORDO_ERR_NOTFOUND, "no built-in network '%s' (mlp or cnn)",
                              name ? name : "(null)");
    if (batch < 1)
        return ordo__error_set(ORDO_ERR_INVAL, "network %s: batch %d must be >= 1", name, batch);
    builder_t b = {.c = ORDO_NN_IN_C, .h = ORDO_NN_IN_H, .w = ORDO_NN_IN_W};
    b.m = ordo__model_new(name, batch, "float32");
    if (!b.m) return ordo__error_set(ORDO_ERR_NOMEM, "network %s: out of memory", name);
    if (strcmp(name, "mlp") == 0) {
        add_dense(&b, "fc1", 256);
        add_plain(&b, "relu1");
        add_dense(&b, "fc2", 128);
        add_plain(&b, "relu2");
        add_dense(&b, "fc3", ORDO_NN_CLASSES);
    } else {
        add_conv(&b, "conv1", 16, 5);
        add_plain(&b, "relu1");
        add_plain(&b, "pool1");
        add_conv(&b, "conv2", 32, 5);
        add_plain(&b, "relu2");
        add_plain(&b, "pool2");
        add_dense(&b, "fc1", 128);
        add_plain(&b, "relu3");
        add_dense(&b, "fc2", ORDO_NN_CLASSES);
    }
    add_plain(&b, "loss");
    if (b.rc >= 0) b.rc = ordo__model_check(b.m);
    if (b.rc < 0) {
        ordo__model_destroy(&b.m);
        return b.rc;
    }
    *out = b.m;
    return 0;
}

/* ---- layer table ------------------------------------------------------------------------- */

static int kind_of(const char *name, ordo__nn_kind_t *kind)
{
    static const struct {
        const char *prefix;
        ordo__nn_kind_t kind;
    } kinds[] = {{"fc", ORDO_NN_DENSE},
                 {"conv", ORDO_NN_CONV},
                 {"relu", ORDO_NN_RELU},
                 {"pool", ORDO_NN_POOL},
                 {"loss", ORDO_NN_XENT}};
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
        if (strncmp(name, kinds[i].prefix, strlen(kinds[i].prefix)) == 0) {
            *kind = kinds[i].kind;
            return 0;
        }
    }
    return -1;
}

int64_t ordo__nn_layer_in_len(const ordo__nn_layer_t *l)
{
    return (int64_t)l->in_c * l->in_h * l->in_w;
}

int64_t ordo__nn_layer_out_len(const ordo__nn_layer_t *l)
{
    return (int64_t)l->out_c * l->out_h * l->out_w;
}

#define UNSUP(...) ordo__error_set(ORDO_ERR_NOTSUP, __VA_ARGS__)

/* weighted checks a dense or conv op's two parameters: a weight of ndim dims whose shape
 * after the first dim is want[] and a bias as long as the weight's first dim. */
static int weighted(const ordo__model_t *m, const ordo__model_op_t *op, int ndim, const int64_t *want,
                    ordo__nn_layer_t *l)
{
    if (op->n_params != 2)
        return UNSUP("model %s: op '%s' needs 2 parameters (weight, bias), has %d", m->name,
                     op->name, op->n_params);
    const ordo__model_param_t *w = &m->params[op->params[0]], *b = &m->params[op->params[1]];
    int ok = w->ndim == ndim && b->ndim == 1 && b->shape[0] == w->shape[0];
    for (int d = 1; ok && d < ndim; d++)
        ok = want[d - 1] < 0 || w->shape[d] == want[d - 1];
    if (!ok || w->shape[0] > (1 << 24))
        return UNSUP("model %s: op '%s': parameters '%s' and '%s' do not fit its %lld-float "
                     "input",
                     m->name, op->name, w->name, b->name, (long long)ordo__nn_layer_in_len(l));
    l->weight = op->params[0];
    l->bias = op->params[1];
    return 0;
}

int ordo__nn_layers(const ordo__model_t *m, ordo__nn_layer_t **out)
{
    int rc = 0;
    ordo__nn_layer_t *ls = calloc((size_t)m->n_ops, sizeof *ls);
    int *users = calloc((size_t)m->n_ops, sizeof *users);
    if (!ls || !users) {
        rc = ordo__error_set(ORDO_ERR_NOMEM, "model %s: out of memory", m->name);
        goto fail;
    }
    for (int o = 0; o < m->n_ops; o++) {
        const ordo__model_op_t *op = &m->ops[o];
        ordo__nn_layer_t *l = &ls[o];
        if (kind_of(op->name, &l->kind) < 0) {
            rc = UNSUP("model %s: op '%s' is not a kind the compute backends run "
                       "(fc*, conv*, relu*, pool*, loss*)",
                       m->name, op->name);
            goto fail;
        }
        if (op->n_inputs > 1) {
            rc = UNSUP("model %s: op '%s' has %d inputs; only chains are supported", m->name,
                       op->name, op->n_inputs);
            goto fail;
        }
        l->input = op->n_inputs ? op->inputs[0] : -1;
        l->weight = l->bias = -1;
        if (l->input < 0) {
            l->in_c = ORDO_NN_IN_C;
            l->in_h = ORDO_NN_IN_H;
            l->in_w = ORDO_NN_IN_W;
        } else {
            users[l->input]++;
            l->in_c = ls[l->input].out_c;
            l->in_h = ls[l->input].out_h;
            l->in_w = ls[l->input].out_w;
        }
        l->out_c = l->in_c;
        l->out_h = l->in_h;
        l->out_w = l->in_w;
        if (l->kind != ORDO_NN_DENSE && l->kind != ORDO_NN_CONV && op->n_params != 0) {
            rc = UNSUP("model %s: op '%s' must have no parameters", m->name, op->name);
            goto fail;
        }
        switch (l->kind) {
        case ORDO_NN_DENSE: {
            /* A dense layer flattens its input (NCHW order). */
            l->in_c = (int)ordo__nn_layer_in_len(l);
            l->in_h = l->in_w = 1;
            int64_t want[1] = {l->in_c};
            if ((rc = weighted(m, op, 2, want, l)) < 0) goto fail;
            l->out_c = (int)m->params[l->weight].shape[0];
            l->out_h = l->out_w = 1;
            break;
        }
        case ORDO_NN_CONV: {
            int64_t want[3] = {l->in_c, -1, -1};
            if ((rc = weighted(m, op, 4, want, l)) < 0) goto fail;
            const ordo__model_param_t *w = &m->params[l->weight];
            if (w->shape[2] != w->shape[3] || w->shape[2] % 2 == 0 || w->shape[2] > l->in_h ||
                w->shape[2] > l->in_w) {
                rc = UNSUP("model %s: op '%s': kernel %lldx%lld must be square, odd and fit "
                           "the %dx%d input",
                           m->name, op->name, (long long)w->shape[2], (long long)w->shape[3],
                           l->in_h, l->in_w);
                goto fail;
            }
            l->k = (int)w->shape[2];
            l->pad = l->k / 2;
            l->out_c = (int)w->shape[0];
            break;
        }
        case ORDO_NN_POOL:
            if (l->in_h % 2 || l->in_w % 2) {
                rc = UNSUP("model %s: op '%s': 2x2 pooling needs an even input, not %dx%d", m->name,
                           op->name, l->in_h, l->in_w);
                goto fail;
            }
            l->out_h = l->in_h / 2;
            l->out_w = l->in_w / 2;
            break;
        case ORDO_NN_XENT:
            if (o != m->n_ops - 1 || ordo__nn_layer_in_len(l) != ORDO_NN_CLASSES) {
                rc = UNSUP("model %s: op '%s': the loss must be the last op and read %d "
                           "logits",
                           m->name, op->name, ORDO_NN_CLASSES);
                goto fail;
            }
            l->out_c = l->out_h = l->out_w = 1;
            break;
        case ORDO_NN_RELU:
            break;
        }
    }
    if (ls[m->n_ops - 1].kind != ORDO_NN_XENT) {
        rc = UNSUP("model %s: the last op '%s' must be the loss", m->name,
                   m->ops[m->n_ops - 1].name);
        goto fail;
    }
    for (int o = 0; o < m->n_ops - 1; o++) {
        if (users[o] != 1) {
            rc = UNSUP("model %s: op '%s' feeds %d ops; each op but the loss must feed "
                       "exactly one",
                       m->name, m->ops[o].name, users[o]);
            goto fail;
        }
    }
    free(users);
    *out = ls;
    return 0;
fail:
    free(users);
    free(ls);
    return rc;
}

/* ---- initialization and optimizer -------------------------------------------------------- */

void ordo__nn_init(const ordo__model_t *m, uint64_t seed, float *const *params)
{
    for (int p = 0; p < m->n_params; p++) {
        const ordo__model_param_t *mp = &m->params[p];
        float *restrict v = params[p];
        if (mp->ndim < 2) {
            memset(v, 0, sizeof(float) * (size_t)mp->numel);
            continue;
        }
        double bound = sqrt(6.0 / (double)(mp->numel / mp->shape[0]));
        ordo__rng_t r;
        ordo__rng_seed2(&r, seed, (uint64_t)p);
        for (int64_t i = 0; i < mp->numel; i++)
            v[i] = (float)((2.0 * ordo__rng_uniform(&r) - 1.0) * bound);
    }
}

void ordo__nn_sgd_update(int64_t n, float *restrict w, float *restrict v, const float *restrict g,
                        float lr, float momentum, float weight_decay)
{
    for (int64_t i = 0; i < n; i++) {
        float d = g[i] + weight_decay * w[i];
        v[i] = momentum * v[i] + d;
        w[i] = w[i] - lr * v[i];
    }
}
