/* ordo-worker: reads the conf, joins the cluster through libordo's public API and runs the
 * job the conf names (worker/run.h: the synthetic job or a model job). Exit codes: 0 when the
 * job finished, 3 when the run was aborted, 1 on a failure (the scheduler is told why), 2 on
 * a usage error. */
#include "common/daemon.h"
#include "common/error.h"
#include "common/log.h"
#include "common/node.h"
#include "ordo/ordo.h"
#include "worker/run.h"

#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    ordo__conf_t conf;
    const ordo__daemon_opts_t dopts = {.prog = "ordo-worker",
                                      .role = "worker",
                                      .usage = "-c CONF [--section.key=VALUE ...]",
                                      .catch_stop = false,
                                      .keep_buffers = true};
    int rc = ordo__daemon_init(&conf, argc, argv, &dopts);
    if (rc) return rc > 0 ? 0 : 2;

    /* the library reads the same command line; the network moves on the bound model's
     * thread, so [net] io_thread keeps the conf's value (false unless set) */
    ordo_t *o = NULL;
    if ((rc = ordo_new_args(argc, argv, &o)) != 0 ||
        (rc = ordo_set(o, "net.io_thread", conf.io_thread ? "true" : "false")) != 0 ||
        /* intra.backend = auto: the tensors are where the executor computes */
        (conf.intra_device == ORDO_DEVICE_AUTO &&
         (rc = ordo_set(o, "intra.device",
                        conf.compute == ORDO_COMPUTE_CUDA ? "cuda" : "cpu")) != 0) ||
        (rc = ordo_set_op_times(o, ordo__run_op_times, &conf)) != 0 ||
        (rc = ordo__run_declare(o, &conf)) != 0) {
        fprintf(stderr, "ordo-worker: %s\n", ordo_last_error());
        ordo_destroy(&o);
        return 2;
    }
    if ((rc = ordo_join(o)) != 0) {
        fprintf(stderr, "ordo-worker: %s\n", ordo_last_error());
        /* a worker restarted after its rank had finished (fault.worker = restart) */
        bool finished = rc == ORDO_ERR_AUTH && strstr(ordo_last_error(), ORDO_REJECT_FINISHED);
        ordo_destroy(&o);
        return finished ? 0 : ordo__daemon_exit_code(rc);
    }
    if (!strcmp(conf.trainer, "synthetic")) {
        rc = ordo__run_synthetic(o, &conf);
        if (rc == 0) rc = ordo_leave(o);
    } else {
        rc = ordo__run_model(o, &conf);
    }
    if (rc) {
        char why[600];
        snprintf(why, sizeof why, "%s", ordo__error_text(rc));
        ORDO_ERROR("%s", why);
        /* a failure of this worker's own (not the cluster's) is the scheduler's to hear */
        if (rc != ORDO_ERR_ABORT && rc != ORDO_ERR_PEERDEAD) ordo_abort(o, why);
    }
    ordo_destroy(&o);
    return ordo__daemon_exit_code(rc);
}
