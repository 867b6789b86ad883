/* Integration test: merged pushes change timing, never values. A real cluster (1 scheduler,
 * 2 servers, 3 ordo-worker processes, started with ordo-launch) trains the mlp for ITERS
 * iterations with SGD, momentum and weight decay, once with dense pushes and once per merge
 * algorithm ([push] mode = merged); worker 0 saves the final parameters. With 256 KiB chunks
 * the first layer's weights are split over both servers, so merged groups span servers. Every
 * merged run's parameters must equal the dense run's bit for bit (servers sum the W pushes in
 * worker order, so three workers are as exact as two), a plan read from a file
 * ([push] merge = file:PATH) included, and a plan made with measured op times ([order]
 * oracle), and with the servers serving workers one after another ([order] share =
 * serial), and with each key's next value pulled right after its push ([order] pull =
 * early; dense and merged, the servers answering exactly as many pulls as with pulls at the
 * start), and with groups planned from the workers' start-up calibration ([push] calibrate,
 * which also must find an emulated link's costs); a bad plan file or oracle stops the start
 * with its reason. */
#include "run_util.h"
#include "common/error.h"
#include "core/paramfile.h"
#include "tests/unit/ordo_check.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define ITERS 20

static const char conf_text[] = "[cluster]\n"
                                "servers = 2\n"
                                "workers = 3\n"
                                "[model]\n"
                                "trainer = mlp\n"
                                "compute = cpu\n"
                                "batch = 32\n"
                                "iterations = 20\n"
                                "warmup = 1\n"
                                "seed = 11\n"
                                "[order]\n"
                                "partition_bytes = 256KiB\n"
                                "segment_bytes = 64KiB\n"
                                "[optimizer]\n"
                                "lr = 0.05\n"
                                "momentum = 0.9\n"
                                "weight_decay = 0.0005\n"
                                "[output]\n"
                                "save_params = true\n"
                                "progress_every = 0\n";

/* the pulls the servers answered in the last run (their shutdown lines, summed), and the
 * slices of its key map (the scheduler's "K keys in N slices") */
static long last_pulls, last_slices;

static void read_counts(const it_run_t *run)
{
    FILE *f = fopen(run->log, "r");
    ck_assert_ptr_nonnull(f);
    char line[1024];
    long pushes, pulls, servers, workers, keys, slices;
    last_pulls = last_slices = 0;
    while (fgets(line, sizeof line, f)) {
        const char *p = strstr(line, "INFO shutdown: ");
        if (p && strstr(line, "[server ") &&
            sscanf(p, "INFO shutdown: %ld pushes, %ld pulls", &pushes, &pulls) == 2)
            last_pulls += pulls;
        p = strstr(line, "cluster complete: ");
        if (p && sscanf(p, "cluster complete: %ld servers, %ld workers, %ld keys in %ld slices",
                        &servers, &workers, &keys, &slices) == 4)
            last_slices = slices;
    }
    fclose(f);
}

/* run the conf with push overrides; returns the saved parameters (caller destroys) */
static ordo__paramfile_t *train(const char *mode, const char *merge, const char *expect_log)
{
    it_run_t run;
    ck_assert_int_eq(
        it_run_launch(&run, conf_text, 240, mode, merge, "--output.log_level=info", NULL), 0);
    if (expect_log && !it_run_log_has(&run, expect_log)) {
        it_run_print_log(&run, 40);
        ck_abort_msg("the run with %s %s did not log \"%s\"", mode, merge ? merge : "", expect_log);
    }
    if (!expect_log) ck_assert(!it_run_log_has(&run, "merged pushes"));
    ck_assert(!it_run_log_has(&run, "WARN dropped") && !it_run_log_has(&run, "unexpected"));
    read_counts(&run);
    ordo__paramfile_t *pf = NULL;
    ORDO_CK_OK(ordo__paramfile_read(it_run_path(&run, "params.bin"), &pf));
    ck_assert_int_eq(pf->iteration, ITERS);
    it_run_destroy(&run);
    return pf;
}

static void assert_identical(const ordo__paramfile_t *dense, const ordo__paramfile_t *merged,
                             const char *what)
{
    ck_assert_int_eq(merged->n, dense->n);
    int64_t total = 0;
    for (int p = 0; p < dense->n; p++) {
        ck_assert_str_eq(merged->names[p], dense->names[p]);
        ck_assert_int_eq(merged->numel[p], dense->numel[p]);
        int64_t differ = 0;
        for (int64_t i = 0; i < dense->numel[p]; i++)
            differ += memcmp(&merged->values[p][i], &dense->values[p][i], sizeof(float)) != 0;
        ck_assert_msg(differ == 0, "%s: %s has %lld of %lld values that differ from dense pushes",
                      what, dense->names[p], (long long)differ, (long long)dense->numel[p]);
        total += dense->numel[p];
    }
    printf("%-22s %lld parameters bit-identical to dense pushes after %d iterations\n", what,
           (long long)total, ITERS);
}

/* write_temp fills the mkstemp template path with text */
static void write_temp(char *path, const char *text)
{
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
}

START_TEST(merged_pushes_give_the_dense_parameters_bit_for_bit)
{
    ordo__paramfile_t *dense = train("--push.mode=dense", NULL, NULL);
    long dense_pulls = last_pulls;
    /* every slice pulled by 3 workers in ITERS iterations, and by worker 0 once more for the
     * saved parameters */
    ck_assert_int_gt(last_slices, 6);
    ck_assert_int_eq(dense_pulls, last_slices * (3 * ITERS + 1));
    /* the run trained: the last layer's bias is not all zeros any more */
    int moved = 0;
    for (int64_t i = 0; i < dense->numel[dense->n - 1]; i++)
        moved += dense->values[dense->n - 1][i] != 0.0f;
    ck_assert_int_gt(moved, 0);
    static const struct {
        const char *merge, *log;
    } runs[] = {
        {"--push.merge=wfbp", "merged pushes: 6 keys in 3 groups"},
        {"--push.merge=all", "merged pushes: 6 keys in 1 groups"},
        {"--push.merge=bytes:200KiB", "merged pushes: 6 keys in 2 groups"},
        {"--push.merge=optimal", "merged pushes: 6 keys in"},
    };
    for (size_t r = 0; r < sizeof runs / sizeof runs[0]; r++) {
        ordo__paramfile_t *merged = train("--push.mode=merged", runs[r].merge, runs[r].log);
        assert_identical(dense, merged, runs[r].merge + 2);
        ordo__paramfile_destroy(&merged);
    }
    /* a plan made elsewhere ([push] merge = file:PATH), splitting fc2 between two groups */
    char path[] = "/tmp/ordo-merge-plan-XXXXXX", opt[64];
    const char *plan = "{\"format\": \"ordo-merge/1\", \"model\": \"mlp\", \"groups\": "
                       "[[\"fc3.w\", \"fc3.b\", \"fc2.w\"], [\"fc2.b\", \"fc1.w\", \"fc1.b\"]]}\n";
    write_temp(path, plan);
    snprintf(opt, sizeof opt, "--push.merge=file:%s", path);
    ordo__paramfile_t *merged =
        train("--push.mode=merged", opt, "merged pushes: 6 keys in 2 groups");
    assert_identical(dense, merged, "--push.merge=file:PLAN" + 2);
    ordo__paramfile_destroy(&merged);
    unlink(path);
    /* measured op times ([order] oracle): with every backward measured at 0 all gradients
     * are ready at once, and one group (fewest messages) is optimal; the profile's times
     * give 2 groups */
    char opath[] = "/tmp/ordo-merge-oracle-XXXXXX";
    const char *oracle =
        "{\"format\": \"ordo-oracle/1\", \"model\": \"mlp\", \"ops\": ["
        "{\"name\": \"fc1\", \"bwd_us\": 0}, {\"name\": \"relu1\", \"bwd_us\": 0},"
        "{\"name\": \"fc2\", \"bwd_us\": 0}, {\"name\": \"relu2\", \"bwd_us\": 0},"
        "{\"name\": \"fc3\", \"bwd_us\": 0}, {\"name\": \"loss\", \"bwd_us\": 0}]}\n";
    write_temp(opath, oracle);
    char oopt[96];
    snprintf(oopt, sizeof oopt, "--order.oracle=%s", opath);
    merged = train("--push.mode=merged", oopt, "merged pushes: 6 keys in 1 groups");
    assert_identical(dense, merged, "--order.oracle=FILE" + 2);
    ordo__paramfile_destroy(&merged);
    unlink(opath);
    /* the servers' serial share of their links ([order] share) changes timing only */
    merged = train("--push.mode=merged", "--order.share=serial", "serial share of the link");
    assert_identical(dense, merged, "--order.share=serial" + 2);
    ordo__paramfile_destroy(&merged);
    /* early pulls ([order] pull = early) change timing only, and pull nothing twice */
    merged = train("--push.mode=dense", "--order.pull=early", "pulls: early");
    assert_identical(dense, merged, "--order.pull=early (dense)" + 2);
    ck_assert_int_eq(last_pulls, dense_pulls);
    ordo__paramfile_destroy(&merged);
    /* (planned with the pull stage: 3 workers' copies over 10 Gbit/s, 2.4 ns per byte) */
    merged = train("--push.mode=merged", "--order.pull=early", "early pulls 2.4 ns/byte");
    assert_identical(dense, merged, "--order.pull=early (merged)" + 2);
    ck_assert_int_eq(last_pulls, dense_pulls);
    ordo__paramfile_destroy(&merged);
    /* groups planned from the workers' start-up calibration ([push] calibrate): its probes
     * change no value */
    merged = train("--push.mode=merged", "--push.calibrate=true", "calibration: 5 sizes");
    assert_identical(dense, merged, "--push.calibrate=true" + 2);
    ck_assert_int_eq(last_pulls, dense_pulls);
    ordo__paramfile_destroy(&merged);
    ordo__paramfile_destroy(&dense);
}
END_TEST

START_TEST(a_bad_plan_file_stops_the_start_with_its_reason)
{
    char path[] = "/tmp/ordo-merge-plan-XXXXXX", opt[64];
    const char *plan = "{\"format\": \"ordo-merge/1\", \"model\": \"mlp\", \"groups\": "
                       "[[\"fc3.w\", \"fc3.b\"]]}\n";
    write_temp(path, plan);
    snprintf(opt, sizeof opt, "--push.merge=file:%s", path);
    it_run_t run;
    ck_assert_int_ne(it_run_launch(&run, conf_text, 60, "--push.mode=merged", opt, NULL), 0);
    char want[160];
    snprintf(want, sizeof want, "%s: $.groups: parameter 'fc2.w' is missing", path);
    if (!it_run_log_has(&run, want)) {
        it_run_print_log(&run, 20);
        ck_abort_msg("the log does not say \"%s\"", want);
    }
    it_run_destroy(&run);
    /* and a missing file */
    snprintf(opt, sizeof opt, "--push.merge=file:%s", path);
    unlink(path);
    ck_assert_int_ne(it_run_launch(&run, conf_text, 60, "--push.mode=merged", opt, NULL), 0);
    snprintf(want, sizeof want, "%s: cannot open", path);
    ck_assert_msg(it_run_log_has(&run, want), "the log does not say \"%s\"", want);
    it_run_destroy(&run);
    /* an oracle measured on another model */
    char opath[] = "/tmp/ordo-merge-oracle-XXXXXX";
    const char *oracle = "{\"format\": \"ordo-oracle/1\", \"model\": \"cnn\", \"ops\": []}\n";
    write_temp(opath, oracle);
    snprintf(opt, sizeof opt, "--order.oracle=%s", opath);
    ck_assert_int_ne(it_run_launch(&run, conf_text, 60, "--push.mode=merged", opt, NULL), 0);
    snprintf(want, sizeof want, "order.oracle: %s: $.model: 'cnn' does not match the model 'mlp'",
             opath);
    if (!it_run_log_has(&run, want)) {
        it_run_print_log(&run, 20);
        ck_abort_msg("the log does not say \"%s\"", want);
    }
    it_run_destroy(&run);
    unlink(opath);
}
END_TEST

/* [push] calibrate = true on an emulated 100 Mbit/s link with 2 ms per message: the worker's
 * fit finds the link's 80 ns per byte and the 2 ms per message within 10 %, the scheduler
 * plans with it (and with the op times the worker measured), and the worker pushes in the
 * planned groups. One worker, so that its own
 * link is the busiest: with three, the servers' links carry 1.5 acknowledgements for each
 * message a worker sends, each holding them 2 ms too, and a comes out 2.6 ms (which is then
 * what one more message costs in that cluster). */
START_TEST(a_start_up_calibration_measures_the_link_and_plans_from_it)
{
    it_run_t run;
    ck_assert_int_eq(it_run_launch(&run, conf_text, 240, "--push.mode=merged",
                                   "--push.calibrate=true", "--push.calibrate_reps=3",
                                   "--net.bandwidth=100mbit", "--net.msg_us=2000",
                                   "--cluster.workers=1", "--model.iterations=5",
                                   "--output.save_params=false",
                                   "--output.log_level=info", NULL),
                     0);
    json_error_t err;
    json_t *cal = json_load_file(it_run_path(&run, "calibration.json"), 0, &err);
    if (!cal) {
        it_run_print_log(&run, 30);
        ck_abort_msg("no calibration.json: %s", err.text);
    }
    double a = it_num(cal, "a_s"), b_msg = it_num(cal, "b_msg_s"), b = it_num(cal, "b_s");
    int groups = (int)json_integer_value(json_object_get(cal, "groups"));
    ck_assert_int_eq(json_array_size(json_object_get(cal, "bytes")), 5); /* 1 KiB .. 256 KiB */
    printf("start-up calibration at 100 Mbit/s, 2 ms per message: a = %.1f us (2000), b = %.2f "
           "ns/B (pipelined %.2f; 80), %d groups\n",
           a * 1e6, b * 1e9, b_msg * 1e9, groups);
    ck_assert_msg(fabs(a - 2000e-6) <= 0.1 * 2000e-6, "a = %.1f us, not within 10 %% of 2000", a * 1e6);
    ck_assert_msg(fabs(b_msg - 80e-9) <= 0.1 * 80e-9, "pipelined b = %.2f ns/B, not within 10 %% of 80",
                  b_msg * 1e9);
    ck_assert_int_ge(groups, 1);
    char want[96];
    snprintf(want, sizeof want, "merged pushes: 6 keys in %d groups", groups);
    ck_assert_msg(it_run_log_has(&run, want), "the workers did not log \"%s\"", want);
    snprintf(want, sizeof want, "(a = %.1f us", a * 1e6);
    ck_assert_msg(it_run_log_has(&run, want), "the scheduler did not plan with \"%s\"", want);
    ck_assert(!it_run_log_has(&run, "WARN dropped"));
    /* the mlp runs on the cpu: worker 0 also timed its ops, and the groups were planned with
     * those times (kept as an ordo-oracle/1 object, reusable as [order] oracle) */
    ck_assert(it_run_log_has(&run, "calibration: op times of mlp measured on cpu (4 passes"));
    ck_assert(it_run_log_has(&run, "merge: op times measured by worker 0 at start-up"));
    json_t *ops = json_object_get(cal, "op_times");
    ck_assert_str_eq(json_string_value(json_object_get(ops, "format")), "ordo-oracle/1");
    ck_assert_str_eq(json_string_value(json_object_get(ops, "model")), "mlp");
    ck_assert_int_eq(json_integer_value(json_object_get(ops, "iterations")), 4);
    json_t *list = json_object_get(ops, "ops");
    ck_assert_int_eq(json_array_size(list), 6); /* fc1 relu1 fc2 relu2 fc3 loss */
    for (size_t i = 0; i < json_array_size(list); i++) {
        json_t *op = json_array_get(list, i);
        ck_assert(it_num(op, "fwd_us") > 0 && it_num(op, "bwd_us") > 0);
    }
    /* the run folder keeps the plan as ordo-merge/1 (merge-plan.json), and a later run
     * replays it with push.merge = file:PATH */
    json_t *mp = json_load_file(it_run_path(&run, "merge-plan.json"), 0, &err);
    ck_assert_msg(mp != NULL, "no merge-plan.json: %s", err.text);
    ck_assert_str_eq(json_string_value(json_object_get(mp, "format")), "ordo-merge/1");
    ck_assert_int_eq(json_array_size(json_object_get(mp, "groups")), groups);
    ck_assert(fabs(it_num(mp, "a") - a) <= 1e-9 * a);
    json_decref(mp);
    char replay[1200];
    snprintf(replay, sizeof replay, "--push.merge=file:%s", it_run_path(&run, "merge-plan.json"));
    it_run_t again;
    ck_assert_int_eq(it_run_launch(&again, conf_text, 240, "--push.mode=merged", replay,
                                   "--cluster.workers=1", "--model.iterations=3",
                                   "--output.save_params=false", "--output.log_level=info", NULL),
                     0);
    snprintf(want, sizeof want, "merged pushes: 6 keys in %d groups", groups);
    ck_assert_msg(it_run_log_has(&again, want), "the replayed plan did not give \"%s\"", want);
    it_run_destroy(&again);
    json_decref(cal);
    it_run_destroy(&run);
    /* calibrating needs merged pushes */
    ck_assert_int_ne(it_run_launch(&run, conf_text, 60, "--push.calibrate=true", NULL), 0);
    ck_assert(it_run_log_has(&run, "push.calibrate = true needs push.mode = merged"));
    it_run_destroy(&run);
}
END_TEST

static Suite *merged_suite(void)
{
    Suite *s = suite_create("merged");
    TCase *tc = tcase_create("bad_plan");
    tcase_set_timeout(tc, 290);
    tcase_add_test(tc, a_bad_plan_file_stops_the_start_with_its_reason);
    suite_add_tcase(s, tc);
    /* Tagged "fmnist": ctest's integration.merged.fmnist runs these and skips without the data. */
    tc = tcase_create("mlp");
    tcase_set_tags(tc, "fmnist");
    tcase_set_timeout(tc, 290);
    tcase_add_test(tc, merged_pushes_give_the_dense_parameters_bit_for_bit);
    tcase_add_test(tc, a_start_up_calibration_measures_the_link_and_plans_from_it);
    suite_add_tcase(s, tc);
    return s;
}

ORDO_CK_MAIN(merged_suite)
