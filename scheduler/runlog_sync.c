/* runlog_sync: the sync section of the run summary and the time to a target accuracy. */
#include "scheduler/runlog_sync.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

void ordo__runlog_sync_init(ordo__runlog_sync_t *y)
{
    memset(y, 0, sizeof *y);
    y->top = -1;
    y->t0 = INT64_MAX;
    y->hit_ns = -1;
}

void ordo__runlog_sync_add(ordo__runlog_sync_t *y, const ordo__iter_stats_t *s,
                          const ordo__conf_t *conf)
{
    if (s->t_start_ns < y->t0) y->t0 = s->t_start_ns;
    /* most records carry none of these: spare them the parse */
    if (!strstr(s->extra, "\"stale\"") && !strstr(s->extra, "\"late_pushes\"") &&
        !strstr(s->extra, "\"test_accuracy\""))
        return;
    char text[sizeof s->extra + 4];
    snprintf(text, sizeof text, "{%s}", s->extra);
    json_t *o = json_loads(text, 0, NULL);
    if (!o) return;
    json_t *st = json_object_get(o, "stale"), *lp = json_object_get(o, "late_pushes");
    if (json_is_array(st)) {
        y->any = true;
        for (size_t j = 0; j < json_array_size(st) && j < ORDO_RUNLOG_SYNC_BUCKETS; j++) {
            json_t *c = json_array_get(st, j);
            if (!json_is_integer(c) || json_integer_value(c) <= 0) continue;
            y->hist[j] += json_integer_value(c);
            y->pulls += json_integer_value(c);
            if ((int)j > y->top) y->top = (int)j;
        }
    }
    if (json_is_integer(lp)) y->late += json_integer_value(lp);
    json_t *acc = json_object_get(o, "test_accuracy");
    if (conf->target_accuracy > 0 && s->worker == 0 && json_is_number(acc) &&
        json_number_value(acc) >= conf->target_accuracy &&
        (y->hit_ns < 0 || s->t_end_ns < y->hit_ns))
        y->hit_ns = s->t_end_ns;
    json_decref(o);
}

void ordo__runlog_sync_write(json_t *root, const ordo__runlog_sync_t *y, const ordo__conf_t *conf)
{
    if (y->any) {
        json_t *sync = json_object();
        static const char *modes[] = {"bsp", "ssp", "asp"};
        json_object_set_new(sync, "mode", json_string(modes[conf->sync_mode]));
        json_t *h = json_array();
        double sum = 0;
        for (int j = 0; j <= y->top; j++) {
            json_array_append_new(h, json_integer(y->hist[j]));
            sum += (double)j * (double)y->hist[j];
        }
        json_object_set_new(sync, "staleness_hist", h);
        json_object_set_new(sync, "staleness_max", json_integer(y->top < 0 ? 0 : y->top));
        json_object_set_new(sync, "staleness_mean",
                            y->pulls ? json_real(sum / (double)y->pulls) : json_null());
        json_object_set_new(sync, "pulls", json_integer(y->pulls));
        json_object_set_new(sync, "late_pushes", json_integer(y->late));
        json_object_set_new(root, "sync", sync);
    }
    if (conf->target_accuracy > 0) {
        /* wall time, worker 0's evaluations included: leaving them out would favour the
         * modes whose other workers go on meanwhile (model.eval_samples keeps them cheap) */
        double secs = y->hit_ns >= 0 && y->t0 != INT64_MAX ? (double)(y->hit_ns - y->t0) / 1e9
                                                           : NAN;
        json_object_set_new(root, "target_accuracy", json_real(conf->target_accuracy));
        json_object_set_new(root, "time_to_target_s",
                            isfinite(secs) ? json_real(secs) : json_null());
    }
}
