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
    ordo__conf_t conf;
    ordo__scheduler_t *s = NULL;
    const ordo__daemon_opts_t dopts = {.prog = "ordo-scheduler",
                                      .role = "scheduler",
                                      .usage = "-c CONF [--section.key=VALUE ...]",
                                      .catch_stop = true,
                                      .keep_buffers = false};
    int rc = ordo__daemon_init(&conf, argc, argv, &dopts);
    if (rc) return rc > 0 ? 0 : 2;
    if ((rc = ordo__scheduler_new(&conf, &s)) != 0) {
        fprintf(stderr, "ordo-scheduler: %s\n", ordo__error_text(rc));
        return 1;
    }
    printf("READY %s\n", ordo__scheduler_endpoint(s));
    fflush(stdout);
    rc = ordo__scheduler_run(s);
    if (rc != ORDO_ERR_ABORT) {
        const char *summary = ordo__scheduler_summary(s);
        printf("SUMMARY %s\n", summary ? summary : "{}");
        fflush(stdout);
    }
    ordo__scheduler_destroy(&s);
    return ordo__daemon_exit_code(rc);
}
