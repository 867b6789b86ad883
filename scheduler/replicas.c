/* replicas: the scheduler's promotions of backup servers ([fault] replicas, scheduler/
 * replicas.h). A dead server is marked in the scheduler's key map, every live node gets the
 * list of dead servers (each recomputes the same map from it), and each promotion is logged
 * and kept for summary.json until the first iteration every worker completes after it. */
#include "scheduler/replicas.h"
#include "common/clock.h"
#include "common/error.h"
#include "common/keys.h"
#include "common/log.h"
#include "scheduler/scheduler_internal.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int server;
    int moved;          /* slices whose primary changed */
    int64_t last_ns;    /* when the server was last heard from */
    int64_t dead_ns;    /* when it was declared dead and its backups promoted */
    int64_t next_iter;  /* the iteration whose completion ends the recovery (-1: not known) */
    int64_t done_ns;    /* when every worker had reported it (0: not yet) */
    int64_t dead_wall_us, done_wall_us; /* the same two times on the wall clock */
    int reported;       /* workers that reported next_iter */
} promotion_t;

struct ordo__replicas {
    int64_t max_iter; /* the newest iteration any worker reported */
    promotion_t *p;
    int n;
    json_t *joins; /* [{server, pid, iteration, unix_ms}]: replacements that joined */
    json_t *promotions, *all_joins; /* summary.json's, the predecessors' too (record) */
};

int ordo__replicas_new(struct ordo__scheduler *s, ordo__replicas_t **out)
{
    *out = NULL;
    if (s->conf.replicas <= 1) return 0;
    int rc = ordo__keys_set_replicas(s->keys, s->conf.replicas);
    if (rc) return ordo__error_context(rc, "fault.replicas");
    ordo__replicas_t *r = calloc(1, sizeof *r);
    if (!r) return ORDO_ERR_NOMEM;
    r->max_iter = -1;
    *out = r;
    ORDO_INFO("replicas: each key slice on %d servers (a primary and %d backup%s)",
              s->conf.replicas, s->conf.replicas - 1, s->conf.replicas > 2 ? "s" : "");
    return 0;
}

void ordo__replicas_destroy(ordo__replicas_t **rp)
{
    ordo__replicas_t *r = rp ? *rp : NULL;
    if (!r) return;
    free(r->p);
    json_decref(r->joins);
    json_decref(r->promotions);
    json_decref(r->all_joins);
    free(r);
    *rp = NULL;
}

/* history: the promotions and joins as summary.json has them, a restarted scheduler's
 * predecessors' first (RUN/scheduler.json); a new reference */
static json_t *history(struct ordo__scheduler *s, const char *which, json_t *own)
{
    json_t *a = json_deep_copy(json_object_get(s->prior, which));
    if (!json_is_array(a)) {
        json_decref(a);
        a = json_array();
    }
    json_array_extend(a, own);
    return a;
}

/* record puts the promotions and joins into summary.json and RUN/scheduler.json (times in ms
 * from this scheduler's start) */
static void record(struct ordo__scheduler *s)
{
    ordo__replicas_t *r = s->repl;
    json_t *a = json_array();
    for (int i = 0; i < r->n; i++) {
        const promotion_t *p = &r->p[i];
        json_t *o = json_pack("{s:i,s:i,s:f,s:f,s:I}", "server", p->server, "slices", p->moved,
                              "last_heard_ms", (double)(p->last_ns - s->start_ns) / 1e6,
                              "promoted_ms", (double)(p->dead_ns - s->start_ns) / 1e6,
                              "promoted_unix_ms", (json_int_t)(p->dead_wall_us / 1000));
        if (p->done_ns) {
            json_object_set_new(o, "next_iteration", json_integer(p->next_iter));
            json_object_set_new(o, "next_iteration_ms",
                                json_real((double)(p->done_ns - s->start_ns) / 1e6));
            json_object_set_new(o, "next_iteration_unix_ms", json_integer(p->done_wall_us / 1000));
            json_object_set_new(o, "recovery_ms", json_real((double)(p->done_ns - p->last_ns) / 1e6));
        }
        json_array_append_new(a, o);
    }
    json_decref(r->promotions);
    r->promotions = history(s, "promotions", a);
    json_decref(a);
    json_t *own = r->joins ? json_incref(r->joins) : json_array();
    json_t *joins = history(s, "joins", own);
    json_decref(own);
    if (s->log && json_array_size(r->promotions))
        ordo__runlog_set_section(s->log, "promotions", json_incref(r->promotions));
    if (s->log && json_array_size(joins)) ordo__runlog_set_section(s->log, "joins", json_incref(joins));
    json_decref(r->all_joins);
    r->all_joins = joins;
    ordo__sched_restart_save(s);
}

json_t *ordo__replicas_history(const struct ordo__scheduler *s, const char *which)
{
    const ordo__replicas_t *r = s->repl;
    json_t *a = !r ? NULL : !strcmp(which, "promotions") ? r->promotions : r->all_joins;
    return a ? json_incref(a) : NULL;
}

/* send every live node but `except` (a member index, or -1) the dead servers, and the one
 * that joined (joined >= 0: its rank, at endpoint) */
static void send_map(struct ordo__scheduler *s, int except, int joined, const char *endpoint)
{
    json_t *dead = json_array();
    for (int i = 0; i < s->keys->n_servers; i++)
        if (s->keys->dead[i]) json_array_append_new(dead, json_integer(i));
    json_t *o = json_pack("{s:o,s:i,s:I}", "dead", dead, "promoted", s->repl->n, "seq",
                          (json_int_t)s->generation);
    if (o && joined >= 0) json_object_set_new(o, "joined", json_pack("[i,s]", joined, endpoint));
    char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    for (int i = 0; text && i < s->n_members; i++)
        if (!s->members[i].gone && i != except)
            ordo__sched_reply(s, s->members[i].rid, s->members[i].rid_len, ORDO_MSG_KEYMAP, text);
    free(text);
}

int ordo__replicas_server_dead(struct ordo__scheduler *s, int member, int64_t silent_ms)
{
    ordo__replicas_t *r = s->repl;
    member_t *m = &s->members[member];
    char name[320];
    if (!r || m->role != ORDO_ROLE_SERVER || m->rank < 0)
        return ORDO_ERR_PEERDEAD;
    int moved = 0;
    int rc = ordo__keys_server_failed(s->keys, m->rank, &moved);
    if (rc) {
        ORDO_ERROR("cannot promote a backup for %s: %s",
                   ordo__sched_member_name(m, name, sizeof name), ordo__error_text(rc));
        return ORDO_ERR_PEERDEAD;
    }
    promotion_t *p = realloc(r->p, sizeof *p * (size_t)(r->n + 1));
    if (!p) return ORDO_ERR_NOMEM;
    r->p = p;
    r->p[r->n++] = (promotion_t){.server = m->rank,
                                 .moved = moved,
                                 .last_ns = m->last_seen_ns,
                                 .dead_ns = ordo__clock_ns(),
                                 .dead_wall_us = ordo__clock_wall_us(),
                                 .next_iter = r->max_iter + 1};
    m->gone = true;
    ordo__sched_generation_next(s); /* the map's seq (send_map) */
    ORDO_WARN("%s is dead: no heartbeat for %lld ms (timeout %d ms); promoted backups for its "
              "%d slices, the run goes on", ordo__sched_member_name(m, name, sizeof name),
              (long long)silent_ms, s->conf.timeout_ms, moved);
    send_map(s, -1, -1, NULL);
    record(s);
    return 0;
}

/* the WELCOME of a server joining a running cluster: what every node got at the start, with
 * the key map as it is now */
static void welcome(struct ordo__scheduler *s, const member_t *m)
{
    json_t *servers = json_array();
    for (int r = 0; r < s->conf.servers; r++)
        for (int i = 0; i < s->n_members; i++)
            if (s->members[i].role == ORDO_ROLE_SERVER && s->members[i].rank == r)
                json_array_append_new(servers, json_string(s->members[i].endpoint));
    char *keys_text = ordo__keys_to_json(s->keys);
    json_t *w = json_pack("{s:i,s:o,s:i,s:o,s:s,s:I}", "rank", m->rank, "servers", servers,
                          "workers", s->conf.workers, "keys", json_loads(keys_text, 0, NULL),
                          "run_dir", s->run_dir, "generation", (json_int_t)s->generation);
    free(keys_text);
    if (w && s->plan) json_object_set(w, "plan", s->plan);
    char *text = w ? json_dumps(w, JSON_COMPACT) : NULL;
    json_decref(w);
    if (text) ordo__sched_reply(s, m->rid, m->rid_len, ORDO_MSG_WELCOME, text);
    free(text);
}

void ordo__replicas_join(struct ordo__scheduler *s, const ordo__msg_t *m, const char *endpoint,
                          int pid, int want)
{
    ordo__replicas_t *r = s->repl;
    const char *why = NULL;
    int at = -1;
    for (int i = 0; r && i < s->n_members; i++) {
        member_t *mb = &s->members[i];
        if (mb->role != ORDO_ROLE_SERVER || !mb->gone) continue;
        if (at < 0 || mb->rank == want || (s->members[at].rank != want && mb->rank < s->members[at].rank))
            at = i;
    }
    if (!r)
        why = "fault.replicas = 1: no server can join a running cluster";
    else if (at < 0)
        why = "no dead server to replace: the cluster is full";
    else if (s->conf.sync_mode == ORDO_SYNC_SSP)
        why = "sync.mode = ssp: a replacement cannot be brought up to date (the primaries hold "
              "pushes of later iterations that the state they send does not carry)";
    if (why) {
        ORDO_WARN("refused a server joining (pid %d at %s): %s", pid, endpoint, why);
        ordo__sched_reply(s, m->rid, m->rid_len, ORDO_MSG_REJECT, why);
        return;
    }
    member_t *mb = &s->members[at];
    memcpy(mb->rid, m->rid, m->rid_len);
    mb->rid_len = m->rid_len;
    mb->pid = pid;
    snprintf(mb->endpoint, sizeof mb->endpoint, "%s", endpoint);
    mb->last_seen_ns = ordo__clock_ns();
    mb->gone = false;
    ordo__keys_server_joined(s->keys, mb->rank);
    ordo__sched_generation_next(s);
    welcome(s, mb);
    send_map(s, at, mb->rank, endpoint);
    char name[320];
    ORDO_WARN("%s joined in place of the dead server %d: the primaries bring it up to date as a "
              "backup", ordo__sched_member_name(mb, name, sizeof name), mb->rank);
    if (!r->joins) r->joins = json_array();
    json_array_append_new(r->joins, json_pack("{s:i,s:i,s:I,s:I}", "server", mb->rank, "pid", pid,
                                              "iteration", (json_int_t)(r->max_iter + 1),
                                              "unix_ms", (json_int_t)(ordo__clock_wall_us() / 1000)));
    record(s);
}

void ordo__replicas_on_stats(struct ordo__scheduler *s, int worker, int64_t iter)
{
    ordo__replicas_t *r = s->repl;
    (void)worker;
    if (!r) return;
    if (iter > r->max_iter) r->max_iter = iter;
    for (int i = 0; i < r->n; i++) {
        promotion_t *p = &r->p[i];
        if (p->done_ns || iter != p->next_iter) continue;
        if (++p->reported < s->conf.workers) continue;
        p->done_ns = ordo__clock_ns();
        p->done_wall_us = ordo__clock_wall_us();
        ORDO_INFO("recovered from the death of server %d: iteration %lld completed %.0f ms after "
                  "it was last heard from (%.0f ms after the promotion)", p->server,
                  (long long)p->next_iter, (double)(p->done_ns - p->last_ns) / 1e6,
                  (double)(p->done_ns - p->dead_ns) / 1e6);
        record(s);
    }
}

/* ---- a restarted scheduler (fault.scheduler = restart): the map from the members ---- */

void ordo__replicas_rejoin_map(struct ordo__scheduler *s, const json_t *map)
{
    json_t *seq = json_object_get(map, "seq");
    if (s->conf.replicas <= 1 || !json_is_object(map) || !json_is_integer(seq)) return;
    if (s->rejoin_map && json_integer_value(seq) <= s->rejoin_seq) return;
    json_decref(s->rejoin_map);
    s->rejoin_map = json_deep_copy(map);
    s->rejoin_seq = json_integer_value(seq);
}

/* in_list: whether rank is in the JSON array list */
static bool in_list(const json_t *list, int rank)
{
    for (size_t i = 0; i < json_array_size(list); i++)
        if (json_integer_value(json_array_get(list, i)) == rank) return true;
    return false;
}

bool ordo__replicas_listed_dead(const struct ordo__scheduler *s, int rank)
{
    return in_list(json_object_get(s->rejoin_map, "dead"), rank);
}

int ordo__replicas_rebuild(struct ordo__scheduler *s, char *why, size_t wsz)
{
    ordo__replicas_t *r = s->repl;
    if (!r) return 0;
    int rc = s->rejoin_map ? ordo__keys_take_map(s->keys, s->rejoin_map) : 0;
    if (rc) {
        snprintf(why, wsz, "map: the members' replica map does not fit this scheduler's key "
                 "map: %s", ordo__error_text(rc));
        return rc;
    }
    for (int i = 0; i < s->n_members; i++) { /* the newest iteration the workers reported */
        json_t *it = json_object_get(s->members[i].rejoin, "iter");
        if (s->members[i].role == ORDO_ROLE_WORKER && json_is_integer(it) &&
            json_integer_value(it) > r->max_iter)
            r->max_iter = json_integer_value(it);
    }
    for (int rank = 0; rank < s->conf.servers; rank++) {
        bool live = false;
        for (int i = 0; i < s->n_members; i++)
            live |= s->members[i].role == ORDO_ROLE_SERVER && s->members[i].rank == rank &&
                    !s->members[i].gone;
        if (live) continue;
        member_t *m = NULL; /* a fenced server keeps its slot; else a place for a replacement */
        for (int i = 0; i < s->n_members && !m; i++)
            if (s->members[i].role == ORDO_ROLE_SERVER && s->members[i].rank == rank)
                m = &s->members[i];
        if (!m) {
            m = &s->members[s->n_members++];
            memset(m, 0, sizeof *m);
            m->role = ORDO_ROLE_SERVER;
            m->rank = m->want_rank = rank;
        }
        m->gone = true;
        if (ordo__replicas_listed_dead(s, rank)) continue; /* promoted before the restart */
        int moved = 0;
        if ((rc = ordo__keys_server_failed(s->keys, rank, &moved)) != 0) {
            snprintf(why, wsz, "server %d did not register again, and %s", rank,
                     ordo__error_text(rc));
            return rc;
        }
        promotion_t *p = realloc(r->p, sizeof *p * (size_t)(r->n + 1));
        if (!p) return ORDO_ERR_NOMEM;
        r->p = p;
        r->p[r->n++] = (promotion_t){.server = rank,
                                     .moved = moved,
                                     .last_ns = s->start_ns,
                                     .dead_ns = ordo__clock_ns(),
                                     .dead_wall_us = ordo__clock_wall_us(),
                                     .next_iter = r->max_iter + 1};
        ordo__sched_generation_next(s);
        ORDO_WARN("server %d did not register again with this scheduler: declared dead; promoted "
                  "backups for its %d slices, the run goes on", rank, moved);
    }
    record(s);
    return 0;
}

void ordo__replicas_resend(struct ordo__scheduler *s)
{
    ordo__replicas_t *r = s->repl;
    if (!r) return;
    /* a member whose map missed a replacement's join (the old scheduler died while it sent
     * the KEYMAP) learns it as it would have then */
    for (int i = 0; i < s->n_members; i++) {
        member_t *m = &s->members[i];
        json_t *seen = json_object_get(json_object_get(m->rejoin, "map"), "dead");
        if (m->gone || !m->rejoin) continue;
        for (int j = 0; j < s->n_members; j++) {
            member_t *srv = &s->members[j];
            if (srv->role != ORDO_ROLE_SERVER || srv->gone || j == i || !in_list(seen, srv->rank))
                continue;
            json_t *o = json_pack("{s:[],s:i,s:I,s:[i,s]}", "dead", "promoted", r->n, "seq",
                                  (json_int_t)s->generation, "joined", srv->rank, srv->endpoint);
            char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
            json_decref(o);
            if (text) ordo__sched_reply(s, m->rid, m->rid_len, ORDO_MSG_KEYMAP, text);
            free(text);
        }
    }
    /* every member the map: a promotion the old scheduler died in the middle of sending, or
     * one this scheduler made, reaches everyone (a member that has it changes nothing) */
    send_map(s, -1, -1, NULL);
    int dead = 0;
    for (int i = 0; i < s->keys->n_servers; i++)
        dead += s->keys->dead[i] != 0;
    ORDO_INFO("replicas: sent every member the replica map (generation %lld, %d server%s dead)",
              (long long)s->generation, dead, dead == 1 ? "" : "s");
}
