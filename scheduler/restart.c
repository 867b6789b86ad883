/* restart: the scheduler's side of fault.scheduler = restart (docs/fault.md). A scheduler
 * of such a run keeps RUN/scheduler.json (its generation, pid and address) while the run
 * lives and removes it at the run's end; one that starts and finds the file is a restart:
 * it takes the next generation, takes up metrics.jsonl, and instead of a rendezvous waits
 * for every server and worker to register again with what it holds (common/node_rejoin.h).
 * It checks them against each other (the same key map and plan; no worker an iteration
 * ahead of every server), welcomes each with its generation and the iteration the run log
 * holds of it, and then takes the barriers, DONEs and reports they were waiting on. What
 * the members sent before they registered again waits in a queue until then. */
#include "common/clock.h"
#include "common/daemon.h"
#include "common/error.h"
#include "common/log.h"
#include "common/node_rejoin.h"
#include "scheduler/replicas.h"
#include "scheduler/scheduler_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* messages kept before every member registered again (each a few hundred bytes) */
#define STASH_MAX 65536

static void state_path(const sched_t *s, char *path, size_t size)
{
    snprintf(path, size, "%s/scheduler.json", s->run_dir);
}

/* write_state writes RUN/scheduler.json through a temporary file and a rename */
static int write_state(sched_t *s)
{
    char path[sizeof s->run_dir + 32], tmp[sizeof path + 8];
    state_path(s, path, sizeof path);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "w");
    if (!f) return ordo__error_set(ORDO_ERR_IO, "cannot write %s: %s", tmp, strerror(errno));
    const char *run = json_string_value(json_object_get(json_object_get(s->plan, "intra"), "run"));
    if (run) snprintf(s->intra_run, sizeof s->intra_run, "%s", run);
    json_t *o = json_pack("{s:I,s:i,s:i,s:s,s:s}", "generation", (json_int_t)s->generation,
                          "restarts", s->restarts, "pid", (int)getpid(), "endpoint", s->endpoint,
                          "intra_run", s->intra_run);
    const char *kept[] = {"promotions", "joins"}; /* summary.json's, past a restart */
    for (int i = 0; o && i < 2; i++) {
        json_t *a = ordo__replicas_history(s, kept[i]);
        if (a) json_object_set_new(o, kept[i], a);
    }
    int ok = o && json_dumpf(o, f, JSON_COMPACT) == 0 && fputc('\n', f) != EOF;
    json_decref(o);
    ok &= fflush(f) == 0 && fsync(fileno(f)) == 0;
    ok &= fclose(f) == 0;
    if (!ok || rename(tmp, path) != 0)
        return ordo__error_set(ORDO_ERR_IO, "cannot write %s: %s", path, strerror(errno));
    return 0;
}

int ordo__sched_restart_open(sched_t *s)
{
    s->generation = 1; /* the run's start; every membership change starts the next one */
    if (s->conf.fault_scheduler != ORDO_SCHED_RESTART) return 0;
    if (!s->conf.run_name[0])
        return ordo__error_set(ORDO_ERR_INVAL, "fault.scheduler = restart needs output.run: a new "
                              "scheduler finds the run's folder by its name (scripts/ordo-launch "
                              "sets one)");
    char path[sizeof s->run_dir + 32];
    state_path(s, path, sizeof path);
    json_error_t jerr;
    json_t *o = json_load_file(path, 0, &jerr);
    if (!o && access(path, F_OK) == 0)
        return ordo__error_set(ORDO_ERR_INVAL, "%s: %s (a restarted scheduler reads its "
                              "predecessor's generation there)", path, jerr.text);
    json_t *gen = json_object_get(o, "generation");
    if (o && (!json_is_integer(gen) || json_integer_value(gen) < 1)) {
        json_decref(o);
        return ordo__error_set(ORDO_ERR_INVAL, "%s: generation is not a positive integer", path);
    }
    s->restarted = o != NULL;
    json_t *restarts = json_object_get(o, "restarts");
    s->restarts = o ? (json_is_integer(restarts) ? (int)json_integer_value(restarts) : 0) + 1 : 0;
    json_decref(s->prior);
    s->prior = json_incref(o);
    s->generation = o ? json_integer_value(gen) + 1 : 1;
    const char *run = json_string_value(json_object_get(o, "intra_run"));
    if (run) snprintf(s->intra_run, sizeof s->intra_run, "%s", run);
    json_decref(o);
    ordo__sched_restart_plan(s);
    int rc = ordo__sched_restart_history(s); /* restart_members.c */
    if (rc) return rc;
    s->reported = calloc((size_t)s->conf.workers, sizeof *s->reported);
    if (!s->reported) return ORDO_ERR_NOMEM;
    for (int i = 0; i < s->conf.workers; i++)
        s->reported[i].prefix = -1;
    if (s->restarted)
        ORDO_INFO("found %s: this scheduler restarts the run as generation %lld and waits for "
                  "its %d servers and %d workers to register again", path,
                  (long long)s->generation, s->conf.servers, s->conf.workers);
    return 0;
}

void ordo__sched_restart_plan(sched_t *s)
{
    json_t *intra = json_object_get(s->plan, "intra");
    if (s->restarted && s->intra_run[0] && json_is_object(intra))
        json_object_set_new(intra, "run", json_string(s->intra_run));
    else if (!s->restarted && s->conf.fault_scheduler == ORDO_SCHED_RESTART &&
             json_is_object(intra) && s->endpoint[0]) {
        int rc = write_state(s); /* the run id of a plan made from declarations */
        if (rc) ORDO_WARN("%s", ordo__error_text(rc));
    }
}

void ordo__sched_restart_save(sched_t *s)
{
    if (s->conf.fault_scheduler != ORDO_SCHED_RESTART || !s->endpoint[0]) return;
    int rc = write_state(s);
    if (rc) ORDO_WARN("%s", ordo__error_text(rc));
}

int ordo__sched_restart_listening(sched_t *s)
{
    if (s->conf.fault_scheduler != ORDO_SCHED_RESTART) return 0;
    ordo__runlog_set_section(s->log, "scheduler_restarts", json_integer(s->restarts));
    return write_state(s);
}

void ordo__sched_restart_close(sched_t *s, bool ended)
{
    if (ended && s->conf.fault_scheduler == ORDO_SCHED_RESTART) { /* nothing left to restart */
        char path[sizeof s->run_dir + 32];
        state_path(s, path, sizeof path);
        unlink(path);
    }
    json_decref(s->prior);
    s->prior = NULL;
    json_decref(s->rejoin_map);
    s->rejoin_map = NULL;
    free(s->past_restarts);
    s->past_restarts = NULL;
    free(s->fresh);
    s->fresh = NULL;
    free(s->beats);
    s->beats = NULL;
    s->n_beats = 0;
    for (int i = 0; i < s->n_stash; i++)
        ordo__msg_close(&s->stash[i]);
    free(s->stash);
    s->stash = NULL;
    s->n_stash = s->cap_stash = 0;
    for (int i = 0; s->members && i < s->n_members; i++) {
        json_decref(s->members[i].rejoin);
        s->members[i].rejoin = NULL;
    }
    for (int i = 0; s->reported && i < s->conf.workers; i++)
        free(s->reported[i].bits);
    free(s->reported);
    s->reported = NULL;
}

static int finish_rebuild(sched_t *s, int (*handle)(sched_t *, ordo__msg_t *));

/* server_version takes a welcomed server's answer (a STATS with its current "version") */
static int server_version(sched_t *s, member_t *mb, ordo__msg_t *m)
{
    size_t len = 0;
    const char *body = ordo__msg_data(m, 0, &len);
    json_t *o = body ? json_loadb(body, len, 0, NULL) : NULL;
    json_t *v = json_object_get(o, "version");
    if (!mb->rejoin || !json_is_integer(v) || json_object_get(mb->rejoin, "current")) {
        json_decref(o);
        ordo__transport_drop(s->tp, m, "a server's version: unexpected or malformed", NULL);
        return 0;
    }
    json_object_update(mb->rejoin, o); /* "version", and "clocks" under asp */
    json_object_set_new(mb->rejoin, "current", json_true());
    json_decref(o);
    if (--s->versions_due > 0) return 0;
    return finish_rebuild(s, s->rebuild_handle);
}

int ordo__sched_restart_stash(sched_t *s, ordo__msg_t *m)
{
    bool restart = s->conf.fault_scheduler == ORDO_SCHED_RESTART;
    for (int i = 0; restart && m->hdr.type == ORDO_MSG_STATS && i < s->n_members; i++) {
        member_t *mb = &s->members[i];
        if (mb->role == ORDO_ROLE_SERVER && mb->rid_len == m->rid_len &&
            !memcmp(mb->rid, m->rid, m->rid_len)) /* a server's version, due in a rebuild */
            return s->restarted && !s->welcomed ? server_version(s, mb, m) : 0;
    }
    if (!s->restarted || s->welcomed || m->hdr.type == ORDO_MSG_REGISTER ||
        m->hdr.type == ORDO_MSG_HEARTBEAT)
        return -1;
    ordo__sched_restart_keep(s, m);
    return 0;
}

int ordo__sched_restart_keep(sched_t *s, ordo__msg_t *m)
{
    if (s->n_stash == s->cap_stash) {
        int cap = s->cap_stash ? s->cap_stash * 2 : 64;
        ordo__msg_t *p = cap <= STASH_MAX ? malloc(sizeof *p * (size_t)cap) : NULL;
        if (!p) {
            ordo__transport_drop(s->tp, m, "too many messages before the members registered again",
                                NULL);
            return ORDO_ERR_NOMEM;
        }
        for (int i = 0; i < s->n_stash; i++)
            ordo__msg_move(&p[i], &s->stash[i]);
        free(s->stash);
        s->stash = p;
        s->cap_stash = cap;
    }
    ordo__msg_move(&s->stash[s->n_stash++], m);
    return 0;
}

/* ---- which reports the run log holds: one bit per worker-iteration ---- */

/* mark records worker's iter; false when it was recorded already */
static bool mark(sched_t *s, int worker, int64_t iter)
{
    struct ordo__sched_seen *r = &s->reported[worker];
    if (iter >= r->cap * 8) {
        int64_t cap = r->cap ? r->cap : 128;
        while (iter >= cap * 8)
            cap *= 2;
        uint8_t *b = realloc(r->bits, (size_t)cap);
        if (!b) return true; /* no memory: taken as recorded, at worst a metrics line less */
        memset(b + r->cap, 0, (size_t)(cap - r->cap));
        r->bits = b;
        r->cap = cap;
    }
    if (r->bits[iter / 8] & (1u << (iter % 8))) return false;
    r->bits[iter / 8] |= (uint8_t)(1u << (iter % 8));
    while (r->prefix + 1 < r->cap * 8 &&
           (r->bits[(r->prefix + 1) / 8] & (1u << ((r->prefix + 1) % 8))))
        r->prefix++;
    return true;
}

void ordo__sched_restart_seen(void *ctx, int worker, int64_t iter)
{
    sched_t *s = ctx;
    if (s->reported && worker >= 0 && worker < s->conf.workers && iter >= 0)
        mark(s, worker, iter);
}

void ordo__sched_restart_linger(sched_t *s)
{
    if (!s->restarted || s->welcomed || !s->abort_why[0]) return;
    int64_t window_ms = 2 * ((int64_t)ordo__conf_timeout_max_ms(&s->conf) + 2 * s->conf.heartbeat_ms);
    int64_t end = ordo__clock_ns() + window_ms * 1000000;
    int told = 0;
    while (ordo__clock_ns() < end && !ordo__daemon_stop_signal()) {
        ordo__msg_t m;
        if (ordo__transport_recv(s->tp, &m, s->conf.heartbeat_ms / 2 + 1) != 0) continue;
        if (m.hdr.type == ORDO_MSG_REGISTER) { /* a member that found its scheduler silent late */
            ordo__sched_reply(s, m.rid, m.rid_len, ORDO_MSG_ABORT, s->abort_why);
            told++;
        }
        ordo__msg_close(&m);
    }
    if (told)
        ORDO_INFO("answered %d members that registered again after the abort with it", told);
}

int ordo__sched_all_done(sched_t *s)
{
    if (s->n_live <= 0 || s->n_done != s->n_live) return 0;
    for (int i = 0; s->reported && i < s->n_members; i++) {
        member_t *m = &s->members[i];
        json_t *it = json_object_get(m->rejoin, "iter");
        if (m->role != ORDO_ROLE_WORKER || m->dead || m->rank >= s->conf.workers ||
            !json_is_integer(it) || s->reported[m->rank].prefix >= json_integer_value(it))
            continue;
        int64_t now = ordo__clock_ns();
        if (!s->reports_wait_ns) s->reports_wait_ns = now;
        if ((now - s->reports_wait_ns) / 1000000 <= ordo__conf_timeout_max_ms(&s->conf)) return 0;
        ORDO_WARN("the run ends without worker %d's reports after iteration %lld (it registered "
                  "again with %lld): they did not come within %d ms (fault.timeout_max_ms), and "
                  "metrics.jsonl misses them", m->rank, (long long)s->reported[m->rank].prefix,
                  (long long)json_integer_value(it), ordo__conf_timeout_max_ms(&s->conf));
        return 1;
    }
    return 1;
}

bool ordo__sched_restart_old_stats(sched_t *s, int worker, int64_t iter)
{
    if (!s->reported || worker < 0 || worker >= s->conf.workers || iter < 0) return false;
    return !mark(s, worker, iter);
}

/* refuse answers a registration the rebuild cannot take, naming the field, and logs it */
static void refuse(sched_t *s, const ordo__msg_t *m, const char *why)
{
    ORDO_WARN("refused a member registering again: %s", why);
    ordo__sched_reply(s, m->rid, m->rid_len, ORDO_MSG_REJECT, why);
}

/* check_one: what one member's registration must hold; "" when it does. *contradicts: the
 * member's state is another run's (not a second copy of a rank) */
static void check_one(sched_t *s, int role, int rank, json_t *st, char *why, size_t wsz,
                      bool *contradicts)
{
    json_t *gen = json_object_get(st, "generation"), *plan = json_object_get(st, "plan");
    int limit = role == ORDO_ROLE_SERVER ? s->conf.servers : ordo__conf_max_workers(&s->conf);
    const char *rn = ordo__wire_role_name(role);
    why[0] = '\0';
    if (rank < 0 || rank >= limit) {
        snprintf(why, wsz, "rank: %s %d registers again, but the run has %d", rn, rank, limit);
        return;
    }
    for (int i = 0; i < s->n_members; i++)
        if (s->members[i].role == role && s->members[i].rank == rank) {
            snprintf(why, wsz, "rank: %s %d has registered again already (pid %d)", rn, rank,
                     s->members[i].pid);
            return;
        }
    *contradicts = true;
    if (!json_is_integer(gen) || json_integer_value(gen) >= s->generation)
        snprintf(why, wsz, "generation: %s %d obeys scheduler generation %lld; this one is "
                 "generation %lld (a newer scheduler runs this job)", rn, rank,
                 json_is_integer(gen) ? (long long)json_integer_value(gen) : -1LL,
                 (long long)s->generation);
    else if (!s->declared &&
             (!json_is_integer(plan) || (uint64_t)json_integer_value(plan) != s->plan_digest))
        snprintf(why, wsz, "plan: %s %d runs with another key map or plan than this "
                 "scheduler computes from the conf (did the conf change?)", rn, rank);
}

/* newest: how far the servers got for worker w: under asp the newest push clock (the
 * iteration of its next push) any server holds of it, else the newest value version (-1:
 * nothing said) */
static int64_t newest(const sched_t *s, int w)
{
    int64_t v = -1;
    for (int i = 0; i < s->n_members; i++) {
        if (s->members[i].role != ORDO_ROLE_SERVER) continue;
        json_t *st = s->members[i].rejoin, *clocks = json_object_get(st, "clocks");
        json_t *ver = clocks ? json_array_get(clocks, (size_t)w) : json_object_get(st, "version");
        if (json_is_integer(ver) && json_integer_value(ver) > v) v = json_integer_value(ver);
    }
    return v;
}

/* check_all: the members against each other once all are in and the servers said their
 * current versions (after every worker's state was taken); 0 or the abort's code */
static int check_all(sched_t *s)
{
    for (int i = 0; i < s->n_members; i++) {
        member_t *m = &s->members[i];
        json_t *it = json_object_get(m->rejoin, "iter");
        if (m->role != ORDO_ROLE_WORKER || !json_is_integer(it) || json_integer_value(it) < 0)
            continue;
        int64_t v = newest(s, m->rank);
        /* finished iteration t: it pulled t's values (every slice at t or later; t + 1 once
         * the others' pushes of t are in, which a worker that died may hold back), and under
         * asp its push clock is past t */
        if (json_integer_value(it) >= v + (s->conf.sync_mode != ORDO_SYNC_ASP)) {
            char why[400];
            snprintf(why, sizeof why, "iter: worker %d says it finished iteration %lld, ahead of "
                     "every server (the newest %s %lld); its state contradicts theirs", m->rank,
                     (long long)json_integer_value(it),
                     s->conf.sync_mode == ORDO_SYNC_ASP ? "push of it they took is of iteration"
                                                        : "value is version",
                     (long long)v - (s->conf.sync_mode == ORDO_SYNC_ASP));
            ordo__sched_reply(s, m->rid, m->rid_len, ORDO_MSG_REJECT, why);
            return ordo__sched_abort_run(s, why);
        }
    }
    return 0;
}

/* take_state: a member's barrier and DONE, as if the messages came now */
static void take_state(sched_t *s, member_t *m)
{
    json_t *b = json_object_get(m->rejoin, "barrier");
    if (m->role != ORDO_ROLE_WORKER) return;
    if (json_is_integer(b)) ordo__sched_on_barrier(s, m, json_integer_value(b));
    if (json_is_true(json_object_get(m->rejoin, "done")) && !m->done) {
        char *final = json_dumps(json_object_get(m->rejoin, "final"), JSON_COMPACT);
        if (final && s->log) ordo__runlog_final(s->log, m->rank, final);
        free(final);
        m->done = true;
        s->n_done++;
    }
}

static int welcome_one(sched_t *s, member_t *m);

/* welcome sends the WELCOME of a rebuilt run to every member of role */
static int welcome(sched_t *s, int role)
{
    for (int i = 0; i < s->n_members; i++) {
        if (s->members[i].role != role || s->members[i].gone || s->members[i].dead) continue;
        int rc = welcome_one(s, &s->members[i]);
        if (rc) return rc;
    }
    return 0;
}

/* welcome_one sends m the WELCOME of a rebuilt run: its generation, and to a worker the
 * iteration up to which the run log has all of its reports */
static int welcome_one(sched_t *s, member_t *m)
{
    char *text = ordo__sched_welcome_text(s, m, -1);
    json_t *o = text ? json_loads(text, 0, NULL) : NULL;
    free(text);
    if (!o) return ordo__sched_abort_run(s, "out of memory for the WELCOME");
    json_object_set_new(o, "rejoined", json_true());
    if (m->role == ORDO_ROLE_WORKER) /* a joined worker's reports are not in the run log */
        json_object_set_new(o, "reported", json_integer(m->rank < s->conf.workers
                                                            ? s->reported[m->rank].prefix
                                                            : -1));
    text = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    if (!text) return ordo__sched_abort_run(s, "out of memory for the WELCOME");
    ordo__sched_reply(s, m->rid, m->rid_len, ORDO_MSG_WELCOME, text);
    free(text);
    m->last_seen_ns = ordo__clock_ns();
    ordo__liveness_init(&m->live, m->last_seen_ns, s->conf.timeout_ms,
                       ordo__conf_timeout_max_ms(&s->conf), 2 * s->conf.heartbeat_ms);
    return 0;
}

/* fence_server refuses a server the members' replica map lists dead: it was declared dead
 * (paused, or cut off, past the timeout) and its slices went to its backups */
static void fence_server(sched_t *s, const uint8_t *rid, size_t rid_len, int rank)
{
    char why[300];
    snprintf(why, sizeof why, "fenced: server %d was declared dead and its slices promoted to "
             "its backups (the members' replica map); this process is no longer part of the run",
             rank);
    ORDO_WARN("refused a member registering again: %s", why);
    ordo__sched_reply(s, rid, rid_len, ORDO_MSG_REJECT, why);
}

bool ordo__sched_restart_servers_in(const sched_t *s)
{
    if (s->servers_given_up) return true; /* the others are taken as dead ([fault] replicas) */
    int n = 0;
    for (int rank = 0; rank < s->conf.servers; rank++) {
        bool in = ordo__replicas_listed_dead(s, rank);
        for (int i = 0; i < s->n_members; i++)
            in |= s->members[i].role == ORDO_ROLE_SERVER && s->members[i].rank == rank;
        n += in;
    }
    return n >= s->conf.servers;
}

/* complete: every member is back: the servers are welcomed first and answer with their
 * current versions (server_version), then finish_rebuild goes on */
static int complete(sched_t *s, int (*handle)(sched_t *, ordo__msg_t *))
{
    if (s->rebuild_handle) return 0; /* under way: a member that came meanwhile is welcomed too */
    ordo__sched_restart_refuse_left(s); /* restart_members.c */
    if (s->declared) { /* the plan comes from the declarations the workers sent again */
        int rc = ordo__sched_plan_declared(s);
        if (rc) return rc;
        for (int i = 0; i < s->n_members; i++) {
            json_t *plan = json_object_get(s->members[i].rejoin, "plan");
            if (json_is_integer(plan) && (uint64_t)json_integer_value(plan) == s->plan_digest)
                continue;
            char why[400], name[320];
            snprintf(why, sizeof why, "plan: %s runs with another key map or plan than the "
                     "workers' declarations give now",
                     ordo__sched_member_name(&s->members[i], name, sizeof name));
            return ordo__sched_abort_run(s, why);
        }
    }
    /* [fault] replicas: a server the members' map lists dead is fenced; the servers that did
     * not come back are declared dead now, their backups promoted */
    for (int i = 0; i < s->n_members; i++) {
        member_t *m = &s->members[i];
        if (m->role != ORDO_ROLE_SERVER || m->gone || !ordo__replicas_listed_dead(s, m->rank))
            continue;
        fence_server(s, m->rid, m->rid_len, m->rank);
        m->gone = true;
        json_decref(m->rejoin);
        m->rejoin = NULL;
        s->n_servers--;
    }
    char why[600];
    int rc = ordo__replicas_rebuild(s, why, sizeof why);
    if (rc) return ordo__sched_abort_run(s, why);
    s->rebuild_handle = handle;
    s->versions_due = s->n_servers;
    s->rebuild_ns = ordo__clock_ns();
    return welcome(s, ORDO_ROLE_SERVER);
}

/* finish_rebuild: the check, the workers' WELCOME, their barriers and DONEs, then what came
 * before; 0 to go on, 1 when every worker was done, or an abort */
static int finish_rebuild(sched_t *s, int (*handle)(sched_t *, ordo__msg_t *))
{
    int rc = check_all(s);
    if (rc) return rc;
    s->welcomed = true;
    char why[700];
    if ((rc = ordo__sched_batches_rejoin(s, why, sizeof why)) != 0)
        return ordo__sched_abort_run(s, why);
    if ((rc = welcome(s, ORDO_ROLE_WORKER)) != 0) return rc;
    /* the workers that died while no scheduler ran, and the run's policy for them */
    if ((rc = ordo__sched_restart_adopt(s)) != 0) return rc; /* restart_members.c */
    ordo__replicas_resend(s);
    int64_t newest = -1;
    for (int w = 0; w < s->conf.workers; w++)
        if (s->reported[w].prefix > newest) newest = s->reported[w].prefix;
    ORDO_INFO("cluster complete: every member registered again %.0f ms after this scheduler "
              "started, and the run goes on under generation %lld (the run log holds every "
              "iteration up to %lld); run folder %s",
              (double)(ordo__clock_ns() - s->start_ns) / 1e6, (long long)s->generation,
              (long long)newest, s->run_dir);
    for (int i = 0; i < s->n_members; i++)
        if (!s->members[i].dead) take_state(s, &s->members[i]);
    /* what the members sent before they registered again, in the order it came */
    for (int i = 0; i < s->n_stash && rc == 0; i++)
        rc = handle(s, &s->stash[i]);
    for (int i = 0; i < s->n_stash; i++)
        ordo__msg_close(&s->stash[i]);
    s->n_stash = 0;
    if (rc) return rc;
    return ordo__sched_all_done(s);
}

/* take_back: a member of this live scheduler's run found it silent (it was paused, or cut
 * off) and registers again: the scheduler is still the run's, so it welcomes the member
 * back under a new generation (newer than any the members obey) */
static int take_back(sched_t *s, member_t *mb, ordo__msg_t *m, json_t *o)
{
    if (mb->rejoin && json_equal(mb->rejoin, json_object_get(o, "rejoin")) &&
        mb->rid_len == m->rid_len && !memcmp(mb->rid, m->rid, m->rid_len))
        return 0; /* a copy the member sent again: it was welcomed back */
    ordo__sched_generation_next(s); /* a membership change: the member is back */
    memcpy(mb->rid, m->rid, m->rid_len);
    mb->rid_len = m->rid_len;
    json_decref(mb->rejoin);
    mb->rejoin = json_incref(json_object_get(o, "rejoin"));
    mb->pid = (int)json_integer_value(json_object_get(o, "pid"));
    uint64_t batch_req = mb->batch_req; /* the same process: its requests go on */
    ordo__sched_member_fresh(s, mb, o);
    mb->batch_req = batch_req;
    char name[320];
    ORDO_WARN("%s found this scheduler silent and registered again: welcomed back under "
              "generation %lld", ordo__sched_member_name(mb, name, sizeof name),
              (long long)s->generation);
    int rc = welcome_one(s, mb);
    if (rc) return rc;
    if (mb->role == ORDO_ROLE_WORKER) take_state(s, mb);
    return ordo__sched_all_done(s);
}

int ordo__sched_restart_register(sched_t *s, ordo__msg_t *m, json_t *o,
                                 int (*handle)(sched_t *, ordo__msg_t *))
{
    json_t *st = json_object_get(o, "rejoin");
    const char *role = json_string_value(json_object_get(o, "role"));
    int r = role && !strcmp(role, "server") ? ORDO_ROLE_SERVER : ORDO_ROLE_WORKER;
    int rank = (int)json_integer_value(json_object_get(o, "rank"));
    char why[600];
    if (!s->restarted && s->welcomed && json_is_object(st)) {
        member_t *back = NULL;
        for (int i = 0; i < s->n_members; i++)
            if (s->members[i].role == r && s->members[i].rank == rank && !s->members[i].dead &&
                !s->members[i].gone)
                back = &s->members[i];
        if (back) return take_back(s, back, m, o);
    }
    if (s->restarted && !s->welcomed && json_is_true(json_object_get(o, "join")) &&
        !json_is_object(st)) {
        /* a replacement server while the run is rebuilt: taken once it is (replicas.c) */
        ORDO_INFO("a server joining (pid %lld) waits for the end of the rebuild",
                  (long long)json_integer_value(json_object_get(o, "pid")));
        ordo__sched_restart_keep(s, m);
        return 0;
    }
    if (!s->restarted) {
        snprintf(why, sizeof why, "this scheduler (generation %lld) started a new run; it takes "
                 "no member of an earlier one", (long long)s->generation);
        refuse(s, m, why);
        return 0;
    }
    if (s->welcomed) { /* the rebuild is over: a late copy, or a member it did not wait for */
        for (int i = 0; i < s->n_members; i++)
            if (s->members[i].role == r && s->members[i].rank == rank &&
                s->members[i].rid_len == m->rid_len &&
                !memcmp(s->members[i].rid, m->rid, m->rid_len))
                return 0; /* the same process again: it was welcomed */
        snprintf(why, sizeof why, "the run was rebuilt without %s %d", role, rank);
        refuse(s, m, why);
        return 0;
    }
    if (!json_is_object(st) && ordo__sched_restart_fresh(s, m, o)) /* restart_members.c */
        return ordo__sched_restart_all_in(s) ? complete(s, handle) : 0;
    if (!json_is_object(st)) {
        refuse(s, m, "this scheduler restarts a run (it found RUN/scheduler.json) and takes only "
                     "its members registering again; a new run needs another output.run, or "
                     "the file removed");
        return 0;
    }
    for (int i = 0; i < s->n_members; i++) /* a copy the member sent again: it is in */
        if (s->members[i].role == r && s->members[i].rank == rank &&
            s->members[i].rid_len == m->rid_len && !memcmp(s->members[i].rid, m->rid, m->rid_len))
            return 0;
    if (r == ORDO_ROLE_SERVER && ordo__replicas_listed_dead(s, rank)) {
        fence_server(s, m->rid, m->rid_len, rank);
        return 0;
    }
    bool contradicts = false;
    check_one(s, r, rank, st, why, sizeof why, &contradicts);
    if (!why[0] && s->cannot_rebuild[0])
        snprintf(why, sizeof why, "the run cannot be rebuilt: %s", s->cannot_rebuild);
    if (why[0]) {
        refuse(s, m, why);
        /* a member that holds another run's state: the run cannot be rebuilt from these;
         * every member is told (refused as it comes, ABORT to those welcomed) */
        if (contradicts && !s->cannot_rebuild[0])
            snprintf(s->cannot_rebuild, sizeof s->cannot_rebuild, "%s", why);
        if (contradicts || s->cannot_rebuild[0]) s->n_refused++;
        if (s->cannot_rebuild[0] &&
            s->n_servers + s->n_workers + s->n_refused >= s->conf.servers + s->conf.workers)
            return ordo__sched_abort_run(s, s->cannot_rebuild);
        return 0;
    }
    member_t *mb = &s->members[s->n_members++];
    memset(mb, 0, sizeof *mb);
    memcpy(mb->rid, m->rid, m->rid_len);
    mb->rid_len = m->rid_len;
    mb->role = r;
    mb->want_rank = mb->rank = rank;
    mb->pid = (int)json_integer_value(json_object_get(o, "pid"));
    const char *ep = json_string_value(json_object_get(o, "endpoint"));
    if (ep) snprintf(mb->endpoint, sizeof mb->endpoint, "%s", ep);
    const char *intra = json_string_value(json_object_get(o, "intra"));
    if (intra && (!strcmp(intra, "shm") || !strcmp(intra, "nccl")))
        snprintf(mb->intra, sizeof mb->intra, "%s", intra);
    const char *comp = json_string_value(json_object_get(o, "compression"));
    if (comp && r == ORDO_ROLE_WORKER) snprintf(mb->compression, sizeof mb->compression, "%s", comp);
    json_t *tensors = json_object_get(o, "tensors");
    if (s->declared && r == ORDO_ROLE_WORKER && json_is_array(tensors))
        mb->tensors = json_incref(tensors);
    mb->rejoin = json_incref(st);
    mb->last_seen_ns = ordo__clock_ns();
    if (!s->first_rejoin_ns) s->first_rejoin_ns = mb->last_seen_ns;
    s->last_rejoin_ns = mb->last_seen_ns;
    ordo__replicas_rejoin_map(s, json_object_get(st, "map"));
    ordo__sched_member_fresh(s, mb, o);
    int *count = r == ORDO_ROLE_SERVER ? &s->n_servers : &s->n_workers;
    (*count)++;
    char name[320];
    ORDO_INFO("%s registered again (%d/%d servers, %d/%d workers)",
              ordo__sched_member_name(mb, name, sizeof name), s->n_servers, s->conf.servers,
              s->n_workers, s->conf.workers);
    if (!ordo__sched_restart_all_in(s)) return 0; /* restart_members.c */
    if (s->cannot_rebuild[0]) return ordo__sched_abort_run(s, s->cannot_rebuild);
    return complete(s, handle);
}

/* silent_servers: [fault] replicas: a server that registered again and fell silent before
 * the rebuild ended died meanwhile. Before the servers are welcomed its registration is
 * dropped (the rebuild declares it dead); after, it is declared dead now. Returns handle's
 * codes. */
static int silent_servers(sched_t *s)
{
    int64_t now = ordo__clock_ns();
    int64_t limit = ordo__conf_timeout_max_ms(&s->conf) + 2 * (int64_t)s->conf.heartbeat_ms;
    for (int i = 0; i < s->n_members; i++) {
        member_t *m = &s->members[i];
        int64_t silent_ms = (now - m->last_seen_ns) / 1000000;
        if (m->role != ORDO_ROLE_SERVER || m->gone || !m->rejoin || silent_ms <= limit) continue;
        char name[320];
        ORDO_WARN("%s registered again and then fell silent for %lld ms: taken as dead",
                  ordo__sched_member_name(m, name, sizeof name), (long long)silent_ms);
        if (!s->rebuild_handle) {
            m->gone = true;
            json_decref(m->rejoin);
            m->rejoin = NULL;
            s->n_servers--;
            continue;
        }
        bool due = !json_object_get(m->rejoin, "current");
        if (ordo__replicas_server_dead(s, i, silent_ms) != 0) {
            char why[400];
            snprintf(why, sizeof why, "%s died while the run was rebuilt, and a slice of it has "
                     "no live replica left", name);
            return ordo__sched_abort_run(s, why);
        }
        s->n_servers--;
        if (due && --s->versions_due == 0) return finish_rebuild(s, s->rebuild_handle);
    }
    return 0;
}

/* replicas_wait: [fault] replicas: servers that registered and fell silent, and the servers
 * that did not come back: once the window for them is over, the others are taken as dead
 * (ordo__replicas_rebuild promotes their backups). Returns handle's codes. */
static int replicas_wait(sched_t *s)
{
    if (s->conf.replicas <= 1 || s->cannot_rebuild[0]) return 0;
    int rc = silent_servers(s);
    if (rc || s->welcomed || s->rebuild_handle || s->servers_given_up) return rc;
    if (!s->first_rejoin_ns || s->n_servers == 0 || ordo__sched_restart_servers_in(s)) return 0;
    /* every live member finds the old scheduler silent within the timeout's ceiling and two
     * heartbeats of its death, and sends its registration again every RESEND_MS: one not
     * here well past that, since the first and the last that came, died meanwhile */
    int64_t now = ordo__clock_ns(), resend = ORDO_NODE_REJOIN_RESEND_MS;
    int64_t first = ordo__conf_timeout_max_ms(&s->conf) + 2 * s->conf.heartbeat_ms + 2 * resend;
    if ((now - s->first_rejoin_ns) / 1000000 < first ||
        (now - s->last_rejoin_ns) / 1000000 < resend + s->conf.timeout_ms)
        return 0;
    ORDO_WARN("%d of %d servers registered again within %lld ms of the first member: the others "
              "are taken as dead ([fault] replicas = %d)", s->n_servers, s->conf.servers,
              (long long)(now - s->first_rejoin_ns) / 1000000, s->conf.replicas);
    s->servers_given_up = true;
    return 0;
}

int ordo__sched_restart_wait(sched_t *s, int (*handle)(sched_t *, ordo__msg_t *))
{
    int rc = replicas_wait(s);
    if (rc || s->welcomed) return rc;
    int64_t now = ordo__clock_ns(), waited_ms = (now - s->start_ns) / 1000000;
    if (s->rebuild_handle) { /* the servers were welcomed and say their versions */
        if ((now - s->rebuild_ns) / 1000000 <= s->conf.startup_ms) return 0;
        return ordo__sched_abort_run(s, "the servers welcomed back did not say their versions "
                                        "within fault.startup_ms");
    }
    /* a server taken as dead (silent, or not back in time) may complete the membership */
    if (s->conf.replicas > 1 && s->first_rejoin_ns && ordo__sched_restart_all_in(s))
        return complete(s, handle);
    bool policy = s->conf.fault_worker != ORDO_FAULT_ABORT;
    bool window = waited_ms > ordo__sched_restart_window_ms(s);
    if (window && s->cannot_rebuild[0]) /* a member contradicts the run; the rest came */
        return ordo__sched_abort_run(s, s->cannot_rebuild);
    bool quiet = !s->cannot_rebuild[0] && ordo__sched_restart_quiet(s); /* restart_members.c */
    /* under fault.worker = abort the heartbeats' evidence aborts the run at once, naming the
     * worker, rather than after fault.startup_ms */
    if (((policy && window) || quiet) && ordo__sched_restart_servers_in(s)) {
        ORDO_WARN("%d workers registered again within %lld ms of this scheduler's start (every "
                  "server did); the others %s: they died while no scheduler ran, and the run's "
                  "policy takes them (fault.worker = %s)", s->n_workers, (long long)waited_ms,
                  quiet ? "sent no heartbeat for the timeout and a probe's time"
                        : "did not come within the wait window",
                  s->conf.fault_worker == ORDO_FAULT_RESTART  ? "restart"
                  : s->conf.fault_worker == ORDO_FAULT_SHRINK ? "shrink"
                                                              : "abort");
        return complete(s, handle);
    }
    if (waited_ms <= s->conf.startup_ms) return 0;
    char why[256];
    snprintf(why, sizeof why, "only %d/%d servers and %d workers registered again within %d ms",
             s->n_servers, s->conf.servers, s->n_workers, s->conf.startup_ms);
    return ordo__sched_abort_run(s, why);
}
