/* Tests of planner/cluster, planner/cluster_plan and planner/allreduce: the bytes on each
 * kind of link against BytePS's analysis, the limiting resource, the codecs, impossible
 * clusters refused naming the field, and the recommended settings. */
#include "planner/allreduce.h"
#include "planner/cluster.h"
#include "planner/cluster_plan.h"
#include "common/error.h"
#include "ordering_fixtures.h"

#include <math.h>

#define M_BYTES (32.0 * 524288 * 4) /* fx_seq32: 32 tensors of 2 MiB */

static ordo__cluster_t cluster(int w, int l, int s, double bps)
{
    ordo__cluster_t c;
    ordo__cluster_defaults(&c);
    c.workers = w;
    c.workers_per_host = l;
    c.server_hosts = s;
    c.worker_bps = c.server_bps = bps;
    c.link_efficiency = 1; /* exact link times; the measured defaults have their own test */
    c.server_ns = 0;
    return c;
}

/* BytePS's analysis (Jiang et al., OSDI 2020, section 3): with as many server hosts as worker
 * hosts a PS moves one model each way on every worker link; a ring all-reduce over n hosts
 * moves 2 (n - 1) / n of it */
START_TEST(bytes_match_byteps_analysis)
{
    ordo__model_t *m = fx_seq32();
    for (int n = 2; n <= 16; n *= 2) {
        ordo__cluster_t c = cluster(n, 1, n, 10e9);
        ordo__cluster_result_t r;
        ordo__allreduce_result_t ring, hier;
        ORDO_CK_OK(ordo__cluster_predict(m, &c, &r));
        ORDO_CK_OK(ordo__allreduce_ring(m, &c, &ring));
        ORDO_CK_OK(ordo__allreduce_hier(m, &c, &hier));
        ck_assert_double_eq_tol(r.worker_bytes_out, M_BYTES, 1);
        ck_assert_double_eq_tol(r.worker_bytes_in, M_BYTES, 1);
        /* 32 equal tensors spread evenly: each server host takes W / S = 1 model's share */
        ck_assert_double_eq_tol(r.server_bytes_in, M_BYTES * n / n, 1);
        ck_assert_double_eq_tol(ring.bytes, 2.0 * (n - 1) / n * M_BYTES, 1);
        ck_assert_double_eq_tol(hier.bytes, ring.bytes, 1); /* one worker a host: the same */
        ck_assert_double_eq_tol(ring.bytes / r.worker_bytes_out, 2.0 * (n - 1) / n, 1e-9);
    }
    /* 8 workers on 2 hosts: the hierarchical ring runs over the 2 hosts */
    ordo__cluster_t c = cluster(8, 4, 2, 10e9);
    ordo__allreduce_result_t hier;
    ORDO_CK_OK(ordo__allreduce_hier(m, &c, &hier));
    ck_assert_double_eq_tol(hier.bytes, M_BYTES, 1);
    ordo__model_destroy(&m);
}
END_TEST

/* a host's workers share its link: flat, each pushes a model; in a group the host pushes one */
START_TEST(groups_carry_one_model_per_host)
{
    ordo__model_t *m = fx_seq32();
    ordo__cluster_t c = cluster(8, 4, 2, 1e9);
    ordo__cluster_result_t flat, grp;
    ORDO_CK_OK(ordo__cluster_predict(m, &c, &flat));
    c.groups = 1;
    ORDO_CK_OK(ordo__cluster_predict(m, &c, &grp));
    ck_assert_int_eq(flat.pushers, 8);
    ck_assert_int_eq(grp.pushers, 2);
    ck_assert_double_eq_tol(flat.worker_bytes_out, 4 * M_BYTES, 1);
    ck_assert_double_eq_tol(grp.worker_bytes_out, M_BYTES, 1);
    ck_assert_double_eq_tol(flat.server_bytes_out, 8 * M_BYTES / 2, 1);
    ck_assert_double_eq_tol(grp.server_bytes_out, 2 * M_BYTES / 2, 1);
    /* link bound at 1gbit: 4 models on a worker host's link take 4 x 67 ms */
    ck_assert_int_eq(flat.limit, ORDO_CLUSTER_LIMIT_WORKER_LINK);
    ck_assert_double_eq_tol(flat.worker_link_us, 4 * M_BYTES * 8e6 / 1e9, 1);
    ck_assert_double_ge(flat.step_us, flat.bound_us * 0.999);
    ck_assert_double_lt(grp.step_us, flat.step_us / 2);
    ordo__model_destroy(&m);
}
END_TEST

/* the limit is the busiest resource: one server for 4 workers is the server's link; fast links
 * and slow compute are compute; the step is never under the bound */
START_TEST(limit_is_the_busiest_resource)
{
    ordo__model_t *m = fx_seq32();
    ordo__cluster_t c = cluster(4, 1, 1, 1e9);
    c.ordered = 1;
    ordo__cluster_result_t r;
    ORDO_CK_OK(ordo__cluster_predict(m, &c, &r));
    ck_assert_int_eq(r.limit, ORDO_CLUSTER_LIMIT_SERVER_LINK);
    ck_assert_double_eq_tol(r.bound_us, 4 * M_BYTES * 8e6 / 1e9, 1);
    ck_assert_double_ge(r.step_us, r.bound_us * 0.999);
    /* early pulls overlap the server's ingress and egress: within 10 % of the bound */
    ck_assert_double_le(r.step_us, r.bound_us * 1.10);
    /* fifo pulls at the start of the next iteration, once the pushes are in: no overlap */
    c.ordered = 0;
    ORDO_CK_OK(ordo__cluster_predict(m, &c, &r));
    ck_assert_double_ge(r.step_us, 2 * r.bound_us);
    ck_assert_double_le(r.step_us, 2.2 * r.bound_us);
    c = cluster(4, 1, 4, 100e9);
    c.compute_scale = 100; /* 9.6 s of compute */
    ORDO_CK_OK(ordo__cluster_predict(m, &c, &r));
    ck_assert_int_eq(r.limit, ORDO_CLUSTER_LIMIT_COMPUTE);
    ck_assert_double_eq_tol(r.compute_us, 100 * 32 * 3000.0, 1);
    ck_assert_double_ge(r.step_us, r.compute_us);
    ck_assert_double_le(r.step_us, r.compute_us * 1.05);
    /* a scheduler at 1 s a member limits 4 members to 4 s */
    c.compute_scale = 1;
    c.sched_us = 1e6;
    ORDO_CK_OK(ordo__cluster_predict(m, &c, &r));
    ck_assert_int_eq(r.limit, ORDO_CLUSTER_LIMIT_SCHEDULER);
    ck_assert_double_eq_tol(r.step_us, 4e6, 1);
    /* 10,000 workers send a STATS message every 20 iterations ([output] stats_every auto):
     * the per-record share (0.35) stays, the rest is divided by 20 */
    c = cluster(10000, 8, 4, 100e9);
    c.sched_us = 100;
    ORDO_CK_OK(ordo__cluster_predict(m, &c, &r));
    ck_assert_double_eq_tol(r.scheduler_us, 10000 * 100 * (0.35 + 0.65 / 20), 1);
    c = cluster(500, 4, 4, 100e9);
    c.sched_us = 100;
    ORDO_CK_OK(ordo__cluster_predict(m, &c, &r));
    ck_assert_double_eq_tol(r.scheduler_us, 500 * 100, 1e-6);
    ordo__model_destroy(&m);
}
END_TEST

/* the measured defaults: TCP gets 0.93 of a link, and a server's CPU (4 ns per value per
 * pusher) adds to the step: one thread receives, sums and answers */
START_TEST(link_efficiency_and_server_cpu_add_up)
{
    ordo__model_t *m = fx_seq32();
    ordo__cluster_t c = cluster(2, 1, 1, 1e9);
    c.ordered = 1;
    ordo__cluster_result_t bare, r;
    ORDO_CK_OK(ordo__cluster_predict(m, &c, &bare));
    ordo__cluster_t d;
    ordo__cluster_defaults(&d);
    c.link_efficiency = d.link_efficiency;
    c.server_ns = d.server_ns;
    ck_assert_double_eq_tol(c.link_efficiency, 0.93, 1e-12);
    ck_assert_double_eq_tol(c.server_ns, 4.0, 1e-12);
    ORDO_CK_OK(ordo__cluster_predict(m, &c, &r));
    ck_assert_double_eq_tol(r.server_link_us, bare.server_link_us / 0.93, 1e-6);
    ck_assert_double_eq_tol(r.server_cpu_us, 2 * 32 * 524288 * 4.0 / 1e3, 1e-6);
    /* the link-bound step stretches by 1 / 0.93 and then takes the server's CPU on top */
    ck_assert_double_ge(r.step_us, bare.step_us / 0.93 * 0.98 + r.server_cpu_us);
    ck_assert_double_le(r.step_us, bare.step_us / 0.93 * 1.02 + r.server_cpu_us);
    ordo__model_destroy(&m);
}
END_TEST

/* the codecs' bytes: bf16 half, onebit a 32nd, topk 8 d per value pushed and dense answers */
START_TEST(codecs_scale_the_bytes)
{
    ordo__model_t *m = fx_seq32();
    ordo__cluster_t c = cluster(2, 1, 1, 1e9);
    const double push[] = {1, 0.5, 1.0 / 32, 2 * 0.01}, ans[] = {1, 0.5, 1.0 / 32, 1};
    double prev = INFINITY;
    for (int w = 0; w < ORDO_CLUSTER_WIRE_COUNT; w++) {
        c.wire = (ordo__cluster_wire_t)w;
        ordo__cluster_result_t r;
        ORDO_CK_OK(ordo__cluster_predict(m, &c, &r));
        ck_assert_double_eq_tol(r.worker_bytes_out, push[w] * M_BYTES, 1);
        ck_assert_double_eq_tol(r.worker_bytes_in, ans[w] * M_BYTES, 1);
        if (w <= ORDO_CLUSTER_WIRE_ONEBIT) ck_assert_double_lt(r.step_us, prev); /* link bound */
        prev = r.step_us;
    }
    ordo__model_destroy(&m);
}
END_TEST

/* refuse c, the message naming field */
static void refused(const ordo__cluster_t *c, const char *field)
{
    ordo__model_t *m = fx_seq32();
    ordo__cluster_result_t r;
    int rc = ordo__cluster_predict(m, c, &r);
    ck_assert_int_eq(rc, ORDO_ERR_INVAL);
    ck_assert_msg(strstr(ordo__error_text(rc), field), "'%s' does not name %s",
                  ordo__error_text(rc), field);
    ordo__model_destroy(&m);
}

START_TEST(impossible_clusters_are_refused)
{
    ordo__cluster_t c = cluster(8, 2, 2, 1e9);
    c.worker_bps = 0;
    refused(&c, "--worker-link");
    c = cluster(8, 2, 2, 1e9);
    c.server_bps = 0;
    refused(&c, "--server-link");
    c = cluster(4, 8, 1, 1e9); /* more workers per host than workers */
    refused(&c, "--workers-per-host");
    c = cluster(8, 3, 1, 1e9);
    refused(&c, "--workers-per-host");
    c = cluster(4, 1, 5, 1e9); /* more server hosts than workers */
    refused(&c, "--server-hosts");
    c = cluster(0, 1, 1, 1e9);
    refused(&c, "--workers");
    c = cluster(4, 1, 1, 1e9);
    c.groups = 1;
    refused(&c, "--groups");
    c = cluster(4, 1, 1, 1e9);
    c.wire = ORDO_CLUSTER_WIRE_TOPK;
    c.topk_density = 0;
    refused(&c, "--density");
}
END_TEST

/* auto: on slow links with 4 workers a host, groups and more than one server host; the choice
 * is never slower than the settings given, and every chosen setting has its reason */
START_TEST(plan_recommends_groups_and_servers)
{
    ordo__model_t *m = fx_seq32();
    ordo__cluster_t c = cluster(16, 4, 1, 1e9);
    ordo__cluster_auto_t a = {.server_hosts = 1, .groups = 1, .order = 1};
    ordo__cluster_plan_t p;
    ORDO_CK_OK(ordo__cluster_plan(m, &c, &a, &p));
    ck_assert_int_eq(p.chosen.groups, 1);
    ck_assert_int_ge(p.chosen.server_hosts, 2);
    ck_assert_int_eq(p.chosen.wire, ORDO_CLUSTER_WIRE_NONE); /* not auto: kept */
    ck_assert_int_eq(p.n_why, 3);
    ck_assert_ptr_nonnull(strstr(p.why[0], "server hosts"));
    ordo__cluster_result_t given;
    ORDO_CK_OK(ordo__cluster_predict(m, &c, &given));
    ck_assert_double_lt(p.result.step_us, given.step_us);
    /* fixed settings stay as given */
    ordo__cluster_auto_t none = {0};
    ORDO_CK_OK(ordo__cluster_plan(m, &c, &none, &p));
    ck_assert_int_eq(p.chosen.server_hosts, 1);
    ck_assert_int_eq(p.chosen.groups, 0);
    ck_assert_int_eq(p.n_why, 0);
    ck_assert_double_eq_tol(p.result.step_us, given.step_us, 1e-6);
    ordo__model_destroy(&m);
}
END_TEST

static Suite *cluster_suite(void)
{
    Suite *s = suite_create("cluster");
    TCase *tc = tcase_create("model");
    tcase_add_test(tc, bytes_match_byteps_analysis);
    tcase_add_test(tc, groups_carry_one_model_per_host);
    tcase_add_test(tc, limit_is_the_busiest_resource);
    tcase_add_test(tc, link_efficiency_and_server_cpu_add_up);
    tcase_add_test(tc, codecs_scale_the_bytes);
    tcase_add_test(tc, impossible_clusters_are_refused);
    tcase_add_test(tc, plan_recommends_groups_and_servers);
    suite_add_tcase(s, tc);
    return s;
}

ORDO_CK_MAIN(cluster_suite)
