/* ordo-scheduler: reads the conf, builds the scheduler object (scheduler/scheduler.h), says
 * where it listens (READY ENDPOINT) and runs it; at the end it prints the run's summary
 * (SUMMARY JSON). Exit codes: 0 when the run completed, 3 when it was aborted, 1 on a
 * start-up failure, 2 on a usage error. */
#include "common/daemon.h"
#include "common/error.h"
#include "scheduler/scheduler.h"

#include <stdio.h>

int main(int argc, char **argv)
{
    ordo_conf_t conf;
    ordo_scheduler_t *s = NULL;
    const ordo_daemon_opts_t dopts = {.prog = "ordo-scheduler",
                                      .role = "scheduler",
                                      .usage = "-c CONF [--section.key=VALUE ...]",
                                      .catch_stop = true,
                                      .keep_buffers = false};
    int rc = ordo_daemon_init(&conf, argc, argv, &dopts);
    if (rc) return rc > 0 ? 0 : 2;
    if ((rc = ordo_scheduler_new(&conf, &s)) != 0) {
        fprintf(stderr, "ordo-scheduler: %s\n", ordo_error_text(rc));
        return 1;
    }
    printf("READY %s\n", ordo_scheduler_endpoint(s));
    fflush(stdout);
    rc = ordo_scheduler_run(s);
    if (rc != ORDO_ERR_ABORT) {
        const char *summary = ordo_scheduler_summary(s);
        printf("SUMMARY %s\n", summary ? summary : "{}");
        fflush(stdout);
    }
    ordo_scheduler_destroy(&s);
    return ordo_daemon_exit_code(rc);
}
