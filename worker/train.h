/* train: the single-process reference trainer and test-set evaluation for the built-in
 * networks. The trainer simulates W data-parallel workers in one process exactly as a
 * cluster computes them: worker w takes its next batch from its own shard iterator
 * (worker/dataset.h, same seed), computes its mean-over-batch gradient with a compute
 * backend, the gradients are averaged over workers (summed in worker order, then multiplied
 * by 1/W, in float) and one SGD-with-momentum step (ordo__nn_sgd_update) is applied. With
 * the same seed, a distributed run's parameters match these. */
#ifndef ORDO_TRAIN_H
#define ORDO_TRAIN_H

#include <stdbool.h>
#include <stdint.h>

#include "core/model.h"
#include "worker/compute.h"
#include "worker/dataset.h"

typedef struct ordo__train_opts {
    const char *network;  /* "mlp" or "cnn" */
    const char *data_dir; /* Fashion-MNIST IDX files (ordo__dataset_load) */
    int kind;             /* backend: ORDO_COMPUTE_CPU or ORDO_COMPUTE_CUDA */
    int workers;          /* simulated workers W >= 1; global batch = W * batch */
    int batch;            /* per-worker batch */
    int epochs;           /* used when iterations is 0 */
    long iterations;      /* > 0: exactly this many iterations */
    uint64_t seed;        /* parameter initialization and data order */
    double lr, momentum, weight_decay;
    int local_size;       /* > 1: the workers sum in host groups of this many first (each
                             group's members in order, as [intra] does), then the servers sum
                             the groups' sums in group order; 0 or 1: every worker's in order */
} ordo__train_opts_t;

typedef struct ordo__train_result {
    long iterations;
    double last_loss;     /* mean training loss over the last iteration's workers */
    double test_loss;     /* over the whole test set */
    double test_accuracy; /* fraction in [0, 1] */
    double train_seconds; /* training only (no data loading, no evaluation) */
    double samples_per_s; /* training samples per second */
} ordo__train_result_t;

typedef struct ordo__train ordo__train_t;

/* ordo__train_new loads the training set, builds the network and its W contexts and
 * initializes parameters with ordo__nn_init(seed). *out owns everything. */
int ordo__train_new(const ordo__train_opts_t *o, ordo__train_t **out);

/* ordo__train_step runs one global iteration (W worker batches, one SGD step) and returns the
 * mean of the workers' losses in *loss (may be NULL). */
int ordo__train_step(ordo__train_t *t, double *loss);

/* ordo__train_model returns the network's model (owned by t). */
const ordo__model_t *ordo__train_model(const ordo__train_t *t);

/* ordo__train_params returns the current parameter buffers, one per model parameter, owned
 * by t. */
float *const *ordo__train_params(const ordo__train_t *t);

/* ordo__train_iterations_per_epoch returns the global iterations of one epoch. */
long ordo__train_iterations_per_epoch(const ordo__train_t *t);

/* ordo__train_test evaluates the current parameters on the test set in data_dir. */
int ordo__train_test(ordo__train_t *t, double *loss, double *accuracy);

/* ordo__train_destroy frees *t and sets it to NULL; NULL-safe. */
void ordo__train_destroy(ordo__train_t **t);

/* ordo__train_evaluate_first is ordo__train_evaluate over the first limit samples of ds (0:
 * all of them): a cheaper estimate for evaluations during a run ([model] eval_samples). */
int ordo__train_evaluate_first(ordo__compute_ctx_t *c, const ordo__model_t *m,
                              const ordo__dataset_t *ds, int64_t limit, double *loss,
                              double *accuracy);

/* ordo__train_local trains as the options say (new, steps, test, destroy) and fills *res. */
int ordo__train_local(const ordo__train_opts_t *o, ordo__train_result_t *res);

/* ordo__train_evaluate runs forward passes of c (already bound to parameter buffers) over
 * every sample of ds in order, in batches of m->batch (the last may be smaller), and
 * returns the mean loss per sample and the fraction classified right. */
int ordo__train_evaluate(ordo__compute_ctx_t *c, const ordo__model_t *m, const ordo__dataset_t *ds,
                        double *loss, double *accuracy);

#endif
