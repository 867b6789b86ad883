/* Integration test: a run starts from the parameters an earlier run saved ([model] init =
 * its params.bin). A first run trains the mlp (2 servers, 2 workers) and saves its values; a
 * second run started from them with lr = 0 must end with exactly those values (they went to
 * the servers and came back untouched) and the same test accuracy; a third, training again,
 * starts at the first run's loss instead of an untrained model's. The first run also writes a
 * checkpoint every 20 updates ([fault] checkpoint_every, with early pulls, which must not
 * leak the next values into it): its last, after 40, must equal the params.bin of a run of
 * 40 iterations bit for bit. A file of another model, a truncated file and a missing one stop
 * the start with "model.init: " and the reason. */
#include "run_util.h"
#include "common/error.h"
#include "core/paramfile.h"
#include "tests/unit/ordo_check.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char conf_text[] = "[cluster]\n"
                                "servers = 2\n"
                                "workers = 2\n"
                                "[model]\n"
                                "trainer = mlp\n"
                                "compute = cpu\n"
                                "batch = 32\n"
                                "iterations = 60\n"
                                "warmup = 1\n"
                                "seed = 5\n"
                                "[optimizer]\n"
                                "lr = 0.05\n"
                                "momentum = 0.9\n"
                                "[output]\n"
                                "save_params = true\n"
                                "progress_every = 0\n";

/* mean loss of the workers' iteration `iter` in the run's metrics */
static double loss_at(const it_run_t *run, int iter)
{
    json_t *metrics = it_run_metrics(run);
    ck_assert_ptr_nonnull(metrics);
    double sum = 0;
    int n = 0;
    size_t i;
    json_t *l;
    json_array_foreach(metrics, i, l)
    {
        if ((int)it_num(l, "iter") != iter) continue;
        sum += it_num(l, "loss");
        n++;
    }
    json_decref(metrics);
    ck_assert_int_eq(n, 2);
    return sum / n;
}

/* copy the run's file name (params.bin, checkpoint.bin) to a temporary file named in path
 * (template in, name out) */
static void keep_file(const it_run_t *run, const char *name, char *path)
{
    ordo__paramfile_t *pf = NULL;
    ORDO_CK_OK(ordo__paramfile_read(it_run_path(run, name), &pf));
    ordo__paramfile_destroy(&pf);
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    close(fd);
    char cmd[1400];
    snprintf(cmd, sizeof cmd, "cp '%s' '%s'", it_run_path(run, name), path);
    ck_assert_int_eq(system(cmd), 0);
}

static void keep_params(const it_run_t *run, char *path)
{
    keep_file(run, "params.bin", path);
}

static void assert_same_values(const ordo__paramfile_t *a, const ordo__paramfile_t *b,
                               const char *what)
{
    ck_assert_int_eq(a->n, b->n);
    for (int i = 0; i < a->n; i++) {
        ck_assert_int_eq(a->numel[i], b->numel[i]);
        ck_assert_msg(!memcmp(a->values[i], b->values[i], sizeof(float) * (size_t)a->numel[i]),
                      "%s: %s differs", what, a->names[i]);
    }
}

START_TEST(a_run_starts_from_the_values_an_earlier_run_saved)
{
    it_run_t first;
    ck_assert_int_eq(it_run_launch(&first, conf_text, 240, "--fault.checkpoint_every=20",
                                   "--order.pull=early", "--output.log_level=info", NULL),
                     0);
    ck_assert(it_run_log_has(&first, "checkpoint.bin after 20 updates"));
    ck_assert(it_run_log_has(&first, "checkpoint.bin after 40 updates"));
    ck_assert(!it_run_log_has(&first, "checkpoint.bin after 60 updates"));
    char path[] = "/tmp/ordo-resume-XXXXXX", cpath[] = "/tmp/ordo-checkpoint-XXXXXX";
    keep_params(&first, path);
    keep_file(&first, "checkpoint.bin", cpath);
    ordo__paramfile_t *saved = NULL;
    ORDO_CK_OK(ordo__paramfile_read(path, &saved));
    ck_assert_int_eq(saved->iteration, 60);
    json_t *s1 = it_run_summary(&first);
    double acc1 = it_num(s1, "test_accuracy");
    double first_loss0 = loss_at(&first, 0), first_loss_end = loss_at(&first, 59);
    json_decref(s1);
    it_run_destroy(&first);

    /* lr 0: the values go to the servers and come back as they were */
    char opt[128];
    snprintf(opt, sizeof opt, "--model.init=%s", path);
    it_run_t still;
    ck_assert_int_eq(it_run_launch(&still, conf_text, 240, opt, "--model.iterations=5",
                                   "--optimizer.lr=0", "--output.log_level=info", NULL),
                     0);
    ck_assert(it_run_log_has(&still, "initial values from "));
    ck_assert(it_run_log_has(&still, "(saved after 60 updates)"));
    ordo__paramfile_t *again = NULL;
    ORDO_CK_OK(ordo__paramfile_read(it_run_path(&still, "params.bin"), &again));
    assert_same_values(saved, again, "values through the servers with lr 0");
    json_t *s2 = it_run_summary(&still);
    ck_assert_double_eq(it_num(s2, "test_accuracy"), acc1);
    json_decref(s2);
    ordo__paramfile_destroy(&again);
    it_run_destroy(&still);

    /* training again goes on from where the first run ended */
    it_run_t more;
    ck_assert_int_eq(it_run_launch(&more, conf_text, 240, opt, "--model.iterations=5", NULL), 0);
    double more_loss0 = loss_at(&more, 0);
    printf("loss: first run %.4f at iteration 0, %.4f at 59; resumed run %.4f at 0\n",
           first_loss0, first_loss_end, more_loss0);
    ck_assert_msg(more_loss0 < 0.75 * first_loss0,
                  "the resumed run starts at loss %.4f, an untrained model at %.4f", more_loss0,
                  first_loss0);
    it_run_destroy(&more);

    /* the checkpoint after 40 updates is what a run of 40 iterations ends with */
    ordo__paramfile_t *checkpoint = NULL, *forty = NULL;
    ORDO_CK_OK(ordo__paramfile_read(cpath, &checkpoint));
    ck_assert_int_eq(checkpoint->iteration, 40);
    it_run_t short_run;
    ck_assert_int_eq(it_run_launch(&short_run, conf_text, 240, "--model.iterations=40", NULL), 0);
    ORDO_CK_OK(ordo__paramfile_read(it_run_path(&short_run, "params.bin"), &forty));
    ck_assert_int_eq(forty->iteration, 40);
    assert_same_values(forty, checkpoint, "checkpoint after 40 updates");
    it_run_destroy(&short_run);
    ordo__paramfile_destroy(&checkpoint);
    ordo__paramfile_destroy(&forty);
    ordo__paramfile_destroy(&saved);
    unlink(path);
    unlink(cpath);
}
END_TEST

/* the iterations the resumed run's workers reported (metrics.jsonl), first and last */
static void reported_iterations(const it_run_t *run, int *n, int *lo, int *hi)
{
    json_t *metrics = it_run_metrics(run);
    ck_assert_ptr_nonnull(metrics);
    size_t i;
    json_t *l;
    *n = 0;
    *lo = 1 << 30;
    *hi = -1;
    json_array_foreach(metrics, i, l)
    {
        int it = (int)it_num(l, "iter");
        (*n)++;
        if (it < *lo) *lo = it;
        if (it > *hi) *hi = it;
    }
    json_decref(metrics);
}

/* [fault] resume: a run of 40 iterations that wrote checkpoints (worker 0's values, the
 * servers' momentum) is resumed from its folder with the same conf; the resumed run trains
 * only the iterations after the last checkpoint and ends with the first run's parameters bit
 * for bit, dense pushes with the servers' latest momentum file, merged pushes with early pulls
 * with the one before (the servers wrote one more, after the 40th update, that worker 0 did
 * not) */
START_TEST(a_resumed_run_ends_with_the_uninterrupted_runs_parameters_bit_for_bit)
{
    static const struct {
        const char *every, *mode, *pull, *file;
        int from;
    } runs[] = {
        {"--fault.checkpoint_every=15", "--push.mode=dense", "--order.pull=start", "", 30},
        {"--fault.checkpoint_every=20", "--push.mode=merged", "--order.pull=early", ".prev", 20},
    };
    for (size_t r = 0; r < sizeof runs / sizeof runs[0]; r++) {
        it_run_t first, resumed;
        ck_assert_int_eq(it_run_launch(&first, conf_text, 240, "--model.iterations=40",
                                       runs[r].every, runs[r].mode, runs[r].pull,
                                       "--output.log_level=info", NULL),
                         0);
        char want[1300], opt[700];
        snprintf(want, sizeof want, "checkpoint-server-1.bin (momentum) after %d updates",
                 runs[r].from);
        ck_assert_msg(it_run_log_has(&first, want), "the first run did not log \"%s\"", want);
        snprintf(opt, sizeof opt, "--fault.resume=%s", first.dir);
        ck_assert_int_eq(it_run_launch(&resumed, conf_text, 240, "--model.iterations=40",
                                       runs[r].mode, runs[r].pull, opt, "--output.log_level=info",
                                       NULL),
                         0);
        snprintf(want, sizeof want, "checkpoint-server-1%s.bin", runs[r].file);
        ck_assert_msg(it_run_log_has(&resumed, want), "the servers did not read \"%s\"", want);
        int n, lo, hi;
        reported_iterations(&resumed, &n, &lo, &hi);
        ck_assert_int_eq(n, 2 * (40 - runs[r].from));
        ck_assert_int_eq(lo, runs[r].from);
        ck_assert_int_eq(hi, 39);
        ordo__paramfile_t *a = NULL, *b = NULL;
        ORDO_CK_OK(ordo__paramfile_read(it_run_path(&first, "params.bin"), &a));
        ORDO_CK_OK(ordo__paramfile_read(it_run_path(&resumed, "params.bin"), &b));
        ck_assert_int_eq(a->iteration, 40);
        ck_assert_int_eq(b->iteration, 40);
        assert_same_values(a, b, runs[r].mode + 2);
        printf("%s %s: resumed after %d updates, %d iterations run, parameters bit-identical\n",
               runs[r].mode + 2, runs[r].pull + 2, runs[r].from, 40 - runs[r].from);
        ordo__paramfile_destroy(&a);
        ordo__paramfile_destroy(&b);
        it_run_destroy(&resumed);
        if (r == 0) { /* what resuming refuses, with the reason */
            ck_assert_int_ne(it_run_launch(&resumed, conf_text, 60, "--model.iterations=30", opt,
                                           NULL),
                             0);
            ck_assert(it_run_log_has(&resumed, "after 30 updates, and the run has 30 iterations: "
                                               "nothing left to run"));
            it_run_destroy(&resumed);
            char path[1200];
            snprintf(path, sizeof path, "%s/checkpoint-server-1.bin", first.dir);
            ck_assert_int_eq(unlink(path), 0);
            ck_assert_int_ne(it_run_launch(&resumed, conf_text, 60, "--model.iterations=40", opt,
                                           NULL),
                             0);
            snprintf(want, sizeof want, "server 1: fault.resume: cannot read %s", path);
            ck_assert_msg(it_run_log_has(&resumed, want), "the log does not say \"%s\"", want);
            it_run_destroy(&resumed);
        }
        it_run_destroy(&first);
    }
}
END_TEST

START_TEST(a_bad_init_file_stops_the_start_with_its_reason)
{
    it_run_t run;
    /* a missing file */
    ck_assert_int_ne(it_run_launch(&run, conf_text, 60, "--model.init=/nonexistent/params.bin",
                                   "--model.iterations=2", NULL),
                     0);
    ck_assert(it_run_log_has(&run, "model.init: cannot read /nonexistent/params.bin"));
    it_run_destroy(&run);

    /* a file of another model: the cnn's values for the mlp */
    ck_assert_int_eq(it_run_launch(&run, conf_text, 240, "--model.trainer=cnn",
                                   "--model.iterations=2", NULL),
                     0);
    char path[] = "/tmp/ordo-resume-XXXXXX";
    keep_params(&run, path);
    it_run_destroy(&run);
    char opt[128];
    snprintf(opt, sizeof opt, "--model.init=%s", path);
    ck_assert_int_ne(it_run_launch(&run, conf_text, 60, opt, "--model.iterations=2", NULL), 0);
    char want[256];
    snprintf(want, sizeof want, "model.init: %s: parameter file has 8 parameters, model mlp has 6",
             path);
    ck_assert_msg(it_run_log_has(&run, want), "the log does not say \"%s\"", want);
    it_run_destroy(&run);

    /* the same file cut short */
    ck_assert_int_eq(truncate(path, 100), 0);
    ck_assert_int_ne(it_run_launch(&run, conf_text, 60, opt, "--model.iterations=2", NULL), 0);
    snprintf(want, sizeof want, "model.init: %s: offset ", path);
    ck_assert_msg(it_run_log_has(&run, want), "the log does not say \"%s\"", want);
    it_run_destroy(&run);
    unlink(path);
}
END_TEST

static Suite *resume_suite(void)
{
    Suite *s = suite_create("resume");
    TCase *t = tcase_create("resume");
    tcase_set_timeout(t, 290);
    tcase_add_test(t, a_run_starts_from_the_values_an_earlier_run_saved);
    tcase_add_test(t, a_resumed_run_ends_with_the_uninterrupted_runs_parameters_bit_for_bit);
    tcase_add_test(t, a_bad_init_file_stops_the_start_with_its_reason);
    suite_add_tcase(s, t);
    return s;
}

ORDO_CK_MAIN(resume_suite)
