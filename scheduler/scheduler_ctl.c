/* scheduler_ctl: the scheduler's collectives beside the rendezvous: barriers, broadcasts
 * relayed from a root, merge groups planned from worker 0's calibration, and collective
 * re-plans (scheduler/replan.h). The object, the rendezvous and the loop are scheduler.c. */
#include "scheduler/scheduler.h"

#include <jansson.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/le.h"
#include "common/log.h"
#include "scheduler/replan.h"
#include "scheduler/runlog.h"
#include "scheduler/runplan.h"
#include "scheduler/runplan_merge.h"
#include "scheduler/scheduler_internal.h"

/* workers gather at barrier `id` (forward-only runs keep their iterations aligned this
 * way); when all live ones are in, each gets BARRIER_DONE (mb NULL: check again after a
 * worker left) */
void ordo__sched_on_barrier(sched_t *s, member_t *mb, int64_t id)
{
    char name[320];
    if (mb &&
        (mb->role != ORDO_ROLE_WORKER || id < 0 || (s->barrier_n > 0 && id != s->barrier_id))) {
        ORDO_WARN("dropped BARRIER %lld from %s (workers are gathering at %lld)", (long long)id,
                  ordo__sched_member_name(mb, name, sizeof name), (long long)s->barrier_id);
        return;
    }
    if (mb && mb->at_barrier && s->barrier_n > 0) return; /* told a restarted scheduler twice */
    s->barrier_id = id;
    if (mb) s->barrier_n++;
    if (mb) mb->at_barrier = true;
    if (s->barrier_n < s->n_live) return; /* fewer after a shrink (membership.c) */
    s->barrier_n = 0;
    for (int i = 0; i < s->n_members; i++) {
        s->members[i].at_barrier = false;
        if (s->members[i].role != ORDO_ROLE_WORKER || s->members[i].dead) continue;
        ordo__msg_t d;
        ordo__sched_msg_to(s, s->members[i].rid, s->members[i].rid_len, ORDO_MSG_BARRIER_DONE, &d);
        d.hdr.iter = id;
        ordo__transport_send(s->tp, &d);
    }
}

/* a broadcast (ordo_broadcast): every worker sends BCAST id with its size and the root, the
 * root its bytes too; once all are in, every worker but the root gets the bytes and the root
 * an empty BCAST. A worker whose id, size or root differs aborts the run, naming it. */
int ordo__sched_on_bcast(sched_t *s, member_t *mb, ordo__msg_t *m)
{
    char why[600], name[320];
    size_t len = 0, dlen = 0;
    const unsigned char *sz = ordo__msg_data(m, 0, &len);
    const void *data = ordo__msg_data(m, 1, &dlen);
    if (mb->role != ORDO_ROLE_WORKER) return 0;
    ordo__sched_member_name(mb, name, sizeof name);
    uint64_t bytes = sz && len == 8 ? ordo_get_le(sz, 8) : UINT64_MAX;
    int root = (int)m->hdr.key;
    why[0] = '\0';
    if (bytes == UINT64_MAX || m->hdr.iter < 1)
        snprintf(why, sizeof why, "malformed BCAST from %s", name);
    else if (root < 0 || root >= s->conf.workers)
        snprintf(why, sizeof why, "broadcast %lld: %s named root %d (there are %d workers)",
                 (long long)m->hdr.iter, name, root, s->conf.workers);
    else if (s->bcast_n > 0 && m->hdr.iter != s->bcast_id)
        snprintf(why, sizeof why,
                 "%s joined broadcast %lld while the others are at %lld (every "
                 "worker must call ordo_broadcast in the same order)",
                 name, (long long)m->hdr.iter, (long long)s->bcast_id);
    else if (s->bcast_n > 0 && (root != s->bcast_root || bytes != s->bcast_bytes))
        snprintf(why, sizeof why,
                 "broadcast %lld: worker %d passed %llu bytes from root %d, "
                 "worker %d %llu bytes from root %d",
                 (long long)m->hdr.iter, mb->rank, (unsigned long long)bytes, root, s->bcast_first,
                 (unsigned long long)s->bcast_bytes, s->bcast_root);
    else if (mb->rank == root && (!data || dlen != bytes))
        snprintf(why, sizeof why, "broadcast %lld: the root's BCAST has %zu bytes, not %llu",
                 (long long)m->hdr.iter, dlen, (unsigned long long)bytes);
    if (why[0]) return ordo__sched_abort_run(s, why);
    if (s->bcast_n++ == 0) {
        s->bcast_id = m->hdr.iter;
        s->bcast_root = root;
        s->bcast_bytes = bytes;
        s->bcast_first = mb->rank;
    }
    if (mb->rank == root) {
        ordo__msg_move(&s->bcast_data, m);
        s->have_bcast_data = true;
    }
    if (s->bcast_n < s->conf.workers) return 0;
    const void *bytes_of_root = ordo__msg_data(&s->bcast_data, 1, &dlen);
    for (int i = 0; i < s->n_members; i++) {
        member_t *w = &s->members[i];
        if (w->role != ORDO_ROLE_WORKER) continue;
        ordo__msg_t d;
        ordo__sched_msg_to(s, w->rid, w->rid_len, ORDO_MSG_BCAST, &d);
        d.hdr.iter = s->bcast_id;
        d.hdr.key = (uint32_t)s->bcast_root;
        d.hdr.dtype = ORDO_DTYPE_BYTES;
        if (w->rank != s->bcast_root && ordo__msg_add_copy(&d, bytes_of_root, dlen) != 0) {
            ordo__msg_close(&d);
            return ordo__sched_abort_run(s, "the scheduler ran out of memory relaying a broadcast");
        }
        ordo__transport_send(s->tp, &d);
    }
    ordo__msg_close(&s->bcast_data);
    s->have_bcast_data = false;
    s->bcast_n = 0;
    return 0;
}

/* worker 0's start-up calibration ([push] calibrate, client/calibrate.h): plan the merge
 * groups with its a, b, c (and the op times it measured, when it sends them and no [order]
 * oracle is set), send them to every worker and keep the figures in RUN/calibration.json.
 * A malformed calibration aborts the run with the reason (the workers wait for it). */
int ordo__sched_on_calibration(sched_t *s, ordo__msg_t *m)
{
    char why[700];
    size_t len = 0;
    const char *body = ordo__msg_data(m, 0, &len);
    json_error_t err;
    json_t *o = body ? json_loadb(body, len, 0, &err) : NULL,
           *cal = json_object_get(o, "calibration");
    json_t *ops = json_object_get(o, "op_times");
    ordo__model_t *timed = NULL;
    ordo__oracle_t *orc = NULL;
    double v[3];
    const char *names[3] = {"a_s", "b_s", "c_s"};
    why[0] = '\0';
    for (int i = 0; i < 3 && !why[0]; i++) {
        json_t *x = json_object_get(cal, names[i]);
        v[i] = json_is_number(x) ? json_number_value(x) : NAN;
        if (!isfinite(v[i]) || v[i] < 0)
            snprintf(why, sizeof why, "worker 0's calibration: $.calibration.%s: %s", names[i],
                     !o  ? (body ? err.text : "no body")
                     : x ? "not a finite number >= 0"
                         : "missing");
    }
    int rc = 0;
    if (!why[0] && ops && !s->conf.oracle[0]) { /* measured op times replace the estimates */
        char *text = json_dumps(ops, JSON_COMPACT);
        rc = text ? ordo__oracle_load_string(text, "worker 0's op times", s->model, &orc)
                  : ORDO_ERR_NOMEM;
        free(text);
        if (!rc) rc = ordo__oracle_timed_model(s->model, orc, &timed);
        if (!rc) ORDO_INFO("merge: op times measured by worker 0 at start-up");
    }
    if (!why[0] && !rc)
        rc = ordo__runplan_merge_calibrated(&s->conf, timed ? timed : s->model, v[0], v[1], v[2],
                                           s->plan);
    if (!why[0] && rc)
        snprintf(why, sizeof why, "cannot plan the merge groups from worker 0's calibration: %s",
                 ordo__error_text(rc));
    ordo__oracle_destroy(&orc);
    ordo__model_destroy(&timed);
    if (why[0]) {
        json_decref(o);
        return ordo__sched_abort_run(s, why);
    }
    s->calibrating = false;
    ordo__runplan_merge_take_file(s->plan, s->run_dir);
    json_t *merge = json_object_get(s->plan, "merge");
    json_t *msg = json_pack("{s:O}", "merge", merge);
    char *text = msg ? json_dumps(msg, JSON_COMPACT) : NULL;
    for (int i = 0; text && i < s->n_members; i++)
        if (s->members[i].role == ORDO_ROLE_WORKER)
            ordo__sched_reply(s, s->members[i].rid, s->members[i].rid_len, ORDO_MSG_PLAN, text);
    free(text);
    json_decref(msg);
    /* what was measured and what it planned, for the user (op_times is an ordo-oracle/1
     * object: saved as a file, it can be a later run's [order] oracle) */
    char path[sizeof s->run_dir + 32];
    snprintf(path, sizeof path, "%s/calibration.json", s->run_dir);
    json_object_set(cal, "groups", json_object_get(merge, "groups_per_worker"));
    json_object_set(cal, "predicted_iter_s", json_object_get(merge, "predicted_iter_s"));
    if (ops) json_object_set(cal, "op_times", ops);
    if (json_dump_file(cal, path, JSON_INDENT(1)) != 0) ORDO_WARN("cannot write %s", path);
    json_decref(o);
    return 0;
}

/* ---- collective re-plans (scheduler/replan.h) ---------------------------------------- */

void ordo__sched_replan_send(void *ctx, int role, const char *text)
{
    sched_t *s = ctx;
    for (int i = 0; i < s->n_members; i++)
        if (s->members[i].role == role)
            ordo__sched_reply(s, s->members[i].rid, s->members[i].rid_len, ORDO_MSG_REPLAN, text);
}

/* a REPLAN from a worker (its request) or a server (its acknowledgement) */
int ordo__sched_on_replan(sched_t *s, member_t *mb, ordo__msg_t *m)
{
    int done = ordo__replan_count(s->replan);
    int rc = ordo__replan_on_msg(s->replan, s->welcomed ? s->keys : NULL, mb->role, mb->rank, m);
    if (rc) return ordo__sched_abort_run(s, ordo__error_text(rc));
    if (ordo__replan_count(s->replan) != done) ordo__sched_step_check_replanned(s);
    return 0;
}
