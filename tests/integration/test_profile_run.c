/* Integration test: an emulated profile run. ResNet-50 (conf/models/resnet50.json) with
 * 1 server and 2 workers for 20 iterations, compute = emulate. The run folder must hold one
 * metrics line per worker per iteration whose compute time is, on average, within 5% of the
 * profile's total forward + backward time (the emulated ops' own accuracy: compute_ms is
 * measured by the executor around each op), whose bytes are the model's, and a summary with
 * every documented field holding a sane value. A merged run at another compute_scale logs
 * the prediction its merge-plan.json holds (the experiments read that line). */
#include "run_util.h"
#include "core/model.h"
#include "tests/unit/ordo_check.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define W     2
#define ITERS 20

static void check_distribution(const json_t *sum, const char *key)
{
    json_t *d = json_object_get(sum, key);
    ck_assert_msg(json_is_object(d), "summary has no %s", key);
    double mean = it_num(d, "mean"), p50 = it_num(d, "p50"), p95 = it_num(d, "p95");
    ck_assert_msg(mean >= 0 && p50 >= 0 && p95 >= p50, "%s: mean %g p50 %g p95 %g", key, mean, p50,
                  p95);
}

/* load_profile loads conf/models/NAME.json (its path in path) and sums its ops' forward and
 * backward times, ms */
static ordo__model_t *load_profile(const char *name, char *path, size_t size, double *fwd_ms,
                                  double *bwd_ms)
{
    snprintf(path, size, "%s/conf/models/%s.json", ordo_ck_source_dir(), name);
    ordo__model_t *m = NULL;
    ORDO_CK_OK(ordo__model_load_file(path, &m));
    *fwd_ms = *bwd_ms = 0;
    for (int i = 0; i < m->n_ops; i++) {
        *fwd_ms += m->ops[i].fwd_us / 1e3;
        *bwd_ms += m->ops[i].bwd_us / 1e3;
    }
    return m;
}

START_TEST(resnet50_emulated_one_server_two_workers)
{
    char model_path[1024], conf[2048];
    double fwd_ms, bwd_ms;
    ordo__model_t *m = load_profile("resnet50", model_path, sizeof model_path, &fwd_ms, &bwd_ms);
    double profile_ms = fwd_ms + bwd_ms;
    int64_t bytes = ordo__model_total_bytes(m);
    snprintf(conf, sizeof conf,
             "[cluster]\nservers = 1\nworkers = %d\n"
             "[model]\ntrainer = profile\nfile = %s\ncompute = emulate\niterations = %d\n"
             "[output]\nprogress_every = 5\n",
             W, model_path, ITERS);
    it_run_t run;
    ck_assert_int_eq(it_run_launch(&run, conf, 240, NULL), 0);

    /* metrics.jsonl */
    json_t *metrics = it_run_metrics(&run);
    ck_assert_ptr_nonnull(metrics);
    ck_assert_int_eq(json_array_size(metrics), W * ITERS);
    int seen[W][ITERS] = {{0}};
    double compute_sum = 0, lo = INFINITY, hi = 0;
    size_t i;
    json_t *l;
    json_array_foreach(metrics, i, l)
    {
        int w = (int)it_num(l, "worker"), it = (int)it_num(l, "iter");
        ck_assert(w >= 0 && w < W && it >= 0 && it < ITERS);
        seen[w][it]++;
        double c = it_num(l, "compute_ms");
        compute_sum += c;
        lo = c < lo ? c : lo;
        hi = c > hi ? c : hi;
        ck_assert(it_num(l, "step_ms") >= c);
        ck_assert(it_num(l, "wait_ms") >= 0);
        ck_assert_int_eq((int64_t)it_num(l, "bytes_push"), bytes);
        ck_assert_int_eq((int64_t)it_num(l, "bytes_pull"), bytes);
        ck_assert(json_object_get(l, "loss") == NULL); /* not training */
    }
    for (int w = 0; w < W; w++)
        for (int it = 0; it < ITERS; it++)
            ck_assert_int_eq(seen[w][it], 1);
    double compute_mean = compute_sum / (W * ITERS);
    printf("resnet50 emulated: profile fwd+bwd %.3f ms, measured compute per iteration %.3f ms "
           "(%+.2f%%; single iterations %.1f to %.1f ms)\n",
           profile_ms, compute_mean, 100 * (compute_mean / profile_ms - 1), lo, hi);
    ck_assert_msg(fabs(compute_mean / profile_ms - 1) <= 0.05,
                  "compute %.3f ms per iteration, the profile says %.3f ms", compute_mean,
                  profile_ms);
    json_decref(metrics);

    /* summary.json */
    json_t *sum = it_run_summary(&run);
    ck_assert_ptr_nonnull(sum);
    json_t *c = json_object_get(sum, "conf");
    ck_assert(json_is_object(c));
    ck_assert_str_eq(json_string_value(json_object_get(json_object_get(c, "model"), "trainer")),
                     "profile");
    ck_assert_int_eq((int)it_num(sum, "workers"), W);
    ck_assert_int_eq((int)it_num(sum, "iterations"), ITERS);
    ck_assert_int_eq((int)it_num(sum, "warmup"), 2);
    check_distribution(sum, "step_ms");
    check_distribution(sum, "compute_ms");
    check_distribution(sum, "wait_ms");
    double summary_compute = it_num(json_object_get(sum, "compute_ms"), "mean");
    ck_assert_msg(fabs(summary_compute / profile_ms - 1) <= 0.05, "summary compute_ms %.3f",
                  summary_compute);
    /* BSP: a step holds its compute, so the throughput cannot beat compute alone */
    ck_assert(it_num(json_object_get(sum, "step_ms"), "mean") >= summary_compute);
    double tput = it_num(sum, "throughput_samples_per_s");
    ck_assert_msg(tput > 0 && tput <= W * m->batch / (0.95 * profile_ms / 1e3),
                  "throughput %g samples/s", tput);
    double strag = it_num(sum, "straggler_effect");
    ck_assert_msg(strag >= 0 && strag <= 1, "straggler effect %g", strag);
    ck_assert(json_is_null(json_object_get(sum, "efficiency_mean"))); /* forward_only only */
    ck_assert_int_eq((int64_t)it_num(sum, "bytes_per_iter"), 2 * bytes);
    ck_assert_ptr_null(json_object_get(sum, "test_accuracy"));
    ck_assert_ptr_null(json_object_get(sum, "final_loss"));
    printf("summary: %.1f samples/s, step mean %.1f ms (p50 %.1f, p95 %.1f), straggler effect "
           "%.3f\n",
           tput, it_num(json_object_get(sum, "step_ms"), "mean"),
           it_num(json_object_get(sum, "step_ms"), "p50"),
           it_num(json_object_get(sum, "step_ms"), "p95"), strag);
    json_decref(sum);

    /* a profile job's progress line has no loss or accuracy */
    ck_assert(it_run_log_has(&run, "iter 20/20  step "));
    ck_assert(!it_run_log_has(&run, "train acc"));
    it_run_destroy(&run);
    ordo__model_destroy(&m);
}
END_TEST

/* weight sharing: "w" is read by two ops; its gradient is pushed once per iteration, after
 * the backward of the first op reading it (a second push would be refused by the server) */
START_TEST(shared_weight_profile_pushes_once)
{
    static const char model[] =
        "{\"format\":\"ordo-model/1\",\"name\":\"shared\",\"batch\":8,\"dtype\":\"float32\","
        "\"params\":[{\"name\":\"w\",\"shape\":[64,64]},{\"name\":\"b\",\"shape\":[64]}],"
        "\"ops\":[{\"name\":\"a\",\"inputs\":[],\"params\":[\"w\"],\"fwd_us\":50,\"bwd_us\":100},"
        "{\"name\":\"c\",\"inputs\":[\"a\"],\"params\":[\"w\",\"b\"],\"fwd_us\":50,\"bwd_us\":100}]"
        "}";
    char dir[] = "/tmp/ordo-shared-XXXXXX", path[64], conf[512];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/shared.json", dir);
    FILE *f = fopen(path, "w");
    ck_assert_ptr_nonnull(f);
    fputs(model, f);
    fclose(f);
    snprintf(conf, sizeof conf,
             "[cluster]\nservers = 1\nworkers = 2\n"
             "[model]\ntrainer = profile\nfile = %s\ncompute = emulate\niterations = 5\n"
             "[output]\ntrace = true\n",
             path);
    it_run_t run;
    ck_assert_int_eq(it_run_launch(&run, conf, 120, NULL), 0);
    json_t *metrics = it_run_metrics(&run);
    ck_assert_ptr_nonnull(metrics);
    ck_assert_int_eq(json_array_size(metrics), 2 * 5);
    json_decref(metrics);
    /* one push per parameter per iteration, w's after op a's backward */
    json_t *trace = json_load_file(it_run_path(&run, "trace-worker-1.json"), 0, NULL);
    ck_assert_ptr_nonnull(trace);
    size_t i;
    json_t *e;
    int pushes_w = 0, pushes_b = 0;
    json_array_foreach(json_object_get(trace, "traceEvents"), i, e)
    {
        const char *cat = json_string_value(json_object_get(e, "cat"));
        const char *name = json_string_value(json_object_get(e, "name"));
        if (!cat || strcmp(cat, "push")) continue;
        pushes_w += !strcmp(name, "w");
        pushes_b += !strcmp(name, "b");
    }
    ck_assert_int_eq(pushes_w, 5);
    ck_assert_int_eq(pushes_b, 5);
    json_decref(trace);
    it_run_destroy(&run);
    ck_assert_int_eq(remove(path), 0);
    ck_assert_int_eq(rmdir(dir), 0);
}
END_TEST

/* emulated op times at compute_scale 4 (as merging.sh --dilate runs them): the scheduler's
 * plan line gives the iteration time the run's merge-plan.json predicts, in the run's own
 * time, which is at least the scaled backward compute */
START_TEST(scaled_merged_run_logs_its_plans_prediction)
{
    char model_path[1024], conf[2048];
    double forward_ms, backward_ms;
    ordo__model_t *m =
        load_profile("smallmany", model_path, sizeof model_path, &forward_ms, &backward_ms);
    ordo__model_destroy(&m);
    snprintf(conf, sizeof conf,
             "[cluster]\nservers = 1\nworkers = 2\n"
             "[model]\ntrainer = profile\nfile = %s\ncompute = emulate\ncompute_scale = 4\n"
             "iterations = 3\n"
             "[push]\nmode = merged\nmerge = optimal\nmerge_a_us = 40\nmerge_b_ns = 2\n"
             "[order]\npull = early\n"
             "[net]\nbandwidth = 4gbit\n"
             "[output]\nprogress_every = 0\nlog_level = info\n",
             model_path);
    it_run_t run;
    ck_assert_int_eq(it_run_launch(&run, conf, 120, NULL), 0);
    json_t *plan = json_load_file(it_run_path(&run, "merge-plan.json"), 0, NULL);
    ck_assert_ptr_nonnull(plan);
    double file_ms = it_num(plan, "predicted_iter_s") * 1e3;
    json_decref(plan);
    FILE *f = fopen(run.log, "r");
    ck_assert_ptr_nonnull(f);
    char line[2048];
    double log_ms = -1;
    while (fgets(line, sizeof line, f)) {
        const char *p = strstr(line, "predicted backward + pushes + pulls ");
        if (p) sscanf(p, "predicted backward + pushes + pulls %lf ms", &log_ms);
    }
    fclose(f);
    printf("compute_scale 4: plan line %.3f ms, merge-plan.json %.3f ms, backward compute "
           "%.3f ms\n",
           log_ms, file_ms, 4 * backward_ms);
    ck_assert_msg(fabs(log_ms - file_ms) < 0.01, "the plan line says %.3f ms, merge-plan.json %.3f",
                  log_ms, file_ms);
    ck_assert_msg(file_ms >= 4 * backward_ms, "predicted %.3f ms < the scaled backward %.3f ms",
                  file_ms, 4 * backward_ms);
    it_run_destroy(&run);
}
END_TEST

static Suite *profile_suite(void)
{
    Suite *s = suite_create("profile_run");
    TCase *t = tcase_create("resnet50");
    tcase_set_timeout(t, 280);
    tcase_add_test(t, resnet50_emulated_one_server_two_workers);
    tcase_add_test(t, shared_weight_profile_pushes_once);
    tcase_add_test(t, scaled_merged_run_logs_its_plans_prediction);
    suite_add_tcase(s, t);
    return s;
}

ORDO_CK_MAIN(profile_suite)
