/* train: the single-process reference trainer and test-set evaluation for the built-in
 * networks. The trainer simulates W data-parallel workers in one process exactly as a
 * cluster computes them: worker w takes its next batch from its own shard iterator
 * (worker/dataset.h, same seed), computes its mean-over-batch gradient with a compute
 * backend, the gradients are averaged over workers (summed in worker order, then multiplied
 * by 1/W, in float) and one SGD-with-momentum step (ordo_nn_sgd_update) is applied. With
 * the same seed, a distributed run's parameters match these. */
#ifndef ORDO_TRAIN_H
#define ORDO_TRAIN_H

#include <stdbool.h>
#include <stdint.h>

#include "core/model.h"
#include "worker/compute.h"
#include "worker/dataset.h"

typedef struct ordo_train_opts {
    const char *network;  /* "mlp" or "cnn" */
    const char *data_dir; /* Fashion-MNIST IDX files (ordo_dataset_load) */
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
} ordo_train_opts_t;

typedef struct ordo_train_result {
    long iterations;
    double last_loss;     /* mean training loss over the last iteration's workers */
    double test_loss;     /* over the whole test set */
    double test_accuracy; /* fraction in [0, 1] */
    double train_seconds; /* training only (no data loading, no evaluation) */
    double samples_per_s; /* training samples per second */
} ordo_train_result_t;

typedef struct ordo_train ordo_train_t;

/* ordo_train_new loads the training set, builds the network and its W contexts and
 * initializes parameters with ordo_nn_init(seed). *out owns everything. */
int ordo_train_new(const ordo_train_opts_t *o, ordo_train_t **out);

/* ordo_train_step runs one global iteration (W worker batches, one SGD step) and returns the
 * mean of the workers' losses in *loss (may be NULL). */
int ordo_train_step(ordo_train_t *t, double *loss);

/* ordo_train_model returns the network's model (owned by t). */
const ordo_model_t *ordo_train_model(const ordo_train_t *t);

/* ordo_train_params returns the current parameter buffers, one per model parameter, owned
 * by t. */
float *const *ordo_train_params(const ordo_train_t *t);

/* ordo_train_iterations_per_epoch returns the global iterations of one epoch. */
long ordo_train_iterations_per_epoch(const ordo_train_t *t);

/* ordo_train_test evaluates the current parameters on the test set in data_dir. */
int ordo_train_test(ordo_train_t *t, double *loss, double *accuracy);

/* ordo_train_destroy frees *t and sets it to NULL; NULL-safe. */
void ordo_train_destroy(ordo_train_t **t);

/* ordo_train_evaluate_first is ordo_train_evaluate over the first limit samples of ds (0:
 * all of them): a cheaper estimate for evaluations during a run ([model] eval_samples). */
int ordo_train_evaluate_first(ordo_compute_ctx_t *c, const ordo_model_t *m,
                              const ordo_dataset_t *ds, int64_t limit, double *loss,
                              double *accuracy);

/* ordo_train_local trains as the options say (new, steps, test, destroy) and fills *res. */
int ordo_train_local(const ordo_train_opts_t *o, ordo_train_result_t *res);

/* ordo_train_evaluate runs forward passes of c (already bound to parameter buffers) over
 * every sample of ds in order, in batches of m->batch (the last may be smaller), and
 * returns the mean loss per sample and the fraction classified right. */
int ordo_train_evaluate(ordo_compute_ctx_t *c, const ordo_model_t *m, const ordo_dataset_t *ds,
                        double *loss, double *accuracy);

#endif
