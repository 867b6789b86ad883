/* ps_repl: the worker's side of a promotion ([fault] replicas, server/replica.h). The
 * scheduler's KEYMAP names the dead servers; the worker recomputes the key map (their slices'
 * first live backups become the primaries, as everywhere) and sends again, to the new
 * primaries, what the dead ones had not answered: pushes not acknowledged (the gradient is
 * still the caller's until PUSH_DONE, and servers acknowledge a push only once every live
 * replica holds its update) and pulls not answered. The new primary recognises a push it
 * already holds by (worker, slice, iteration) and does not apply it twice. Pushes still
 * queued here simply leave for the new primary, and initial values not yet seen back are sent
 * again too, and a push path's own messages (merged groups' parts, push_merged.c's moved)
 * not acknowledged. A KEYMAP may also name a server that joined in a dead one's place: the worker
 * connects to it. */
#include "common/error.h"
#include "common/keys.h"
#include "common/log.h"
#include "common/node_rejoin.h"
#include "client/ps_internal.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

/* a KEYMAP's "joined": [rank, endpoint]: a replacement took a dead server's place; connect to
 * it and say hello (it becomes a primary only if another server dies) */
static int on_joined(ordo__ps_t *w, json_t *j)
{
    ordo__keys_t *k = w->node.keys;
    int srv = (int)json_integer_value(json_array_get(j, 0));
    const char *ep = json_string_value(json_array_get(j, 1));
    if (!json_is_integer(json_array_get(j, 0)) || srv < 0 || srv >= k->n_servers || !ep ||
        strncmp(ep, "tcp://", 6) != 0)
        return ordo__error_set(ORDO_ERR_PROTO, "KEYMAP: a bad \"joined\"");
    int sock = ordo__transport_connect(w->node.tp, ep, 1);
    if (sock < 0) return sock;
    char *copy = strdup(ep);
    if (!copy) return ORDO_ERR_NOMEM;
    free(w->node.server_endpoints[srv]);
    w->node.server_endpoints[srv] = copy;
    w->server_sock[srv] = sock;
    ordo__keys_server_joined(k, srv);
    ordo__msg_t m;
    ordo__msg_init(&m, ORDO_MSG_HELLO);
    m.sock = sock;
    m.hdr.role = ORDO_ROLE_WORKER;
    m.hdr.rank = w->node.rank;
    m.hdr.req = ordo__transport_heartbeat_id(w->node.tp); /* this process: server/fence.h */
    return ordo__transport_send(w->node.tp, &m);
}

int ordo__ps_on_keymap(ordo__ps_t *w, ordo__msg_t *m)
{
    ordo__keys_t *k = w->node.keys;
    char buf[256];
    size_t len = 0;
    const char *d = ordo__msg_data(m, 0, &len);
    json_t *o = d ? json_loadb(d, len, 0, NULL) : NULL;
    json_t *dead = json_object_get(o, "dead");
    int *was = malloc(sizeof *was * ((size_t)k->n_slices + 1));
    int rc = k->replicas > 1 && json_is_array(dead) && was ? 0 : ORDO_ERR_PROTO;
    for (int i = 0; was && i < k->n_slices; i++)
        was[i] = k->slices[i].server;
    ordo__credit_reset(&w->credit); /* the dead server's pushes are sent again */
    if (!rc && json_object_get(o, "joined")) rc = on_joined(w, json_object_get(o, "joined"));
    for (size_t i = 0; !rc && i < json_array_size(dead); i++) {
        json_t *v = json_array_get(dead, i);
        rc = ordo__keys_server_failed(k, json_is_integer(v) ? (int)json_integer_value(v) : -1, NULL);
    }
    if (!rc) ordo__node_keymap_seen(&w->node, o);
    json_decref(o);
    if (rc) {
        free(was);
        return ordo__error_set(ORDO_ERR_PROTO, "cannot apply the scheduler's KEYMAP %s",
                              ordo__msg_text(m, 0, buf, sizeof buf));
    }
    int pushes = 0, pulls = 0, moved = 0;
    if ((rc = ordo__ps_reserve(w, k->n_slices)) != 0) {
        free(was);
        return rc;
    }
    for (int i = 0; i < k->n_slices; i++) {
        if (k->slices[i].server == was[i]) continue;
        moved++;
        keystate_t *ks = &w->ks[k->slices[i].key];
        /* an initial value the dead primary may not have passed on (ignored if it did) */
        if (w->init_val[i] && (rc = ordo__ps_send_init(w, i)) != 0) break;
        if (w->sent[i]) { /* left for the dead primary, never answered: queue it again */
            queued_push_t q = w->last[i];
            q.seq = w->seq++;
            w->sent[i] = 0;
            w->pq[w->pq_n++] = q;
            pushes++;
        }
        bool rides = ks->fused && ks->push_left && ks->push_iter + 1 == ks->pull_iter;
        if (ks->pull_left && !w->got[i] && !rides && ks->push_left) {
            /* a pull of its own while the key's push is not complete (a libordo program may
             * send a push of t and a pull of t + 1): it goes once the push completed
             * (ps.c's send_held_pulls), so that its answer, which the new primary may have at
             * once, cannot come first */
            w->repull[i] = 1;
            pulls++;
        } else if (ks->pull_left && !w->got[i] && !rides && !w->repull[i]) {
            /* (a fused push carries its pull; a held-back one goes when its push completes) */
            if ((rc = ordo__ps_send_pull(w, i, ks->pull_iter)) != 0) break;
            pulls++;
        }
    }
    if (!rc && moved && w->path->ops->moved) { /* the path's own messages (merged parts) */
        int n = w->path->ops->moved(w->path, was);
        if (n < 0)
            rc = n;
        else
            pushes += n;
    }
    free(was);
    if (moved)
        ORDO_WARN("KEYMAP %s: the dead servers' backups are the primaries now; sent again %d "
                  "pushes and %d pulls", ordo__msg_text(m, 0, buf, sizeof buf), pushes, pulls);
    else
        ORDO_INFO("KEYMAP %s: no primary changed", ordo__msg_text(m, 0, buf, sizeof buf));
    ordo__ps_pump(w);
    return rc;
}
