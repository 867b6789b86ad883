/* server_data: the server's data-port handlers. Pushes (dense, merged, calibration probes)
 * are checked and summed into the store, INITs set first values, and pulls are answered at
 * once or parked until the store's consistency model ([sync]) lets them be: under bsp until
 * the pushes of the iteration before are in. Each answer carries its staleness. A malformed or
 * out-of-place message is answered with ERROR, counted and dropped; it never stops the
 * server. */
#include "common/codec.h"
#include "common/error.h"
#include "common/log.h"
#include "common/transport.h"
#include "server/pull_codec.h"
#include "server/replica.h"
#include "server/server_internal.h"

#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* answer_init makes a message of the given type addressed back to m's sender, carrying
 * m's request id, key, chunk and iteration */
static void answer_init(ordo_server_t *s, const ordo_msg_t *m, int type, ordo_msg_t *a)
{
    ordo_msg_init(a, type);
    a->sock = s->data_sock;
    memcpy(a->rid, m->rid, m->rid_len);
    a->rid_len = m->rid_len;
    a->hdr.role = ORDO_ROLE_SERVER;
    a->hdr.rank = s->node.rank;
    a->hdr.req = m->hdr.req;
    a->hdr.key = m->hdr.key;
    a->hdr.chunk = m->hdr.chunk;
    a->hdr.iter = m->hdr.iter;
}

/* send_ack acknowledges push m to its sender (the worker frees its buffer on it) */
static void send_ack(ordo_server_t *s, const ordo_msg_t *m, uint32_t flags)
{
    ordo_msg_t ack;
    answer_init(s, m, ORDO_MSG_PUSH_ACK, &ack);
    ack.hdr.flags = flags;
    ordo_transport_send(s->node.tp, &ack);
}

static bool fused_push(const ordo_msg_t *m)
{
    return m->hdr.flags & ORDO_FLAG_PULL;
}

/* need_of_push: with replicas, the update count (ordo_store_seq) every live backup must hold
 * before push m of slice is acknowledged: bsp the version its iteration completes, asp and ssp
 * the count right after it was taken (asp: applied, an update of its own; ssp: forwarded) */
static int64_t need_of_push(const ordo_server_t *s, const ordo_msg_t *m, int slice)
{
    if (ordo_store_sync_mode(s->store) != ORDO_SYNC_BSP) return ordo_store_seq(s->store, slice);
    return m->hdr.iter + 1;
}

/* ack_push acknowledges push m of slice: at once, or with replicas once the update it went
 * into is held by every live backup (the worker keeps its gradient until then) */
static void ack_push(ordo_server_t *s, const ordo_msg_t *m, int slice, uint32_t flags)
{
    if (!s->repl) {
        send_ack(s, m, flags);
        return;
    }
    ordo_msg_t ack;
    answer_init(s, m, ORDO_MSG_PUSH_ACK, &ack);
    ack.hdr.flags = flags;
    ordo_replica_ack(s, slice, need_of_push(s, m, slice), &ack);
}

static void answer_error(ordo_server_t *s, const ordo_msg_t *m, const char *why)
{
    s->n_dropped++;
    char what[160];
    snprintf(what, sizeof what, "key %u chunk %u iter %lld, from %s %d: %s", m->hdr.key,
             m->hdr.chunk, (long long)m->hdr.iter, ordo_wire_role_name(m->hdr.role), m->hdr.rank,
             why);
    ordo_transport_drop(s->node.tp, m, m->hdr.role == ORDO_ROLE_WORKER &&
                                               m->hdr.rank >= 0 && m->hdr.rank < s->node.n_workers
                                           ? "refused request"
                                           : "not a worker of this cluster",
                        what);
    ordo_msg_t e;
    answer_init(s, m, ORDO_MSG_ERROR, &e);
    ordo_msg_add_text(&e, why);
    ordo_transport_send(s->node.tp, &e);
}

/* a pull that can be answered now becomes a response held by the enforcement module */
static void make_ready(ordo_server_t *s, int slice, const ordo__waiter_t *w)
{
    const ordo_slice_t *sl = &s->node.keys->slices[slice];
    ordo_msg_t r;
    ordo_msg_init(&r, ORDO_MSG_PULL_RESP);
    r.sock = s->data_sock;
    memcpy(r.rid, w->rid, w->rid_len);
    r.rid_len = w->rid_len;
    r.hdr.role = ORDO_ROLE_SERVER;
    r.hdr.rank = s->node.rank;
    r.hdr.req = w->req;
    r.hdr.iter = w->iter;
    r.hdr.key = sl->key;
    r.hdr.chunk = sl->chunk;
    r.hdr.priority = s->prio ? s->prio[slice] : 0;
    r.hdr.dtype = ORDO_DTYPE_F32;
    /* the value's staleness (wire.h), taken with the value itself */
    r.hdr.flags =
        ORDO_FLAG_STALE(w->iter - ordo_store_pull_version(s->store, slice, w->iter)) | w->flags;
    void *data, *hint;
    size_t bytes;
    if (ordo_store_ref_pull(s->store, slice, w->iter, &data, &bytes, &hint) != 0) {
        ORDO_ERROR("out of memory answering a pull");
        ordo_msg_close(&r);
        return;
    }
    /* a 16-bit answer carries the value's encoded copy (server/pull_codec.h): the workers'
     * copies are then within one rounding of the value held here */
    const ordo__codec_ops_t *wire = ordo__codec_of_dtype(w->dtype);
    bool lossy = wire && wire->lossy;
    if (w->dtype != ORDO_DTYPE_F32 &&
        (lossy ? ordo__pull_codec_attach_delta(s->pull_codec, slice, w->iter, data, bytes,
                                               w->dtype, w->have_prev, &r)
               : ordo__pull_codec_attach(s->pull_codec, slice, ordo_store_seq(s->store, slice),
                                         data, bytes, w->dtype, &r)) == 0) {
        ordo_store_unref_cb(data, hint);
    } else if (ordo_msg_add_ref(&r, data, bytes, ordo_store_unref_cb, hint) != 0) {
        ordo_store_unref_cb(data, hint);
        ORDO_ERROR("out of memory answering a pull");
        return;
    }
    /* one queue per host group: its members pull disjoint keys, together each slice once, so
     * the strict counter (and the fair share) is the group's, as the group's link is one */
    int rc = ordo_enforce_add(s->enforce, ordo__server_pusher(s, w->worker), w->iter, slice, &r);
    if (rc) {
        ORDO_ERROR("enforce: %s", ordo_error_text(rc));
        ordo_msg_close(&r);
    }
}

/* waiter w's pull can be answered: the store has the value, and with replicas every live
 * backup holds what it needs (w->need) too */
static bool ready(ordo_server_t *s, int slice, const ordo__waiter_t *w)
{
    return ordo_store_ready(s->store, slice, w->iter) && ordo_replica_visible(s, slice, w->need);
}

void ordo__server_wake(ordo_server_t *s, int slice)
{
    ordo__waitlist_t *wl = &s->waiting[slice];
    int keep = 0;
    for (int i = 0; i < wl->n; i++) {
        if (ready(s, slice, &wl->w[i]))
            make_ready(s, slice, &wl->w[i]);
        else
            wl->w[keep++] = wl->w[i];
    }
    wl->n = keep;
}

static int slice_of(ordo_server_t *s, const ordo_msg_t *m, char *why, size_t size)
{
    int slice = ordo_keys_slice(s->node.keys, m->hdr.key, m->hdr.chunk);
    if (slice < 0) {
        snprintf(why, size, "no key %u chunk %u", m->hdr.key, m->hdr.chunk);
        return -1;
    }
    if (!ordo_store_owns(s->store, slice) || s->node.keys->slices[slice].server != s->node.rank) {
        snprintf(why, size, "key %u chunk %u lives on server %d", m->hdr.key, m->hdr.chunk,
                 s->node.keys->slices[slice].server);
        return -1;
    }
    return slice;
}

/* with replicas, a merged push whose first slice this server holds as a backup comes from a
 * worker whose KEYMAP arrived before ours: it is kept until ours does (true when it was) */
static bool park_group_push(ordo_server_t *s, ordo_msg_t *m, const void *index, size_t ilen)
{
    uint32_t id;
    if (!s->repl || ilen < sizeof id) return false;
    memcpy(&id, index, sizeof id);
    if (id >= (uint32_t)s->node.keys->n_slices || !ordo_store_owns(s->store, (int)id) ||
        s->node.keys->slices[id].server == s->node.rank)
        return false;
    int rc = ordo_replica_park(s, m);
    if (rc) answer_error(s, m, ordo_error_text(rc));
    return true;
}

/* a merged push ([push] mode = merged, server/groups.h): several slices in one message,
 * checked as a whole, then added to the store from the received frame (no copy); one ack.
 * With replicas, slices a re-sent push (its primary died) already has are left out, each
 * update goes to the backups, and the ack waits until every live backup holds every slice's
 * update (server/replica.h) */
static void on_group_push(ordo_server_t *s, ordo_msg_t *m)
{
    size_t len = 0, ilen = 0;
    int n, rc, worker = ordo__server_pusher(s, m->hdr.rank);
    const void *index = ordo_msg_data(m, 1, &ilen);
    if (!ordo_msg_data(m, 0, &len) || m->nframes != 2 || m->hdr.dtype != ORDO_DTYPE_F32) {
        answer_error(s, m, "a merged PUSH needs a float32 payload frame and an index frame");
        return;
    }
    if (park_group_push(s, m, index, ilen)) return;
    if ((rc = ordo_groups_split(s->groups, index, ilen, len, &n)) != 0) {
        answer_error(s, m, ordo_error_text(rc));
        return;
    }
    const ordo_slice_t *slices = s->node.keys->slices;
    int dup = 0;
    for (int i = 0; i < n; i++) {
        int sl = ordo_groups_slice(s->groups, i);
        if (s->repl && ordo_store_pushed(s->store, sl, worker, m->hdr.iter)) {
            dup++;
            continue;
        }
        rc = ordo_store_check_push(s->store, sl, worker, m->hdr.iter,
                                   (size_t)slices[sl].numel * sizeof(float));
        if (rc < 0) {
            answer_error(s, m, ordo_error_text(rc));
            return;
        }
    }
    if (dup) ordo_replica_count_duplicate(s->repl);
    ordo_store_frame_t *f = ordo_store_frame_wrap(&m->frames[0]);
    if (!f) {
        ORDO_ERROR("out of memory taking a merged push");
        return;
    }
    const char *base = ordo_store_frame_data(f, &len);
    for (int i = 0; i < n; i++) {
        int sl = ordo_groups_slice(s->groups, i);
        bool updated;
        if (dup && ordo_store_pushed(s->store, sl, worker, m->hdr.iter)) continue;
        rc = ordo_store_push_ref(s->store, sl, worker, m->hdr.iter,
                                 (const float *)(base + ordo_groups_offset(s->groups, i)),
                                 (size_t)slices[sl].numel * sizeof(float), f, &updated);
        if (rc < 0) ORDO_ERROR("merged push, slice %d: %s", sl, ordo_error_text(rc));
        if (rc == 0 && updated) {
            ordo_srv_ckpt_updated(s->ckpt, sl);
            ordo_replica_updated(s, sl);
        }
    }
    ordo_store_frame_unref(f);
    s->n_push++;
    if (s->repl) {
        ordo_msg_t ack;
        answer_init(s, m, ORDO_MSG_PUSH_ACK, &ack);
        ack.hdr.flags = ORDO_FLAG_GROUP;
        int *ids = malloc(sizeof *ids * (size_t)n);
        for (int i = 0; ids && i < n; i++)
            ids[i] = ordo_groups_slice(s->groups, i);
        if (ids)
            ordo_replica_ack_group(s, ids, n, m->hdr.iter, &ack);
        else
            ORDO_ERROR("out of memory keeping a merged push's acknowledgement");
        ordo_msg_close(&ack);
    } else {
        send_ack(s, m, ORDO_FLAG_GROUP);
    }
    for (int i = 0; i < n; i++) { /* the slices this push completed answer their pulls */
        int sl = ordo_groups_slice(s->groups, i);
        if (ordo_store_version(s->store, sl) == m->hdr.iter + 1) ordo__server_wake(s, sl);
    }
}

/* the number of floats a compressed push's payload stands for: its slice's (dense), or the
 * sum of its index's slices' (merged, checked again by ordo_groups_split); -1 when the
 * message names no slice of the key map */
static int64_t push_numel(ordo_server_t *s, ordo_msg_t *m)
{
    const ordo_keys_t *k = s->node.keys;
    if (!(m->hdr.flags & ORDO_FLAG_GROUP)) {
        int slice = ordo_keys_slice(k, m->hdr.key, m->hdr.chunk);
        return slice < 0 ? -1 : k->slices[slice].numel;
    }
    size_t ilen = 0;
    const uint8_t *index = ordo_msg_data(m, 1, &ilen);
    if (!index || ilen == 0 || ilen % sizeof(uint32_t)) return -1;
    int64_t n = 0;
    for (size_t i = 0; i < ilen; i += sizeof(uint32_t)) {
        uint32_t id;
        memcpy(&id, index + i, sizeof id);
        if (id >= (uint32_t)k->n_slices) return -1;
        n += k->slices[id].numel;
    }
    return n;
}

/* note_k tells the pull codec the fraction of its values an index-value push m kept, for
 * each slice it carries */
static void note_k(ordo_server_t *s, ordo_msg_t *m, double fraction)
{
    const ordo_keys_t *k = s->node.keys;
    if (!(m->hdr.flags & ORDO_FLAG_GROUP)) {
        ordo__pull_codec_note_k(s->pull_codec, ordo_keys_slice(k, m->hdr.key, m->hdr.chunk),
                                fraction);
        return;
    }
    size_t ilen = 0;
    const uint8_t *index = ordo_msg_data(m, 1, &ilen);
    for (size_t i = 0; index && i + sizeof(uint32_t) <= ilen; i += sizeof(uint32_t)) {
        uint32_t id;
        memcpy(&id, index + i, sizeof id);
        ordo__pull_codec_note_k(s->pull_codec, (int)id, fraction);
    }
}

/* decode_push turns a push whose values come in a compressed wire type (common/codec.h) into
 * the float32 push the store sums: frame 0 is replaced by its decoded floats. false (answered
 * with ERROR) when the frame is malformed: a length that disagrees with its dtype, indices
 * out of range. */
static bool decode_push(ordo_server_t *s, ordo_msg_t *m)
{
    size_t len = 0;
    const void *frame = ordo_msg_data(m, 0, &len);
    int64_t n = push_numel(s, m);
    if (!frame || n < 0) {
        answer_error(s, m, "a compressed PUSH names no slice held here");
        return false;
    }
    zmq_msg_t out;
    if (zmq_msg_init_size(&out, (size_t)n * sizeof(float)) != 0) {
        answer_error(s, m, "out of memory decoding a compressed push");
        return false;
    }
    int rc = ordo__codec_decode(m->hdr.dtype, frame, len, n, zmq_msg_data(&out));
    if (rc) {
        zmq_msg_close(&out);
        answer_error(s, m, ordo_error_text(rc));
        return false;
    }
    if (m->hdr.dtype == ORDO_DTYPE_KV) /* the pulls of the slices keep as many (pull_codec.h) */
        note_k(s, m, (double)(len / 8) / (double)n);
    zmq_msg_move(&m->frames[0], &out); /* releases the compressed frame */
    zmq_msg_close(&out);
    m->hdr.lens[0] = (uint64_t)n * sizeof(float);
    m->hdr.dtype = ORDO_DTYPE_F32;
    return true;
}

/* the wire type a pull's answer goes in: the PULL's dtype, or for a push that carries a pull
 * the push's own (a 16-bit cast; a lossy one when the push asks for it: ORDO_FLAG_PULL_CODED) */
static uint8_t pull_dtype(const ordo_msg_t *m)
{
    int d = m->hdr.dtype;
    const ordo__codec_ops_t *ops = ordo__codec_of_dtype(d);
    if (!ops || d == ORDO_DTYPE_F32) return ORDO_DTYPE_F32;
    if (m->hdr.type == ORDO_MSG_PULL || !ops->lossy || (m->hdr.flags & ORDO_FLAG_PULL_CODED))
        return (uint8_t)d;
    return ORDO_DTYPE_F32;
}

/* a calibration push ([push] calibrate = true, ORDO_FLAG_PROBE): its floats are added to
 * scratch memory, as a push's are to its key's sum, and it is acknowledged; no value changes */
static void on_probe(ordo_server_t *s, ordo_msg_t *m)
{
    char why[160];
    size_t len = 0;
    const char *data = ordo_msg_data(m, 0, &len);
    if (!data || m->nframes != 1 || m->hdr.dtype != ORDO_DTYPE_F32 || len % sizeof(float) ||
        (m->hdr.flags & (ORDO_FLAG_GROUP | ORDO_FLAG_PULL))) {
        answer_error(s, m, "a probe PUSH needs one float32 payload frame and no group or pull "
                           "flag");
        return;
    }
    if (len > ORDO_PROBE_MAX_BYTES) {
        snprintf(why, sizeof why, "a probe of %zu bytes is larger than the %u a server takes", len,
                 ORDO_PROBE_MAX_BYTES);
        answer_error(s, m, why);
        return;
    }
    size_t n = len / sizeof(float);
    if (n > s->probe_cap) {
        float *p = realloc(s->probe_sum, n * sizeof *p);
        if (!p) {
            answer_error(s, m, "out of memory for a probe");
            return;
        }
        memset(p + s->probe_cap, 0, (n - s->probe_cap) * sizeof *p);
        s->probe_sum = p;
        s->probe_cap = n;
    }
    for (size_t i = 0; i < n; i++) { /* the frame may sit unaligned in ZeroMQ's buffer */
        float g;
        memcpy(&g, data + i * sizeof g, sizeof g);
        s->probe_sum[i] += g;
    }
    s->n_probe++;
    send_ack(s, m, ORDO_FLAG_PROBE);
}

/* a pull of slice's value of iteration iter for m's sender: answered now if the value is
 * there, else when the pushes it needs are in (bsp: those of iter - 1); flags go on the
 * answer (ORDO_FLAG_DROPPED for a fused push left out) */
static void add_pull(ordo_server_t *s, const ordo_msg_t *m, int slice, int64_t iter,
                     uint32_t flags, uint8_t dtype)
{
    char why[128];
    int64_t v = ordo_store_version(s->store, slice);
    /* bsp and ssp values never get ahead of a worker's pulls; backup workers and asp let
     * the slow ones see newer values */
    bool newer_ok = s->conf.backup > 0 || ordo_store_sync_mode(s->store) == ORDO_SYNC_ASP;
    /* a restarted worker goes on at the first iteration its predecessor did not report,
     * which the others may have completed with the pushes it did send */
    if (s->conf.fault_worker == ORDO_FAULT_RESTART) newer_ok = true;
    if (iter < 0 || (v >= 0 && iter < v && !newer_ok)) {
        snprintf(why, sizeof why, "pull of iteration %lld, the value is at %lld", (long long)iter,
                 (long long)v);
        answer_error(s, m, why);
        return;
    }
    s->n_pull++;
    ordo__waiter_t w = {.worker = m->hdr.rank, .iter = iter, .need = iter, .req = m->hdr.req,
                        .rid_len = m->rid_len, .flags = flags, .dtype = dtype,
                        .have_prev = (m->hdr.flags & ORDO_FLAG_HAVE_PREV) != 0};
    /* asp and ssp with replicas: a plain pull takes the value the consistency model allows
     * at once (its pushes not yet on the backups were not acknowledged: their senders send
     * them again if this server dies), one riding on a push also acknowledges it, so it waits
     * for the backups to hold that push */
    if (ordo_store_sync_mode(s->store) != ORDO_SYNC_BSP)
        w.need = m->hdr.type == ORDO_MSG_PUSH ? ordo_store_seq(s->store, slice) : -1;
    memcpy(w.rid, m->rid, m->rid_len);
    if (ready(s, slice, &w)) {
        make_ready(s, slice, &w);
        return;
    }
    ordo__waitlist_t *wl = &s->waiting[slice];
    if (wl->n >= 4 * s->node.n_workers * (s->conf.staleness + 1)) {
        answer_error(s, m, "too many pulls waiting for this slice");
        return;
    }
    if (wl->n == wl->cap) {
        int cap = wl->cap ? wl->cap * 2 : 4;
        ordo__waiter_t *p = realloc(wl->w, sizeof *p * (size_t)cap);
        if (!p) {
            answer_error(s, m, "out of memory");
            return;
        }
        wl->w = p;
        wl->cap = cap;
    }
    wl->w[wl->n++] = w;
}

int ordo__server_on_members(ordo_server_t *s, ordo_msg_t *m)
{
    char body[4096];
    json_error_t jerr;
    json_t *o = json_loads(ordo_msg_text(m, 0, body, sizeof body), 0, &jerr);
    json_t *left = json_object_get(o, "left"), *joined = json_object_get(o, "joined");
    if (ordo__server_on_fenced(s, o)) { /* a worker declared dead: fence its process */
        json_decref(o);
        return 0;
    }
    if (json_is_integer(joined)) { /* ordo-launch --add-worker: from iteration "iter" on */
        int64_t at = json_integer_value(json_object_get(o, "iter"));
        int rc = ordo_store_join(s->store, (int)json_integer_value(joined), at);
        if (rc) {
            /* the run cannot go on consistently: a slice here would never wait for it */
            ORDO_ERROR("worker %lld cannot join: %s", (long long)json_integer_value(joined),
                       ordo_error_text(rc));
        } else {
            ORDO_INFO("worker %lld joins the run at iteration %lld (fault.max_workers)",
                      (long long)json_integer_value(joined), (long long)at);
        }
        json_decref(o);
        return rc;
    }
    int *upd = malloc(sizeof *upd * ((size_t)s->node.keys->n_slices + 1)), n = 0, rc;
    if (!json_is_integer(left) || json_integer_value(left) < 0 ||
        json_integer_value(left) >= s->node.n_workers) {
        ORDO_WARN("dropped a malformed MEMBERS message from the scheduler");
    } else if (!upd) {
        ORDO_ERROR("out of memory taking a worker out of the run");
    } else if ((rc = ordo_store_leave(s->store, (int)json_integer_value(left),
                                      s->conf.aggregate == ORDO_AGG_MEAN, upd, &n)) != 0) {
        ORDO_ERROR("worker %lld leaves: %s", (long long)json_integer_value(left),
                   ordo_error_text(rc));
    } else {
        ORDO_WARN("worker %lld left the run (fault.worker = shrink); %d slices completed without "
                  "it", (long long)json_integer_value(left), n);
        for (int i = 0; i < n; i++) {
            ordo_srv_ckpt_updated(s->ckpt, upd[i]);
            ordo_replica_updated(s, upd[i]);
            ordo__server_wake(s, upd[i]);
        }
    }
    free(upd);
    json_decref(o);
    return 0;
}

/* on_resent_push: with replicas, a push the store already has (a worker re-sends what was not
 * acknowledged when a primary died; the new primary may hold it, summed or applied) is
 * answered as the first was and not applied again; true when m was such a push */
static bool on_resent_push(ordo_server_t *s, ordo_msg_t *m, int slice, uint8_t want)
{
    int worker = ordo__server_pusher(s, m->hdr.rank);
    /* backup workers: a push of an iteration already applied was either in the update or left
     * out as late, which the dead primary alone knew; either way the iteration is done
     * without it, so it is answered as a late push (the store's path), with how far the slice
     * got */
    if (s->conf.backup > 0 && m->hdr.iter < ordo_store_version(s->store, slice)) return false;
    if (!ordo_store_pushed(s->store, slice, worker, m->hdr.iter)) return false;
    ordo_replica_count_duplicate(s->repl);
    ORDO_DEBUG("re-sent push of key %u chunk %u iteration %lld from worker %d: already in",
               m->hdr.key, m->hdr.chunk, (long long)m->hdr.iter, m->hdr.rank);
    size_t len = 0;
    const void *data = ordo_msg_data(m, 0, &len);
    if (ordo_store_sync_mode(s->store) == ORDO_SYNC_SSP && data) /* a backup may miss it */
        ordo_replica_forward(s, slice, m->hdr.rank, m->hdr.iter, data, len,
                             ordo_store_seq(s->store, slice));
    if (m->hdr.flags & ORDO_FLAG_PULL)
        add_pull(s, m, slice, m->hdr.iter + 1, 0, want);
    else
        ack_push(s, m, slice, 0);
    return true;
}

void ordo__server_on_data(ordo_server_t *s, ordo_msg_t *m)
{
    char why[256];
    if (s->sparse && m->hdr.key == ORDO_SPARSE_KEY) { /* server/sparse_srv.h */
        ordo_sparse_srv_on_data(s->sparse, m);
        return;
    }
    if (m->hdr.role == ORDO_ROLE_SERVER && s->repl) { /* server/replica.h */
        ordo_replica_on_server_msg(s, m);
        return;
    }
    if (m->hdr.role != ORDO_ROLE_WORKER || m->hdr.rank < 0 || m->hdr.rank >= s->node.n_workers) {
        answer_error(s, m, "sender is not a worker of this cluster");
        return;
    }
    const char *fenced = ordo__server_fenced(s, m); /* server/fence.h */
    if (fenced) {
        if (m->hdr.type != ORDO_MSG_HELLO) answer_error(s, m, fenced);
        return;
    }
    if (m->hdr.type == ORDO_MSG_HELLO) return;
    if (m->hdr.type == ORDO_MSG_PUSH && (m->hdr.flags & ORDO_FLAG_PROBE)) {
        on_probe(s, m);
        return;
    }
    uint8_t want = pull_dtype(m); /* before a compressed push is decoded */
    if (m->hdr.type == ORDO_MSG_PUSH && m->hdr.dtype != ORDO_DTYPE_F32 &&
        ordo__codec_of_dtype(m->hdr.dtype) && !decode_push(s, m))
        return;
    if (m->hdr.type == ORDO_MSG_PUSH && (m->hdr.flags & ORDO_FLAG_GROUP)) {
        if (m->hdr.flags & ORDO_FLAG_PULL) {
            answer_error(s, m, "a merged PUSH cannot carry a pull");
            return;
        }
        on_group_push(s, m);
        return;
    }
    int slice = ordo_keys_slice(s->node.keys, m->hdr.key, m->hdr.chunk);
    if (s->repl && slice >= 0 && ordo_store_owns(s->store, slice) &&
        s->node.keys->slices[slice].server != s->node.rank) {
        /* a slice we back up: the worker has a KEYMAP that has not reached us yet */
        int rc = ordo_replica_park(s, m);
        if (rc) answer_error(s, m, ordo_error_text(rc));
        return;
    }
    slice = slice_of(s, m, why, sizeof why);
    if (slice < 0) {
        answer_error(s, m, why);
        return;
    }
    size_t len = 0;
    void *data = ordo_msg_data(m, 0, &len);
    switch (m->hdr.type) {
    case ORDO_MSG_INIT: {
        bool ignored;
        if (!data || m->nframes != 1) {
            answer_error(s, m, "INIT needs one payload frame");
            return;
        }
        int rc = ordo_store_init(s->store, slice, data, len, &ignored);
        if (rc) {
            answer_error(s, m, ordo_error_text(rc));
        } else if (!ignored) {
            ordo_replica_updated(s, slice);
            ordo__server_wake(s, slice);
        }
        return;
    }
    case ORDO_MSG_PUSH: {
        bool updated;
        if (!data || m->nframes != 1 || m->hdr.dtype != ORDO_DTYPE_F32) {
            answer_error(s, m, "PUSH needs one float32 payload frame");
            return;
        }
        if (s->repl && on_resent_push(s, m, slice, want)) return;
        bool forward = s->repl && ordo_store_sync_mode(s->store) == ORDO_SYNC_SSP;
        if (forward && ordo_store_check_push(s->store, slice, ordo__server_pusher(s, m->hdr.rank),
                                             m->hdr.iter, len) == 0)
            ordo_replica_forward(s, slice, m->hdr.rank, m->hdr.iter, data, len,
                                 ordo_store_seq(s->store, slice) + 1);
        int rc = ordo_store_push_frame(s->store, slice, ordo__server_pusher(s, m->hdr.rank),
                                       m->hdr.iter, &m->frames[0],
                                       &updated);
        if (rc < 0) {
            answer_error(s, m, ordo_error_text(rc));
            return;
        }
        /* a late push (backup workers) or a re-send (a restarted worker) was left out; the
         * acknowledgement says how far the slice got (the version, as a negative staleness),
         * so that the worker starts the current iteration (docs/stragglers.md) */
        uint32_t flags = rc > 0 ? ORDO_FLAG_DROPPED : 0;
        if (rc > 0 && !fused_push(m))
            flags |= ORDO_FLAG_STALE(m->hdr.iter - ordo_store_version(s->store, slice));
        s->n_push++;
        if (updated) ordo_srv_ckpt_updated(s->ckpt, slice);
        bool fused = m->hdr.flags & ORDO_FLAG_PULL; /* the answer to its pull acknowledges it */
        if (updated && !forward) ordo_replica_updated(s, slice);
        if (!fused) ack_push(s, m, slice, flags);
        if (updated) ordo__server_wake(s, slice);
        if (fused) add_pull(s, m, slice, m->hdr.iter + 1, flags, want);
        return;
    }
    case ORDO_MSG_PULL:
        add_pull(s, m, slice, m->hdr.iter, 0, want);
        return;
    default:
        answer_error(s, m, "unexpected message type on the data port");
    }
}

