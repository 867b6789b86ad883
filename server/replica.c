/* replica: primary-backup replication of key slices between servers (server/replica.h). */
#include "server/replica.h"
#include "common/error.h"
#include "common/keys.h"
#include "common/log.h"
#include "common/node_rejoin.h"
#include "common/transport.h"
#include "server/consistency/model.h"
#include "server/server_internal.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

/* a worker's messages kept for slices still held as a backup: bounds, so that a confused
 * worker cannot fill the server's memory (a promotion parks at most one iteration's
 * messages of the workers) */
#define MAX_PARKED 65536
#define MAX_PARKED_BYTES ((size_t)1 << 30)

typedef struct {
    int64_t need; /* the update count (ordo__store_seq) every live backup must hold first */
    ordo__msg_t msg;
} pending_ack_t;

typedef struct {
    pending_ack_t *a;
    int n, cap;
} ack_list_t;

/* a merged push's acknowledgement: sent once every one of its slices' updates is visible */
typedef struct {
    int64_t iter;
    int *slices, n;
    ordo__msg_t msg;
} merged_ack_t;

struct ordo__replica {
    int n_servers, n_slices;
    int *peer_sock;      /* per server rank: the connection to its data port (-1: self) */
    int64_t *acked;      /* per slice and server: the newest version that backup holds */
    ack_list_t *acks;    /* per slice: push acknowledgements waiting for the backups */
    merged_ack_t *macks; /* merged pushes' acknowledgements waiting for the backups */
    int n_macks, cap_macks;
    ordo__msg_t *parked;  /* workers' messages for slices not (yet) ours */
    int n_parked, cap_parked;
    size_t parked_bytes; /* their payloads */
    uint64_t n_sent, n_dup;
};

int ordo__replica_new(ordo__server_t *s, ordo__replica_t **out)
{
    const ordo__keys_t *k = s->node.keys;
    *out = NULL;
    if (k->replicas <= 1) return 0;
    ordo__replica_t *r = calloc(1, sizeof *r);
    if (!r) return ORDO_ERR_NOMEM;
    r->n_servers = k->n_servers;
    r->n_slices = k->n_slices;
    r->peer_sock = malloc(sizeof *r->peer_sock * (size_t)k->n_servers);
    r->acked = malloc(sizeof *r->acked * (size_t)k->n_slices * (size_t)k->n_servers);
    r->acks = calloc((size_t)k->n_slices + 1, sizeof *r->acks);
    if (!r->peer_sock || !r->acked || !r->acks) {
        ordo__replica_destroy(&r);
        return ORDO_ERR_NOMEM;
    }
    /* every replica starts where the store does: unset, or version 0 for average rules */
    for (int i = 0; i < k->n_slices; i++)
        for (int b = 0; b < k->n_servers; b++)
            r->acked[(size_t)i * (size_t)k->n_servers + (size_t)b] =
                ordo__store_owns(s->store, i) ? ordo__store_seq(s->store, i) : -1;
    for (int b = 0; b < k->n_servers; b++) {
        r->peer_sock[b] = -1;
        if (b == s->node.rank) continue;
        int rc = ordo__transport_connect(s->node.tp, s->node.server_endpoints[b], 1);
        if (rc < 0) {
            ordo__replica_destroy(&r);
            return ordo__error_context(rc, "connecting to another server for replication");
        }
        r->peer_sock[b] = rc;
    }
    ORDO_INFO("replicas: %d copies of each slice; this server holds %lld bytes (primary and "
              "backup)", k->replicas, (long long)ordo__store_bytes(s->store));
    *out = r;
    return 0;
}

void ordo__replica_destroy(ordo__replica_t **rp)
{
    ordo__replica_t *r = rp ? *rp : NULL;
    if (!r) return;
    for (int i = 0; r->acks && i < r->n_slices; i++) {
        for (int j = 0; j < r->acks[i].n; j++)
            ordo__msg_close(&r->acks[i].a[j].msg);
        free(r->acks[i].a);
    }
    for (int i = 0; i < r->n_macks; i++) {
        ordo__msg_close(&r->macks[i].msg);
        free(r->macks[i].slices);
    }
    free(r->macks);
    for (int i = 0; i < r->n_parked; i++)
        ordo__msg_close(&r->parked[i]);
    free(r->parked);
    free(r->acks);
    free(r->acked);
    free(r->peer_sock);
    free(r);
    *rp = NULL;
}

bool ordo__replica_is_peer(const ordo__replica_t *r, int sock)
{
    for (int b = 0; r && b < r->n_servers; b++)
        if (r->peer_sock[b] == sock && sock >= 0) return true;
    return false;
}

void ordo__replica_stats(const ordo__replica_t *r, uint64_t *sent, uint64_t *duplicates)
{
    *sent = r ? r->n_sent : 0;
    *duplicates = r ? r->n_dup : 0;
}

void ordo__replica_count_duplicate(ordo__replica_t *r)
{
    if (r) r->n_dup++;
}

static int64_t *acked(const ordo__replica_t *r, int slice, int server)
{
    return &r->acked[(size_t)slice * (size_t)r->n_servers + (size_t)server];
}

bool ordo__replica_visible(const ordo__server_t *s, int slice, int64_t seq)
{
    const ordo__replica_t *r = s->repl;
    if (!r) return true;
    const ordo__keys_t *k = s->node.keys;
    for (int j = 0; j < k->replicas; j++) {
        int b = ordo__keys_replica(k, slice, j);
        if (b == s->node.rank || k->dead[b]) continue;
        if (*acked(r, slice, b) < seq) return false;
    }
    return true;
}

/* send slice's state to backup b: its value, its momentum (if any) and, under asp, the
 * workers' push clocks; the header's iteration is its update count (ordo__store_seq) */
static void send_state(ordo__server_t *s, int slice, int b)
{
    ordo__replica_t *r = s->repl;
    const ordo__slice_t *sl = &s->node.keys->slices[slice];
    ordo__msg_t m;
    ordo__msg_init(&m, ORDO_MSG_REPL);
    m.sock = r->peer_sock[b];
    m.hdr.role = ORDO_ROLE_SERVER;
    m.hdr.rank = s->node.rank;
    m.hdr.key = sl->key;
    m.hdr.chunk = sl->chunk;
    m.hdr.iter = ordo__store_seq(s->store, slice);
    m.hdr.dtype = ORDO_DTYPE_F32;
    void *data, *hint;
    size_t bytes;
    ordo__store_ref(s->store, slice, &data, &bytes, &hint);
    int rc = ordo__msg_add_ref(&m, data, bytes, ordo__store_unref_cb, hint);
    if (rc) ordo__store_unref_cb(data, hint);
    const float *mom = ordo__store_momentum(s->store, slice);
    if (!rc && mom) rc = ordo__msg_add_copy(&m, mom, bytes);
    const int64_t *clocks = ordo__store_clocks(s->store, slice);
    if (!rc && clocks)
        rc = ordo__msg_add_copy(&m, clocks, sizeof *clocks * (size_t)s->node.n_workers);
    if (rc) {
        ORDO_ERROR("replicas: cannot send key %u chunk %u to server %d: %s", sl->key, sl->chunk, b,
                   ordo__error_text(rc));
        ordo__msg_close(&m);
        return;
    }
    r->n_sent++;
    ordo__transport_send(s->node.tp, &m);
}

void ordo__replica_forward(ordo__server_t *s, int slice, int worker, int64_t iter,
                          const ordo__grad_t *g, int64_t seq)
{
    ordo__replica_t *r = s->repl;
    const ordo__keys_t *k = s->node.keys;
    if (!r) return;
    for (int j = 0; j < k->replicas; j++) {
        int b = ordo__keys_replica(k, slice, j);
        if (b == s->node.rank || k->dead[b]) continue;
        ordo__msg_t m;
        ordo__msg_init(&m, ORDO_MSG_REPL);
        m.sock = r->peer_sock[b];
        m.hdr.role = ORDO_ROLE_SERVER;
        m.hdr.rank = s->node.rank;
        m.hdr.key = k->slices[slice].key;
        m.hdr.chunk = k->slices[slice].chunk;
        m.hdr.iter = iter;
        m.hdr.priority = worker;
        m.hdr.req = (uint64_t)seq;
        m.hdr.flags = ORDO_FLAG_FORWARD;
        m.hdr.dtype = g->dtype;
        if (ordo__msg_add_copy(&m, g->data, g->len) != 0) {
            ORDO_ERROR("replicas: cannot forward a push of key %u chunk %u to server %d",
                       m.hdr.key, m.hdr.chunk, b);
            ordo__msg_close(&m);
            continue;
        }
        r->n_sent++;
        ordo__transport_send(s->node.tp, &m);
    }
}

void ordo__replica_updated(ordo__server_t *s, int slice)
{
    const ordo__keys_t *k = s->node.keys;
    if (!s->repl) return;
    for (int j = 0; j < k->replicas; j++) {
        int b = ordo__keys_replica(k, slice, j);
        if (b != s->node.rank && !k->dead[b]) send_state(s, slice, b);
    }
}

/* send the acknowledgements of slice whose updates every live backup holds */
static void flush_acks(ordo__server_t *s, int slice)
{
    ack_list_t *l = &s->repl->acks[slice];
    int keep = 0;
    for (int i = 0; i < l->n; i++) {
        if (ordo__replica_visible(s, slice, l->a[i].need))
            ordo__transport_send(s->node.tp, &l->a[i].msg);
        else
            l->a[keep++] = l->a[i];
    }
    l->n = keep;
}

/* every slice of a merged push holds the update of iteration iter + 1 on every live backup */
static bool merged_visible(const ordo__server_t *s, const merged_ack_t *g)
{
    for (int i = 0; i < g->n; i++)
        if (!ordo__replica_visible(s, g->slices[i], g->iter + 1)) return false; /* bsp only */
    return true;
}

/* send the merged pushes' acknowledgements whose updates every live backup holds */
static void flush_merged_acks(ordo__server_t *s)
{
    ordo__replica_t *r = s->repl;
    int keep = 0;
    for (int i = 0; i < r->n_macks; i++) {
        if (merged_visible(s, &r->macks[i])) {
            ordo__transport_send(s->node.tp, &r->macks[i].msg);
            free(r->macks[i].slices);
        } else {
            r->macks[keep++] = r->macks[i];
        }
    }
    r->n_macks = keep;
}

void ordo__replica_ack_merged(ordo__server_t *s, int *slices, int n, int64_t iter, ordo__msg_t *ack)
{
    ordo__replica_t *r = s->repl;
    merged_ack_t g = {.iter = iter, .slices = slices, .n = n};
    if (merged_visible(s, &g)) {
        ordo__transport_send(s->node.tp, ack);
        free(slices);
        return;
    }
    if (r->n_macks == r->cap_macks) {
        int cap = r->cap_macks ? r->cap_macks * 2 : 8;
        merged_ack_t *p = realloc(r->macks, sizeof *p * (size_t)cap);
        if (!p) {
            ORDO_ERROR("out of memory keeping a merged push's acknowledgement");
            ordo__msg_close(ack);
            free(slices);
            return;
        }
        r->macks = p;
        r->cap_macks = cap;
    }
    ordo__msg_init(&g.msg, ORDO_MSG_PUSH_ACK);
    ordo__msg_move(&g.msg, ack);
    r->macks[r->n_macks++] = g;
}

void ordo__replica_ack(ordo__server_t *s, int slice, int64_t need, ordo__msg_t *ack)
{
    if (!s->repl || ordo__replica_visible(s, slice, need)) {
        ordo__transport_send(s->node.tp, ack);
        return;
    }
    ack_list_t *l = &s->repl->acks[slice];
    if (l->n == l->cap) {
        int cap = l->cap ? l->cap * 2 : 4;
        pending_ack_t *p = realloc(l->a, sizeof *p * (size_t)cap);
        if (!p) {
            ORDO_ERROR("out of memory keeping a push acknowledgement");
            ordo__msg_close(ack);
            return;
        }
        l->a = p;
        l->cap = cap;
    }
    l->a[l->n].need = need;
    ordo__msg_init(&l->a[l->n].msg, ORDO_MSG_PUSH_ACK);
    ordo__msg_move(&l->a[l->n].msg, ack);
    l->n++;
}

int ordo__replica_park(ordo__server_t *s, ordo__msg_t *m)
{
    ordo__replica_t *r = s->repl;
    size_t bytes = 0;
    for (int i = 0; i < m->nframes; i++)
        bytes += zmq_msg_size(&m->frames[i]);
    if (r->n_parked >= MAX_PARKED || r->parked_bytes + bytes > MAX_PARKED_BYTES)
        return ordo__error_set(ORDO_ERR_FULL, "%d messages (%zu bytes) already wait for a new key map",
                              r->n_parked, r->parked_bytes);
    if (r->n_parked == r->cap_parked) {
        int cap = r->cap_parked ? r->cap_parked * 2 : 16;
        ordo__msg_t *p = realloc(r->parked, sizeof *p * (size_t)cap);
        if (!p) return ORDO_ERR_NOMEM;
        r->parked = p;
        r->cap_parked = cap;
    }
    ordo__msg_init(&r->parked[r->n_parked], m->hdr.type);
    ordo__msg_move(&r->parked[r->n_parked], m);
    r->n_parked++;
    r->parked_bytes += bytes;
    return 0;
}

/* acknowledge REPL m to its primary, as holding update count seq */
static void send_repl_ack(ordo__server_t *s, const ordo__msg_t *m, int64_t seq)
{
    ordo__msg_t a;
    ordo__msg_init(&a, ORDO_MSG_REPL_ACK);
    a.sock = s->data_sock;
    memcpy(a.rid, m->rid, m->rid_len);
    a.rid_len = m->rid_len;
    a.hdr.role = ORDO_ROLE_SERVER;
    a.hdr.rank = s->node.rank;
    a.hdr.key = m->hdr.key;
    a.hdr.chunk = m->hdr.chunk;
    a.hdr.iter = seq;
    ordo__transport_send(s->node.tp, &a);
}

/* ssp: a backup takes a worker's push its primary forwarded, as the primary did (the same
 * pushes in the same rounds, summed in rank order: the same state, bit for bit), unless it
 * has it already (a new primary forwards the re-sent pushes it had) */
static void on_forward(ordo__server_t *s, ordo__msg_t *m, int slice)
{
    size_t len = 0;
    int worker = m->hdr.priority;
    if (!ordo__msg_data(m, 0, &len) || m->nframes != 1 || worker < 0 ||
        worker >= s->node.n_workers) {
        ORDO_WARN("replicas: dropped a malformed forwarded push of key %u chunk %u", m->hdr.key,
                  m->hdr.chunk);
        return;
    }
    int pusher = ordo__server_pusher(s, worker);
    if (!ordo__store_pushed(s->store, slice, pusher, m->hdr.iter)) {
        bool updated;
        int rc = ordo__store_push_frame(s->store, slice, pusher, m->hdr.iter, m->hdr.dtype,
                                        &m->frames[0], &updated);
        if (rc < 0) {
            ORDO_WARN("replicas: forwarded push of key %u chunk %u iteration %lld from worker %d: %s",
                      m->hdr.key, m->hdr.chunk, (long long)m->hdr.iter, worker, ordo__error_text(rc));
            return;
        }
    }
    send_repl_ack(s, m, (int64_t)m->hdr.req);
}

/* a backup takes the state of a slice from its primary and acknowledges it */
static void on_state(ordo__server_t *s, ordo__msg_t *m)
{
    const ordo__keys_t *k = s->node.keys;
    int slice = ordo__keys_slice(k, m->hdr.key, m->hdr.chunk);
    int from = m->hdr.rank;
    if (slice < 0 || from < 0 || from >= k->n_servers || !ordo__store_owns(s->store, slice) ||
        k->slices[slice].server == s->node.rank) {
        ORDO_WARN("replicas: dropped REPL of key %u chunk %u from server %d: not a slice this "
                  "server backs up", m->hdr.key, m->hdr.chunk, from);
        return;
    }
    if (k->dead[from]) return; /* from a server declared dead: its state is no longer the slice's */
    if (k->slices[slice].server != from) { /* a new primary whose KEYMAP has not come here yet */
        if (ordo__replica_park(s, m) != 0) ORDO_WARN("replicas: dropped an early REPL");
        return;
    }
    if (m->hdr.flags & ORDO_FLAG_FORWARD) {
        on_forward(s, m, slice);
        return;
    }
    /* frames: the value, the momentum when the slice has one, the push clocks under asp */
    size_t len = 0, mlen = 0, clen = 0;
    bool has_mom = ordo__store_momentum(s->store, slice) != NULL;
    bool has_clocks = ordo__store_model(s->store)->clocks;
    int want = 1 + has_mom + has_clocks;
    const void *value = ordo__msg_data(m, 0, &len);
    const void *mom = has_mom ? ordo__msg_data(m, 1, &mlen) : NULL;
    const void *clocks = has_clocks ? ordo__msg_data(m, want - 1, &clen) : NULL;
    int rc = value && m->nframes == want
                 ? ordo__store_install(s->store, slice, has_clocks ? 0 : m->hdr.iter, value, len, mom,
                                      mlen)
                 : ordo__error_set(ORDO_ERR_PROTO, "a REPL needs %d frames (the value%s%s), not %d",
                                  want, has_mom ? ", the momentum" : "",
                                  has_clocks ? ", the push clocks" : "", m->nframes);
    if (!rc && has_clocks) rc = ordo__store_install_clocks(s->store, slice, clocks, clen);
    if (rc) {
        ORDO_WARN("replicas: dropped REPL of key %u chunk %u from server %d: %s", m->hdr.key,
                  m->hdr.chunk, from, ordo__error_text(rc));
        return;
    }
    ordo__srv_ckpt_updated(s->ckpt, slice); /* the backup's copy goes into its checkpoint too */
    send_repl_ack(s, m, m->hdr.iter);
}

/* a primary learns that a backup holds a version */
static void on_state_ack(ordo__server_t *s, ordo__msg_t *m)
{
    const ordo__keys_t *k = s->node.keys;
    int slice = ordo__keys_slice(k, m->hdr.key, m->hdr.chunk);
    int from = m->hdr.rank;
    if (slice < 0 || from < 0 || from >= k->n_servers || from == s->node.rank) {
        ORDO_WARN("replicas: dropped REPL_ACK of key %u chunk %u from server %d", m->hdr.key,
                  m->hdr.chunk, from);
        return;
    }
    int64_t *v = acked(s->repl, slice, from);
    if (m->hdr.iter > *v) *v = m->hdr.iter;
    if (k->slices[slice].server != s->node.rank) return;
    ordo__server_wake(s, slice);
    flush_acks(s, slice);
    flush_merged_acks(s);
}

void ordo__replica_on_server_msg(ordo__server_t *s, ordo__msg_t *m)
{
    if (!s->repl || m->hdr.role != ORDO_ROLE_SERVER) {
        ORDO_WARN("dropped %s from %s %d: no replicas in this run", ordo__wire_type_name(m->hdr.type),
                  ordo__wire_role_name(m->hdr.role), m->hdr.rank);
        return;
    }
    if (m->hdr.type == ORDO_MSG_REPL)
        on_state(s, m);
    else if (m->hdr.type == ORDO_MSG_REPL_ACK)
        on_state_ack(s, m);
    else
        ORDO_WARN("dropped %s from server %d", ordo__wire_type_name(m->hdr.type), m->hdr.rank);
}

/* a KEYMAP's "joined": [rank, endpoint]: a replacement took a dead server's place; connect
 * to it (the old connection is left to idle) */
static int on_joined(ordo__server_t *s, json_t *j, int *rank)
{
    ordo__keys_t *k = s->node.keys;
    int srv = (int)json_integer_value(json_array_get(j, 0));
    const char *ep = json_string_value(json_array_get(j, 1));
    if (!json_is_integer(json_array_get(j, 0)) || srv < 0 || srv >= k->n_servers || !ep ||
        strncmp(ep, "tcp://", 6) != 0 || srv == s->node.rank)
        return ordo__error_set(ORDO_ERR_PROTO, "KEYMAP: a bad \"joined\"");
    int sock = ordo__transport_connect(s->node.tp, ep, 1);
    if (sock < 0) return sock;
    char *copy = strdup(ep);
    if (!copy) return ORDO_ERR_NOMEM;
    free(s->node.server_endpoints[srv]);
    s->node.server_endpoints[srv] = copy;
    s->repl->peer_sock[srv] = sock;
    ordo__keys_server_joined(k, srv);
    *rank = srv;
    return 0;
}

int ordo__replica_on_keymap(ordo__server_t *s, ordo__msg_t *m)
{
    ordo__replica_t *r = s->repl;
    ordo__keys_t *k = s->node.keys;
    char buf[512];
    if (!r) {
        ORDO_ERROR("a KEYMAP in a run without replicas: %s", ordo__msg_text(m, 0, buf, sizeof buf));
        return ORDO_ERR_ABORT;
    }
    size_t len = 0;
    const char *d = ordo__msg_data(m, 0, &len);
    json_t *o = d ? json_loadb(d, len, 0, NULL) : NULL;
    json_t *dead = json_object_get(o, "dead");
    int *was = malloc(sizeof *was * ((size_t)k->n_slices + 1));
    int rc = json_is_array(dead) && was ? 0 : ORDO_ERR_PROTO;
    int joined = -1;
    if (!rc && json_object_get(o, "joined"))
        rc = on_joined(s, json_object_get(o, "joined"), &joined);
    for (int i = 0; was && i < k->n_slices; i++)
        was[i] = k->slices[i].server;
    for (size_t i = 0; !rc && i < json_array_size(dead); i++) {
        json_t *v = json_array_get(dead, i);
        int srv = json_is_integer(v) ? (int)json_integer_value(v) : -1;
        if (srv == s->node.rank) {
            ORDO_ERROR("the scheduler declared this server dead");
            rc = ORDO_ERR_ABORT;
        } else if ((rc = ordo__keys_server_failed(k, srv, NULL)) != 0) {
            ORDO_ERROR("KEYMAP: server %d: %s", srv, ordo__error_text(rc));
        }
    }
    if (!rc) ordo__node_keymap_seen(&s->node, o);
    json_decref(o);
    if (rc) {
        free(was);
        ORDO_ERROR("cannot apply the scheduler's KEYMAP %s", ordo__msg_text(m, 0, buf, sizeof buf));
        return ORDO_ERR_ABORT;
    }
    int promoted = 0, sent = 0;
    for (int i = 0; i < k->n_slices; i++) {
        if (k->slices[i].server != s->node.rank) continue;
        if (joined >= 0 && ordo__keys_holds(k, i, joined)) { /* a fresh backup: bring it up */
            *acked(r, i, joined) = -1;
            if (ordo__store_seq(s->store, i) >= 0) send_state(s, i, joined);
            sent++;
        }
        if (was[i] != s->node.rank) { /* ours now: its live backups take our state */
            promoted++;
            for (int b = 0; b < k->n_servers; b++)
                *acked(r, i, b) = -1;
            /* ssp: the backups hold the pushes of later iterations too, which a state would
             * drop; they get the re-sent pushes this server forwards instead */
            if (ordo__store_seq(s->store, i) >= 0 && !ordo__store_model(s->store)->forwards_pushes)
                ordo__replica_updated(s, i);
        }
        ordo__server_wake(s, i); /* a dead backup no longer holds anything back */
        flush_acks(s, i);
    }
    flush_merged_acks(s);
    free(was);
    if (joined >= 0)
        ORDO_WARN("KEYMAP %s: server %d joined; sent it the state of the %d slices it backs up "
                  "for this server", ordo__msg_text(m, 0, buf, sizeof buf), joined, sent);
    else
        ORDO_WARN("KEYMAP %s: this server is now the primary of %d more slices",
                  ordo__msg_text(m, 0, buf, sizeof buf), promoted);
    /* what workers sent before this map reached us */
    int n = r->n_parked;
    ordo__msg_t *parked = r->parked;
    r->parked = NULL;
    r->n_parked = r->cap_parked = 0;
    r->parked_bytes = 0;
    for (int i = 0; i < n; i++) {
        ordo__server_on_data(s, &parked[i]);
        ordo__msg_close(&parked[i]);
    }
    free(parked);
    return 0;
}

/* ---- the data handlers' hooks (server/replica.h) --------------------------------------- */

static bool pb_park(ordo__server_t *s, ordo__msg_t *m, int slice)
{
    if (!ordo__store_owns(s->store, slice) || s->node.keys->slices[slice].server == s->node.rank)
        return false;
    int rc = ordo__replica_park(s, m);
    if (rc) ordo__server_refuse(s, m, ordo__error_text(rc));
    return true;
}

static bool pb_resent(ordo__server_t *s, ordo__msg_t *m, int slice, int worker)
{
    /* backup workers: a push of an iteration already applied was either in the update or left
     * out as late, which the dead primary alone knew; either way the iteration is done
     * without it, so it is answered as a late push (the store's path), with how far the slice
     * got */
    const ordo__sync_model_t *model = ordo__store_model(s->store);
    if (model->late_resends && m->hdr.iter < ordo__store_version(s->store, slice)) return false;
    if (!ordo__store_pushed(s->store, slice, worker, m->hdr.iter)) return false;
    ordo__replica_count_duplicate(s->repl);
    ORDO_DEBUG("re-sent push of key %u chunk %u iteration %lld from worker %d: already in",
               m->hdr.key, m->hdr.chunk, (long long)m->hdr.iter, m->hdr.rank);
    ordo__grad_t g = {NULL, 0, m->hdr.dtype};
    g.data = ordo__msg_data(m, 0, &g.len);
    if (model->forwards_pushes && g.data) /* a backup may miss it */
        ordo__replica_forward(s, slice, m->hdr.rank, m->hdr.iter, &g, ordo__store_seq(s->store, slice));
    return true;
}

static bool pb_has(const ordo__server_t *s, int slice, int worker, int64_t iter)
{
    return ordo__store_pushed(s->store, slice, worker, iter);
}

static bool pb_forward(ordo__server_t *s, ordo__msg_t *m, int slice, int worker)
{
    if (!ordo__store_model(s->store)->forwards_pushes) return false;
    ordo__grad_t g = {NULL, 0, m->hdr.dtype};
    g.data = ordo__msg_data(m, 0, &g.len);
    if (g.data && ordo__store_check_push(s->store, slice, worker, m->hdr.iter, &g) == 0)
        ordo__replica_forward(s, slice, m->hdr.rank, m->hdr.iter, &g,
                             ordo__store_seq(s->store, slice) + 1);
    return true;
}

static void pb_ack_push(ordo__server_t *s, int slice, int64_t iter, ordo__msg_t *ack)
{
    /* the update count every live backup must hold first: the consistency model's */
    ordo__replica_ack(s, slice, ordo__store_model(s->store)->push_need(s->store, slice, iter), ack);
}

static void pb_ack_merged(ordo__server_t *s, int n, int64_t iter, ordo__msg_t *ack)
{
    int *ids = malloc(sizeof *ids * (size_t)n);
    for (int i = 0; ids && i < n; i++)
        ids[i] = ordo__merged_slice(s->merged, i);
    if (ids)
        ordo__replica_ack_merged(s, ids, n, iter, ack);
    else
        ORDO_ERROR("out of memory keeping a merged push's acknowledgement");
    ordo__msg_close(ack);
}

const ordo__replication_t ordo__replication_primary_backup = {
    .name = "primary-backup",
    .on_server_msg = ordo__replica_on_server_msg,
    .park = pb_park,
    .resent = pb_resent,
    .has = pb_has,
    .forward = pb_forward,
    .updated = ordo__replica_updated,
    .visible = ordo__replica_visible,
    .ack_push = pb_ack_push,
    .ack_merged = pb_ack_merged,
};
