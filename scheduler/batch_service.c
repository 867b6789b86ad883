/* batch_service: the scheduler's side of the batch service ([sync] batches): it answers a
 * worker's BATCH_REQ with its next batch from the shared epoch (scheduler/batches.h), made at
 * the first request from its data set and run description, returns a dead worker's lease, and
 * puts the run's wall time, samples and each worker's batch count into summary.json. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/error.h"
#include "common/log.h"
#include "common/transport.h"
#include "scheduler/batches.h"
#include "scheduler/scheduler_internal.h"

static void refuse(sched_t *s, const member_t *mb, const ordo__msg_t *req, int code,
                   const char *why)
{
    char name[320];
    ORDO_WARN("refused a batch to %s: %s", ordo__sched_member_name(mb, name, sizeof name), why);
    json_t *o = json_pack("{s:s, s:i}", "error", why, "code", code);
    char *text = o ? json_dumps(o, JSON_COMPACT) : NULL;
    ordo__msg_t m;
    ordo__sched_msg_to(s, mb->rid, mb->rid_len, ORDO_MSG_BATCH, &m);
    m.hdr.req = req->hdr.req; /* the answer to that request */
    m.hdr.dtype = ORDO_DTYPE_JSON;
    if (text) ordo__msg_add_text(&m, text);
    ordo__transport_send(s->tp, &m);
    free(text);
    json_decref(o);
}

static int parse_text(const char *d, size_t len, ordo__batches_spec_t *sp);

static void send_answer(sched_t *s, const member_t *mb, const ordo__msg_t *m, int rc,
                        int64_t want, int64_t *idx, int count, int64_t epoch);

/* answer_again: a worker sent its request again to a new scheduler (fault.scheduler =
 * restart) that had it already: the same answer, its last lease (an end when it holds none) */
static void answer_again(sched_t *s, const member_t *mb, const ordo__msg_t *m)
{
    int cap = ORDO_BATCH_MAX, count = 0;
    int64_t *idx = s->batches ? malloc(sizeof *idx * (size_t)cap) : NULL, epoch = 0;
    if (!idx) return;
    int64_t want = m->hdr.key == ORDO_BATCH_ANY_EPOCH ? -1 : (int64_t)m->hdr.key;
    int rc = ordo__batches_last(s->batches, mb->rank, idx, cap, &count, &epoch);
    send_answer(s, mb, m, rc, want, idx, count, epoch);
    free(idx);
}

/* the request's body: {"n", "batch", "samples", "seed", "shuffle"}, every field checked */
static int parse_spec(ordo__msg_t *m, ordo__batches_spec_t *sp)
{
    size_t len = 0;
    const char *d = m->hdr.dtype == ORDO_DTYPE_JSON ? ordo__msg_data(m, 0, &len) : NULL;
    if (!d || m->nframes != 1) return ordo__error_set(ORDO_ERR_PROTO, "BATCH_REQ needs one JSON frame");
    return parse_text(d, len, sp);
}

static int parse_text(const char *d, size_t len, ordo__batches_spec_t *sp)
{
    json_error_t err;
    json_t *o = json_loadb(d, len, 0, &err);
    json_t *n = json_object_get(o, "n"), *b = json_object_get(o, "batch"),
           *smp = json_object_get(o, "samples"), *seed = json_object_get(o, "seed"),
           *sh = json_object_get(o, "shuffle");
    int rc = 0;
    if (!json_is_object(o) || json_object_size(o) != 5)
        rc = ordo__error_set(ORDO_ERR_PROTO, "BATCH_REQ: not an object of n, batch, samples, seed, "
                            "shuffle");
    else if (!json_is_integer(n) || !json_is_integer(b) || !json_is_integer(smp) ||
             !json_is_integer(seed) || !json_is_boolean(sh))
        rc = ordo__error_set(ORDO_ERR_PROTO, "BATCH_REQ: n, batch, samples and seed must be "
                            "integers, shuffle a boolean");
    else if (json_integer_value(b) < 1 || json_integer_value(b) > ORDO_BATCH_MAX)
        rc = ordo__error_set(ORDO_ERR_INVAL, "BATCH_REQ: batch %lld (1 to %d)",
                            (long long)json_integer_value(b), ORDO_BATCH_MAX);
    else if (json_integer_value(seed) < 0)
        rc = ordo__error_set(ORDO_ERR_INVAL, "BATCH_REQ: a negative seed");
    if (!rc)
        *sp = (ordo__batches_spec_t){.n = json_integer_value(n),
                                    .batch = (int)json_integer_value(b),
                                    .samples = json_integer_value(smp),
                                    .seed = (uint64_t)json_integer_value(seed),
                                    .shuffle = json_is_true(sh)};
    json_decref(o);
    return rc;
}

void ordo__sched_on_batch_req(sched_t *s, member_t *mb, ordo__msg_t *m)
{
    if (mb->role != ORDO_ROLE_WORKER || mb->rank < 0) {
        ORDO_WARN("dropped a BATCH_REQ that no worker sent");
        return;
    }
    if (!ordo__conf_batch_service(&s->conf)) {
        refuse(s, mb, m, ORDO_ERR_NOTSUP, "the batch service is off (sync.batches; auto: on under "
               "ssp, asp and backup workers)");
        return;
    }
    if (mb->batch_req && m->hdr.req <= mb->batch_req) { /* a request sent again */
        if (m->hdr.req == mb->batch_req) answer_again(s, mb, m);
        return;
    }
    ordo__batches_spec_t sp;
    int rc = parse_spec(m, &sp);
    if (!rc && !s->batches) {
        bool gate = s->conf.sync_mode != ORDO_SYNC_ASP; /* bsp and ssp count iterations */
        rc = ordo__batches_new(&sp, ordo__conf_max_workers(&s->conf), gate, &s->batches);
        if (!rc)
            ORDO_INFO("batch service: %lld samples in batches of %d, %lld in all%s", (long long)sp.n,
                      sp.batch, (long long)sp.samples, gate ? " (the end is an iteration)" : "");
    } else if (!rc) {
        rc = ordo__batches_same(s->batches, &sp);
    }
    if (rc) {
        refuse(s, mb, m, rc, ordo__error_text(rc));
        return;
    }
    int64_t *idx = malloc(sizeof *idx * (size_t)sp.batch), epoch = 0;
    int count = 0;
    if (!idx) return; /* the worker's call times out or is asked again */
    int64_t want = m->hdr.key == ORDO_BATCH_ANY_EPOCH ? -1 : (int64_t)m->hdr.key;
    /* asked for ahead: the last batch is still being worked on and stays leased */
    rc = m->hdr.flags & ORDO_BATCH_AHEAD
             ? ordo__batches_prefetch(s->batches, mb->rank, want, m->hdr.iter, idx, sp.batch,
                                     &count, &epoch)
             : ordo__batches_next(s->batches, mb->rank, want, m->hdr.iter, idx, sp.batch, &count,
                                 &epoch);
    if (rc < 0) {
        free(idx);
        refuse(s, mb, m, rc, ordo__error_text(rc));
        return;
    }
    mb->batch_req = m->hdr.req;
    send_answer(s, mb, m, rc, want, idx, count, epoch);
    free(idx);
}

/* send_answer answers request m: rc 0 with count indices of epoch, or an end */
static void send_answer(sched_t *s, const member_t *mb, const ordo__msg_t *m, int rc,
                        int64_t want, int64_t *idx, int count, int64_t epoch)
{
    ordo__msg_t a;
    ordo__sched_msg_to(s, mb->rid, mb->rid_len, ORDO_MSG_BATCH, &a);
    a.hdr.req = m->hdr.req;
    a.hdr.key = m->hdr.key;
    a.hdr.iter = rc == 0 ? epoch : want < 0 ? 0 : want;
    if (rc == ORDO_BATCHES_END_EPOCH) a.hdr.flags = ORDO_BATCH_END_EPOCH;
    if (rc == ORDO_BATCHES_END_RUN) a.hdr.flags = ORDO_BATCH_END_RUN;
    a.hdr.dtype = ORDO_DTYPE_BYTES;
    int sent = 0;
    if (rc == 0) { /* little-endian on the wire */
        unsigned char *le = (unsigned char *)idx;
        for (int i = 0; i < count; i++) {
            uint64_t v = (uint64_t)idx[i];
            for (int j = 0; j < 8; j++)
                le[8 * i + j] = (unsigned char)(v >> (8 * j));
        }
        sent = ordo__msg_add_copy(&a, idx, sizeof *idx * (size_t)count);
    }
    if (sent) {
        ordo__msg_close(&a);
        return;
    }
    ordo__transport_send(s->tp, &a);
}

void ordo__sched_batches_dead(sched_t *s, const member_t *mb)
{
    if (s->batches && mb->role == ORDO_ROLE_WORKER) ordo__batches_release(s->batches, mb->rank);
}

void ordo__sched_batches_stats(sched_t *s, int64_t t_start_ns, int64_t t_end_ns)
{
    if (t_start_ns > 0 && (s->wall_first_ns == 0 || t_start_ns < s->wall_first_ns))
        s->wall_first_ns = t_start_ns;
    if (t_end_ns > s->wall_last_ns) s->wall_last_ns = t_end_ns;
}

void ordo__sched_batches_close(sched_t *s)
{
    if (!s->log) return;
    if (s->wall_last_ns > s->wall_first_ns && s->wall_first_ns > 0)
        ordo__runlog_set_section(s->log, "wall_s",
                                json_real((double)(s->wall_last_ns - s->wall_first_ns) / 1e9));
    if (!s->batches) return;
    json_t *counts = json_array();
    for (int w = 0; w < ordo__conf_max_workers(&s->conf); w++)
        json_array_append_new(counts, json_integer(ordo__batches_count(s->batches, w)));
    ordo__runlog_set_section(s->log, "samples", json_integer(ordo__batches_samples(s->batches)));
    ordo__runlog_set_section(s->log, "batches", counts);
}

/* restore_worker: one worker's part of the service, from what it holds (ps_batch.c's
 * ordo__ps_batch_state); 0 or an error naming what does not fit */
static int restore_worker(sched_t *s, member_t *mb, json_t *st, int64_t *idx)
{
    json_t *leases = json_object_get(st, "leases"), *req = json_object_get(st, "req");
    json_t *handed = json_object_get(st, "handed"), *iter = json_object_get(st, "iter");
    if (!json_is_integer(req) || !json_is_integer(handed) || !json_is_integer(iter) ||
        !json_is_array(leases) || json_array_size(leases) != 2)
        return ordo__error_set(ORDO_ERR_PROTO, "batches: worker %d's state lacks req, handed, "
                              "iter or its two leases", mb->rank);
    for (int slot = 0; slot < 3; slot++) {
        json_t *l = slot < 2 ? json_array_get(leases, (size_t)slot) : json_object_get(st, "newest");
        if (json_is_null(l) || !l) continue;
        json_t *e = json_array_get(l, 0), *a = json_array_get(l, 1);
        size_t n = json_array_size(a);
        if (!json_is_integer(e) || !json_is_array(a) || n < 1 || n > ORDO_BATCH_MAX)
            return ordo__error_set(ORDO_ERR_PROTO, "batches: worker %d's lease %d is not "
                                  "[epoch, [indices]]", mb->rank, slot);
        for (size_t i = 0; i < n; i++)
            idx[i] = json_integer_value(json_array_get(a, i));
        int rc = slot < 2 ? ordo__batches_restore(s->batches, mb->rank, slot,
                                                 json_integer_value(e), idx, (int)n)
                          : 0;
        if (!rc) rc = ordo__batches_seen(s->batches, json_integer_value(e), idx, (int)n);
        if (rc) return rc;
    }
    ordo__batches_set_count(s->batches, mb->rank, json_integer_value(handed), json_integer_value(iter));
    mb->batch_req = (uint64_t)json_integer_value(req);
    return 0;
}

int ordo__sched_batches_rejoin(sched_t *s, char *why, size_t wsz)
{
    int rc = 0;
    int64_t *idx = NULL;
    for (int i = 0; i < s->n_members && !rc; i++) {
        member_t *mb = &s->members[i];
        json_t *st = json_object_get(mb->rejoin, "batches");
        const char *text = json_string_value(json_object_get(st, "spec"));
        if (mb->role != ORDO_ROLE_WORKER || mb->gone || !st) continue;
        ordo__batches_spec_t sp;
        rc = text ? parse_text(text, strlen(text), &sp)
                  : ordo__error_set(ORDO_ERR_PROTO, "batches: worker %d's state has no spec",
                                   mb->rank);
        if (!rc && !s->batches) {
            rc = ordo__batches_new(&sp, ordo__conf_max_workers(&s->conf),
                                   s->conf.sync_mode != ORDO_SYNC_ASP, &s->batches);
        } else if (!rc) {
            rc = ordo__batches_same(s->batches, &sp);
        }
        if (!rc && !idx && !(idx = malloc(sizeof *idx * ORDO_BATCH_MAX))) rc = ORDO_ERR_NOMEM;
        if (!rc) rc = restore_worker(s, mb, st, idx);
    }
    free(idx);
    if (rc) {
        snprintf(why, wsz, "%s (the batch service cannot be rebuilt from the workers' leases)",
                 ordo__error_text(rc));
        return rc;
    }
    if (s->batches)
        ORDO_INFO("batch service rebuilt from the workers' leases: %lld samples handed out so far",
                  (long long)ordo__batches_samples(s->batches));
    return 0;
}
