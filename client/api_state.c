/* api_state: the public C API's calls for a worker's state held by the program, not the
 * servers (include/ordo/ordo.h): ordo_commit_state keeps the program's state for its peers,
 * ordo_peer_state gives a worker that restarted or joined a live peer's (ordo.torch
 * gradients mode: parameters and optimizer state). client/ps_state.c carries the messages. */
#include "ordo/ordo.h"

#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "client/api_internal.h"
#include "client/ps.h"

/* the iteration the program is at: every tensor's gradients pushed so far (the oldest) */
static int64_t program_iter(const ordo_t *o)
{
    int64_t v = -1;
    for (int i = 0; i < o->n_tensors; i++)
        if (v < 0 || o->t[i].version < v) v = o->t[i].version;
    return v < 0 ? 0 : v;
}

int ordo_commit_state(ordo_t *o, const void *state, size_t bytes)
{
    int rc = ordo__api_usable(o, "ordo_commit_state");
    if (!rc) rc = ordo__api_unbound(o, "ordo_commit_state");
    if (rc) return rc;
    if (!state && bytes) return ordo__error_set(ORDO_ERR_INVAL, "ordo_commit_state: NULL state");
    rc = ordo__ps_state_commit(o->w, state, bytes, program_iter(o));
    return rc == ORDO_ERR_NOMEM ? ordo__api_fail(rc) : rc ? ordo__api_cluster_failed(o, rc) : 0;
}

static bool answered(const ordo_t *o, int64_t unused)
{
    (void)unused;
    return ordo__ps_state_ready(o->w);
}

int ordo_peer_state(ordo_t *o, void *buf, size_t capacity, size_t *bytes, int64_t *iter,
                    int timeout_ms)
{
    int rc = ordo__api_usable(o, "ordo_peer_state");
    if (!rc) rc = ordo__api_unbound(o, "ordo_peer_state");
    if (rc) return rc;
    if (!bytes || !iter) return ordo__error_set(ORDO_ERR_INVAL, "ordo_peer_state: NULL bytes or iter");
    if (!o->state_have) {
        /* after a timed-out or interrupted wait, calling again waits for the same answer */
        if (!o->state_asked) {
            if ((rc = ordo__ps_state_request(o->w, program_iter(o))) != 0)
                return ordo__api_cluster_failed(o, rc);
            o->state_asked = true;
        }
        if ((rc = ordo__api_wait_until(o, answered, 0, timeout_ms)) != 0) return rc;
        o->state_asked = false;
        free(o->state_buf);
        o->state_buf = NULL;
        if ((rc = ordo__ps_state_take(o->w, &o->state_buf, &o->state_bytes, &o->state_iter)) != 0)
            return rc;
        if (o->state_iter < program_iter(o))
            return ordo__error_set(ORDO_ERR_INVAL, "ordo_peer_state: the peer's state is of "
                                  "iteration %lld, this worker goes on at %lld",
                                  (long long)o->state_iter, (long long)program_iter(o));
        o->state_have = true;
    }
    *bytes = o->state_bytes;
    *iter = o->state_iter;
    if (!buf || capacity < o->state_bytes) return 0;
    memcpy(buf, o->state_buf, o->state_bytes);
    free(o->state_buf);
    o->state_buf = NULL;
    o->state_have = false;
    /* the program goes on from the state's iteration */
    for (int i = 0; i < o->n_tensors; i++)
        o->t[i].version = o->state_iter;
    o->step_iter = o->state_iter;
    return 0;
}
