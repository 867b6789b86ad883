/* ps_rejoin: a worker's side of a scheduler restart (fault.scheduler = restart, docs/fault.md,
 * common/node_rejoin.h). The worker keeps its newest reports, the barrier it waits at and
 * its DONE; when the scheduler dies it registers again with them ("iter": the newest
 * iteration reported, "barrier", "done" with the DONE's body), and once the new scheduler
 * welcomes it, sends the reports the run log does not hold ("reported" in the WELCOME), so
 * metrics.jsonl goes on without a hole. */
#include "client/ps.h"
#include "common/error.h"
#include "common/log.h"
#include "common/node_rejoin.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "client/ps_internal.h"

void ordo__ps_keep_report(ordo__ps_t *w, const char *json)
{
    if (w->conf.fault_scheduler != ORDO_SCHED_RESTART) return;
    json_t *o = json_loads(json, 0, NULL);
    json_t *it = json_object_get(o, "iter");
    int64_t iter = json_is_integer(it) ? json_integer_value(it) : -1;
    json_decref(o);
    char *copy = iter >= 0 ? strdup(json) : NULL;
    if (!copy) return;
    int slot = w->n_reports;
    if (slot < ORDO__PS_REPORTS) {
        w->n_reports++;
    } else { /* full: the oldest goes */
        slot = 0;
        for (int i = 1; i < ORDO__PS_REPORTS; i++)
            if (w->report_iter[i] < w->report_iter[slot]) slot = i;
        free(w->reports[slot]);
    }
    w->reports[slot] = copy;
    w->report_iter[slot] = iter;
}

int ordo__ps_sched_lost(ordo__ps_t *w, const ordo_msg_t *m)
{
    int64_t newest = -1;
    for (int i = 0; i < w->n_reports; i++)
        if (w->report_iter[i] > newest) newest = w->report_iter[i];
    json_t *st = json_pack("{s:I}", "iter", (json_int_t)newest);
    if (st && w->barrier_out) json_object_set_new(st, "barrier", json_integer(w->barrier_id));
    if (st && w->done_body) {
        json_t *final = json_loads(w->done_body, 0, NULL);
        json_object_set_new(st, "done", json_true());
        json_object_set_new(st, "final", final ? final : json_object());
    }
    int rc = ordo_node_sched_lost(&w->node, m->hdr.iter, st);
    if (rc) w->aborted = true;
    return rc;
}

int ordo__ps_rejoined(ordo__ps_t *w, ordo_msg_t *m)
{
    int64_t reported = -1;
    int rc = ordo_node_on_rejoined(&w->node, m, &reported);
    if (rc) {
        w->aborted = true;
        return rc;
    }
    /* the reports the new scheduler's run log lacks, oldest first */
    for (;;) {
        int next = -1;
        for (int i = 0; i < w->n_reports; i++)
            if (w->report_iter[i] > reported && (next < 0 || w->report_iter[i] < w->report_iter[next]))
                next = i;
        if (next < 0) break;
        ordo_msg_t s;
        ordo_msg_init(&s, ORDO_MSG_STATS);
        s.hdr.dtype = ORDO_DTYPE_JSON;
        ordo_msg_add_text(&s, w->reports[next]);
        if ((rc = ordo_node_send_ctl(&w->node, &s)) != 0) return rc;
        reported = w->report_iter[next];
    }
    return 0;
}

void ordo__ps_rejoin_free(ordo__ps_t *w)
{
    for (int i = 0; i < w->n_reports; i++)
        free(w->reports[i]);
    w->n_reports = 0;
    free(w->done_body);
    w->done_body = NULL;
}
