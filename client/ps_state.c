/* ps_state: a worker's committed state for its peers (ordo_commit_state) and a live peer's
 * for a worker that restarted or joined (ordo_peer_state), through the scheduler
 * (scheduler/peer_state.c). A peer's request for an iteration this worker has not committed
 * yet waits for that commit (under bsp it comes: the peer is at most one iteration behind). */
#include "client/ps.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/log.h"
#include "client/ps_internal.h"

/* send this worker's state (or, with why, a refusal) to the worker of rank that asked (req) */
static int send_state(ordo__ps_t *w, int rank, uint64_t req, const char *why)
{
    ordo__msg_t m;
    ordo__msg_init(&m, ORDO_MSG_STATE);
    m.hdr.req = req;
    m.hdr.key = (uint32_t)rank;
    m.hdr.iter = w->state_iter;
    int rc;
    if (why) {
        json_t *o = json_pack("{s:s}", "error", why);
        char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
        m.hdr.dtype = ORDO_DTYPE_JSON;
        rc = text ? ordo__msg_add_text(&m, text) : ORDO_ERR_NOMEM;
        free(text);
        json_decref(o);
    } else {
        m.hdr.dtype = ORDO_DTYPE_BYTES;
        rc = ordo__msg_add_copy(&m, w->state, w->state_len);
    }
    if (rc) {
        ordo__msg_close(&m);
        return rc;
    }
    if (!why)
        ORDO_INFO("sent worker %d this worker's state of iteration %lld (%zu bytes)", rank,
                  (long long)w->state_iter, w->state_len);
    return ordo__node_send_ctl(&w->node, &m);
}

int ordo__ps_state_commit(ordo__ps_t *w, const void *state, size_t bytes, int64_t iter)
{
    if (bytes > w->state_len || !w->state) {
        void *p = realloc(w->state, bytes ? bytes : 1);
        if (!p) return ORDO_ERR_NOMEM;
        w->state = p;
    }
    if (bytes) memcpy(w->state, state, bytes);
    w->state_len = bytes;
    w->state_iter = iter;
    int rc = 0, kept = 0;
    for (int i = 0; i < w->n_state_wait; i++) {
        if (w->state_wait[i].want > iter) {
            w->state_wait[kept++] = w->state_wait[i];
            continue;
        }
        int r = send_state(w, w->state_wait[i].rank, w->state_wait[i].req, NULL);
        if (r && !rc) rc = r;
    }
    w->n_state_wait = kept;
    return rc;
}

int ordo__ps_on_state_req(ordo__ps_t *w, ordo__msg_t *m)
{
    int rank = (int)m->hdr.key;
    if (w->state_iter >= 0 && w->state_iter >= m->hdr.iter) return send_state(w, rank, m->hdr.req, NULL);
    if (w->n_state_wait == (int)(sizeof w->state_wait / sizeof w->state_wait[0]))
        return send_state(w, rank, m->hdr.req, "too many workers wait for this one's state");
    ORDO_INFO("worker %d asks for this worker's state of iteration %lld; it has %lld: at its "
              "next commit", rank, (long long)m->hdr.iter, (long long)w->state_iter);
    w->state_wait[w->n_state_wait].rank = rank;
    w->state_wait[w->n_state_wait].req = m->hdr.req;
    w->state_wait[w->n_state_wait].want = m->hdr.iter;
    w->n_state_wait++;
    return 0;
}

int ordo__ps_state_request(ordo__ps_t *w, int64_t want)
{
    if (w->state_out || w->state_in)
        return ordo__error_set(ORDO_ERR_INVAL, "a state request is in flight");
    ordo__msg_t m;
    ordo__msg_init(&m, ORDO_MSG_STATE_REQ);
    m.hdr.iter = want;
    m.hdr.req = ++w->req;
    int rc = ordo__node_send_ctl(&w->node, &m);
    if (rc) return rc;
    w->state_out = true;
    w->state_req = m.hdr.req;
    w->outstanding++; /* until its ORDO__EV_STATE */
    return 0;
}

bool ordo__ps_state_ready(const ordo__ps_t *w)
{
    return w->state_in;
}

int ordo__ps_on_state(ordo__ps_t *w, ordo__msg_t *m)
{
    if (!w->state_out || m->hdr.req != w->state_req || m->nframes != 1) {
        ORDO_WARN("dropped a STATE that answers no request of this worker's");
        return 0;
    }
    size_t len = 0;
    const void *d = ordo__msg_data(m, 0, &len);
    free(w->state_got);
    w->state_got = NULL;
    w->state_got_len = 0;
    w->state_status = 0;
    if (m->hdr.dtype == ORDO_DTYPE_JSON) {
        json_t *o = d ? json_loadb(d, len, 0, NULL) : NULL;
        const char *err = json_string_value(json_object_get(o, "error"));
        snprintf(w->state_err, sizeof w->state_err, "%s", err ? err : "refused without a reason");
        w->state_status = ORDO_ERR_NOTSUP;
        json_decref(o);
    } else if (!(w->state_got = malloc(len ? len : 1))) {
        w->state_status = ORDO_ERR_NOMEM;
        snprintf(w->state_err, sizeof w->state_err, "out of memory for %zu bytes", len);
    } else {
        if (len) memcpy(w->state_got, d, len);
        w->state_got_len = len;
        w->state_got_iter = m->hdr.iter;
    }
    w->state_out = false;
    w->state_in = true;
    ordo__ps_add_event(w, ORDO__EV_STATE, -1, m->hdr.iter);
    return 0;
}

int ordo__ps_state_take(ordo__ps_t *w, void **state, size_t *bytes, int64_t *iter)
{
    if (!w->state_in) return ordo__error_set(ORDO_ERR_INVAL, "no state answer to take");
    w->state_in = false;
    if (w->state_status) return ordo__error_set(w->state_status, "peer state: %s", w->state_err);
    *state = w->state_got;
    *bytes = w->state_got_len;
    *iter = w->state_got_iter;
    w->state_got = NULL;
    w->state_got_len = 0;
    return 0;
}
