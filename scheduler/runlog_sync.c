/* runlog_sync: the sync section of the run summary and the time to a target accuracy. */
#include "scheduler/runlog_sync.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define BUCKETS 64

static json_t *extra_of(const ordo_iter_stats_t *s)
{
    char text[sizeof s->extra + 4];
    snprintf(text, sizeof text, "{%s}", s->extra);
    return json_loads(text, 0, NULL);
}

void ordo_runlog_sync_summary(json_t *root, const ordo_iter_stats_t *recs, int n,
                              const ordo_conf_t *conf)
{
    int64_t hist[BUCKETS] = {0}, late = 0, pulls = 0;
    int top = -1;
    bool any = false;
    int64_t t0 = INT64_MAX, hit_ns = -1;
    for (int i = 0; i < n; i++)
        if (recs[i].t_start_ns < t0) t0 = recs[i].t_start_ns;
    for (int i = 0; i < n; i++) {
        json_t *o = extra_of(&recs[i]);
        if (!o) continue;
        json_t *st = json_object_get(o, "stale"), *lp = json_object_get(o, "late_pushes");
        if (json_is_array(st)) {
            any = true;
            for (size_t j = 0; j < json_array_size(st) && j < BUCKETS; j++) {
                json_t *c = json_array_get(st, j);
                if (!json_is_integer(c) || json_integer_value(c) <= 0) continue;
                hist[j] += json_integer_value(c);
                pulls += json_integer_value(c);
                if ((int)j > top) top = (int)j;
            }
        }
        if (json_is_integer(lp)) late += json_integer_value(lp);
        json_t *acc = json_object_get(o, "test_accuracy");
        if (conf->target_accuracy > 0 && recs[i].worker == 0 && json_is_number(acc) &&
            json_number_value(acc) >= conf->target_accuracy &&
            (hit_ns < 0 || recs[i].t_end_ns < hit_ns))
            hit_ns = recs[i].t_end_ns;
        json_decref(o);
    }
    if (any) {
        json_t *sync = json_object();
        static const char *modes[] = {"bsp", "ssp", "asp"};
        json_object_set_new(sync, "mode", json_string(modes[conf->sync_mode]));
        json_t *h = json_array();
        double sum = 0;
        for (int j = 0; j <= top; j++) {
            json_array_append_new(h, json_integer(hist[j]));
            sum += (double)j * (double)hist[j];
        }
        json_object_set_new(sync, "staleness_hist", h);
        json_object_set_new(sync, "staleness_max", json_integer(top < 0 ? 0 : top));
        json_object_set_new(sync, "staleness_mean", pulls ? json_real(sum / (double)pulls)
                                                          : json_null());
        json_object_set_new(sync, "pulls", json_integer(pulls));
        json_object_set_new(sync, "late_pushes", json_integer(late));
        json_object_set_new(root, "sync", sync);
    }
    if (conf->target_accuracy > 0) {
        /* wall time, worker 0's evaluations included: leaving them out would favour the
         * modes whose other workers go on meanwhile (model.eval_samples keeps them cheap) */
        double secs = hit_ns >= 0 ? (double)(hit_ns - t0) / 1e9 : NAN;
        json_object_set_new(root, "target_accuracy", json_real(conf->target_accuracy));
        json_object_set_new(root, "time_to_target_s", isfinite(secs) ? json_real(secs)
                                                                      : json_null());
    }
}
