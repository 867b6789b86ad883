/* run_model: ordo-worker's model jobs (profiles with emulated compute, the built-in mlp and
 * cnn trainers) over the graph executor, in four phases a reader can take one at a time:
 * prepare (the model, its compute, the data and the run's length), resume (where the run
 * starts: a checkpoint, a restart, or the beginning with rank 0's initial values), loop (the
 * iterations, with checkpoints, per-iteration stats and progress) and finish (the final
 * values, params.bin, the evaluation, leaving the cluster). The worker reaches the cluster
 * through the public API (include/ordo/ordo.h) only. */
#include "worker/run.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/clock.h"
#include "common/codec.h"
#include "common/conf.h"
#include "common/error.h"
#include "common/log.h"
#include "core/job.h"
#include "core/nn.h"
#include "core/paramfile.h"
#include "worker/batch_feed.h"
#include "worker/compute.h"
#include "worker/dataset.h"
#include "worker/executor.h"
#include "worker/train.h"

/* One model job's state across its phases. */
typedef struct job {
    const ordo__conf_t *conf;
    ordo_t *o;
    int rank, W, kind, batch;
    bool training;
    ordo__model_t *m;
    ordo__compute_ctx_t *cc;
    ordo__exec_opts_t eo;
    ordo__exec_t *ex;
    ordo__dataset_t *train, *test;
    ordo__dataset_iter_t *it;
    ordo__batch_feed_t *feed; /* [sync] batches: the shared epoch's batches (NULL: the shard's) */
    int64_t iterations, per_epoch;
    int64_t t0;     /* [fault] resume: the checkpoint's updates (the servers count from here) */
    int64_t first;  /* the first iteration this worker runs */
    char resume_path[ORDO_CONF_PATH + 32];
    int every, path_every; /* checkpoints: worker 0's values, every worker's path state */
    /* checkpoint_every and eval_every: worker 0's copy of the values an iteration computes
     * with, taken inside it (between iterations the values may already be the next ones:
     * host groups' shared values, early pulls) */
    float *snap;
    float **snap_of; /* per parameter, where it starts in snap */
    double last_loss;
} job_t;

/* ef_codec: [push] compression names a codec with error feedback (its residuals are state) */
static bool ef_codec(const ordo__conf_t *conf)
{
    ordo__codec_spec_t spec;
    return conf->compression[0] && ordo__codec_parse(conf->compression, &spec) == 0 && spec.ef;
}

/* load_init reads the parameter file path ([model] init, or [fault] resume's checkpoint,
 * named by key) into init, after checking that it holds exactly m's parameters; errors name
 * the conf key and the file */
static int load_init(const char *key, const char *path, const ordo__model_t *m, float **init)
{
    ordo__paramfile_t *pf = NULL;
    int rc = ordo__paramfile_read(path, &pf); /* its detail names the file */
    if (rc) return ordo__error_context(rc, key);
    if ((rc = ordo__paramfile_match(pf, m)) != 0) {
        char what[ORDO_CONF_PATH + 32];
        snprintf(what, sizeof what, "%s: %s", key, path);
        ordo__paramfile_destroy(&pf);
        return ordo__error_context(rc, what);
    }
    for (int i = 0; i < m->n_params; i++)
        memcpy(init[i], pf->values[i], sizeof(float) * (size_t)m->params[i].numel);
    ORDO_INFO("initial values from %s (saved after %lld updates)", path,
              (long long)pf->iteration);
    ordo__paramfile_destroy(&pf);
    return 0;
}

/* ordering efficiency of a forward pass on an emulated link (docs/formats.md, metrics): U = all op
 * times (compute measured, transfers from the link model), L = the busiest resource */
static double efficiency(ordo_t *o, const ordo__conf_t *c, double compute_ms, double makespan_ms)
{
    if (c->bandwidth_bps <= 0) return NAN;
    /* a server's egress link is shared by the workers: each gets 1/W of its rate */
    int workers = ordo_size(o);
    double share = c->bandwidth_bps / (workers > 0 ? workers : 1);
    double L = compute_ms, sum = 0;
    for (int s = 0; s < ordo_num_servers(o); s++) {
        int64_t bytes;
        int slices;
        if (ordo_server_load(o, s, &bytes, &slices) != 0) return NAN;
        double ms = (slices * c->latency_us + (double)bytes * 8e6 / share) / 1e3;
        sum += ms;
        if (ms > L) L = ms;
    }
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

/* ---- prepare: the model, its compute, the data, the run's length ---------------------- */

static int prepare(job_t *j)
{
    const ordo__conf_t *conf = j->conf;
    int rc;
    j->training = !strcmp(conf->trainer, "mlp") || !strcmp(conf->trainer, "cnn");
    if ((rc = ordo__job_model(conf, &j->m)) != 0) return rc;
    if (j->m->n_params != ordo_num_tensors(j->o))
        return ordo__error_set(ORDO_ERR_PROTO, "the cluster has %d tensors, the model %d",
                              ordo_num_tensors(j->o), j->m->n_params);
    j->kind = j->training && conf->compute == ORDO_COMPUTE_EMULATE ? ORDO_COMPUTE_CPU
                                                                   : conf->compute;
    /* [straggle] slowdown: emulated op times are scaled, real compute sleeps after each op */
    double slowdown = ordo__conf_is_straggler(conf, j->rank) ? conf->slowdown : 1.0;
    double cscale = conf->compute_scale * (j->kind == ORDO_COMPUTE_EMULATE ? slowdown : 1.0);
    if ((rc = ordo__compute_new(j->kind, j->m, cscale, &j->cc)) != 0) return rc;
    if (slowdown > 1)
        ORDO_INFO("straggler: compute %.2f times slower (straggle.ranks)", slowdown);
    j->eo = (ordo__exec_opts_t){.ordo = j->o,
                               .model = j->m,
                               .compute = j->cc,
                               .shuffle_pulls = conf->policy_kind == ORDO_POLICY_NONE,
                               .seed = conf->seed,
                               .forward_only = conf->forward_only && !j->training,
                               .trace = conf->trace,
                               .pull_early = ordo__conf_pull_mode(conf) == ORDO_PULL_EARLY,
                               .slowdown = j->kind == ORDO_COMPUTE_EMULATE ? 1.0 : slowdown,
                               .straggle = conf};
    j->iterations = conf->iterations;
    j->batch = j->m->batch;
    if (!j->training) return 0;
    if ((rc = ordo__dataset_load(conf->data_dir, ORDO_DATASET_TRAIN, &j->train)) != 0) return rc;
    if ((rc = ordo__dataset_iter_new(j->train, j->rank, j->W, j->batch, conf->seed, &j->it)) != 0)
        return rc;
    /* every worker must run the same number of iterations: the smallest shard decides */
    int64_t n = ordo__dataset_count(j->train), smallest = INT64_MAX;
    for (int r = 0; r < j->W; r++) {
        int64_t b, e;
        ordo__dataset_shard(n, r, j->W, &b, &e);
        if (e - b < smallest) smallest = e - b;
    }
    j->per_epoch = smallest / j->batch;
    if (conf->epochs > 0) j->iterations = conf->epochs * j->per_epoch;
    return 0;
}

/* ---- resume: where the run starts ------------------------------------------------------ */

/* [fault] resume: go on after the checkpoint's t0 updates; the servers restore their momentum
 * from the same folder (server/ckpt.h), worker 0 gives them the values */
static int resume_point(job_t *j)
{
    const ordo__conf_t *conf = j->conf;
    if (!conf->resume[0]) return 0;
    /* the newest whole checkpoint: checkpoint.bin, or checkpoint.prev.bin when the newer one
     * is truncated or corrupt (the servers pick the same one, server/server.c) */
    int rc = ordo__paramfile_newest(conf->resume, j->resume_path, sizeof j->resume_path, &j->t0);
    if (rc) return ordo__error_context(rc, "fault.resume");
    if (j->t0 >= j->iterations)
        return ordo__error_set(ORDO_ERR_INVAL, "fault.resume: %s is after %lld updates, and the "
                              "run has %lld iterations: nothing left to run", j->resume_path,
                              (long long)j->t0, (long long)j->iterations);
    ORDO_INFO("resume: iterations %lld to %lld after the checkpoint in %s", (long long)j->t0,
              (long long)j->iterations - 1, conf->resume);
    return 0;
}

/* rank 0 of a run's start gives the servers the initial values: the model's own, [model]
 * init's, or the resumed checkpoint's */
static int initial_values(job_t *j)
{
    const ordo__conf_t *conf = j->conf;
    const ordo__model_t *m = j->m;
    float **init = calloc((size_t)m->n_params + 1, sizeof *init);
    int rc = init ? 0 : ORDO_ERR_NOMEM;
    for (int i = 0; !rc && i < m->n_params; i++)
        if (!(init[i] = calloc((size_t)m->params[i].numel, sizeof(float)))) rc = ORDO_ERR_NOMEM;
    if (rc) {
        rc = ordo__error_set(ORDO_ERR_NOMEM, "out of memory for the initial values");
        goto done;
    }
    if (j->training) ordo__nn_init(m, conf->seed, init);
    if (conf->init_params[0] && (rc = load_init("model.init", conf->init_params, m, init)) != 0)
        goto done;
    if (conf->resume[0] && (rc = load_init("fault.resume", j->resume_path, m, init)) != 0)
        goto done;
    rc = ordo__exec_init(j->ex, init);
done:
    for (int i = 0; init && i < m->n_params; i++)
        free(init[i]);
    free(init);
    return rc;
}

static int resume(job_t *j)
{
    const ordo__conf_t *conf = j->conf;
    int rc = resume_point(j);
    if (rc) return rc;
    /* fault.worker = restart: a restarted worker goes on at the first iteration its dead
     * predecessor did not finish, with the servers' values and its shard's next batches */
    int64_t rejoin = ordo_resume_iter(j->o);
    j->first = rejoin > j->t0 ? rejoin : j->t0;
    const float *skip_x;
    const int *skip_y;
    for (int64_t i = 0; j->it && i < j->first; i++) /* the batches the iterations before used */
        if ((rc = ordo__dataset_iter_next(j->it, &skip_x, &skip_y)) < 0) return rc;
    if (rejoin >= 0)
        ORDO_INFO("restarted: rejoining at iteration %lld with the servers' values",
                  (long long)j->first);
    j->eo.iterations = j->iterations - j->t0;
    /* [sync] batches: the scheduler hands out the batches of one shared epoch and the run is
     * as many samples as the equal split's (worker/batch_feed.h) */
    if (j->training && ordo__conf_batch_service(conf)) {
        int64_t samples = (j->iterations - j->first) * j->batch * j->W;
        j->eo.pull_early = false; /* the last iteration is not known in advance */
        j->eo.iterations = INT64_MAX / 4;
        if ((rc = ordo__batch_feed_new(j->o, j->train, j->batch, samples, conf->seed, &j->feed)))
            return rc;
        ORDO_INFO("batch service: %lld samples in batches of %d from the scheduler "
                  "(sync.batches)", (long long)samples, j->batch);
    }
    if ((rc = ordo__exec_new(&j->eo, &j->ex)) != 0) return rc;
    if (j->rank == 0 && rejoin < 0 && (rc = initial_values(j)) != 0) return rc;
    ORDO_INFO("running %s: %lld iterations, batch %d, %d tensors (%.1f MiB), compute %s",
              j->m->name, (long long)j->iterations, j->batch, j->m->n_params,
              (double)ordo__model_total_bytes(j->m) / 1048576.0, ordo__compute_kind_name(j->kind));
    j->every = j->rank == 0 && !j->eo.forward_only ? conf->checkpoint_every : 0;
    /* sparse pushes, and codecs with error feedback: every worker's residuals (and sparse
     * thresholds) are part of a checkpoint */
    bool sparse = conf->push_mode == ORDO_PUSH_SPARSE;
    bool has_state = (sparse || ef_codec(conf)) && !j->eo.forward_only;
    j->path_every = has_state ? conf->checkpoint_every : 0;
    if (conf->resume[0] && has_state && ordo_resume_iter(j->o) < 0) {
        char path[ORDO_CONF_PATH + 96];
        snprintf(path, sizeof path, "%s/checkpoint-worker-%d-%lld.bin", conf->resume, j->rank,
                 (long long)j->t0);
        if ((rc = ordo__exec_path_state(j->ex, path, false)) != 0)
            return ordo__error_context(rc, "fault.resume");
        ORDO_INFO(sparse ? "resume: residuals and threshold from %s"
                         : "resume: error-feedback residuals from %s",
                  path);
    }
    if (j->every > 0 || (j->training && j->rank == 0 && conf->eval_every > 0)) {
        j->snap = malloc(sizeof(float) * (size_t)(ordo__model_total_numel(j->m) + 1));
        j->snap_of = malloc(sizeof *j->snap_of * (size_t)(j->m->n_params + 1));
        if (!j->snap || !j->snap_of)
            return ordo__error_set(ORDO_ERR_NOMEM, "out of memory for snapshots of the values");
        int64_t at = 0;
        for (int i = 0; i < j->m->n_params; i++) {
            j->snap_of[i] = j->snap + at;
            at += j->m->params[i].numel;
        }
    }
    return 0;
}

/* ---- loop: the iterations -------------------------------------------------------------- */

/* fault.worker = shrink: at an epoch's start the data is divided among the workers left */
static int reshard(job_t *j, int64_t t, int *shard_of)
{
    int li, nl;
    int64_t since;
    if (!j->it || j->per_epoch <= 0 || t % j->per_epoch != 0 ||
        ordo_members(j->o, &li, &nl, &since) <= 0 || nl == *shard_of)
        return 0;
    ordo__dataset_iter_destroy(&j->it);
    uint64_t seed = j->conf->seed + (uint64_t)(t / j->per_epoch);
    int rc = ordo__dataset_iter_new(j->train, li, nl, j->batch, seed, &j->it);
    if (rc) return rc;
    *shard_of = nl;
    ORDO_INFO("epoch %lld: the data is divided among the %d workers left (this one has part %d)",
              (long long)(t / j->per_epoch + 1), nl, li);
    return 0;
}

/* sparse pushes: every worker saves its path's state at checkpoint iterations, named by the
 * update count: a run that dies between the workers' files and worker 0's checkpoint.bin
 * still finds the ones of that checkpoint */
static int save_path_state(job_t *j, int64_t t)
{
    if (j->path_every <= 0 || t <= j->first || t % j->path_every != 0) return 0;
    char path[ORDO_CONF_PATH + 96];
    const char *dir = ordo_run_dir(j->o);
    snprintf(path, sizeof path, "%s/checkpoint-worker-%d-%lld.bin", dir, j->rank, (long long)t);
    int rc = ordo__exec_path_state(j->ex, path, true);
    if (rc && j->conf->disk_full == ORDO_DISK_FULL_STOP)
        return ordo__error_context(rc, "checkpoint (fault.disk_full = stop)");
    if (rc) { /* the older files stay: a resume may need them */
        ORDO_ERROR("checkpoint after %lld updates: %s; the run goes on (fault.disk_full = retry)",
                   (long long)t, ordo__error_text(rc));
        return 0;
    }
    snprintf(path, sizeof path, "%s/checkpoint-worker-%d-%lld.bin", dir, j->rank,
             (long long)(t - 2 * j->path_every));
    unlink(path); /* the one before the previous is no longer needed */
    return 0;
}

/* worker 0's checkpoint.bin after t updates, the one before kept as checkpoint.prev.bin (a
 * resume falls back to it when the newer one is not whole). A write that fails leaves both as
 * they were; [fault] disk_full says whether the run stops or goes on to the next one. */
static int write_checkpoint(job_t *j, int64_t t)
{
    char path[ORDO_CONF_PATH + 64], prev[ORDO_CONF_PATH + 64];
    snprintf(path, sizeof path, "%s/checkpoint.bin", ordo_run_dir(j->o));
    snprintf(prev, sizeof prev, "%s/checkpoint.prev.bin", ordo_run_dir(j->o));
    int rc = ordo__paramfile_write_kept(path, prev, j->m, j->snap_of, t);
    if (!rc) {
        ORDO_INFO("checkpoint: %s after %lld updates", path, (long long)t);
        return 0;
    }
    if (j->conf->disk_full == ORDO_DISK_FULL_STOP)
        return ordo__error_context(rc, "checkpoint (fault.disk_full = stop)");
    ORDO_ERROR("checkpoint after %lld updates: %s; the previous checkpoint is kept and the run "
               "goes on (fault.disk_full = retry)", (long long)t, ordo__error_text(rc));
    return 0;
}

/* does worker 0 evaluate after iteration t ([model] eval_every)? */
static bool evaluates(const job_t *j, int64_t t)
{
    return j->training && j->rank == 0 && j->conf->eval_every > 0 &&
           (t + 1) % j->conf->eval_every == 0;
}

/* evaluate measures the test accuracy of the values iteration t computed with: its snapshot
 * (the parameter buffers may already hold values of t + 1, or part of them) */
static int evaluate(job_t *j, double *loss, double *acc)
{
    int rc;
    if (!j->test && (rc = ordo__dataset_load(j->conf->data_dir, ORDO_DATASET_TEST, &j->test)))
        return rc;
    if ((rc = ordo__exec_compute_on(j->ex, j->snap_of)) != 0) return rc;
    rc = ordo__train_evaluate_first(j->cc, j->m, j->test, j->conf->eval_samples, loss, acc);
    int back = ordo__exec_compute_on(j->ex, NULL);
    return rc ? rc : back;
}

/* one iteration's metrics line (metrics.jsonl), with worker 0's test accuracy every
 * [model] eval_every iterations */
static int report(job_t *j, int64_t t, const ordo__exec_stats_t *st, int samples,
                  int64_t *eval_ns)
{
    const ordo__conf_t *conf = j->conf;
    double makespan =
        j->eo.forward_only ? (double)(st->t_forward_end_ns - st->t_start_ns) / 1e6 : st->step_ms;
    double eff = j->eo.forward_only ? efficiency(j->o, conf, st->compute_ms, makespan) : NAN;
    char evals[96] = "";
    if (evaluates(j, t)) {
        double tl, acc;
        int64_t e0 = ordo__clock_ns();
        int rc = evaluate(j, &tl, &acc);
        if (rc) return rc;
        *eval_ns += ordo__clock_ns() - e0;
        snprintf(evals, sizeof evals, ",\"test_accuracy\":%.6f,\"eval_ms\":%.3f", acc,
                 (double)*eval_ns / 1e6);
    }
    char js[1536], effs[32], losss[80] = "";
    if (isnan(eff))
        snprintf(effs, sizeof effs, "null");
    else
        snprintf(effs, sizeof effs, "%.4f", eff);
    if (j->training)
        snprintf(losss, sizeof losss, ",\"loss\":%.6f,\"correct\":%d", st->loss, st->correct);
    snprintf(js, sizeof js,
             "{\"worker\":%d,\"iter\":%lld,\"step_ms\":%.4f,\"wait_ms\":%.4f,\"compute_ms\":%.4f,"
             "\"bytes_push\":%lld,\"bytes_pull\":%lld,\"efficiency\":%s%s,\"samples\":%d,"
             "\"forward_ms\":%.4f,\"t_start_ns\":%lld,\"t_push_done_ns\":%lld,\"t_end_ns\":%lld"
             "%s%s}",
             j->rank, (long long)t, st->step_ms, st->wait_ms, st->compute_ms,
             (long long)st->bytes_push, (long long)st->bytes_pull, effs, losss, samples,
             (double)(st->t_forward_end_ns - st->t_start_ns) / 1e6, (long long)st->t_start_ns,
             (long long)st->t_push_done_ns, (long long)st->t_end_ns, st->extra, evals);
    return ordo__exec_report(j->ex, js);
}

/* worker 0's progress figures since the last line */
typedef struct progress_sums {
    int64_t t_begin;
    double loss, step;
    int correct, seen;
} progress_sums_t;

static void show_progress(job_t *j, int64_t t, const ordo__exec_stats_t *st, progress_sums_t *p)
{
    int every = j->conf->progress_every;
    p->loss += st->loss;
    p->step += st->step_ms;
    p->correct += st->correct;
    p->seen += j->batch;
    if (j->rank != 0 || !every || ((t + 1) % every != 0 && t + 1 != j->iterations)) return;
    double secs = (double)(ordo__clock_ns() - p->t_begin) / 1e9;
    double sps = (double)(t + 1 - j->first) * j->batch * j->W / secs;
    int k = (int)((t + 1) % every ? (t + 1) % every : every);
    progress(t + 1, j->iterations, j->per_epoch, j->training, p->loss / k,
             p->seen ? (double)p->correct / p->seen : 0, p->step / k, sps,
             secs / (double)(t + 1 - j->first) * (double)(j->iterations - t - 1));
    *p = (progress_sums_t){.t_begin = p->t_begin};
}

/* next_shared_batch fetches iteration *t's batch from the batch service: 0 with the batch,
 * 1 at the end of the run. Under backup workers a worker whose push came late (the servers
 * said how far they got) starts the current iteration instead of finishing stale work. */
static int next_shared_batch(job_t *j, int64_t *t, const float **x, const int **labels, int *n)
{
    int64_t current = ordo_servers_version(j->o) + j->t0;
    if (j->conf->backup > 0 && current > *t) {
        ORDO_DEBUG("late: iteration %lld goes on at %lld", (long long)*t, (long long)current);
        *t = current;
    }
    return ordo__batch_feed_next(j->feed, x, labels, n);
}

static int loop(job_t *j)
{
    int64_t eval_ns = 0;
    progress_sums_t sums = {.t_begin = ordo__clock_ns()};
    int shard_of = j->W; /* the number of workers the data is divided among */
    int rc;
    int64_t ran = j->iterations; /* the last iteration run + 1 */
    for (int64_t t = j->first; t < (j->feed ? INT64_MAX / 4 : j->iterations); t++) {
        const float *x = NULL;
        const int *labels = NULL;
        int n_batch = j->batch;
        if (j->feed) {
            if ((rc = next_shared_batch(j, &t, &x, &labels, &n_batch)) < 0) return rc;
            if (rc > 0) break;
            ran = t + 1;
        } else {
            if ((rc = reshard(j, t, &shard_of)) != 0) return rc;
            if (j->it && (rc = ordo__dataset_iter_next(j->it, &x, &labels)) < 0) return rc;
        }
        /* a checkpoint holds the values iteration t computes with: after t updates */
        bool checkpoint = j->every > 0 && t > j->first && t % j->every == 0;
        if (checkpoint || evaluates(j, t)) ordo__exec_snapshot(j->ex, j->snap);
        if ((rc = save_path_state(j, t)) != 0) return rc;
        ordo__exec_stats_t st;
        /* the executor and the servers count this run's iterations from 0 */
        rc = ordo__exec_iteration(j->ex, t - j->t0, x, labels, j->training ? n_batch : 0, &st);
        if (rc) return rc;
        if (checkpoint) {
            if ((rc = write_checkpoint(j, t)) != 0) return rc;
        }
        if ((rc = report(j, t, &st, n_batch, &eval_ns)) != 0) return rc;
        j->last_loss = st.loss;
        show_progress(j, t, &st, &sums);
    }
    if (j->feed && ran != j->iterations) {
        ORDO_INFO("batch service: the last iteration was %lld", (long long)ran - 1);
        j->iterations = ran; /* the final values are those after it */
    }
    return 0;
}

/* ---- finish: the final values, the evaluation, leaving --------------------------------- */

static int finish(job_t *j)
{
    const ordo__conf_t *conf = j->conf;
    int rc;
    char final[256] = "{}";
    /* ssp and asp workers (and backup workers' stragglers) end at different times: the final
     * values are read once every worker has pushed its last gradient */
    if ((conf->sync_mode != ORDO_SYNC_BSP || conf->backup > 0 || j->feed) && !j->eo.forward_only &&
        (rc = ordo__exec_barrier(j->ex)) != 0)
        return rc;
    if (j->rank == 0 && ((j->training && j->iterations > 0) || conf->save_params)) {
        /* the trained model: the servers' values after the last update (forward-only runs
         * never update them) */
        int64_t version = j->eo.forward_only ? 0 : j->iterations - j->t0; /* the servers' */
        if ((rc = ordo__exec_pull_all(j->ex, version)) != 0) return rc;
        if (conf->save_params) {
            char path[ORDO_CONF_PATH + 64];
            snprintf(path, sizeof path, "%s/params.bin", ordo_run_dir(j->o));
            int64_t updates = j->eo.forward_only ? 0 : j->iterations;
            if ((rc = ordo__paramfile_write(path, j->m, ordo__exec_params(j->ex), updates)) != 0)
                return rc;
            ORDO_INFO("wrote the parameters after %lld updates to %s", (long long)updates, path);
        }
    }
    if (j->training && j->rank == 0 && j->iterations > 0) {
        double test_loss, acc;
        if (!j->test && (rc = ordo__dataset_load(conf->data_dir, ORDO_DATASET_TEST, &j->test)))
            return rc;
        if ((rc = ordo__train_evaluate(j->cc, j->m, j->test, &test_loss, &acc)) != 0) return rc;
        ORDO_INFO("test accuracy %.4f (test loss %.4f) after %lld iterations", acc, test_loss,
                  (long long)j->iterations);
        snprintf(final, sizeof final,
                 "{\"final_loss\":%.6f,\"test_loss\":%.6f,\"test_accuracy\":%.6f}", j->last_loss,
                 test_loss, acc);
    } else if (j->training) {
        snprintf(final, sizeof final, "{\"final_loss\":%.6f}", j->last_loss);
    }
    ordo__exec_destroy(&j->ex); /* unbinds: the key-level state is the handle's again */
    return ordo_leave_with(j->o, final);
}

static void job_free(job_t *j)
{
    ordo__exec_destroy(&j->ex);
    free(j->snap);
    free(j->snap_of);
    ordo__dataset_iter_destroy(&j->it);
    ordo__batch_feed_destroy(&j->feed);
    ordo__dataset_destroy(&j->train);
    ordo__dataset_destroy(&j->test);
    ordo__compute_destroy(&j->cc);
    ordo__model_destroy(&j->m);
}

int ordo__run_declare(ordo_t *o, const ordo__conf_t *conf)
{
    if (!strcmp(conf->trainer, "synthetic")) return 0; /* the cluster's tensors as they are */
    ordo__model_t *m = NULL;
    int rc = ordo__job_model(conf, &m);
    for (int i = 0; !rc && i < m->n_params; i++)
        rc = ordo_declare(o, m->params[i].name, m->params[i].numel, NULL);
    ordo__model_destroy(&m);
    return rc;
}

int ordo__run_model(ordo_t *o, const ordo__conf_t *conf)
{
    job_t j = {.conf = conf, .o = o, .rank = ordo_rank(o), .W = ordo_size(o),
               .last_loss = NAN};
    int rc = prepare(&j);
    if (!rc) rc = resume(&j);
    if (!rc) rc = loop(&j);
    if (!rc) rc = finish(&j);
    /* the clean-up's calls (ordo_unbind) start from a clear error: keep the failure's */
    char why[700] = "";
    if (rc) snprintf(why, sizeof why, "%s", ordo__error_text(rc));
    job_free(&j);
    if (rc) ordo__error_set(rc, "%s", why);
    return rc;
}
