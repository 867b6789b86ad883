/* ps_batch: the worker's side of the batch service ([sync] batches, scheduler/batches.h):
 * a BATCH_REQ to the scheduler, its answer checked and kept until taken, and the newest value
 * version the servers reported. */
#include "client/ps.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/log.h"
#include "client/ps_internal.h"

/* send a BATCH_REQ (flags: ORDO_BATCH_AHEAD or 0) */
static int send_request(ordo__ps_t *w, const char *spec_json, int64_t epoch, int64_t iter,
                        uint32_t flags)
{
    ordo__msg_t m;
    ordo__msg_init(&m, ORDO_MSG_BATCH_REQ);
    m.hdr.dtype = ORDO_DTYPE_JSON;
    m.hdr.iter = iter < 0 ? -1 : iter;
    m.hdr.key = epoch < 0 ? ORDO_BATCH_ANY_EPOCH : (uint32_t)epoch;
    m.hdr.flags = flags;
    m.hdr.req = ++w->req;
    int rc = ordo__msg_add_text(&m, spec_json);
    if (rc) {
        ordo__msg_close(&m);
        return rc;
    }
    if ((rc = ordo__node_send_ctl(&w->node, &m)) != 0) return rc;
    w->batch_out = true;
    w->batch_req = m.hdr.req;
    w->batch_req_key = m.hdr.key;
    w->batch_req_iter = m.hdr.iter;
    w->batch_req_flags = flags;
    w->outstanding++; /* until its ORDO__EV_BATCH */
    return 0;
}

int ordo__ps_batch_resend(ordo__ps_t *w)
{
    if (!w->batch_out || !w->batch_spec) return 0;
    ordo__msg_t m;
    ordo__msg_init(&m, ORDO_MSG_BATCH_REQ);
    m.hdr.dtype = ORDO_DTYPE_JSON;
    m.hdr.iter = w->batch_req_iter;
    m.hdr.key = w->batch_req_key;
    m.hdr.flags = w->batch_req_flags;
    m.hdr.req = w->batch_req;
    int rc = ordo__msg_add_text(&m, w->batch_spec);
    if (rc) {
        ordo__msg_close(&m);
        return rc;
    }
    return ordo__node_send_ctl(&w->node, &m);
}

/* ---- the service's state of this worker (fault.scheduler = restart) ---- */

static int keep(struct ordo__ps_lease *l, int64_t epoch, const int64_t *idx, int n)
{
    if (n > l->cap) {
        int64_t *p = realloc(l->idx, sizeof *p * (size_t)n);
        if (!p) return ORDO_ERR_NOMEM;
        l->idx = p;
        l->cap = n;
    }
    memcpy(l->idx, idx, sizeof *idx * (size_t)n);
    l->n = n;
    l->epoch = epoch;
    return 0;
}

/* track: an answer (status 0: a batch, 1 and 2 the ends) changes the leases as the scheduler's
 * ordo__batches_next and _prefetch do */
static void track(ordo__ps_t *w, int status, bool ahead, int64_t epoch)
{
    struct ordo__ps_lease *older = &w->batch_lease[0], *last = &w->batch_lease[1];
    older->n = 0;
    if (ahead) { /* the last one is still worked on: it becomes the older lease */
        struct ordo__ps_lease t = *older;
        *older = *last;
        *last = t;
    }
    last->n = 0;
    if (status != 0) return;
    if (keep(last, epoch, w->batch_idx, w->batch_n) || keep(&w->batch_newest, epoch, w->batch_idx,
                                                           w->batch_n))
        ORDO_WARN("out of memory for the batch service's state: a new scheduler may hand out "
                  "a batch of this worker's again");
    w->batch_handed++;
    if (w->batch_req_iter > w->batch_top_iter) w->batch_top_iter = w->batch_req_iter;
}

static json_t *lease_json(const struct ordo__ps_lease *l)
{
    if (l->n == 0) return json_null();
    json_t *idx = json_array();
    for (int i = 0; i < l->n; i++)
        json_array_append_new(idx, json_integer(l->idx[i]));
    return json_pack("[I,o]", (json_int_t)l->epoch, idx);
}

json_t *ordo__ps_batch_state(const ordo__ps_t *w)
{
    if (!w->batch_spec) return NULL;
    return json_pack("{s:s,s:I,s:I,s:I,s:[o,o],s:o}", "spec", w->batch_spec, "req",
                     (json_int_t)w->batch_answered, "handed", (json_int_t)w->batch_handed,
                     "iter", (json_int_t)w->batch_top_iter, "leases",
                     lease_json(&w->batch_lease[0]), lease_json(&w->batch_lease[1]), "newest",
                     lease_json(&w->batch_newest));
}

void ordo__ps_batch_free(ordo__ps_t *w)
{
    free(w->batch_lease[0].idx);
    free(w->batch_lease[1].idx);
    free(w->batch_newest.idx);
    memset(w->batch_lease, 0, sizeof w->batch_lease);
    memset(&w->batch_newest, 0, sizeof w->batch_newest);
}

int ordo__ps_batch_request(ordo__ps_t *w, const char *spec_json, int64_t epoch, int64_t iter)
{
    if (w->batch_ahead && !w->batch_asked && (w->batch_out || w->batch_in)) {
        /* the next batch was asked for ahead: of any epoch, with the same description */
        if (epoch >= 0 || !w->batch_spec || strcmp(spec_json, w->batch_spec) != 0)
            return ordo__error_set(ORDO_ERR_INVAL, "the next batch of any epoch was asked for "
                                  "ahead: ask for any epoch with the same data set");
        w->batch_asked = true;
        return w->batch_in ? 1 : 0;
    }
    if (w->batch_out || w->batch_in)
        return ordo__error_set(ORDO_ERR_INVAL, "a batch request is in flight");
    if (epoch < -1 || epoch >= (int64_t)ORDO_BATCH_ANY_EPOCH)
        return ordo__error_set(ORDO_ERR_RANGE, "epoch %lld out of range", (long long)epoch);
    if (!w->batch_spec || strcmp(spec_json, w->batch_spec) != 0) {
        char *copy = strdup(spec_json);
        if (!copy) return ORDO_ERR_NOMEM;
        free(w->batch_spec);
        w->batch_spec = copy;
    }
    int rc = send_request(w, spec_json, epoch, iter, 0);
    if (rc) return rc;
    w->batch_ahead = false;
    w->batch_asked = true;
    w->batch_any = epoch < 0;
    w->batch_last_iter = iter;
    return 0;
}

bool ordo__ps_batch_ready(const ordo__ps_t *w)
{
    return w->batch_in && w->batch_asked;
}

bool ordo__ps_batch_unasked(const ordo__ps_t *w)
{
    return w->batch_in && !w->batch_asked;
}

/* after a batch of any epoch was taken, ask for the next one ahead (its answer is there when
 * the program asks: the round trip through the scheduler overlaps the iteration). Not with
 * backup workers: a worker left behind jumps to the servers' iteration, which the request
 * ahead cannot know. */
static void ask_ahead(ordo__ps_t *w)
{
    if (w->conf.backup > 0 || !w->batch_spec) return;
    int64_t iter = w->batch_last_iter < 0 ? -1 : w->batch_last_iter + 1;
    if (send_request(w, w->batch_spec, -1, iter, ORDO_BATCH_AHEAD) != 0) return; /* asked later */
    w->batch_ahead = true;
    w->batch_asked = false;
    w->batch_any = true;
    w->batch_last_iter = iter;
}

/* a refusal: {"error": text, "code": a negative ORDO_ERR_*} */
static void take_refusal(ordo__ps_t *w, ordo__msg_t *m)
{
    size_t len = 0;
    const char *d = ordo__msg_data(m, 0, &len);
    json_t *o = d ? json_loadb(d, len, 0, NULL) : NULL;
    const char *err = json_string_value(json_object_get(o, "error"));
    json_t *code = json_object_get(o, "code");
    long long c = json_is_integer(code) ? json_integer_value(code) : 0;
    w->batch_status = c < 0 && c >= ORDO_ERR_ABORT ? (int)c : ORDO_ERR_PROTO;
    snprintf(w->batch_err, sizeof w->batch_err, "%s", err ? err : "refused without a reason");
    json_decref(o);
}

int ordo__ps_on_batch(ordo__ps_t *w, ordo__msg_t *m)
{
    size_t len = 0;
    const unsigned char *d = ordo__msg_data(m, 0, &len);
    uint32_t ends = ORDO_BATCH_END_EPOCH | ORDO_BATCH_END_RUN;
    const char *bad = NULL;
    if (m->hdr.req && m->hdr.req == w->batch_answered)
        return 0; /* the answer again: a new scheduler got the request twice (sent again) */
    if (!w->batch_out || m->hdr.req != w->batch_req)
        bad = "no request of this worker's";
    else if (m->hdr.dtype == ORDO_DTYPE_JSON)
        ;
    else if (m->hdr.flags & ~ends || (m->hdr.flags & ends) == ends)
        bad = "unknown flags";
    else if (m->hdr.flags ? m->nframes != 0 : m->hdr.dtype != ORDO_DTYPE_BYTES || m->nframes != 1)
        bad = "frames that do not match its flags";
    else if (!m->hdr.flags && (len == 0 || len % 8 || len / 8 > ORDO_BATCH_MAX))
        bad = "a batch of a wrong size";
    if (!bad && !m->hdr.flags && m->hdr.dtype == ORDO_DTYPE_BYTES) {
        int n = (int)(len / 8);
        if (n > w->batch_cap) {
            int64_t *p = realloc(w->batch_idx, sizeof *p * (size_t)n);
            if (!p) return ORDO_ERR_NOMEM;
            w->batch_idx = p;
            w->batch_cap = n;
        }
        for (int i = 0; i < n && !bad; i++) {
            uint64_t v = 0;
            for (int j = 7; j >= 0; j--)
                v = v << 8 | d[8 * i + j];
            if (v > (uint64_t)INT64_MAX) bad = "a negative index";
            w->batch_idx[i] = (int64_t)v;
        }
        w->batch_n = n;
    }
    if (bad) {
        ORDO_WARN("dropped a BATCH from the scheduler: %s", bad);
        return 0;
    }
    w->batch_epoch = m->hdr.iter;
    if (m->hdr.dtype == ORDO_DTYPE_JSON)
        take_refusal(w, m);
    else
        w->batch_status = m->hdr.flags & ORDO_BATCH_END_EPOCH ? 1 : m->hdr.flags ? 2 : 0;
    w->batch_out = false;
    w->batch_in = true;
    w->batch_answered = m->hdr.req;
    if (w->batch_status >= 0 && w->conf.fault_scheduler == ORDO_SCHED_RESTART)
        track(w, w->batch_status, w->batch_req_flags & ORDO_BATCH_AHEAD, m->hdr.iter);
    ordo__ps_add_event(w, ORDO__EV_BATCH, -1, m->hdr.iter);
    return 0;
}

int ordo__ps_batch_take(ordo__ps_t *w, int64_t *idx, int cap, int *count, int64_t *epoch)
{
    if (!w->batch_in || !w->batch_asked)
        return ordo__error_set(ORDO_ERR_INVAL, "no batch answer to take");
    w->batch_in = false;
    w->batch_asked = false;
    int st = w->batch_status;
    if (st < 0) return ordo__error_set(st, "batch service: %s", w->batch_err);
    if (st == 0 && w->batch_n > cap)
        return ordo__error_set(ORDO_ERR_RANGE, "a batch of %d samples, room for %d", w->batch_n, cap);
    if (st == 0) memcpy(idx, w->batch_idx, sizeof *idx * (size_t)w->batch_n);
    *count = st == 0 ? w->batch_n : 0;
    *epoch = w->batch_epoch;
    /* a batch of any epoch: the next one is asked for now (hdr.key kept the epoch asked) */
    if (st == 0 && w->batch_any) ask_ahead(w);
    return st;
}

int64_t ordo__ps_newest_version(const ordo__ps_t *w)
{
    return (int64_t)atomic_load(&((ordo__ps_t *)w)->newest_version);
}
