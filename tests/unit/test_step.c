/* Tests of planner/step: the training step model's bound, slices, priorities and credit. */
#include "planner/step.h"
#include "planner/step_search.h"
#include "ordering_fixtures.h"

#include <math.h>

static ordo__oracle_times_t *times_of(const ordo__model_t *m)
{
    ordo__oracle_times_t *t;
    ORDO_CK_OK(ordo__oracle_times_new(m, 1e9, 0, NULL, &t));
    return t;
}

static ordo__step_opts_t opts(int workers)
{
    return (ordo__step_opts_t){.n_workers = workers,
                              .n_channels = 1,
                              .bandwidth_bps = 1e9,
                              .latency_us = 0,
                              .msg_us = 0,
                              .slice_bytes = 0,
                              .credit_bytes = 1 << 20,
                              .early_pulls = 1};
}

/* the bound is the busiest resource: compute, a worker's pushes, or W answers per slice */
START_TEST(bound_is_the_busiest_resource)
{
    ordo__model_t *m = fx_seq32();
    ordo__oracle_times_t *t = times_of(m);
    ordo__step_opts_t o = opts(3);
    ordo__step_result_t r;
    ORDO_CK_OK(ordo__step_simulate(m, t, NULL, &o, &r));
    double compute = 0, push = 0;
    for (int j = 0; j < m->n_ops; j++)
        compute += t->fwd_us[j] + t->bwd_us[j];
    for (int p = 0; p < m->n_params; p++)
        push += (double)(m->params[p].bytes + 64) * 8e6 / 1e9;
    ck_assert_double_eq_tol(r.compute_us, compute, 1e-6);
    ck_assert_double_eq_tol(r.push_us, push, 1e-6);
    ck_assert_double_eq_tol(r.answer_us, 3 * push, 1e-6);
    ck_assert_double_eq_tol(r.bound_us, fmax(compute, 3 * push), 1e-6);
    ck_assert_double_ge(r.step_us, r.bound_us - 1e-6);
    ck_assert_int_eq(r.n_messages, m->n_params);
    ordo__oracle_times_destroy(&t);
    ordo__model_destroy(&m);
}
END_TEST

/* slices: a tensor of 8 KiB in slices of at most 3000 bytes is three messages */
START_TEST(slices_cut_tensors)
{
    ordo__model_t *m = ordo__model_new("one", 1, NULL);
    fx_param(m, "w", 2048);
    fx_op(m, "op", NULL, FX_L("w"), 10, 10);
    ORDO_CK_OK(ordo__model_check(m));
    ordo__oracle_times_t *t = times_of(m);
    ordo__step_opts_t o = opts(1);
    o.slice_bytes = 3000;
    ordo__step_result_t r;
    ORDO_CK_OK(ordo__step_simulate(m, t, NULL, &o, &r));
    ck_assert_int_eq(r.n_messages, 3);
    o.slice_bytes = -1;
    ORDO_CK_ERR(ordo__step_simulate(m, t, NULL, &o, &r), ORDO_ERR_INVAL);
    ordo__oracle_times_destroy(&t);
    ordo__model_destroy(&m);
}
END_TEST

/* small S feeds the first op, big B the second: B's gradient is ready first, S's a little
 * later. With S first in priority and a small credit, S overtakes the queued slices of B and
 * the next forward pass starts its first op while B still travels; with a credit that lets
 * all of B onto the link, or with no order, S waits behind B. */
static ordo__model_t *late_first_layer(void)
{
    ordo__model_t *m = ordo__model_new("late", 1, NULL);
    fx_param(m, "S", 1000);
    fx_param(m, "B", 4 << 20); /* 16 MiB: 134 ms at 1gbit */
    fx_op(m, "op1", NULL, FX_L("S"), 50000, 1000);
    fx_op(m, "op2", FX_L("op1"), FX_L("B"), 1000, 1000);
    ORDO_CK_OK(ordo__model_check(m));
    return m;
}

START_TEST(credit_lets_a_late_high_priority_gradient_overtake)
{
    ordo__model_t *m = late_first_layer();
    ordo__oracle_times_t *t = times_of(m);
    ordo__step_opts_t o = opts(1);
    o.slice_bytes = 256 << 10;
    int prio[] = {0, 1};
    ordo__step_result_t small, big, none;
    o.credit_bytes = 64 << 10;
    ORDO_CK_OK(ordo__step_simulate(m, t, prio, &o, &small));
    o.credit_bytes = 64 << 20;
    ORDO_CK_OK(ordo__step_simulate(m, t, prio, &o, &big));
    o.credit_bytes = 64 << 10;
    ORDO_CK_OK(ordo__step_simulate(m, t, NULL, &o, &none));
    /* op1's 50 ms forward hides behind B's transfer only when S overtakes */
    ck_assert_double_lt(small.step_us + 40000, big.step_us);
    ck_assert_double_lt(small.step_us + 40000, none.step_us);
    ck_assert_double_ge(small.step_us, small.bound_us - 1e-6);
    ordo__oracle_times_destroy(&t);
    ordo__model_destroy(&m);
}
END_TEST

/* tuning returns one of its candidates and a step no longer than any other candidate's */
START_TEST(tune_picks_the_shortest_modelled_step)
{
    ordo__model_t *m = late_first_layer();
    ordo__oracle_times_t *t = times_of(m);
    ordo__step_opts_t o = opts(2);
    int prio[] = {0, 1};
    int64_t slice = 0, credit = 0;
    ordo__step_result_t best, r;
    o.slice_bytes = -1; /* both auto: tuned */
    o.credit_bytes = -1;
    ORDO_CK_OK(ordo__step_tune(m, t, prio, &o, &slice, &credit, &best));
    ck_assert_int_gt(slice, 0);
    ck_assert_int_gt(credit, 0);
    o.slice_bytes = slice;
    o.credit_bytes = credit;
    ORDO_CK_OK(ordo__step_simulate(m, t, prio, &o, &r));
    ck_assert_double_eq_tol(r.step_us, best.step_us, 1e-6);
    o.slice_bytes = 4 << 20;
    o.credit_bytes = 4 << 20;
    ORDO_CK_OK(ordo__step_simulate(m, t, prio, &o, &r));
    ck_assert_double_le(best.step_us, r.step_us + 1e-6);
    ordo__oracle_times_destroy(&t);
    ordo__model_destroy(&m);
}
END_TEST

/* a value the caller fixed is kept: only the auto (negative) one is tuned */
START_TEST(tune_keeps_a_fixed_slice)
{
    ordo__model_t *m = late_first_layer();
    ordo__oracle_times_t *t = times_of(m);
    ordo__step_opts_t o = opts(2);
    int prio[] = {0, 1};
    int64_t slice = 0, credit = 0;
    ordo__step_result_t best;
    o.slice_bytes = 3 << 20;
    o.credit_bytes = -1;
    ORDO_CK_OK(ordo__step_tune(m, t, prio, &o, &slice, &credit, &best));
    ck_assert_int_eq(slice, 3 << 20);
    ck_assert_int_gt(credit, 0);
    /* tune_auto fills in the auto credit with the same value and keeps the slice */
    ORDO_CK_OK(ordo__step_tune_auto(m, t, prio, &o));
    ck_assert_int_eq(o.slice_bytes, 3 << 20);
    ck_assert_int_eq(o.credit_bytes, credit);
    o.credit_bytes = 123456; /* nothing auto: nothing changes */
    ORDO_CK_OK(ordo__step_tune_auto(m, t, prio, &o));
    ck_assert_int_eq(o.slice_bytes, 3 << 20);
    ck_assert_int_eq(o.credit_bytes, 123456);
    ordo__oracle_times_destroy(&t);
    ordo__model_destroy(&m);
}
END_TEST

/* a measured step made with a per-message cost of 3 ms and twice the profile's compute: the
 * fit finds the compute factor, a message cost that gives the measured step, and the credit
 * tuning on that model picks */
START_TEST(correct_fits_compute_and_message_cost)
{
    ordo__model_t *m = late_first_layer();
    ordo__oracle_times_t *t = times_of(m), *t2 = times_of(m);
    for (int j = 0; j < m->n_ops; j++) {
        t2->fwd_us[j] *= 2;
        t2->bwd_us[j] *= 2;
    }
    ordo__step_opts_t o = opts(2);
    o.slice_bytes = 256 << 10;
    o.credit_bytes = 4 << 20;
    int prio[] = {0, 1};
    ordo__step_opts_t real = o;
    real.msg_us = 3000;
    ordo__step_result_t measured, r;
    ORDO_CK_OK(ordo__step_simulate(m, t2, prio, &real, &measured));
    ordo__step_fit_t fit;
    ORDO_CK_OK(ordo__step_correct(m, t, prio, &o, measured.step_us, measured.compute_us, &fit));
    ck_assert_double_eq_tol(fit.compute_factor, 2.0, 1e-9);
    ck_assert_double_gt(fit.msg_us, 0);
    ordo__step_opts_t q = o;
    q.msg_us = fit.msg_us;
    ORDO_CK_OK(ordo__step_simulate(m, t2, prio, &q, &r));
    ck_assert_double_eq_tol(r.step_us, measured.step_us, measured.step_us * 1e-3);
    /* the credit: what tuning the real model (slice kept) chooses */
    int64_t slice, credit;
    ordo__step_result_t best;
    real.credit_bytes = -1;
    ORDO_CK_OK(ordo__step_tune(m, t2, prio, &real, &slice, &credit, &best));
    ck_assert_int_eq(slice, 256 << 10);
    ck_assert_int_eq(fit.credit_bytes, credit);
    /* a measured step shorter than the model gives even without message costs: no cost */
    ORDO_CK_OK(ordo__step_correct(m, t, prio, &o, measured.step_us / 10, 0, &fit));
    ck_assert_double_eq(fit.msg_us, 0);
    ck_assert_double_eq(fit.compute_factor, 1.0);
    ORDO_CK_ERR(ordo__step_correct(m, t, prio, &o, 0, 0, &fit), ORDO_ERR_INVAL);
    ordo__oracle_times_destroy(&t);
    ordo__oracle_times_destroy(&t2);
    ordo__model_destroy(&m);
}
END_TEST

/* the training search turns B-first into S-first on the late first layer: S overtakes */
START_TEST(step_search_finds_the_overtaking_order)
{
    ordo__model_t *m = late_first_layer();
    ordo__oracle_times_t *t = times_of(m);
    ordo__step_opts_t o = opts(1);
    o.slice_bytes = 256 << 10;
    o.credit_bytes = 64 << 10;
    int start[] = {1, 0}, want[] = {0, 1}, got[2];
    ordo__search_opts_t so;
    ordo__search_opts_default(&so);
    so.budget_ms = 0;
    so.max_evals = 50;
    ordo__step_search_result_t res;
    ORDO_CK_OK(ordo__step_search(m, t, start, &o, &so, got, &res));
    ordo__step_result_t r;
    ORDO_CK_OK(ordo__step_simulate(m, t, want, &o, &r));
    ck_assert_int_eq(got[0], 0);
    ck_assert_int_eq(got[1], 1);
    ck_assert_double_eq_tol(res.step_us, r.step_us, 1e-6);
    ck_assert_double_lt(res.step_us + 40000, res.start_us);
    ck_assert_int_eq(res.evals, 50);
    o.credit_bytes = -1;
    ORDO_CK_ERR(ordo__step_search(m, t, start, &o, &so, got, &res), ORDO_ERR_INVAL);
    ordo__oracle_times_destroy(&t);
    ordo__model_destroy(&m);
}
END_TEST

/* on a 32-layer chain from the reversed order: a permutation, modelled no slower than its
 * start (and faster here), the same for the same seed and cap */
START_TEST(step_search_improves_and_repeats)
{
    ordo__model_t *m = fx_seq32();
    ordo__oracle_times_t *t = times_of(m);
    ordo__step_opts_t o = opts(2);
    o.bandwidth_bps = 1e10; /* the links' 107 ms of answers against 96 ms of compute */
    o.slice_bytes = 1 << 20;
    o.credit_bytes = 1 << 20;
    int n = m->n_params, start[64], a[64], b[64], seen[64] = {0};
    for (int p = 0; p < n; p++)
        start[p] = n - 1 - p;
    ordo__search_opts_t so;
    ordo__search_opts_default(&so);
    so.budget_ms = 0;
    so.max_evals = 300;
    so.seed = 7;
    ordo__step_search_result_t ra, rb;
    ORDO_CK_OK(ordo__step_search(m, t, start, &o, &so, a, &ra));
    ORDO_CK_OK(ordo__step_search(m, t, start, &o, &so, b, &rb));
    for (int p = 0; p < n; p++) {
        ck_assert_int_ge(a[p], 0);
        ck_assert_int_lt(a[p], n);
        ck_assert_int_eq(seen[a[p]]++, 0);
        ck_assert_int_eq(a[p], b[p]);
    }
    ordo__step_result_t r;
    ORDO_CK_OK(ordo__step_simulate(m, t, a, &o, &r));
    ck_assert_double_eq_tol(r.step_us, ra.step_us, 1e-6);
    ck_assert_double_eq_tol(ra.step_us, rb.step_us, 1e-9);
    ck_assert_double_lt(ra.step_us, ra.start_us);
    ordo__oracle_times_destroy(&t);
    ordo__model_destroy(&m);
}
END_TEST

static Suite *step_suite(void)
{
    Suite *s = suite_create("step");
    TCase *tc = tcase_create("model");
    tcase_add_test(tc, bound_is_the_busiest_resource);
    tcase_add_test(tc, slices_cut_tensors);
    tcase_add_test(tc, credit_lets_a_late_high_priority_gradient_overtake);
    tcase_add_test(tc, tune_picks_the_shortest_modelled_step);
    tcase_add_test(tc, tune_keeps_a_fixed_slice);
    tcase_add_test(tc, correct_fits_compute_and_message_cost);
    tcase_add_test(tc, step_search_finds_the_overtaking_order);
    tcase_add_test(tc, step_search_improves_and_repeats);
    suite_add_tcase(s, tc);
    return s;
}

ORDO_CK_MAIN(step_suite)
