/* train: the local reference trainer (W simulated workers, one process) and evaluation. */
#include "worker/train.h"

#include "common/clock.h"
#include "common/error.h"
#include "core/nn.h"

#include <stdlib.h>
#include <string.h>

struct ordo__train {
    ordo__train_opts_t o;
    ordo__model_t *m;
    ordo__dataset_t *train;
    ordo__dataset_iter_t **iters; /* one per simulated worker */
    ordo__compute_ctx_t *c;
    float **params, **velocity, **grads, **acc; /* per model parameter */
    float **group; /* local_size > 1: the current host group's sum, per model parameter */
    long per_epoch;
    long done;
};

static int check_input(const ordo__dataset_t *ds, const char *what)
{
    if (ordo__dataset_rows(ds) != ORDO_NN_IN_H || ordo__dataset_cols(ds) != ORDO_NN_IN_W)
        return ordo__error_set(ORDO_ERR_FORMAT, "%s: images are %dx%d, the networks read %dx%d", what,
                              ordo__dataset_rows(ds), ordo__dataset_cols(ds), ORDO_NN_IN_H,
                              ORDO_NN_IN_W);
    return 0;
}

static float **alloc_set(const ordo__model_t *m)
{
    float **set = calloc((size_t)m->n_params, sizeof *set);
    if (!set) return NULL;
    for (int p = 0; p < m->n_params; p++) {
        if (!(set[p] = calloc((size_t)m->params[p].numel, sizeof(float)))) {
            for (int q = 0; q < p; q++)
                free(set[q]);
            free(set);
            return NULL;
        }
    }
    return set;
}

static void free_set(const ordo__model_t *m, float **set)
{
    for (int p = 0; set && p < m->n_params; p++)
        free(set[p]);
    free(set);
}

void ordo__train_destroy(ordo__train_t **tp)
{
    if (!tp || !*tp) return;
    ordo__train_t *t = *tp;
    ordo__compute_destroy(&t->c);
    for (int w = 0; t->iters && w < t->o.workers; w++)
        ordo__dataset_iter_destroy(&t->iters[w]);
    free(t->iters);
    if (t->m) {
        free_set(t->m, t->params);
        free_set(t->m, t->velocity);
        free_set(t->m, t->grads);
        free_set(t->m, t->acc);
        free_set(t->m, t->group);
    }
    ordo__dataset_destroy(&t->train);
    ordo__model_destroy(&t->m);
    free(t);
    *tp = NULL;
}

int ordo__train_new(const ordo__train_opts_t *o, ordo__train_t **out)
{
    int rc;
    if (!o || !o->network || !o->data_dir || o->workers < 1 || o->batch < 1 ||
        (o->iterations <= 0 && o->epochs <= 0) || !(o->lr > 0) || o->momentum < 0 ||
        o->weight_decay < 0)
        return ordo__error_set(ORDO_ERR_INVAL, "train: bad options (network, data_dir, workers >= 1, "
                                           "batch >= 1, iterations or epochs, lr > 0)");
    ordo__train_t *t = calloc(1, sizeof *t);
    if (!t) return ordo__error_set(ORDO_ERR_NOMEM, "train: out of memory");
    t->o = *o;
    if ((rc = ordo__nn_model(o->network, o->batch, &t->m)) < 0 ||
        (rc = ordo__dataset_load(o->data_dir, ORDO_DATASET_TRAIN, &t->train)) < 0 ||
        (rc = check_input(t->train, o->data_dir)) < 0)
        goto fail;
    t->iters = calloc((size_t)o->workers, sizeof *t->iters);
    t->params = alloc_set(t->m);
    t->velocity = alloc_set(t->m);
    t->grads = alloc_set(t->m);
    t->acc = alloc_set(t->m);
    t->group = o->local_size > 1 ? alloc_set(t->m) : NULL;
    if (!t->iters || !t->params || !t->velocity || !t->grads || !t->acc ||
        (o->local_size > 1 && !t->group)) {
        rc = ordo__error_set(ORDO_ERR_NOMEM, "train: out of memory for %s", o->network);
        goto fail;
    }
    for (int w = 0; w < o->workers; w++)
        if ((rc = ordo__dataset_iter_new(t->train, w, o->workers, o->batch, o->seed, &t->iters[w])) <
            0)
            goto fail;
    t->per_epoch = (long)ordo__dataset_iter_batches_per_epoch(t->iters[0]);
    if ((rc = ordo__compute_new(o->kind, t->m, 1.0, &t->c)) < 0 ||
        (rc = ordo__compute_bind(t->c, t->params, t->grads)) < 0)
        goto fail;
    ordo__nn_init(t->m, o->seed, t->params);
    *out = t;
    return 0;
fail:
    ordo__train_destroy(&t);
    return rc;
}

int ordo__train_step(ordo__train_t *t, double *loss)
{
    const ordo__model_t *m = t->m;
    const int W = t->o.workers;
    double loss_sum = 0;
    int rc;
    for (int p = 0; p < m->n_params; p++)
        memset(t->acc[p], 0, sizeof(float) * (size_t)m->params[p].numel);
    for (int w = 0; w < W; w++) {
        const float *x;
        const int *y;
        int n = ordo__dataset_iter_next(t->iters[w], &x, &y);
        if ((rc = ordo__compute_set_batch(t->c, x, y, n)) < 0) return rc;
        for (int op = 0; op < m->n_ops; op++)
            if ((rc = ordo__compute_forward(t->c, op)) < 0) return rc;
        double l;
        int correct;
        if ((rc = ordo__compute_loss(t->c, &l, &correct)) < 0) return rc;
        loss_sum += l;
        for (int op = m->n_ops - 1; op >= 0; op--)
            if ((rc = ordo__compute_backward(t->c, op)) < 0) return rc;
        /* What a server does with the W pushes: sum them in arrival order (here worker
         * order) into a zeroed float accumulator; in host groups each group's members are
         * summed first, in member order, and the server sums the groups' sums */
        const int L = t->o.local_size > 1 ? t->o.local_size : 1;
        for (int p = 0; p < m->n_params; p++) {
            float *restrict a = L > 1 ? t->group[p] : t->acc[p];
            const float *restrict g = t->grads[p];
            int64_t n = m->params[p].numel;
            if (L > 1 && w % L == 0)
                memcpy(a, g, sizeof(float) * (size_t)n);
            else
                for (int64_t i = 0; i < n; i++) a[i] += g[i];
            if (L > 1 && w % L == L - 1) {
                float *restrict s = t->acc[p];
                for (int64_t i = 0; i < n; i++) s[i] += a[i];
            }
        }
    }
    /* The mean as the servers form it (server/optim.c): the sum times 1/W, in float. */
    const float scale = 1.0f / (float)W;
    for (int p = 0; p < m->n_params; p++) {
        float *restrict a = t->acc[p];
        for (int64_t i = 0; i < m->params[p].numel; i++)
            a[i] *= scale;
        ordo__nn_sgd_update(m->params[p].numel, t->params[p], t->velocity[p], a, (float)t->o.lr,
                           (float)t->o.momentum, (float)t->o.weight_decay);
    }
    t->done++;
    if (loss) *loss = loss_sum / W;
    return 0;
}

const ordo__model_t *ordo__train_model(const ordo__train_t *t)
{
    return t->m;
}

float *const *ordo__train_params(const ordo__train_t *t)
{
    return t->params;
}

long ordo__train_iterations_per_epoch(const ordo__train_t *t)
{
    return t->per_epoch;
}

int ordo__train_evaluate(ordo__compute_ctx_t *c, const ordo__model_t *m, const ordo__dataset_t *ds,
                        double *loss, double *accuracy)
{
    return ordo__train_evaluate_first(c, m, ds, 0, loss, accuracy);
}

int ordo__train_evaluate_first(ordo__compute_ctx_t *c, const ordo__model_t *m,
                              const ordo__dataset_t *ds, int64_t limit, double *loss,
                              double *accuracy)
{
    int rc = check_input(ds, "evaluation set");
    if (rc < 0) return rc;
    int64_t count = ordo__dataset_count(ds);
    if (limit > 0 && limit < count) count = limit;
    float *x = malloc(sizeof(float) * (size_t)m->batch * ORDO_NN_IN_H * ORDO_NN_IN_W);
    int *y = malloc(sizeof(int) * (size_t)m->batch);
    if (!x || !y) {
        rc = ordo__error_set(ORDO_ERR_NOMEM, "evaluate: out of memory");
        goto done;
    }
    double loss_sum = 0;
    int64_t right = 0;
    for (int64_t first = 0; first < count; first += m->batch) {
        int n = count - first < m->batch ? (int)(count - first) : m->batch;
        ordo__dataset_get(ds, first, n, x, y);
        if ((rc = ordo__compute_set_batch(c, x, y, n)) < 0) goto done;
        for (int op = 0; op < m->n_ops; op++)
            if ((rc = ordo__compute_forward(c, op)) < 0) goto done;
        double l;
        int k;
        if ((rc = ordo__compute_loss(c, &l, &k)) < 0) goto done;
        loss_sum += l * n;
        right += k;
    }
    *loss = count ? loss_sum / (double)count : 0.0;
    *accuracy = count ? (double)right / (double)count : 0.0;
done:
    free(x);
    free(y);
    return rc;
}

int ordo__train_test(ordo__train_t *t, double *loss, double *accuracy)
{
    ordo__dataset_t *test = NULL;
    int rc = ordo__dataset_load(t->o.data_dir, ORDO_DATASET_TEST, &test);
    if (rc < 0) return rc;
    rc = ordo__train_evaluate(t->c, t->m, test, loss, accuracy);
    ordo__dataset_destroy(&test);
    return rc;
}

int ordo__train_local(const ordo__train_opts_t *o, ordo__train_result_t *res)
{
    ordo__train_t *t = NULL;
    int rc = ordo__train_new(o, &t);
    if (rc < 0) return rc;
    ordo__train_result_t r = {0};
    long total = o->iterations > 0 ? o->iterations : (long)o->epochs * t->per_epoch;
    int64_t start = ordo__clock_ns();
    for (long i = 0; i < total; i++)
        if ((rc = ordo__train_step(t, &r.last_loss)) < 0) goto done;
    r.train_seconds = (double)(ordo__clock_ns() - start) * 1e-9;
    r.iterations = total;
    r.samples_per_s =
        r.train_seconds > 0 ? (double)total * o->workers * o->batch / r.train_seconds : 0.0;
    if ((rc = ordo__train_test(t, &r.test_loss, &r.test_accuracy)) < 0) goto done;
    *res = r;
done:
    ordo__train_destroy(&t);
    return rc;
}
