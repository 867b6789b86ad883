/* ordo-worker: reads the conf, joins the cluster and runs the job the conf names
 * (worker/run.h: the synthetic job or a model job). Exit codes: 0 when the job finished, 3
 * when the run was aborted, 1 on a failure (the scheduler is told why), 2 on a usage error. */
#include "common/daemon.h"
#include "common/error.h"
#include "common/log.h"
#include "common/node.h"
#include "client/ps.h"
#include "worker/run.h"

#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    ordo_conf_t conf;
    const ordo_daemon_opts_t dopts = {.prog = "ordo-worker",
                                      .role = "worker",
                                      .usage = "-c CONF [--section.key=VALUE ...]",
                                      .catch_stop = false,
                                      .keep_buffers = true};
    int rc = ordo_daemon_init(&conf, argc, argv, &dopts);
    if (rc) return rc > 0 ? 0 : 2;

    ordo__ps_t *w = NULL;
    if ((rc = ordo__ps_join(&conf, ordo_run_op_times, &conf, &w)) != 0) {
        fprintf(stderr, "ordo-worker: %s\n", ordo_error_text(rc));
        /* a worker restarted after its rank had finished (fault.worker = restart) */
        if (rc == ORDO_ERR_AUTH && strstr(ordo_error_text(rc), ORDO_REJECT_FINISHED)) return 0;
        return ordo_daemon_exit_code(rc);
    }
    ordo_log_set_role("worker", ordo__ps_rank(w));
    if (!strcmp(conf.trainer, "synthetic")) {
        rc = ordo_run_synthetic(w, &conf);
        if (rc == 0) rc = ordo__ps_finish(w, NULL);
    } else {
        rc = ordo_run_model(w, &conf);
    }
    if (rc != 0 && rc != ORDO_ERR_ABORT && rc != ORDO_ERR_PEERDEAD) {
        char why[600];
        snprintf(why, sizeof why, "worker %d: %s", ordo__ps_rank(w), ordo_error_text(rc));
        ordo__ps_abort(w, why);
    }
    if (rc) ORDO_ERROR("%s", ordo_error_text(rc));
    ordo__ps_destroy(&w);
    return ordo_daemon_exit_code(rc);
}
