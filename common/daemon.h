/* daemon: the start-up every ordo daemon shares. It reads the conf (defaults, -c FILE,
 * ORDO_* environment, --section.key=value flags; --help, --version, --print-conf), sets the
 * log level and role, ignores SIGPIPE, optionally turns SIGINT/SIGTERM into a stop flag the
 * daemon's loop polls, and maps a run's result onto the daemons' exit codes. */
#ifndef ORDO_DAEMON_H
#define ORDO_DAEMON_H

#include <stdbool.h>

#include "common/conf.h"

/* the exit code of a daemon whose run was aborted (by the cluster, a dead peer or a signal) */
#define ORDO_EXIT_ABORT 3

typedef struct ordo__daemon_opts {
    const char *prog;  /* "ordo-server": the name in --help, --version and error lines */
    const char *role;  /* "server": the log lines' role (the rank is set once known) */
    const char *usage; /* the usage line after the program name */
    bool catch_stop;   /* SIGINT and SIGTERM set the stop flag instead of ending the process */
    bool keep_buffers; /* the process moves tensors: ordo__transport_keep_buffers() */
} ordo__daemon_opts_t;

/* ordo__daemon_init fills conf from argv, the environment and the conf file, and sets up
 * logging and signals as opts says. Returns 0 to run, 1 when it printed help, the version
 * or the conf (exit 0), or a negative code after printing one line to stderr (exit 2). */
int ordo__daemon_init(ordo__conf_t *conf, int argc, char **argv, const ordo__daemon_opts_t *opts);

/* ordo__daemon_stop_signal returns the signal that asked the daemon to stop, or 0. */
int ordo__daemon_stop_signal(void);

/* ordo__daemon_exit_code maps a run's result onto the exit code: 0 for 0, ORDO_EXIT_ABORT
 * when the cluster aborted or a peer died (ORDO_ERR_ABORT, ORDO_ERR_PEERDEAD), else 1. */
int ordo__daemon_exit_code(int rc);

#endif
