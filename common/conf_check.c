/* conf_check: the rules between keys (ordo__conf_validate: what one key's value asks of
 * another's, each refusal naming both) and the [straggle] injection the workers query. */
#include "common/codec.h"
#include "common/conf.h"
#include "common/error.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* parse [straggle] ranks into out (n set); ORDO_ERR_INVAL naming the key on a bad entry */
static int straggle_ranks(const ordo__conf_t *conf, int *out, int *n)
{
    const char *p = conf->straggle_ranks;
    *n = 0;
    while (*p) {
        char *end;
        while (*p == ' ' || *p == ',')
            p++;
        if (!*p) break;
        errno = 0;
        long r = strtol(p, &end, 10);
        if (end == p || errno || r < 0 || r >= conf->workers)
            return ordo__error_set(ORDO_ERR_INVAL,
                                  "straggle.ranks: '%s' is not a worker rank (0 to "
                                  "%d)",
                                  conf->straggle_ranks, conf->workers - 1);
        if (*n == ORDO_STRAGGLE_MAX_RANKS)
            return ordo__error_set(ORDO_ERR_INVAL, "straggle.ranks: more than %d ranks",
                                  ORDO_STRAGGLE_MAX_RANKS);
        out[(*n)++] = (int)r;
        p = end;
        while (*p == ' ')
            p++;
        if (*p && *p != ',')
            return ordo__error_set(ORDO_ERR_INVAL,
                                  "straggle.ranks: '%s' is not a comma list of "
                                  "ranks",
                                  conf->straggle_ranks);
    }
    return 0;
}

bool ordo__conf_is_straggler(const ordo__conf_t *conf, int rank)
{
    int r[ORDO_STRAGGLE_MAX_RANKS], n;
    if (straggle_ranks(conf, r, &n) != 0) return false;
    for (int i = 0; i < n; i++)
        if (r[i] == rank) return true;
    return false;
}

int ordo__conf_stats_every(const ordo__conf_t *conf)
{
    if (conf->stats_every > 0) return conf->stats_every;
    return conf->workers > ORDO_STATS_AUTO_WORKERS
               ? (conf->workers + ORDO_STATS_AUTO_WORKERS - 1) / ORDO_STATS_AUTO_WORKERS
               : 1;
}

int ordo__conf_heartbeat_ms(const ordo__conf_t *conf)
{
    int64_t members = (int64_t)ordo__conf_max_workers(conf) + conf->servers;
    if (members <= ORDO_HEARTBEAT_AUTO_MEMBERS) return conf->heartbeat_ms;
    int64_t widened = (int64_t)conf->heartbeat_ms *
                      ((members + ORDO_HEARTBEAT_AUTO_MEMBERS - 1) / ORDO_HEARTBEAT_AUTO_MEMBERS);
    int64_t cap = conf->timeout_ms / 2; /* what ordo__conf_validate allows heartbeat_ms */
    if (widened > cap) widened = cap;
    return widened > conf->heartbeat_ms ? (int)widened : conf->heartbeat_ms;
}

int ordo__conf_timeout_max_ms(const ordo__conf_t *conf)
{
    int64_t m = conf->timeout_max_ms ? conf->timeout_max_ms : 4 * (int64_t)conf->timeout_ms;
    if (m < conf->timeout_ms) m = conf->timeout_ms;
    return m > 4 * 3600000 ? 4 * 3600000 : (int)m;
}

double ordo__conf_straggle_delay_ms(const ordo__conf_t *conf, int rank, int64_t iter)
{
    if (conf->straggle_probability <= 0 || conf->straggle_delay_ms <= 0) return 0;
    /* splitmix64 of (seed, rank, iter): independent draws, the same in every run */
    uint64_t z = conf->straggle_seed * 0x9e3779b97f4a7c15ull +
                 (uint64_t)rank * 0xbf58476d1ce4e5b9ull + (uint64_t)iter * 0x94d049bb133111ebull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    double u = (double)(z >> 11) / 9007199254740992.0;
    return u < conf->straggle_probability ? conf->straggle_delay_ms : 0;
}

/* ---- auto values -------------------------------------------------------------------- */

bool ordo__conf_planned(const ordo__conf_t *conf)
{
    return conf->policy_kind != ORDO_POLICY_NONE && conf->policy_kind != ORDO_POLICY_FIFO;
}

int ordo__conf_enforce_mode(const ordo__conf_t *conf)
{
    if (conf->enforce != ORDO_ENFORCE_AUTO) return conf->enforce;
    return ordo__conf_planned(conf) && !conf->forward_only ? ORDO_ENFORCE_GREEDY
                                                          : ORDO_ENFORCE_STRICT;
}

int ordo__conf_pull_mode(const ordo__conf_t *conf)
{
    if (conf->pull != ORDO_PULL_AUTO) return conf->pull;
    /* local_size 0 is the launcher's host size, which may make groups */
    bool groups = conf->intra_backend != ORDO_INTRA_NONE && conf->local_size != 1;
    return ordo__conf_planned(conf) && !conf->forward_only && !groups ? ORDO_PULL_EARLY
                                                                     : ORDO_PULL_START;
}

int64_t ordo__conf_credit_bytes(const ordo__conf_t *conf)
{
    if (conf->credit_bytes != ORDO_CONF_AUTO_BYTES) return conf->credit_bytes;
    double bps = conf->plan_bandwidth_bps > 0 ? conf->plan_bandwidth_bps
                 : conf->bandwidth_bps > 0    ? conf->bandwidth_bps
                                              : 10e9;
    int64_t b = (int64_t)(bps / 8 * 1e-3);
    return b < 65536 ? 65536 : b;
}

int64_t ordo__conf_segment_bytes(const ordo__conf_t *conf)
{
    return conf->segment_bytes != ORDO_CONF_AUTO_BYTES ? conf->segment_bytes : 1 << 20;
}

bool ordo__conf_step_tuned(const ordo__conf_t *conf)
{
    return (conf->segment_bytes == ORDO_CONF_AUTO_BYTES ||
            conf->credit_bytes == ORDO_CONF_AUTO_BYTES) &&
           ordo__conf_planned(conf) && !conf->forward_only && conf->push_mode == ORDO_PUSH_DENSE;
}

void ordo__conf_resolve(ordo__conf_t *conf)
{
    conf->enforce = ordo__conf_enforce_mode(conf);
    conf->pull = ordo__conf_pull_mode(conf);
}

/* what a worker joining or leaving a running bsp iteration needs (fault.worker = restart |
 * shrink, fault.max_workers above cluster.workers): the modes that keep state across workers
 * or iterations cannot follow; NULL when the conf allows it */
static const char *elastic_needs(const ordo__conf_t *conf)
{
    return conf->sync_mode != ORDO_SYNC_BSP      ? "sync.mode = bsp"
           : conf->backup > 0                    ? "sync.backup = 0"
           : conf->push_mode == ORDO_PUSH_SPARSE ? "push.mode = dense or merged"
           : conf->calibrate                     ? "push.calibrate = false"
           : conf->intra_backend != ORDO_INTRA_NONE && conf->local_size > 1
               ? "intra.backend = none"
           : conf->forward_only ? "model.forward_only = false"
                                : NULL;
}

static int fault_worker_check(const ordo__conf_t *conf)
{
    if (conf->max_workers && conf->max_workers < conf->workers)
        return ordo__error_set(ORDO_ERR_INVAL,
                              "fault.max_workers (%d) must be 0 (no growth) or at least "
                              "cluster.workers (%d)",
                              conf->max_workers, conf->workers);
    if (conf->max_workers > conf->workers) {
        const char *why = elastic_needs(conf);
        if (!why && conf->push_mode != ORDO_PUSH_DENSE) why = "push.mode = dense";
        if (!why && conf->replicas > 1) why = "fault.replicas = 1";
        if (!why && strcmp(conf->trainer, "declared") != 0)
            why = "a [worker] command program (model.trainer = declared; the built-in jobs "
                  "divide their data by cluster.workers)";
        if (why)
            return ordo__error_set(ORDO_ERR_INVAL,
                                  "fault.max_workers = %d (growing the run beyond cluster.workers "
                                  "= %d) needs %s",
                                  conf->max_workers, conf->workers, why);
    }
    if (conf->fault_worker == ORDO_FAULT_ABORT) return 0;
    const char *mode = conf->fault_worker == ORDO_FAULT_RESTART ? "restart" : "shrink";
    const char *why = elastic_needs(conf);
    if (why) return ordo__error_set(ORDO_ERR_INVAL, "fault.worker = %s needs %s", mode, why);
    if (conf->fault_worker == ORDO_FAULT_SHRINK && conf->workers < 2)
        return ordo__error_set(ORDO_ERR_INVAL, "fault.worker = shrink needs cluster.workers >= 2");
    return 0;
}

/* fault_scheduler_check: fault.scheduler = restart rebuilds the scheduler from what the
 * servers and workers hold (docs/fault.md); the states only the scheduler held are refused,
 * naming the pair and why */
static int fault_scheduler_check(const ordo__conf_t *conf)
{
    if (conf->fault_scheduler != ORDO_SCHED_RESTART) return 0;
    const char *with = NULL, *why = NULL;
    if (conf->fault_worker != ORDO_FAULT_ABORT && ordo__conf_batch_service(conf))
        return ordo__error_set(ORDO_ERR_INVAL,
                              "fault.scheduler = restart cannot be combined with fault.worker = %s "
                              "and the batch service (sync.batches): the batches a dead worker "
                              "leased go back to a pool only the scheduler holds",
                              conf->fault_worker == ORDO_FAULT_RESTART ? "restart" : "shrink");
    if (conf->push_mode == ORDO_PUSH_SPARSE) {
        with = "push.mode = sparse";
        why = "the sparse coordinator's global threshold and histograms live in the scheduler";
    } else if (conf->calibrate) {
        with = "push.calibrate = true";
        why = "the merge groups measured at start-up are not in the plan a new scheduler makes";
    }
    if (!with) return 0;
    return ordo__error_set(ORDO_ERR_INVAL, "fault.scheduler = restart cannot be combined with %s: %s",
                          with, why);
}

int ordo__conf_max_workers(const ordo__conf_t *conf)
{
    return conf->max_workers > conf->workers ? conf->max_workers : conf->workers;
}

/* replicas_check: [fault] replicas > 1 with what replication is not built or tested for, each
 * refused pair named with its reason (docs/fault.md's table) */
static int replicas_check(const ordo__conf_t *conf)
{
    int r = conf->replicas;
    if (r <= 1) return 0;
    if (conf->push_mode == ORDO_PUSH_SPARSE)
        return ordo__error_set(ORDO_ERR_INVAL,
                              "fault.replicas = %d with push.mode = sparse is not supported: the "
                              "servers' sparse regions, their momentum and the global threshold are "
                              "not replicated (use push.mode = dense or merged)", r);
    if (conf->intra_backend == ORDO_INTRA_NCCL && conf->local_size > 1)
        return ordo__error_set(ORDO_ERR_INVAL,
                              "fault.replicas = %d with intra.backend = nccl is not supported: "
                              "replicas with host groups were tested with intra.backend = shm "
                              "only (the nccl path needs GPUs the tests did not have)", r);
    return 0;
}

/* push.compression: a codec spec, and the pairs a compressed wire cannot serve */
static int compression(const ordo__conf_t *conf)
{
    ordo__codec_spec_t c;
    const char *spec = conf->compression;
    bool automatic = !strcmp(spec, "auto") || !strncmp(spec, "auto:", 5);
    int rc = ordo__codec_parse(automatic ? (spec[4] ? spec + 5 : "bf16") : spec, &c);
    if (rc) return ordo__error_context(rc, "push.compression");
    if (automatic && c.id != ORDO__CODEC_BF16 && c.id != ORDO__CODEC_FP16)
        return ordo__error_set(ORDO_ERR_INVAL,
                              "push.compression = %s: auto chooses between float32 and a 16-bit "
                              "cast (auto, auto:bf16 or auto:fp16)",
                              spec);
    if (c.id != ORDO__CODEC_NONE && conf->push_mode == ORDO_PUSH_SPARSE)
        return ordo__error_set(ORDO_ERR_INVAL,
                              "push.compression = %s does not go with push.mode = sparse (the "
                              "sparse path is a compressor of its own: push.density)",
                              conf->compression);
    if (c.ef && conf->replicas > 1)
        return ordo__error_set(ORDO_ERR_INVAL,
                              "push.compression = %s with error feedback does not go with "
                              "fault.replicas = %d: a push sent again to a promoted backup would "
                              "be encoded twice (ef=none, or fault.replicas = 1)",
                              conf->compression, conf->replicas);
    return 0;
}

int ordo__conf_validate(const ordo__conf_t *conf)
{
    int ranks[ORDO_STRAGGLE_MAX_RANKS], n_ranks, rc;
    if ((rc = straggle_ranks(conf, ranks, &n_ranks)) != 0) return rc;
    if (conf->backup > 0 && conf->backup >= conf->workers)
        return ordo__error_set(ORDO_ERR_INVAL,
                              "sync.backup (%d) must be below cluster.workers (%d): "
                              "every update needs at least one push",
                              conf->backup, conf->workers);
    if (conf->backup > 0 && conf->sync_mode != ORDO_SYNC_BSP)
        return ordo__error_set(ORDO_ERR_INVAL, "sync.backup needs sync.mode = bsp (ssp and asp do "
                                           "not wait for the slowest pushes)");
    if (conf->sync_mode != ORDO_SYNC_BSP && conf->push_mode != ORDO_PUSH_DENSE)
        return ordo__error_set(ORDO_ERR_INVAL, "sync.mode = %s needs push.mode = dense",
                              conf->sync_mode == ORDO_SYNC_SSP ? "ssp" : "asp");
    if (conf->sync_mode != ORDO_SYNC_BSP && (conf->checkpoint_every > 0 || conf->resume[0]))
        return ordo__error_set(ORDO_ERR_INVAL,
                              "fault.checkpoint_every and fault.resume need sync.mode "
                              "= bsp (under ssp and asp the workers are at different iterations)");
    if (conf->backup > 0 && conf->push_mode != ORDO_PUSH_DENSE)
        return ordo__error_set(ORDO_ERR_INVAL, "sync.backup needs push.mode = dense");
    if ((conf->sync_mode != ORDO_SYNC_BSP || conf->backup > 0) &&
        conf->intra_backend != ORDO_INTRA_NONE && conf->local_size > 1)
        return ordo__error_set(ORDO_ERR_INVAL,
                              "sync.mode = %s%s needs intra.backend = none (a host "
                              "group pushes one sum per iteration, in step)",
                              conf->sync_mode == ORDO_SYNC_SSP   ? "ssp"
                              : conf->sync_mode == ORDO_SYNC_ASP ? "asp"
                                                                 : "bsp",
                              conf->backup > 0 ? " with sync.backup" : "");
    if ((rc = compression(conf)) != 0) return rc;
    if (conf->replicas > conf->servers)
        return ordo__error_set(ORDO_ERR_INVAL,
                              "fault.replicas (%d) must be at most cluster.servers "
                              "(%d): each copy of a slice lives on another server",
                              conf->replicas, conf->servers);
    if ((rc = replicas_check(conf)) != 0) return rc;
    if (conf->heartbeat_ms * 2 > conf->timeout_ms)
        return ordo__error_set(
            ORDO_ERR_INVAL, "fault.heartbeat_ms (%d) must be at most half of fault.timeout_ms (%d)",
            conf->heartbeat_ms, conf->timeout_ms);
    if (conf->timeout_max_ms && conf->timeout_max_ms < conf->timeout_ms)
        return ordo__error_set(ORDO_ERR_INVAL,
                              "fault.timeout_max_ms (%d) must be 0 or at least fault.timeout_ms (%d)",
                              conf->timeout_max_ms, conf->timeout_ms);
    if (!strcmp(conf->trainer, "profile") && !conf->model_file[0])
        return ordo__error_set(ORDO_ERR_INVAL, "model.trainer = profile needs model.file");
    if (conf->compute == ORDO_COMPUTE_EMULATE &&
        (!strcmp(conf->trainer, "mlp") || !strcmp(conf->trainer, "cnn")))
        return ordo__error_set(ORDO_ERR_INVAL, "model.trainer = %s needs model.compute = cpu or cuda",
                              conf->trainer);
    if (conf->push_mode == ORDO_PUSH_SPARSE && !strcmp(conf->trainer, "synthetic"))
        return ordo__error_set(ORDO_ERR_INVAL,
                              "push.mode = sparse needs a model job (model.trainer = "
                              "profile, mlp or cnn); the synthetic job checks dense values");
    if (conf->calibrate && conf->push_mode != ORDO_PUSH_MERGED)
        return ordo__error_set(ORDO_ERR_INVAL, "push.calibrate = true needs push.mode = merged (it "
                                           "calibrates the merge planner)");
    if (conf->calibrate && !strncmp(conf->merge, "file:", 5))
        return ordo__error_set(ORDO_ERR_INVAL,
                              "push.calibrate = true plans the groups at start-up; "
                              "push.merge = %s brings its own",
                              conf->merge);
    if (conf->resume[0] && conf->init_params[0])
        return ordo__error_set(ORDO_ERR_INVAL, "fault.resume takes the values from the run's "
                                           "checkpoint; model.init cannot give others");
    if (conf->resume[0] && !strcmp(conf->trainer, "synthetic"))
        return ordo__error_set(ORDO_ERR_INVAL,
                              "fault.resume needs a model job (model.trainer = "
                              "profile, mlp or cnn); the synthetic job keeps no checkpoints");
    if ((rc = fault_worker_check(conf)) != 0) return rc;
    if ((rc = fault_scheduler_check(conf)) != 0) return rc;
    if (conf->segment_bytes != ORDO_CONF_AUTO_BYTES && conf->segment_bytes > 0 &&
        conf->segment_bytes < 1024)
        return ordo__error_set(
            ORDO_ERR_INVAL, "order.segment_bytes (%lld) must be 0 (whole chunks) or at least 1024",
            (long long)conf->segment_bytes);
    if (conf->curve && !conf->keys_dir[0])
        return ordo__error_set(ORDO_ERR_INVAL, "security.curve = true needs security.keys (a "
                                           "folder written by ordo-keygen)");
    if (conf->warmup >= conf->iterations && conf->iterations > 0 && conf->epochs == 0)
        return ordo__error_set(ORDO_ERR_INVAL, "model.warmup (%d) must be below model.iterations (%d)",
                              conf->warmup, conf->iterations);
    return 0;
}

bool ordo__conf_batch_service(const ordo__conf_t *conf)
{
    if (conf->batches != ORDO_BATCHES_AUTO) return conf->batches == ORDO_BATCHES_ON;
    return conf->sync_mode != ORDO_SYNC_BSP || conf->backup > 0;
}
