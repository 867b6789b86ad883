/* Tests of worker/train: the local reference trainer learns Fashion-MNIST with the cpu
 * backend (mlp: >= 75% after 300 iterations, >= 84% after one epoch with 2 workers; cnn,
 * in the "long" case: >= 86% after two epochs with 2 workers), is deterministic for a seed,
 * and refuses bad options. Prints the measured figures. The cases that read the data set are
 * tagged "fmnist" and skip (ctest's unit.train.fmnist, exit 77) when it is not installed. */
#include "ordo_check.h"
#include "core/nn.h"
#include "worker/train.h"

#include <stdio.h>
#include <string.h>

static ordo__train_opts_t opts(const char *net, int workers, int epochs, long iterations)
{
    return (ordo__train_opts_t){.network = net,
                               .data_dir = ordo_ck_fmnist_dir(),
                               .kind = ORDO_COMPUTE_CPU,
                               .workers = workers,
                               .batch = 64,
                               .epochs = epochs,
                               .iterations = iterations,
                               .seed = 1,
                               .lr = 0.01,
                               .momentum = 0.9,
                               .weight_decay = 0.0};
}

static void report(const char *what, const ordo__train_opts_t *o, const ordo__train_result_t *r)
{
    printf("%s: %s, %d worker(s) x batch %d, %ld iterations: last loss %.4f, test loss %.4f, "
           "test accuracy %.4f, %.1f s, %.0f samples/s\n",
           what, o->network, o->workers, o->batch, r->iterations, r->last_loss, r->test_loss,
           r->test_accuracy, r->train_seconds, r->samples_per_s);
}

START_TEST(mlp_learns_in_300_iterations)
{
    ordo__train_opts_t o = opts("mlp", 1, 0, 300);
    ordo__train_result_t r;
    ORDO_CK_OK(ordo__train_local(&o, &r));
    report("short", &o, &r);
    ck_assert_int_eq(r.iterations, 300);
    ck_assert_double_ge(r.test_accuracy, 0.75);
    ck_assert_double_lt(r.test_loss, 0.8);
}
END_TEST

START_TEST(mlp_reaches_84_percent_in_one_epoch_with_two_workers)
{
    ordo__train_opts_t o = opts("mlp", 2, 1, 0);
    ordo__train_result_t r;
    ORDO_CK_OK(ordo__train_local(&o, &r));
    report("one epoch", &o, &r);
    ck_assert_int_eq(r.iterations, (60000 / 2) / 64); /* 468 global iterations */
    ck_assert_double_ge(r.test_accuracy, 0.84);
}
END_TEST

START_TEST(training_is_deterministic_for_a_seed)
{
    ordo__train_opts_t o = opts("mlp", 2, 0, 3);
    ordo__train_t *a = NULL, *b = NULL, *c = NULL;
    ORDO_CK_OK(ordo__train_new(&o, &a));
    ORDO_CK_OK(ordo__train_new(&o, &b));
    o.seed = 2;
    ORDO_CK_OK(ordo__train_new(&o, &c));
    ck_assert_int_eq(ordo__train_iterations_per_epoch(a), 468);
    for (int i = 0; i < 3; i++) {
        double la, lb, lc;
        ORDO_CK_OK(ordo__train_step(a, &la));
        ORDO_CK_OK(ordo__train_step(b, &lb));
        ORDO_CK_OK(ordo__train_step(c, &lc));
        ck_assert_double_eq(la, lb);
        ck_assert(la > 0.1 && la < 5);
    }
    const ordo__model_t *m = ordo__train_model(a);
    int differ = 0;
    for (int p = 0; p < m->n_params; p++) {
        size_t bytes = sizeof(float) * (size_t)m->params[p].numel;
        ck_assert_mem_eq(ordo__train_params(a)[p], ordo__train_params(b)[p], bytes);
        differ += memcmp(ordo__train_params(a)[p], ordo__train_params(c)[p], bytes) != 0;
    }
    ck_assert_int_eq(differ, m->n_params);
    ordo__train_destroy(&a);
    ordo__train_destroy(&b);
    ordo__train_destroy(&c);
    ck_assert_ptr_null(a);
}
END_TEST

START_TEST(bad_options_are_refused)
{
    ordo__train_t *t = NULL;
    ordo__train_opts_t o = opts("mlp", 0, 1, 0);
    ORDO_CK_ERR(ordo__train_new(&o, &t), ORDO_ERR_INVAL);
    o = opts("mlp", 1, 0, 0);
    ORDO_CK_ERR(ordo__train_new(&o, &t), ORDO_ERR_INVAL);
    o = opts("vgg", 1, 1, 0);
    ORDO_CK_ERR(ordo__train_new(&o, &t), ORDO_ERR_NOTFOUND);
    o = opts("mlp", 1, 1, 0);
    o.data_dir = "/nonexistent";
    ORDO_CK_ERR(ordo__train_new(&o, &t), ORDO_ERR_NOTFOUND);
    ck_assert(strstr(ordo__error_detail(), "/nonexistent/train-images-idx3-ubyte.gz"));
    ck_assert_ptr_null(t);
}
END_TEST

START_TEST(cnn_reaches_86_percent_in_two_epochs_with_two_workers)
{
    ordo__train_opts_t o = opts("cnn", 2, 2, 0);
    o.lr = 0.02;
    ordo__train_result_t r;
    ORDO_CK_OK(ordo__train_local(&o, &r));
    report("two epochs", &o, &r);
    ck_assert_int_eq(r.iterations, 2 * 468);
    ck_assert_double_ge(r.test_accuracy, 0.86);
}
END_TEST

static Suite *train_suite(void)
{
    Suite *s = suite_create("train");
    TCase *t = tcase_create("options");
    tcase_add_test(t, bad_options_are_refused);
    suite_add_tcase(s, t);
    /* Tagged "fmnist": ctest's unit.train.fmnist runs these alone and skips without the data. */
    t = tcase_create("mlp");
    tcase_set_tags(t, "fmnist");
    tcase_set_timeout(t, 240);
    tcase_add_test(t, mlp_learns_in_300_iterations);
    tcase_add_test(t, mlp_reaches_84_percent_in_one_epoch_with_two_workers);
    tcase_add_test(t, training_is_deterministic_for_a_seed);
    suite_add_tcase(s, t);
    /* Tagged "long": the other entries exclude it and unit.train_long (label long, needs
     * fmnist) runs it alone (CK_INCLUDE_TAGS=long); minutes on 2 cores. */
    t = tcase_create("long");
    tcase_set_tags(t, "long");
    tcase_set_timeout(t, 1200);
    tcase_add_test(t, cnn_reaches_86_percent_in_two_epochs_with_two_workers);
    suite_add_tcase(s, t);
    return s;
}

ORDO_CK_MAIN(train_suite)
