/* Integration test: intra-host groups ([cluster] local_size, [intra] backend = shm,
 * client/push_hier.c). A real cluster (1 scheduler, 2 servers, 4 ordo-worker processes in two
 * emulated hosts of 2) trains the mlp from a fixed seed; worker 0 saves the final parameters.
 * They must equal the single-process reference trainer's over the same 4 workers' batches
 * within 1e-5 relative, with dense and with merged pushes inside the groups (merged with
 * intra.backend = auto, which ordo-worker computing on the CPU resolves to shm). With dense
 * pushes the members read the values where the group shares them ([intra] values = shared,
 * the default): worker 0's evaluations between iterations (model.eval_every) and its final
 * parameters must equal those of the same groups with values = copy, bit for bit, and so must
 * the final parameters of the same groups on a slow link (the next iteration's forward pass
 * running while the owners' pushes are still on the wire); merged
 * pushes run with values = copy. The reference sums as the groups do (each group's members,
 * then the groups' sums), since on some CPUs training amplifies the 1e-7 of another order
 * past 1e-3 within 20 iterations. The bytes
 * between workers and servers per iteration (summary.json network_bytes_per_iter) must be at
 * most 0.55 of the flat run's (every worker talking to the servers). */
#include "run_util.h"
#include "common/error.h"
#include "core/paramfile.h"
#include "worker/train.h"
#include "tests/unit/ordo_check.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define W        4
#define ITERS    20
#define SEED     7
#define BATCH    64
#define LR       0.02
#define MOMENTUM 0.9
#define WD       0.0005
#define TOL      1e-5
#define EVERY    5    /* model.eval_every */
#define EVALS    1000 /* model.eval_samples */

static const char conf_text[] = "[cluster]\n"
                                "servers = 2\n"
                                "workers = 4\n"
                                "local_size = 2\n"
                                "[intra]\n"
                                "backend = shm\n"
                                "[model]\n"
                                "trainer = mlp\n"
                                "compute = cpu\n"
                                "batch = 64\n"
                                "iterations = 20\n"
                                "seed = 7\n"
                                "eval_every = 5\n"
                                "eval_samples = 1000\n"
                                "[optimizer]\n"
                                "lr = 0.02\n"
                                "momentum = 0.9\n"
                                "weight_decay = 0.0005\n"
                                "[output]\n"
                                "save_params = true\n";

/* largest |a - b| over the tensor, relative to its largest |b| */
static double rel_diff(const float *a, const float *b, int64_t n)
{
    double diff = 0, scale = 0;
    for (int64_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - (double)b[i]);
        if (d > diff) diff = d;
        if (fabs((double)b[i]) > scale) scale = fabs((double)b[i]);
    }
    return scale > 0 ? diff / scale : diff;
}

/* the run's params.bin against the reference trainer's parameters */
static void check_equals_reference(const it_run_t *run)
{
    ordo__paramfile_t *pf = NULL;
    ORDO_CK_OK(ordo__paramfile_read(it_run_path(run, "params.bin"), &pf));
    ck_assert_int_eq(pf->iteration, ITERS);
    ordo__train_opts_t o = {.network = "mlp",
                           .data_dir = ordo_ck_fmnist_dir(),
                           .kind = ORDO_COMPUTE_CPU,
                           .workers = W,
                           .batch = BATCH,
                           .iterations = ITERS,
                           .seed = SEED,
                           .lr = LR,
                           .momentum = MOMENTUM,
                           .weight_decay = WD,
                           .local_size = 2}; /* the groups' sums, as the run sums them */
    ordo__train_t *ref = NULL;
    ORDO_CK_OK(ordo__train_new(&o, &ref));
    const ordo__model_t *m = ordo__train_model(ref);
    ORDO_CK_OK(ordo__paramfile_match(pf, m));
    for (int i = 0; i < ITERS; i++)
        ORDO_CK_OK(ordo__train_step(ref, NULL));
    double worst = 0;
    for (int p = 0; p < m->n_params; p++) {
        double d = rel_diff(pf->values[p], ordo__train_params(ref)[p], m->params[p].numel);
        ck_assert_msg(d <= TOL, "%s differs from the reference by %.3g relative (limit %g)",
                      m->params[p].name, d, TOL);
        if (d > worst) worst = d;
    }
    printf("groups of 2 vs the reference after %d iterations: worst relative difference %.3g\n",
           ITERS, worst);
    ordo__train_destroy(&ref);
    ordo__paramfile_destroy(&pf);
}

/* worker 0's test accuracy after each EVERY-th iteration (metrics.jsonl), into acc */
static void evaluations(const it_run_t *run, double acc[ITERS / EVERY])
{
    json_t *lines = it_run_metrics(run);
    ck_assert_ptr_nonnull(lines);
    int n = 0;
    size_t i;
    json_t *l;
    json_array_foreach(lines, i, l) {
        double a = it_num(l, "test_accuracy");
        if (isnan(a)) continue;
        int t = (int)it_num(l, "iter");
        ck_assert_msg(it_num(l, "worker") == 0 && (t + 1) % EVERY == 0 && n < ITERS / EVERY,
                      "an evaluation at iteration %d", t);
        acc[t / EVERY] = a;
        n++;
    }
    ck_assert_int_eq(n, ITERS / EVERY);
    json_decref(lines);
}

/* the params.bin of two runs, tensor by tensor */
static double params_diff(const it_run_t *a, const it_run_t *b)
{
    ordo__paramfile_t *pa = NULL, *pb = NULL;
    ORDO_CK_OK(ordo__paramfile_read(it_run_path(a, "params.bin"), &pa));
    ORDO_CK_OK(ordo__paramfile_read(it_run_path(b, "params.bin"), &pb));
    ck_assert_int_eq(pa->n, pb->n);
    double worst = 0;
    for (int p = 0; p < pa->n; p++) {
        ck_assert_int_eq(pa->numel[p], pb->numel[p]);
        double d = rel_diff(pa->values[p], pb->values[p], pa->numel[p]);
        if (d > worst) worst = d;
    }
    ordo__paramfile_destroy(&pa);
    ordo__paramfile_destroy(&pb);
    return worst;
}

static double network_bytes(const it_run_t *run)
{
    json_t *s = it_run_summary(run);
    ck_assert_ptr_nonnull(s);
    double b = it_num(s, "network_bytes_per_iter");
    json_decref(s);
    return b;
}

START_TEST(dense_groups_equal_the_reference_and_halve_the_bytes)
{
    it_run_t run, copy, flat;
    ck_assert_int_eq(it_run_launch(&run, conf_text, 200, NULL), 0);
    ck_assert(it_run_log_has(&run, "intra: group 1 member 1 of 2 (shm, dense pushes inside, "
                                   "values shared"));
    check_equals_reference(&run);
    json_t *s = it_run_summary(&run);
    ck_assert_ptr_nonnull(json_object_get(s, "intra_ms"));
    json_decref(s);
    ck_assert_int_eq(it_run_launch(&copy, conf_text, 200, "--intra.values=copy", NULL), 0);
    ck_assert_int_eq(it_run_launch(&flat, conf_text, 200, "--intra.backend=none", NULL), 0);
    /* the values each evaluation and the final parameters see are those of the same groups
     * copying their values: the same sums in the same order, so the same bits (a flat run
     * sums in another order, and on some CPUs training amplifies that 1e-7 past 1e-3 within
     * 20 iterations) */
    double ga[ITERS / EVERY], ca[ITERS / EVERY];
    evaluations(&run, ga);
    evaluations(&copy, ca);
    for (int e = 0; e < ITERS / EVERY; e++) {
        printf("test accuracy after iteration %d: %.4f with shared values, %.4f copied\n",
               (e + 1) * EVERY - 1, ga[e], ca[e]);
        ck_assert_msg(ga[e] == ca[e], "evaluation %d: %.4f with shared values, %.4f copied", e,
                      ga[e], ca[e]);
    }
    double pd = params_diff(&run, &copy);
    printf("final parameters, shared values vs copied: worst relative difference %.3g\n", pd);
    ck_assert_msg(pd == 0, "the final parameters differ from the copied run's by %.3g", pd);
    /* on a slow link each iteration ends once the group summed its gradients, and the next
     * forward pass runs while the owners' pushes are still on the wire: the same bits */
    it_run_t slow;
    ck_assert_int_eq(it_run_launch(&slow, conf_text, 200, "--net.bandwidth=100mbit",
                                   "--net.latency_us=5000", NULL), 0);
    pd = params_diff(&run, &slow);
    printf("final parameters, slow link vs none: worst relative difference %.3g\n", pd);
    ck_assert_msg(pd == 0, "the final parameters on a slow link differ by %.3g", pd);
    it_run_destroy(&slow);
    double hb = network_bytes(&run), fb = network_bytes(&flat);
    printf("network bytes per iteration: %.0f with groups of 2, %.0f flat (%.3f x)\n", hb, fb,
           hb / fb);
    ck_assert_msg(hb > 0 && hb <= 0.55 * fb, "groups of 2 move %.0f bytes per iteration, the "
                  "flat run %.0f", hb, fb);
    it_run_destroy(&flat);
    it_run_destroy(&copy);
    it_run_destroy(&run);
}
END_TEST

/* with intra.backend = auto: ordo-worker's tensors are where it computes (cpu): shm; each
 * member copies the values into its own buffers (intra.values = copy) */
START_TEST(merged_groups_equal_the_reference)
{
    it_run_t run;
    ck_assert_int_eq(it_run_launch(&run, conf_text, 200, "--push.mode=merged",
                                   "--intra.backend=auto", "--intra.values=copy", NULL), 0);
    ck_assert(it_run_log_has(&run, "intra.backend = auto: group 1 takes shm"));
    ck_assert(it_run_log_has(&run, "intra.backend = auto: shm (intra.device cpu)"));
    ck_assert(it_run_log_has(&run, "intra: group 0 member 0 of 2 (shm, merged pushes inside, "
                                   "values copied"));
    check_equals_reference(&run);
    it_run_destroy(&run);
}
END_TEST

START_TEST(sparse_pushes_are_refused_with_groups)
{
    it_run_t run;
    ck_assert_int_ne(it_run_launch(&run, conf_text, 100, "--push.mode=sparse", NULL), 0);
    ck_assert(it_run_log_has(&run, "sparse pushes keep the flat path"));
    it_run_destroy(&run);
}
END_TEST

/* (replicated servers work with shm groups: integration.replicas_groups) */
START_TEST(stale_sync_and_backup_workers_are_refused_with_groups)
{
    it_run_t run;
    ck_assert_int_ne(it_run_launch(&run, conf_text, 100, "--sync.mode=ssp", NULL), 0);
    ck_assert(it_run_log_has(&run, "sync.mode = ssp needs intra.backend = none"));
    it_run_destroy(&run);
    ck_assert_int_ne(it_run_launch(&run, conf_text, 100, "--sync.backup=1", NULL), 0);
    ck_assert(it_run_log_has(&run, "sync.mode = bsp with sync.backup needs intra.backend = none"));
    it_run_destroy(&run);
}
END_TEST

static Suite *intra_suite(void)
{
    Suite *s = suite_create("intra");
    TCase *tc = tcase_create("mlp");
    tcase_set_timeout(tc, 280);
    tcase_add_test(tc, dense_groups_equal_the_reference_and_halve_the_bytes);
    tcase_add_test(tc, merged_groups_equal_the_reference);
    tcase_add_test(tc, sparse_pushes_are_refused_with_groups);
    tcase_add_test(tc, stale_sync_and_backup_workers_are_refused_with_groups);
    suite_add_tcase(s, tc);
    return s;
}

ORDO_CK_MAIN(intra_suite)
