/* run: the jobs a worker runs once it has joined the cluster. The synthetic job
 * (model.trainer = synthetic) pushes and pulls the conf's tensor list for K iterations and
 * checks every pulled value against the closed form of what the servers must hold:
 * worker w pushes (w+1)(t+1) in every element at iteration t, so with plain SGD
 * v_t = v_0 - lr * scale * W(W+1)/2 * t(t+1)/2 (under ssp, between v_{t-s} and v_t, which holds
 * with plain SGD; asp, backup workers and compressed runs are not checked), through the public
 * API's key-level calls. It also holds the start-up calibration's op timer; model jobs are run_model.c's. */
#include "worker/run.h"
#include "common/clock.h"
#include "common/conf.h"
#include "common/error.h"
#include "common/log.h"
#include "common/transport.h"
#include "core/job.h"
#include "core/nn.h"
#include "planner/oracle.h"
#include "worker/compute.h"
#include "worker/dataset.h"
#include "worker/executor.h"
#include "worker/train.h"

#include <jansson.h>
#include <unistd.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static float synth_init(int key, int64_t i)
{
    return (float)((i % 97) * 0.01 + key * 0.5);
}

/* the value every element of the synthetic job holds after v updates:
 * v0 - lr*scale*W(W+1)/2 * sum_{s<v}(s+1) */
static double synth_value(const ordo__conf_t *conf, int W, int key, int64_t i, int64_t v)
{
    double scale = conf->aggregate == ORDO_AGG_MEAN ? 1.0 / W : 1.0;
    return synth_init(key, i) - conf->lr * scale * (W * (W + 1) / 2.0) * (double)(v * (v + 1) / 2);
}

/* log_final_hash logs the FNV-1a hash of the values after the last update (worker 0 of a bsp
 * synthetic job, once it has pulled and checked them), so that two runs (one with a server
 * killed, say) can be compared bit for bit */
static void log_final_hash(ordo_t *o, float **val, int64_t updates)
{
    uint64_t h = 1469598103934665603ull;
    for (int key = 0; key < ordo_num_tensors(o); key++)
        for (int64_t i = 0; i < ordo_tensor_numel(o, key); i++) {
            const unsigned char *b = (const unsigned char *)&val[key][i];
            for (size_t j = 0; j < sizeof(float); j++)
                h = (h ^ b[j]) * 1099511628211ull;
        }
    ORDO_INFO("synthetic job: final values after %lld updates: fnv1a %016llx", (long long)updates,
              (unsigned long long)h);
}

int ordo__run_synthetic(ordo_t *o, const ordo__conf_t *conf)
{
    int n_keys = ordo_num_tensors(o);
    int rank = ordo_rank(o), W = ordo_size(o);
    float **val = calloc((size_t)n_keys + 1, sizeof *val);
    float **grad = calloc((size_t)n_keys + 1, sizeof *grad);
    int rc = 0;
    int64_t checked = 0, wrong = 0, bytes = 0;
    int64_t rejoin = ordo_resume_iter(o); /* fault.worker = restart */
    if (!val || !grad) {
        rc = ORDO_ERR_NOMEM;
        goto done;
    }
    for (int key = 0; key < n_keys; key++) {
        int64_t numel = ordo_tensor_numel(o, key);
        bytes += numel * (int64_t)sizeof(float);
        val[key] = malloc(sizeof(float) * (size_t)numel);
        grad[key] = malloc(sizeof(float) * (size_t)numel);
        if (!val[key] || !grad[key]) {
            rc = ORDO_ERR_NOMEM;
            goto done;
        }
        if (rank == 0 && rejoin < 0) {
            for (int64_t i = 0; i < numel; i++)
                val[key][i] = synth_init(key, i);
            if ((rc = ordo_init(o, key, val[key])) != 0) goto done;
        }
    }
    if (rejoin >= 0)
        ORDO_INFO("restarted: rejoining at iteration %lld with the servers' values",
                  (long long)rejoin);
    /* asp and backup workers take pushes in arrival order, and a codec rounds every push and
     * pull: no closed form to check against */
    bool compressed = strcmp(conf->compression, "none") != 0;
    bool check = conf->sync_mode != ORDO_SYNC_ASP && conf->backup == 0 && !compressed;
    if (!check)
        ORDO_INFO("synthetic job: pulled values are not checked under %s",
                  compressed ? "[push] compression (the wire rounds them)"
                             : "sync.mode = asp or sync.backup > 0");
    for (int64_t t = rejoin < 0 ? 0 : rejoin; t <= conf->iterations; t++) {
        /* after the last iteration, bsp: the final values, which must hold every push once */
        if (t == conf->iterations && (conf->sync_mode != ORDO_SYNC_BSP || !check)) break;
        int li, nl;
        int64_t since;
        if (check && ordo_members(o, &li, &nl, &since) > 0) {
            /* fault.worker = shrink: the updates are over fewer pushes from now on */
            check = false;
            ORDO_INFO("synthetic job: a worker left; values are not checked from here on");
        }
        int64_t t0 = ordo__clock_ns();
        double delay = t < conf->iterations ? ordo__conf_straggle_delay_ms(conf, rank, t) : 0;
        if (delay > 0) ordo__clock_sleep_ns((int64_t)(delay * 1e6));
        int64_t tc = ordo__clock_ns();
        for (int key = 0; key < n_keys; key++)
            if ((rc = ordo_pull(o, key, val[key], key, NULL)) != 0) goto done;
        if ((rc = ordo_wait_all(o, -1)) != 0) goto done;
        int64_t t1 = ordo__clock_ns();
        for (int key = 0; check && key < n_keys; key++)
            for (int64_t i = 0; i < ordo_tensor_numel(o, key); i++) {
                /* every push of the iterations before t - staleness is in, and none of t or
                 * later: the pushes are positive, so the value lies between those two. A
                 * restarted worker's first pull may see the iteration its predecessor had
                 * pushed already (the others' too) */
                int64_t lo = t - (conf->sync_mode == ORDO_SYNC_SSP ? conf->staleness : 0);
                int64_t hi = t == rejoin && t < conf->iterations ? t + 1 : t;
                double newest = synth_value(conf, W, key, i, hi);
                double oldest = synth_value(conf, W, key, i, lo < 0 ? 0 : lo);
                double tol = 1e-4 * (1 + fabs(newest));
                checked++;
                if (val[key][i] < newest - tol || val[key][i] > oldest + tol) {
                    if (wrong++ < 5)
                        ORDO_ERROR("iteration %lld key %d element %lld: pulled %.7g, expected %.7g "
                                   "to %.7g", (long long)t, key, (long long)i, val[key][i],
                                   newest, oldest);
                }
            }
        if (t == conf->iterations) break;
        float g = (float)((rank + 1) * (t + 1));
        for (int key = 0; key < n_keys; key++) {
            for (int64_t i = 0; i < ordo_tensor_numel(o, key); i++)
                grad[key][i] = g;
            if ((rc = ordo_push(o, key, grad[key], key, NULL)) != 0) goto done;
        }
        if ((rc = ordo_wait_all(o, -1)) != 0) goto done;
        int64_t t2 = ordo__clock_ns();
        char js[512];
        snprintf(js, sizeof js,
                 "{\"worker\":%d,\"iter\":%lld,\"step_ms\":%.4f,\"wait_ms\":%.4f,\"compute_ms\":%.4f,"
                 "\"bytes_push\":%lld,\"bytes_pull\":%lld,\"samples\":0,\"t_start_ns\":%lld,"
                 "\"t_push_done_ns\":%lld,\"t_end_ns\":%lld}",
                 rank, (long long)t, (t2 - t0) / 1e6, (t1 - tc) / 1e6, (tc - t0) / 1e6,
                 (long long)bytes, (long long)bytes, (long long)t0, (long long)t2,
                 (long long)t2);
        if ((rc = ordo_report(o, js)) != 0) goto done;
        if (conf->progress_every && (t + 1) % conf->progress_every == 0)
            ORDO_INFO("iteration %lld/%d: step %.2f ms", (long long)t + 1, conf->iterations,
                      (t2 - t0) / 1e6);
    }
    /* the loop's last pull took the final values (bsp, checked) */
    if (check && rank == 0 && conf->iterations > 0 && conf->sync_mode == ORDO_SYNC_BSP)
        log_final_hash(o, val, conf->iterations);
    ORDO_INFO("synthetic job: %d iterations, %lld pulled values checked, %lld wrong (the final "
              "values included)", conf->iterations, (long long)checked, (long long)wrong);
    if (wrong) rc = ordo__error_set(ORDO_ERR_PROTO, "%lld pulled values were wrong", (long long)wrong);
done:
    for (int key = 0; val && grad && key < n_keys; key++) {
        free(val[key]);
        free(grad[key]);
    }
    free(val);
    free(grad);
    return rc;
}

/* ---- the start-up calibration's op times -------------------------------------------- */

/* [push] calibrate with real compute: the op times for the merge planner, measured by worker
 * 0 during the start-up calibration (ordo_set_op_times; the other workers wait meanwhile) as
 * OP_TIME_PASSES forward and backward passes of one batch (the first a warm-up), each op's
 * least time, as ordo-oracle/1 text in *out (caller frees). *out stays NULL when there is
 * nothing to measure: emulated compute sleeps the profile's times, which the scheduler has,
 * and an [order] oracle file gives the times the user chose. */
#define OP_TIME_PASSES 5
int ordo__run_op_times(void *ctx, char **out)
{
    const ordo__conf_t *conf = ctx;
    *out = NULL;
    bool training = !strcmp(conf->trainer, "mlp") || !strcmp(conf->trainer, "cnn");
    int kind = training && conf->compute == ORDO_COMPUTE_EMULATE ? ORDO_COMPUTE_CPU
                                                                  : conf->compute;
    if (!conf->calibrate || conf->oracle[0] || kind == ORDO_COMPUTE_EMULATE) return 0;
    ordo__model_t *m = NULL;
    ordo__compute_ctx_t *cc = NULL;
    ordo__oracle_t *o = NULL;
    float **p = NULL, **g = NULL, *x = NULL;
    int *labels = NULL, rc;
    if ((rc = ordo__job_model(conf, &m)) != 0) goto done;
    if ((rc = ordo__compute_new(kind, m, conf->compute_scale, &cc)) != 0) goto done;
    p = calloc((size_t)m->n_params, sizeof *p);
    g = calloc((size_t)m->n_params, sizeof *g);
    x = calloc((size_t)m->batch * 28 * 28, sizeof *x);
    labels = calloc((size_t)m->batch, sizeof *labels);
    rc = p && g && x && labels ? 0 : ORDO_ERR_NOMEM;
    for (int i = 0; !rc && i < m->n_params; i++)
        if (!(p[i] = calloc((size_t)m->params[i].numel, sizeof(float))) ||
            !(g[i] = calloc((size_t)m->params[i].numel, sizeof(float))))
            rc = ORDO_ERR_NOMEM;
    if (rc) goto done;
    ordo__nn_init(m, conf->seed, p);
    if ((rc = ordo__compute_bind(cc, p, g)) != 0) goto done;
    if ((rc = ordo__compute_set_batch(cc, x, labels, m->batch)) != 0) goto done;
    if ((rc = ordo__oracle_new(m, &o)) != 0) goto done;
    double *fwd_us = calloc((size_t)m->n_ops, sizeof *fwd_us);
    if (!fwd_us) rc = ORDO_ERR_NOMEM;
    for (int pass = 0; pass < OP_TIME_PASSES && !rc; pass++) {
        for (int op = 0; op < m->n_ops && !rc; op++) {
            int64_t t0 = ordo__clock_ns();
            rc = ordo__compute_forward(cc, op);
            fwd_us[op] = (double)(ordo__clock_ns() - t0) / 1e3;
        }
        for (int op = m->n_ops - 1; op >= 0 && !rc; op--) {
            int64_t t0 = ordo__clock_ns();
            rc = ordo__compute_backward(cc, op);
            double bwd_us = (double)(ordo__clock_ns() - t0) / 1e3;
            if (pass > 0) ordo__oracle_observe_op(o, op, fwd_us[op], bwd_us);
        }
    }
    free(fwd_us);
    if (rc) goto done;
    size_t len = 0;
    FILE *f = open_memstream(out, &len);
    if (!f) {
        rc = ORDO_ERR_NOMEM;
        goto done;
    }
    rc = ordo__oracle_write(o, f);
    fclose(f);
    if (!rc) ORDO_INFO("calibration: op times of %s measured on %s (%d passes of batch %d)", m->name,
                       ordo__compute_kind_name(kind), OP_TIME_PASSES - 1, m->batch);
done:
    if (rc) {
        free(*out);
        *out = NULL;
    }
    for (int i = 0; m && i < m->n_params; i++) {
        if (p) free(p[i]);
        if (g) free(g[i]);
    }
    free(p);
    free(g);
    free(x);
    free(labels);
    ordo__oracle_destroy(&o);
    ordo__compute_destroy(&cc);
    ordo__model_destroy(&m);
    return rc ? ordo__error_context(rc, "push.calibrate: timing the model's ops") : 0;
}

