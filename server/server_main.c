/* ordo-server: reads the conf, binds the data port, joins the cluster and runs the server
 * object (server/server.h) until the scheduler ends the run; with --join it takes the place of
 * a dead server in a running cluster (fault.replicas > 1) as a new backup. Exit codes: 0 after an orderly
 * shutdown, 3 when the run was aborted, 1 on a start-up failure, 2 on a usage error. */
#include "common/daemon.h"
#include "common/error.h"
#include "common/log.h"
#include "common/node.h"
#include "common/transport.h"
#include "server/server.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    ordo__conf_t conf;
    ordo__node_t node = {0};
    ordo__server_t *s = NULL;
    const ordo__daemon_opts_t dopts = {.prog = "ordo-server",
                                      .role = "server",
                                      .usage = "-c CONF [--join] [--section.key=VALUE ...]",
                                      .catch_stop = true,
                                      .keep_buffers = true};
    /* --join: replace a dead server of a running cluster ([fault] replicas > 1) */
    int n = 0;
    for (int i = 0; i < argc; i++) {
        if (i > 0 && !strcmp(argv[i], "--join"))
            node.join = true;
        else
            argv[n++] = argv[i];
    }
    argc = n;
    argv[argc] = NULL;
    int rc = ordo__daemon_init(&conf, argc, argv, &dopts);
    if (rc) return rc > 0 ? 0 : 2;

    ordo__transport_opts_t opts = {.bandwidth_bps = conf.bandwidth_bps,
                                  .latency_us = conf.latency_us,
                                  .msg_us = conf.msg_us,
                                  .role = ORDO_ROLE_SERVER,
                                  .rank = -1,
                                  .inline_io = !conf.io_thread};
    ordo__transport_opts_conf(&opts, &conf);
    if ((rc = ordo__transport_new(&opts, &node.tp)) != 0) goto fail;
    char want[300], actual[300];
    snprintf(want, sizeof want, "tcp://%s:%d", conf.host, conf.port);
    rc = ordo__transport_bind(node.tp, want, 1, actual, sizeof actual);
    if (rc < 0) goto fail;
    int data_sock = rc;
    printf("READY %s\n", actual); /* listening; the WELCOME comes once everyone registered */
    fflush(stdout);
    if ((rc = ordo__node_join(&node, &conf, ORDO_ROLE_SERVER, actual)) != 0) goto fail;
    ordo__log_set_role("server", node.rank);
    if ((rc = ordo__server_new(&conf, &node, data_sock, &s)) != 0) goto fail;
    ordo__server_stats_t st;
    ordo__server_get_stats(s, &st);
    ORDO_INFO("serving %.1f MiB on %s", (double)st.shard_bytes / 1048576.0, actual);
    rc = ordo__server_run(s);
    ordo__server_destroy(&s);
    return ordo__daemon_exit_code(rc);
fail:
    fprintf(stderr, "ordo-server: %s\n", ordo__error_text(rc));
    if (node.keys && rc != ORDO_ERR_ABORT && rc != ORDO_ERR_PEERDEAD) {
        /* joined: the scheduler ends the run with the reason instead of waiting for a timeout */
        char why[600];
        snprintf(why, sizeof why, "server %d: %s", node.rank, ordo__error_text(rc));
        ordo__msg_t a;
        ordo__msg_init(&a, ORDO_MSG_ABORT);
        ordo__msg_add_text(&a, why);
        ordo__node_send_ctl(&node, &a);
    }
    ordo__transport_destroy(&node.tp, node.keys ? 500 : 0);
    ordo__node_fini(&node);
    return rc == ORDO_ERR_ABORT || rc == ORDO_ERR_PEERDEAD ? ORDO_EXIT_ABORT : 1;
}
