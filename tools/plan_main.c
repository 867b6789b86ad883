/* plan_main: the `ordo-plan` command line. Subcommands: order (a priority order as
 * ordo-order/1 JSON), simulate (makespan, U, L, E of an order), bounds (the best and worst
 * makespans found), merge (the merge planner, in merge_cli.c), cluster (a whole cluster's
 * step and recommended settings, in cluster_cli.c) and oracle (measured op times from
 * workers' traces). Everything but cluster's table prints JSON to stdout; errors go to
 * stderr as one line (exit 2 on usage, 1 otherwise). */
#include "common/conf.h"
#include "common/error.h"
#include "core/model.h"
#include "planner/oracle.h"
#include "planner/order.h"
#include "planner/search.h"
#include "planner/sim.h"
#include "planner/step.h"
#include "planner/step_search.h"
#include "core/nn.h"
#include "tools/cluster_cli.h"
#include "tools/merge_cli.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char usage[] =
    "usage: ordo-plan order    [OPTIONS] MODEL.json   priority order (ordo-order/1) to stdout\n"
    "       ordo-plan simulate (--order ORDER.json | --policy P) [OPTIONS] MODEL.json\n"
    "                                                 makespan, U, L, E of one iteration\n"
    "       ordo-plan bounds   [OPTIONS] MODEL.json   best and worst makespans found\n"
    "                                                 (exhaustive up to 8 recvs)\n"
    "       ordo-plan merge    ...                    merge plan (ordo-plan merge --help)\n"
    "       ordo-plan cluster  ...                    a cluster's step, PS against all-reduce,\n"
    "                                                 recommended settings (ordo-plan cluster\n"
    "                                                 --help)\n"
    "       ordo-plan oracle   ...                    measured op times from traces\n"
    "                                                 (ordo-plan oracle --help)\n"
    "options:\n"
    "  --policy tio|tao|search|layer|fifo|none  ordering policy (default tao)\n"
    "  --bandwidth RATE          link rate, tc style: 100mbit, 1gbit (default 1gbit; 0 =\n"
    "                            unlimited)\n"
    "  --latency-us US           per-transfer latency in microseconds (default 50)\n"
    "  --servers S               parameters spread over S servers, one channel each\n"
    "                            (largest first to the least-loaded; default 1)\n"
    "  --oracle FILE             measured times (ordo-oracle/1) replacing the profile's\n"
    "  --backward                simulate backward and gradient sends too\n"
    "  --budget-ms MS            search: wall-clock budget (default 2000)\n"
    "  --evals N                 search: stop after N simulations (deterministic)\n"
    "  --seed N                  search: random seed (default 1)\n"
    "  --compute-scale X         multiply the profile's op times by X (as [model] compute_scale)\n"
    "  --workers W               simulate: also model a whole training step with W workers\n"
    "                            (slices, credit, the servers' answers, the next forward) and\n"
    "                            print it with the bound, the fastest step any order gives\n"
    "  --slice-bytes N|auto      step: slice size (default auto: the tuned one)\n"
    "  --credit-bytes N|auto     step: a worker's push credit (default auto: the tuned one)\n"
    "  --pull early|start        step: when values are asked for (default early)\n"
    "  --msg-us US               step: link time each message costs beyond its bytes\n"
    "                            (default 20, [push] merge_a_us)\n"
    "  -v, --verbose             search figures to stderr\n"
    "  -h, --help, --version\n";

typedef struct {
    const char *cmd;
    const char *model_path;
    const char *order_path;
    const char *oracle_path;
    const char *policy_name;
    ordo__policy_t policy;
    double bandwidth_bps;
    double latency_us;
    int servers;
    int backward;
    int verbose;
    int budget_given;
    ordo__order_opts_t opts;
    double compute_scale;
    int workers;           /* > 0: model a training step too */
    int64_t slice_bytes;   /* -1: tuned */
    int64_t credit_bytes;  /* -1: tuned */
    int pull_start;
    double msg_us;
} args_t;

static int usage_error(const char *what, const char *arg)
{
    fprintf(stderr, "ordo-plan: %s%s%s (see ordo-plan --help)\n", what, arg ? ": " : "",
            arg ? arg : "");
    return 2;
}

static int parse_long(const char *s, long lo, long hi, long *out)
{
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (end == s || *end || errno || v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

static int parse_policy(const char *s, ordo__policy_t *out)
{
    static const struct {
        const char *name;
        ordo__policy_t p;
    } t[] = {{"tio", ORDO_POLICY_TIO},
             {"tao", ORDO_POLICY_TAO},
             {"search", ORDO_POLICY_SEARCH},
             {"layer", ORDO_POLICY_LAYER},
             {"fifo", ORDO_POLICY_FIFO},
             {"none", ORDO_POLICY_NONE}};
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (strcmp(s, t[i].name) == 0) {
            *out = t[i].p;
            return 0;
        }
    return -1;
}

/* parse_args fills a from argv[1..] (argv[0] is the subcommand); returns 0 or an exit code. */
static int parse_args(int argc, char **argv, args_t *a)
{
    for (int i = 1; i < argc; i++) {
        char *arg = argv[i], *val = NULL;
        if (strncmp(arg, "--", 2) == 0 && strchr(arg, '=')) {
            val = strchr(arg, '=') + 1;
            val[-1] = '\0';
        }
        int takes = !strcmp(arg, "--policy") || !strcmp(arg, "--bandwidth") ||
                    !strcmp(arg, "--latency-us") || !strcmp(arg, "--servers") ||
                    !strcmp(arg, "--oracle") || !strcmp(arg, "--order") ||
                    !strcmp(arg, "--budget-ms") || !strcmp(arg, "--evals") ||
                    !strcmp(arg, "--seed") || !strcmp(arg, "--compute-scale") ||
                    !strcmp(arg, "--workers") || !strcmp(arg, "--slice-bytes") ||
                    !strcmp(arg, "--credit-bytes") || !strcmp(arg, "--pull") ||
                    !strcmp(arg, "--msg-us");
        if (takes && !val) {
            if (i + 1 >= argc) return usage_error("missing value for", arg);
            val = argv[++i];
        } else if (!takes && val) {
            return usage_error("option takes no value", arg);
        }
        long v;
        if (!strcmp(arg, "--policy")) {
            if (parse_policy(val, &a->policy)) return usage_error("unknown policy", val);
            a->policy_name = val;
        } else if (!strcmp(arg, "--bandwidth")) {
            if (ordo__conf_parse_rate(val, &a->bandwidth_bps))
                return usage_error("not a rate (e.g. 100mbit, 1gbit)", val);
        } else if (!strcmp(arg, "--latency-us")) {
            char *end;
            errno = 0;
            a->latency_us = strtod(val, &end);
            if (end == val || *end || errno || !(a->latency_us >= 0) || a->latency_us > 1e9)
                return usage_error("latency must be microseconds >= 0", val);
        } else if (!strcmp(arg, "--servers")) {
            if (parse_long(val, 1, 4096, &v)) return usage_error("servers must be 1..4096", val);
            a->servers = (int)v;
        } else if (!strcmp(arg, "--oracle")) {
            a->oracle_path = val;
        } else if (!strcmp(arg, "--order")) {
            a->order_path = val;
        } else if (!strcmp(arg, "--budget-ms")) {
            if (parse_long(val, 0, 3600000, &v)) return usage_error("bad --budget-ms", val);
            a->opts.search_budget_ms = (int)v;
            a->budget_given = 1;
        } else if (!strcmp(arg, "--evals")) {
            if (parse_long(val, 0, 1000000000, &v)) return usage_error("bad --evals", val);
            a->opts.search_evals = v;
        } else if (!strcmp(arg, "--seed")) {
            if (parse_long(val, 0, 2147483647, &v)) return usage_error("bad --seed", val);
            a->opts.seed = (uint64_t)v;
        } else if (!strcmp(arg, "--compute-scale") || !strcmp(arg, "--msg-us")) {
            char *end;
            errno = 0;
            double d = strtod(val, &end);
            if (end == val || *end || errno || !(d >= 0) || d > 1e6)
                return usage_error("not a number >= 0", val);
            if (arg[2] == 'c') a->compute_scale = d;
            else a->msg_us = d;
        } else if (!strcmp(arg, "--workers")) {
            if (parse_long(val, 1, 4096, &v)) return usage_error("workers must be 1..4096", val);
            a->workers = (int)v;
        } else if (!strcmp(arg, "--slice-bytes") || !strcmp(arg, "--credit-bytes")) {
            int64_t b = -1;
            if (strcmp(val, "auto") && (ordo__conf_parse_bytes(val, &b) || b < 0))
                return usage_error("not a size in bytes or auto", val);
            if (arg[2] == 's') a->slice_bytes = b;
            else a->credit_bytes = b;
        } else if (!strcmp(arg, "--pull")) {
            if (strcmp(val, "early") && strcmp(val, "start"))
                return usage_error("--pull is early or start", val);
            a->pull_start = !strcmp(val, "start");
        } else if (!strcmp(arg, "--backward")) {
            a->backward = 1;
        } else if (!strcmp(arg, "-v") || !strcmp(arg, "--verbose")) {
            a->verbose = 1;
        } else if (arg[0] == '-' && arg[1] != '\0') {
            return usage_error("unknown option", arg);
        } else if (a->model_path) {
            return usage_error("more than one model file", arg);
        } else {
            a->model_path = arg;
        }
    }
    if (!a->model_path) return usage_error("missing MODEL.json", NULL);
    /* --evals alone caps the search without a clock, so the result is reproducible */
    if (a->opts.search_evals > 0 && !a->budget_given) a->opts.search_budget_ms = 0;
    return 0;
}

static int fail(int rc)
{
    fprintf(stderr, "ordo-plan: %s\n", ordo__error_text(rc));
    return 1;
}

/* The loaded inputs of one subcommand. */
typedef struct {
    ordo__model_t *m;
    ordo__oracle_t *oracle;
    ordo__oracle_times_t *times;
    int *channel;
    int *priority;
    ordo__sim_t *sim;
} inputs_t;

static void inputs_free(inputs_t *in)
{
    ordo__sim_destroy(&in->sim);
    ordo__oracle_times_destroy(&in->times);
    ordo__oracle_destroy(&in->oracle);
    ordo__model_destroy(&in->m);
    free(in->channel);
    free(in->priority);
}

static int load_inputs(const args_t *a, inputs_t *in)
{
    int rc = ordo__model_load_file(a->model_path, &in->m);
    if (rc) return rc;
    if (a->oracle_path && (rc = ordo__oracle_load_file(a->oracle_path, in->m, &in->oracle)))
        return rc;
    size_t np = (size_t)in->m->n_params;
    in->channel = calloc(np, sizeof *in->channel);
    in->priority = calloc(np, sizeof *in->priority);
    if (!in->channel || !in->priority) return ordo__error_set(ORDO_ERR_NOMEM, "out of memory");
    if ((rc = ordo__order_assign_channels(in->m, a->servers, in->channel))) return rc;
    if ((rc =
             ordo__oracle_times_new(in->m, a->bandwidth_bps, a->latency_us, in->oracle, &in->times)))
        return rc;
    for (int j = 0; a->compute_scale != 1 && j < in->times->n_ops; j++) {
        in->times->fwd_us[j] *= a->compute_scale;
        in->times->bwd_us[j] *= a->compute_scale;
    }
    return ordo__sim_new(in->m, in->times, in->channel, a->servers, a->backward, &in->sim);
}

/* plan runs policy p into in->priority; verbose reports the simulated result (and, for
 * search, TAO's for comparison) on stderr. */
static int plan(const args_t *a, inputs_t *in, ordo__policy_t p)
{
    ordo__order_opts_t o = a->opts;
    o.oracle = in->oracle;
    ordo__sim_result_t r;
    int rc;
    if (a->verbose && p == ORDO_POLICY_SEARCH) {
        rc = ordo__order_plan_ex(in->m, in->channel, a->servers, a->bandwidth_bps, a->latency_us,
                                ORDO_POLICY_TAO, &o, in->priority);
        if (rc == 0 && ordo__sim_run(in->sim, in->priority, &r) == 0)
            fprintf(stderr, "ordo-plan: %s: tao: simulated makespan %.3f us, E %.6f\n", in->m->name,
                    r.makespan_us, r.efficiency);
    }
    rc = ordo__order_plan_ex(in->m, in->channel, a->servers, a->bandwidth_bps, a->latency_us, p, &o,
                            in->priority);
    if (rc == 0 && a->verbose && ordo__sim_run(in->sim, in->priority, &r) == 0)
        fprintf(stderr, "ordo-plan: %s: %s: simulated makespan %.3f us, E %.6f\n", in->m->name,
                ordo__order_policy_name(p), r.makespan_us, r.efficiency);
    return rc;
}

/* put_str prints s as a JSON string. */
static void put_str(const char *s)
{
    json_t *j = json_string(s);
    char *txt = j ? json_dumps(j, JSON_ENCODE_ANY) : NULL;
    fputs(txt ? txt : "null", stdout);
    free(txt);
    json_decref(j);
}

static int cmd_order(const args_t *a)
{
    inputs_t in = {0};
    int rc = load_inputs(a, &in);
    if (!rc) rc = plan(a, &in, a->policy);
    if (!rc) rc = ordo__order_write(stdout, in.m, ordo__order_policy_name(a->policy), in.priority);
    inputs_free(&in);
    return rc ? fail(rc) : 0;
}

static void print_result(const char *key, const ordo__sim_result_t *r, const char *sep)
{
    printf("\"%s\": {\"makespan_us\": %.3f, \"E\": %.6f}%s", key, r->makespan_us, r->efficiency,
           sep);
}

static int cmd_simulate(const args_t *a)
{
    if (a->order_path && a->policy_name)
        return usage_error("give either --order or --policy, not both", NULL);
    inputs_t in = {0};
    int rc = load_inputs(a, &in);
    if (!rc && a->order_path) rc = ordo__order_read_file(a->order_path, in.m, in.priority);
    if (!rc && !a->order_path) rc = plan(a, &in, a->policy);
    ordo__sim_result_t r;
    if (!rc) rc = ordo__sim_run(in.sim, in.priority, &r);
    ordo__step_result_t st;
    int64_t slice = a->slice_bytes, credit = a->credit_bytes;
    if (!rc && a->workers > 0) {
        ordo__step_opts_t so = {.n_workers = a->workers, .n_channels = a->servers,
                               .channel = in.channel, .bandwidth_bps = a->bandwidth_bps,
                               .latency_us = a->latency_us, .msg_us = a->msg_us,
                               .slice_bytes = slice, .credit_bytes = credit,
                               .early_pulls = !a->pull_start,
                               /* as the scheduler: 1 ms of link time, at least 64 KiB */
                               .credit_floor_bytes =
                                   a->bandwidth_bps / 8e3 > 65536 ? (int64_t)(a->bandwidth_bps / 8e3)
                                                                  : 65536};
        rc = ordo__step_tune_auto(in.m, in.times, in.priority, &so);
        /* the search policy in training: the step model's search from the better of the
         * planned and the listed order (as the scheduler), then the slice and credit again */
        if (!rc && a->policy == ORDO_POLICY_SEARCH && !a->order_path) {
            ordo__search_opts_t sso;
            ordo__search_opts_default(&sso);
            sso.budget_ms = a->opts.search_budget_ms;
            sso.max_evals = a->opts.search_evals;
            sso.seed = a->opts.seed;
            ordo__step_search_result_t sr;
            rc = ordo__step_search_plan(in.m, in.times, in.priority, &so, &sso, &sr);
            if (!rc && a->verbose)
                fprintf(stderr,
                        "ordo-plan: %s: training search from the %s order (step %.3f us; planned "
                        "%.3f, listed %.3f): %.3f us after %ld modelled steps\n",
                        in.m->name, sr.from_listed ? "listed" : "planned", sr.start_us,
                        sr.planned_us, sr.listed_us, sr.step_us, sr.evals);
            if (!rc) { /* what was auto is tuned again for the order found */
                so.slice_bytes = slice;
                so.credit_bytes = credit;
                rc = ordo__step_tune_auto(in.m, in.times, in.priority, &so);
            }
        }
        slice = so.slice_bytes;
        credit = so.credit_bytes;
        if (!rc) rc = ordo__step_simulate(in.m, in.times, in.priority, &so, &st);
    }
    if (!rc) {
        printf("{\"model\": ");
        put_str(in.m->name);
        printf(", \"order\": ");
        put_str(a->order_path ? a->order_path : ordo__order_policy_name(a->policy));
        printf(", \"servers\": %d, \"backward\": %s, \"makespan_us\": %.3f, \"U_us\": %.3f, "
               "\"L_us\": %.3f, \"E\": %.6f",
               a->servers, a->backward ? "true" : "false", r.makespan_us, r.upper_us, r.lower_us,
               r.efficiency);
        if (a->workers > 0)
            printf(", \"step\": {\"workers\": %d, \"pull\": \"%s\", \"slice_bytes\": %lld, "
                   "\"credit_bytes\": %lld, \"messages\": %d, \"step_us\": %.3f, "
                   "\"bound_us\": %.3f, \"compute_us\": %.3f, \"push_us\": %.3f, "
                   "\"answer_us\": %.3f}",
                   a->workers, a->pull_start ? "start" : "early", (long long)slice,
                   (long long)credit, st.n_messages, st.step_us, st.bound_us, st.compute_us,
                   st.push_us, st.answer_us);
        printf("}\n");
    }
    inputs_free(&in);
    return rc ? fail(rc) : 0;
}

static int cmd_bounds(const args_t *a)
{
    inputs_t in = {0};
    int rc = load_inputs(a, &in);
    ordo__sim_result_t tio, tao;
    ordo__search_bounds_t b;
    if (!rc) rc = plan(a, &in, ORDO_POLICY_TIO);
    if (!rc) rc = ordo__sim_run(in.sim, in.priority, &tio);
    if (!rc) rc = plan(a, &in, ORDO_POLICY_TAO);
    if (!rc) rc = ordo__sim_run(in.sim, in.priority, &tao);
    if (!rc) {
        ordo__search_opts_t so;
        ordo__search_opts_default(&so);
        so.budget_ms = a->opts.search_budget_ms;
        so.max_evals = a->opts.search_evals;
        so.seed = a->opts.seed;
        rc = ordo__search_bounds(in.sim, in.priority, &so, &b, NULL, NULL);
    }
    if (!rc) {
        printf("{\"model\": ");
        put_str(in.m->name);
        printf(", \"recvs\": %d, \"servers\": %d, \"backward\": %s, \"method\": \"%s\", "
               "\"best_us\": %.3f, \"worst_us\": %.3f, \"U_us\": %.3f, \"L_us\": %.3f, ",
               in.m->n_params, a->servers, a->backward ? "true" : "false",
               b.exhaustive ? "exhaustive" : "search", b.best_us, b.worst_us, tao.upper_us,
               tao.lower_us);
        print_result("tio", &tio, ", ");
        print_result("tao", &tao, "}\n");
    }
    inputs_free(&in);
    return rc ? fail(rc) : 0;
}

static const char oracle_usage[] =
    "usage: ordo-plan oracle (MODEL.json | --trainer mlp|cnn [--batch N]) TRACE.json...\n"
    "\n"
    "Reads the compute ops of workers' Chrome traces (runs/RUN/trace-worker-R.json of a run\n"
    "with output.trace = true) and writes ordo-oracle/1 to stdout: each op's least forward\n"
    "and backward time over all iterations and traces. With [order] oracle = FILE a run's\n"
    "ordering and merge planners use these times instead of the profile's.\n"
    "\n"
    "  --trainer NAME     the built-in network the run trained (model.trainer) instead of a\n"
    "                     profile\n"
    "  --batch N          its model.batch (default 64)\n"
    "  -h, --help         this text\n";

/* cmd_oracle: ordo-plan oracle; argv[0] is "oracle". */
static int cmd_oracle(int argc, char **argv)
{
    const char *trainer = NULL;
    long batch = 64;
    int n_pos = 0;
    const char **pos = calloc((size_t)argc + 1, sizeof *pos);
    if (!pos) return fail(ordo__error_set(ORDO_ERR_NOMEM, "out of memory"));
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (!strcmp(arg, "-h") || !strcmp(arg, "--help")) {
            fputs(oracle_usage, stdout);
            free(pos);
            return 0;
        }
        int is_trainer = !strcmp(arg, "--trainer"), is_batch = !strcmp(arg, "--batch");
        if (is_trainer || is_batch) {
            if (i + 1 >= argc) {
                free(pos);
                return usage_error("missing value for", arg);
            }
            const char *val = argv[++i];
            if (is_trainer)
                trainer = val;
            else if (parse_long(val, 1, 1 << 20, &batch)) {
                free(pos);
                return usage_error("--batch must be 1..1048576", val);
            }
            continue;
        }
        if (arg[0] == '-' && arg[1]) {
            free(pos);
            return usage_error("unknown option", arg);
        }
        pos[n_pos++] = arg;
    }
    int first_trace = trainer ? 0 : 1;
    if (n_pos <= first_trace) {
        free(pos);
        return usage_error(trainer || n_pos ? "no TRACE.json given" : "missing MODEL.json", NULL);
    }
    ordo__model_t *m = NULL;
    ordo__oracle_t *o = NULL;
    int rc = trainer ? ordo__nn_model(trainer, (int)batch, &m) : ordo__model_load_file(pos[0], &m);
    if (!rc) rc = ordo__oracle_new(m, &o);
    for (int i = first_trace; !rc && i < n_pos; i++)
        rc = ordo__oracle_observe_trace(o, pos[i], NULL);
    if (!rc) rc = ordo__oracle_write(o, stdout);
    ordo__oracle_destroy(&o);
    ordo__model_destroy(&m);
    free(pos);
    if (rc) return fail(rc);
    return fflush(stdout) == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return usage_error("missing subcommand (order, simulate, bounds, merge, cluster, oracle)",
                           NULL);
    const char *cmd = argv[1];
    if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help")) {
        fputs(usage, stdout);
        return 0;
    }
    if (!strcmp(cmd, "--version")) {
        printf("ordo-plan %s\n", ORDO_VERSION);
        return 0;
    }
    if (!strcmp(cmd, "merge")) {
        return ordo__merge_cli(argc - 1, argv + 1);
    }
    if (!strcmp(cmd, "oracle")) return cmd_oracle(argc - 1, argv + 1);
    if (!strcmp(cmd, "cluster")) return ordo__cluster_cli(argc - 1, argv + 1);
    int (*run)(const args_t *) = NULL;
    if (!strcmp(cmd, "order"))
        run = cmd_order;
    else if (!strcmp(cmd, "simulate"))
        run = cmd_simulate;
    else if (!strcmp(cmd, "bounds"))
        run = cmd_bounds;
    else
        return usage_error("unknown subcommand", cmd);
    for (int i = 2; i < argc; i++)
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            fputs(usage, stdout);
            return 0;
        }
    args_t a = {.cmd = cmd,
                .policy = ORDO_POLICY_TAO,
                .bandwidth_bps = 1e9,
                .latency_us = 50,
                .servers = 1,
                .compute_scale = 1,
                .slice_bytes = -1,
                .credit_bytes = -1,
                .msg_us = 20};
    ordo__order_opts_default(&a.opts);
    int rc = parse_args(argc - 1, argv + 1, &a);
    if (rc) return rc;
    if (a.order_path && run != cmd_simulate) return usage_error("--order is for simulate", NULL);
    return run(&a);
}
