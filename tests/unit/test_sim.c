/* Tests of scheduler/sim: the simulator's rules (channels in priority order, ties in listed
 * order, the ready-first compute rule, idling), U, L and E, the backward pass with gradient
 * sends, exhaustive bounds. Times: 1gbit, 10 us latency, so a 1250-float recv takes 50 us. */
#include "planner/order.h"
#include "planner/sim.h"
#include "ordering_fixtures.h"

#include <math.h>

static ordo__sim_t *sim_of(const ordo__model_t *m, const int *channel, int n_channels, int bwd)
{
    ordo__oracle_times_t *t = NULL;
    ordo__sim_t *s = NULL;
    ORDO_CK_OK(ordo__oracle_times_new(m, 1e9, 10, NULL, &t));
    ORDO_CK_OK(ordo__sim_new(m, t, channel, n_channels, bwd, &s));
    ordo__oracle_times_destroy(&t);
    return s;
}

#define CK_NEAR(a, b) ck_assert_double_eq_tol((a), (b), 1e-6)

START_TEST(fig2a_good_and_bad_orders)
{
    ordo__model_t *m = fx_fig2a(100, 100);
    ordo__sim_t *s = sim_of(m, NULL, 1, 0);
    ordo__sim_result_t r;
    int good[2] = {0, 1}, bad[2] = {1, 0}, tie[2] = {0, 0};
    ORDO_CK_OK(ordo__sim_run(s, good, &r));
    /* r1 at 50, r2 at 100; op1 50-150, op2 150-250 */
    CK_NEAR(r.makespan_us, 250);
    CK_NEAR(r.upper_us, 300); /* 50 + 50 + 100 + 100 */
    CK_NEAR(r.lower_us, 200); /* compute */
    CK_NEAR(r.efficiency, 0.5);
    double recv_end[2], st[2], en[2];
    ordo__sim_trace(s, recv_end, st, en);
    CK_NEAR(recv_end[0], 50);
    CK_NEAR(recv_end[1], 100);
    CK_NEAR(st[0], 50);
    CK_NEAR(st[1], 150);
    CK_NEAR(en[1], 250);
    ORDO_CK_OK(ordo__sim_run(s, bad, &r));
    /* r2 at 50, r1 at 100: op1 100-200, op2 200-300 */
    CK_NEAR(r.makespan_us, 300);
    CK_NEAR(r.efficiency, 0);
    ORDO_CK_OK(ordo__sim_run(s, tie, &r)); /* equal priorities: listed order */
    CK_NEAR(r.makespan_us, 250);
    double best, worst;
    int bp[2], wp[2];
    ORDO_CK_OK(ordo__sim_exhaustive(s, &best, bp, &worst, wp));
    CK_NEAR(best, 250);
    CK_NEAR(worst, 300);
    ck_assert_int_eq(bp[0], 0);
    ck_assert_int_eq(wp[0], 1);
    ordo__sim_destroy(&s);
    ck_assert_ptr_null(s);
    ordo__model_destroy(&m);
}
END_TEST

START_TEST(compute_runs_the_op_ready_first)
{
    ordo__model_t *m = ordo__model_new("ready", 1, NULL);
    fx_param(m, "a", FX_NUMEL_50US);
    fx_param(m, "b", FX_NUMEL_50US);
    fx_param(m, "c", FX_NUMEL_50US);
    fx_op(m, "o0", NULL, FX_L("a"), 1000, 0);
    fx_op(m, "o1", NULL, FX_L("c"), 10, 0); /* listed before o2, ready after it */
    fx_op(m, "o2", NULL, FX_L("b"), 10, 0);
    fx_op(m, "o3", NULL, FX_L("b"), 10, 0); /* ready with o2: listed order */
    ORDO_CK_OK(ordo__model_check(m));
    ordo__sim_t *s = sim_of(m, NULL, 1, 0);
    int prio[3] = {0, 1, 2}; /* a at 50, b at 100, c at 150 */
    ordo__sim_result_t r;
    ORDO_CK_OK(ordo__sim_run(s, prio, &r));
    double st[4];
    ordo__sim_trace(s, NULL, st, NULL);
    CK_NEAR(st[0], 50);   /* idles until a arrives */
    CK_NEAR(st[2], 1050); /* o2 ready at 100: before o1 (ready at 150) and o3 (tie, listed later) */
    CK_NEAR(st[3], 1060);
    CK_NEAR(st[1], 1070);
    CK_NEAR(r.makespan_us, 1080);
    /* c before b: o1 (ready at 100) now runs before o2 and o3 (ready at 150) */
    int prio2[3] = {0, 2, 1};
    ORDO_CK_OK(ordo__sim_run(s, prio2, &r));
    ordo__sim_trace(s, NULL, st, NULL);
    CK_NEAR(st[1], 1050);
    CK_NEAR(st[2], 1060);
    CK_NEAR(st[3], 1070);
    ordo__sim_destroy(&s);
    ordo__model_destroy(&m);
}
END_TEST

START_TEST(channels_run_in_parallel)
{
    ordo__model_t *m = ordo__model_new("two", 1, NULL);
    fx_param(m, "a", FX_NUMEL_50US);
    fx_param(m, "b", FX_NUMEL_50US);
    fx_param(m, "c", FX_NUMEL_50US);
    fx_op(m, "x", NULL, FX_L("a", "b"), 5, 0);
    fx_op(m, "y", FX_L("x"), FX_L("c"), 5, 0);
    ORDO_CK_OK(ordo__model_check(m));
    int ch[3] = {0, 1, 0};
    ordo__sim_t *s = sim_of(m, ch, 2, 0);
    int prio[3] = {0, 0, 1};
    ordo__sim_result_t r;
    ORDO_CK_OK(ordo__sim_run(s, prio, &r));
    double recv_end[3];
    ordo__sim_trace(s, recv_end, NULL, NULL);
    CK_NEAR(recv_end[0], 50);
    CK_NEAR(recv_end[1], 50);
    CK_NEAR(recv_end[2], 100);
    CK_NEAR(r.makespan_us, 105);
    CK_NEAR(r.upper_us, 160);
    CK_NEAR(r.lower_us, 100); /* channel 0 */
    CK_NEAR(r.efficiency, 55.0 / 60.0);
    ck_assert_int_eq(ordo__sim_channel(s, 1), 1);
    ordo__sim_destroy(&s);
    int bad[3] = {0, 5, 0};
    ordo__oracle_times_t *t = NULL;
    ORDO_CK_OK(ordo__oracle_times_new(m, 1e9, 10, NULL, &t));
    ORDO_CK_ERR(ordo__sim_new(m, t, bad, 2, 0, &s), ORDO_ERR_INVAL);
    ordo__oracle_times_destroy(&t);
    ordo__model_destroy(&m);
}
END_TEST

START_TEST(backward_sends_after_the_last_reader)
{
    /* p0 is read by both ops: its gradient is complete when op0's backward ends */
    ordo__model_t *m = ordo__model_new("bw", 1, NULL);
    fx_param(m, "p0", FX_NUMEL_50US);
    fx_param(m, "p1", FX_NUMEL_50US);
    fx_op(m, "op0", NULL, FX_L("p0"), 10, 20);
    fx_op(m, "op1", FX_L("op0"), FX_L("p0", "p1"), 10, 20);
    ORDO_CK_OK(ordo__model_check(m));
    int prio[2] = {0, 1};
    ordo__sim_result_t r;
    ordo__sim_t *s = sim_of(m, NULL, 1, 1);
    ORDO_CK_OK(ordo__sim_run(s, prio, &r));
    /* fwd: op0 50-60, op1 100-110; bwd: op1 110-130 (p1 sent 130-180), op0 130-150 (p0
     * waits for the channel: 180-230) */
    CK_NEAR(r.makespan_us, 230);
    CK_NEAR(r.upper_us, 260);
    CK_NEAR(r.lower_us, 200);
    CK_NEAR(r.efficiency, 0.5);
    ordo__sim_destroy(&s);
    int ch[2] = {0, 1};
    s = sim_of(m, ch, 2, 1);
    ORDO_CK_OK(ordo__sim_run(s, prio, &r));
    /* both arrive at 50: op0 50-60, op1 60-70; op1 bwd 70-90, p1 sent 90-140 on channel 1;
     * op0 bwd 90-110, p0 sent 110-160 on channel 0 */
    CK_NEAR(r.makespan_us, 160);
    CK_NEAR(r.lower_us, 100);
    CK_NEAR(r.efficiency, 100.0 / 160.0);
    ordo__sim_destroy(&s);
    /* forward only, for comparison */
    s = sim_of(m, NULL, 1, 0);
    ORDO_CK_OK(ordo__sim_run(s, prio, &r));
    CK_NEAR(r.makespan_us, 110);
    CK_NEAR(r.upper_us, 120);
    ordo__sim_destroy(&s);
    ordo__model_destroy(&m);
}
END_TEST

START_TEST(efficiency_is_one_when_order_cannot_matter)
{
    ordo__model_t *m = ordo__model_new("one", 1, NULL);
    fx_param(m, "a", FX_NUMEL_50US);
    fx_op(m, "x", NULL, FX_L("a"), 0, 0);
    ORDO_CK_OK(ordo__model_check(m));
    ordo__sim_t *s = sim_of(m, NULL, 1, 0);
    int prio[1] = {0};
    ordo__sim_result_t r;
    ORDO_CK_OK(ordo__sim_run(s, prio, &r));
    CK_NEAR(r.makespan_us, 50);
    CK_NEAR(r.upper_us, 50);
    CK_NEAR(r.lower_us, 50);
    CK_NEAR(r.efficiency, 1);
    ordo__sim_destroy(&s);
    ordo__model_destroy(&m);
}
END_TEST

START_TEST(seq32_chain_vs_reverse)
{
    ordo__model_t *m = fx_seq32();
    ordo__sim_t *s = sim_of(m, NULL, 1, 0);
    int chain[32], rev[32];
    for (int i = 0; i < 32; i++) {
        chain[i] = i;
        rev[i] = 31 - i;
    }
    double recv = 10 + 2097152.0 * 8 / 1e3; /* 2 MiB at 1gbit, in us */
    ordo__sim_result_t r;
    ORDO_CK_OK(ordo__sim_run(s, chain, &r));
    /* each layer's compute (1000 us) hides under the next transfer */
    CK_NEAR(r.makespan_us, 32 * recv + 1000);
    ORDO_CK_OK(ordo__sim_run(s, rev, &r));
    CK_NEAR(r.makespan_us, 32 * recv + 32 * 1000); /* nothing overlaps */
    CK_NEAR(r.efficiency, 0);
    ck_assert_int_eq(ordo__sim_exhaustive(s, NULL, NULL, NULL, NULL), ORDO_ERR_RANGE);
    ordo__sim_destroy(&s);
    ordo__model_destroy(&m);
}
END_TEST

static Suite *sim_suite(void)
{
    Suite *s = suite_create("sim");
    struct {
        const char *name;
        const TTest *test;
    } cases[] = {
        {"fig2a", fig2a_good_and_bad_orders},
        {"ready_first", compute_runs_the_op_ready_first},
        {"channels", channels_run_in_parallel},
        {"backward", backward_sends_after_the_last_reader},
        {"efficiency_one", efficiency_is_one_when_order_cannot_matter},
        {"seq32", seq32_chain_vs_reverse},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        TCase *tc = tcase_create(cases[i].name);
        tcase_add_test(tc, cases[i].test);
        suite_add_tcase(s, tc);
    }
    return s;
}

ORDO_CK_MAIN(sim_suite)
