/* run: the jobs a worker runs once it has joined the cluster. The synthetic job
 * (model.trainer = synthetic) pushes and pulls the conf's tensor list for K iterations and
 * checks every pulled value against the closed form of what the servers must hold:
 * worker w pushes (w+1)(t+1) in every element at iteration t, so with plain SGD
 * v_t = v_0 - lr * scale * W(W+1)/2 * t(t+1)/2 (under ssp, between v_{t-s} and v_t, which holds
 * with plain SGD; asp and backup workers are not checked). Model jobs (profiles with emulated compute,
 * the built-in trainers) run the graph executor over the iterations or epochs, with initial
 * values, resume, checkpoints, progress, per-iteration stats and the final evaluation. */
#include "worker/run.h"
#include "common/clock.h"
#include "common/conf.h"
#include "common/error.h"
#include "common/log.h"
#include "common/transport.h"
#include "core/job.h"
#include "core/nn.h"
#include "core/paramfile.h"
#include "planner/oracle.h"
#include "worker/compute.h"
#include "worker/dataset.h"
#include "worker/executor.h"
#include "client/ps.h"
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

/* load_init reads the parameter file path ([model] init, or [fault] resume's checkpoint,
 * named by key) into init, after checking that it holds exactly m's parameters; errors name
 * the conf key and the file */
static int load_init(const char *key, const char *path, const ordo_model_t *m, float **init)
{
    ordo_paramfile_t *pf = NULL;
    int rc = ordo_paramfile_read(path, &pf); /* its detail names the file */
    if (rc) return ordo_error_context(rc, key);
    if ((rc = ordo_paramfile_match(pf, m)) != 0) {
        char what[ORDO_CONF_PATH + 32];
        snprintf(what, sizeof what, "%s: %s", key, path);
        ordo_paramfile_destroy(&pf);
        return ordo_error_context(rc, what);
    }
    for (int i = 0; i < m->n_params; i++)
        memcpy(init[i], pf->values[i], sizeof(float) * (size_t)m->params[i].numel);
    ORDO_INFO("initial values from %s (saved after %lld updates)", path,
              (long long)pf->iteration);
    ordo_paramfile_destroy(&pf);
    return 0;
}

/* the value every element of the synthetic job holds after v updates:
 * v0 - lr*scale*W(W+1)/2 * sum_{s<v}(s+1) */
static double synth_value(const ordo_conf_t *conf, int W, int key, int64_t i, int64_t v)
{
    double scale = conf->aggregate == ORDO_AGG_MEAN ? 1.0 / W : 1.0;
    return synth_init(key, i) - conf->lr * scale * (W * (W + 1) / 2.0) * (double)(v * (v + 1) / 2);
}

/* log_final_hash logs the FNV-1a hash of the values after the last update (worker 0 of a bsp
 * synthetic job, once it has pulled and checked them), so that two runs (one with a server
 * killed, say) can be compared bit for bit */
static void log_final_hash(const ordo_keys_t *k, float **val, int64_t updates)
{
    uint64_t h = 1469598103934665603ull;
    for (int key = 0; key < k->n_keys; key++)
        for (int64_t i = 0; i < k->numel[key]; i++) {
            const unsigned char *b = (const unsigned char *)&val[key][i];
            for (size_t j = 0; j < sizeof(float); j++)
                h = (h ^ b[j]) * 1099511628211ull;
        }
    ORDO_INFO("synthetic job: final values after %lld updates: fnv1a %016llx", (long long)updates,
              (unsigned long long)h);
}

int ordo_run_synthetic(ordo__ps_t *w, const ordo_conf_t *conf)
{
    const ordo_keys_t *k = ordo__ps_keys(w);
    int rank = ordo__ps_rank(w), W = ordo__ps_n_workers(w);
    float **val = calloc((size_t)k->n_keys, sizeof *val);
    float **grad = calloc((size_t)k->n_keys, sizeof *grad);
    int rc = 0;
    int64_t checked = 0, wrong = 0;
    int64_t rejoin = ordo__ps_rejoin_iter(w); /* fault.worker = restart */
    for (int key = 0; key < k->n_keys; key++) {
        val[key] = malloc(sizeof(float) * (size_t)k->numel[key]);
        grad[key] = malloc(sizeof(float) * (size_t)k->numel[key]);
        if (!val[key] || !grad[key]) {
            rc = ORDO_ERR_NOMEM;
            goto done;
        }
        if (rank == 0 && rejoin < 0) {
            for (int64_t i = 0; i < k->numel[key]; i++)
                val[key][i] = synth_init(key, i);
            if ((rc = ordo__ps_init(w, key, val[key])) != 0) goto done;
        }
    }
    if (rejoin >= 0)
        ORDO_INFO("restarted: rejoining at iteration %lld with the servers' values",
                  (long long)rejoin);
    /* asp and backup workers take pushes in arrival order: no closed form to check against */
    bool check = conf->sync_mode != ORDO_SYNC_ASP && conf->backup == 0;
    if (!check) ORDO_INFO("synthetic job: pulled values are not checked under sync.mode = asp or "
                          "sync.backup > 0");
    int64_t last_bp = 0, last_bl = 0; /* the byte counters at the last report */
    for (int64_t t = rejoin < 0 ? 0 : rejoin; t <= conf->iterations; t++) {
        /* after the last iteration, bsp: the final values, which must hold every push once */
        if (t == conf->iterations && (conf->sync_mode != ORDO_SYNC_BSP || !check)) break;
        int li, nl;
        int64_t since;
        if (check && ordo__ps_members(w, &li, &nl, &since)) {
            /* fault.worker = shrink: the updates are over fewer pushes from now on */
            check = false;
            ORDO_INFO("synthetic job: a worker left; values are not checked from here on");
        }
        int64_t t0 = ordo_clock_ns();
        double delay = t < conf->iterations ? ordo_conf_straggle_delay_ms(conf, rank, t) : 0;
        if (delay > 0) ordo_clock_sleep_ns((int64_t)(delay * 1e6));
        int64_t tc = ordo_clock_ns();
        for (int key = 0; key < k->n_keys; key++)
            if ((rc = ordo__ps_pull(w, key, val[key], t, key)) != 0) goto done;
        if ((rc = ordo__ps_wait_all(w, -1)) != 0) goto done;
        int64_t t1 = ordo_clock_ns();
        for (int key = 0; check && key < k->n_keys; key++)
            for (int64_t i = 0; i < k->numel[key]; i++) {
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
        for (int key = 0; key < k->n_keys; key++) {
            for (int64_t i = 0; i < k->numel[key]; i++)
                grad[key][i] = g;
            if ((rc = ordo__ps_push(w, key, grad[key], t, key)) != 0) goto done;
        }
        if ((rc = ordo__ps_wait_all(w, -1)) != 0) goto done;
        int64_t t2 = ordo_clock_ns();
        int64_t bp, bl;
        ordo__ps_bytes(w, &bp, &bl);
        char js[512];
        snprintf(js, sizeof js,
                 "{\"worker\":%d,\"iter\":%lld,\"step_ms\":%.4f,\"wait_ms\":%.4f,\"compute_ms\":%.4f,"
                 "\"bytes_push\":%lld,\"bytes_pull\":%lld,\"samples\":0,\"t_start_ns\":%lld,"
                 "\"t_push_done_ns\":%lld,\"t_end_ns\":%lld}",
                 rank, (long long)t, (t2 - t0) / 1e6, (t1 - tc) / 1e6, (tc - t0) / 1e6,
                 (long long)(bp - last_bp),
                 (long long)(bl - last_bl), (long long)t0, (long long)t2, (long long)t2);
        last_bp = bp;
        last_bl = bl;
        ordo__ps_report(w, js);
        if (conf->progress_every && (t + 1) % conf->progress_every == 0)
            ORDO_INFO("iteration %lld/%d: step %.2f ms", (long long)t + 1, conf->iterations,
                      (t2 - t0) / 1e6);
    }
    /* the loop's last pull took the final values (bsp, checked) */
    if (check && rank == 0 && conf->iterations > 0 && conf->sync_mode == ORDO_SYNC_BSP)
        log_final_hash(k, val, conf->iterations);
    ORDO_INFO("synthetic job: %d iterations, %lld pulled values checked, %lld wrong (the final "
              "values included)", conf->iterations, (long long)checked, (long long)wrong);
    if (wrong) rc = ordo_error_set(ORDO_ERR_PROTO, "%lld pulled values were wrong", (long long)wrong);
done:
    for (int key = 0; key < k->n_keys; key++) {
        free(val[key]);
        free(grad[key]);
    }
    free(val);
    free(grad);
    return rc;
}

/* ---- model jobs: profiles (emulated compute) and the built-in trainers ---------------- */

/* [push] calibrate with real compute: the op times for the merge planner, measured by worker
 * 0 during the start-up calibration (ordo__ps_join; the other workers wait meanwhile) as
 * OP_TIME_PASSES forward and backward passes of one batch (the first a warm-up), each op's
 * least time, as ordo-oracle/1 text in *out (caller frees). *out stays NULL when there is
 * nothing to measure: emulated compute sleeps the profile's times, which the scheduler has,
 * and an [order] oracle file gives the times the user chose. */
#define OP_TIME_PASSES 5
int ordo_run_op_times(void *ctx, char **out)
{
    const ordo_conf_t *conf = ctx;
    *out = NULL;
    bool training = !strcmp(conf->trainer, "mlp") || !strcmp(conf->trainer, "cnn");
    int kind = training && conf->compute == ORDO_COMPUTE_EMULATE ? ORDO_COMPUTE_CPU
                                                                  : conf->compute;
    if (!conf->calibrate || conf->oracle[0] || kind == ORDO_COMPUTE_EMULATE) return 0;
    ordo_model_t *m = NULL;
    ordo_compute_ctx_t *cc = NULL;
    ordo_oracle_t *o = NULL;
    float **p = NULL, **g = NULL, *x = NULL;
    int *labels = NULL, rc;
    if ((rc = ordo_job_model(conf, &m)) != 0) goto done;
    if ((rc = ordo_compute_new(kind, m, conf->compute_scale, &cc)) != 0) goto done;
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
    ordo_nn_init(m, conf->seed, p);
    if ((rc = ordo_compute_bind(cc, p, g)) != 0) goto done;
    if ((rc = ordo_compute_set_batch(cc, x, labels, m->batch)) != 0) goto done;
    if ((rc = ordo_oracle_new(m, &o)) != 0) goto done;
    double *fwd_us = calloc((size_t)m->n_ops, sizeof *fwd_us);
    if (!fwd_us) rc = ORDO_ERR_NOMEM;
    for (int pass = 0; pass < OP_TIME_PASSES && !rc; pass++) {
        for (int op = 0; op < m->n_ops && !rc; op++) {
            int64_t t0 = ordo_clock_ns();
            rc = ordo_compute_forward(cc, op);
            fwd_us[op] = (double)(ordo_clock_ns() - t0) / 1e3;
        }
        for (int op = m->n_ops - 1; op >= 0 && !rc; op--) {
            int64_t t0 = ordo_clock_ns();
            rc = ordo_compute_backward(cc, op);
            double bwd_us = (double)(ordo_clock_ns() - t0) / 1e3;
            if (pass > 0) ordo_oracle_observe_op(o, op, fwd_us[op], bwd_us);
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
    rc = ordo_oracle_write(o, f);
    fclose(f);
    if (!rc) ORDO_INFO("calibration: op times of %s measured on %s (%d passes of batch %d)", m->name,
                       ordo_compute_kind_name(kind), OP_TIME_PASSES - 1, m->batch);
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
    ordo_oracle_destroy(&o);
    ordo_compute_destroy(&cc);
    ordo_model_destroy(&m);
    return rc ? ordo_error_context(rc, "push.calibrate: timing the model's ops") : 0;
}

/* per-key plan priorities from the scheduler's WELCOME, or NULL for listed order */
static int *plan_priorities(ordo__ps_t *w, int n_keys)
{
    const char *plan = ordo__ps_plan(w);
    json_t *root = plan ? json_loads(plan, 0, NULL) : NULL;
    json_t *pr = root ? json_object_get(root, "priorities") : NULL;
    int *out = NULL;
    if (json_is_array(pr) && (int)json_array_size(pr) == n_keys) {
        out = malloc(sizeof *out * (size_t)n_keys);
        for (int i = 0; i < n_keys; i++)
            out[i] = (int)json_integer_value(json_array_get(pr, (size_t)i));
    }
    json_decref(root);
    return out;
}

/* ordering efficiency of a forward pass on an emulated link (docs/formats.md, metrics): U = all op
 * times (compute measured, transfers from the link model), L = the busiest resource */
static double efficiency(const ordo_model_t *m, const ordo_keys_t *k, const ordo_conf_t *c,
                         int workers, double compute_ms, double makespan_ms)
{
    if (c->bandwidth_bps <= 0) return NAN;
    /* a server's egress link is shared by the workers: each gets 1/W of its rate */
    double share = c->bandwidth_bps / (workers > 0 ? workers : 1);
    double *chan = calloc((size_t)k->n_servers, sizeof *chan), sum = 0;
    for (int i = 0; i < k->n_slices; i++) {
        double ms = (c->latency_us + (double)k->slices[i].numel * 4 * 8e6 / share) / 1e3;
        chan[k->slices[i].server] += ms;
        sum += ms;
    }
    double L = compute_ms;
    for (int s = 0; s < k->n_servers; s++)
        if (chan[s] > L) L = chan[s];
    free(chan);
    (void)m;
    double U = compute_ms + sum;
    if (U - L <= 0) return NAN;
    double e = (U - makespan_ms) / (U - L);
    return e < 0 ? 0 : e > 1 ? 1 : e;
}

/* progress prints worker 0's progress: a live line rewritten in place when stderr is a
 * terminal, a plain log line per report otherwise. Training jobs show the epoch, the mean
 * loss and train accuracy of worker 0's batches since the last report; every job shows the
 * samples per second over all workers since the start and the estimated time left. */
static void progress(int64_t t, int64_t total, int64_t per_epoch, bool training, double loss,
                     double acc, double step_ms, double sps, double eta_s)
{
    char line[256];
    int n = 0;
    if (training && per_epoch > 0)
        n = snprintf(line, sizeof line, "epoch %lld/%lld  ", (long long)((t - 1) / per_epoch + 1),
                     (long long)((total + per_epoch - 1) / per_epoch));
    n += snprintf(line + n, sizeof line - (size_t)n, "iter %lld/%lld  ", (long long)t,
                  (long long)total);
    if (training)
        n += snprintf(line + n, sizeof line - (size_t)n, "loss %.4f  train acc %.3f  ", loss, acc);
    else
        n += snprintf(line + n, sizeof line - (size_t)n, "step %.1f ms  ", step_ms);
    snprintf(line + n, sizeof line - (size_t)n, "%.0f samples/s  ETA %.0fs", sps, eta_s);
    if (isatty(2)) {
        /* \033[K clears what a longer earlier line left; the last report ends the line */
        fprintf(stderr, "\r%s\033[K%s", line, t == total ? "\n" : "");
        fflush(stderr);
    } else {
        ORDO_INFO("%s", line);
    }
}

int ordo_run_model(ordo__ps_t *w, const ordo_conf_t *conf)
{
    int rank = ordo__ps_rank(w), W = ordo__ps_n_workers(w);
    bool training = !strcmp(conf->trainer, "mlp") || !strcmp(conf->trainer, "cnn");
    ordo_model_t *m = NULL;
    ordo_compute_ctx_t *cc = NULL;
    ordo_exec_t *ex = NULL;
    ordo_dataset_t *train = NULL, *test = NULL;
    ordo_dataset_iter_t *it = NULL;
    ordo_trace_t *trace = NULL;
    float **init = NULL;
    float *snap = NULL;       /* [fault] checkpoint_every: worker 0's copy of the parameters */
    float **snap_of = NULL;   /* per parameter, where it starts in snap */
    int *prio = NULL;
    int rc;
    if ((rc = ordo_job_model(conf, &m)) != 0) goto done;
    if (m->n_params != ordo__ps_keys(w)->n_keys) {
        rc = ordo_error_set(ORDO_ERR_PROTO, "the scheduler's key map has %d keys, the model %d",
                            ordo__ps_keys(w)->n_keys, m->n_params);
        goto done;
    }
    int kind = training ? (conf->compute == ORDO_COMPUTE_EMULATE ? ORDO_COMPUTE_CPU : conf->compute)
                        : conf->compute;
    /* [straggle] slowdown: emulated op times are scaled, real compute sleeps after each op */
    double slowdown = ordo_conf_is_straggler(conf, rank) ? conf->slowdown : 1.0;
    double cscale = conf->compute_scale * (kind == ORDO_COMPUTE_EMULATE ? slowdown : 1.0);
    if ((rc = ordo_compute_new(kind, m, cscale, &cc)) != 0) goto done;
    if (slowdown > 1)
        ORDO_INFO("straggler: compute %.2f times slower (straggle.ranks)", slowdown);
    if (conf->trace) {
        char name[64];
        snprintf(name, sizeof name, "worker %d", rank);
        if ((rc = ordo_trace_new(name, 1000 + rank, &trace)) != 0) goto done;
        ordo__ps_set_trace(w, trace); /* the push path's own spans (intra groups) */
    }
    prio = plan_priorities(w, m->n_params);
    ordo_exec_opts_t eo = {.ps = w,
                           .model = m,
                           .compute = cc,
                           .priority = prio,
                           .shuffle_pulls = conf->policy_kind == ORDO_POLICY_NONE,
                           .seed = conf->seed,
                           .forward_only = conf->forward_only && !training,
                           .trace = trace,
                           .pull_early = ordo_conf_pull_mode(conf) == ORDO_PULL_EARLY,
                           .slowdown = kind == ORDO_COMPUTE_EMULATE ? 1.0 : slowdown,
                           .straggle = conf};

    int64_t iterations = conf->iterations, per_epoch = 0;
    int batch = m->batch;
    if (training) {
        if ((rc = ordo_dataset_load(conf->data_dir, ORDO_DATASET_TRAIN, &train)) != 0) goto done;
        if ((rc = ordo_dataset_iter_new(train, rank, W, batch, conf->seed, &it)) != 0) goto done;
        /* every worker must run the same number of iterations: the smallest shard decides */
        int64_t n = ordo_dataset_count(train), smallest = INT64_MAX;
        for (int r = 0; r < W; r++) {
            int64_t b, e;
            ordo_dataset_shard(n, r, W, &b, &e);
            if (e - b < smallest) smallest = e - b;
        }
        per_epoch = smallest / batch;
        if (conf->epochs > 0) iterations = conf->epochs * per_epoch;
    }
    /* [fault] resume: go on after the checkpoint's t0 updates; the servers restore their
     * momentum from the same folder (server/ckpt.h), worker 0 gives them the values */
    char resume_path[ORDO_CONF_PATH + 32];
    int64_t t0 = 0;
    if (conf->resume[0]) {
        snprintf(resume_path, sizeof resume_path, "%s/checkpoint.bin", conf->resume);
        if ((rc = ordo_paramfile_read_iteration(resume_path, &t0)) != 0) {
            rc = ordo_error_context(rc, "fault.resume");
            goto done;
        }
        if (t0 >= iterations) {
            rc = ordo_error_set(ORDO_ERR_INVAL, "fault.resume: %s is after %lld updates, and the run "
                                "has %lld iterations: nothing left to run", resume_path,
                                (long long)t0, (long long)iterations);
            goto done;
        }
        ORDO_INFO("resume: iterations %lld to %lld after the checkpoint in %s", (long long)t0,
                  (long long)iterations - 1, conf->resume);
    }
    /* fault.worker = restart: a restarted worker goes on at the first iteration its dead
     * predecessor did not finish, with the servers' values and its shard's next batches */
    int64_t first = ordo__ps_rejoin_iter(w) > t0 ? ordo__ps_rejoin_iter(w) : t0;
    bool rejoined = ordo__ps_rejoin_iter(w) >= 0;
    const float *skip_x;
    const int *skip_y;
    for (int64_t i = 0; it && i < first; i++) /* the batches the iterations before used */
        if ((rc = ordo_dataset_iter_next(it, &skip_x, &skip_y)) < 0) goto done;
    rc = 0;
    if (rejoined)
        ORDO_INFO("restarted: rejoining at iteration %lld with the servers' values",
                  (long long)first);
    eo.iterations = iterations - t0;
    if ((rc = ordo_exec_new(&eo, &ex)) != 0) goto done;
    if (ordo_exec_pulls_early(ex))
        ORDO_INFO("pulls: early (each key's next value asked for right after its push)");
    if (rank == 0 && !rejoined) {
        /* rank 0 gives the servers the initial values */
        init = calloc((size_t)m->n_params, sizeof *init);
        if (!init) {
            rc = ordo_error_set(ORDO_ERR_NOMEM, "out of memory for the initial values");
            goto done;
        }
        for (int i = 0; i < m->n_params; i++)
            if (!(init[i] = calloc((size_t)m->params[i].numel, sizeof(float)))) {
                rc = ordo_error_set(ORDO_ERR_NOMEM, "out of memory for the initial values");
                goto done;
            }
        if (training) ordo_nn_init(m, conf->seed, init);
        if (conf->init_params[0] && (rc = load_init("model.init", conf->init_params, m, init)) != 0)
            goto done;
        if (conf->resume[0] && (rc = load_init("fault.resume", resume_path, m, init)) != 0)
            goto done;
        if ((rc = ordo_exec_init(ex, init)) != 0) goto done;
    }
    ORDO_INFO("running %s: %lld iterations, batch %d, %d tensors (%.1f MiB), compute %s", m->name,
              (long long)iterations, batch, m->n_params,
              (double)ordo_model_total_bytes(m) / 1048576.0, ordo_compute_kind_name(kind));
    int every = rank == 0 && !eo.forward_only ? conf->checkpoint_every : 0;
    /* sparse pushes: every worker's residuals and thresholds are part of a checkpoint */
    int path_every = conf->push_mode == ORDO_PUSH_SPARSE && !eo.forward_only
                         ? conf->checkpoint_every : 0;
    if (conf->resume[0] && conf->push_mode == ORDO_PUSH_SPARSE) {
        char path[ORDO_CONF_PATH + 96];
        snprintf(path, sizeof path, "%s/checkpoint-worker-%d-%lld.bin", conf->resume, rank,
                 (long long)t0);
        if ((rc = ordo_exec_path_state(ex, path, false)) != 0) {
            rc = ordo_error_context(rc, "fault.resume");
            goto done;
        }
        ORDO_INFO("resume: residuals and threshold from %s", path);
    }
    if (every > 0) {
        snap = malloc(sizeof(float) * (size_t)(ordo_model_total_numel(m) + 1));
        snap_of = malloc(sizeof *snap_of * (size_t)m->n_params);
        if (!snap || !snap_of) {
            rc = ordo_error_set(ORDO_ERR_NOMEM, "out of memory for checkpoints");
            goto done;
        }
        int64_t at = 0;
        for (int i = 0; i < m->n_params; i++) {
            snap_of[i] = snap + at;
            at += m->params[i].numel;
        }
    }
    int64_t t_begin = ordo_clock_ns(), eval_ns = 0;
    double loss_sum = 0, step_sum = 0, last_loss = NAN;
    int correct_sum = 0, seen = 0;
    int shard_of = W; /* the number of workers the data is divided among */
    for (int64_t t = first; t < iterations; t++) {
        const float *x = NULL;
        const int *labels = NULL;
        int li, nl;
        int64_t since;
        if (it && per_epoch > 0 && t % per_epoch == 0 && ordo__ps_members(w, &li, &nl, &since) &&
            nl != shard_of) {
            /* fault.worker = shrink: at an epoch's start the data is divided among the
             * workers left */
            ordo_dataset_iter_destroy(&it);
            uint64_t seed = conf->seed + (uint64_t)(t / per_epoch);
            if ((rc = ordo_dataset_iter_new(train, li, nl, batch, seed, &it)) != 0)
                goto done;
            shard_of = nl;
            ORDO_INFO("epoch %lld: the data is divided among the %d workers left (this one has "
                      "part %d)", (long long)(t / per_epoch + 1), nl, li);
        }
        if (it && (rc = ordo_dataset_iter_next(it, &x, &labels)) < 0) goto done;
        ordo_exec_stats_t st;
        /* a checkpoint holds the values iteration t computes with: after t updates */
        bool checkpoint = every > 0 && t > first && t % every == 0;
        if (checkpoint) ordo_exec_snapshot(ex, snap);
        /* the executor and the servers count this run's iterations from 0 */
        if (path_every > 0 && t > first && t % path_every == 0) {
            /* named by the update count: a run that dies between the workers' files and worker
             * 0's checkpoint.bin still finds the ones of that checkpoint */
            char path[ORDO_CONF_PATH + 96];
            snprintf(path, sizeof path, "%s/checkpoint-worker-%d-%lld.bin",
                     ordo__ps_run_dir(w), rank, (long long)t);
            if ((rc = ordo_exec_path_state(ex, path, true)) != 0) goto done;
            snprintf(path, sizeof path, "%s/checkpoint-worker-%d-%lld.bin",
                     ordo__ps_run_dir(w), rank, (long long)(t - 2 * path_every));
            unlink(path); /* the one before the previous is no longer needed */
        }
        if ((rc = ordo_exec_iteration(ex, t - t0, x, labels, training ? batch : 0, &st)) != 0)
            goto done;
        if (checkpoint) {
            char path[ORDO_CONF_PATH + 64];
            snprintf(path, sizeof path, "%s/checkpoint.bin", ordo__ps_run_dir(w));
            if ((rc = ordo_paramfile_write(path, m, snap_of, t)) != 0) goto done;
            ORDO_INFO("checkpoint: %s after %lld updates", path, (long long)t);
        }
        double makespan =
            eo.forward_only ? (double)(st.t_forward_end_ns - st.t_start_ns) / 1e6 : st.step_ms;
        double eff = eo.forward_only
                         ? efficiency(m, ordo__ps_keys(w), conf, W, st.compute_ms, makespan)
                         : NAN;
        /* [model] eval_every: worker 0's test accuracy on the values it computed with */
        char evals[96] = "";
        if (training && rank == 0 && conf->eval_every > 0 && (t + 1) % conf->eval_every == 0) {
            double tl, acc;
            int64_t e0 = ordo_clock_ns();
            if (!test && (rc = ordo_dataset_load(conf->data_dir, ORDO_DATASET_TEST, &test)) != 0)
                goto done;
            if ((rc = ordo_train_evaluate_first(cc, m, test, conf->eval_samples, &tl, &acc)) != 0)
                goto done;
            eval_ns += ordo_clock_ns() - e0;
            snprintf(evals, sizeof evals, ",\"test_accuracy\":%.6f,\"eval_ms\":%.3f", acc,
                     (double)eval_ns / 1e6);
        }
        char js[1536], effs[32], losss[80];
        if (isnan(eff))
            snprintf(effs, sizeof effs, "null");
        else
            snprintf(effs, sizeof effs, "%.4f", eff);
        if (training)
            snprintf(losss, sizeof losss, ",\"loss\":%.6f,\"correct\":%d", st.loss, st.correct);
        else
            losss[0] = '\0';
        snprintf(
            js, sizeof js,
            "{\"worker\":%d,\"iter\":%lld,\"step_ms\":%.4f,\"wait_ms\":%.4f,\"compute_ms\":%.4f,"
            "\"bytes_push\":%lld,\"bytes_pull\":%lld,\"efficiency\":%s%s,\"samples\":%d,"
            "\"forward_ms\":%.4f,\"t_start_ns\":%lld,\"t_push_done_ns\":%lld,\"t_end_ns\":%lld%s%s}",
            rank, (long long)t, st.step_ms, st.wait_ms, st.compute_ms, (long long)st.bytes_push,
            (long long)st.bytes_pull, effs, losss, batch,
            (double)(st.t_forward_end_ns - st.t_start_ns) / 1e6, (long long)st.t_start_ns,
            (long long)st.t_push_done_ns, (long long)st.t_end_ns, st.extra, evals);
        ordo_exec_report(ex, js);
        loss_sum += st.loss;
        step_sum += st.step_ms;
        last_loss = st.loss;
        correct_sum += st.correct;
        seen += batch;
        if (rank == 0 && conf->progress_every &&
            ((t + 1) % conf->progress_every == 0 || t + 1 == iterations)) {
            double secs = (double)(ordo_clock_ns() - t_begin) / 1e9;
            double sps = (double)(t + 1 - first) * batch * W / secs;
            int k = (int)((t + 1) % conf->progress_every ? (t + 1) % conf->progress_every
                                                         : conf->progress_every);
            progress(t + 1, iterations, per_epoch, training, loss_sum / k,
                     seen ? (double)correct_sum / seen : 0, step_sum / k, sps,
                     secs / (double)(t + 1 - first) * (double)(iterations - t - 1));
            loss_sum = 0;
            step_sum = 0;
            correct_sum = 0;
            seen = 0;
        }
    }
    char final[256] = "{}";
    /* ssp and asp workers (and backup workers' stragglers) end at different times: the final
     * values are read once every worker has pushed its last gradient */
    if ((conf->sync_mode != ORDO_SYNC_BSP || conf->backup > 0) && !eo.forward_only &&
        (rc = ordo_exec_barrier(ex, INT64_MAX / 2)) != 0)
        goto done;
    if (rank == 0 && ((training && iterations > 0) || conf->save_params)) {
        /* the trained model: the servers' values after the last update (forward-only runs
         * never update them) */
        int64_t version = eo.forward_only ? 0 : iterations - t0; /* the servers' count */
        if ((rc = ordo_exec_pull_all(ex, version)) != 0) goto done;
        if (conf->save_params) {
            char path[ORDO_CONF_PATH + 64];
            snprintf(path, sizeof path, "%s/params.bin", ordo__ps_run_dir(w));
            int64_t updates = eo.forward_only ? 0 : iterations;
            if ((rc = ordo_paramfile_write(path, m, ordo_exec_params(ex), updates)) != 0) goto done;
            ORDO_INFO("wrote the parameters after %lld updates to %s", (long long)updates, path);
        }
    }
    if (training && rank == 0 && iterations > 0) {
        double test_loss, acc;
        if (!test && (rc = ordo_dataset_load(conf->data_dir, ORDO_DATASET_TEST, &test)) != 0)
            goto done;
        if ((rc = ordo_train_evaluate(cc, m, test, &test_loss, &acc)) != 0) goto done;
        ORDO_INFO("test accuracy %.4f (test loss %.4f) after %lld iterations", acc, test_loss,
                  (long long)iterations);
        snprintf(final, sizeof final,
                 "{\"final_loss\":%.6f,\"test_loss\":%.6f,\"test_accuracy\":%.6f}", last_loss,
                 test_loss, acc);
    } else if (training) {
        snprintf(final, sizeof final, "{\"final_loss\":%.6f}", last_loss);
    }
    if (trace) {
        char path[ORDO_CONF_PATH + 64];
        snprintf(path, sizeof path, "%s/trace-worker-%d.json", ordo__ps_run_dir(w), rank);
        if ((rc = ordo_trace_write(trace, path)) != 0) goto done;
    }
    ordo_exec_destroy(&ex);
    rc = ordo__ps_finish(w, final);
done:
    ordo_exec_destroy(&ex);
    if (init)
        for (int i = 0; i < m->n_params; i++)
            free(init[i]);
    free(init);
    free(snap);
    free(snap_of);
    free(prio);
    ordo__ps_set_trace(w, NULL);
    ordo_trace_destroy(&trace);
    ordo_dataset_iter_destroy(&it);
    ordo_dataset_destroy(&train);
    ordo_dataset_destroy(&test);
    ordo_compute_destroy(&cc);
    ordo_model_destroy(&m);
    return rc;
}

