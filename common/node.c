/* node: registration with the scheduler and the cluster map it returns. */
#include "common/node.h"
#include "common/clock.h"
#include "common/error.h"
#include "common/log.h"
#include "common/node_rejoin.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int parse_welcome(ordo__node_t *node, const char *text)
{
    json_error_t jerr;
    int rc = ORDO_ERR_PROTO;
    json_t *root = json_loads(text, 0, &jerr);
    if (!root) return ordo__error_set(ORDO_ERR_PROTO, "WELCOME: invalid JSON: %s", jerr.text);
    json_t *rank = json_object_get(root, "rank"), *servers = json_object_get(root, "servers");
    json_t *workers = json_object_get(root, "workers"), *keys = json_object_get(root, "keys");
    json_t *run_dir = json_object_get(root, "run_dir"), *plan = json_object_get(root, "plan");
    if (!json_is_integer(rank) || !json_is_array(servers) || !json_is_integer(workers) ||
        !json_is_object(keys) || json_integer_value(rank) < 0 ||
        json_integer_value(workers) < 1 || json_array_size(servers) < 1) {
        rc = ordo__error_set(ORDO_ERR_PROTO, "WELCOME: missing or bad rank/servers/workers/keys");
        goto done;
    }
    node->rank = (int)json_integer_value(rank);
    node->n_workers = (int)json_integer_value(workers);
    node->n_servers = (int)json_array_size(servers);
    node->server_endpoints = calloc((size_t)node->n_servers, sizeof(char *));
    if (!node->server_endpoints) {
        rc = ORDO_ERR_NOMEM;
        goto done;
    }
    for (int i = 0; i < node->n_servers; i++) {
        const char *ep = json_string_value(json_array_get(servers, (size_t)i));
        if (!ep || strncmp(ep, "tcp://", 6) != 0) {
            rc = ordo__error_set(ORDO_ERR_PROTO, "WELCOME: servers[%d] is not a tcp endpoint", i);
            goto done;
        }
        node->server_endpoints[i] = strdup(ep);
    }
    char *kt = json_dumps(keys, JSON_COMPACT);
    rc = ordo__keys_from_json(kt, &node->keys);
    free(kt);
    if (rc) goto done;
    if (node->keys->n_servers != node->n_servers) {
        rc = ordo__error_set(ORDO_ERR_PROTO, "WELCOME: key map has %d servers, cluster %d",
                            node->keys->n_servers, node->n_servers);
        goto done;
    }
    if (json_is_string(run_dir))
        snprintf(node->run_dir, sizeof node->run_dir, "%s", json_string_value(run_dir));
    if (json_is_object(plan)) node->plan_json = json_dumps(plan, JSON_COMPACT);
    /* fault.worker = restart: the replacement of a dead worker goes on where it stopped */
    json_t *rejoin = json_object_get(root, "rejoin");
    node->rejoin_iter = -1;
    if (rejoin && (!json_is_integer(rejoin) || json_integer_value(rejoin) < 0)) {
        rc = ordo__error_set(ORDO_ERR_PROTO, "WELCOME: rejoin is not an iteration");
        goto done;
    }
    if (rejoin) node->rejoin_iter = json_integer_value(rejoin);
    node->plan_digest = ordo__node_plan_digest(root);
    json_t *gen = json_object_get(root, "generation");
    if (json_is_integer(gen) && json_integer_value(gen) > 0) node->generation = json_integer_value(gen);
    rc = 0;
done:
    json_decref(root);
    return rc;
}

/* keep a data message that came before the WELCOME (a peer may be a step ahead of us) */
static int stash(ordo__node_t *node, ordo__msg_t *m)
{
    if (node->n_early == node->cap_early) {
        int cap = node->cap_early ? node->cap_early * 2 : 16;
        if (cap > 65536) return ORDO_ERR_FULL;
        ordo__msg_t *p = malloc(sizeof *p * (size_t)cap);
        if (!p) return ORDO_ERR_NOMEM;
        for (int i = 0; i < node->n_early; i++) ordo__msg_move(&p[i], &node->early[i]);
        free(node->early);
        node->early = p;
        node->cap_early = cap;
    }
    ordo__msg_move(&node->early[node->n_early++], m);
    return 0;
}

int ordo__node_take_early(ordo__node_t *node, ordo__msg_t *m)
{
    if (node->n_early == 0) return ORDO_ERR_AGAIN;
    ordo__msg_move(m, &node->early[0]);
    for (int i = 1; i < node->n_early; i++) ordo__msg_move(&node->early[i - 1], &node->early[i]);
    node->n_early--;
    return 0;
}

int ordo__node_send_ctl(ordo__node_t *node, ordo__msg_t *m)
{
    m->sock = node->sched_sock;
    m->hdr.role = (uint8_t)node->role;
    m->hdr.rank = node->rank;
    return ordo__transport_send(node->tp, m);
}

/* no_welcome is the error of a registration the scheduler did not answer in time */
static int no_welcome(const ordo__conf_t *conf)
{
    return ordo__error_set(ORDO_ERR_TIMEDOUT, "no WELCOME from the scheduler at %s within %d ms%s",
                          conf->scheduler, conf->startup_ms,
                          conf->curve ? " (security.curve is on: does security.keys hold the "
                                        "cluster's server.pub?)"
                                      : "");
}

int ordo__node_join(ordo__node_t *node, const ordo__conf_t *conf, int role, const char *endpoint)
{
    int rc;
    node->role = role;
    node->rank = -1;
    node->rejoin_iter = -1;
    rc = ordo__transport_connect(node->tp, conf->scheduler, 0);
    if (rc < 0) return rc;
    node->sched_sock = rc;

    json_t *reg = json_pack("{s:s, s:s, s:i, s:i}", "role", ordo__wire_role_name(role), "token",
                            conf->token, "rank", conf->rank, "pid", (int)getpid());
    if (endpoint) json_object_set_new(reg, "endpoint", json_string(endpoint));
    /* the heartbeat thread's messages carry this id: the scheduler knows them by it */
    json_object_set_new(reg, "beat", json_integer((json_int_t)ordo__transport_heartbeat_id(node->tp)));
    if (node->join) json_object_set_new(reg, "join", json_true());
    if (node->reg_intra) json_object_set_new(reg, "intra", json_string(node->reg_intra));
    /* the scheduler checks that every worker pushes in the same wire type */
    if (role == ORDO_ROLE_WORKER)
        json_object_set_new(reg, "compression", json_string(conf->compression));
    if (node->reg_tensors) {
        json_t *t = json_loads(node->reg_tensors, 0, NULL);
        if (!json_is_array(t)) {
            json_decref(t);
            json_decref(reg);
            return ordo__error_set(ORDO_ERR_INVAL, "declared tensors: not a JSON array");
        }
        json_object_set_new(reg, "tensors", t);
    }
    char *text = json_dumps(reg, JSON_COMPACT);
    json_decref(reg);
    if (!text) return ORDO_ERR_NOMEM;
    ordo__node_rejoin_init(node, conf, text); /* the node keeps text for a new scheduler */
    ordo__msg_t m;
    ordo__msg_init(&m, ORDO_MSG_REGISTER);
    m.hdr.dtype = ORDO_DTYPE_JSON;
    ordo__msg_add_text(&m, text);
    if ((rc = ordo__node_send_ctl(node, &m)) != 0) return rc;
    /* heartbeats start now, so a scheduler that vanishes during start-up is noticed */
    rc = ordo__transport_heartbeat(node->tp, node->sched_sock, ordo__conf_heartbeat_ms(conf),
                                  conf->startup_ms, conf->startup_ms);
    if (rc < 0) return rc;

    int64_t deadline = ordo__clock_ns() + (int64_t)conf->startup_ms * 1000000;
    for (;;) {
        int64_t left = (deadline - ordo__clock_ns()) / 1000000;
        if (left <= 0) return no_welcome(conf);
        rc = ordo__transport_recv(node->tp, &m, (int)left);
        if (rc == ORDO_ERR_TIMEDOUT) continue;
        if (rc) return rc;
        char buf[512];
        switch (m.hdr.type) {
        case ORDO_MSG_WELCOME: {
            size_t len;
            char *d = ordo__msg_data(&m, 0, &len);
            char *js = d ? strndup(d, len) : NULL;
            ordo__msg_close(&m);
            if (!js) return ordo__error_set(ORDO_ERR_PROTO, "WELCOME without a body");
            rc = parse_welcome(node, js);
            free(js);
            if (rc) return rc;
            /* from now on the scheduler must answer within the run's timeout */
            rc = ordo__transport_heartbeat(node->tp, node->sched_sock,
                                          ordo__conf_heartbeat_ms(conf), conf->timeout_ms,
                                          ordo__conf_timeout_max_ms(conf));
            return rc < 0 ? ORDO_ERR_IO : 0;
        }
        case ORDO_MSG_REJECT:
            ordo__msg_text(&m, 0, buf, sizeof buf);
            ordo__msg_close(&m);
            return ordo__error_set(ORDO_ERR_AUTH, "the scheduler refused registration: %s", buf);
        case ORDO_MSG_ABORT:
            ordo__msg_text(&m, 0, buf, sizeof buf);
            ordo__msg_close(&m);
            return ordo__error_set(ORDO_ERR_ABORT, "cluster aborted: %s", buf);
        case ORDO_MSG_PEER_DEAD:
            if (m.nframes > 0) { /* the transport's reason: the handshake was refused */
                ordo__msg_text(&m, 0, buf, sizeof buf);
                ordo__msg_close(&m);
                return ordo__error_set(ORDO_ERR_AUTH, "the scheduler: %s", buf);
            }
            /* the heartbeat's start-up limit and the deadline above are the same time: one
             * answer for both, whichever fires first */
            ordo__msg_close(&m);
            return no_welcome(conf);
        default:
            if (m.sock != node->sched_sock && stash(node, &m) == 0) break;
            ORDO_DEBUG("ignoring %s while joining", ordo__wire_type_name(m.hdr.type));
            ordo__msg_close(&m);
        }
    }
}

void ordo__node_fini(ordo__node_t *node)
{
    if (node->server_endpoints)
        for (int i = 0; i < node->n_servers; i++) free(node->server_endpoints[i]);
    free(node->server_endpoints);
    node->server_endpoints = NULL;
    ordo__keys_destroy(&node->keys);
    free(node->plan_json);
    node->plan_json = NULL;
    free(node->reg_body);
    node->reg_body = NULL;
    free(node->lost_body);
    node->lost_body = NULL;
    for (int i = 0; i < node->n_early; i++) ordo__msg_close(&node->early[i]);
    free(node->early);
    node->early = NULL;
    node->n_early = node->cap_early = 0;
}
