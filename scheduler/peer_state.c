/* peer_state: the scheduler relays a live peer's committed state to a worker that restarted
 * or joined (ordo_peer_state; ordo.torch gradients mode, whose parameters and optimizer state
 * live on the workers only). The asking worker's STATE_REQ goes to the lowest-ranked live
 * worker that is neither the asker nor a restarted or joined one that has not finished an
 * iteration; that worker's STATE (its ordo_commit_state bytes, or an error) goes back to the
 * asker. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/transport.h"
#include "scheduler/scheduler_internal.h"

static member_t *worker_of_rank(sched_t *s, int rank)
{
    for (int i = 0; i < s->n_members; i++)
        if (s->members[i].role == ORDO_ROLE_WORKER && s->members[i].rank == rank &&
            !s->members[i].dead)
            return &s->members[i];
    return NULL;
}

/* answer the asker with an error text */
static void refuse(sched_t *s, const member_t *asker, const ordo__msg_t *req, const char *why)
{
    char name[320];
    ORDO_WARN("no peer state for %s: %s", ordo__sched_member_name(asker, name, sizeof name), why);
    json_t *o = json_pack("{s:s}", "error", why);
    char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
    ordo__msg_t m;
    ordo__sched_msg_to(s, asker->rid, asker->rid_len, ORDO_MSG_STATE, &m);
    m.hdr.req = req->hdr.req;
    m.hdr.key = (uint32_t)asker->rank;
    m.hdr.dtype = ORDO_DTYPE_JSON;
    if (text) ordo__msg_add_text(&m, text);
    ordo__transport_send(s->tp, &m);
    free(text);
    json_decref(o);
}

void ordo__sched_on_state_req(sched_t *s, member_t *mb, ordo__msg_t *m)
{
    char name[320];
    if (mb->role != ORDO_ROLE_WORKER || mb->rank < 0) return;
    member_t *peer = NULL;
    for (int i = 0; i < s->n_members; i++) {
        member_t *p = &s->members[i];
        if (p->role != ORDO_ROLE_WORKER || p == mb || p->dead || p->done || p->recovering ||
            p->rank < 0 || p->next_iter < 1)
            continue;
        if (!peer || p->rank < peer->rank) peer = p;
    }
    if (!peer) {
        refuse(s, mb, m, "no live worker has finished an iteration to take the state from");
        return;
    }
    ORDO_INFO("%s asks worker %d for its state (iteration %lld or later)",
              ordo__sched_member_name(mb, name, sizeof name), peer->rank, (long long)m->hdr.iter);
    ordo__msg_t f;
    ordo__sched_msg_to(s, peer->rid, peer->rid_len, ORDO_MSG_STATE_REQ, &f);
    f.hdr.req = m->hdr.req;
    f.hdr.iter = m->hdr.iter;
    f.hdr.key = (uint32_t)mb->rank;
    ordo__transport_send(s->tp, &f);
}

void ordo__sched_on_state(sched_t *s, member_t *mb, ordo__msg_t *m)
{
    char name[320];
    member_t *asker = worker_of_rank(s, (int)m->hdr.key);
    if (mb->role != ORDO_ROLE_WORKER || !asker) {
        ORDO_WARN("dropped a STATE from %s for worker %u, which is not in the run",
                  ordo__sched_member_name(mb, name, sizeof name), m->hdr.key);
        return;
    }
    size_t len = 0;
    const void *data = m->nframes == 1 ? ordo__msg_data(m, 0, &len) : NULL;
    ordo__msg_t f;
    ordo__sched_msg_to(s, asker->rid, asker->rid_len, ORDO_MSG_STATE, &f);
    f.hdr.req = m->hdr.req;
    f.hdr.iter = m->hdr.iter;
    f.hdr.key = m->hdr.key;
    f.hdr.dtype = m->hdr.dtype;
    if (data && ordo__msg_add_copy(&f, data, len) != 0) {
        ordo__msg_close(&f);
        refuse(s, asker, m, "the scheduler ran out of memory relaying the state");
        return;
    }
    ORDO_INFO("relayed worker %d's state of iteration %lld (%zu bytes) to worker %d", mb->rank,
              (long long)m->hdr.iter, len, asker->rank);
    ordo__transport_send(s->tp, &f);
}
