/* runplan_merge: merge groups for the run's plan. */
#include "scheduler/runplan_merge.h"
#include "common/error.h"
#include "common/log.h"
#include "planner/merge.h"
#include "planner/oracle.h"
#include "scheduler/runplan_inputs.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdbool.h>
#include <string.h>

/* plan_merge plans the run's pushes for model m, whose op times are the ones the workers
 * will see after dividing by scale. */
/* the link costs a merge plan is made with: a, b, c (seconds, seconds per byte) and the early
 * pulls' (pull, pull_msg; 0 without them) */
typedef struct {
    double a, b, c, pull, pull_msg;
} costs_t;

/* put_member writes merge plan p (planned with costs k at time scale) into plan's "merge"
 * member, with the ordo-merge/1 file the scheduler saves, and logs it */
static int put_member(const ordo__conf_t *conf, const ordo__model_t *m, ordo__merge_plan_t *p,
                      const costs_t *k, double scale, json_t *plan)
{
    double a = k->a, b = k->b, c = k->c, pull = k->pull, pull_msg = k->pull_msg;
    int messages = ordo__merge_plan_messages(p, m);
    json_t *groups = json_array(), *merge = NULL;
    for (int g = 0; groups && g < p->n_groups; g++) {
        json_t *grp = json_array();
        for (int i = p->group_start[g]; grp && i < p->group_start[g + 1]; i++)
            json_array_append_new(grp, json_integer(p->order[i]));
        json_array_append_new(groups, grp);
    }
    /* no message above partition_bytes, as for chunks: a message is handled only once it
     * has wholly arrived, so one huge group would serialize what pieces let overlap */
    merge =
        json_pack("{s:s,s:f,s:f,s:f,s:f,s:f,s:o,s:i,s:I,s:f}", "algo", conf->merge, "a", a, "b", b,
                  "c", c, "pull", pull, "pull_msg", pull_msg, "groups", groups, "groups_per_worker",
                  p->n_groups, "max_message_bytes", (json_int_t)conf->partition_bytes,
                  "predicted_iter_s", p->predicted_iter_s * scale);
    /* the plan as an ordo-merge/1 file for the run folder (the scheduler writes it and drops
     * this member before the plan goes out): the run's own costs and prediction, not the
     * profile-time ones planned with */
    p->a = a;
    p->b = b;
    p->c = c;
    p->pull = pull;
    p->pull_msg = pull_msg;
    p->predicted_iter_s *= scale;
    char *text = NULL;
    if (merge && ordo__merge_plan_to_json(p, m, &text) == 0)
        json_object_set_new(merge, ORDO_RUNPLAN_MERGE_FILE_MEMBER, json_string(text));
    free(text);
    if (!merge || json_object_set_new(plan, "merge", merge) != 0) return ORDO_ERR_NOMEM;
    char pulls[128] = "";
    if (pull > 0)
        snprintf(pulls, sizeof pulls,
                 ", early pulls %.4g ns/byte + %.4g us/value on each server's link", pull * 1e9,
                 pull_msg * 1e6);
    ORDO_INFO("merge: %s, %d groups for %d parameters, %d messages per worker (a = %.1f us, "
              "b = %.4g ns/byte, c = %.4g ns/byte%s); predicted backward + pushes%s %.3f ms",
              conf->merge, p->n_groups, m->n_params, messages, a * 1e6, b * 1e9, c * 1e9, pulls,
              pull > 0 ? " + pulls" : "", p->predicted_iter_s * 1e3);
    return 0;
}

static int plan_merge(const ordo__conf_t *conf, const ordo__model_t *m, double scale, json_t *plan);

int ordo__runplan_merge(const ordo__conf_t *conf, const ordo__model_t *m, const ordo__oracle_t *oracle,
                       json_t *plan)
{
    if (conf->push_mode != ORDO_PUSH_MERGED) return 0;
    if (conf->calibrate) {
        int64_t max = conf->partition_bytes < ORDO_RUNPLAN_CALIBRATE_MAX_BYTES
                          ? conf->partition_bytes
                          : ORDO_RUNPLAN_CALIBRATE_MAX_BYTES;
        json_t *cal =
            json_pack("{s:i,s:I}", "reps", conf->calibrate_reps, "max_bytes", (json_int_t)max);
        if (!cal || json_object_set_new(plan, "merge_calibrate", cal) != 0) return ORDO_ERR_NOMEM;
        ORDO_INFO("merge: %s, planned once the workers have calibrated a, b, c (messages of 1 KiB "
                  "to %lld bytes, %d repeats)",
                  conf->merge, (long long)max, conf->calibrate_reps);
        return 0;
    }
    /* emulated op times are the profile's times compute_scale; iteration times scale with
     * (op times, a, b) together, so planning the profile under (a, b) / scale gives the same
     * groups */
    double scale = conf->compute == ORDO_COMPUTE_EMULATE ? conf->compute_scale : 1.0;
    if (!conf->oracle[0]) return plan_merge(conf, m, scale, plan);
    /* measured op times ([order] oracle, e.g. ordo-plan oracle over an earlier run's traces)
     * replace the profile's; they are the run's own times, not scaled */
    ordo__model_t *timed = NULL;
    int rc = oracle ? ordo__oracle_timed_model(m, oracle, &timed)
                    : ordo__oracle_timed_model_file(conf->oracle, m, &timed);
    if (rc) return ordo__error_context(rc, "order.oracle");
    ORDO_INFO("merge: op times from the oracle %s", conf->oracle);
    rc = plan_merge(conf, timed, 1.0, plan);
    ordo__model_destroy(&timed);
    return rc;
}

int ordo__runplan_merge_calibrated(const ordo__conf_t *conf, const ordo__model_t *m, double a,
                                  double b, double c, json_t *plan)
{
    if (!(a >= 0 && b > 0 && c >= 0 && isfinite(a) && isfinite(b) && isfinite(c)))
        return ordo__error_set(ORDO_ERR_INVAL,
                              "calibrated a = %g s, b = %g s/byte, c = %g s/byte: "
                              "needs a >= 0, b > 0, c >= 0",
                              a, b, c);
    ordo__conf_t cc = *conf;
    cc.calibrate = false;
    cc.merge_a_us = a * 1e6;
    cc.merge_b_ns = b * 1e9;
    cc.merge_c_ns = c * 1e9;
    int rc = ordo__runplan_merge(&cc, m, NULL, plan);
    if (!rc) json_object_del(plan, "merge_calibrate");
    return rc;
}

static int plan_merge(const ordo__conf_t *conf, const ordo__model_t *m, double scale, json_t *plan)
{
    ordo__merge_algo_t algo = ORDO_MERGE_OPTIMAL;
    int64_t bucket = 0;
    const char *file = strncmp(conf->merge, "file:", 5) == 0 ? conf->merge + 5 : NULL;
    int rc = file ? 0 : ordo__merge_algo_parse(conf->merge, &algo, &bucket);
    if (rc) return ordo__error_set(rc, "push.merge: '%s' is not a merge algorithm", conf->merge);
    double bps = ordo__runplan_bps(conf);
    double a = conf->merge_a_us * 1e-6;
    double b = conf->merge_b_ns > 0 ? conf->merge_b_ns * 1e-9 : 8.0 / bps;
    double c = conf->merge_c_ns * 1e-9;
    /* early pulls: a group's next values leave the servers once it has been received, each
     * server sending its share to every worker over its link (the plan's third stage), each
     * value one message per worker: on an emulated link with a per-message cost each holds
     * the link that long too */
    bool early = ordo__conf_pull_mode(conf) == ORDO_PULL_EARLY;
    double pull = early ? (double)conf->workers * 8.0 / bps : 0;
    double pull_msg = early ? (double)conf->workers * conf->msg_us * 1e-6 : 0;
    if (scale < 1e-9) scale = 1e-9;
    /* the planner counts the messages the workers will send: a group's share of each
     * server, cut at partition_bytes (client/merge_buf.c) */
    const ordo__merge_layout_t layout = {conf->servers, conf->partition_bytes,
                                        ordo__conf_segment_bytes(conf)};
    ordo__merge_plan_t *p = NULL;
    if (file) {
        /* a plan made elsewhere (ordo-plan merge, a script): its groups, timed for this run */
        if ((rc = ordo__merge_plan_load_file(file, m, &p)) != 0) return rc;
        p->layout = layout;
        p->pull = pull / scale;
        p->pull_msg = pull_msg / scale;
        p->predicted_iter_s = ordo__merge_plan_iter_s(p, m, a / scale, b / scale, c / scale);
    } else if ((rc = ordo__merge_plan_compute3(m, algo, bucket, a / scale, b / scale, c / scale,
                                              pull / scale, pull_msg / scale, conf->merge_margin,
                                              &layout, &p)) != 0) {
        return rc;
    }
    /* a declared tensor the program transfers only now and then travels alone */
    int split = ordo__merge_plan_isolate(p, m);
    if (split < 0) {
        ordo__merge_plan_destroy(&p);
        return split;
    }
    if (split) {
        p->predicted_iter_s = ordo__merge_plan_iter_s(p, m, a / scale, b / scale, c / scale);
        ORDO_INFO("merge: %d group%s split so that occasional tensors travel alone", split,
                  split == 1 ? "" : "s");
    }
    const costs_t k = {a, b, c, pull, pull_msg};
    rc = put_member(conf, m, p, &k, scale, plan);
    ordo__merge_plan_destroy(&p);
    return rc;
}

void ordo__runplan_merge_take_file(json_t *plan, const char *dir)
{
    json_t *merge = json_object_get(plan, "merge");
    const char *text = json_string_value(json_object_get(merge, ORDO_RUNPLAN_MERGE_FILE_MEMBER));
    if (!text) return;
    char path[4200];
    snprintf(path, sizeof path, "%s/merge-plan.json", dir);
    FILE *f = fopen(path, "w");
    if (!f || fputs(text, f) < 0 || fclose(f) != 0) {
        ORDO_WARN("cannot write %s", path);
        if (f) fclose(f);
    } else {
        ORDO_INFO("merge: the plan is in %s (push.merge = file:%s replays it)", path, path);
    }
    json_object_del(merge, ORDO_RUNPLAN_MERGE_FILE_MEMBER);
}
