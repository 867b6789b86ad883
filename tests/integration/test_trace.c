/* Integration test: Chrome traces. An mlp run (2 servers, 2 workers, 20 iterations) with
 * [output] trace = true must leave trace-worker-0.json and trace-worker-1.json in the run
 * folder, each valid trace-event JSON as Perfetto reads it: a traceEvents array of complete
 * ("X") events with name, cat, pid, tid, ts and dur, and metadata ("M") events naming the
 * process and every thread; no two complete events of one thread overlap. The events must
 * show the executor's contract: every forward and backward op, backward in reverse listed
 * order, one pull and one push per parameter per iteration, every pull of an iteration
 * requested before its first op starts, each gradient handed to the push engine between the
 * end of its op's backward and the start of the next, and the waits. An oracle read from
 * both traces (ordo__oracle_observe_trace, what `ordo-plan oracle` does) must hold, per op,
 * the least forward and backward duration of the traced events, and planning merged pushes
 * with it must use those times. */
#include "run_util.h"
#include "planner/merge.h"
#include "planner/oracle.h"
#include "core/nn.h"
#include "tests/unit/ordo_check.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ITERS 20

static const char conf_text[] = "[cluster]\nservers = 2\nworkers = 2\n"
                                "[model]\ntrainer = mlp\ncompute = cpu\nbatch = 64\n"
                                "iterations = 20\nseed = 3\n"
                                "[optimizer]\nlr = 0.01\nmomentum = 0.9\n"
                                "[output]\ntrace = true\nprogress_every = 10\n";

typedef struct {
    const char *name, *cat;
    int tid, iter;   /* iter: args.iter, or -1 */
    int64_t ts, end; /* ns */
} xev_t;

static int64_t ns_of(const json_t *v)
{
    return (int64_t)llround(json_number_value(v) * 1000.0);
}

static int by_ts(const void *a, const void *b)
{
    const xev_t *x = a, *y = b;
    return (x->ts > y->ts) - (x->ts < y->ts);
}

static int by_tid_ts(const void *a, const void *b)
{
    const xev_t *x = a, *y = b;
    if (x->tid != y->tid) return x->tid - y->tid;
    return by_ts(a, b);
}

/* checks one worker's trace; returns its pid */
static int check_trace(const char *path, const ordo__model_t *m, int rank)
{
    json_error_t err;
    json_t *root = json_load_file(path, 0, &err);
    ck_assert_msg(root != NULL, "%s: %s (line %d)", path, err.text, err.line);
    json_t *events = json_object_get(root, "traceEvents");
    ck_assert_msg(json_is_array(events) && json_array_size(events) > 0, "%s: no traceEvents", path);
    size_t n = json_array_size(events), i;
    xev_t *x = calloc(n, sizeof *x);
    int nx = 0, pid = -1, named[4096] = {0}, process_named = 0;
    json_t *e;
    json_array_foreach(events, i, e)
    {
        ck_assert_msg(json_is_object(e), "%s: event %zu is not an object", path, i);
        const char *ph = json_string_value(json_object_get(e, "ph"));
        const char *name = json_string_value(json_object_get(e, "name"));
        json_t *jpid = json_object_get(e, "pid"), *jtid = json_object_get(e, "tid");
        ck_assert_msg(ph && name && json_is_integer(jpid) && json_is_integer(jtid),
                      "%s: event %zu lacks ph, name, pid or tid", path, i);
        if (pid < 0) pid = (int)json_integer_value(jpid);
        ck_assert_int_eq(json_integer_value(jpid), pid);
        int tid = (int)json_integer_value(jtid);
        ck_assert(tid >= 0 && tid < 4096);
        if (!strcmp(ph, "M")) {
            json_t *args = json_object_get(e, "args");
            ck_assert_msg(json_is_object(args), "%s: metadata event %zu has no args", path, i);
            if (!strcmp(name, "thread_name")) {
                ck_assert(json_is_string(json_object_get(args, "name")));
                named[tid] = 1;
            } else if (!strcmp(name, "process_name")) {
                ck_assert(json_is_string(json_object_get(args, "name")));
                process_named = 1;
            } else {
                ck_assert_str_eq(name, "thread_sort_index");
                ck_assert(json_is_integer(json_object_get(args, "sort_index")));
            }
            continue;
        }
        ck_assert_msg(!strcmp(ph, "X"), "%s: event %zu has ph %s", path, i, ph);
        json_t *ts = json_object_get(e, "ts"), *dur = json_object_get(e, "dur");
        const char *cat = json_string_value(json_object_get(e, "cat"));
        ck_assert_msg(json_is_number(ts) && json_is_number(dur) && cat,
                      "%s: complete event %zu lacks ts, dur or cat", path, i);
        ck_assert(json_number_value(ts) >= 0 && json_number_value(dur) >= 0);
        json_t *it = json_object_get(json_object_get(e, "args"), "iter");
        x[nx++] = (xev_t){name,      cat,
                          tid,       json_is_integer(it) ? (int)json_integer_value(it) : -1,
                          ns_of(ts), ns_of(ts) + ns_of(dur)};
    }
    ck_assert(process_named);

    /* every thread is named, and no two complete events of one thread overlap */
    qsort(x, (size_t)nx, sizeof *x, by_tid_ts);
    for (int k = 0; k < nx; k++) {
        ck_assert_msg(named[x[k].tid], "%s: thread %d has no name", path, x[k].tid);
        if (k > 0 && x[k - 1].tid == x[k].tid)
            ck_assert_msg(x[k - 1].end <= x[k].ts, "%s: %s and %s overlap on thread %d", path,
                          x[k - 1].name, x[k].name, x[k].tid);
    }

    /* counts per category */
    int fwd = 0, bwd = 0, pulls = 0, pushes = 0, waits = 0, push_waits = 0;
    for (int k = 0; k < nx; k++) {
        fwd += !strcmp(x[k].cat, "forward");
        bwd += !strcmp(x[k].cat, "backward");
        pulls += !strcmp(x[k].cat, "pull");
        pushes += !strcmp(x[k].cat, "push");
        waits += !strcmp(x[k].cat, "wait");
        push_waits += !strcmp(x[k].name, "pushes to finish");
    }
    printf("%s: %d forward, %d backward, %d pulls, %d pushes, %d waits\n", path, fwd, bwd, pulls,
           pushes, waits);
    ck_assert_int_eq(fwd, ITERS * m->n_ops);
    ck_assert_int_eq(bwd, ITERS * m->n_ops);
    /* worker 0 also pulls the final model once */
    ck_assert_int_eq(pulls, (ITERS + (rank == 0)) * m->n_params);
    ck_assert_int_eq(pushes, ITERS * m->n_params);
    ck_assert_int_eq(push_waits, ITERS);
    ck_assert_int_gt(waits, push_waits); /* the first op of an iteration waits for its pulls */

    /* compute ops in time order: per iteration the ops as listed, then the reverse */
    qsort(x, (size_t)nx, sizeof *x, by_ts);
    xev_t **ops = calloc((size_t)nx, sizeof *ops);
    int nops = 0;
    for (int k = 0; k < nx; k++)
        if (!strcmp(x[k].cat, "forward") || !strcmp(x[k].cat, "backward")) ops[nops++] = &x[k];
    for (int t = 0; t < ITERS; t++) {
        xev_t **it = ops + t * 2 * m->n_ops;
        for (int o = 0; o < m->n_ops; o++) {
            ck_assert_str_eq(it[o]->cat, "forward");
            ck_assert_str_eq(it[o]->name, m->ops[o].name);
            ck_assert_str_eq(it[m->n_ops + o]->cat, "backward");
            ck_assert_str_eq(it[m->n_ops + o]->name, m->ops[m->n_ops - 1 - o].name);
        }
        for (int k = 0; k < nx; k++) {
            /* all pulls of iteration t were requested before its first op started */
            if (!strcmp(x[k].cat, "pull") && x[k].iter == t)
                ck_assert_msg(x[k].ts <= it[0]->ts, "pull %s of iteration %d requested late",
                              x[k].name, t);
            if (strcmp(x[k].cat, "push") || x[k].iter != t) continue;
            /* handed over as soon as its op's backward ended, before the next op began */
            int p = ordo__model_param_index(m, x[k].name);
            ck_assert(p >= 0);
            int b = m->n_ops - 1 - m->params[p].first_op; /* its op's place in backward */
            const xev_t *op = it[m->n_ops + b];
            ck_assert_msg(x[k].ts >= op->end, "push %s starts before %s's backward ends", x[k].name,
                          op->name);
            if (b + 1 < m->n_ops)
                ck_assert_msg(x[k].ts <= it[m->n_ops + b + 1]->ts,
                              "push %s was handed over after the next op started", x[k].name);
        }
    }
    free(ops);
    free(x);
    json_decref(root);
    return pid;
}

/* least_op_times folds the forward and backward events of the trace at path into fwd, bwd
 * (per op, in µs, running minimum; NAN = none yet), read here independently of the oracle */
static void least_op_times(const char *path, const ordo__model_t *m, double *fwd, double *bwd)
{
    json_error_t err;
    json_t *root = json_load_file(path, 0, &err);
    ck_assert_msg(root != NULL, "%s: %s", path, err.text);
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(root, "traceEvents"), i, e)
    {
        const char *cat = json_string_value(json_object_get(e, "cat"));
        if (!cat || (strcmp(cat, "forward") && strcmp(cat, "backward"))) continue;
        int op = ordo__model_op_index(m, json_string_value(json_object_get(e, "name")));
        ck_assert(op >= 0);
        double dur = json_number_value(json_object_get(e, "dur"));
        double *slot = !strcmp(cat, "forward") ? &fwd[op] : &bwd[op];
        if (isnan(*slot) || dur < *slot) *slot = dur;
    }
    json_decref(root);
}

/* the oracle of both traces holds every op's least times, and the merge planner plans with
 * them: its predicted time equals the timeline of those backward times */
static void check_oracle(it_run_t *run, const ordo__model_t *m)
{
    const char *paths[2] = {it_run_path(run, "trace-worker-0.json"),
                            it_run_path(run, "trace-worker-1.json")};
    double fwd[64], bwd[64];
    ck_assert_int_le(m->n_ops, 64);
    for (int i = 0; i < m->n_ops; i++)
        fwd[i] = bwd[i] = NAN;
    ordo__oracle_t *o = NULL;
    ORDO_CK_OK(ordo__oracle_new(m, &o));
    for (int r = 0; r < 2; r++) {
        char path[4096];
        snprintf(path, sizeof path, "%s", paths[r]); /* it_run_path's buffer is reused */
        int n = 0;
        ORDO_CK_OK(ordo__oracle_observe_trace(o, path, &n));
        ck_assert_int_ge(n, 2 * m->n_ops * ITERS); /* every op, both passes, every iteration */
        least_op_times(path, m, fwd, bwd);
    }
    ordo__model_t *timed = NULL;
    ORDO_CK_OK(ordo__oracle_timed_model(m, o, &timed));
    double sum_bwd = 0;
    for (int i = 0; i < m->n_ops; i++) {
        ck_assert_msg(!isnan(fwd[i]) && !isnan(bwd[i]), "op %s not traced", m->ops[i].name);
        ck_assert_msg(fabs(timed->ops[i].fwd_us - fwd[i]) < 1e-9 &&
                          fabs(timed->ops[i].bwd_us - bwd[i]) < 1e-9,
                      "op %s: oracle %.3f/%.3f us, least traced %.3f/%.3f us", m->ops[i].name,
                      timed->ops[i].fwd_us, timed->ops[i].bwd_us, fwd[i], bwd[i]);
        sum_bwd += bwd[i];
    }
    /* one message after backward (all), no start-up, no bytes: backward alone */
    ordo__merge_plan_t *p = NULL;
    ORDO_CK_OK(ordo__merge_plan_compute(timed, ORDO_MERGE_ALL, 0, 0, 0, 0, 0, NULL, &p));
    ck_assert_double_eq_tol(p->predicted_iter_s * 1e6, sum_bwd, 1e-6 * sum_bwd + 1e-6);
    ordo__merge_plan_destroy(&p);
    ordo__model_destroy(&timed);
    ordo__oracle_destroy(&o);
}

START_TEST(mlp_run_writes_valid_traces)
{
    ordo__model_t *m = NULL;
    ORDO_CK_OK(ordo__nn_model("mlp", 64, &m));
    it_run_t run;
    ck_assert_int_eq(it_run_launch(&run, conf_text, 240, NULL), 0);
    int pid0 = check_trace(it_run_path(&run, "trace-worker-0.json"), m, 0);
    int pid1 = check_trace(it_run_path(&run, "trace-worker-1.json"), m, 1);
    ck_assert_int_ne(pid0, pid1); /* one process track per worker when traces are merged */
    check_oracle(&run, m);
    ordo__model_destroy(&m);
    it_run_destroy(&run);
}
END_TEST

static Suite *trace_suite(void)
{
    Suite *s = suite_create("trace");
    TCase *t = tcase_create("worker");
    tcase_set_timeout(t, 280);
    tcase_add_test(t, mlp_run_writes_valid_traces);
    suite_add_tcase(s, t);
    return s;
}

ORDO_CK_MAIN(trace_suite)
