/* grow: a worker that joins a running job ([fault] max_workers; scripts/ordo-launch
 * --add-worker, docs/fault.md). It registers with a rank from cluster.workers to max_workers -
 * 1 that no worker has had; the scheduler picks the iteration it starts at, two past the
 * newest one any worker reported (the servers cannot be there yet under bsp: every worker
 * reports an iteration before it pushes the next one), welcomes it with that iteration (its
 * tensors' versions start there, so its first pull gets the servers' values of it) and tells
 * the servers and the workers (MEMBERS "joined"): from that iteration on every update waits
 * for its push too, and the mean is over one more worker. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/log.h"
#include "common/transport.h"
#include "scheduler/scheduler_internal.h"

static void refuse(sched_t *s, const ordo__msg_t *msg, int pid, const char *why)
{
    ORDO_WARN("refused a worker that asked to join the run (pid %d): %s", pid, why);
    ordo__sched_reply(s, msg->rid, msg->rid_len, ORDO_MSG_REJECT, why);
}

/* why_not: why the worker of rank want (declaring tensors) cannot join now, or NULL */
static const char *why_not(sched_t *s, int want, json_t *tensors, char *buf, size_t size)
{
    int max = ordo__conf_max_workers(&s->conf);
    if (max <= s->conf.workers) {
        snprintf(buf, size, "this run cannot grow: fault.max_workers is cluster.workers (%d); "
                 "set [fault] max_workers above it", s->conf.workers);
        return buf;
    }
    if (want < s->conf.workers || want >= max) {
        snprintf(buf, size, "rank %d is not a new worker's (ranks %d to %d, fault.max_workers %d)",
                 want, s->conf.workers, max - 1, max);
        return buf;
    }
    const member_t *first = NULL;
    for (int i = 0; i < s->n_members; i++) {
        const member_t *m = &s->members[i];
        if (m->role != ORDO_ROLE_WORKER) continue;
        if (m->rank == want) {
            snprintf(buf, size, "rank %d has joined the run already", want);
            return buf;
        }
        if (m->done) {
            snprintf(buf, size, "the run is ending (worker %d finished its part)", m->rank);
            return buf;
        }
        if (!first && !m->dead) first = m;
    }
    if (!first) return "no worker is left in the run";
    if (s->declared && !json_equal(tensors, first->tensors)) {
        snprintf(buf, size, "its declared tensors differ from the run's (worker %d's)", first->rank);
        return buf;
    }
    return NULL;
}

void ordo__sched_grow(sched_t *s, const ordo__msg_t *msg, json_t *o)
{
    char why[400], name[320];
    int want = (int)json_integer_value(json_object_get(o, "rank"));
    int pid = (int)json_integer_value(json_object_get(o, "pid"));
    json_t *tensors = json_object_get(o, "tensors");
    const char *no = why_not(s, want, tensors, why, sizeof why);
    if (no) {
        refuse(s, msg, pid, no);
        return;
    }
    int64_t at = 0;
    for (int i = 0; i < s->n_members; i++)
        if (s->members[i].role == ORDO_ROLE_WORKER && s->members[i].next_iter > at)
            at = s->members[i].next_iter;
    at += 2;
    member_t *m = &s->members[s->n_members++]; /* room for max_workers (scheduler.c) */
    memset(m, 0, sizeof *m);
    memcpy(m->rid, msg->rid, msg->rid_len);
    m->rid_len = msg->rid_len;
    m->role = ORDO_ROLE_WORKER;
    m->want_rank = want;
    m->rank = want;
    m->pid = pid;
    m->next_iter = at;
    if (s->declared) m->tensors = json_incref(tensors);
    m->last_seen_ns = ordo__clock_ns();
    ordo__sched_member_fresh(s, m, o);
    char *text = ordo__sched_welcome_text(s, m, at);
    if (!text) {
        ordo__sched_abort_run(s, "out of memory for a WELCOME");
        return;
    }
    ordo__sched_reply(s, m->rid, m->rid_len, ORDO_MSG_WELCOME, text);
    free(text);
    s->n_live++;
    s->n_joins++;
    ordo__sched_record(s, "join", m, at);
    ordo__sched_tell_members(s, "joined", want, at);
    ORDO_INFO("%s joins the run at iteration %lld: %d workers (fault.max_workers %d)",
              ordo__sched_member_name(m, name, sizeof name), (long long)at, s->n_live,
              ordo__conf_max_workers(&s->conf));
}
