/* daemon: the daemons' shared start-up (conf and CLI, logging, signals) and exit codes. */
#include "common/daemon.h"
#include "common/error.h"
#include "common/log.h"
#include "common/transport.h"

#include <signal.h>

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
    stop_signal = sig;
}

int ordo__daemon_init(ordo__conf_t *conf, int argc, char **argv, const ordo__daemon_opts_t *opts)
{
    int rc = ordo__conf_cli(conf, argc, argv, opts->prog, opts->usage);
    if (rc) return rc;
    ordo__log_level_t lvl;
    ordo__log_parse_level(conf->log_level, &lvl);
    ordo__log_set_level(lvl);
    ordo__log_set_role(opts->role, -1);
    signal(SIGPIPE, SIG_IGN);
    if (opts->catch_stop) {
        signal(SIGINT, on_signal);
        signal(SIGTERM, on_signal);
    }
    if (opts->keep_buffers) ordo__transport_keep_buffers();
    return 0;
}

int ordo__daemon_stop_signal(void)
{
    return stop_signal;
}

int ordo__daemon_exit_code(int rc)
{
    if (rc == 0) return 0;
    return rc == ORDO_ERR_ABORT || rc == ORDO_ERR_PEERDEAD ? ORDO_EXIT_ABORT : 1;
}
