/* membership: what the scheduler does when a worker dies under fault.worker = restart or
 * shrink (docs/fault.md). Restart: the dead worker's rank waits (fault.startup_ms at most) for
 * a new process that registers with that rank (scripts/ordo-launch starts it); it gets the
 * WELCOME with the first iteration its predecessor did not report, and the servers recognise
 * what it pushes again (server/store.h, ORDO_STORE_DUPLICATE). Shrink: the worker leaves the
 * run; the servers and the other workers are told (MEMBERS) and the run ends when the workers
 * left are done. Every change is logged, appended to RUN/membership.jsonl and counted in
 * summary.json ("membership"). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "common/clock.h"
#include "common/error.h"
#include "common/log.h"
#include "common/node.h"
#include "common/transport.h"
#include "scheduler/scheduler.h"
#include "scheduler/scheduler_internal.h"

/* ordo__sched_record appends one membership event to RUN/membership.jsonl, with the wall-clock time (the
 * chaos experiment matches it with the times of its kills) */
void ordo__sched_record(sched_t *s, const char *event, const member_t *m, int64_t iter)
{
    int64_t generation = ordo__sched_generation_next(s); /* every change starts one */
    if (!strcmp(event, "death") || !strcmp(event, "shrink")) {
        ordo__sched_batches_dead(s, m);
        ordo__sched_fence(s, m, iter, generation); /* a late return of it is refused */
    }
    if (!s->members_log) {
        char path[sizeof s->run_dir + 32];
        snprintf(path, sizeof path, "%s/membership.jsonl", s->run_dir);
        if (!(s->members_log = fopen(path, "a"))) {
            ORDO_WARN("cannot open %s; membership changes are only logged", path);
            return;
        }
    }
    struct timeval tv;
    gettimeofday(&tv, NULL);
    fprintf(s->members_log,
            "{\"event\":\"%s\",\"worker\":%d,\"pid\":%d,\"iter\":%lld,\"time_s\":%.6f,"
            "\"generation\":%lld}\n",
            event, m->rank, m->pid, (long long)iter, (double)tv.tv_sec + tv.tv_usec / 1e6,
            (long long)generation);
    fflush(s->members_log);
}

void ordo__sched_send_members(sched_t *s, const member_t *m, int64_t iter, const char *text)
{
    ordo__msg_t msg;
    ordo__sched_msg_to(s, m->rid, m->rid_len, ORDO_MSG_MEMBERS, &msg);
    msg.hdr.iter = iter;
    msg.hdr.dtype = ORDO_DTYPE_JSON;
    ordo__msg_add_text(&msg, text);
    ordo__transport_send(s->tp, &msg);
}

void ordo__sched_tell_members(sched_t *s, const char *change, int rank, int64_t iter)
{
    json_t *live = json_array();
    for (int i = 0; i < s->n_members; i++)
        if (s->members[i].role == ORDO_ROLE_WORKER && !s->members[i].dead)
            json_array_append_new(live, json_integer(s->members[i].rank));
    json_t *o = json_pack("{s:o,s:i,s:I}", "live", live, change, rank, "iter", (json_int_t)iter);
    char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    for (int i = 0; text && i < s->n_members; i++) {
        member_t *m = &s->members[i];
        if (!m->dead) ordo__sched_send_members(s, m, iter, text);
    }
    free(text);
}

int ordo__sched_member_silent(sched_t *s, member_t *m, int64_t silent_ms)
{
    char name[320], why[600];
    ordo__sched_member_name(m, name, sizeof name);
    int mode = m->role == ORDO_ROLE_WORKER ? s->conf.fault_worker : ORDO_FAULT_ABORT;
    if (m->done && mode != ORDO_FAULT_ABORT) return 0; /* it finished its part */
    if (mode == ORDO_FAULT_ABORT) {
        snprintf(why, sizeof why,
                 "%s is dead: no heartbeat for %lld ms (timeout %d ms) and no answer to a probe",
                 name, (long long)silent_ms, ordo__liveness_timeout_ms(&m->live));
        return ordo__sched_abort_run(s, why);
    }
    int64_t now = ordo__clock_ns();
    if (mode == ORDO_FAULT_RESTART) {
        if (!m->dead) {
            m->dead = true;
            m->dead_ns = now;
            s->worker_deaths++;
            ordo__sched_record(s, "death", m, m->next_iter);
            if (m->restarts >= s->conf.restarts) {
                snprintf(why, sizeof why, "%s is dead (no heartbeat for %lld ms) and was "
                         "restarted %d times already (fault.restarts)", name, (long long)silent_ms,
                         m->restarts);
                return ordo__sched_abort_run(s, why);
            }
            ORDO_WARN("%s is dead: no heartbeat for %lld ms; waiting up to %d ms for its restart "
                      "(fault.worker = restart, %d/%d)", name, (long long)silent_ms,
                      s->conf.startup_ms, m->restarts + 1, s->conf.restarts);
            return 0;
        }
        if ((now - m->dead_ns) / 1000000 <= s->conf.startup_ms) return 0;
        snprintf(why, sizeof why, "%s is dead and no process took its rank within %d ms "
                 "(fault.worker = restart, fault.startup_ms)", name, s->conf.startup_ms);
        return ordo__sched_abort_run(s, why);
    }
    /* shrink */
    if (m->dead) return 0;
    m->dead = true;
    m->dead_ns = now;
    s->worker_deaths++;
    s->n_shrinks++;
    s->n_live--;
    ordo__sched_record(s, "shrink", m, m->next_iter);
    if (s->n_live == 0) return ordo__sched_abort_run(s, "every worker is dead");
    ORDO_WARN("%s is dead: no heartbeat for %lld ms; the run goes on with %d workers from "
              "iteration %lld (fault.worker = shrink)", name, (long long)silent_ms, s->n_live,
              (long long)m->next_iter);
    ordo__sched_tell_members(s, "left", m->rank, m->next_iter);
    /* the workers left may be waiting for the dead one only */
    if (s->barrier_n > 0) ordo__sched_on_barrier(s, NULL, s->barrier_id);
    return ordo__sched_all_done(s);
}

int ordo__sched_rejoin(sched_t *s, const ordo__msg_t *msg, json_t *o)
{
    char name[320], why[600];
    int want = (int)json_integer_value(json_object_get(o, "rank"));
    int pid = (int)json_integer_value(json_object_get(o, "pid"));
    member_t *m = NULL;
    for (int i = 0; i < s->n_members; i++)
        if (s->members[i].role == ORDO_ROLE_WORKER && s->members[i].rank == want)
            m = &s->members[i];
    if (!m || m->done) {
        ORDO_WARN("refused a worker (pid %d) after the start: rank %d %s", pid, want,
                  m ? "finished its part" : "is not in this cluster (fault.worker = restart takes "
                                            "a dead worker's rank)");
        ordo__sched_reply(s, msg->rid, msg->rid_len, ORDO_MSG_REJECT,
                          m ? ORDO_REJECT_FINISHED : "the cluster is full");
        return 0;
    }
    ordo__sched_member_name(m, name, sizeof name);
    if (!m->dead) { /* the launcher saw the exit before the heartbeats ran out */
        m->dead = true;
        m->dead_ns = ordo__clock_ns();
        s->worker_deaths++;
        ordo__sched_record(s, "death", m, m->next_iter);
        ORDO_WARN("%s is replaced by a new process (pid %d): counted as dead", name, pid);
    }
    if (m->restarts >= s->conf.restarts) {
        ordo__sched_reply(s, msg->rid, msg->rid_len, ORDO_MSG_REJECT,
                          "no restarts left (fault.restarts)");
        snprintf(why, sizeof why, "%s died and was restarted %d times already (fault.restarts)",
                 name, m->restarts);
        return ordo__sched_abort_run(s, why);
    }
    m->restarts++;
    s->n_restarts++;
    memcpy(m->rid, msg->rid, msg->rid_len);
    m->rid_len = msg->rid_len;
    m->pid = pid;
    m->dead = false;
    m->recovering = true;
    m->last_seen_ns = ordo__clock_ns();
    char *text = ordo__sched_welcome_text(s, m, m->next_iter);
    if (!text) return ordo__sched_abort_run(s, "out of memory for a WELCOME");
    ordo__sched_reply(s, m->rid, m->rid_len, ORDO_MSG_WELCOME, text);
    free(text);
    ordo__sched_record(s, "restart", m, m->next_iter);
    ORDO_INFO("%s rejoined at iteration %lld, %.0f ms after its death was noticed (restart %d/%d)",
              ordo__sched_member_name(m, name, sizeof name), (long long)m->next_iter,
              (double)(ordo__clock_ns() - m->dead_ns) / 1e6, m->restarts, s->conf.restarts);
    return 0;
}

void ordo__sched_on_stats(sched_t *s, member_t *mb, int64_t iter)
{
    if (iter + 1 > mb->next_iter) mb->next_iter = iter + 1;
    if (!mb->recovering) return;
    mb->recovering = false;
    ordo__sched_record(s, "recovered", mb, iter);
    char name[320];
    ORDO_INFO("%s finished iteration %lld, %.0f ms after its predecessor's death",
              ordo__sched_member_name(mb, name, sizeof name), (long long)iter,
              (double)(ordo__clock_ns() - mb->dead_ns) / 1e6);
}

void ordo__sched_membership_close(sched_t *s)
{
    if (!s->log) return;
    json_t *o = json_pack("{s:s,s:i,s:i,s:i,s:i,s:i}", "worker",
                          s->conf.fault_worker == ORDO_FAULT_RESTART  ? "restart"
                          : s->conf.fault_worker == ORDO_FAULT_SHRINK ? "shrink"
                                                                      : "abort",
                          "worker_deaths", s->worker_deaths, "restarts", s->n_restarts, "shrinks",
                          s->n_shrinks, "joins", s->n_joins, "workers_left", s->n_live);
    if (o) ordo__runlog_set_section(s->log, "membership", o);
    if (s->worker_deaths || s->n_joins)
        ORDO_INFO("membership: %d worker deaths, %d restarts, %d shrinks, %d joins; %d workers at "
                  "the end", s->worker_deaths, s->n_restarts, s->n_shrinks, s->n_joins, s->n_live);
}
