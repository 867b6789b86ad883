/* node_rejoin: a node's side of a scheduler restart (see node_rejoin.h). */
#include "common/node_rejoin.h"
#include "common/clock.h"
#include "common/error.h"
#include "common/log.h"

#include <stdlib.h>
#include <string.h>

void ordo__node_rejoin_init(ordo__node_t *node, const ordo__conf_t *conf, char *reg_body)
{
    free(node->reg_body);
    node->reg_body = reg_body;
    node->restart_sched = conf->fault_scheduler;
    node->wait_ms = conf->scheduler_wait_ms;
    node->heartbeat_ms = ordo__conf_heartbeat_ms(conf);
    node->timeout_ms = conf->timeout_ms;
    node->timeout_max_ms = ordo__conf_timeout_max_ms(conf);
    snprintf(node->sched_addr, sizeof node->sched_addr, "%s", conf->scheduler);
    node->lost_ns = 0;
}

static uint64_t fnv(uint64_t h, const char *text)
{
    for (const unsigned char *p = (const unsigned char *)text; p && *p; p++) {
        h ^= *p;
        h *= 1099511628211ull;
    }
    return h;
}

uint64_t ordo__node_plan_digest(const json_t *welcome)
{
    uint64_t h = 14695981039346656037ull;
    const char *part[] = {"keys", "plan"};
    for (int i = 0; i < 2; i++) {
        json_t *v = json_deep_copy(json_object_get(welcome, part[i]));
        if (i == 0 && json_is_object(v)) { /* membership, not plan */
            json_object_del(v, "dead");
            json_object_del(v, "primary");
        }
        char *text = v ? json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
        json_decref(v);
        h = fnv(fnv(h, part[i]), text ? text : "null");
        free(text);
    }
    return h >> 1; /* a JSON integer stays positive */
}

void ordo__node_keymap_seen(ordo__node_t *node, const json_t *keymap)
{
    json_t *seq = json_object_get(keymap, "seq");
    if (json_is_integer(seq) && json_integer_value(seq) > node->map_seq)
        node->map_seq = json_integer_value(seq);
}

/* replica_map: the node's replica map for a new scheduler ({"seq", "dead", "primary"}), or
 * NULL without replicas */
static json_t *replica_map(const ordo__node_t *node)
{
    if (!node->keys || node->keys->replicas <= 1) return NULL;
    char *text = ordo__keys_to_json(node->keys);
    json_t *k = text ? json_loads(text, 0, NULL) : NULL;
    free(text);
    json_t *map = json_pack("{s:I,s:O?,s:O?}", "seq", (json_int_t)node->map_seq, "dead",
                            json_object_get(k, "dead"), "primary", json_object_get(k, "primary"));
    json_decref(k);
    return map;
}

bool ordo__node_sched_waiting(const ordo__node_t *node)
{
    return node->lost_ns != 0;
}

/* send_again sends the REGISTER of a node waiting for a new scheduler: queued on the
 * connection, which ZeroMQ re-opens once a scheduler listens again. It goes again every
 * RESEND_MS: a new scheduler that died before it welcomed anyone took the first copy with
 * it, and one that lives takes a second copy as the same registration. */
#define RESEND_MS ORDO_NODE_REJOIN_RESEND_MS
static int send_again(ordo__node_t *node)
{
    ordo__msg_t m;
    ordo__msg_init(&m, ORDO_MSG_REGISTER);
    m.hdr.dtype = ORDO_DTYPE_JSON;
    ordo__msg_add_text(&m, node->lost_body);
    node->sent_ns = ordo__clock_ns();
    return ordo__node_send_ctl(node, &m);
}

int ordo__node_sched_lost(ordo__node_t *node, int64_t silent_ms, json_t *state)
{
    if (node->restart_sched != ORDO_SCHED_RESTART) {
        json_decref(state);
        return ordo__error_set(ORDO_ERR_PEERDEAD, "the scheduler has been silent for %lld ms",
                              (long long)silent_ms);
    }
    if (node->lost_ns) { /* waiting already: the REGISTER is on its way */
        json_decref(state);
        return 0;
    }
    json_t *reg = node->reg_body ? json_loads(node->reg_body, 0, NULL) : NULL;
    if (!reg) {
        json_decref(state);
        return ordo__error_set(ORDO_ERR_PEERDEAD, "the scheduler has been silent for %lld ms, "
                              "and this node kept no registration to send a new one",
                              (long long)silent_ms);
    }
    node->lost_ns = ordo__clock_ns();
    ORDO_WARN("the scheduler has been silent for %lld ms: going on without it and waiting up to "
              "%d ms for a new one at %s (fault.scheduler = restart)",
              (long long)silent_ms, node->wait_ms, node->sched_addr);
    json_t *rejoin = state && json_is_object(state) ? state : json_object();
    if (rejoin != state) json_decref(state);
    json_object_set_new(rejoin, "generation", json_integer(node->generation));
    json_object_set_new(rejoin, "plan", json_integer((json_int_t)node->plan_digest));
    json_t *map = replica_map(node);
    if (map) json_object_set_new(rejoin, "map", map);
    json_object_set_new(reg, "rank", json_integer(node->rank)); /* the rank it was given */
    json_object_del(reg, "join"); /* a replacement that joined is a member like the others */
    json_object_set_new(reg, "rejoin", rejoin);
    char *text = json_dumps(reg, JSON_COMPACT);
    json_decref(reg);
    if (!text) return ORDO_ERR_NOMEM;
    free(node->lost_body);
    node->lost_body = text;
    return send_again(node);
}

static int64_t wait_left_ms(const ordo__node_t *node)
{
    return node->wait_ms - (ordo__clock_ns() - node->lost_ns) / 1000000;
}

int ordo__node_sched_check(ordo__node_t *node)
{
    if (!node->lost_ns) return 0;
    if (wait_left_ms(node) > 0) {
        if ((ordo__clock_ns() - node->sent_ns) / 1000000 >= RESEND_MS && node->lost_body)
            return send_again(node);
        return 0;
    }
    return ordo__error_set(ORDO_ERR_PEERDEAD, "no new scheduler registered this node again at %s "
                          "within fault.scheduler_wait_ms = %d ms of the old one's silence",
                          node->sched_addr, node->wait_ms);
}

int ordo__node_sched_timeout(const ordo__node_t *node, int timeout_ms)
{
    if (!node->lost_ns) return timeout_ms;
    int64_t left = wait_left_ms(node);
    if (left > RESEND_MS) left = RESEND_MS; /* wake to send the REGISTER again */
    if (left < 0) left = 0;
    return timeout_ms < 0 || left < timeout_ms ? (int)left + 1 : timeout_ms;
}

int ordo__node_on_rejoined(ordo__node_t *node, ordo__msg_t *m, int64_t *reported)
{
    size_t len = 0;
    const char *body = ordo__msg_data(m, 0, &len);
    json_t *o = body ? json_loadb(body, len, 0, NULL) : NULL;
    json_t *rank = json_object_get(o, "rank"), *gen = json_object_get(o, "generation");
    json_t *rep = json_object_get(o, "reported");
    int rc = 0;
    if (!json_is_object(o) || !json_is_true(json_object_get(o, "rejoined")))
        rc = ordo__error_set(ORDO_ERR_PROTO, "a WELCOME in mid-run that is not a new scheduler's");
    else if (!json_is_integer(rank) || json_integer_value(rank) != node->rank)
        rc = ordo__error_set(ORDO_ERR_PROTO, "the new scheduler's WELCOME names rank %lld, this "
                            "node is %d", json_is_integer(rank) ? (long long)json_integer_value(rank) : -1LL,
                            node->rank);
    else if (!json_is_integer(gen) || json_integer_value(gen) <= node->generation)
        rc = ordo__error_set(ORDO_ERR_PROTO, "a scheduler of generation %lld answered; this node "
                            "obeys generation %lld already: refused",
                            json_is_integer(gen) ? (long long)json_integer_value(gen) : 0LL,
                            (long long)node->generation);
    else if (ordo__node_plan_digest(o) != node->plan_digest)
        rc = ordo__error_set(ORDO_ERR_PROTO, "the new scheduler's key map or plan differs from the "
                            "one this node runs with");
    if (rc) {
        json_decref(o);
        return rc;
    }
    double waited = (double)(ordo__clock_ns() - node->lost_ns) / 1e6;
    node->generation = json_integer_value(gen);
    node->lost_ns = 0;
    if (reported) *reported = json_is_integer(rep) ? json_integer_value(rep) : -1;
    json_decref(o);
    ordo__transport_heartbeat_rearm(node->tp);
    ORDO_INFO("registered again with the new scheduler (generation %lld) %.0f ms after its "
              "predecessor was found silent", (long long)node->generation, waited);
    return 0;
}

int ordo__node_on_reject(ordo__node_t *node, ordo__msg_t *m)
{
    if (!node->lost_ns) return 0;
    char why[512];
    return ordo__error_set(ORDO_ERR_AUTH, "the new scheduler at %s refused this node: %s",
                          node->sched_addr, ordo__msg_text(m, 0, why, sizeof why));
}
