/* Tests of scheduler/merge's messages and tie rule: a group costs the messages the workers
 * send (one per server holding part of it, cut at the largest message size), which the
 * planner must count exactly as client/merge_buf packs them; brute force over every grouping
 * of random layers with random slices (the model equals a plain message-by-message
 * evaluation, optimal equals the minimum); and the margin rule (among the groupings of least
 * time, the least time with costs 1 + margin larger, then wfbp's, then the fewest groups). */
#include "merge_fixtures.h"
#include "core/merge_packer.h"
#include "client/merge_buf.h"

#include <stdbool.h>
#include <stdlib.h>

static uint64_t rng_state;

static uint64_t rng_next(void)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static double rng_log(double lo, double hi)
{
    return lo * pow(hi / lo, (double)(rng_next() >> 11) / 9007199254740992.0);
}

static int rel_close(double x, double y)
{
    return fabs(x - y) <= 1e-12 * fabs(y) + 1e-18;
}

/* ---------------------------------------------------------------- the workers' messages */

/* A model of n layers whose weights range from 1 KiB to 12 MiB, so that with 4 MiB
 * partitions some are chunked over several servers. */
static ordo__model_t *chunky_model(int n)
{
    ordo__model_t *m = ordo__model_new("chunky", 1, NULL);
    ck_assert_ptr_nonnull(m);
    char name[32], prev[32] = "";
    for (int l = 0; l < n; l++) {
        snprintf(name, sizeof name, "l%d", l);
        add_param_op(m, name, prev[0] ? prev : NULL, (int64_t)rng_log(256, 3 << 20),
                     rng_next() % 2 ? (int64_t)rng_log(1, 4096) : 0, rng_log(10, 1000));
        snprintf(prev, sizeof prev, "%s", name);
    }
    ORDO_CK_OK(ordo__model_check(m));
    return m;
}

START_TEST(messages_are_the_workers_parts)
{
    /* for random groupings, the planner's count of a plan's messages equals the parts the
     * workers' merge buffers build for it, and its packer cuts each group into the same
     * message sizes in the same order */
    rng_state = 7;
    for (int trial = 0; trial < 60; trial++) {
        ordo__model_t *m = chunky_model(1 + (int)(rng_next() % 30));
        int servers = 1 + (int)(rng_next() % 4);
        int64_t partition = (int64_t)1 << (18 + rng_next() % 5); /* 256 KiB .. 4 MiB */
        int64_t segment = rng_next() % 2 ? 0 : partition / 4;
        ordo__merge_layout_t lay = {servers, partition, segment};
        ordo__merge_plan_t *p = NULL;
        /* bytes:N cuts groups anywhere, even inside a layer */
        int64_t bucket = (int64_t)rng_log(1024, 64 << 20);
        ORDO_CK_OK(
            ordo__merge_plan_compute(m, ORDO_MERGE_BYTES, bucket, 1e-5, 1e-9, 0, 0, &lay, &p));

        int64_t *numel = malloc(sizeof *numel * (size_t)m->n_params);
        for (int i = 0; i < m->n_params; i++)
            numel[i] = m->params[i].numel;
        ordo__keys_t *keys = NULL;
        ORDO_CK_OK(ordo__keys_partition(numel, m->n_params, 4, partition, segment, servers, &keys));
        ordo__merge_buf_t *mb = NULL;
        ORDO_CK_OK(ordo__merge_buf_new(keys, p->n_groups, p->group_start, p->order, partition, &mb));
        int parts = 0;
        for (int g = 0; g < p->n_groups; g++)
            parts += ordo__merge_buf_n_parts(mb, g);
        ck_assert_int_eq(ordo__merge_plan_messages(p, m), parts);

        /* message by message: the packer over the plan's parameters, group by group */
        ordo__merge_timeline_t *t = NULL;
        ordo__merge_pieces_t *pc = NULL;
        ORDO_CK_OK(ordo__merge_timeline_new(m, &t));
        ORDO_CK_OK(ordo__merge_pieces_new(t, keys, partition, p->order, &pc));
        ORDO_CK_OK(ordo__merge_pieces_check(pc, m->n_params));
        const double zero = 0;
        ordo__merge_packer_t k;
        ORDO_CK_OK(ordo__merge_packer_init(&k, pc, 1, &zero, &zero, &zero));
        for (int g = 0; g < p->n_groups; g++) {
            ordo__merge_packer_reset(&k);
            for (int i = p->group_start[g]; i < p->group_start[g + 1]; i++)
                ordo__merge_packer_add(&k, i);
            ck_assert_int_eq(k.count, ordo__merge_buf_n_parts(mb, g));
            /* per server in server order: as many messages, as many bytes, the same last one */
            int q = 0;
            for (int v = 0; v < servers; v++) {
                int64_t sum = 0, last = 0;
                for (int j = 0; j < k.n[v]; j++, q++) {
                    const ordo__merge_part_t *part = ordo__merge_buf_part(mb, g, q);
                    ck_assert_int_eq(part->server, v);
                    sum += part->numel * 4;
                    last = part->numel * 4;
                }
                ck_assert_int_eq(sum, k.closed[v] + k.open[v]);
                ck_assert_int_eq(last, k.open[v]);
            }
        }
        ordo__merge_packer_free(&k);
        ordo__merge_pieces_destroy(&pc);
        ordo__merge_timeline_destroy(&t);
        ordo__merge_buf_destroy(&mb);
        ordo__keys_destroy(&keys);
        free(numel);
        ordo__merge_plan_destroy(&p);
        ordo__model_destroy(&m);
    }
}
END_TEST

START_TEST(layout_counts_messages_of_a_known_model)
{
    /* toy: fc{w 500, b 5} then conv1{w 1000, b 10} in push order, 4-byte floats; two servers
     * balance by bytes, largest first: conv1.w (4000 B) on 0, fc.w (2000) on 1, conv1.b (40)
     * on 1, fc.b (20) on 1 */
    ordo__model_t *m = toy_model();
    ordo__merge_layout_t two = {2, 1 << 20, 0};
    ordo__merge_plan_t *p = NULL;
    ORDO_CK_OK(ordo__merge_plan_compute(m, ORDO_MERGE_ALL, 0, 1e-3, 1e-9, 0, 0, &two, &p));
    ck_assert_int_eq(ordo__merge_plan_messages(p, m), 2); /* one per server */
    ordo__merge_plan_destroy(&p);
    ORDO_CK_OK(ordo__merge_plan_compute(m, ORDO_MERGE_WFBP, 0, 1e-3, 1e-9, 0, 0, &two, &p));
    ck_assert_int_eq(ordo__merge_plan_messages(p, m), 3); /* fc: server 1; conv1: 0 and 1 */
    /* wfbp, a = 1 ms: fc's one message, then conv1's two, each paying a */
    ck_assert(p->predicted_iter_s > 3e-3);
    ordo__merge_plan_destroy(&p);
    /* one server, messages of at most 2 KiB: conv1.w is cut into two chunks of 2000 B, each a
     * message of its own (a chunked key's slices travel apart from other keys, and two do not
     * fit in 2 KiB); fc.w and fc.b (2020 B) fit in one, and conv1.b goes alone */
    ordo__merge_layout_t small = {1, 2048, 0};
    ORDO_CK_OK(ordo__merge_plan_compute(m, ORDO_MERGE_ALL, 0, 1e-3, 1e-9, 0, 0, &small, &p));
    ck_assert_int_eq(ordo__merge_plan_messages(p, m), 4);
    ordo__merge_plan_destroy(&p);
    /* messages of at most 2020 B: fc.w + fc.b is exactly 2020 B, which still fits; then
     * conv1.w's two chunks of 2000 B and conv1.b: 4 messages */
    ordo__merge_layout_t exact = {1, 2020, 0};
    ORDO_CK_OK(ordo__merge_plan_compute(m, ORDO_MERGE_ALL, 0, 1e-3, 1e-9, 0, 0, &exact, &p));
    ck_assert_int_eq(ordo__merge_plan_messages(p, m), 4);
    ordo__merge_plan_destroy(&p);
    /* without a layout a group is one message */
    ORDO_CK_OK(ordo__merge_plan_compute(m, ORDO_MERGE_WFBP, 0, 1e-3, 1e-9, 0, 0, NULL, &p));
    ck_assert_int_eq(ordo__merge_plan_messages(p, m), 2);
    ordo__merge_plan_destroy(&p);
    /* layouts the run would refuse */
    ordo__merge_layout_t bad[3] = {{-1, 1 << 20, 0}, {2, 100, 0}, {2, 1 << 20, 10}};
    const char *why[3] = {"servers", "partition_bytes", "segment_bytes"};
    for (int i = 0; i < 3; i++) {
        ORDO_CK_ERR(ordo__merge_plan_compute(m, ORDO_MERGE_WFBP, 0, 1e-3, 1e-9, 0, 0, &bad[i], &p),
                    ORDO_ERR_INVAL);
        expect_detail(why[i]);
    }
    ORDO_CK_ERR(ordo__merge_plan_compute(m, ORDO_MERGE_OPTIMAL, 0, 1e-3, 1e-9, 0, -1, NULL, &p),
                ORDO_ERR_INVAL);
    expect_detail("margin");
    ordo__model_destroy(&m);
}
END_TEST

/* ---------------------------------------------------------------- brute force */

/* Random layers with random slices: L layers (backward order) ready at ready[], each with
 * 1..4 slices on S servers; a third of the layers with several slices are one chunked key
 * (their slices are its consecutive chunks, on any server), the others keys of one slice. */
typedef struct {
    int L, S;
    double ready[10], tb[10];
    int64_t bytes[10];
    int first[11], server[40], run_key[40];
    int64_t sl[40], run_off[40];
    ordo__merge_pieces_t pc;
} rlayers_t;

static void random_layers(rlayers_t *r)
{
    r->L = 1 + (int)(rng_next() % 10);
    r->S = 1 + (int)(rng_next() % 3);
    double clock = 0;
    int s = 0;
    for (int l = 0; l < r->L; l++) {
        r->tb[l] = rng_log(10e-6, 3e-3);
        clock += r->tb[l];
        r->ready[l] = clock;
        r->first[l] = s;
        r->bytes[l] = 0;
        int n = 1 + (int)(rng_next() % 4);
        bool chunked = n > 1 && rng_next() % 3 == 0;
        for (int k = 0; k < n; k++, s++) {
            r->server[s] = (int)(rng_next() % (uint64_t)r->S);
            r->sl[s] = (int64_t)rng_log(64, 8e6);
            r->run_key[s] = chunked ? l : -1;
            r->run_off[s] = chunked ? r->bytes[l] : 0;
            r->bytes[l] += r->sl[s];
        }
    }
    r->first[r->L] = s;
    r->pc = (ordo__merge_pieces_t){.n_servers = r->S,
                                  .max_bytes = rng_next() % 3 ? (int64_t)rng_log(1e5, 1e7) : 0,
                                  .n_items = r->L,
                                  .first = r->first,
                                  .server = r->server,
                                  .bytes = r->sl,
                                  .run_key = r->run_key,
                                  .run_off = r->run_off};
}

/* plain_time evaluates the grouping whose boundaries are the set bits of mask the plain way:
 * each group is packed as a worker packs it (per server in order, its slices in order, a new
 * message when the open one would pass max_bytes, and when a slice does not continue it: a
 * chunked key's slice continues only a run of that key's consecutive slices, a key of one
 * slice only a message of such keys), and its messages go one after another,
 * each holding the link a + b * bytes from when both the group is ready and the link is
 * free, then the receiver c * bytes from when both it has arrived and the receiver is free;
 * with pulls (p or pm > 0) then each server's link back p * (the group's bytes on that server)
 * + pm * (its slices there) from when both the group has been received and that link is free,
 * the iteration ending when the last of them is. */
static double plain_time(const rlayers_t *r, unsigned mask, double a, double b, double c, double p,
                         double pm)
{
    double link = 0, recv = 0, back[3] = {0, 0, 0};
    int j = 0;
    for (int i = 0; i < r->L; i++) {
        if (i < r->L - 1 && !((mask >> i) & 1u)) continue;
        /* group j..i */
        double t = link > r->ready[i] ? link : r->ready[i];
        for (int v = 0; v < r->S; v++) {
            int64_t open = -1, run_end = 0;
            int run = -1;
            for (int s = r->first[j]; s < r->first[i + 1]; s++) {
                if (r->server[s] != v) continue;
                bool same =
                    r->run_key[s] >= 0 ? run == r->run_key[s] && run_end == r->run_off[s] : run < 0;
                run_end = r->run_off[s] + r->sl[s];
                if (open >= 0 && same &&
                    !(r->pc.max_bytes > 0 && open + r->sl[s] > r->pc.max_bytes)) {
                    open += r->sl[s];
                    continue;
                }
                run = r->run_key[s];
                if (open >= 0) { /* send the closed message */
                    t += a + b * (double)open;
                    recv = (recv > t ? recv : t) + c * (double)open;
                }
                open = r->sl[s];
            }
            if (open >= 0) {
                t += a + b * (double)open;
                recv = (recv > t ? recv : t) + c * (double)open;
            }
        }
        link = t;
        for (int v = 0; v < r->S && (p > 0 || pm > 0); v++) {
            int64_t on_v = 0;
            int values = 0;
            for (int s = r->first[j]; s < r->first[i + 1]; s++)
                if (r->server[s] == v) {
                    on_v += r->sl[s];
                    values++;
                }
            if (on_v > 0)
                back[v] = (back[v] > recv ? back[v] : recv) + p * (double)on_v + pm * values;
        }
        j = i + 1;
    }
    if (p == 0 && pm == 0) return recv;
    double end = back[0];
    for (int v = 1; v < r->S; v++)
        if (back[v] > end) end = back[v];
    return end;
}

/* the grouping of mask as group numbers */
static int groups_of(int L, unsigned mask, int *group)
{
    int g = 0;
    for (int i = 0; i < L; i++) {
        group[i] = g;
        if ((mask >> i) & 1u) g++;
    }
    return group[L - 1] + 1;
}

START_TEST(messages_match_a_plain_evaluation)
{
    static const struct {
        double a, b, c, p, pm, margin;
    } regimes[] = {
        {500e-6, 1e-10, 0, 0, 0, 0},
        {100e-6, 1e-9, 0, 0, 0, 0},
        {40e-6, 0.8e-9, 2.5e-9, 0, 0, 0},
        {300e-6, 0.8e-9, 0.5e-9, 0, 0, 0},
        {0, 1e-9, 0, 0, 0, 0},
        {500e-6, 1e-10, 0, 0, 0, 0.5},
        {100e-6, 1e-9, 0, 0, 0, 1.0},
        {40e-6, 0.8e-9, 1e-9, 0, 0, 0.5},
        {300e-6, 0.8e-9, 0.5e-9, 0, 0, 2.0},
        /* early pulls: a pull stage per server, per byte and per pulled value */
        {40e-6, 0.8e-9, 0.5e-9, 3.2e-9, 0, 0},
        {300e-6, 0.8e-9, 0.5e-9, 1.6e-9, 0, 0},
        {5e-6, 0.1e-9, 0, 8e-9, 0, 0},
        {100e-6, 1e-9, 0.5e-9, 4e-9, 0, 0.5},
        {500e-6, 1e-9, 0.8e-9, 3.2e-9, 1e-3, 0},
        {1e-3, 1e-9, 0.8e-9, 3.2e-9, 400e-6, 0.5},
    };
    long checked = 0;
    int by_margin = 0;
    for (size_t k = 0; k < sizeof regimes / sizeof regimes[0]; k++) {
        double a = regimes[k].a, b = regimes[k].b, c = regimes[k].c, pp = regimes[k].p,
               pm = regimes[k].pm, mg = regimes[k].margin;
        double l = 1 + mg;
        rng_state = 1000 + k;
        for (int n = 0; n < 600; n++) {
            rlayers_t r;
            random_layers(&r);
            ORDO_CK_OK(ordo__merge_pieces_check(&r.pc, r.L));
            unsigned all = 1u << (r.L - 1);
            double t1[512], t2[512], best = INFINITY;
            int group[10];
            for (unsigned mask = 0; mask < all; mask++) {
                groups_of(r.L, mask, group);
                t1[mask] = plain_time(&r, mask, a, b, c, pp, pm);
                double got = ordo__merge_comm_times3(r.L, r.ready, r.bytes, group, a, b, c, pp, pm,
                                                    &r.pc, NULL, NULL);
                ck_assert_msg(rel_close(got, t1[mask]),
                              "regime %zu model %d mask %u: %.17g vs %.17g", k, n, mask, got,
                              t1[mask]);
                t2[mask] = plain_time(&r, mask, l * a, l * b, l * c, l * pp, l * pm);
                if (t1[mask] < best) best = t1[mask];
                checked++;
            }
            /* the rule: least time; then (margin > 0) least time at the margin; then the
             * fewest groups */
            double best2 = INFINITY;
            for (unsigned mask = 0; mask < all; mask++)
                if (t1[mask] <= best * (1 + 1e-13) && t2[mask] < best2) best2 = t2[mask];
            int fewest = r.L + 1, fewest_plain = r.L + 1;
            for (unsigned mask = 0; mask < all; mask++) {
                if (t1[mask] > best * (1 + 1e-13)) continue;
                int g = groups_of(r.L, mask, group);
                if (g < fewest_plain) fewest_plain = g;
                if (mg > 0 && t2[mask] > best2 * (1 + 1e-13)) continue;
                if (g < fewest) fewest = g;
            }
            int want = fewest;
            int og = ordo__merge_optimal3(r.L, r.tb, r.bytes, a, b, c, pp, pm, mg, &r.pc, group);
            ck_assert_msg(og == want, "regime %zu model %d: %d groups, want %d", k, n, og, want);
            ck_assert(ordo__merge_grouping_valid(r.L, group));
            double got = ordo__merge_comm_times3(r.L, r.ready, r.bytes, group, a, b, c, pp, pm,
                                                &r.pc, NULL, NULL);
            ck_assert_msg(rel_close(got, best), "regime %zu model %d: %.17g vs least %.17g", k, n,
                          got, best);
            if (mg > 0) {
                double got2 = ordo__merge_comm_times3(r.L, r.ready, r.bytes, group, l * a, l * b,
                                                     l * c, l * pp, l * pm, &r.pc, NULL, NULL);
                ck_assert_msg(rel_close(got2, best2),
                              "regime %zu model %d: at the margin %.17g vs %.17g", k, n, got2,
                              best2);
                if (want != fewest_plain) by_margin++;
            }
        }
    }
    printf("\nmessages: %ld groupings of random layers with random slices checked; the margin "
           "changed the plan of %d models\n",
           checked, by_margin);
    ck_assert_int_gt(by_margin, 0);
}
END_TEST

/* Layers ready at 1, 6 and 17 s with 5, 5 and 1 bytes, a = 1, b = 1. wfbp and {0 1}{2} both
 * end at 19 (the last layer's message after its compute), and without a margin optimal takes
 * the fewer groups, {0 1}{2}, whose message ends just as the last layer is ready: no slack.
 * With costs 1.5 times larger that plan ends at 25.5 and wfbp, whose link is free from 13,
 * at 22: with a margin optimal takes wfbp. */
START_TEST(margin_keeps_slack_on_a_fixed_case)
{
    double tb[3] = {1, 5, 11};
    int64_t bytes[3] = {5, 5, 1};
    double ready[3] = {1, 6, 17};
    int g[3];
    ck_assert_int_eq(ordo__merge_optimal(3, tb, bytes, 1, 1, 0, 0, NULL, g), 2);
    ck_assert_int_eq(g[0], 0);
    ck_assert_int_eq(g[1], 0);
    ck_assert_int_eq(g[2], 1);
    close_to(ordo__merge_comm_times(3, ready, bytes, g, 1, 1, 0, NULL, NULL, NULL), 19);
    close_to(ordo__merge_comm_times(3, ready, bytes, g, 1.5, 1.5, 0, NULL, NULL, NULL), 25.5);
    ck_assert_int_eq(ordo__merge_optimal(3, tb, bytes, 1, 1, 0, 0.5, NULL, g), 3);
    close_to(ordo__merge_comm_times(3, ready, bytes, g, 1, 1, 0, NULL, NULL, NULL), 19);
    close_to(ordo__merge_comm_times(3, ready, bytes, g, 1.5, 1.5, 0, NULL, NULL, NULL), 22);
    ORDO_CK_ERR(ordo__merge_optimal(3, tb, bytes, 1, 1, 0, NAN, NULL, g), ORDO_ERR_INVAL);
    expect_detail("margin");
}
END_TEST

Suite *merge_messages_suite(void);
Suite *merge_messages_suite(void)
{
    Suite *s = suite_create("merge_messages");
    TCase *tc = tcase_create("messages");
    tcase_add_test(tc, messages_are_the_workers_parts);
    tcase_add_test(tc, layout_counts_messages_of_a_known_model);
    suite_add_tcase(s, tc);
    tc = tcase_create("brute_force");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, messages_match_a_plain_evaluation);
    tcase_add_test(tc, margin_keeps_slack_on_a_fixed_case);
    suite_add_tcase(s, tc);
    return s;
}

ORDO_CK_MAIN(merge_messages_suite)
