/* api_coll: the calls of the public C API (include/ordo/ordo.h) that every worker makes
 * together or that mark the run: barriers, broadcasts, collective re-plans and the
 * iterations reported for the run's metrics (ordo_step). The handle and transfer
 * machinery they wait with is api.c's (client/api_internal.h). */
#include "ordo/ordo.h"

#include <jansson.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/error.h"
#include "client/api_internal.h"
#include "client/ps.h"
#include "client/push.h"

/* ---- barriers ------------------------------------------------------------------------- */

static bool barrier_done(const ordo_t *o, int64_t id)
{
    return o->barrier_done >= id;
}

int ordo_barrier(ordo_t *o, int timeout_ms)
{
    int rc = ordo__api_usable(o, "ordo_barrier");
    if (rc) return rc;
    if (o->bound) { /* the library's thread owns the connection */
        if (o->barrier_sent == o->barrier_done) o->barrier_sent++;
        rc = ordo__bound_barrier(o->bound, o->barrier_sent, timeout_ms);
        if (!rc) o->barrier_done = o->barrier_sent;
        return rc == ORDO_ERR_TIMEDOUT ? ordo__api_fail(rc)
               : rc                    ? ordo__api_cluster_failed(o, rc)
                                       : 0;
    }
    /* after an interrupted or timed-out wait, calling again waits for the same barrier */
    if (o->barrier_sent == o->barrier_done) {
        if ((rc = ordo__ps_barrier(o->w, o->barrier_sent + 1)) != 0)
            return ordo__api_cluster_failed(o, rc);
        o->barrier_sent++;
    }
    return ordo__api_wait_until(o, barrier_done, o->barrier_sent, timeout_ms);
}

/* ---- iterations ------------------------------------------------------------------------ */

int ordo_step(ordo_t *o, int samples, double loss)
{
    int rc = ordo__api_usable(o, "ordo_step");
    if (rc) return rc;
    if (samples < 0) return ordo__error_set(ORDO_ERR_INVAL, "ordo_step: samples is %d", samples);
    int64_t now = ordo__clock_ns(), bp, bl;
    ordo__ps_bytes(o->w, &bp, &bl);
    int64_t t0 = o->step_t0_ns, pushed = o->step_push_ns;
    if (pushed < t0 || pushed > now) pushed = now; /* no push in this iteration */
    double step_ms = (double)(now - t0) / 1e6, wait_ms = (double)o->step_wait_ns / 1e6;
    if (wait_ms > step_ms) wait_ms = step_ms;
    char js[640];
    int n = snprintf(js, sizeof js,
                     "{\"worker\":%d,\"iter\":%lld,\"step_ms\":%.4f,\"wait_ms\":%.4f,"
                     "\"compute_ms\":%.4f,\"bytes_push\":%lld,\"bytes_pull\":%lld,\"samples\":%d,"
                     "\"t_start_ns\":%lld,\"t_push_done_ns\":%lld,\"t_end_ns\":%lld",
                     o->rank, (long long)o->step_iter, step_ms, wait_ms, step_ms - wait_ms,
                     (long long)(bp - o->step_bytes_push), (long long)(bl - o->step_bytes_pull),
                     samples, (long long)t0, (long long)pushed, (long long)now);
    if (isfinite(loss)) n += snprintf(js + n, sizeof js - (size_t)n, ",\"loss\":%.6g", loss);
    snprintf(js + n, sizeof js - (size_t)n, "}");
    o->step_iter++;
    o->step_t0_ns = now;
    o->step_wait_ns = 0;
    o->step_bytes_push = bp;
    o->step_bytes_pull = bl;
    return ordo__api_report(o, js);
}

/* ---- broadcasts ----------------------------------------------------------------------- */

static bool bcast_done(const ordo_t *o, int64_t id)
{
    return o->bcast_done >= id;
}

int ordo_broadcast(ordo_t *o, void *buf, size_t bytes, int root, int timeout_ms)
{
    int rc = ordo__api_usable(o, "ordo_broadcast");
    if (rc) return rc;
    if (root < 0 || root >= o->size)
        return ordo__error_set(ORDO_ERR_INVAL, "ordo_broadcast: root %d out of range (%d workers)",
                              root, o->size);
    if (!buf && bytes) return ordo__error_set(ORDO_ERR_INVAL, "ordo_broadcast: NULL buffer");
    if (o->bound) { /* the library's thread owns the connection */
        if (o->bcast_sent == o->bcast_done) o->bcast_sent++;
        rc = ordo__bound_broadcast(o->bound, o->bcast_sent, root, buf, bytes, timeout_ms);
        if (!rc) o->bcast_done = o->bcast_sent;
        return rc == ORDO_ERR_TIMEDOUT ? ordo__api_fail(rc)
               : rc                    ? ordo__api_cluster_failed(o, rc)
                                       : 0;
    }
    /* after an interrupted or timed-out wait, calling again waits for the same broadcast */
    if (o->bcast_sent == o->bcast_done) {
        if ((rc = ordo__ps_broadcast(o->w, o->bcast_sent + 1, root, buf, bytes)) != 0)
            return ordo__api_cluster_failed(o, rc);
        o->bcast_sent++;
    }
    return ordo__api_wait_until(o, bcast_done, o->bcast_sent, timeout_ms);
}

/* ---- collective re-plans --------------------------------------------------------------- */

static bool replan_answered(const ordo_t *o, int64_t unused)
{
    return o->replan_answered;
}

/* replan_names sets *names to what worker 0's REPLAN carries beside the profile: its tensor
 * names (a JSON array); NULL on the others, or without a profile. */
static int replan_names(ordo_t *o, const char *profile_json, char **names)
{
    *names = NULL;
    if (o->rank != 0 || !profile_json) return 0;
    json_t *a = json_array();
    for (int i = 0; a && i < o->n_tensors; i++)
        json_array_append_new(a, json_string(o->t[i].name));
    *names = a ? json_dumps(a, JSON_COMPACT) : NULL;
    json_decref(a);
    return *names ? 0 : ordo__api_fail(ORDO_ERR_NOMEM);
}

/* replan_request sends this worker's REPLAN: worker 0's carries its tensor names and the
 * profile, the others' nothing. */
static int replan_request(ordo_t *o, const char *profile_json)
{
    char *names;
    int rc = replan_names(o, profile_json, &names);
    if (rc) return rc;
    rc = ordo__ps_replan(o->w, names, names ? profile_json : NULL);
    free(names);
    return rc ? ordo__api_cluster_failed(o, rc) : 0;
}

/* replan_bound runs the re-plan on the bound model's thread, which applies the plan; *text
 * is the scheduler's answer. Only between ordo_iter_end(t) and ordo_iter_begin(t + 1). */
static int replan_bound(ordo_t *o, const char *profile_json, int timeout_ms, char **text)
{
    *text = NULL;
    if (o->bound_in_iter)
        return ordo__error_set(ORDO_ERR_INVAL,
                              "ordo_replan: iteration %lld of the bound model is under way "
                              "(its transfers may be in flight): call it between "
                              "ordo_iter_end(t) and ordo_iter_begin(t + 1)",
                              (long long)o->bound_iter);
    /* the binding holds the push path: only a host group's is kept across a re-plan */
    if (!ordo__ps_push_path(o->w)->ops->kept_on_replan)
        return ordo__error_set(ORDO_ERR_NOTSUP,
                              "ordo_replan: a bound model re-plans only in host groups ([cluster] "
                              "local_size > 1 with [intra] backend); call ordo_unbind first");
    char *names, *profile = NULL;
    int rc = replan_names(o, profile_json, &names);
    if (rc) return rc;
    if (names && !(profile = strdup(profile_json))) {
        free(names);
        return ordo__api_fail(ORDO_ERR_NOMEM);
    }
    rc = ordo__bound_replan(o->bound, names, profile, timeout_ms, text);
    return rc == ORDO_ERR_TIMEDOUT || rc == ORDO_ERR_NOMEM ? ordo__api_fail(rc)
           : rc                                            ? ordo__api_cluster_failed(o, rc)
                                                           : 0;
}

int ordo_replan(ordo_t *o, const char *profile_json, int timeout_ms)
{
    int rc = ordo__api_usable(o, "ordo_replan");
    if (rc) return rc;
    char *text = NULL;
    if (o->bound) {
        if ((rc = replan_bound(o, profile_json, timeout_ms, &text)) != 0) return rc;
    } else {
        /* after a timed-out call, calling again waits for the same re-plan */
        if (!o->replan_sent) {
            if ((rc = ordo_wait_all(o, timeout_ms)) != 0) return rc;
            if ((rc = replan_request(o, profile_json)) != 0) return rc;
            o->replan_sent = true;
            o->replan_answered = false;
        }
        if ((rc = ordo__api_wait_until(o, replan_answered, 0, timeout_ms)) != 0) return rc;
        o->replan_sent = false;
        text = ordo__ps_replan_take(o->w);
    }
    json_t *ans = text ? json_loads(text, 0, NULL) : NULL;
    const char *err = json_string_value(json_object_get(ans, "error"));
    json_t *code = json_object_get(ans, "code");
    if (!ans) {
        rc = ordo__error_set(ORDO_ERR_PROTO, "ordo_replan: the scheduler's answer is not JSON");
    } else if (err) { /* refused: the cluster goes on with the plan it had */
        rc = json_is_integer(code) && json_integer_value(code) < 0 ? (int)json_integer_value(code)
                                                                   : ORDO_ERR_PROTO;
        rc = ordo__error_set(rc, "ordo_replan: %s", err);
    } else if (!o->bound && (rc = ordo__ps_replan_apply(o->w, text, false)) != 0) {
        rc = ordo__api_cluster_failed(o, rc); /* no push path: this worker cannot go on */
    } else { /* (the bound model's thread applied it) */
        ordo__api_set_priorities(o, ordo__ps_plan(o->w)); /* the plan just applied */
        if (o->bound) { /* its requests follow the new priorities from the next iteration */
            for (int i = 0; i < o->n_tensors; i++)
                o->priority[i] = o->t[i].priority;
            ordo__bound_reorder(o->bound);
        }
    }
    json_decref(ans);
    free(text);
    return rc;
}

int ordo_tensor_priority(const ordo_t *o, int tensor)
{
    if (!o) return ORDO_ERR_INVAL;
    int rc = ordo__api_check_tensor(o, tensor, "ordo_tensor_priority");
    return rc ? rc : o->t[tensor].priority;
}
