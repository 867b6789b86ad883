/* fence: the connections of workers' processes, and refusing those of fenced ones. */
#include "server/fence.h"
#include "common/error.h"
#include "common/log.h"
#include "server/server_internal.h"

#include <jansson.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* one worker process's connection (a HELLO), or a fenced process not seen yet (rid_len 0) */
typedef struct {
    int rank;
    uint64_t beat;
    uint8_t rid[ORDO_WIRE_MAX_RID];
    size_t rid_len;
    bool fenced;
    int64_t iter, generation; /* the verdict's, once fenced */
} conn_t;

struct ordo__srv_fence {
    int n_workers;
    conn_t *c;
    int n, cap;
    int n_fenced; /* none: every message passes at once */
    uint64_t refused;
    char why[256];
};

int ordo__srv_fence_new(int n_workers, ordo__srv_fence_t **out)
{
    ordo__srv_fence_t *f = calloc(1, sizeof *f);
    if (!f) return ordo__error_set(ORDO_ERR_NOMEM, "out of memory for the fencing table");
    f->n_workers = n_workers;
    *out = f;
    return 0;
}

void ordo__srv_fence_destroy(ordo__srv_fence_t **fp)
{
    ordo__srv_fence_t *f = fp ? *fp : NULL;
    if (!f) return;
    free(f->c);
    free(f);
    *fp = NULL;
}

static conn_t *add(ordo__srv_fence_t *f)
{
    if (f->n == f->cap) {
        int cap = f->cap ? 2 * f->cap : 16;
        conn_t *c = realloc(f->c, sizeof *c * (size_t)cap);
        if (!c) return NULL;
        f->c = c;
        f->cap = cap;
    }
    conn_t *c = &f->c[f->n++];
    memset(c, 0, sizeof *c);
    return c;
}

void ordo__srv_fence_add(ordo__srv_fence_t *f, int rank, uint64_t beat, int64_t iter,
                         int64_t generation)
{
    bool seen = false;
    for (int i = 0; i < f->n; i++) {
        conn_t *c = &f->c[i];
        if (c->rank != rank || c->beat != beat || c->fenced) continue;
        c->fenced = true;
        c->iter = iter;
        c->generation = generation;
        f->n_fenced++;
        seen = true;
    }
    if (!seen) { /* its HELLO has not come (yet): refuse it when it does */
        conn_t *c = add(f);
        if (!c) {
            ORDO_ERROR("out of memory fencing worker %d", rank);
            return;
        }
        *c = (conn_t){
            .rank = rank, .beat = beat, .fenced = true, .iter = iter, .generation = generation};
        f->n_fenced++;
    }
    ORDO_WARN("worker %d's process declared dead at iteration %lld is fenced (membership "
              "generation %lld): its messages are refused from now on",
              rank, (long long)iter, (long long)generation);
}

static const char *refuse(ordo__srv_fence_t *f, const conn_t *c)
{
    if (f->refused++ == 0)
        ORDO_WARN("refused a message of worker %d's fenced process (declared dead at iteration "
                  "%lld); later ones are counted at shutdown",
                  c->rank, (long long)c->iter);
    snprintf(f->why, sizeof f->why,
             "fenced: worker %d's process was declared dead at iteration %lld (membership "
             "generation %lld); its pushes and pulls are refused",
             c->rank, (long long)c->iter, (long long)c->generation);
    return f->why;
}

const char *ordo__srv_fence_check(ordo__srv_fence_t *f, const ordo__msg_t *m)
{
    if (m->hdr.type == ORDO_MSG_HELLO) {
        uint64_t beat = m->hdr.req;
        for (int i = 0; beat && i < f->n; i++) { /* a fenced process reconnecting */
            conn_t *c = &f->c[i];
            if (c->fenced && c->rank == m->hdr.rank && c->beat == beat) {
                conn_t was = *c; /* add may move the table */
                conn_t *n = add(f);
                if (n) {
                    *n = was;
                    memcpy(n->rid, m->rid, m->rid_len);
                    n->rid_len = m->rid_len;
                    f->n_fenced++;
                }
                return refuse(f, &was);
            }
        }
        conn_t *c = add(f);
        if (c) {
            *c = (conn_t){.rank = m->hdr.rank, .beat = beat, .rid_len = m->rid_len};
            memcpy(c->rid, m->rid, m->rid_len);
        }
        return NULL;
    }
    if (f->n_fenced == 0) return NULL;
    for (int i = 0; i < f->n; i++) {
        const conn_t *c = &f->c[i];
        if (c->fenced && c->rid_len && c->rid_len == m->rid_len &&
            memcmp(c->rid, m->rid, m->rid_len) == 0)
            return refuse(f, c);
    }
    return NULL;
}

uint64_t ordo__srv_fence_beat(const ordo__srv_fence_t *f, int rank)
{
    uint64_t beat = 0;
    for (int i = 0; f && i < f->n; i++)
        if (f->c[i].rank == rank && !f->c[i].fenced && f->c[i].beat) beat = f->c[i].beat;
    return beat;
}

uint64_t ordo__srv_fence_refused(const ordo__srv_fence_t *f)
{
    return f ? f->refused : 0;
}

/* ---- the server's glue ------------------------------------------------------------------ */

const char *ordo__server_fenced(ordo__server_t *s, const ordo__msg_t *m)
{
    if (!s->fence && ordo__srv_fence_new(s->node.n_workers, &s->fence) != 0) return NULL;
    return ordo__srv_fence_check(s->fence, m);
}

bool ordo__server_on_fenced(ordo__server_t *s, struct json_t *o)
{
    json_t *rank = json_object_get(o, "fenced"), *beat = json_object_get(o, "beat");
    if (!json_is_integer(rank)) return false;
    if (!json_is_integer(beat) || json_integer_value(rank) < 0 ||
        json_integer_value(rank) >= s->node.n_workers) {
        ORDO_WARN("dropped a malformed MEMBERS \"fenced\" message from the scheduler");
        return true;
    }
    if (!s->fence && ordo__srv_fence_new(s->node.n_workers, &s->fence) != 0) {
        ORDO_ERROR("%s", ordo__error_text(ORDO_ERR_NOMEM));
        return true;
    }
    ordo__srv_fence_add(s->fence, (int)json_integer_value(rank), (uint64_t)json_integer_value(beat),
                        json_integer_value(json_object_get(o, "iter")),
                        json_integer_value(json_object_get(o, "generation")));
    return true;
}
