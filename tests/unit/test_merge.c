/* Tests of scheduler/merge's planner: the layers and timeline of a model, the cost model,
 * the paper's Algorithm 1 on its own cases, brute force over every grouping of random models
 * (the model equals an independent evaluation, optimal equals the minimum, mgwfbp never
 * exceeds wfbp or all; prints how often optimal beats mgwfbp), and the cost fit. Plans,
 * ordo-merge/1 files and `ordo-plan merge` are in test_merge_plan.c. */
#include "merge_fixtures.h"

#include <stdlib.h>

/* ---------------------------------------------------------------- timeline */

START_TEST(timeline_layers_follow_backward_order)
{
    ordo__model_t *m = toy_model();
    ordo__merge_timeline_t *t = NULL;
    ORDO_CK_OK(ordo__merge_timeline_new(m, &t));
    ck_assert_int_eq(t->n_layers, 2);
    ck_assert_int_eq(t->layer_op[0], ordo__model_op_index(m, "fc"));
    ck_assert_int_eq(t->layer_op[1], ordo__model_op_index(m, "conv1"));
    /* the loss runs first in backward and delays fc; relu delays conv1; input is dropped */
    close_to(t->tb_s[0], 70e-6);
    close_to(t->tb_s[1], 110e-6);
    close_to(t->ready_s[0], 70e-6);
    close_to(t->ready_s[1], 180e-6);
    ck_assert_int_eq(t->layer_bytes[0], 505 * 4);
    ck_assert_int_eq(t->layer_bytes[1], 1010 * 4);
    const char *want[4] = {"fc.w", "fc.b", "conv1.w", "conv1.b"};
    for (int i = 0; i < 4; i++)
        ck_assert_str_eq(m->params[t->order[i]].name, want[i]);
    ck_assert_int_eq(t->layer_first[0], 0);
    ck_assert_int_eq(t->layer_first[1], 2);
    ck_assert_int_eq(t->layer_first[2], 4);
    ck_assert_int_eq(t->layer_of_param[ordo__model_param_index(m, "conv1.b")], 1);
    ordo__merge_timeline_destroy(&t);
    ck_assert_ptr_null(t);
    ordo__merge_timeline_destroy(&t);
    ordo__model_destroy(&m);
}
END_TEST

START_TEST(timeline_shared_param_belongs_to_its_first_reader)
{
    /* emb{E} -> mid -> proj{E, P}: E's gradient is complete only after emb's backward, so
     * emb owns E; proj is a layer for P alone. */
    ordo__model_t *m = ordo__model_new("tied", 1, NULL);
    int64_t n = 100;
    ck_assert_int_ge(ordo__model_add_param(m, "E", 1, &n), 0);
    ck_assert_int_ge(ordo__model_add_param(m, "P", 1, &n), 0);
    const char *e[1] = {"E"}, *ep[2] = {"E", "P"}, *in1[1] = {"emb"}, *in2[1] = {"mid"};
    ck_assert_int_ge(ordo__model_add_op(m, "emb", 0, NULL, 1, e, 1, 30), 0);
    ck_assert_int_ge(ordo__model_add_op(m, "mid", 1, in1, 0, NULL, 1, 5), 0);
    ck_assert_int_ge(ordo__model_add_op(m, "proj", 1, in2, 2, ep, 1, 40), 0);
    ORDO_CK_OK(ordo__model_check(m));
    ordo__merge_timeline_t *t = NULL;
    ORDO_CK_OK(ordo__merge_timeline_new(m, &t));
    ck_assert_int_eq(t->n_layers, 2);
    ck_assert_str_eq(m->ops[t->layer_op[0]].name, "proj");
    ck_assert_str_eq(m->ops[t->layer_op[1]].name, "emb");
    ck_assert_str_eq(m->params[t->order[0]].name, "P");
    ck_assert_str_eq(m->params[t->order[1]].name, "E");
    close_to(t->ready_s[0], 40e-6);
    close_to(t->ready_s[1], 75e-6);
    ordo__merge_timeline_destroy(&t);
    ordo__model_destroy(&m);
}
END_TEST

/* ---------------------------------------------------------------- cost model */

START_TEST(comm_times_by_hand)
{
    double ready[3] = {1, 2, 3}, start[3], end[3];
    int64_t bytes[3] = {10, 10, 10};
    int wfbp[3] = {0, 1, 2}, all[3] = {0, 0, 0}, mid[3] = {0, 0, 1};
    close_to(ordo__merge_comm_times(3, ready, bytes, wfbp, 0.5, 0.1, 0, NULL, start, end), 5.5);
    close_to(start[0], 1.0);
    close_to(end[0], 2.5);
    close_to(start[1], 2.5);
    close_to(end[1], 4.0);
    close_to(start[2], 4.0);
    close_to(ordo__merge_comm_times(3, ready, bytes, all, 0.5, 0.1, 0, NULL, start, NULL), 6.5);
    close_to(start[0], 3.0);
    close_to(ordo__merge_comm_times(3, ready, bytes, mid, 0.5, 0.1, 0, NULL, NULL, end), 6.0);
    close_to(end[0], 4.5);
    close_to(end[1], 6.0);
    close_to(ordo__merge_comm_times(0, NULL, NULL, NULL, 0.5, 0.1, 0, NULL, NULL, NULL), 0.0);
    int bad1[3] = {1, 1, 2}, bad2[3] = {0, 2, 2}, bad3[3] = {0, 1, 0};
    ck_assert_int_eq(ordo__merge_grouping_valid(3, wfbp), 1);
    ck_assert_int_eq(ordo__merge_grouping_valid(3, bad1), 0);
    ck_assert_int_eq(ordo__merge_grouping_valid(3, bad2), 0);
    ck_assert_int_eq(ordo__merge_grouping_valid(3, bad3), 0);
}
END_TEST

/* ---------------------------------------------------------------- Algorithm 1 */

START_TEST(mgwfbp_follows_the_papers_cases)
{
    int64_t bytes[2] = {10, 10};
    int g[2];
    /* layer 2's message starts at 1.0; layer 1 is ready at 2.0: waiting 1.0 >= a = 0.5
     * (Case 3), so no merge */
    double slow[2] = {1.0, 1.0};
    ck_assert_int_eq(ordo__merge_mgwfbp(2, slow, bytes, 0.5, 0.1, g), 2);
    ck_assert_int_eq(g[0], 0);
    ck_assert_int_eq(g[1], 1);
    /* layer 1 ready at 1.2: waiting 0.2 < a (Case 2): merge */
    double quick[2] = {1.0, 0.2};
    ck_assert_int_eq(ordo__merge_mgwfbp(2, quick, bytes, 0.5, 0.1, g), 1);
    ck_assert_int_eq(g[0], 0);
    ck_assert_int_eq(g[1], 0);
    /* Case 4: layer 3's message (1.0 to 11.5) outlasts the compute of layers 2 and 1, so
     * layer 2 merges into 1 without waiting; layer 3 itself would wait 0.5, not < a */
    double backlog[3] = {1.0, 0.5, 0.5};
    int64_t big[3] = {100, 10, 10};
    int g3[3];
    ck_assert_int_eq(ordo__merge_mgwfbp(3, backlog, big, 0.5, 0.1, g3), 2);
    ck_assert_int_eq(g3[0], 0);
    ck_assert_int_eq(g3[1], 1);
    ck_assert_int_eq(g3[2], 1);
    /* merging exactly at the threshold is not done: the paper's test is strict */
    double edge[2] = {1.0, 0.5};
    ck_assert_int_eq(ordo__merge_mgwfbp(2, edge, bytes, 0.5, 0.1, g), 2);
    ORDO_CK_ERR(ordo__merge_mgwfbp(2, edge, bytes, -1, 0.1, g), ORDO_ERR_INVAL);
    ORDO_CK_ERR(ordo__merge_optimal(2, edge, bytes, 0.5, NAN, 0, 0, NULL, g), ORDO_ERR_INVAL);
    expect_detail("finite and >= 0");
    ck_assert_int_eq(ordo__merge_mgwfbp(0, NULL, NULL, 0.5, 0.1, NULL), 0);
    ck_assert_int_eq(ordo__merge_optimal(0, NULL, NULL, 0.5, 0.1, 0, 0, NULL, NULL), 0);
}
END_TEST

/* Algorithm 1 is myopic. Layers (backward order) ready at 1, 2.5 and 5 with 6, 4 and 2
 * bytes, a = 2, b = 0.5. The paper's test merges layer 3 into 2 (waiting 1.5 < a), which
 * makes layer 2's message end earlier (9.5 instead of 10) but frees the link before layer 1
 * is ready, so merging 2 into 1 would now wait 2.5 >= a and is refused: 12.5 in all. Sending
 * layer 3 alone keeps the link busy until 6, past layer 1's ready time 5, so layers 2 and 1
 * then go together without waiting: 11. wfbp and all both take 13. */
START_TEST(optimal_beats_mgwfbp_on_a_fixed_case)
{
    double tb[3] = {1.0, 1.5, 2.5};
    int64_t bytes[3] = {6, 4, 2};
    double ready[3] = {1.0, 2.5, 5.0};
    int gm[3], go[3], wfbp[3] = {0, 1, 2}, all[3] = {0, 0, 0};
    ck_assert_int_eq(ordo__merge_mgwfbp(3, tb, bytes, 2.0, 0.5, gm), 2);
    ck_assert_int_eq(ordo__merge_optimal(3, tb, bytes, 2.0, 0.5, 0, 0, NULL, go), 2);
    ck_assert_int_eq(gm[0], 0);
    ck_assert_int_eq(gm[1], 0);
    ck_assert_int_eq(gm[2], 1);
    ck_assert_int_eq(go[0], 0);
    ck_assert_int_eq(go[1], 1);
    ck_assert_int_eq(go[2], 1);
    close_to(ordo__merge_comm_times(3, ready, bytes, gm, 2.0, 0.5, 0, NULL, NULL, NULL), 12.5);
    close_to(ordo__merge_comm_times(3, ready, bytes, go, 2.0, 0.5, 0, NULL, NULL, NULL), 11.0);
    close_to(ordo__merge_comm_times(3, ready, bytes, wfbp, 2.0, 0.5, 0, NULL, NULL, NULL), 13.0);
    close_to(ordo__merge_comm_times(3, ready, bytes, all, 2.0, 0.5, 0, NULL, NULL, NULL), 13.0);
}
END_TEST

/* ---------------------------------------------------------------- brute force */

static uint64_t rng_state;

static uint64_t rng_next(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static double rng_unit(void)
{
    return (double)(rng_next() >> 11) / 9007199254740992.0;
}

static double rng_log(double lo, double hi)
{
    return lo * pow(hi / lo, rng_unit());
}

/* A random model of 1..12 layers and its reference timeline, derived here independently of
 * the library: ready[] and bytes[] per layer in backward order. */
typedef struct {
    ordo__model_t *m;
    int L;
    double ready[12];
    int64_t bytes[12];
} rmodel_t;

static void random_model(rmodel_t *r)
{
    r->m = ordo__model_new("random", 1, NULL);
    ck_assert_ptr_nonnull(r->m);
    r->L = 1 + (int)(rng_next() % 12);
    double bwd[64];
    int has[64], nops = 0;
    int64_t opbytes[64];
    char prev[32] = "", name[32];
    for (int l = 0; l < r->L; l++) {
        int plain = (int)(rng_next() % 3); /* parameter-less ops before this layer */
        for (int k = 0; k < plain; k++) {
            snprintf(name, sizeof name, "op%d", nops);
            bwd[nops] = rng_log(1, 500);
            has[nops] = 0;
            add_plain_op(r->m, name, prev[0] ? prev : NULL, bwd[nops]);
            snprintf(prev, sizeof prev, "%s", name);
            nops++;
        }
        snprintf(name, sizeof name, "op%d", nops);
        int64_t w = (int64_t)rng_log(16, 4e6),
                bias = rng_next() % 2 ? (int64_t)rng_log(1, 4096) : 0;
        bwd[nops] = rng_log(10, 3000);
        has[nops] = 1;
        opbytes[nops] = (w + bias) * 4;
        add_param_op(r->m, name, prev[0] ? prev : NULL, w, bias, bwd[nops]);
        snprintf(prev, sizeof prev, "%s", name);
        nops++;
    }
    if (rng_next() % 2) { /* a loss at the end of the forward pass */
        bwd[nops] = rng_log(1, 200);
        has[nops] = 0;
        add_plain_op(r->m, "loss", prev, bwd[nops]);
        nops++;
    }
    ORDO_CK_OK(ordo__model_check(r->m));
    double clock_us = 0;
    int l = 0;
    for (int o = nops - 1; o >= 0; o--) {
        clock_us += bwd[o];
        if (has[o]) {
            r->ready[l] = clock_us * 1e-6;
            r->bytes[l] = opbytes[o];
            l++;
        }
    }
    ck_assert_int_eq(l, r->L);
}

/* brute_time3 evaluates the grouping whose boundaries are the set bits of mask (bit i: a
 * message ends after layer i) the plain way, one message after another: each holds the link
 * a + b * bytes from when both it is ready and the link is free, then the receiver c * bytes
 * from when both it has arrived and the receiver is free, then (the pull stage) the servers'
 * links p * bytes from when both it has been received and they are free. */
static double brute_time3(const rmodel_t *r, unsigned mask, double a, double b, double c, double p)
{
    double link_free = 0, recv_free = 0, back_free = 0;
    int64_t sum = 0;
    for (int i = 0; i < r->L; i++) {
        sum += r->bytes[i];
        if (i == r->L - 1 || (mask >> i) & 1u) {
            double start = link_free > r->ready[i] ? link_free : r->ready[i];
            link_free = start + a + b * (double)sum;
            double recv_start = recv_free > link_free ? recv_free : link_free;
            recv_free = recv_start + c * (double)sum;
            double back_start = back_free > recv_free ? back_free : recv_free;
            back_free = back_start + p * (double)sum;
            sum = 0;
        }
    }
    return back_free;
}

/* brute_time is the two-stage model: no pull stage (its end is then the receiver's) */
static double brute_time(const rmodel_t *r, unsigned mask, double a, double b, double c)
{
    return brute_time3(r, mask, a, b, c, 0);
}

static double rel_close(double x, double y)
{
    return fabs(x - y) <= 1e-12 * fabs(y) + 1e-18;
}

START_TEST(random_models_match_brute_force)
{
    /* c = 0: the paper's model, where mgwfbp never exceeds min(wfbp, all); c > 0: a
     * receiver stage, which Algorithm 1 does not see (its excess is counted, not refused) */
    static const struct {
        const char *name;
        double a, b, c;
    } regimes[] = {
        {"start-up bound  a=500us b=0.1ns/B", 500e-6, 1e-10, 0},
        {"balanced        a=100us b=1ns/B", 100e-6, 1e-9, 0},
        {"bandwidth bound a=20us  b=8ns/B", 20e-6, 8e-9, 0},
        {"fast network    a=5us   b=0.1ns/B", 5e-6, 1e-10, 0},
        {"no start-up     a=0     b=1ns/B", 0, 1e-9, 0},
        {"receiver bound  a=40us  b=0.8 c=2.5", 40e-6, 0.8e-9, 2.5e-9},
        {"start-up + recv a=300us b=0.8 c=0.5", 300e-6, 0.8e-9, 0.5e-9},
        {"link + recv     a=20us  b=8 c=1ns/B", 20e-6, 8e-9, 1e-9},
        {"no start-up     a=0     b=1 c=3ns/B", 0, 1e-9, 3e-9},
    };
    const int models = 2000;
    long groupings = 0;
    printf("\noptimal vs mgwfbp (paper's Algorithm 1), %d random models of 1-12 layers per "
           "regime:\n",
           models);
    printf("%-36s %12s %10s %10s %12s %12s %8s\n", "regime", "opt<mgwfbp", "mean_gap", "max_gap",
           "mg>min(w,a)", "opt/wfbp", "tie_wfbp");
    for (size_t k = 0; k < sizeof regimes / sizeof regimes[0]; k++) {
        double a = regimes[k].a, b = regimes[k].b, c = regimes[k].c;
        rng_state = 12345 + k;
        int beaten = 0, violations = 0, as_wfbp = 0;
        double gap_sum = 0, gap_max = 0, speed_sum = 0;
        for (int n = 0; n < models; n++) {
            rmodel_t r;
            random_model(&r);
            ordo__merge_timeline_t *t = NULL;
            ORDO_CK_OK(ordo__merge_timeline_new(r.m, &t));
            ck_assert_int_eq(t->n_layers, r.L);
            for (int i = 0; i < r.L; i++) {
                ck_assert(rel_close(t->ready_s[i], r.ready[i]));
                ck_assert_int_eq(t->layer_bytes[i], r.bytes[i]);
            }
            /* every grouping: the library's model equals the plain evaluation */
            double best = INFINITY;
            double times[2048];
            int counts[2048];
            int group[12];
            for (unsigned mask = 0; mask < (1u << (r.L - 1)); mask++) {
                int g = 0;
                for (int i = 0; i < r.L; i++) {
                    group[i] = g;
                    if ((mask >> i) & 1u) g++;
                }
                double want = brute_time(&r, mask, a, b, c);
                double got = ordo__merge_comm_times(r.L, t->ready_s, t->layer_bytes, group, a, b, c,
                                                   NULL, NULL, NULL);
                ck_assert_msg(rel_close(got, want), "model %d mask %u: %.17g vs %.17g", n, mask,
                              got, want);
                if (want < best) best = want;
                times[mask] = want;
                counts[mask] = g + 1;
                groupings++;
            }
            /* among the groupings with the least time optimal picks one with the fewest
             * messages */
            int fewest = r.L;
            unsigned wfbp_mask = (1u << (r.L - 1)) - 1;
            for (unsigned mask = 0; mask < (1u << (r.L - 1)); mask++)
                if (times[mask] <= best * (1 + 1e-13) && counts[mask] < fewest)
                    fewest = counts[mask];
            if (r.L > 1 && times[wfbp_mask] <= best * (1 + 1e-13)) as_wfbp++;
            int og = ordo__merge_optimal(r.L, t->tb_s, t->layer_bytes, a, b, c, 0, NULL, group);
            ck_assert_int_eq(og, fewest);
            /* with no start-up cost splitting a group never hurts: wfbp has the least time */
            if (a == 0) ck_assert(times[wfbp_mask] <= best * (1 + 1e-13));
            ck_assert(ordo__merge_grouping_valid(r.L, group));
            ck_assert_int_eq(group[r.L - 1], og - 1);
            ck_assert(rel_close(ordo__merge_comm_times(r.L, t->ready_s, t->layer_bytes, group, a, b,
                                                      c, NULL, NULL, NULL),
                                best));
            /* the algorithms through the plan API */
            double tm[5];
            static const ordo__merge_algo_t algos[5] = {ORDO_MERGE_WFBP, ORDO_MERGE_ALL,
                                                       ORDO_MERGE_MGWFBP, ORDO_MERGE_OPTIMAL,
                                                       ORDO_MERGE_BYTES};
            for (int i = 0; i < 5; i++) {
                ordo__merge_plan_t *p = NULL;
                ORDO_CK_OK(ordo__merge_plan_compute(r.m, algos[i], 1 << 20, a, b, c, 0, NULL, &p));
                tm[i] = p->predicted_iter_s;
                ordo__merge_plan_destroy(&p);
            }
            ck_assert_msg(rel_close(tm[3], best), "model %d: optimal %.17g, brute force %.17g", n,
                          tm[3], best);
            /* bytes:N may cut a layer between messages; with c = 0 that never helps (both
             * parts are ready at once, the link is paid the same), with c > 0 the receiver can
             * start on the first part earlier, so it may beat the best grouping of layers */
            if (c == 0) ck_assert(tm[4] >= best * (1 - 1e-12));
            double floor = tm[0] < tm[1] ? tm[0] : tm[1];
            if (tm[2] > floor * (1 + 1e-12)) {
                violations++;
                if (c == 0)
                    printf("  counterexample: model %d, mgwfbp %.9g > min(wfbp %.9g, all %.9g)\n",
                           n, tm[2], tm[0], tm[1]);
            }
            double gap = (tm[2] - tm[3]) / tm[3];
            if (gap > 1e-9) {
                beaten++;
                gap_sum += gap;
                if (gap > gap_max) gap_max = gap;
            }
            speed_sum += tm[3] / tm[0];
            ordo__merge_timeline_destroy(&t);
            ordo__model_destroy(&r.m);
        }
        printf("%-36s %5d (%4.1f%%) %9.3f%% %9.3f%% %12d %12.3f %8d\n", regimes[k].name, beaten,
               100.0 * beaten / models, beaten ? 100.0 * gap_sum / beaten : 0.0, 100.0 * gap_max,
               violations, speed_sum / models, as_wfbp);
        if (c == 0) ck_assert_int_eq(violations, 0);
    }
    printf("(mean_gap over the models where optimal wins; tie_wfbp: models of 2+ layers where "
           "wfbp is among the least-time groupings; %ld groupings checked)\n",
           groupings);
}
END_TEST

/* With the pull stage ([order] pull = early: each group's next values leave the servers once
 * it has been received, and the next forward pass needs the last group's) the library's
 * model equals the plain evaluation on every grouping, optimal finds the least time with the
 * fewest groups among ties, and p = 0 is the two-stage model. */
START_TEST(random_models_with_pulls_match_brute_force)
{
    static const struct {
        const char *name;
        double a, b, c, p;
    } regimes[] = {
        {"pulls as slow as pushes", 40e-6, 0.8e-9, 0.5e-9, 3.2e-9},
        {"start-up bound, pulls", 300e-6, 0.8e-9, 0.5e-9, 1.6e-9},
        {"pull bound", 5e-6, 0.1e-9, 0, 8e-9},
        {"no receiver stage", 100e-6, 1e-9, 0, 2e-9},
    };
    const int models = 1000;
    long groupings = 0;
    for (size_t k = 0; k < sizeof regimes / sizeof regimes[0]; k++) {
        double a = regimes[k].a, b = regimes[k].b, c = regimes[k].c, pp = regimes[k].p;
        rng_state = 777 + k;
        int differs = 0;
        for (int n = 0; n < models; n++) {
            rmodel_t r;
            random_model(&r);
            ordo__merge_timeline_t *t = NULL;
            ORDO_CK_OK(ordo__merge_timeline_new(r.m, &t));
            double best = INFINITY, times[2048];
            int counts[2048], group[12];
            for (unsigned mask = 0; mask < (1u << (r.L - 1)); mask++) {
                int g = 0;
                for (int i = 0; i < r.L; i++) {
                    group[i] = g;
                    if ((mask >> i) & 1u) g++;
                }
                double want = brute_time3(&r, mask, a, b, c, pp);
                double got = ordo__merge_comm_times3(r.L, t->ready_s, t->layer_bytes, group, a, b, c,
                                                    pp, 0, NULL, NULL, NULL);
                ck_assert_msg(rel_close(got, want), "model %d mask %u: %.17g vs %.17g", n, mask,
                              got, want);
                /* p = 0 is the two-stage model, bit for bit */
                ck_assert(ordo__merge_comm_times3(r.L, t->ready_s, t->layer_bytes, group, a, b, c, 0,
                                                 0, NULL, NULL, NULL) ==
                          ordo__merge_comm_times(r.L, t->ready_s, t->layer_bytes, group, a, b, c,
                                                NULL, NULL, NULL));
                if (want < best) best = want;
                times[mask] = want;
                counts[mask] = g + 1;
                groupings++;
            }
            int fewest = r.L;
            for (unsigned mask = 0; mask < (1u << (r.L - 1)); mask++)
                if (times[mask] <= best * (1 + 1e-13) && counts[mask] < fewest)
                    fewest = counts[mask];
            int og =
                ordo__merge_optimal3(r.L, t->tb_s, t->layer_bytes, a, b, c, pp, 0, 0, NULL, group);
            ck_assert_int_eq(og, fewest);
            ck_assert(rel_close(ordo__merge_comm_times3(r.L, t->ready_s, t->layer_bytes, group, a, b,
                                                       c, pp, 0, NULL, NULL, NULL),
                                best));
            /* the plan API counts the stage too, and with the margin the least time stays */
            ordo__merge_plan_t *pl = NULL;
            ORDO_CK_OK(ordo__merge_plan_compute3(r.m, ORDO_MERGE_OPTIMAL, 0, a, b, c, pp, 0, 0.5,
                                                NULL, &pl));
            ck_assert_msg(rel_close(pl->predicted_iter_s, best), "model %d: plan %.17g, best %.17g",
                          n, pl->predicted_iter_s, best);
            ordo__merge_plan_destroy(&pl);
            /* does the pull stage change the plan? */
            int g2[12];
            ordo__merge_optimal(r.L, t->tb_s, t->layer_bytes, a, b, c, 0, NULL, g2);
            for (int i = 0; i < r.L; i++)
                if (g2[i] != group[i]) {
                    differs++;
                    break;
                }
            ordo__merge_timeline_destroy(&t);
            ordo__model_destroy(&r.m);
        }
        printf("%-28s the pull stage changed the optimal grouping of %d of %d models\n",
               regimes[k].name, differs, models);
    }
    printf("(%ld groupings checked with the pull stage)\n", groupings);
}
END_TEST

/* ---------------------------------------------------------------- cost fit */

START_TEST(fit_recovers_a_and_b)
{
    const double a = 2e-4, b = 4e-10;
    double x[51], y[51];
    int n = 0;
    rng_state = 99;
    for (int rep = 0; rep < 3; rep++)
        for (int k = 0; k < 17; k++) { /* 1 KiB to 64 MiB */
            x[n] = 1024.0 * (double)(1 << k);
            y[n] = a + b * x[n] + (rng_unit() - 0.5) * 4e-6; /* +-2 us of jitter */
            n++;
        }
    double fa, fb;
    ORDO_CK_OK(ordo__merge_fit_cost(x, y, n, &fa, &fb));
    ck_assert_msg(fabs(fa - a) < 0.02 * a, "a = %g", fa);
    ck_assert_msg(fabs(fb - b) < 0.001 * b, "b = %g", fb);
    /* exact data gives exact values */
    double x2[3] = {0, 1000, 2000}, y2[3] = {1, 3, 5};
    ORDO_CK_OK(ordo__merge_fit_cost(x2, y2, 3, &fa, &fb));
    close_to(fa, 1);
    close_to(fb, 0.002);
    /* times falling with size: b = 0, a = the mean */
    double y3[3] = {3, 2, 1};
    ORDO_CK_OK(ordo__merge_fit_cost(x2, y3, 3, &fa, &fb));
    close_to(fa, 2);
    close_to(fb, 0);
    /* a negative intercept: refitted through the origin */
    double x4[3] = {1000, 2000, 3000}, y4[3] = {0.5, 2, 3.5};
    ORDO_CK_OK(ordo__merge_fit_cost(x4, y4, 3, &fa, &fb));
    close_to(fa, 0);
    close_to(fb, (1000 * 0.5 + 2000 * 2 + 3000 * 3.5) / (1e6 + 4e6 + 9e6));
}
END_TEST

/* the planner's a, b, c from burst medians: a per-message cost of 30 us that a few percent of
 * noise at 4 MiB would swamp in a plain fit, the link's b as a floor, c what one push alone
 * takes per byte beyond b */
START_TEST(fit_planner_takes_a_from_the_small_sizes_and_b_at_least_the_link)
{
    const double a = 30e-6, b = 1.2e-9, c = 0.5e-9;
    double x[7], msg[7], one[7];
    for (int i = 0; i < 7; i++) {
        x[i] = 1024.0 * (double)(1 << (2 * i));        /* 1 KiB .. 4 MiB */
        msg[i] = a + b * x[i] * (i == 6 ? 1.03 : 1.0); /* 3 % high at 4 MiB */
        one[i] = 400e-6 + (b + c) * x[i];
    }
    ordo__merge_cost_t k;
    ORDO_CK_OK(ordo__merge_fit_planner(x, msg, one, 7, 10e9, &k));
    ck_assert_msg(fabs(k.a - a) < 0.05 * a, "a = %g", k.a);
    double fa, fb; /* a plain least-squares fit is 24 % off */
    ORDO_CK_OK(ordo__merge_fit_cost(x, msg, 7, &fa, &fb));
    ck_assert_msg(fabs(fa - a) > 0.2 * a, "plain fit a = %g", fa);
    close_to(k.b, k.b_msg); /* slower than the 10 Gbit/s link: the pipelined slope */
    ck_assert_msg(fabs(k.b_one - (b + c)) < 1e-3 * (b + c), "b_one = %g", k.b_one);
    close_to(k.c, k.b_one - k.b);
    ck_assert_msg(fabs(k.a_one - 400e-6) < 0.01 * 400e-6, "a_one = %g", k.a_one);
    /* on a 1 Gbit/s link (8 ns/B) the link's b is the floor and c cannot go below 0 */
    ORDO_CK_OK(ordo__merge_fit_planner(x, msg, one, 7, 1e9, &k));
    close_to(k.b, 8e-9);
    close_to(k.c, 0);
    /* no link: the slope as measured */
    ORDO_CK_OK(ordo__merge_fit_planner(x, msg, one, 7, 0, &k));
    close_to(k.b, k.b_msg);
    ORDO_CK_ERR(ordo__merge_fit_planner(x, msg, one, 1, 0, &k), ORDO_ERR_INVAL);
}
END_TEST

START_TEST(fit_rejects_bad_input)
{
    double x[3] = {1000, 1000, 1000}, y[3] = {1, 2, 3}, fa = -7, fb = -7;
    ORDO_CK_ERR(ordo__merge_fit_cost(x, y, 1, &fa, &fb), ORDO_ERR_INVAL);
    expect_detail("at least 2 measurements, got 1");
    ORDO_CK_ERR(ordo__merge_fit_cost(x, y, 3, &fa, &fb), ORDO_ERR_INVAL);
    expect_detail("at least 2 distinct sizes");
    double xn[2] = {1, NAN}, yn[2] = {1, 2};
    ORDO_CK_ERR(ordo__merge_fit_cost(xn, yn, 2, &fa, &fb), ORDO_ERR_INVAL);
    expect_detail("measurement 1");
    double xm[2] = {1, 2}, ym[2] = {1, -2};
    ORDO_CK_ERR(ordo__merge_fit_cost(xm, ym, 2, &fa, &fb), ORDO_ERR_INVAL);
    ORDO_CK_ERR(ordo__merge_fit_cost(NULL, ym, 2, &fa, &fb), ORDO_ERR_INVAL);
    ck_assert(fa == -7 && fb == -7); /* untouched on failure */
}
END_TEST

Suite *merge_suite(void);
Suite *merge_suite(void)
{
    Suite *s = suite_create("merge");
    TCase *tc = tcase_create("timeline");
    tcase_add_test(tc, timeline_layers_follow_backward_order);
    tcase_add_test(tc, timeline_shared_param_belongs_to_its_first_reader);
    tcase_add_test(tc, comm_times_by_hand);
    suite_add_tcase(s, tc);
    tc = tcase_create("algorithms");
    tcase_add_test(tc, mgwfbp_follows_the_papers_cases);
    tcase_add_test(tc, optimal_beats_mgwfbp_on_a_fixed_case);
    suite_add_tcase(s, tc);
    tc = tcase_create("brute_force");
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, random_models_match_brute_force);
    tcase_add_test(tc, random_models_with_pulls_match_brute_force);
    suite_add_tcase(s, tc);
    tc = tcase_create("fit");
    tcase_add_test(tc, fit_recovers_a_and_b);
    tcase_add_test(tc, fit_rejects_bad_input);
    tcase_add_test(tc, fit_planner_takes_a_from_the_small_sizes_and_b_at_least_the_link);
    suite_add_tcase(s, tc);
    return s;
}

ORDO_CK_MAIN(merge_suite)
