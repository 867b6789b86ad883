/* ps_rejoin: a worker's side of a scheduler restart (fault.scheduler = restart, docs/fault.md,
 * common/node_rejoin.h). The worker keeps its reports of the last moments, the barrier it waits at and
 * its DONE; when the scheduler dies it registers again with them ("iter": the newest
 * iteration reported, "barrier", "done" with the DONE's body), and once the new scheduler
 * welcomes it, sends again the reports after the run log's unbroken part ("reported" in
 * the WELCOME; the ones in flight when the old scheduler died were lost with it), so
 * metrics.jsonl goes on without a hole. */
#include "client/ps.h"
#include "common/clock.h"
#include "common/error.h"
#include "common/log.h"
#include "common/node_rejoin.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "client/ps_internal.h"

/* reports are kept while the scheduler is lost, and otherwise for this long: more than the
 * time a death takes to be found, so the reports in flight when it died are among them */
static int64_t keep_ns(const ordo__ps_t *w)
{
    return 4 * ((int64_t)ordo__conf_timeout_max_ms(&w->conf) + 2 * w->conf.heartbeat_ms) * 1000000;
}

/* the most reports kept (a bound on memory for very short iterations) */
#define MAX_REPORTS 100000

void ordo__ps_keep_report(ordo__ps_t *w, const char *json)
{
    if (w->conf.fault_scheduler != ORDO_SCHED_RESTART) return;
    json_t *o = json_loads(json, 0, NULL);
    json_t *it = json_object_get(o, "iter");
    int64_t iter = json_is_integer(it) ? json_integer_value(it) : -1;
    json_decref(o);
    if (iter < 0) return;
    int64_t now = ordo__clock_ns();
    int drop = 0; /* the old ones go, unless a new scheduler is awaited */
    while (!ordo__node_sched_waiting(&w->node) && drop < w->n_reports &&
           now - w->reports[drop].t_ns > keep_ns(w))
        drop++;
    if (drop == 0 && w->n_reports == MAX_REPORTS) drop = 1;
    for (int i = 0; i < drop; i++)
        free(w->reports[i].text);
    memmove(w->reports, w->reports + drop, sizeof *w->reports * (size_t)(w->n_reports - drop));
    w->n_reports -= drop;
    if (w->n_reports == w->cap_reports) {
        int cap = w->cap_reports ? 2 * w->cap_reports : 64;
        void *p = realloc(w->reports, sizeof *w->reports * (size_t)cap);
        if (!p) return;
        w->reports = p;
        w->cap_reports = cap;
    }
    char *copy = strdup(json);
    if (!copy) return;
    w->reports[w->n_reports++] = (struct ordo__ps_report){.iter = iter, .t_ns = now, .text = copy};
}

int ordo__ps_sched_lost(ordo__ps_t *w, const ordo__msg_t *m)
{
    int64_t newest = w->n_reports ? w->reports[w->n_reports - 1].iter : -1;
    json_t *st = json_pack("{s:I}", "iter", (json_int_t)newest);
    if (st && w->barrier_out) json_object_set_new(st, "barrier", json_integer(w->barrier_id));
    json_t *batches = ordo__ps_batch_state(w); /* the batch service's state of this worker */
    if (st && batches) json_object_set_new(st, "batches", batches);
    else json_decref(batches);
    if (st && w->done_body) {
        json_t *final = json_loads(w->done_body, 0, NULL);
        json_object_set_new(st, "done", json_true());
        json_object_set_new(st, "final", final ? final : json_object());
    }
    int rc = ordo__node_sched_lost(&w->node, m->hdr.iter, st);
    if (rc) w->aborted = true;
    return rc;
}

int ordo__ps_rejoined(ordo__ps_t *w, ordo__msg_t *m)
{
    int64_t reported = -1;
    int rc = ordo__node_on_rejoined(&w->node, m, &reported);
    if (rc) {
        w->aborted = true;
        return rc;
    }
    /* the reports after the run log's unbroken part, oldest first: the scheduler leaves out
     * those it holds. The records held for the next STATS message are among them. */
    ordo__ps_stats_drop(w);
    for (int i = 0; i < w->n_reports; i++) {
        if (w->reports[i].iter <= reported) continue;
        ordo__msg_t s;
        ordo__msg_init(&s, ORDO_MSG_STATS);
        s.hdr.dtype = ORDO_DTYPE_JSON;
        ordo__msg_add_text(&s, w->reports[i].text);
        if ((rc = ordo__node_send_ctl(&w->node, &s)) != 0) return rc;
    }
    return ordo__ps_batch_resend(w); /* the old scheduler may have died with it */
}

void ordo__ps_rejoin_free(ordo__ps_t *w)
{
    for (int i = 0; i < w->n_reports; i++)
        free(w->reports[i].text);
    free(w->reports);
    w->reports = NULL;
    w->n_reports = w->cap_reports = 0;
    free(w->done_body);
    w->done_body = NULL;
}
