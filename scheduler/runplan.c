/* runplan: the run's plan from the conf, the model and the key map. */
#include "scheduler/runplan.h"
#include "scheduler/runplan_compress.h"
#include "common/error.h"
#include "common/log.h"
#include "planner/oracle.h"
#include "planner/order.h"
#include "scheduler/runplan_intra.h"
#include "scheduler/runplan_sparse.h"
#include "scheduler/runplan_merge.h"
#include "scheduler/runplan_step.h"
#include "planner/sim.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>



/* simulate one worker's forward pass under priority (NULL: listed order) */
static int simulate(const ordo__model_t *m, const int *channel, int n_channels, double bps,
                    double lat_us, const ordo__oracle_t *oracle, const int *priority,
                    ordo__sim_result_t *res)
{
    ordo__oracle_times_t *t = NULL;
    ordo__sim_t *sim = NULL;
    int *listed = NULL;
    int rc = ordo__oracle_times_new(m, bps, lat_us, oracle, &t);
    if (!rc) rc = ordo__sim_new(m, t, channel, n_channels, 0, &sim);
    if (!rc && !priority) {
        listed = malloc(sizeof *listed * (size_t)m->n_params);
        if (!listed) rc = ORDO_ERR_NOMEM;
        for (int p = 0; !rc && p < m->n_params; p++)
            listed[p] = p;
        priority = listed;
    }
    if (!rc) rc = ordo__sim_run(sim, priority, res);
    free(listed);
    ordo__sim_destroy(&sim);
    ordo__oracle_times_destroy(&t);
    return rc;
}

/* priorities computes prio[key] for an ordered policy: read from the order file (file:PATH),
 * or planned (tio, tao, search, layer) on the run's link, channels and oracle, the step
 * model's search joining plan */
static int priorities(const ordo__conf_t *conf, const ordo__model_t *m, const ordo__keys_t *keys,
                      const int *channel, const ordo__oracle_t *oracle, int *prio, json_t *plan)
{
    ordo__policy_t policy = (ordo__policy_t)conf->policy_kind;
    if (policy == ORDO_POLICY_FILE) {
        int rc = ordo__order_read_file(conf->policy + 5, m, prio);
        return rc ? ordo__error_context(rc, "order.policy") : 0;
    }
    ordo__order_opts_t opts;
    ordo__order_opts_default(&opts);
    opts.oracle = oracle;
    opts.search_budget_ms = conf->search_budget_ms;
    opts.seed = conf->seed;
    int rc = ordo__order_plan_ex(m, channel, keys->n_servers, ordo__runplan_bps(conf),
                                conf->latency_us, policy, &opts, prio);
    if (rc) return rc;
    return ordo__runplan_step_search(conf, m, oracle, channel, keys->n_servers, prio, plan);
}

/* simulated simulates the forward pass under prio (NULL: fifo, the listed order) and writes
 * the plan's "simulated" member into *out, logging it */
static int simulated(const ordo__conf_t *conf, const ordo__model_t *m, const ordo__keys_t *keys,
                     const int *channel, const ordo__oracle_t *oracle, const int *prio,
                     json_t **out)
{
    ordo__sim_result_t res;
    double bps = ordo__runplan_bps(conf);
    int rc = simulate(m, channel, keys->n_servers, bps, conf->latency_us, oracle, prio, &res);
    if (rc) return rc;
    *out = json_pack("{s:f,s:f,s:f,s:f,s:f}", "forward_us", res.makespan_us, "E",
                     isfinite(res.efficiency) ? res.efficiency : 1.0, "bandwidth_bps", bps,
                     "latency_us", conf->latency_us, "lower_us", res.lower_us);
    ORDO_INFO("order: policy %s, enforce %s; simulated forward makespan %.3f ms (lower "
              "bound %.3f ms, E %.4f) at %.3g gbit/s, %.0f us latency, %d channel%s",
              conf->policy,
              !prio                                                 ? "fifo"
              : ordo__conf_enforce_mode(conf) == ORDO_ENFORCE_GREEDY ? "greedy"
                                                                    : "strict",
              res.makespan_us / 1e3, res.lower_us / 1e3, res.efficiency, bps / 1e9,
              conf->latency_us, keys->n_servers, keys->n_servers == 1 ? "" : "s");
    return 0;
}

int ordo__runplan_make(const ordo__conf_t *conf, const ordo__model_t *m, const ordo__keys_t *keys,
                      json_t **out)
{
    int n = m->n_params, rc = 0;
    if (keys->n_keys != n)
        return ordo__error_set(ORDO_ERR_INVAL, "runplan: the key map has %d keys, the model %d",
                              keys->n_keys, n);
    ordo__policy_t policy = (ordo__policy_t)conf->policy_kind;
    int *channel = malloc(sizeof *channel * (size_t)n);
    int *prio = malloc(sizeof *prio * (size_t)n);
    ordo__oracle_t *oracle = NULL;
    json_t *plan = json_object(), *sim_js = json_null();
    if (!channel || !prio || !plan) {
        rc = ORDO_ERR_NOMEM;
        goto fail;
    }
    ordo__runplan_channels(keys, channel);
    bool ordered = policy == ORDO_POLICY_TIO || policy == ORDO_POLICY_TAO ||
                   policy == ORDO_POLICY_SEARCH || policy == ORDO_POLICY_FILE ||
                   policy == ORDO_POLICY_LAYER;
    if (ordered && (rc = ordo__runplan_oracle(conf, m, &oracle)) != 0) goto fail;
    if (ordered && (rc = priorities(conf, m, keys, channel, oracle, prio, plan)) != 0) goto fail;
    if (ordered && conf->bandwidth_bps <= 0 && conf->plan_bandwidth_bps <= 0)
        ORDO_INFO("order: no [net] bandwidth or [order] plan_bandwidth set; planning assumes "
                  "%.0f gbit/s",
                  ORDO_RUNPLAN_DEFAULT_BPS / 1e9);
    if (policy != ORDO_POLICY_NONE) {
        json_decref(sim_js);
        sim_js = NULL;
        if ((rc = simulated(conf, m, keys, channel, oracle, ordered ? prio : NULL, &sim_js)) != 0)
            goto fail;
    } else {
        ORDO_INFO("order: policy none: every worker requests its pulls in a seeded random order "
                  "that changes every iteration; servers release in arrival order");
    }
    if ((rc = ordo__runplan_sparse(conf, m, plan)) != 0) goto fail;
    json_t *names = json_array();
    for (int p = 0; p < n; p++)
        json_array_append_new(names, json_string(m->params[p].name));
    json_t *pr = json_null();
    if (ordered) {
        json_decref(pr);
        pr = json_array();
        for (int p = 0; p < n; p++)
            json_array_append_new(pr, json_integer(prio[p]));
    }
    json_object_set_new(plan, "policy",
                        json_string(policy == ORDO_POLICY_FILE ? "file" : conf->policy));
    json_object_set_new(plan, "priorities", pr);
    json_object_set_new(plan, "params", names);
    json_object_set(plan, "simulated", sim_js);
    /* the oracle file, when the ordering planners read it already, is not read twice */
    if ((rc = ordo__runplan_merge(conf, m, oracle, plan)) != 0) goto fail;
    if ((rc = ordo__runplan_intra(conf, plan)) != 0) goto fail;
    if (ordered &&
        (rc = ordo__runplan_step(conf, m, oracle, channel, keys->n_servers, prio, plan)) != 0)
        goto fail;
    if ((rc = ordo__runplan_compress(conf, m, oracle, channel, keys->n_servers,
                                    ordered ? prio : NULL, plan)) != 0)
        goto fail;
    *out = plan;
    plan = NULL;
fail:
    json_decref(sim_js);
    json_decref(plan);
    ordo__oracle_destroy(&oracle);
    free(prio);
    free(channel);
    return rc;
}
