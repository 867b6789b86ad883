/* ps_ctl: the worker's messages to and from the scheduler beside the data path: reports,
 * barriers, broadcasts, collective re-plans, aborts, and messages of a caller's own (hooks,
 * ordo__ps_send). The data path and the event loop are ps.c. */
#include "client/ps.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/error.h"
#include "common/le.h"
#include "common/log.h"
#include "common/node_rejoin.h"
#include "client/ps_internal.h"
#include "client/push.h"

/* ---- collective re-plans ------------------------------------------------------------ */

/* the scheduler's answer to this worker's REPLAN: the new plan or {"error", "code"} */
int ordo__ps_take_replan(ordo__ps_t *w, ordo__msg_t *m)
{
    size_t len = 0;
    const char *d = ordo__msg_data(m, 0, &len);
    char *text = d ? strndup(d, len) : NULL;
    if (!text) return ordo__error_set(ORDO_ERR_PROTO, "a REPLAN answer without a body");
    free(w->replan_reply);
    w->replan_reply = text;
    ordo__ps_add_event(w, ORDO__EV_REPLAN, -1, -1);
    return 0;
}

int ordo__ps_replan(ordo__ps_t *w, const char *names_json, const char *profile)
{
    ordo__msg_t m;
    ordo__msg_init(&m, ORDO_MSG_REPLAN);
    m.hdr.dtype = ORDO_DTYPE_JSON;
    int rc = 0;
    if (names_json && profile) {
        rc = ordo__msg_add_text(&m, names_json);
        if (!rc) rc = ordo__msg_add_text(&m, profile);
    }
    if (rc) {
        ordo__msg_close(&m);
        return rc;
    }
    rc = ordo__node_send_ctl(&w->node, &m);
    if (rc == 0) w->outstanding++; /* until its ORDO__EV_REPLAN */
    return rc;
}

bool ordo__ps_replan_accepted(const char *answer)
{
    json_t *ans = answer ? json_loads(answer, 0, NULL) : NULL;
    bool ok = json_is_object(ans) && !json_object_get(ans, "error");
    json_decref(ans);
    return ok;
}


char *ordo__ps_replan_take(ordo__ps_t *w)
{
    char *text = w->replan_reply;
    w->replan_reply = NULL;
    return text;
}

int ordo__ps_send_ctl(ordo__ps_t *w, int type, const char *text)
{
    ordo__msg_t m;
    ordo__msg_init(&m, type);
    m.hdr.dtype = ORDO_DTYPE_JSON;
    if (text) ordo__msg_add_text(&m, text);
    return ordo__node_send_ctl(&w->node, &m);
}

void ordo__ps_set_hook(ordo__ps_t *w, uint32_t key, ordo__ps_hook_fn fn, void *ctx)
{
    w->hook = fn;
    w->hook_ctx = ctx;
    w->hook_key = key;
}

int ordo__ps_send(ordo__ps_t *w, int server, ordo__msg_t *m)
{
    if (server < -1 || server >= w->node.n_servers) {
        ordo__msg_close(m);
        return ordo__error_set(ORDO_ERR_INVAL, "no server %d (the cluster has %d)", server,
                              w->node.n_servers);
    }
    if (server < 0) return ordo__node_send_ctl(&w->node, m);
    m->sock = w->server_sock[server];
    m->hdr.role = ORDO_ROLE_WORKER;
    m->hdr.rank = w->node.rank;
    m->hdr.req = ++w->req;
    return ordo__transport_send(w->node.tp, m);
}

int ordo__ps_report(ordo__ps_t *w, const char *json)
{
    size_t n = strlen(json);
    if ((w->conf.sync_mode == ORDO_SYNC_BSP && w->conf.backup == 0) || n < 2 || json[n - 1] != '}')
    {
        ordo__ps_keep_report(w, json);
        return ordo__ps_stats_report(w, json);
    }
    /* [sync]: what the pulls and pushes since the last report saw */
    char *text = malloc(n + 24 * ORDO_STALE_BUCKETS + 64);
    if (!text) return ORDO_ERR_NOMEM;
    int last = 0;
    for (int i = 0; i < ORDO_STALE_BUCKETS; i++)
        if (w->stale[i] != w->stale_sent[i]) last = i;
    size_t at = (size_t)snprintf(text, n + 16, "%.*s,\"stale\":[", (int)(n - 1), json);
    for (int i = 0; i <= last; i++) {
        at += (size_t)sprintf(text + at, "%s%lld", i ? "," : "",
                              (long long)(w->stale[i] - w->stale_sent[i]));
        w->stale_sent[i] = w->stale[i];
    }
    sprintf(text + at, "],\"late_pushes\":%lld}", (long long)(w->late - w->late_sent));
    w->late_sent = w->late;
    ordo__ps_keep_report(w, text);
    int rc = ordo__ps_stats_report(w, text);
    free(text);
    return rc;
}

int ordo__ps_barrier(ordo__ps_t *w, int64_t id)
{
    ordo__msg_t m;
    ordo__msg_init(&m, ORDO_MSG_BARRIER);
    m.hdr.iter = id;
    int rc = ordo__node_send_ctl(&w->node, &m);
    if (rc == 0) w->outstanding++; /* until its ORDO__EV_BARRIER */
    if (rc == 0) {
        w->barrier_out = true; /* told to a new scheduler (ps_rejoin.c) */
        w->barrier_id = id;
    }
    return rc;
}

int ordo__ps_broadcast(ordo__ps_t *w, int64_t id, int root, void *buf, size_t bytes)
{
    if (w->bcast_id) return ordo__error_set(ORDO_ERR_INVAL, "a broadcast is in flight");
    if (bytes + (1 << 16) > ((size_t)w->conf.max_message_mb << 20))
        return ordo__error_set(ORDO_ERR_INVAL,
                              "a broadcast of %zu bytes: above net.max_message_mb "
                              "(%d MiB)",
                              bytes, w->conf.max_message_mb);
    ordo__msg_t m;
    ordo__msg_init(&m, ORDO_MSG_BCAST);
    m.hdr.iter = id;
    m.hdr.key = (uint32_t)root;
    m.hdr.dtype = ORDO_DTYPE_BYTES;
    unsigned char size[8];
    ordo_put_le(size, (uint64_t)bytes, 8);
    int rc = ordo__msg_add_copy(&m, size, sizeof size);
    if (!rc && root == w->node.rank) rc = ordo__msg_add_copy(&m, buf, bytes);
    if (!rc)
        rc = ordo__node_send_ctl(&w->node, &m);
    else
        ordo__msg_close(&m);
    if (rc) return rc;
    w->bcast_id = id;
    w->bcast_dst = buf;
    w->bcast_bytes = bytes;
    w->outstanding++; /* until its ORDO__EV_BCAST */
    return 0;
}

int ordo__ps_relay(ordo__ps_t *w, int64_t id, int root, void *buf, size_t bytes,
                       int timeout_ms)
{
    int rc = ordo__ps_broadcast(w, id, root, buf, bytes);
    int64_t deadline = ordo__clock_ns() + (int64_t)timeout_ms * 1000000;
    while (!rc) {
        int64_t left = (deadline - ordo__clock_ns()) / 1000000;
        if (left <= 0) {
            w->bcast_id = 0; /* a late answer is dropped */
            return ordo__error_set(ORDO_ERR_TIMEDOUT, "broadcast %lld from worker %d: not relayed "
                                  "by the scheduler within %d ms", (long long)id, root,
                                  timeout_ms);
        }
        ordo__ps_event_t ev;
        rc = ordo__ps_poll(w, (int)left, &ev);
        if (rc == ORDO_ERR_TIMEDOUT) rc = 0;
        else if (!rc && ev.kind == ORDO__EV_BCAST && ev.iter == id) return 0;
    }
    return rc;
}

void ordo__ps_abort(ordo__ps_t *w, const char *reason)
{
    ordo__ps_send_ctl(w, ORDO_MSG_ABORT, reason);
    w->aborted = true;
}

/* ---- messages from the scheduler -------------------------------------------------- */

int ordo__ps_on_barrier_done(ordo__ps_t *w, ordo__msg_t *m)
{
    w->barrier_out = false;
    ordo__ps_add_event(w, ORDO__EV_BARRIER, -1, m->hdr.iter);
    return 0;
}

int ordo__ps_on_bcast(ordo__ps_t *w, ordo__msg_t *m)
{
    size_t len = 0;
    const void *data = ordo__msg_data(m, 0, &len);
    if (!w->bcast_id || m->hdr.iter != w->bcast_id || (data && len != w->bcast_bytes)) {
        ORDO_WARN("dropped an unexpected BCAST %lld (%zu bytes)", (long long)m->hdr.iter, len);
        return 0;
    }
    if (data && len) memcpy(w->bcast_dst, data, len);
    w->bcast_id = 0;
    ordo__ps_add_event(w, ORDO__EV_BCAST, -1, m->hdr.iter);
    return 0;
}

/* MEMBERS (fault.worker = shrink): a worker left, or (fault.max_workers) one joined; this
 * one's place among the live ones is what its data shard follows from the next epoch on */
int ordo__ps_on_members(ordo__ps_t *w, ordo__msg_t *m)
{
    char body[4096];
    json_t *o = json_loads(ordo__msg_text(m, 0, body, sizeof body), 0, NULL);
    json_t *live = json_object_get(o, "live");
    int index = -1, n = json_is_array(live) ? (int)json_array_size(live) : 0;
    for (int i = 0; i < n; i++)
        if (json_integer_value(json_array_get(live, (size_t)i)) == w->node.rank) index = i;
    json_t *joined = json_object_get(o, "joined");
    if (index < 0 || n < 1 || n > ordo__conf_max_workers(&w->conf)) {
        ORDO_WARN("dropped a MEMBERS message that does not list this worker");
    } else {
        atomic_store(&w->live_since, (long long)m->hdr.iter);
        atomic_store(&w->live_index, index);
        atomic_store(&w->n_live, n);
        if (json_is_integer(joined)) /* fault.max_workers: ordo-launch --add-worker */
            ORDO_INFO("worker %lld joins the run at iteration %lld: %d workers, this one is %d "
                      "of them", (long long)json_integer_value(joined), (long long)m->hdr.iter, n,
                      index);
        else
            ORDO_WARN("worker %lld left the run: %d workers go on, this one is %d of them",
                      (long long)json_integer_value(json_object_get(o, "left")), n, index);
    }
    json_decref(o);
    return 0;
}

int ordo__ps_finish(ordo__ps_t *w, const char *final_json)
{
    int rc = ordo__ps_stats_flush(w); /* the last records before DONE */
    if (rc == 0) rc = ordo__ps_send_ctl(w, ORDO_MSG_DONE, final_json ? final_json : "{}");
    if (rc) return rc;
    free(w->done_body); /* told to a new scheduler (ps_rejoin.c) */
    w->done_body = strdup(final_json ? final_json : "{}");
    /* the other workers may still be computing (rank 0 evaluating the model, a straggler's
     * last iterations): wait as long as the scheduler lives; its silence ends the wait through
     * the heartbeats' PEER_DEAD (docs/fault.md), and an hour bounds it regardless */
    int64_t deadline = ordo__clock_ns() + (int64_t)3600 * 1000000000;
    for (;;) {
        int64_t left = (deadline - ordo__clock_ns()) / 1000000;
        if (left <= 0)
            return ordo__error_set(ORDO_ERR_TIMEDOUT, "no SHUTDOWN from the scheduler in the hour "
                                                     "after DONE");
        if ((rc = ordo__node_sched_check(&w->node)) != 0) return rc;
        ordo__msg_t m;
        rc = ordo__transport_recv(w->node.tp, &m, ordo__node_sched_timeout(&w->node, (int)left));
        if (rc == ORDO_ERR_TIMEDOUT) continue;
        if (rc) return rc;
        rc = ordo__ps_handle(w, &m);
        ordo__msg_close(&m);
        if (rc == ORDO_ERR_CLOSED) return 0;
        if (rc) return rc;
    }
}
