/* Tests of scheduler/merge: the layers and timeline of a model, the cost model, the paper's
 * Algorithm 1 on its own cases, brute force over every grouping of random models (the model
 * equals an independent evaluation, optimal equals the minimum, mgwfbp never exceeds wfbp or
 * all; prints how often optimal beats mgwfbp), fixed buffers, ordo-merge/1 writing and
 * reading with its rejections, the cost fit and the `ordo-plan merge` command line. */
#include "scheduler/merge.h"
#include "scheduler/merge_cli.h"
#include "ordo_check.h"

#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void expect_detail(const char *want)
{
    ck_assert_msg(strstr(ordo_error_detail(), want) != NULL, "detail '%s' lacks '%s'",
                  ordo_error_detail(), want);
}

static void close_to(double got, double want)
{
    ck_assert_msg(fabs(got - want) <= 1e-12 * (fabs(want) + 1e-9), "got %.17g, want %.17g", got,
                  want);
}

/* add_param_op appends op `name` owning params name.w (numel w) and, when bias > 0, name.b. */
static void add_param_op(ordo_model_t *m, const char *name, const char *input, int64_t w,
                         int64_t bias, double bwd_us)
{
    char pw[64], pb[64];
    snprintf(pw, sizeof pw, "%s.w", name);
    snprintf(pb, sizeof pb, "%s.b", name);
    ck_assert_int_ge(ordo_model_add_param(m, pw, 1, &w), 0);
    if (bias > 0) ck_assert_int_ge(ordo_model_add_param(m, pb, 1, &bias), 0);
    const char *ps[2] = {pw, pb};
    ck_assert_int_ge(
        ordo_model_add_op(m, name, input ? 1 : 0, &input, bias > 0 ? 2 : 1, ps, 1.0, bwd_us), 0);
}

static void add_plain_op(ordo_model_t *m, const char *name, const char *input, double bwd_us)
{
    ck_assert_int_ge(ordo_model_add_op(m, name, input ? 1 : 0, &input, 0, NULL, 1.0, bwd_us), 0);
}

/* toy: input(7) conv1{w,b}(100) relu(10) fc{w,b}(50) loss(20), bwd_us in brackets. */
static ordo_model_t *toy_model(void)
{
    ordo_model_t *m = ordo_model_new("toy", 8, NULL);
    ck_assert_ptr_nonnull(m);
    add_plain_op(m, "input", NULL, 7);
    add_param_op(m, "conv1", "input", 1000, 10, 100);
    add_plain_op(m, "relu", "conv1", 10);
    add_param_op(m, "fc", "relu", 500, 5, 50);
    add_plain_op(m, "loss", "fc", 20);
    ORDO_CK_OK(ordo_model_check(m));
    return m;
}

/* ---------------------------------------------------------------- timeline */

START_TEST(timeline_layers_follow_backward_order)
{
    ordo_model_t *m = toy_model();
    ordo_merge_timeline_t *t = NULL;
    ORDO_CK_OK(ordo_merge_timeline_new(m, &t));
    ck_assert_int_eq(t->n_layers, 2);
    ck_assert_int_eq(t->layer_op[0], ordo_model_op_index(m, "fc"));
    ck_assert_int_eq(t->layer_op[1], ordo_model_op_index(m, "conv1"));
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
    ck_assert_int_eq(t->layer_of_param[ordo_model_param_index(m, "conv1.b")], 1);
    ordo_merge_timeline_destroy(&t);
    ck_assert_ptr_null(t);
    ordo_merge_timeline_destroy(&t);
    ordo_model_destroy(&m);
}
END_TEST

START_TEST(timeline_shared_param_belongs_to_its_first_reader)
{
    /* emb{E} -> mid -> proj{E, P}: E's gradient is complete only after emb's backward, so
     * emb owns E; proj is a layer for P alone. */
    ordo_model_t *m = ordo_model_new("tied", 1, NULL);
    int64_t n = 100;
    ck_assert_int_ge(ordo_model_add_param(m, "E", 1, &n), 0);
    ck_assert_int_ge(ordo_model_add_param(m, "P", 1, &n), 0);
    const char *e[1] = {"E"}, *ep[2] = {"E", "P"}, *in1[1] = {"emb"}, *in2[1] = {"mid"};
    ck_assert_int_ge(ordo_model_add_op(m, "emb", 0, NULL, 1, e, 1, 30), 0);
    ck_assert_int_ge(ordo_model_add_op(m, "mid", 1, in1, 0, NULL, 1, 5), 0);
    ck_assert_int_ge(ordo_model_add_op(m, "proj", 1, in2, 2, ep, 1, 40), 0);
    ORDO_CK_OK(ordo_model_check(m));
    ordo_merge_timeline_t *t = NULL;
    ORDO_CK_OK(ordo_merge_timeline_new(m, &t));
    ck_assert_int_eq(t->n_layers, 2);
    ck_assert_str_eq(m->ops[t->layer_op[0]].name, "proj");
    ck_assert_str_eq(m->ops[t->layer_op[1]].name, "emb");
    ck_assert_str_eq(m->params[t->order[0]].name, "P");
    ck_assert_str_eq(m->params[t->order[1]].name, "E");
    close_to(t->ready_s[0], 40e-6);
    close_to(t->ready_s[1], 75e-6);
    ordo_merge_timeline_destroy(&t);
    ordo_model_destroy(&m);
}
END_TEST

/* ---------------------------------------------------------------- cost model */

START_TEST(comm_times_by_hand)
{
    double ready[3] = {1, 2, 3}, start[3], end[3];
    int64_t bytes[3] = {10, 10, 10};
    int wfbp[3] = {0, 1, 2}, all[3] = {0, 0, 0}, mid[3] = {0, 0, 1};
    close_to(ordo_merge_comm_times(3, ready, bytes, wfbp, 0.5, 0.1, start, end), 5.5);
    close_to(start[0], 1.0);
    close_to(end[0], 2.5);
    close_to(start[1], 2.5);
    close_to(end[1], 4.0);
    close_to(start[2], 4.0);
    close_to(ordo_merge_comm_times(3, ready, bytes, all, 0.5, 0.1, start, NULL), 6.5);
    close_to(start[0], 3.0);
    close_to(ordo_merge_comm_times(3, ready, bytes, mid, 0.5, 0.1, NULL, end), 6.0);
    close_to(end[0], 4.5);
    close_to(end[1], 6.0);
    close_to(ordo_merge_comm_times(0, NULL, NULL, NULL, 0.5, 0.1, NULL, NULL), 0.0);
    int bad1[3] = {1, 1, 2}, bad2[3] = {0, 2, 2}, bad3[3] = {0, 1, 0};
    ck_assert_int_eq(ordo_merge_grouping_valid(3, wfbp), 1);
    ck_assert_int_eq(ordo_merge_grouping_valid(3, bad1), 0);
    ck_assert_int_eq(ordo_merge_grouping_valid(3, bad2), 0);
    ck_assert_int_eq(ordo_merge_grouping_valid(3, bad3), 0);
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
    ck_assert_int_eq(ordo_merge_mgwfbp(2, slow, bytes, 0.5, 0.1, g), 2);
    ck_assert_int_eq(g[0], 0);
    ck_assert_int_eq(g[1], 1);
    /* layer 1 ready at 1.2: waiting 0.2 < a (Case 2): merge */
    double quick[2] = {1.0, 0.2};
    ck_assert_int_eq(ordo_merge_mgwfbp(2, quick, bytes, 0.5, 0.1, g), 1);
    ck_assert_int_eq(g[0], 0);
    ck_assert_int_eq(g[1], 0);
    /* Case 4: layer 3's message (1.0 to 11.5) outlasts the compute of layers 2 and 1, so
     * layer 2 merges into 1 without waiting; layer 3 itself would wait 0.5, not < a */
    double backlog[3] = {1.0, 0.5, 0.5};
    int64_t big[3] = {100, 10, 10};
    int g3[3];
    ck_assert_int_eq(ordo_merge_mgwfbp(3, backlog, big, 0.5, 0.1, g3), 2);
    ck_assert_int_eq(g3[0], 0);
    ck_assert_int_eq(g3[1], 1);
    ck_assert_int_eq(g3[2], 1);
    /* merging exactly at the threshold is not done: the paper's test is strict */
    double edge[2] = {1.0, 0.5};
    ck_assert_int_eq(ordo_merge_mgwfbp(2, edge, bytes, 0.5, 0.1, g), 2);
    ORDO_CK_ERR(ordo_merge_mgwfbp(2, edge, bytes, -1, 0.1, g), ORDO_EINVAL);
    ORDO_CK_ERR(ordo_merge_optimal(2, edge, bytes, 0.5, NAN, g), ORDO_EINVAL);
    expect_detail("finite and >= 0");
    ck_assert_int_eq(ordo_merge_mgwfbp(0, NULL, NULL, 0.5, 0.1, NULL), 0);
    ck_assert_int_eq(ordo_merge_optimal(0, NULL, NULL, 0.5, 0.1, NULL), 0);
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
    ck_assert_int_eq(ordo_merge_mgwfbp(3, tb, bytes, 2.0, 0.5, gm), 2);
    ck_assert_int_eq(ordo_merge_optimal(3, tb, bytes, 2.0, 0.5, go), 2);
    ck_assert_int_eq(gm[0], 0);
    ck_assert_int_eq(gm[1], 0);
    ck_assert_int_eq(gm[2], 1);
    ck_assert_int_eq(go[0], 0);
    ck_assert_int_eq(go[1], 1);
    ck_assert_int_eq(go[2], 1);
    close_to(ordo_merge_comm_times(3, ready, bytes, gm, 2.0, 0.5, NULL, NULL), 12.5);
    close_to(ordo_merge_comm_times(3, ready, bytes, go, 2.0, 0.5, NULL, NULL), 11.0);
    close_to(ordo_merge_comm_times(3, ready, bytes, wfbp, 2.0, 0.5, NULL, NULL), 13.0);
    close_to(ordo_merge_comm_times(3, ready, bytes, all, 2.0, 0.5, NULL, NULL), 13.0);
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
    ordo_model_t *m;
    int L;
    double ready[12];
    int64_t bytes[12];
} rmodel_t;

static void random_model(rmodel_t *r)
{
    r->m = ordo_model_new("random", 1, NULL);
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
    ORDO_CK_OK(ordo_model_check(r->m));
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

/* brute_time evaluates the grouping whose boundaries are the set bits of mask (bit i: a
 * message ends after layer i) the plain way, one message after another. */
static double brute_time(const rmodel_t *r, unsigned mask, double a, double b)
{
    double link_free = 0;
    int64_t sum = 0;
    for (int i = 0; i < r->L; i++) {
        sum += r->bytes[i];
        if (i == r->L - 1 || (mask >> i) & 1u) {
            double start = link_free > r->ready[i] ? link_free : r->ready[i];
            link_free = start + a + b * (double)sum;
            sum = 0;
        }
    }
    return link_free;
}

static double rel_close(double x, double y)
{
    return fabs(x - y) <= 1e-12 * fabs(y) + 1e-18;
}

START_TEST(random_models_match_brute_force)
{
    static const struct {
        const char *name;
        double a, b;
    } regimes[] = {
        {"start-up bound  a=500us b=0.1ns/B", 500e-6, 1e-10},
        {"balanced        a=100us b=1ns/B", 100e-6, 1e-9},
        {"bandwidth bound a=20us  b=8ns/B", 20e-6, 8e-9},
        {"fast network    a=5us   b=0.1ns/B", 5e-6, 1e-10},
    };
    const int models = 2000;
    long groupings = 0;
    printf("\noptimal vs mgwfbp (paper's Algorithm 1), %d random models of 1-12 layers per "
           "regime:\n",
           models);
    printf("%-36s %12s %10s %10s %12s %12s\n", "regime", "opt<mgwfbp", "mean_gap", "max_gap",
           "mg>min(w,a)", "opt/wfbp");
    for (size_t k = 0; k < sizeof regimes / sizeof regimes[0]; k++) {
        double a = regimes[k].a, b = regimes[k].b;
        rng_state = 12345 + k;
        int beaten = 0, violations = 0;
        double gap_sum = 0, gap_max = 0, speed_sum = 0;
        for (int n = 0; n < models; n++) {
            rmodel_t r;
            random_model(&r);
            ordo_merge_timeline_t *t = NULL;
            ORDO_CK_OK(ordo_merge_timeline_new(r.m, &t));
            ck_assert_int_eq(t->n_layers, r.L);
            for (int i = 0; i < r.L; i++) {
                ck_assert(rel_close(t->ready_s[i], r.ready[i]));
                ck_assert_int_eq(t->layer_bytes[i], r.bytes[i]);
            }
            /* every grouping: the library's model equals the plain evaluation */
            double best = INFINITY;
            int group[12];
            for (unsigned mask = 0; mask < (1u << (r.L - 1)); mask++) {
                int g = 0;
                for (int i = 0; i < r.L; i++) {
                    group[i] = g;
                    if ((mask >> i) & 1u) g++;
                }
                double want = brute_time(&r, mask, a, b);
                double got =
                    ordo_merge_comm_times(r.L, t->ready_s, t->layer_bytes, group, a, b, NULL, NULL);
                ck_assert_msg(rel_close(got, want), "model %d mask %u: %.17g vs %.17g", n, mask,
                              got, want);
                if (want < best) best = want;
                groupings++;
            }
            /* the algorithms through the plan API */
            double tm[5];
            static const ordo_merge_algo_t algos[5] = {ORDO_MERGE_WFBP, ORDO_MERGE_ALL,
                                                       ORDO_MERGE_MGWFBP, ORDO_MERGE_OPTIMAL,
                                                       ORDO_MERGE_BYTES};
            for (int i = 0; i < 5; i++) {
                ordo_merge_plan_t *p = NULL;
                ORDO_CK_OK(ordo_merge_plan_compute(r.m, algos[i], 1 << 20, a, b, &p));
                tm[i] = p->predicted_iter_s;
                ordo_merge_plan_destroy(&p);
            }
            ck_assert_msg(rel_close(tm[3], best), "model %d: optimal %.17g, brute force %.17g", n,
                          tm[3], best);
            ck_assert(tm[4] >= best * (1 - 1e-12));
            double floor = tm[0] < tm[1] ? tm[0] : tm[1];
            if (tm[2] > floor * (1 + 1e-12)) {
                violations++;
                printf("  counterexample: model %d, mgwfbp %.9g > min(wfbp %.9g, all %.9g)\n", n,
                       tm[2], tm[0], tm[1]);
            }
            double gap = (tm[2] - tm[3]) / tm[3];
            if (gap > 1e-9) {
                beaten++;
                gap_sum += gap;
                if (gap > gap_max) gap_max = gap;
            }
            speed_sum += tm[3] / tm[0];
            ordo_merge_timeline_destroy(&t);
            ordo_model_destroy(&r.m);
        }
        printf("%-36s %5d (%4.1f%%) %9.3f%% %9.3f%% %12d %12.3f\n", regimes[k].name, beaten,
               100.0 * beaten / models, beaten ? 100.0 * gap_sum / beaten : 0.0, 100.0 * gap_max,
               violations, speed_sum / models);
        ck_assert_int_eq(violations, 0);
    }
    printf("(mean_gap over the models where optimal wins; %ld groupings checked)\n", groupings);
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
    suite_add_tcase(s, tc);
    return s;
}

ORDO_CK_MAIN(merge_suite)
