/* ordo-worker: joins the cluster and runs the job the conf names. The synthetic job
 * (model.trainer = synthetic) pushes and pulls the conf's tensor list for K iterations and
 * checks every pulled value against the closed form of what the servers must hold:
 * worker w pushes (w+1)(t+1) in every element at iteration t, so with plain SGD
 * v_t = v_0 - lr * scale * W(W+1)/2 * t(t+1)/2. */
#include "common/clock.h"
#include "common/conf.h"
#include "common/error.h"
#include "common/log.h"
#include "worker/ps.h"

#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EXIT_ABORT 3

static float synth_init(int key, int64_t i)
{
    return (float)((i % 97) * 0.01 + key * 0.5);
}

static int run_synthetic(ordo_worker_t *w, const ordo_conf_t *conf)
{
    const ordo_keys_t *k = ordo_worker_keys(w);
    int rank = ordo_worker_rank(w), W = ordo_worker_n_workers(w);
    float **val = calloc((size_t)k->n_keys, sizeof *val);
    float **grad = calloc((size_t)k->n_keys, sizeof *grad);
    int rc = 0;
    int64_t checked = 0, wrong = 0;
    for (int key = 0; key < k->n_keys; key++) {
        val[key] = malloc(sizeof(float) * (size_t)k->numel[key]);
        grad[key] = malloc(sizeof(float) * (size_t)k->numel[key]);
        if (!val[key] || !grad[key]) {
            rc = ORDO_ENOMEM;
            goto done;
        }
        if (rank == 0) {
            for (int64_t i = 0; i < k->numel[key]; i++) val[key][i] = synth_init(key, i);
            if ((rc = ordo_worker_init(w, key, val[key])) != 0) goto done;
        }
    }
    double scale = conf->aggregate == ORDO_AGG_MEAN ? 1.0 / W : 1.0;
    for (int64_t t = 0; t < conf->iterations; t++) {
        int64_t t0 = ordo_clock_ns();
        for (int key = 0; key < k->n_keys; key++)
            if ((rc = ordo_worker_pull(w, key, val[key], t, key)) != 0) goto done;
        if ((rc = ordo_worker_wait_all(w, -1)) != 0) goto done;
        int64_t t1 = ordo_clock_ns();
        /* the value every element must have: v0 - lr*scale*W(W+1)/2 * sum_{s<t}(s+1) */
        double shift = conf->lr * scale * (W * (W + 1) / 2.0) * (double)(t * (t + 1) / 2);
        for (int key = 0; key < k->n_keys; key++)
            for (int64_t i = 0; i < k->numel[key]; i++) {
                double want = synth_init(key, i) - shift;
                checked++;
                if (fabs(val[key][i] - want) > 1e-4 * (1 + fabs(want))) {
                    if (wrong++ < 5)
                        ORDO_ERROR("iteration %lld key %d element %lld: pulled %.7g, expected %.7g",
                                   (long long)t, key, (long long)i, val[key][i], want);
                }
            }
        float g = (float)((rank + 1) * (t + 1));
        for (int key = 0; key < k->n_keys; key++) {
            for (int64_t i = 0; i < k->numel[key]; i++) grad[key][i] = g;
            if ((rc = ordo_worker_push(w, key, grad[key], t, key)) != 0) goto done;
        }
        if ((rc = ordo_worker_wait_all(w, -1)) != 0) goto done;
        int64_t t2 = ordo_clock_ns();
        int64_t bp, bl;
        ordo_worker_bytes(w, &bp, &bl);
        static int64_t last_bp, last_bl;
        char js[512];
        snprintf(js, sizeof js,
                 "{\"worker\":%d,\"iter\":%lld,\"step_ms\":%.4f,\"wait_ms\":%.4f,\"compute_ms\":0,"
                 "\"bytes_push\":%lld,\"bytes_pull\":%lld,\"samples\":0,\"t_start_ns\":%lld,"
                 "\"t_push_done_ns\":%lld,\"t_end_ns\":%lld}",
                 rank, (long long)t, (t2 - t0) / 1e6, (t1 - t0) / 1e6, (long long)(bp - last_bp),
                 (long long)(bl - last_bl), (long long)t0, (long long)t2, (long long)t2);
        last_bp = bp;
        last_bl = bl;
        ordo_worker_report(w, js);
        if (conf->progress_every && (t + 1) % conf->progress_every == 0)
            ORDO_INFO("iteration %lld/%d: step %.2f ms", (long long)t + 1, conf->iterations,
                      (t2 - t0) / 1e6);
    }
    ORDO_INFO("synthetic job: %d iterations, %lld pulled values checked, %lld wrong",
              conf->iterations, (long long)checked, (long long)wrong);
    if (wrong) rc = ordo_error_set(ORDO_EPROTO, "%lld pulled values were wrong", (long long)wrong);
done:
    for (int key = 0; key < k->n_keys; key++) {
        free(val[key]);
        free(grad[key]);
    }
    free(val);
    free(grad);
    return rc;
}

int main(int argc, char **argv)
{
    ordo_conf_t conf;
    int rc = ordo_conf_cli(&conf, argc, argv, "ordo-worker", "-c CONF [--section.key=VALUE ...]");
    if (rc) return rc > 0 ? 0 : 2;
    ordo_log_level_t lvl;
    ordo_log_parse_level(conf.log_level, &lvl);
    ordo_log_set_level(lvl);
    ordo_log_set_role("worker", -1);
    signal(SIGPIPE, SIG_IGN);

    ordo_worker_t *w = NULL;
    if ((rc = ordo_worker_new(&conf, &w)) != 0) {
        fprintf(stderr, "ordo-worker: %s\n", ordo_error_text(rc));
        return rc == ORDO_EABORT || rc == ORDO_EPEERDEAD ? EXIT_ABORT : 1;
    }
    ordo_log_set_role("worker", ordo_worker_rank(w));
    if (!strcmp(conf.trainer, "synthetic")) {
        rc = run_synthetic(w, &conf);
    } else {
        rc = ordo_error_set(ORDO_ENOTSUP, "model.trainer = %s: not in this build yet", conf.trainer);
    }
    if (rc == 0) {
        rc = ordo_worker_finish(w, NULL);
    } else if (rc != ORDO_EABORT && rc != ORDO_EPEERDEAD) {
        char why[600];
        snprintf(why, sizeof why, "worker %d: %s", ordo_worker_rank(w), ordo_error_text(rc));
        ordo_worker_abort(w, why);
    }
    if (rc) ORDO_ERROR("%s", ordo_error_text(rc));
    int code = rc == 0 ? 0 : (rc == ORDO_EABORT || rc == ORDO_EPEERDEAD) ? EXIT_ABORT : 1;
    ordo_worker_destroy(&w);
    return code;
}
