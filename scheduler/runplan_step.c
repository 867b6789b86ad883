/* runplan_step: slice size and push credit from the training step model, and the check of
 * that model against the run's first measured steps. */
#include "scheduler/runplan_step.h"

#include "common/error.h"
#include "common/log.h"
#include "planner/step.h"
#include "planner/step_search.h"
#include "scheduler/runplan_inputs.h"
#include "scheduler/runplan_intra.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>

/* a check within this factor of the prediction agrees with the model */
#define STEP_CHECK_AGREES 1.15

/* the step model's inputs for conf's run (the slice and credit: the conf's, maybe auto) */
ordo__step_opts_t ordo__runplan_step_opts(const ordo__conf_t *conf, const int *channel, int n_channels)
{
    /* a message costs the emulated per-message time and the push cost the merge planner uses */
    /* in host groups the servers see one pusher per group: its owners' sums */
    return (ordo__step_opts_t){.n_workers = ordo__runplan_pushers(conf),
                              .n_channels = n_channels,
                              .channel = channel,
                              .bandwidth_bps = ordo__runplan_bps(conf),
                              .latency_us = conf->latency_us,
                              .msg_us = conf->msg_us + conf->merge_a_us,
                              .slice_bytes = conf->segment_bytes,
                              .credit_bytes = conf->credit_bytes,
                              /* a host group's owner asks for the next value with its
                               * push (fused), whatever order.pull says */
                              .early_pulls = ordo__conf_pull_mode(conf) == ORDO_PULL_EARLY ||
                                             ordo__runplan_pushers(conf) < conf->workers,
                              /* the worker's pump wakes in whole milliseconds: a credit below
                               * 1 ms of link time leaves the link idle between pushes, which
                               * the model does not see */
                              .credit_floor_bytes = ordo__conf_credit_bytes(conf)};
}

int ordo__runplan_step(const ordo__conf_t *conf, const ordo__model_t *m, const ordo__oracle_t *oracle,
                      const int *channel, int n_channels, const int *priority, json_t *plan)
{
    if (!ordo__conf_step_tuned(conf)) return 0;
    ordo__oracle_times_t *t = NULL;
    int rc = ordo__oracle_times_new(m, ordo__runplan_bps(conf), conf->latency_us, oracle, &t);
    if (rc) return rc;
    ordo__step_opts_t o = ordo__runplan_step_opts(conf, channel, n_channels);
    ordo__step_result_t r;
    rc = ordo__step_tune_auto(m, t, priority, &o);
    if (!rc) rc = ordo__step_simulate(m, t, priority, &o, &r);
    ordo__oracle_times_destroy(&t);
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

int ordo__runplan_step_search(const ordo__conf_t *conf, const ordo__model_t *m,
                             const ordo__oracle_t *oracle, const int *channel, int n_channels,
                             int *priority, json_t *plan)
{
    if (!ordo__conf_step_tuned(conf) || conf->policy_kind != ORDO_POLICY_SEARCH) return 0;
    ordo__oracle_times_t *t = NULL;
    int rc = ordo__oracle_times_new(m, ordo__runplan_bps(conf), conf->latency_us, oracle, &t);
    ordo__step_opts_t o = ordo__runplan_step_opts(conf, channel, n_channels);
    /* the slice and credit searched with: the ones tuned for the planned order (the plan's
     * step member tunes them again for the order found) */
    if (!rc) rc = ordo__step_tune_auto(m, t, priority, &o);
    ordo__search_opts_t so;
    ordo__search_opts_default(&so);
    so.budget_ms = conf->search_budget_ms;
    so.seed = conf->seed ? conf->seed : 1;
    ordo__step_search_result_t res = {0};
    if (!rc) rc = ordo__step_search_plan(m, t, priority, &o, &so, &res);
    ordo__oracle_times_destroy(&t);
    if (rc) return ordo__error_context(rc, "order: the training search");
    const char *start = res.from_listed ? "listed" : "planned";
    ORDO_INFO("order: training search from the %s order (modelled step: planned %.3f ms, listed "
              "%.3f ms): %.3f ms after %ld modelled steps",
              start, res.planned_us / 1e3, res.listed_us / 1e3, res.step_us / 1e3, res.evals);
    json_t *js = json_pack("{s:s,s:f,s:f,s:f,s:I}", "start", start, "planned_ms",
                           res.planned_us / 1e3, "listed_ms", res.listed_us / 1e3, "found_ms",
                           res.step_us / 1e3, "evals", (json_int_t)res.evals);
    if (!js || json_object_set_new(plan, "step_search", js) != 0) return ORDO_ERR_NOMEM;
    return 0;
}

int64_t ordo__runplan_step_slice(const ordo__conf_t *conf, const json_t *plan)
{
    json_t *v = json_object_get(json_object_get(plan, "step"), "slice_bytes");
    return json_is_integer(v) ? (int64_t)json_integer_value(v) : ordo__conf_segment_bytes(conf);
}

/* fit fits the step model to the measured step and tunes the credit on it again */
static int fit(const ordo__conf_t *conf, const ordo__model_t *m, const ordo__keys_t *keys,
               const json_t *step, const json_t *prio_js, double step_ms, double compute_ms,
               ordo__step_fit_t *out)
{
    int n = m->n_params, rc = 0;
    if (!json_is_array(prio_js) || (int)json_array_size(prio_js) != n || keys->n_keys != n)
        return ordo__error_set(ORDO_ERR_INVAL, "step check: the plan has no priority per key");
    int *prio = malloc(sizeof *prio * (size_t)n), *channel = malloc(sizeof *channel * (size_t)n);
    ordo__oracle_t *oracle = NULL;
    ordo__oracle_times_t *t = NULL;
    if (!prio || !channel) rc = ordo__error_set(ORDO_ERR_NOMEM, "step check: out of memory");
    for (int p = 0; !rc && p < n; p++)
        prio[p] = (int)json_integer_value(json_array_get(prio_js, (size_t)p));
    if (!rc) ordo__runplan_channels(keys, channel);
    if (!rc) rc = ordo__runplan_oracle(conf, m, &oracle);
    if (!rc) rc = ordo__oracle_times_new(m, ordo__runplan_bps(conf), conf->latency_us, oracle, &t);
    if (!rc) {
        ordo__step_opts_t o = ordo__runplan_step_opts(conf, channel, keys->n_servers);
        o.slice_bytes = json_integer_value(json_object_get(step, "slice_bytes"));
        o.credit_bytes = json_integer_value(json_object_get(step, "credit_bytes"));
        rc = ordo__step_correct(m, t, prio, &o, step_ms * 1e3, compute_ms * 1e3, out);
    }
    ordo__oracle_times_destroy(&t);
    ordo__oracle_destroy(&oracle);
    free(prio);
    free(channel);
    return rc;
}

int ordo__runplan_step_check(const ordo__conf_t *conf, const ordo__model_t *m,
                            const ordo__keys_t *keys, json_t *plan, const ordo__step_window_t *w,
                            int64_t *new_credit)
{
    *new_credit = -1;
    json_t *step = json_object_get(plan, "step");
    double predicted = json_number_value(json_object_get(step, "predicted_step_ms"));
    if (!json_is_object(step) || !(predicted > 0) || !(w->step_ms > 0)) return 0;
    double ratio = w->step_ms / predicted;
    json_t *check = json_pack("{s:I,s:I,s:f,s:f,s:f}", "from_iter", (json_int_t)w->from_iter,
                              "to_iter", (json_int_t)w->to_iter, "measured_step_ms", w->step_ms,
                              "measured_compute_ms", w->compute_ms, "measured_over_predicted",
                              ratio);
    if (!check) return ORDO_ERR_NOMEM;
    bool agrees = ratio <= STEP_CHECK_AGREES && ratio >= 1 / STEP_CHECK_AGREES;
    json_object_set_new(check, "agrees", json_boolean(agrees));
    json_object_set_new(step, "check", check);
    if (agrees) {
        ORDO_INFO("order: measured step %.3f ms over iterations %lld-%lld agrees with the model's "
                  "%.3f ms",
                  w->step_ms, (long long)w->from_iter, (long long)w->to_iter - 1, predicted);
        return 0;
    }
    ordo__step_fit_t f;
    int rc = fit(conf, m, keys, step, json_object_get(plan, "priorities"), w->step_ms,
                 w->compute_ms, &f);
    if (rc) return rc;
    int64_t old = json_integer_value(json_object_get(step, "credit_bytes"));
    bool tuned = conf->credit_bytes == ORDO_CONF_AUTO_BYTES;
    json_object_set_new(check, "compute_factor", json_real(f.compute_factor));
    json_object_set_new(check, "msg_us", json_real(f.msg_us));
    json_object_set_new(check, "corrected_step_ms", json_real(f.r.step_us / 1e3));
    json_object_set_new(check, "credit_bytes", json_integer(tuned ? f.credit_bytes : old));
    ORDO_INFO("order: measured step %.3f ms over iterations %lld-%lld is %.2fx the model's %.3f "
              "ms; fitted: compute x%.2f, %.0f us a message; push credit %lld bytes%s",
              w->step_ms, (long long)w->from_iter, (long long)w->to_iter - 1, ratio, predicted,
              f.compute_factor, f.msg_us, (long long)(tuned ? f.credit_bytes : old),
              !tuned                   ? " (the conf's, kept)"
              : f.credit_bytes == old ? " (unchanged)"
                                      : " (changed)");
    if (tuned && f.credit_bytes != old) {
        json_object_set_new(check, "credit_bytes_planned", json_integer(old));
        json_object_set_new(step, "credit_bytes", json_integer(f.credit_bytes));
        *new_credit = f.credit_bytes;
    }
    return 0;
}
