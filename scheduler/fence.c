/* fence: the scheduler's side of fencing late peers (docs/durability.md, "Fencing"). A worker
 * declared dead (fault.worker = restart or shrink) may not be dead: a paused process, a host
 * behind a partition. Its process is fenced at the verdict: its connections (the main socket's
 * routing id, its heartbeat id and socket) are remembered, every message that comes from them
 * later is answered with ABORT saying why (the process stops, and none of its STATS, barriers
 * or aborts count), and the servers are told (MEMBERS "fenced") so they refuse its pushes and
 * pulls from then on (server/fence.h). Every membership change starts a new generation,
 * written in membership.jsonl: one counter with the scheduler's (restart.c), so a member
 * that obeys generation G knows of every change up to G. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/node.h"
#include "common/transport.h"
#include "scheduler/scheduler_internal.h"

#define MAX_FENCED 64 /* the oldest are forgotten: they stopped long ago */

typedef struct {
    uint8_t rid[ORDO_WIRE_MAX_RID], hb_rid[ORDO_WIRE_MAX_RID];
    size_t rid_len, hb_rid_len;
    uint64_t beat;
    int rank, pid;
    int64_t iter, generation;
    uint64_t refused; /* messages answered with ABORT */
} fenced_t;

struct ordo__sched_fence {
    fenced_t f[MAX_FENCED];
    int n, next;
};

void ordo__sched_fence_destroy(sched_t *s)
{
    free(s->fence);
    s->fence = NULL;
}

int64_t ordo__sched_generation_next(sched_t *s)
{
    s->generation++;
    ordo__sched_restart_save(s); /* a new scheduler goes on after it (restart.c) */
    return s->generation;
}

/* tell the live servers that worker rank's process with heartbeat id beat is fenced */
static void tell_servers(sched_t *s, const fenced_t *f)
{
    json_t *o = json_pack("{s:i,s:I,s:I,s:I}", "fenced", f->rank, "beat", (json_int_t)f->beat,
                          "generation", (json_int_t)f->generation, "iter", (json_int_t)f->iter);
    char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
    json_decref(o);
    for (int i = 0; text && i < s->n_members; i++) {
        member_t *m = &s->members[i];
        if (m->role != ORDO_ROLE_SERVER || m->dead || m->gone) continue;
        ordo__msg_t msg;
        ordo__sched_msg_to(s, m->rid, m->rid_len, ORDO_MSG_MEMBERS, &msg);
        msg.hdr.iter = f->iter;
        msg.hdr.dtype = ORDO_DTYPE_JSON;
        ordo__msg_add_text(&msg, text);
        ordo__transport_send(s->tp, &msg);
    }
    free(text);
}

void ordo__sched_generation_set(sched_t *s, int64_t generation)
{
    /* RUN/scheduler.json is written at every change, so its generation (+ 1, restart.c) is at
     * least this one; a file from before that rule is made up for here */
    if (generation >= s->generation) s->generation = generation + 1;
}

void ordo__sched_fence(sched_t *s, const member_t *m, int64_t iter, int64_t generation)
{
    if (!m->rid_len && !m->beat) return; /* died while no scheduler ran: no process known */
    if (!s->fence && !(s->fence = calloc(1, sizeof *s->fence))) return;
    fenced_t *f = &s->fence->f[s->fence->next];
    s->fence->next = (s->fence->next + 1) % MAX_FENCED;
    if (s->fence->n < MAX_FENCED) s->fence->n++;
    *f = (fenced_t){.rid_len = m->rid_len,
                    .hb_rid_len = m->hb_rid_len,
                    .beat = m->beat,
                    .rank = m->rank,
                    .pid = m->pid,
                    .iter = iter,
                    .generation = generation};
    memcpy(f->rid, m->rid, m->rid_len);
    memcpy(f->hb_rid, m->hb_rid, m->hb_rid_len);
    tell_servers(s, f);
}

static bool same(const uint8_t *a, size_t alen, const uint8_t *b, size_t blen)
{
    return alen > 0 && alen == blen && memcmp(a, b, alen) == 0;
}

bool ordo__sched_fence_refuse(sched_t *s, const ordo__msg_t *m)
{
    if (!s->fence) return false;
    for (int i = 0; i < s->fence->n; i++) {
        fenced_t *f = &s->fence->f[i];
        bool hit = same(f->rid, f->rid_len, m->rid, m->rid_len) ||
                   same(f->hb_rid, f->hb_rid_len, m->rid, m->rid_len) ||
                   (m->hdr.type == ORDO_MSG_HEARTBEAT && f->beat && m->hdr.req == f->beat);
        if (!hit) continue;
        if (f->refused++ == 0)
            ORDO_WARN("worker %d (pid %d), declared dead at iteration %lld (generation %lld), is "
                      "back: fenced, its messages are refused",
                      f->rank, f->pid, (long long)f->iter, (long long)f->generation);
        if (m->hdr.type == ORDO_MSG_ABORT) return true; /* it is leaving already */
        char why[256];
        snprintf(why, sizeof why,
                 "fenced: worker %d (pid %d) was declared dead at iteration %lld (membership "
                 "generation %lld); this process is no longer part of the run",
                 f->rank, f->pid, (long long)f->iter, (long long)f->generation);
        ordo__sched_reply(s, m->rid, m->rid_len, ORDO_MSG_ABORT, why);
        return true;
    }
    return false;
}
