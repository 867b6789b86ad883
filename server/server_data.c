/* server_data: the server's data-port handlers. Pushes (dense, merged, calibration probes)
 * are checked and summed into the store, INITs set first values, and pulls are answered at
 * once or parked until the store's consistency model ([sync]) lets them be: under bsp until
 * the pushes of the iteration before are in. Each answer carries its staleness. A malformed or
 * out-of-place message is answered with ERROR, counted and dropped; it never stops the
 * server. One handler per message type, found in ON_DATA; the consistency model and the
 * replicas take part through their tables (server/consistency/model.h, server/replica.h). */
#include "common/codec.h"
#include "common/error.h"
#include "common/log.h"
#include "common/transport.h"
#include "server/consistency/model.h"
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
static void answer_init(ordo__server_t *s, const ordo__msg_t *m, int type, ordo__msg_t *a)
{
    ordo__msg_init(a, type);
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
static void send_ack(ordo__server_t *s, const ordo__msg_t *m, uint32_t flags)
{
    ordo__msg_t ack;
    answer_init(s, m, ORDO_MSG_PUSH_ACK, &ack);
    ack.hdr.flags = flags;
    ordo__transport_send(s->node.tp, &ack);
}

static bool fused_push(const ordo__msg_t *m)
{
    return m->hdr.flags & ORDO_FLAG_PULL;
}

/* ack_push acknowledges push m of slice: at once, or with replicas once the update it went
 * into is held by every live backup (the worker keeps its gradient until then) */
static void ack_push(ordo__server_t *s, const ordo__msg_t *m, int slice, uint32_t flags)
{
    ordo__msg_t ack;
    answer_init(s, m, ORDO_MSG_PUSH_ACK, &ack);
    ack.hdr.flags = flags;
    s->replication->ack_push(s, slice, m->hdr.iter, &ack);
}

void ordo__server_refuse(ordo__server_t *s, const ordo__msg_t *m, const char *why)
{
    s->n_refused++;
    char what[160];
    snprintf(what, sizeof what, "key %u chunk %u iter %lld, from %s %d: %s", m->hdr.key,
             m->hdr.chunk, (long long)m->hdr.iter, ordo__wire_role_name(m->hdr.role), m->hdr.rank,
             why);
    ordo__transport_drop(s->node.tp, m, m->hdr.role == ORDO_ROLE_WORKER &&
                                               m->hdr.rank >= 0 && m->hdr.rank < s->node.n_workers
                                           ? "refused request"
                                           : "not a worker of this cluster",
                        what);
    ordo__msg_t e;
    answer_init(s, m, ORDO_MSG_ERROR, &e);
    ordo__msg_add_text(&e, why);
    ordo__transport_send(s->node.tp, &e);
}

/* a pull that can be answered now becomes a response held by the enforcement module */
static void make_ready(ordo__server_t *s, int slice, const ordo__waiter_t *w)
{
    const ordo__slice_t *sl = &s->node.keys->slices[slice];
    ordo__msg_t r;
    ordo__msg_init(&r, ORDO_MSG_PULL_RESP);
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
        ORDO_FLAG_STALE(w->iter - ordo__store_pull_version(s->store, slice, w->iter)) | w->flags;
    void *data, *hint;
    size_t bytes;
    if (ordo__store_ref_pull(s->store, slice, w->iter, &data, &bytes, &hint) != 0) {
        ORDO_ERROR("out of memory answering a pull");
        ordo__msg_close(&r);
        return;
    }
    /* a 16-bit answer carries the value's encoded copy (server/pull_codec.h): the workers'
     * copies are then within one rounding of the value held here */
    const ordo__codec_ops_t *wire = ordo__codec_of_dtype(w->dtype);
    bool lossy = wire && wire->lossy;
    if (w->dtype != ORDO_DTYPE_F32 &&
        (lossy ? ordo__pull_codec_attach_delta(s->pull_codec, slice, w->iter, data, bytes,
                                               w->dtype, w->have_prev, &r)
               : ordo__pull_codec_attach(s->pull_codec, slice, ordo__store_seq(s->store, slice),
                                         data, bytes, w->dtype, &r)) == 0) {
        ordo__store_unref_cb(data, hint);
    } else if (ordo__msg_add_ref(&r, data, bytes, ordo__store_unref_cb, hint) != 0) {
        ordo__store_unref_cb(data, hint);
        ORDO_ERROR("out of memory answering a pull");
        return;
    }
    /* one queue per host group: its members pull disjoint keys, together each slice once, so
     * the strict counter (and the fair share) is the group's, as the group's link is one */
    int rc = ordo__enforce_add(s->enforce, ordo__server_pusher(s, w->worker), w->iter, slice, &r);
    if (rc) {
        ORDO_ERROR("enforce: %s", ordo__error_text(rc));
        ordo__msg_close(&r);
    }
}

/* waiter w's pull can be answered: the store has the value, and with replicas every live
 * backup holds what it needs (w->need) too */
static bool ready(ordo__server_t *s, int slice, const ordo__waiter_t *w)
{
    return ordo__store_ready(s->store, slice, w->iter) &&
           s->replication->visible(s, slice, w->need);
}

void ordo__server_wake(ordo__server_t *s, int slice)
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

static int slice_of(ordo__server_t *s, const ordo__msg_t *m, char *why, size_t size)
{
    int slice = ordo__keys_slice(s->node.keys, m->hdr.key, m->hdr.chunk);
    if (slice < 0) {
        snprintf(why, size, "no key %u chunk %u", m->hdr.key, m->hdr.chunk);
        return -1;
    }
    if (!ordo__store_owns(s->store, slice) || s->node.keys->slices[slice].server != s->node.rank) {
        snprintf(why, size, "key %u chunk %u lives on server %d", m->hdr.key, m->hdr.chunk,
                 s->node.keys->slices[slice].server);
        return -1;
    }
    return slice;
}

/* with replicas, a merged push whose first slice this server holds as a backup comes from a
 * worker whose KEYMAP arrived before ours: it is kept until ours does (true when it was) */
static bool park_merged_push(ordo__server_t *s, ordo__msg_t *m, const void *index, size_t ilen)
{
    uint32_t id;
    if (ilen < sizeof id) return false;
    memcpy(&id, index, sizeof id);
    return id < (uint32_t)s->node.keys->n_slices && s->replication->park(s, m, (int)id);
}

/* a merged push ([push] mode = merged, server/merged.h): several slices in one message,
 * checked as a whole, then added to the store from the received frame (no copy); one ack.
 * With replicas, slices a re-sent push (its primary died) already has are left out, each
 * update goes to the backups, and the ack waits until every live backup holds every slice's
 * update (server/replica.h) */
static void on_merged_push(ordo__server_t *s, ordo__msg_t *m)
{
    size_t len = 0, ilen = 0;
    int n, rc, worker = ordo__server_pusher(s, m->hdr.rank);
    const void *index = ordo__msg_data(m, 1, &ilen);
    if (m->hdr.flags & ORDO_FLAG_PULL) {
        ordo__server_refuse(s, m, "a merged PUSH cannot carry a pull");
        return;
    }
    if (!ordo__msg_data(m, 0, &len) || m->nframes != 2 || m->hdr.dtype != ORDO_DTYPE_F32) {
        ordo__server_refuse(s, m, "a merged PUSH needs a float32 payload frame and an index frame");
        return;
    }
    if (park_merged_push(s, m, index, ilen)) return;
    if ((rc = ordo__merged_split(s->merged, index, ilen, len, &n)) != 0) {
        ordo__server_refuse(s, m, ordo__error_text(rc));
        return;
    }
    const ordo__slice_t *slices = s->node.keys->slices;
    int dup = 0;
    for (int i = 0; i < n; i++) {
        int sl = ordo__merged_slice(s->merged, i);
        if (s->replication->has(s, sl, worker, m->hdr.iter)) {
            dup++;
            continue;
        }
        ordo__grad_t g = {NULL, (size_t)slices[sl].numel * sizeof(float), ORDO_DTYPE_F32};
        rc = ordo__store_check_push(s->store, sl, worker, m->hdr.iter, &g);
        if (rc < 0) {
            ordo__server_refuse(s, m, ordo__error_text(rc));
            return;
        }
    }
    if (dup) ordo__replica_count_duplicate(s->repl);
    ordo__store_frame_t *f = ordo__store_frame_wrap(&m->frames[0]);
    if (!f) {
        ORDO_ERROR("out of memory taking a merged push");
        return;
    }
    const char *base = ordo__store_frame_data(f, &len);
    for (int i = 0; i < n; i++) {
        int sl = ordo__merged_slice(s->merged, i);
        bool updated;
        if (dup && ordo__store_pushed(s->store, sl, worker, m->hdr.iter)) continue;
        rc = ordo__store_push_ref(s->store, sl, worker, m->hdr.iter,
                                 (const float *)(base + ordo__merged_offset(s->merged, i)),
                                 (size_t)slices[sl].numel * sizeof(float), f, &updated);
        if (rc < 0) ORDO_ERROR("merged push, slice %d: %s", sl, ordo__error_text(rc));
        if (rc == 0 && updated) {
            ordo__srv_ckpt_updated(s->ckpt, sl);
            s->replication->updated(s, sl);
        }
    }
    ordo__store_frame_unref(f);
    s->n_push++;
    ordo__msg_t ack;
    answer_init(s, m, ORDO_MSG_PUSH_ACK, &ack);
    ack.hdr.flags = ORDO_FLAG_GROUP;
    s->replication->ack_merged(s, n, m->hdr.iter, &ack);
    for (int i = 0; i < n; i++) { /* the slices this push completed answer their pulls */
        int sl = ordo__merged_slice(s->merged, i);
        if (ordo__store_version(s->store, sl) == m->hdr.iter + 1) ordo__server_wake(s, sl);
    }
}

/* the number of floats a compressed push's payload stands for: its slice's (dense), or the
 * sum of its index's slices' (merged, checked again by ordo__merged_split); -1 when the
 * message names no slice of the key map */
static int64_t push_numel(ordo__server_t *s, ordo__msg_t *m)
{
    const ordo__keys_t *k = s->node.keys;
    if (!(m->hdr.flags & ORDO_FLAG_GROUP)) {
        int slice = ordo__keys_slice(k, m->hdr.key, m->hdr.chunk);
        return slice < 0 ? -1 : k->slices[slice].numel;
    }
    size_t ilen = 0;
    const uint8_t *index = ordo__msg_data(m, 1, &ilen);
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
static void note_k(ordo__server_t *s, ordo__msg_t *m, double fraction)
{
    const ordo__keys_t *k = s->node.keys;
    if (!(m->hdr.flags & ORDO_FLAG_GROUP)) {
        ordo__pull_codec_note_k(s->pull_codec, ordo__keys_slice(k, m->hdr.key, m->hdr.chunk),
                                fraction);
        return;
    }
    size_t ilen = 0;
    const uint8_t *index = ordo__msg_data(m, 1, &ilen);
    for (size_t i = 0; index && i + sizeof(uint32_t) <= ilen; i += sizeof(uint32_t)) {
        uint32_t id;
        memcpy(&id, index + i, sizeof id);
        ordo__pull_codec_note_k(s->pull_codec, (int)id, fraction);
    }
}

/* decode_push turns a push whose values come in a compressed wire type (common/codec.h) into
 * the float32 push the store sums: frame 0 is replaced by its decoded floats. false (answered
 * with ERROR) when the frame is malformed: a length that disagrees with its dtype, indices
 * out of range. A 16-bit cast of one slice is not decoded: the store sums it from its frame
 * (ordo__grad_t); merged pushes and the codecs whose values have no fixed place are. */
static bool decode_push(ordo__server_t *s, ordo__msg_t *m)
{
    size_t len = 0;
    const void *frame = ordo__msg_data(m, 0, &len);
    int64_t n = push_numel(s, m);
    if (!frame || n < 0) {
        ordo__server_refuse(s, m, "a compressed PUSH names no slice held here");
        return false;
    }
    zmq_msg_t out;
    if (zmq_msg_init_size(&out, (size_t)n * sizeof(float)) != 0) {
        ordo__server_refuse(s, m, "out of memory decoding a compressed push");
        return false;
    }
    int rc = ordo__codec_decode(m->hdr.dtype, frame, len, n, zmq_msg_data(&out));
    if (rc) {
        zmq_msg_close(&out);
        ordo__server_refuse(s, m, ordo__error_text(rc));
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
static uint8_t pull_dtype(const ordo__msg_t *m)
{
    int d = m->hdr.dtype;
    const ordo__codec_ops_t *ops = ordo__codec_of_dtype(d);
    if (!ops || d == ORDO_DTYPE_F32) return ORDO_DTYPE_F32;
    if (m->hdr.type == ORDO_MSG_PULL || !ops->lossy || (m->hdr.flags & ORDO_FLAG_PULL_CODED))
        return (uint8_t)d;
    return ORDO_DTYPE_F32;
}

/* a calibration push (server/probe.h): summed into scratch memory and acknowledged */
static void on_probe(ordo__server_t *s, ordo__msg_t *m)
{
    char buf[160];
    const char *why = ordo__probe_take(&s->probe, m, buf, sizeof buf);
    if (why)
        ordo__server_refuse(s, m, why);
    else
        send_ack(s, m, ORDO_FLAG_PROBE);
}

/* a pull of slice's value of iteration iter for m's sender: answered now if the value is
 * there, else when the pushes it needs are in (bsp: those of iter - 1); flags go on the
 * answer (ORDO_FLAG_DROPPED for a fused push left out) */
static void add_pull(ordo__server_t *s, const ordo__msg_t *m, int slice, int64_t iter,
                     uint32_t flags, uint8_t dtype)
{
    char why[128];
    int64_t v = ordo__store_version(s->store, slice);
    /* bsp and ssp values never get ahead of a worker's pulls; backup workers and asp let
     * the slow ones see newer values */
    const ordo__sync_model_t *model = ordo__store_model(s->store);
    bool newer_ok = model->newer_pulls;
    /* a restarted worker goes on at the first iteration its predecessor did not report,
     * which the others may have completed with the pushes it did send */
    if (s->conf.fault_worker == ORDO_FAULT_RESTART) newer_ok = true;
    if (iter < 0 || (v >= 0 && iter < v && !newer_ok)) {
        snprintf(why, sizeof why, "pull of iteration %lld, the value is at %lld", (long long)iter,
                 (long long)v);
        ordo__server_refuse(s, m, why);
        return;
    }
    s->n_pull++;
    ordo__waiter_t w = {.worker = m->hdr.rank, .iter = iter, .req = m->hdr.req,
                        .rid_len = m->rid_len, .flags = flags, .dtype = dtype,
                        .have_prev = (m->hdr.flags & ORDO_FLAG_HAVE_PREV) != 0};
    /* with replicas, what every live backup must hold first (server/consistency/model.h) */
    w.need = model->pull_need(s->store, slice, iter, m->hdr.type == ORDO_MSG_PUSH);
    memcpy(w.rid, m->rid, m->rid_len);
    if (ready(s, slice, &w)) {
        make_ready(s, slice, &w);
        return;
    }
    ordo__waitlist_t *wl = &s->waiting[slice];
    if (wl->n >= 4 * s->node.n_workers * (s->conf.staleness + 1)) {
        ordo__server_refuse(s, m, "too many pulls waiting for this slice");
        return;
    }
    if (wl->n == wl->cap) {
        int cap = wl->cap ? wl->cap * 2 : 4;
        ordo__waiter_t *p = realloc(wl->w, sizeof *p * (size_t)cap);
        if (!p) {
            ordo__server_refuse(s, m, "out of memory");
            return;
        }
        wl->w = p;
        wl->cap = cap;
    }
    wl->w[wl->n++] = w;
}

int ordo__server_on_members(ordo__server_t *s, ordo__msg_t *m)
{
    char body[4096];
    json_error_t jerr;
    json_t *o = json_loads(ordo__msg_text(m, 0, body, sizeof body), 0, &jerr);
    json_t *left = json_object_get(o, "left"), *joined = json_object_get(o, "joined");
    if (ordo__server_on_fenced(s, o)) { /* a worker declared dead: fence its process */
        json_decref(o);
        return 0;
    }
    if (json_is_integer(joined)) { /* ordo-launch --add-worker: from iteration "iter" on */
        int64_t at = json_integer_value(json_object_get(o, "iter"));
        int rc = ordo__store_join(s->store, (int)json_integer_value(joined), at);
        if (rc) {
            /* the run cannot go on consistently: a slice here would never wait for it */
            ORDO_ERROR("worker %lld cannot join: %s", (long long)json_integer_value(joined),
                       ordo__error_text(rc));
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
    } else if ((rc = ordo__store_leave(s->store, (int)json_integer_value(left),
                                      s->conf.aggregate == ORDO_AGG_MEAN, upd, &n)) != 0) {
        ORDO_ERROR("worker %lld leaves: %s", (long long)json_integer_value(left),
                   ordo__error_text(rc));
    } else {
        ORDO_WARN("worker %lld left the run (fault.worker = shrink); %d slices completed without "
                  "it", (long long)json_integer_value(left), n);
        for (int i = 0; i < n; i++) {
            ordo__srv_ckpt_updated(s->ckpt, upd[i]);
            ordo__replica_updated(s, upd[i]);
            ordo__server_wake(s, upd[i]);
        }
    }
    free(upd);
    json_decref(o);
    return 0;
}

/* ---- the data port's messages: one handler per type, found in ON_DATA -------------------- */

/* primary_slice: the slice a worker's message names when this server is its primary; -1 when
 * the message was answered instead (refused, or kept for a KEYMAP not here yet) */
static int primary_slice(ordo__server_t *s, ordo__msg_t *m)
{
    char why[256];
    int slice = ordo__keys_slice(s->node.keys, m->hdr.key, m->hdr.chunk);
    /* a slice we back up: the worker has a KEYMAP that has not reached us yet */
    if (slice >= 0 && s->replication->park(s, m, slice)) return -1;
    slice = slice_of(s, m, why, sizeof why);
    if (slice < 0) ordo__server_refuse(s, m, why);
    return slice;
}

/* a push of one slice: summed into the store; the pulls it completes are answered, and one
 * riding on it (ORDO_FLAG_PULL) is its acknowledgement. With replicas, a re-sent push the store
 * has already (a worker re-sends what was not acknowledged when a primary died; the new
 * primary may hold it, summed or applied) is answered as the first was and not applied again */
static void on_dense_push(ordo__server_t *s, ordo__msg_t *m, uint8_t want)
{
    int slice = primary_slice(s, m);
    if (slice < 0) return;
    size_t len = 0;
    bool updated;
    int worker = ordo__server_pusher(s, m->hdr.rank);
    if (!ordo__msg_data(m, 0, &len) || m->nframes != 1 || !ordo__codec_ranged(m->hdr.dtype)) {
        ordo__server_refuse(s, m, "PUSH needs one payload frame of float32 or a 16-bit cast");
        return;
    }
    bool fused = fused_push(m); /* the answer to its pull acknowledges it */
    if (s->replication->resent(s, m, slice, worker)) {
        if (fused)
            add_pull(s, m, slice, m->hdr.iter + 1, 0, want);
        else
            ack_push(s, m, slice, 0);
        return;
    }
    bool forwarded = s->replication->forward(s, m, slice, worker);
    int rc = ordo__store_push_frame(s->store, slice, worker, m->hdr.iter, m->hdr.dtype,
                                    &m->frames[0], &updated);
    if (rc < 0) {
        ordo__server_refuse(s, m, ordo__error_text(rc));
        return;
    }
    /* a late push (backup workers) or a re-send (a restarted worker) was left out; the
     * acknowledgement says how far the slice got (the version, as a negative staleness),
     * so that the worker starts the current iteration (docs/stragglers.md) */
    uint32_t flags = rc > 0 ? ORDO_FLAG_DROPPED : 0;
    if (rc > 0 && !fused)
        flags |= ORDO_FLAG_STALE(m->hdr.iter - ordo__store_version(s->store, slice));
    s->n_push++;
    if (updated) ordo__srv_ckpt_updated(s->ckpt, slice);
    if (updated && !forwarded) s->replication->updated(s, slice);
    if (!fused) ack_push(s, m, slice, flags);
    if (updated) ordo__server_wake(s, slice);
    if (fused) add_pull(s, m, slice, m->hdr.iter + 1, flags, want);
}

/* PUSH: a calibration probe, or a push whose compressed values are decoded first and which
 * carries one slice or several (merged) */
static void on_push(ordo__server_t *s, ordo__msg_t *m)
{
    if (m->hdr.flags & ORDO_FLAG_PROBE) {
        on_probe(s, m);
        return;
    }
    uint8_t want = pull_dtype(m); /* before a compressed push is decoded */
    bool in_place = ordo__codec_ranged(m->hdr.dtype) && !(m->hdr.flags & ORDO_FLAG_GROUP);
    if (m->hdr.dtype != ORDO_DTYPE_F32 && !in_place && ordo__codec_of_dtype(m->hdr.dtype) &&
        !decode_push(s, m))
        return;
    if (m->hdr.flags & ORDO_FLAG_GROUP)
        on_merged_push(s, m);
    else
        on_dense_push(s, m, want);
}

/* INIT: a slice's first value (a second is ignored) */
static void on_init(ordo__server_t *s, ordo__msg_t *m)
{
    int slice = primary_slice(s, m);
    if (slice < 0) return;
    size_t len = 0;
    bool ignored;
    void *data = ordo__msg_data(m, 0, &len);
    if (!data || m->nframes != 1) {
        ordo__server_refuse(s, m, "INIT needs one payload frame");
        return;
    }
    int rc = ordo__store_init(s->store, slice, data, len, &ignored);
    if (rc) {
        ordo__server_refuse(s, m, ordo__error_text(rc));
    } else if (!ignored) {
        s->replication->updated(s, slice);
        ordo__server_wake(s, slice);
    }
}

/* PULL: answered now or when the consistency model lets it be */
static void on_pull(ordo__server_t *s, ordo__msg_t *m)
{
    int slice = primary_slice(s, m);
    if (slice >= 0) add_pull(s, m, slice, m->hdr.iter, 0, pull_dtype(m));
}

/* HELLO: a worker introduces its connection; nothing to answer */
static void on_hello(ordo__server_t *s, ordo__msg_t *m)
{
    (void)s;
    (void)m;
}

/* a worker's messages on the data port, by type; a type without a row is refused */
static void (*const ON_DATA[ORDO_MSG_TYPE_MAX])(ordo__server_t *s, ordo__msg_t *m) = {
    [ORDO_MSG_HELLO] = on_hello,
    [ORDO_MSG_INIT] = on_init,
    [ORDO_MSG_PUSH] = on_push,
    [ORDO_MSG_PULL] = on_pull,
};

void ordo__server_on_data(ordo__server_t *s, ordo__msg_t *m)
{
    if (s->sparse && m->hdr.key == ORDO_SPARSE_KEY) { /* server/sparse_srv.h */
        ordo__sparse_srv_on_data(s->sparse, m);
        return;
    }
    if (m->hdr.role == ORDO_ROLE_SERVER) { /* another server's: server/replica.h */
        s->replication->on_server_msg(s, m);
        return;
    }
    if (m->hdr.role != ORDO_ROLE_WORKER || m->hdr.rank < 0 || m->hdr.rank >= s->node.n_workers) {
        ordo__server_refuse(s, m, "sender is not a worker of this cluster");
        return;
    }
    const char *fenced = ordo__server_fenced(s, m); /* server/fence.h */
    if (fenced) {
        if (m->hdr.type != ORDO_MSG_HELLO) ordo__server_refuse(s, m, fenced);
        return;
    }
    if (m->hdr.type >= ORDO_MSG_TYPE_MAX || !ON_DATA[m->hdr.type]) {
        ordo__server_refuse(s, m, "unexpected message type on the data port");
        return;
    }
    ON_DATA[m->hdr.type](s, m);
}
