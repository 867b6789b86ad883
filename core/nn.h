/* nn: the built-in trainable networks (mlp, cnn) expressed as ordo models, so the executor,
 * the planners and key partitioning treat them like any profile; the layer table that tells
 * a compute backend which kernel runs each op; deterministic parameter initialization; and
 * the SGD-with-momentum update that the servers and the local reference trainer share. */
#ifndef ORDO_NN_H
#define ORDO_NN_H

#include <stdint.h>

#include "core/model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The networks read Fashion-MNIST images: one channel of 28 x 28, 10 classes. */
#define ORDO_NN_IN_C    1
#define ORDO_NN_IN_H    28
#define ORDO_NN_IN_W    28
#define ORDO_NN_CLASSES 10
/* The per-worker batch of mlp and cnn when the conf leaves model.batch at 0. */
#define ORDO_NN_DEFAULT_BATCH 64

/* An op's kind comes from its name's prefix: "fc" (dense), "conv", "relu", "pool" (2x2
 * max-pool, stride 2), "loss" (softmax cross-entropy, the last op). */
typedef enum {
    ORDO_NN_DENSE,
    ORDO_NN_CONV,
    ORDO_NN_RELU,
    ORDO_NN_POOL,
    ORDO_NN_XENT,
} ordo__nn_kind_t;

/* ordo__nn_layer_t describes how to run one op of a model on a batch; shapes are per sample.
 * A dense layer's input and output are flat (h = w = 1, c = features). */
typedef struct ordo__nn_layer {
    ordo__nn_kind_t kind;
    int input;               /* index of the op producing the input; -1 = the data batch */
    int weight, bias;        /* parameter indices (dense, conv), else -1 */
    int in_c, in_h, in_w;    /* input shape */
    int out_c, out_h, out_w; /* output shape */
    int k, pad;              /* conv: kernel side and zero padding (k / 2, "same") */
} ordo__nn_layer_t;

/* ordo__nn_model builds the named built-in network ("mlp": 784-256-128-10 with ReLUs; "cnn":
 * conv5x5(16)-relu-pool, conv5x5(32)-relu-pool, fc 1568-128-relu, fc 128-10) for per-worker
 * batch batch; *out owns a checked model whose op times are FLOP-based estimates. */
int ordo__nn_model(const char *name, int batch, ordo__model_t **out);

/* ordo__nn_layers derives the layer table of m (one entry per op) into *out, a malloc'd array
 * the caller frees. Fails with ORDO_ERR_NOTSUP, naming the op, when m is not a chain of the
 * kinds above ending in "loss" with shapes that fit a 1x28x28 input and 10 classes. */
int ordo__nn_layers(const ordo__model_t *m, ordo__nn_layer_t **out);

/* ordo__nn_layer_in_len and ordo__nn_layer_out_len return the floats per sample of a layer's
 * input and output. */
int64_t ordo__nn_layer_in_len(const ordo__nn_layer_t *l);
int64_t ordo__nn_layer_out_len(const ordo__nn_layer_t *l);

/* ordo__nn_init fills params[i] (m->params[i].numel floats each, caller-owned) from seed:
 * weights (2 or more dims) He-uniform in +-sqrt(6 / fan_in), fan_in = numel / shape[0];
 * biases (1 dim) zero. The same seed gives the same values everywhere. */
void ordo__nn_init(const ordo__model_t *m, uint64_t seed, float *const *params);

/* ordo__nn_sgd_update applies one SGD-with-momentum step (PyTorch's form, no dampening) to n
 * elements, in float, in exactly this order per element:
 *     d = g + weight_decay * w;   v = momentum * v + d;   w = w - lr * v
 * v starts at zero. Servers call this on their shards so that a distributed run and the
 * local reference trainer compute the same values. */
void ordo__nn_sgd_update(int64_t n, float *w, float *v, const float *g, float lr, float momentum,
                        float weight_decay);

#ifdef __cplusplus
}
#endif

#endif
