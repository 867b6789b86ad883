/* runplan_intra: the plan's intra-host groups. */
#include "scheduler/runplan_intra.h"
#include "common/clock.h"
#include "common/error.h"
#include "common/log.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int ordo__runplan_pushers(const ordo__conf_t *conf)
{
    int L = conf->local_size;
    bool groups = conf->intra_backend != ORDO_INTRA_NONE && L > 1 && conf->workers % L == 0;
    return groups ? conf->workers / L : conf->workers;
}

int ordo__runplan_intra(const ordo__conf_t *conf, json_t *plan)
{
    int L = conf->local_size;
    if (conf->intra_backend == ORDO_INTRA_NONE || L <= 1) {
        if (conf->intra_backend != ORDO_INTRA_NONE)
            ORDO_INFO("intra: backend set but cluster.local_size is %d: every worker talks to "
                      "the servers itself", L);
        return 0;
    }
    if (conf->workers % L)
        return ordo__error_set(ORDO_ERR_INVAL,
                              "cluster.local_size = %d does not divide cluster.workers = %d", L,
                              conf->workers);
    if (conf->push_mode == ORDO_PUSH_SPARSE)
        return ordo__error_set(ORDO_ERR_INVAL, "intra.backend needs push.mode = dense or merged "
                                           "(sparse pushes keep the flat path)");
    /* ordo-worker's synthetic job pushes and pulls key by key; a [worker] command program
     * drives its iterations through ordo_bind (key-level calls are refused in groups) */
    if (strcmp(conf->trainer, "synthetic") == 0 && !conf->worker_command[0])
        return ordo__error_set(ORDO_ERR_INVAL, "intra.backend needs a model run (model.trainer = "
                                           "profile, mlp, cnn or declared, or a [worker] command "
                                           "program); ordo-worker's synthetic job pushes and "
                                           "pulls every key itself");
    if (ordo__conf_pull_mode(conf) == ORDO_PULL_EARLY)
        return ordo__error_set(ORDO_ERR_INVAL, "intra.backend needs order.pull = start (a group "
                                           "member pulls only its share of the keys)");
    /* unique per run: segment names must never meet a crashed run's */
    char run[64];
    snprintf(run, sizeof run, "%ld-%llx", (long)getpid(), (unsigned long long)ordo__clock_ns());
    const char *backend = conf->intra_backend == ORDO_INTRA_SHM    ? "shm"
                          : conf->intra_backend == ORDO_INTRA_NCCL ? "nccl"
                                                                   : "auto";
    json_object_set_new(plan, "intra",
                        json_pack("{s:s,s:i,s:i,s:s,s:b}", "backend", backend, "local_size", L,
                                  "groups", conf->workers / L, "run", run, "overlap",
                                  conf->intra_overlap));
    ORDO_INFO("intra: %d groups of %d workers (%s%s); servers count one pusher per group",
              conf->workers / L, L, backend,
              conf->intra_overlap ? "" : ", the forward pass waits for every all-gather");
    return 0;
}

int ordo__runplan_intra_check(const ordo__conf_t *conf, const json_t *plan,
                             const char *const *choice, int workers)
{
    json_t *intra = json_object_get(plan, "intra");
    const char *backend = json_string_value(json_object_get(intra, "backend"));
    int L = (int)json_integer_value(json_object_get(intra, "local_size"));
    if (!backend || strcmp(backend, "auto") != 0 || L < 1) return 0;
    int n_nccl = 0;
    for (int g = 0; g * L < workers; g++) {
        bool same = true;
        for (int m = 0; m < L && g * L + m < workers; m++) {
            const char *c = choice[g * L + m] ? choice[g * L + m] : "shm";
            const char *c0 = choice[g * L] ? choice[g * L] : "shm";
            same = same && strcmp(c, c0) == 0;
            n_nccl += strcmp(c, "nccl") == 0;
        }
        if (same) continue;
        char who[512];
        size_t len = 0;
        for (int m = 0; m < L && g * L + m < workers && len < sizeof who; m++)
            len += (size_t)snprintf(who + len, sizeof who - len, "%sworker %d %s", m ? ", " : "",
                                    g * L + m,
                                    choice[g * L + m] ? choice[g * L + m] : "shm");
        return ordo__error_set(ORDO_ERR_INVAL,
                              "intra.backend = auto: the members of group %d resolved different "
                              "backends (%s); a group needs one: put every member's tensors on "
                              "the same kind of device (intra.device), or set intra.backend",
                              g, who);
    }
    if (n_nccl && conf->replicas > 1)
        return ordo__error_set(ORDO_ERR_INVAL,
                              "fault.replicas = %d with intra.backend = auto, resolved to nccl "
                              "by %d workers, is not supported: replicas with host groups were "
                              "tested with shm only", conf->replicas, n_nccl);
    for (int g = 0; g * L < workers; g++)
        ORDO_INFO("intra.backend = auto: group %d takes %s", g,
                  choice[g * L] ? choice[g * L] : "shm");
    return 0;
}
