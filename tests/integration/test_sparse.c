/* Integration test: sparse pushes ([push] mode = sparse) in whole runs started with
 * ordo-launch, training the mlp on Fashion-MNIST.
 *   equivalence: density 100% gives the same parameters as dense pushes (1e-6 relative);
 *   handover:    with the global threshold agreed every iteration the selection does not
 *                depend on the regions, so re-balancing every 5 iterations (values and
 *                momentum handed between servers) gives bit-identical parameters to never
 *                re-balancing;
 *   traffic:     at density 1%, 4 workers and 2 servers, every worker-iteration's payload
 *                bytes pushed plus pulled stay within 2 x 8 x k x 1.25, the counters in
 *                metrics.jsonl agree with each other and with the summary, and the load per
 *                server (entries pushed to it) is within 1.5x the mean in every region epoch
 *                after the first re-balancing;
 *   convergence (tag long): after 3 epochs at density 1% the test accuracy is within 2
 *                points of dense pushes. */
#include "run_util.h"
#include "common/error.h"
#include "core/paramfile.h"
#include "tests/unit/ordo_check.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MLP_N 235146 /* 784*256+256 + 256*128+128 + 128*10+10 */

static const char base_conf[] = "[cluster]\n"
                                "servers = 2\n"
                                "[model]\n"
                                "trainer = mlp\n"
                                "compute = cpu\n"
                                "batch = 64\n"
                                "seed = 3\n"
                                "[optimizer]\n"
                                "lr = 0.01\n"
                                "momentum = 0.9\n"
                                "weight_decay = 0.0005\n"
                                "[output]\n"
                                "progress_every = 100\n";

/* largest |a - b| over a tensor relative to its largest |b|; counts identical values */
static double rel_diff(const float *a, const float *b, int64_t n, int64_t *identical)
{
    double diff = 0, scale = 0;
    for (int64_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - (double)b[i]);
        if (d > diff) diff = d;
        if (fabs((double)b[i]) > scale) scale = fabs((double)b[i]);
        *identical += a[i] == b[i];
    }
    return scale > 0 ? diff / scale : diff;
}

static ordo__paramfile_t *params_of(const it_run_t *r)
{
    ordo__paramfile_t *pf = NULL;
    ORDO_CK_OK(ordo__paramfile_read(it_run_path(r, "params.bin"), &pf));
    return pf;
}

/* the worst relative difference over the tensors of two runs' params.bin */
static double compare_params(const it_run_t *a, const it_run_t *b, int64_t *identical,
                             int64_t *total)
{
    ordo__paramfile_t *pa = params_of(a), *pb = params_of(b);
    ck_assert_int_eq(pa->n, pb->n);
    ck_assert_int_eq(pa->iteration, pb->iteration);
    double worst = 0;
    *identical = *total = 0;
    for (int p = 0; p < pa->n; p++) {
        ck_assert_str_eq(pa->names[p], pb->names[p]);
        ck_assert_int_eq(pa->numel[p], pb->numel[p]);
        double d = rel_diff(pa->values[p], pb->values[p], pa->numel[p], identical);
        *total += pa->numel[p];
        printf("  %-6s %7lld values: relative difference %.3g\n", pa->names[p],
               (long long)pa->numel[p], d);
        if (d > worst) worst = d;
    }
    ordo__paramfile_destroy(&pa);
    ordo__paramfile_destroy(&pb);
    return worst;
}

START_TEST(density_one_equals_dense)
{
    it_run_t dense, sparse;
    ck_assert_int_eq(it_run_launch(&dense, base_conf, 240, "--cluster.workers=2",
                                   "--model.iterations=40", "--output.save_params=true", NULL),
                     0);
    ck_assert_int_eq(
        it_run_launch(&sparse, base_conf, 240, "--cluster.workers=2", "--model.iterations=40",
                      "--output.save_params=true", "--push.mode=sparse", "--push.density=1",
                      "--push.threshold_period=4", "--push.repartition_period=10", NULL),
        0);
    int64_t identical, total;
    double worst = compare_params(&sparse, &dense, &identical, &total);
    printf("density 100%% vs dense, 40 iterations: worst relative difference %.3g, %lld of %lld "
           "values bit-identical\n",
           worst, (long long)identical, (long long)total);
    ck_assert_int_eq(total, MLP_N);
    ck_assert_msg(worst <= 1e-6, "sparse at density 1 differs from dense by %.3g relative", worst);
    /* every push held every entry: 8 bytes per entry both ways */
    json_t *metrics = it_run_metrics(&sparse);
    ck_assert_ptr_nonnull(metrics);
    ck_assert_int_eq(json_array_size(metrics), 2 * 40);
    size_t i;
    json_t *l;
    json_array_foreach(metrics, i, l)
    {
        ck_assert_int_eq((int64_t)it_num(l, "sparse_k"), MLP_N);
        ck_assert_int_eq((int64_t)it_num(l, "sparse_local"), MLP_N);
        ck_assert_int_eq((int64_t)it_num(l, "sparse_global"), MLP_N);
        ck_assert_int_eq((int64_t)it_num(l, "bytes_push"), 8 * MLP_N);
        ck_assert_int_eq((int64_t)it_num(l, "bytes_pull"), 8 * MLP_N);
    }
    json_decref(metrics);
    ck_assert(it_run_log_has(&sparse, "differ from this worker's copy in 0 of 235146 entries"));
    it_run_destroy(&dense);
    it_run_destroy(&sparse);
}
END_TEST

START_TEST(rebalancing_hands_over_exactly)
{
    it_run_t moving, fixed;
    ck_assert_int_eq(
        it_run_launch(&moving, base_conf, 240, "--cluster.workers=3", "--model.iterations=60",
                      "--output.save_params=true", "--push.mode=sparse", "--push.density=0.01",
                      "--push.threshold_period=1", "--push.repartition_period=5", NULL),
        0);
    ck_assert_int_eq(
        it_run_launch(&fixed, base_conf, 240, "--cluster.workers=3", "--model.iterations=60",
                      "--output.save_params=true", "--push.mode=sparse", "--push.density=0.01",
                      "--push.threshold_period=1", "--push.repartition_period=1000", NULL),
        0);
    int64_t identical, total;
    double worst = compare_params(&moving, &fixed, &identical, &total);
    printf("re-balancing every 5 iterations vs never: worst relative difference %.3g, %lld of "
           "%lld values bit-identical\n",
           worst, (long long)identical, (long long)total);
    ck_assert_int_eq(identical, total);
    /* the regions did move: 11 re-balancings, with ranges handed over */
    json_t *sum = it_run_summary(&moving);
    ck_assert_ptr_nonnull(sum);
    json_t *sp = json_object_get(sum, "sparse");
    ck_assert_int_eq((int)it_num(sp, "epochs"), 12);
    json_decref(sum);
    ck_assert(it_run_log_has(&moving, "regions of epoch 11 from iteration 55"));
    ck_assert(!it_run_log_has(&moving, ", 0 entries handed over"));
    ck_assert(!it_run_log_has(&moving, ", 0 taken over"));
    ck_assert(it_run_log_has(&moving, "differ from this worker's copy in 0 of 235146 entries"));
    ck_assert(!it_run_log_has(&fixed, "regions of epoch 1 "));
    it_run_destroy(&moving);
    it_run_destroy(&fixed);
}
END_TEST

START_TEST(traffic_and_load_stay_bounded)
{
    it_run_t run;
    ck_assert_int_eq(it_run_launch(&run, base_conf, 280, "--cluster.workers=4", "--model.epochs=1",
                                   "--push.mode=sparse", "--push.density=0.01",
                                   "--push.threshold_period=8", "--push.repartition_period=64",
                                   NULL),
                     0);
    json_t *metrics = it_run_metrics(&run);
    ck_assert_ptr_nonnull(metrics);
    int iters = 60000 / 4 / 64; /* 234 */
    ck_assert_int_eq(json_array_size(metrics), 4 * iters);
    int64_t k = 2351; /* round(0.01 * 235146) */
    double bound = 2.0 * 8.0 * (double)k * 1.25, worst = 0;
    int epochs = 0;
    double load[16][2] = {{0}};
    size_t i;
    json_t *l;
    json_array_foreach(metrics, i, l)
    {
        int64_t push = (int64_t)it_num(l, "bytes_push"), pull = (int64_t)it_num(l, "bytes_pull");
        int64_t local = (int64_t)it_num(l, "sparse_local");
        int64_t global = (int64_t)it_num(l, "sparse_global");
        int64_t s0 = (int64_t)it_num(l, "sparse_load_s0"),
                s1 = (int64_t)it_num(l, "sparse_load_s1");
        int e = (int)it_num(l, "sparse_epoch");
        ck_assert_int_eq((int64_t)it_num(l, "sparse_k"), k);
        /* payloads are 8 bytes per entry, and the per-server counts add up */
        ck_assert_int_eq(push, 8 * local);
        ck_assert_int_eq(pull, 8 * global);
        ck_assert_int_eq(s0 + s1, local);
        ck_assert(it_num(l, "sparse_consumed") <= (double)local);
        /* exact iterations push exactly k; a reused threshold at most 1.15 k */
        if (it_num(l, "sparse_exact") == 1) ck_assert_int_eq(local, k);
        ck_assert_msg((double)local <= 1.15 * (double)k, "iteration %d pushed %lld entries",
                      (int)it_num(l, "iter"), (long long)local);
        ck_assert_msg((double)(push + pull) <= bound,
                      "worker %d iteration %d: %lld bytes, bound %.0f", (int)it_num(l, "worker"),
                      (int)it_num(l, "iter"), (long long)(push + pull), bound);
        if ((double)(push + pull) / bound > worst) worst = (double)(push + pull) / bound;
        ck_assert(e >= 0 && e < 16);
        /* region epoch e starts at iteration 64 e */
        ck_assert_int_eq(e, (int)it_num(l, "iter") / 64);
        load[e][0] += (double)s0;
        load[e][1] += (double)s1;
        if (e + 1 > epochs) epochs = e + 1;
    }
    json_decref(metrics);
    ck_assert_int_eq(epochs, 4); /* re-balanced at iterations 64, 128 and 192 */
    double after = 0;
    for (int e = 0; e < epochs; e++) {
        double im = 2 * fmax(load[e][0], load[e][1]) / (load[e][0] + load[e][1]);
        printf("region epoch %d: load per server %.0f / %.0f entries, max / mean %.3f\n", e,
               load[e][0], load[e][1], im);
        if (e > 0) {
            ck_assert_msg(im <= 1.5, "epoch %d: load max / mean %.3f", e, im);
            if (im > after) after = im;
        }
    }
    printf("bytes per worker-iteration at most %.3f of the bound %.0f\n", worst, bound);
    json_t *sum = it_run_summary(&run);
    ck_assert_ptr_nonnull(sum);
    json_t *sp = json_object_get(sum, "sparse");
    ck_assert_ptr_nonnull(sp);
    ck_assert_int_eq((int64_t)it_num(sp, "k"), k);
    ck_assert_int_eq((int)it_num(sp, "epochs"), epochs);
    ck_assert_int_eq((int)it_num(sp, "servers"), 2);
    ck_assert_double_eq_tol(it_num(sp, "bytes_bound"), bound, 1e-9);
    ck_assert_double_eq_tol(it_num(sp, "bytes_over_bound_max"), worst, 1e-9);
    ck_assert_double_eq_tol(it_num(sp, "imbalance_after_rebalance_max"), after, 1e-9);
    printf("selected per worker-iteration: %.0f locally, %.0f globally (k = %lld); test accuracy "
           "%.4f\n",
           it_num(sp, "local_mean"), it_num(sp, "global_mean"), (long long)k,
           it_num(sum, "test_accuracy"));
    ck_assert(it_num(sum, "test_accuracy") > 0.75);
    json_decref(sum);
    ck_assert(it_run_log_has(&run, "differ from this worker's copy in 0 of 235146 entries"));
    it_run_destroy(&run);
}
END_TEST

START_TEST(one_percent_converges_like_dense)
{
    it_run_t dense, sparse;
    ck_assert_int_eq(
        it_run_launch(&dense, base_conf, 900, "--cluster.workers=4", "--model.epochs=3", NULL), 0);
    ck_assert_int_eq(it_run_launch(&sparse, base_conf, 900, "--cluster.workers=4",
                                   "--model.epochs=3", "--push.mode=sparse", "--push.density=0.01",
                                   "--push.threshold_period=8", NULL),
                     0);
    json_t *sd = it_run_summary(&dense), *ss = it_run_summary(&sparse);
    ck_assert_ptr_nonnull(sd);
    ck_assert_ptr_nonnull(ss);
    double ad = it_num(sd, "test_accuracy"), as = it_num(ss, "test_accuracy");
    printf("mlp, 3 epochs, 4 workers: test accuracy dense %.4f, sparse 1%% %.4f (%+.2f points); "
           "bytes per worker-iteration %.0f vs %.0f\n",
           ad, as, 100 * (as - ad), it_num(sd, "bytes_per_iter"), it_num(ss, "bytes_per_iter"));
    ck_assert(ad > 0.8);
    ck_assert_msg(as >= ad - 0.02, "sparse %.4f is more than 2 points below dense %.4f", as, ad);
    json_decref(sd);
    json_decref(ss);
    it_run_destroy(&dense);
    it_run_destroy(&sparse);
}
END_TEST

static Suite *sparse_suite(void)
{
    Suite *s = suite_create("sparse");
    TCase *t = tcase_create("runs");
    tcase_set_timeout(t, 290);
    tcase_add_test(t, density_one_equals_dense);
    tcase_add_test(t, rebalancing_hands_over_exactly);
    tcase_add_test(t, traffic_and_load_stay_bounded);
    suite_add_tcase(s, t);
    t = tcase_create("convergence");
    tcase_set_tags(t, "long");
    tcase_set_timeout(t, 1500);
    tcase_add_test(t, one_percent_converges_like_dense);
    suite_add_tcase(s, t);
    return s;
}

ORDO_CK_MAIN(sparse_suite)
