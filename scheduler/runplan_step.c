/* runplan_step: slice size and push credit from the training step model. */
#include "scheduler/runplan_step.h"

#include "common/error.h"
#include "common/log.h"
#include "planner/step.h"
#include "scheduler/runplan.h"

int ordo_runplan_step(const ordo_conf_t *conf, const ordo_model_t *m, const ordo_oracle_t *oracle,
                      const int *channel, int n_channels, const int *priority, json_t *plan)
{
    if (!ordo_conf_step_tuned(conf)) return 0;
    ordo_oracle_times_t *t = NULL;
    double bps = ordo_runplan_bps(conf);
    int rc = ordo_oracle_times_new(m, bps, conf->latency_us, oracle, &t);
    if (rc) return rc;
    /* a message costs the emulated per-message time and the push cost the merge planner uses */
    ordo_step_opts_t o = {.n_workers = conf->workers,
                          .n_channels = n_channels,
                          .channel = channel,
                          .bandwidth_bps = bps,
                          .latency_us = conf->latency_us,
                          .msg_us = conf->msg_us + conf->merge_a_us,
                          .slice_bytes = conf->segment_bytes,
                          .credit_bytes = conf->credit_bytes,
                          .early_pulls = ordo_conf_pull_mode(conf) == ORDO_PULL_EARLY,
                          /* the worker's pump wakes in whole milliseconds: a credit below
                           * 1 ms of link time leaves the link idle between pushes, which the
                           * model does not see */
                          .credit_floor_bytes = ordo_conf_credit_bytes(conf)};
    ordo_step_result_t r;
    int64_t slice = 0, credit = 0;
    if (o.slice_bytes < 0 || o.credit_bytes < 0) {
        rc = ordo_step_tune(m, t, priority, &o, &slice, &credit, &r);
        if (!rc && o.slice_bytes < 0) o.slice_bytes = slice;
        if (!rc && o.credit_bytes < 0) o.credit_bytes = credit;
    }
    if (!rc) rc = ordo_step_simulate(m, t, priority, &o, &r);
    ordo_oracle_times_destroy(&t);
    if (rc) return rc;
    ORDO_INFO("order: slices of %lld bytes, push credit %lld bytes; modelled step %.3f ms, "
              "bound %.3f ms (compute %.3f, a worker's pushes %.3f, a server's answers %.3f)",
              (long long)o.slice_bytes, (long long)o.credit_bytes, r.step_us / 1e3,
              r.bound_us / 1e3, r.compute_us / 1e3, r.push_us / 1e3, r.answer_us / 1e3);
    json_t *js =
        json_pack("{s:I,s:I,s:f,s:f,s:f,s:f,s:f,s:i}", "slice_bytes", (json_int_t)o.slice_bytes,
                  "credit_bytes", (json_int_t)o.credit_bytes, "predicted_step_ms", r.step_us / 1e3,
                  "bound_ms", r.bound_us / 1e3, "compute_ms", r.compute_us / 1e3, "push_ms",
                  r.push_us / 1e3, "answer_ms", r.answer_us / 1e3, "messages", r.n_messages);
    if (!js || json_object_set_new(plan, "step", js) != 0) return ORDO_ERR_NOMEM;
    return 0;
}

int64_t ordo_runplan_step_slice(const ordo_conf_t *conf, const json_t *plan)
{
    json_t *v = json_object_get(json_object_get(plan, "step"), "slice_bytes");
    return json_is_integer(v) ? (int64_t)json_integer_value(v) : ordo_conf_segment_bytes(conf);
}
