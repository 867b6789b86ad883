/* restart_members: the workers' membership of a run a new scheduler rebuilds (fault.scheduler =
 * restart with fault.worker = restart | shrink and fault.max_workers, docs/fault.md). The
 * servers say which workers left the run and which joined it (and at which iteration), and
 * the oldest version of their slices; RUN/membership.jsonl holds the counts of the changes
 * so far (deaths, restarts of each rank, shrinks, joins) and the membership generation. A
 * worker the servers count that does not register again within the wait window died while
 * no scheduler ran: the run's policy takes it (restart: its rank waits for the process
 * ordo-launch starts, which goes on at the oldest version any server holds; shrink: it
 * leaves the run). A new process that registers while the run is rebuilt (a restarted
 * worker, or one that joins) is kept and taken once it is. */
#include "common/clock.h"
#include "common/error.h"
#include "common/log.h"
#include "scheduler/scheduler_internal.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* the longest line of membership.jsonl read back */
#define LINE_MAX_LEN 1024

int ordo__sched_restart_history(sched_t *s)
{
    int max = ordo__conf_max_workers(&s->conf);
    s->past_restarts = calloc((size_t)max, sizeof *s->past_restarts);
    s->fresh = calloc((size_t)max, 1);
    if (!s->past_restarts || !s->fresh) return ORDO_ERR_NOMEM;
    if (!s->restarted) return 0;
    char path[sizeof s->run_dir + 32], line[LINE_MAX_LEN];
    snprintf(path, sizeof path, "%s/membership.jsonl", s->run_dir);
    FILE *f = fopen(path, "r");
    if (!f) return 0; /* no change so far */
    int64_t generation = 0;
    int lines = 0;
    while (fgets(line, sizeof line, f)) {
        json_t *o = json_loads(line, 0, NULL); /* a line cut by the old one's death: skipped */
        const char *ev = json_string_value(json_object_get(o, "event"));
        json_t *w = json_object_get(o, "worker"), *g = json_object_get(o, "generation");
        if (ev && json_is_integer(w) && json_integer_value(w) >= 0 &&
            json_integer_value(w) < max) {
            int r = (int)json_integer_value(w);
            lines++;
            if (!strcmp(ev, "death") || !strcmp(ev, "shrink")) s->worker_deaths++;
            if (!strcmp(ev, "shrink")) s->n_shrinks++;
            if (!strcmp(ev, "join")) s->n_joins++;
            if (!strcmp(ev, "restart")) {
                s->n_restarts++;
                s->past_restarts[r]++;
            }
            if (json_is_integer(g) && json_integer_value(g) > generation)
                generation = json_integer_value(g);
        }
        json_decref(o);
    }
    fclose(f);
    ordo__sched_generation_set(s, generation);
    if (lines)
        ORDO_INFO("%s: %d membership changes so far (%d worker deaths, %d restarts, %d shrinks, "
                  "%d joins), generation %lld", path, lines, s->worker_deaths, s->n_restarts,
                  s->n_shrinks, s->n_joins, (long long)generation);
    return 0;
}

/* server_says: whether any server that registered again lists worker r under key ("left",
 * or "joined" with *at its iteration); *all: every server does */
static bool server_says(const sched_t *s, const char *key, int r, int64_t *at, bool *all)
{
    bool any = false;
    if (all) *all = true;
    for (int i = 0; i < s->n_members; i++) {
        if (s->members[i].role != ORDO_ROLE_SERVER) continue;
        json_t *list = json_object_get(s->members[i].rejoin, key), *e;
        size_t k;
        bool here = false;
        json_array_foreach(list, k, e) {
            json_t *rank = json_is_array(e) ? json_array_get(e, 0) : e;
            if (json_integer_value(rank) != r) continue;
            here = true;
            if (at && json_is_array(e)) *at = json_integer_value(json_array_get(e, 1));
        }
        any |= here;
        if (all && !here) *all = false;
    }
    return any;
}

bool ordo__sched_restart_expected(const sched_t *s, int r)
{
    if (r < s->conf.workers) return !server_says(s, "left", r, NULL, NULL);
    return server_says(s, "joined", r, NULL, NULL);
}

static member_t *worker_of(sched_t *s, int r)
{
    for (int i = 0; i < s->n_members; i++)
        if (s->members[i].role == ORDO_ROLE_WORKER && s->members[i].rank == r)
            return &s->members[i];
    return NULL;
}

bool ordo__sched_restart_all_in(sched_t *s)
{
    if (!ordo__sched_restart_servers_in(s)) return false;
    for (int r = 0; r < ordo__conf_max_workers(&s->conf); r++)
        if (ordo__sched_restart_expected(s, r) && !worker_of(s, r) && !s->fresh[r]) return false;
    return true;
}

/* the heartbeat ids remembered in a rebuild (servers, workers, a few strangers) */
#define BEATS_MAX 256

void ordo__sched_restart_beat(sched_t *s, uint64_t beat)
{
    if (!beat || !s->restarted || s->welcomed) return;
    int64_t now = ordo__clock_ns();
    for (int i = 0; s->beats && i < s->n_beats; i++)
        if (s->beats[i].beat == beat) {
            s->beats[i].ns = now;
            return;
        }
    if (!s->beats && !(s->beats = calloc(BEATS_MAX, sizeof *s->beats))) return;
    int at = s->n_beats < BEATS_MAX ? s->n_beats++ : (int)(beat % BEATS_MAX);
    s->beats[at] = (struct ordo__sched_beat){beat, now};
}

static uint64_t beat_of(const sched_t *s, int r);

bool ordo__sched_restart_quiet(const sched_t *s)
{
    int64_t now = ordo__clock_ns();
    int64_t quiet_ns = ((int64_t)ordo__conf_timeout_max_ms(&s->conf) + 2 * s->conf.heartbeat_ms) *
                       1000000;
    if (!ordo__sched_restart_servers_in(s) || now - s->start_ns <= quiet_ns) return false;
    for (int r = 0; r < ordo__conf_max_workers(&s->conf); r++) {
        if (!ordo__sched_restart_expected(s, r) || worker_of((sched_t *)s, r) || s->fresh[r])
            continue;
        uint64_t beat = beat_of(s, r);
        if (!beat) return false; /* not known: the window decides */
        for (int i = 0; s->beats && i < s->n_beats; i++)
            if (s->beats[i].beat == beat && now - s->beats[i].ns <= quiet_ns) return false;
    }
    return true;
}

int64_t ordo__sched_restart_window_ms(const sched_t *s)
{
    /* a live member finds the old scheduler silent within the timeout's ceiling and two
     * heartbeats of its death, and sends its registration again every 2 s */
    return 2 * ((int64_t)ordo__conf_timeout_max_ms(&s->conf) + 2 * s->conf.heartbeat_ms) + 2000;
}

bool ordo__sched_restart_fresh(sched_t *s, ordo__msg_t *m, json_t *o)
{
    const char *role = json_string_value(json_object_get(o, "role"));
    int r = (int)json_integer_value(json_object_get(o, "rank"));
    int pid = (int)json_integer_value(json_object_get(o, "pid"));
    bool worker = role && !strcmp(role, "worker");
    bool restart = worker && s->conf.fault_worker == ORDO_FAULT_RESTART && r >= 0 &&
                   r < s->conf.workers;
    bool grow = worker && r >= s->conf.workers && r < ordo__conf_max_workers(&s->conf);
    if (!restart && !grow) return false;
    if (ordo__sched_restart_keep(s, m) != 0) return true; /* dropped, saying so */
    if (restart) s->fresh[r] = 1;
    ORDO_INFO("a new worker process (pid %d, rank %d) registers while the run is rebuilt: "
              "taken once it is (%s)", pid, r,
              restart ? "fault.worker = restart: it takes its dead predecessor's rank"
                      : "fault.max_workers: it joins the run");
    return true;
}

/* oldest: the oldest value version any server holds now (-1: none said); a worker that died
 * while no scheduler ran pushed every slice of each iteration before it, and nothing after
 * it (under bsp it could not pull the next one), so its successor goes on there */
static int64_t oldest(const sched_t *s)
{
    int64_t v = -1;
    for (int i = 0; i < s->n_members; i++) {
        json_t *o = json_object_get(s->members[i].rejoin, "oldest");
        if (s->members[i].role != ORDO_ROLE_SERVER || !json_is_integer(o)) continue;
        if (v < 0 || json_integer_value(o) < v) v = json_integer_value(o);
    }
    return v < 0 ? 0 : v;
}

/* tell_left sends MEMBERS "left" for worker r to the servers that do not have it yet (the old
 * scheduler died while it told them); the store takes a second one as the first */
static void tell_left(sched_t *s, int r, int64_t iter)
{
    bool all = true;
    if (!server_says(s, "left", r, NULL, &all) || all) return;
    char text[64];
    snprintf(text, sizeof text, "{\"left\":%d}", r);
    for (int i = 0; i < s->n_members; i++) {
        member_t *m = &s->members[i];
        if (m->role == ORDO_ROLE_SERVER) ordo__sched_send_members(s, m, iter, text);
    }
    ORDO_WARN("worker %d had left the run on some servers only: the others are told now", r);
}

/* beat_of: the heartbeat id of worker r's newest connection a server saw (0: none); the
 * process is fenced by it, should it only have been paused */
static uint64_t beat_of(const sched_t *s, int r)
{
    for (int i = 0; i < s->n_members; i++) {
        json_t *b = json_array_get(json_object_get(s->members[i].rejoin, "beats"), (size_t)r);
        if (s->members[i].role == ORDO_ROLE_SERVER && json_integer_value(b) > 0)
            return (uint64_t)json_integer_value(b);
    }
    return 0;
}

/* absent: a worker of the run that did not register again: it died while no scheduler ran,
 * and the run's policy takes it (its process fenced); 0 or the abort's code */
static int absent(sched_t *s, int r, int64_t at)
{
    member_t *m = &s->members[s->n_members++]; /* room for max_workers (scheduler.c) */
    memset(m, 0, sizeof *m);
    m->beat = beat_of(s, r);
    m->role = ORDO_ROLE_WORKER;
    m->want_rank = m->rank = r;
    m->next_iter = at;
    m->restarts = s->past_restarts[r];
    m->dead = true;
    m->dead_ns = ordo__clock_ns();
    s->worker_deaths++;
    char why[400];
    if (s->conf.fault_worker == ORDO_FAULT_RESTART) {
        ordo__sched_record(s, "death", m, at);
        if (m->restarts >= s->conf.restarts) {
            snprintf(why, sizeof why, "worker %d died while no scheduler ran (it did not register "
                     "again) and was restarted %d times already (fault.restarts)", r, m->restarts);
            return ordo__sched_abort_run(s, why);
        }
        ORDO_WARN("worker %d did not register again: it died while no scheduler ran; its rank "
                  "waits up to %d ms for its restart, at iteration %lld (fault.worker = restart, "
                  "%d/%d)", r, s->conf.startup_ms, (long long)at, m->restarts + 1,
                  s->conf.restarts);
        return 0;
    }
    if (s->conf.fault_worker != ORDO_FAULT_SHRINK) {
        snprintf(why, sizeof why, "worker %d did not register again with the new scheduler: it "
                 "died while no scheduler ran (fault.worker = abort)", r);
        return ordo__sched_abort_run(s, why);
    }
    s->n_shrinks++;
    s->n_live--;
    ordo__sched_record(s, "shrink", m, at);
    if (s->n_live == 0) return ordo__sched_abort_run(s, "every worker is dead");
    ORDO_WARN("worker %d did not register again: it died while no scheduler ran; the run goes on "
              "with %d workers from iteration %lld (fault.worker = shrink)", r, s->n_live,
              (long long)at);
    ordo__sched_tell_members(s, "left", r, at);
    return 0;
}

int ordo__sched_restart_adopt(sched_t *s)
{
    int max = ordo__conf_max_workers(&s->conf);
    int64_t at = oldest(s);
    s->n_live = 0;
    for (int r = 0; r < max; r++) {
        member_t *m = worker_of(s, r);
        if (m) { /* registered again: it goes on after the newest iteration it reported */
            json_t *it = json_object_get(m->rejoin, "iter");
            m->next_iter = json_is_integer(it) ? json_integer_value(it) + 1 : 0;
            m->restarts = s->past_restarts[r];
        }
        if (m || (ordo__sched_restart_expected(s, r) && r < s->conf.workers) ||
            server_says(s, "joined", r, NULL, NULL))
            s->n_live++;
    }
    for (int r = 0; r < max; r++) {
        bool left = r < s->conf.workers && server_says(s, "left", r, NULL, NULL);
        if (left) { /* it left before: not in the run, and every server told */
            tell_left(s, r, at);
            member_t *m = &s->members[s->n_members++];
            memset(m, 0, sizeof *m);
            m->role = ORDO_ROLE_WORKER;
            m->want_rank = m->rank = r;
            m->dead = true;
            continue;
        }
        if (!ordo__sched_restart_expected(s, r) || worker_of(s, r)) continue;
        int rc = absent(s, r, at);
        if (rc) return rc;
    }
    return 0;
}

int ordo__sched_restart_refuse_left(sched_t *s)
{
    for (int i = 0; i < s->n_members; i++) {
        member_t *m = &s->members[i];
        if (m->role != ORDO_ROLE_WORKER || ordo__sched_restart_expected(s, m->rank)) continue;
        char why[300];
        snprintf(why, sizeof why, "fenced: worker %d left the run (the servers took it out, "
                 "fault.worker = shrink); this process is no longer part of it", m->rank);
        ORDO_WARN("refused a member registering again: %s", why);
        ordo__sched_reply(s, m->rid, m->rid_len, ORDO_MSG_REJECT, why);
        json_decref(m->rejoin);
        json_decref(m->tensors);
        *m = s->members[--s->n_members]; /* out of the rebuild */
        s->n_workers--;
        i--;
    }
    return 0;
}
