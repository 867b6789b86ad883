/* runplan_intra: the plan's intra-host groups. */
#include "scheduler/runplan_intra.h"
#include "common/clock.h"
#include "common/error.h"
#include "common/log.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

int ordo_runplan_intra(const ordo_conf_t *conf, json_t *plan)
{
    int L = conf->local_size;
    if (conf->intra_backend == ORDO_INTRA_NONE || L <= 1) {
        if (conf->intra_backend != ORDO_INTRA_NONE)
            ORDO_INFO("intra: backend set but cluster.local_size is %d: every worker talks to "
                      "the servers itself", L);
        return 0;
    }
    if (conf->workers % L)
        return ordo_error_set(ORDO_ERR_INVAL,
                              "cluster.local_size = %d does not divide cluster.workers = %d", L,
                              conf->workers);
    if (conf->push_mode == ORDO_PUSH_SPARSE)
        return ordo_error_set(ORDO_ERR_INVAL, "intra.backend needs push.mode = dense or merged "
                                           "(sparse pushes keep the flat path)");
    /* ordo-worker's synthetic job pushes and pulls key by key; a [worker] command program
     * drives its iterations through ordo_bind (key-level calls are refused in groups) */
    if (strcmp(conf->trainer, "synthetic") == 0 && !conf->worker_command[0])
        return ordo_error_set(ORDO_ERR_INVAL, "intra.backend needs a model run (model.trainer = "
                                           "profile, mlp, cnn or declared, or a [worker] command "
                                           "program); ordo-worker's synthetic job pushes and "
                                           "pulls every key itself");
    if (ordo_conf_pull_mode(conf) == ORDO_PULL_EARLY)
        return ordo_error_set(ORDO_ERR_INVAL, "intra.backend needs order.pull = start (a group "
                                           "member pulls only its share of the keys)");
    /* unique per run: segment names must never meet a crashed run's */
    char run[64];
    snprintf(run, sizeof run, "%ld-%llx", (long)getpid(), (unsigned long long)ordo_clock_ns());
    const char *backend = conf->intra_backend == ORDO_INTRA_SHM ? "shm" : "nccl";
    json_object_set_new(plan, "intra",
                        json_pack("{s:s,s:i,s:i,s:s,s:b}", "backend", backend, "local_size", L,
                                  "groups", conf->workers / L, "run", run, "overlap",
                                  conf->intra_overlap));
    ORDO_INFO("intra: %d groups of %d workers (%s%s); servers count one pusher per group",
              conf->workers / L, L, backend,
              conf->intra_overlap ? "" : ", the forward pass waits for every all-gather");
    return 0;
}
