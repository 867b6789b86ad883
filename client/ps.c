/* ps: asynchronous push/pull of chunked tensors against the servers: the data path, its
 * answers (values, acknowledgements), the events and the loop that dispatches a joined
 * worker's messages through its table (ps_msgs.c; ps_join.c joins and tears down). */
#include "client/ps.h"
#include "common/clock.h"
#include "common/codec.h"
#include "common/error.h"
#include "common/le.h"
#include "common/log.h"
#include "common/node_rejoin.h"
#include "common/node.h"
#include "client/calibrate.h"
#include "client/push.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/ps_internal.h"

int ordo__ps_rank(const ordo__ps_t *w)
{
    return w->node.rank;
}

int ordo__ps_n_workers(const ordo__ps_t *w)
{
    return w->node.n_workers;
}

int ordo__ps_n_servers(const ordo__ps_t *w)
{
    return w->node.n_servers;
}

const ordo__keys_t *ordo__ps_keys(const ordo__ps_t *w)
{
    return w->node.keys;
}

const ordo__plan_t *ordo__ps_plan(const ordo__ps_t *w)
{
    return w->plan;
}

const char *ordo__ps_run_dir(const ordo__ps_t *w)
{
    return w->node.run_dir;
}

int ordo__ps_members(const ordo__ps_t *w, int *index, int *n_live, int64_t *since)
{
    int n = atomic_load(&((ordo__ps_t *)w)->n_live);
    if (n <= 0) {
        *index = w->node.rank;
        *n_live = w->node.n_workers;
        *since = -1;
        return 0;
    }
    *index = atomic_load(&((ordo__ps_t *)w)->live_index);
    *n_live = n;
    *since = atomic_load(&((ordo__ps_t *)w)->live_since);
    return 1;
}

int64_t ordo__ps_rejoin_iter(const ordo__ps_t *w)
{
    return w->node.rejoin_iter;
}

void ordo__ps_sync_stats(const ordo__ps_t *w, int64_t *stale, int64_t *late)
{
    memcpy(stale, w->stale, sizeof w->stale);
    *late = w->late;
}

void ordo__ps_bytes(const ordo__ps_t *w, int64_t *pushed, int64_t *pulled)
{
    *pushed = w->bytes_push;
    *pulled = w->bytes_pull;
}

int ordo__ps_outstanding(const ordo__ps_t *w)
{
    return w->outstanding;
}

int ordo__ps_queued(const ordo__ps_t *w)
{
    return w->pq_n;
}

static void data_msg(ordo__ps_t *w, ordo__msg_t *m, int type, int slice, int64_t iter, int prio)
{
    const ordo__slice_t *sl = &w->node.keys->slices[slice];
    ordo__msg_init(m, type);
    m->sock = w->server_sock[sl->server];
    m->hdr.role = ORDO_ROLE_WORKER;
    m->hdr.rank = w->node.rank;
    m->hdr.req = ++w->req;
    m->hdr.iter = iter;
    m->hdr.key = sl->key;
    m->hdr.chunk = sl->chunk;
    m->hdr.priority = prio;
    /* a PULL asks for its answer in the key's pull type (client/compress.h) */
    m->hdr.dtype = type == ORDO_MSG_PULL
                       ? (uint8_t)ordo__compress_pull_dtype(w->compress, (int)sl->key)
                       : ORDO_DTYPE_F32;
    if (type == ORDO_MSG_PULL)
        m->hdr.flags |= ordo__compress_pull_flags(w->compress, (int)sl->key, slice, iter);
    if (sl->chunk + 1 == (uint32_t)w->node.keys->n_chunks[sl->key])
        m->hdr.flags |= ORDO_FLAG_LAST_CHUNK;
}

static int check_key(const ordo__ps_t *w, int key)
{
    if (key < 0 || key >= w->node.keys->n_keys)
        return ordo__error_set(ORDO_ERR_INVAL, "no key %d (the model has %d)", key,
                              w->node.keys->n_keys);
    return 0;
}

int ordo__ps_init(ordo__ps_t *w, int key, const float *values)
{
    int rc = check_key(w, key);
    if (rc) return rc;
    const ordo__keys_t *k = w->node.keys;
    for (int c = 0; c < k->n_chunks[key]; c++) {
        int s = k->first_slice[key] + c;
        ordo__msg_t m;
        data_msg(w, &m, ORDO_MSG_INIT, s, 0, 0);
        size_t bytes = (size_t)k->slices[s].numel * 4;
        rc = ordo__msg_add_copy(&m, values + k->slices[s].offset, bytes);
        if (!rc && k->replicas > 1 && !w->init_val[s]) { /* until the slice's first value */
            w->init_val[s] = malloc(bytes);
            if (w->init_val[s]) memcpy(w->init_val[s], values + k->slices[s].offset, bytes);
        }
        if (!rc) rc = ordo__transport_send(w->node.tp, &m);
        if (rc) return rc;
    }
    return 0;
}

/* start key's pull of iteration iter into dst: the bookkeeping both kinds of pull share */
static void begin_pull(ordo__ps_t *w, int key, float *dst, int64_t iter)
{
    const ordo__keys_t *k = w->node.keys;
    keystate_t *ks = &w->ks[key];
    ks->pull_dst = dst;
    ks->pull_iter = iter;
    ks->pull_left = k->n_chunks[key];
    w->outstanding++;
    for (int c = 0; c < k->n_chunks[key]; c++)
        w->got[k->first_slice[key] + c] = 0;
}

int ordo__ps_pull(ordo__ps_t *w, int key, float *dst, int64_t iter, int priority)
{
    int rc = check_key(w, key);
    if (rc) return rc;
    if (w->ks[key].pull_left)
        return ordo__error_set(ORDO_ERR_INVAL, "key %d already has a pull outstanding", key);
    const ordo__keys_t *k = w->node.keys;
    begin_pull(w, key, dst, iter);
    for (int c = 0; c < k->n_chunks[key]; c++) {
        ordo__msg_t m;
        data_msg(w, &m, ORDO_MSG_PULL, k->first_slice[key] + c, iter, priority);
        if ((rc = ordo__transport_send(w->node.tp, &m)) != 0) return rc;
    }
    return 0;
}

int ordo__ps_send_init(ordo__ps_t *w, int slice)
{
    ordo__msg_t m;
    data_msg(w, &m, ORDO_MSG_INIT, slice, 0, 0);
    int rc = ordo__msg_add_copy(&m, w->init_val[slice], (size_t)w->node.keys->slices[slice].numel * 4);
    return rc ? rc : ordo__transport_send(w->node.tp, &m);
}

int ordo__ps_send_pull(ordo__ps_t *w, int slice, int64_t iter)
{
    ordo__msg_t m;
    data_msg(w, &m, ORDO_MSG_PULL, slice, iter, 0);
    return ordo__transport_send(w->node.tp, &m);
}

int ordo__ps_probe(ordo__ps_t *w, int server, const float *src, size_t bytes, int id)
{
    if (server < 0 || server >= w->node.n_servers)
        return ordo__error_set(ORDO_ERR_INVAL, "no server %d (the cluster has %d)", server,
                              w->node.n_servers);
    if (bytes % sizeof(float) || bytes > ORDO_PROBE_MAX_BYTES)
        return ordo__error_set(ORDO_ERR_INVAL, "a probe of %zu bytes (a multiple of 4 up to %u)",
                              bytes, ORDO_PROBE_MAX_BYTES);
    ordo__msg_t m;
    ordo__msg_init(&m, ORDO_MSG_PUSH);
    m.sock = w->server_sock[server];
    m.hdr.role = ORDO_ROLE_WORKER;
    m.hdr.rank = w->node.rank;
    m.hdr.req = ++w->req;
    m.hdr.key = (uint32_t)id;
    m.hdr.dtype = ORDO_DTYPE_F32;
    m.hdr.flags = ORDO_FLAG_PROBE;
    ordo__msg_add_ref(&m, (void *)src, bytes, NULL, NULL);
    int rc = ordo__transport_send(w->node.tp, &m);
    if (rc == 0) { /* until its ORDO__EV_PROBE_DONE */
        w->outstanding++;
        w->probes_out++;
    }
    return rc;
}

/* send_held_pulls: after a promotion ([fault] replicas, ps_repl.c) a key's pulls wait until
 * its push, sent again, completed, so that their answers (which the new primary may have at
 * once) cannot come before it; key's push just completed: they go now */
static int send_held_pulls(ordo__ps_t *w, int key)
{
    const ordo__keys_t *k = w->node.keys;
    keystate_t *ks = &w->ks[key];
    for (int c = 0; c < k->n_chunks[key]; c++) {
        int s = k->first_slice[key] + c;
        if (!w->repull[s]) continue;
        w->repull[s] = 0;
        int rc = ks->pull_left && !w->got[s] ? ordo__ps_send_pull(w, s, ks->pull_iter) : 0;
        if (rc) return rc;
    }
    return 0;
}

/* hand queued pushes to the transport, smallest priority first (first queued first when the
 * plan has no priorities: policies none and fifo), while the credit allows
 * ([order] credit_bytes: less than that ahead of them on the link). A push handed over can no
 * longer be overtaken; waits in ordo__ps_poll are whole milliseconds, so the auto credit (1 ms
 * of link time) keeps the link from idling between pushes. */
static void pump(ordo__ps_t *w)
{
    while (w->pq_n > 0) {
        int64_t lf = w->conf.bandwidth_bps > 0 ? ordo__transport_link_free_ns(w->node.tp) : 0;
        if (!ordo__credit_allows(&w->credit, ordo__clock_ns(), lf)) return;
        int best = 0;
        for (int i = 1; i < w->pq_n; i++) {
            const queued_push_t *a = &w->pq[i], *b = &w->pq[best];
            bool same = w->push_fifo || a->priority == b->priority;
            if ((!same && a->priority < b->priority) || (same && a->seq < b->seq)) best = i;
        }
        queued_push_t q = w->pq[best];
        w->pq[best] = w->pq[--w->pq_n];
        if (q.slice < 0) {
            w->path->ops->send_part(w->path, q.group, q.part, q.iter, q.priority);
            continue;
        }
        const ordo__slice_t *sl = &w->node.keys->slices[q.slice];
        ordo__msg_t m;
        data_msg(w, &m, ORDO_MSG_PUSH, q.slice, q.iter, q.priority);
        if (q.fused) m.hdr.flags |= ORDO_FLAG_PULL;
        /* zero-copy: the caller keeps src until PUSH_DONE; a compressed push goes as a frame
         * of its own */
        void *enc = NULL, *hint = NULL;
        size_t bytes = (size_t)sl->numel * 4;
        int dtype = ORDO_DTYPE_F32;
        int rc = ordo__compress_encode(w->compress, (int)sl->key, q.slice, q.src + sl->offset,
                                       sl->numel, (uint64_t)q.iter, &enc, &bytes, &dtype,
                                       &hint);
        if (rc < 0) ORDO_ERROR("key %u: %s; pushed as float32", sl->key, ordo__error_text(rc));
        if (rc == 1) {
            m.hdr.dtype = (uint8_t)dtype;
            ordo__msg_add_ref(&m, enc, bytes, ordo__compress_frame_free, hint);
            /* the answer of a lossy push's pull: a change, in the push's own codec */
            if (q.fused && ordo__compress_pull_dtype(w->compress, (int)sl->key) == dtype &&
                ordo__codec_of_dtype(dtype)->lossy)
                m.hdr.flags |= ORDO_FLAG_PULL_CODED |
                               ordo__compress_pull_flags(w->compress, (int)sl->key, q.slice,
                                                         q.iter + 1);
        } else {
            bytes = (size_t)sl->numel * 4;
            ordo__msg_add_ref(&m, (void *)(q.src + sl->offset), bytes, NULL, NULL);
        }
        w->bytes_push += (int64_t)bytes;
        ordo__credit_sent(&w->credit, (int64_t)bytes, ordo__clock_ns(), !q.fused);
        w->sent[q.slice] = 1;
        w->last[q.slice] = q;
        ordo__transport_send(w->node.tp, &m);
    }
}

static int grow_queue(ordo__ps_t *w, int more)
{
    if (w->pq_n + more <= w->pq_cap) return 0;
    int cap = (w->pq_n + more) * 2;
    queued_push_t *p = realloc(w->pq, sizeof *p * (size_t)cap);
    if (!p) return ORDO_ERR_NOMEM;
    w->pq = p;
    w->pq_cap = cap;
    return 0;
}

float *ordo__ps_grad_home(const ordo__ps_t *w, int key)
{
    return w->path->ops->grad_home(w->path, key);
}

float *ordo__ps_value_home(const ordo__ps_t *w, int key)
{
    return w->path->ops->value_home ? w->path->ops->value_home(w->path, key) : NULL;
}

int ordo__ps_queue_key(ordo__ps_t *w, int key, const float *src, float *dst,
                           int64_t iter, int priority, bool fused)
{
    const ordo__keys_t *k = w->node.keys;
    if (fused) begin_pull(w, key, dst, iter + 1);
    int rc = grow_queue(w, k->n_chunks[key]);
    if (rc) return rc;
    keystate_t *ks = &w->ks[key];
    ks->push_left = k->n_chunks[key];
    ks->push_iter = iter;
    ks->fused = fused;
    w->outstanding++;
    for (int c = 0; c < k->n_chunks[key]; c++)
        w->pq[w->pq_n++] = (queued_push_t){.slice = k->first_slice[key] + c,
                                           .priority = priority,
                                           .seq = w->seq++,
                                           .iter = iter,
                                           .src = src,
                                           .fused = fused};
    pump(w);
    return 0;
}

void ordo__ps_push_begin(ordo__ps_t *w, int key, int64_t iter)
{
    keystate_t *ks = &w->ks[key];
    ks->push_left = 1;
    ks->push_iter = iter;
    w->outstanding++;
}

int ordo__ps_reserve(ordo__ps_t *w, int more)
{
    return grow_queue(w, more);
}

void ordo__ps_queue_part(ordo__ps_t *w, int group, int part, int64_t iter, int priority)
{
    ORDO_ASSERT(w->pq_n < w->pq_cap);
    w->pq[w->pq_n++] = (queued_push_t){
        .slice = -1, .group = group, .part = part, .priority = priority, .seq = w->seq++,
        .iter = iter};
}

void ordo__ps_pump(ordo__ps_t *w)
{
    pump(w);
}


void ordo__ps_pull_begin(ordo__ps_t *w, int key, int64_t iter)
{
    (void)key, (void)iter; /* the key's own pull state stays free for the path's real pulls */
    w->outstanding++;
}

void ordo__ps_pull_done(ordo__ps_t *w, int key, int64_t iter)
{
    ordo__ps_add_event(w, ORDO__EV_PULL_DONE, key, iter);
}

void ordo__ps_post(ordo__ps_t *w, int code, int key, int64_t iter)
{
    ordo__msg_t m;
    ordo__msg_init(&m, ORDO_MSG_INTRA);
    m.hdr.chunk = (uint32_t)code;
    m.hdr.key = (uint32_t)key;
    m.hdr.iter = iter;
    ordo__transport_post(w->node.tp, &m);
}

void ordo__ps_set_trace(ordo__ps_t *w, struct ordo__trace *t)
{
    w->trace = t;
}

struct ordo__trace *ordo__ps_trace(const ordo__ps_t *w)
{
    return w->trace;
}

const ordo__conf_t *ordo__ps_conf(const ordo__ps_t *w)
{
    return &w->conf;
}

struct ordo__compress *ordo__ps_compress(ordo__ps_t *w)
{
    return w->compress;
}

void ordo__ps_count_push(ordo__ps_t *w, int64_t bytes)
{
    w->bytes_push += bytes;
}

struct ordo__push *ordo__ps_push_path(const ordo__ps_t *w)
{
    return w->path;
}

int ordo__ps_push(ordo__ps_t *w, int key, const float *src, int64_t iter, int priority)
{
    int rc = check_key(w, key);
    if (rc) return rc;
    if (w->ks[key].push_left)
        return ordo__error_set(ORDO_ERR_INVAL, "key %d already has a push outstanding", key);
    return w->path->ops->push(w->path, key, src, iter, priority);
}

int ordo__ps_pushpull(ordo__ps_t *w, int key, const float *src, float *dst, int64_t iter,
                         int priority)
{
    int rc = check_key(w, key);
    if (rc) return rc;
    keystate_t *ks = &w->ks[key];
    if (ks->push_left)
        return ordo__error_set(ORDO_ERR_INVAL, "key %d already has a push outstanding", key);
    if (ks->pull_left)
        return ordo__error_set(ORDO_ERR_INVAL, "key %d already has a pull outstanding", key);
    return w->path->ops->pushpull(w->path, key, src, dst, iter, priority);
}

void ordo__ps_wake(ordo__ps_t *w)
{
    ordo__msg_t m;
    ordo__msg_init(&m, ORDO_MSG_WAKE);
    ordo__transport_post(w->node.tp, &m);
}

void ordo__ps_add_event(ordo__ps_t *w, int kind, int key, int64_t iter)
{
    if (w->ev_n == w->ev_cap) {
        int cap = w->ev_cap ? w->ev_cap * 2 : 64;
        ordo__ps_event_t *p = malloc(sizeof *p * (size_t)cap);
        if (!p) return;
        for (int i = 0; i < w->ev_n; i++)
            p[i] = w->ev[(w->ev_head + i) % w->ev_cap];
        free(w->ev);
        w->ev = p;
        w->ev_cap = cap;
        w->ev_head = 0;
    }
    w->ev[(w->ev_head + w->ev_n++) % w->ev_cap] =
        (ordo__ps_event_t){.kind = kind, .key = key, .iter = iter, .t_ns = ordo__clock_ns()};
    if (kind != ORDO__EV_WAKE && kind != ORDO__EV_HOOK && kind != ORDO__EV_PLAN &&
        kind != ORDO__EV_GRAD_FREE)
        w->outstanding--;
}

void ordo__ps_push_done(ordo__ps_t *w, int key, int64_t iter)
{
    w->ks[key].push_left = 0;
    ordo__ps_add_event(w, ORDO__EV_PUSH_DONE, key, iter);
    int rc = send_held_pulls(w, key);
    if (rc) ORDO_ERROR("key %d: sending its pull again: %s", key, ordo__error_text(rc));
}

void ordo__ps_grad_free(ordo__ps_t *w, int key, int64_t iter)
{
    ordo__ps_add_event(w, ORDO__EV_GRAD_FREE, key, iter);
}

/* ---- the data path's answers ------------------------------------------------------- */

/* a value of key arrived (all of it, or one chunk): float32, or the wire type the pull asked
 * for (common/codec.h) */
int ordo__ps_on_pull_resp(ordo__ps_t *w, ordo__msg_t *m)
{
    const ordo__keys_t *k = w->node.keys;
    int s = ordo__keys_slice(k, m->hdr.key, m->hdr.chunk);
    keystate_t *ks = s >= 0 ? &w->ks[m->hdr.key] : NULL;
    size_t len = 0;
    void *d = ordo__msg_data(m, 0, &len);
    if (!ks || !ks->pull_left || ks->pull_iter != m->hdr.iter || w->got[s] || !d) {
        ORDO_WARN("dropped an unexpected PULL_RESP (key %u chunk %u iter %lld)", m->hdr.key,
                  m->hdr.chunk, (long long)m->hdr.iter);
        return 0;
    }
    int rc = ordo__compress_take_pull(w->compress, (int)m->hdr.key, s, m->hdr.iter,
                                      m->hdr.dtype, m->hdr.flags, d, len,
                                      k->slices[s].numel, ks->pull_dst + k->slices[s].offset);
    if (rc) {
        ORDO_WARN("dropped a PULL_RESP (key %u chunk %u iter %lld): %s", m->hdr.key,
                  m->hdr.chunk, (long long)m->hdr.iter, ordo__error_text(rc));
        return 0;
    }
    w->got[s] = 1;
    free(w->init_val[s]); /* a replica holds the initial value (or a later one) */
    w->init_val[s] = NULL;
    int st = ORDO_FLAG_STALENESS(m->hdr.flags);
    w->stale[st < 0 ? 0 : st >= ORDO_STALE_BUCKETS ? ORDO_STALE_BUCKETS - 1 : st]++;
    if (m->hdr.iter - st > (int64_t)atomic_load(&w->newest_version))
        atomic_store(&w->newest_version, (long long)(m->hdr.iter - st));
    if (m->hdr.flags & ORDO_FLAG_DROPPED) w->late++;
    w->bytes_pull += (int64_t)len;
    /* a fused push's answer is its acknowledgement too (the push was applied first) */
    if (ks->fused && ks->push_left && ks->push_iter + 1 == m->hdr.iter) w->sent[s] = 0;
    if (ks->fused && ks->push_left && ks->push_iter + 1 == m->hdr.iter &&
        --ks->push_left == 0) {
        ks->fused = false;
        ordo__ps_add_event(w, ORDO__EV_PUSH_DONE, (int)m->hdr.key, ks->push_iter);
    }
    if (--ks->pull_left == 0) {
        if (w->path->ops->pulled && w->path->ops->pulled(w->path, (int)m->hdr.key, m->hdr.iter))
            w->outstanding--; /* the path's own pull: no event */
        else
            ordo__ps_add_event(w, ORDO__EV_PULL_DONE, (int)m->hdr.key, m->hdr.iter);
    }
    return 0;
}

/* a server applied a push: of a merge group (the path's), of a probe, or of one slice */
int ordo__ps_on_push_ack(ordo__ps_t *w, ordo__msg_t *m)
{
    const ordo__keys_t *k = w->node.keys;
    if (m->hdr.flags & ORDO_FLAG_GROUP) return w->path->ops->group_ack(w->path, m);
    if (m->hdr.flags & ORDO_FLAG_PROBE) {
        if (w->probes_out == 0) {
            ORDO_WARN("dropped an unexpected probe PUSH_ACK (probe %u)", m->hdr.key);
            return 0;
        }
        w->probes_out--;
        ordo__ps_add_event(w, ORDO__EV_PROBE_DONE, (int)m->hdr.key, m->hdr.iter);
        return 0;
    }
    int s = ordo__keys_slice(k, m->hdr.key, m->hdr.chunk);
    keystate_t *ks = s >= 0 ? &w->ks[m->hdr.key] : NULL;
    if (!ks || !ks->push_left || ks->push_iter != m->hdr.iter ||
        (k->replicas > 1 && !w->sent[s])) { /* with replicas: a re-sent push answered twice */
        ORDO_WARN("dropped an unexpected PUSH_ACK (key %u)", m->hdr.key);
        return 0;
    }
    w->sent[s] = 0;
    ordo__credit_acked(&w->credit, k->slices[s].numel * 4);

    if (m->hdr.flags & ORDO_FLAG_DROPPED) {
        /* the server says how far it got (its version, as a negative staleness) */
        int64_t v = m->hdr.iter - ORDO_FLAG_STALENESS(m->hdr.flags);
        w->late++;
        if (v > (int64_t)atomic_load(&w->newest_version))
            atomic_store(&w->newest_version, (long long)v);
    }
    if (--ks->push_left == 0) {
        ordo__ps_add_event(w, ORDO__EV_PUSH_DONE, (int)m->hdr.key, m->hdr.iter);
        return send_held_pulls(w, (int)m->hdr.key);
    }
    return 0;
}

/* [fault] replicas: an answer about a slice from a server that no longer holds it (one
 * declared dead that came back: a paused process, a healed partition) is a late one; its
 * acknowledgement or value is never counted (docs/durability.md, "Fencing") */
static bool from_fenced_server(ordo__ps_t *w, const ordo__msg_t *m)
{
    const ordo__keys_t *k = w->node.keys;
    if (k->replicas <= 1 || m->hdr.role != ORDO_ROLE_SERVER ||
        (m->hdr.type != ORDO_MSG_PUSH_ACK && m->hdr.type != ORDO_MSG_PULL_RESP) ||
        (m->hdr.flags & (ORDO_FLAG_GROUP | ORDO_FLAG_PROBE)))
        return false;
    int s = ordo__keys_slice(k, m->hdr.key, m->hdr.chunk);
    if (s < 0 || k->slices[s].server == m->hdr.rank) return false;
    if (w->fenced_answers++ == 0)
        ORDO_WARN("dropped a %s of key %u chunk %u from server %d, which no longer holds it "
                  "(declared dead; later ones are dropped silently)",
                  ordo__wire_type_name(m->hdr.type), m->hdr.key, m->hdr.chunk, m->hdr.rank);
    return true;
}

/* ordo__ps_handle: one inbound message, by the worker's table (w->msgs, ps_msgs.c); 0 or a
 * fatal error. A late answer of a fenced server is dropped first; a message for the hook's
 * key (ordo__ps_set_hook) goes to the hook whatever its handler. */
int ordo__ps_handle(ordo__ps_t *w, ordo__msg_t *m)
{
    if (from_fenced_server(w, m)) return 0;
    if (w->hook && m->hdr.key == w->hook_key &&
        (m->hdr.type == ORDO_MSG_PULL_RESP || m->hdr.type == ORDO_MSG_ERROR ||
         m->hdr.type == ORDO_MSG_PLAN)) {
        int rc = w->hook(w->hook_ctx, m);
        if (rc > 0) ordo__ps_add_event(w, ORDO__EV_HOOK, rc, m->hdr.iter);
        return rc < 0 ? rc : 0;
    }
    ordo__ps_msg_fn fn = m->hdr.type < ORDO_MSG_TYPE_MAX ? w->msgs[m->hdr.type] : NULL;
    if (!fn) {
        ORDO_DEBUG("ignored %s", ordo__wire_type_name(m->hdr.type));
        return 0;
    }
    return fn(w, m);
}

int ordo__ps_poll(ordo__ps_t *w, int timeout_ms, ordo__ps_event_t *ev)
{
    int64_t deadline = timeout_ms < 0 ? INT64_MAX : ordo__clock_ns() + (int64_t)timeout_ms * 1000000;
    for (;;) {
        int lost = ordo__node_sched_check(&w->node); /* fault.scheduler = restart: bounded */
        if (lost) return lost;
        pump(w);
        if (w->ev_n > 0) {
            *ev = w->ev[w->ev_head];
            w->ev_head = (w->ev_head + 1) % w->ev_cap;
            w->ev_n--;
            return 0;
        }
        int64_t now = ordo__clock_ns();
        /* past the deadline, one more look without blocking: poll(w, 0) still reads what has
         * arrived */
        bool last = now >= deadline;
        int64_t until = deadline;
        if (w->pq_n > 0 && w->conf.bandwidth_bps > 0) { /* wake when the credit allows */
            int64_t lf = ordo__credit_wake_ns(&w->credit, ordo__transport_link_free_ns(w->node.tp));
            if (lf < until) until = lf;
        }
        int wait_ms = until == INT64_MAX ? -1 : (int)((until - now + 999999) / 1000000);
        if (last || (wait_ms < 0 && until != INT64_MAX)) wait_ms = 0;
        wait_ms = ordo__node_sched_timeout(&w->node, wait_ms);
        ordo__msg_t m;
        int rc = ordo__transport_recv(w->node.tp, &m, wait_ms);
        if (rc == ORDO_ERR_TIMEDOUT) {
            if (last) {
                pump(w);
                if (w->ev_n == 0) return ORDO_ERR_TIMEDOUT;
            }
            continue;
        }
        if (rc) return rc;
        rc = ordo__ps_handle(w, &m);
        ordo__msg_close(&m);
        if (rc) return rc;
    }
}

int ordo__ps_wait_all(ordo__ps_t *w, int timeout_ms)
{
    int64_t deadline = timeout_ms < 0 ? INT64_MAX : ordo__clock_ns() + (int64_t)timeout_ms * 1000000;
    ordo__ps_event_t ev;
    while (w->outstanding > 0 || w->ev_n > 0) {
        int64_t left = deadline == INT64_MAX ? -1 : (deadline - ordo__clock_ns()) / 1000000;
        if (deadline != INT64_MAX && left <= 0) return ORDO_ERR_TIMEDOUT;
        int rc = ordo__ps_poll(w, (int)left, &ev);
        if (rc) return rc;
    }
    return 0;
}
