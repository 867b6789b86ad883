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
#include "client/ps_internal.h"
#include "client/push.h"

/* ---- collective re-plans ------------------------------------------------------------ */

/* the scheduler's answer to this worker's REPLAN: the new plan or {"error", "code"} */
int ordo__ps_take_replan(ordo__ps_t *w, ordo_msg_t *m)
{
    size_t len = 0;
    const char *d = ordo_msg_data(m, 0, &len);
    char *text = d ? strndup(d, len) : NULL;
    if (!text) return ordo_error_set(ORDO_ERR_PROTO, "a REPLAN answer without a body");
    free(w->replan_reply);
    w->replan_reply = text;
    ordo__ps_add_event(w, ORDO__EV_REPLAN, -1, -1);
    return 0;
}

int ordo__ps_replan(ordo__ps_t *w, const char *names_json, const char *profile)
{
    ordo_msg_t m;
    ordo_msg_init(&m, ORDO_MSG_REPLAN);
    m.hdr.dtype = ORDO_DTYPE_JSON;
    int rc = 0;
    if (names_json && profile) {
        rc = ordo_msg_add_text(&m, names_json);
        if (!rc) rc = ordo_msg_add_text(&m, profile);
    }
    if (rc) {
        ordo_msg_close(&m);
        return rc;
    }
    rc = ordo_node_send_ctl(&w->node, &m);
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

int ordo__ps_replan_apply(ordo__ps_t *w, const char *plan_json, bool keep_path)
{
    ordo__plan_t *plan = NULL;
    const ordo__push_ops_t *ops;
    int rc = ordo__plan_parse(plan_json, plan_json ? strlen(plan_json) : 0, w->node.keys->n_keys,
                              w->node.n_servers, &plan);
    if (rc) return ordo_error_context(rc, "replan");
    ordo__push_ops_of_plan(plan, &ops);
    /* a path whose state is shared with other workers stays (a host group's memory, owners
     * and thread), and the next values may already be on their way (early pulls); only the
     * plan (the priorities the bound model requests by) and the credit change */
    bool keep = ops->kept_on_replan && w->path && w->path->ops == ops;
    if (keep_path && !keep) {
        rc = ordo_error_set(ORDO_ERR_PROTO, "replan: the new plan asks for push path %s; a "
                            "bound model cannot change its push path (%s)", ops->name,
                            w->path ? w->path->ops->name : "none");
        goto fail;
    }
    if (!keep && (w->outstanding || w->pq_n)) {
        rc = ordo_error_set(ORDO_ERR_INVAL, "replan: %d transfers still in flight",
                            w->outstanding + w->pq_n);
        goto fail;
    }
    /* the group's segments are named by the start-up plan's run id, which a new plan changes */
    if (keep) plan->intra = w->plan->intra;
    ordo__ps_intra_from_plan(w, plan);
    ordo__plan_destroy(&w->plan);
    w->plan = plan;
    if (keep) {
        ordo__ps_credit_from_plan(w);
        ORDO_INFO("replan: new plan applied (push path %s kept: its shared memory and owners "
                  "stay, the new priorities order its requests)", ops->name);
        return 0;
    }
    /* a merged path's groups come from the plan: the path follows it (nothing is in flight) */
    ordo__push_destroy(&w->path);
    if ((rc = ordo__push_new(ops, w, &w->path)) != 0)
        return ordo_error_context(rc, "replan: the push path of the new plan");
    ordo__ps_credit_from_plan(w); /* the re-plan's step model may have tuned it again */
    ORDO_INFO("replan: new plan applied (push path %s)", w->path->ops->name);
    return 0;
fail:
    ordo__plan_destroy(&plan);
    return rc;
}

char *ordo__ps_replan_take(ordo__ps_t *w)
{
    char *text = w->replan_reply;
    w->replan_reply = NULL;
    return text;
}

int ordo__ps_send_ctl(ordo__ps_t *w, int type, const char *text)
{
    ordo_msg_t m;
    ordo_msg_init(&m, type);
    m.hdr.dtype = ORDO_DTYPE_JSON;
    if (text) ordo_msg_add_text(&m, text);
    return ordo_node_send_ctl(&w->node, &m);
}

void ordo__ps_set_hook(ordo__ps_t *w, uint32_t key, ordo__ps_hook_fn fn, void *ctx)
{
    w->hook = fn;
    w->hook_ctx = ctx;
    w->hook_key = key;
}

int ordo__ps_send(ordo__ps_t *w, int server, ordo_msg_t *m)
{
    if (server < -1 || server >= w->node.n_servers) {
        ordo_msg_close(m);
        return ordo_error_set(ORDO_ERR_INVAL, "no server %d (the cluster has %d)", server,
                              w->node.n_servers);
    }
    if (server < 0) return ordo_node_send_ctl(&w->node, m);
    m->sock = w->server_sock[server];
    m->hdr.role = ORDO_ROLE_WORKER;
    m->hdr.rank = w->node.rank;
    m->hdr.req = ++w->req;
    return ordo_transport_send(w->node.tp, m);
}

int ordo__ps_report(ordo__ps_t *w, const char *json)
{
    size_t n = strlen(json);
    if ((w->conf.sync_mode == ORDO_SYNC_BSP && w->conf.backup == 0) || n < 2 || json[n - 1] != '}')
    {
        ordo__ps_keep_report(w, json);
        return ordo__ps_send_ctl(w, ORDO_MSG_STATS, json);
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
    int rc = ordo__ps_send_ctl(w, ORDO_MSG_STATS, text);
    free(text);
    return rc;
}

int ordo__ps_barrier(ordo__ps_t *w, int64_t id)
{
    ordo_msg_t m;
    ordo_msg_init(&m, ORDO_MSG_BARRIER);
    m.hdr.iter = id;
    int rc = ordo_node_send_ctl(&w->node, &m);
    if (rc == 0) w->outstanding++; /* until its ORDO__EV_BARRIER */
    if (rc == 0) {
        w->barrier_out = true; /* told to a new scheduler (ps_rejoin.c) */
        w->barrier_id = id;
    }
    return rc;
}

int ordo__ps_broadcast(ordo__ps_t *w, int64_t id, int root, void *buf, size_t bytes)
{
    if (w->bcast_id) return ordo_error_set(ORDO_ERR_INVAL, "a broadcast is in flight");
    if (bytes + (1 << 16) > ((size_t)w->conf.max_message_mb << 20))
        return ordo_error_set(ORDO_ERR_INVAL,
                              "a broadcast of %zu bytes: above net.max_message_mb "
                              "(%d MiB)",
                              bytes, w->conf.max_message_mb);
    ordo_msg_t m;
    ordo_msg_init(&m, ORDO_MSG_BCAST);
    m.hdr.iter = id;
    m.hdr.key = (uint32_t)root;
    m.hdr.dtype = ORDO_DTYPE_BYTES;
    unsigned char size[8];
    ordo_put_le(size, (uint64_t)bytes, 8);
    int rc = ordo_msg_add_copy(&m, size, sizeof size);
    if (!rc && root == w->node.rank) rc = ordo_msg_add_copy(&m, buf, bytes);
    if (!rc)
        rc = ordo_node_send_ctl(&w->node, &m);
    else
        ordo_msg_close(&m);
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
    int64_t deadline = ordo_clock_ns() + (int64_t)timeout_ms * 1000000;
    while (!rc) {
        int64_t left = (deadline - ordo_clock_ns()) / 1000000;
        if (left <= 0) {
            w->bcast_id = 0; /* a late answer is dropped */
            return ordo_error_set(ORDO_ERR_TIMEDOUT, "broadcast %lld from worker %d: not relayed "
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
