/* Integration test: the shipped training confs reach their accuracy. conf/mlp.ini (2 servers,
 * 2 workers, 1 epoch of the mlp on Fashion-MNIST) must reach 84% test accuracy and leave a
 * complete run record: one metrics line per worker per iteration with its figures, a summary
 * with the training results, a progress line per progress_every iterations and the test
 * accuracy in the log. conf/cnn.ini (2 epochs of the cnn, about two minutes on two cores)
 * must reach 86%; it is tagged "long" (ctest label long). The same cnn run with compute = cuda
 * (about 6 s on an H100) must reach 86% too; it skips, saying why, where no CUDA device is
 * found. */
#include "run_util.h"
#include "worker/compute.h"
#include "tests/unit/ordo_check.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define MLP_BYTES (int64_t)(4 * (784 * 256 + 256 + 256 * 128 + 128 + 128 * 10 + 10))

static int count_log_lines(const it_run_t *r, const char *a, const char *b)
{
    FILE *f = fopen(r->log, "r");
    if (!f) return -1;
    char line[4096];
    int n = 0;
    while (fgets(line, sizeof line, f))
        n += strstr(line, a) && strstr(line, b);
    fclose(f);
    return n;
}

START_TEST(mlp_one_epoch_two_workers_reaches_84_percent)
{
    it_run_t run;
    ck_assert_int_eq(it_run_launch_file(&run, "conf/mlp.ini", 240, NULL), 0);
    json_t *sum = it_run_summary(&run);
    ck_assert_ptr_nonnull(sum);
    double acc = it_num(sum, "test_accuracy");
    printf("mlp, 1 epoch, 2 workers: test accuracy %.4f, final loss %.4f, %.0f samples/s\n", acc,
           it_num(sum, "final_loss"), it_num(sum, "throughput_samples_per_s"));
    ck_assert_msg(acc >= 0.84 && acc <= 1.0, "test accuracy %.4f, expected at least 0.84", acc);
    ck_assert_int_eq((int)it_num(sum, "iterations"), (60000 / 2) / 64); /* 468 */
    ck_assert_int_eq((int)it_num(sum, "workers"), 2);
    double loss = it_num(sum, "final_loss");
    ck_assert_msg(loss > 0 && loss < 1.0, "final loss %g", loss);
    ck_assert(it_num(sum, "throughput_samples_per_s") > 0);
    json_t *model = json_object_get(json_object_get(sum, "conf"), "model");
    ck_assert_str_eq(json_string_value(json_object_get(model, "trainer")), "mlp");

    /* metrics.jsonl: one line per worker per iteration, each with the documented figures */
    json_t *metrics = it_run_metrics(&run);
    ck_assert_ptr_nonnull(metrics);
    ck_assert_int_eq(json_array_size(metrics), 2 * 468);
    int seen[2][468] = {{0}};
    size_t i;
    json_t *l;
    json_array_foreach(metrics, i, l)
    {
        int w = (int)it_num(l, "worker"), it = (int)it_num(l, "iter");
        ck_assert(w >= 0 && w < 2 && it >= 0 && it < 468);
        seen[w][it]++;
        ck_assert(it_num(l, "step_ms") >= it_num(l, "compute_ms"));
        ck_assert(it_num(l, "compute_ms") > 0);
        ck_assert(it_num(l, "wait_ms") >= 0);
        ck_assert_int_eq((int64_t)it_num(l, "bytes_push"), MLP_BYTES);
        ck_assert_int_eq((int64_t)it_num(l, "bytes_pull"), MLP_BYTES);
        ck_assert(json_is_null(json_object_get(l, "efficiency")));
        ck_assert(it_num(l, "loss") > 0);
    }
    for (int w = 0; w < 2; w++)
        for (int it = 0; it < 468; it++)
            ck_assert_int_eq(seen[w][it], 1);
    json_decref(metrics);

    /* not a terminal: plain progress lines, every 50 iterations and at the end */
    ck_assert_int_eq(count_log_lines(&run, "[worker 0]", "samples/s  ETA"), 468 / 50 + 1);
    ck_assert_int_eq(count_log_lines(&run, "epoch 1/1  iter 50/468  loss ", "train acc"), 1);
    ck_assert_int_eq(count_log_lines(&run, "iter 468/468", "samples/s"), 1);
    ck_assert_int_eq(count_log_lines(&run, "[worker 0]", "test accuracy 0.8"), 1);
    json_decref(sum);
    it_run_destroy(&run);
}
END_TEST

START_TEST(cnn_two_epochs_two_workers_reaches_86_percent)
{
    it_run_t run;
    ck_assert_int_eq(it_run_launch_file(&run, "conf/cnn.ini", 1200, NULL), 0);
    json_t *sum = it_run_summary(&run);
    ck_assert_ptr_nonnull(sum);
    double acc = it_num(sum, "test_accuracy");
    printf("cnn, 2 epochs, 2 workers: test accuracy %.4f, final loss %.4f, %.0f samples/s\n", acc,
           it_num(sum, "final_loss"), it_num(sum, "throughput_samples_per_s"));
    ck_assert_msg(acc >= 0.86 && acc <= 1.0, "test accuracy %.4f, expected at least 0.86", acc);
    ck_assert_int_eq((int)it_num(sum, "iterations"), 2 * 468);
    ck_assert_int_eq(count_log_lines(&run, "epoch 2/2  iter 936/936", "train acc"), 1);
    json_decref(sum);
    it_run_destroy(&run);
}
END_TEST

START_TEST(cnn_on_cuda_two_epochs_reaches_86_percent)
{
    it_run_t run;
    ck_assert_int_eq(it_run_launch_file(&run, "conf/cnn.ini", 600, "--model.compute=cuda", NULL), 0);
    json_t *sum = it_run_summary(&run);
    ck_assert_ptr_nonnull(sum);
    double acc = it_num(sum, "test_accuracy");
    printf("cnn on cuda, 2 epochs, 2 workers: test accuracy %.4f, final loss %.4f, %.0f samples/s, "
           "compute %.2f ms an iteration\n",
           acc, it_num(sum, "final_loss"), it_num(sum, "throughput_samples_per_s"),
           it_num(json_object_get(sum, "compute_ms"), "mean"));
    ck_assert_msg(acc >= 0.86 && acc <= 1.0, "test accuracy %.4f, expected at least 0.86", acc);
    ck_assert_int_eq((int)it_num(sum, "iterations"), 2 * 468);
    json_t *model = json_object_get(json_object_get(sum, "conf"), "model");
    ck_assert_str_eq(json_string_value(json_object_get(model, "compute")), "cuda");
    ck_assert_int_eq(count_log_lines(&run, "epoch 2/2  iter 936/936", "train acc"), 1);
    json_decref(sum);
    it_run_destroy(&run);
}
END_TEST

static Suite *accuracy_suite(void)
{
    Suite *s = suite_create("train_accuracy");
    TCase *t = tcase_create("mlp");
    tcase_set_timeout(t, 280);
    tcase_add_test(t, mlp_one_epoch_two_workers_reaches_84_percent);
    suite_add_tcase(s, t);
    t = tcase_create("cnn");
    tcase_set_tags(t, "long");
    tcase_set_timeout(t, 1300);
    tcase_add_test(t, cnn_two_epochs_two_workers_reaches_86_percent);
    suite_add_tcase(s, t);
    /* Tagged "cuda": ctest's integration.train_accuracy.cuda runs it and skips without a
     * device or the data. */
    t = tcase_create("cuda");
    tcase_set_tags(t, "cuda");
    tcase_set_timeout(t, 650);
    tcase_add_test(t, cnn_on_cuda_two_epochs_reaches_86_percent);
    suite_add_tcase(s, t);
    return s;
}

/* probe for ordo_ck_require: "cuda" is there when the backend is built and sees a device */
static const char *probe(const char *need)
{
    if (strcmp(need, "cuda") != 0) {
        fprintf(stderr, "ORDO_CK_NEEDS names '%s', which this suite cannot check\n", need);
        exit(2);
    }
    const char *why = NULL;
    if (ordo__compute_cuda_available(&why)) return NULL;
    return why ? why : "no CUDA device";
}

ORDO_CK_MAIN_PROBE(accuracy_suite, probe)
