/* Tests of scheduler/merge's plans: computing them for each algorithm, algorithm names,
 * ordo-merge/1 writing and reading with its rejections, the real profiles, and the
 * `ordo-plan merge` command line. */
#include "merge_fixtures.h"
#include "tools/merge_cli.h"

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

/* ---------------------------------------------------------------- plans */

/* toy under a = 200 us, b = 10 ns/byte: fc ready at 70 us (2020 bytes), conv1 at 180 us
 * (4040 bytes). wfbp: fc 70..290.2, conv1 290.2..530.6; all: 180..440.6. */
START_TEST(plan_compute_on_toy)
{
    ordo__model_t *m = toy_model();
    ordo__merge_plan_t *p = NULL;
    const double a = 200e-6, b = 1e-8;
    ORDO_CK_OK(ordo__merge_plan_compute(m, ORDO_MERGE_WFBP, 0, a, b, 0, 0, NULL, &p));
    ck_assert_int_eq(p->n_groups, 2);
    ck_assert_int_eq(p->n_params, 4);
    close_to(p->predicted_iter_s, 530.6e-6);
    ck_assert_str_eq(m->params[p->order[0]].name, "fc.w");
    ck_assert_int_eq(p->group_of_param[ordo__model_param_index(m, "fc.b")], 0);
    ck_assert_int_eq(p->group_of_param[ordo__model_param_index(m, "conv1.w")], 1);
    ck_assert_int_eq(p->group_start[1], 2);
    ordo__merge_plan_destroy(&p);
    ck_assert_ptr_null(p);
    ordo__merge_plan_destroy(&p);

    ORDO_CK_OK(ordo__merge_plan_compute(m, ORDO_MERGE_ALL, 0, a, b, 0, 0, NULL, &p));
    ck_assert_int_eq(p->n_groups, 1);
    close_to(p->predicted_iter_s, 440.6e-6);
    ordo__merge_plan_destroy(&p);
    /* waiting 180 - 70 = 110 us < a: Algorithm 1 merges, and so does the optimum */
    ORDO_CK_OK(ordo__merge_plan_compute(m, ORDO_MERGE_MGWFBP, 0, a, b, 0, 0, NULL, &p));
    ck_assert_int_eq(p->n_groups, 1);
    close_to(p->predicted_iter_s, 440.6e-6);
    ordo__merge_plan_destroy(&p);
    ORDO_CK_OK(ordo__merge_plan_compute(m, ORDO_MERGE_OPTIMAL, 0, a, b, 0, 0, NULL, &p));
    ck_assert_int_eq(p->n_groups, 1);
    close_to(p->predicted_iter_s, 440.6e-6);
    close_to(ordo__merge_plan_iter_s(p, m, 50e-6, b, 0), 290.6e-6);
    ordo__merge_plan_destroy(&p);
    /* bytes:2500 fills fc.w, fc.b, conv1.w (6020 bytes >= 2500), then conv1.b alone */
    ORDO_CK_OK(ordo__merge_plan_compute(m, ORDO_MERGE_BYTES, 2500, a, b, 0, 0, NULL, &p));
    ck_assert_int_eq(p->n_groups, 2);
    ck_assert_int_eq(p->group_start[1], 3);
    ck_assert_int_eq(p->group_of_param[ordo__model_param_index(m, "conv1.b")], 1);
    close_to(p->predicted_iter_s, 640.6e-6);
    ordo__merge_plan_destroy(&p);

    ORDO_CK_ERR(ordo__merge_plan_compute(m, ORDO_MERGE_BYTES, 0, a, b, 0, 0, NULL, &p), ORDO_ERR_INVAL);
    ORDO_CK_ERR(ordo__merge_plan_compute(m, ORDO_MERGE_OPTIMAL, 0, INFINITY, b, 0, 0, NULL, &p),
                ORDO_ERR_INVAL);
    expect_detail("must be finite and >= 0");
    ck_assert_ptr_null(p);
    ordo__model_destroy(&m);
}
END_TEST

/* an occasional parameter (a declared metric) is cut out of its group, alone; the order stays */
START_TEST(occasional_params_travel_alone)
{
    ordo__model_t *m = toy_model();
    ordo__merge_plan_t *p = NULL;
    ORDO_CK_OK(ordo__merge_plan_compute(m, ORDO_MERGE_ALL, 0, 100e-6, 1e-9, 0, 0, NULL, &p));
    ck_assert_int_eq(p->n_groups, 1);
    ck_assert_int_eq(ordo__merge_plan_isolate(p, m), 0); /* nothing marked: as it was */
    ck_assert_int_eq(p->n_groups, 1);
    int order[4];
    for (int i = 0; i < 4; i++)
        order[i] = p->order[i];
    m->params[order[1]].occasional = true; /* the second in push order */
    ck_assert_int_eq(ordo__merge_plan_isolate(p, m), 1);
    ck_assert_int_eq(p->n_groups, 3);
    ck_assert_int_eq(p->group_start[0], 0);
    ck_assert_int_eq(p->group_start[1], 1);
    ck_assert_int_eq(p->group_start[2], 2);
    ck_assert_int_eq(p->group_start[3], 4);
    for (int i = 0; i < 4; i++) {
        ck_assert_int_eq(p->order[i], order[i]);
        ck_assert_int_eq(p->group_of_param[order[i]], i < 2 ? i : 2);
    }
    ck_assert_int_eq(ordo__merge_plan_isolate(p, m), 0); /* already alone */
    ck_assert_int_eq(p->n_groups, 3);
    ordo__merge_plan_destroy(&p);
    ordo__model_destroy(&m);
}
END_TEST

START_TEST(algo_names_parse)
{
    ordo__merge_algo_t al;
    int64_t n;
    ORDO_CK_OK(ordo__merge_algo_parse("optimal", &al, &n));
    ck_assert_int_eq(al, ORDO_MERGE_OPTIMAL);
    ck_assert_int_eq(n, 0);
    ORDO_CK_OK(ordo__merge_algo_parse("none", &al, &n));
    ck_assert_int_eq(al, ORDO_MERGE_WFBP);
    ORDO_CK_OK(ordo__merge_algo_parse("mgwfbp", &al, &n));
    ck_assert_str_eq(ordo__merge_algo_name(al), "mgwfbp");
    ORDO_CK_OK(ordo__merge_algo_parse("bytes:25MB", &al, &n));
    ck_assert_int_eq(al, ORDO_MERGE_BYTES);
    ck_assert_int_eq(n, 25000000);
    ORDO_CK_OK(ordo__merge_algo_parse("bytes:64k", &al, &n));
    ck_assert_int_eq(n, 65536);
    ORDO_CK_ERR(ordo__merge_algo_parse("bytes:0", &al, &n), ORDO_ERR_INVAL);
    ORDO_CK_ERR(ordo__merge_algo_parse("bytes:lots", &al, &n), ORDO_ERR_INVAL);
    ORDO_CK_ERR(ordo__merge_algo_parse("greedy", &al, &n), ORDO_ERR_INVAL);
    expect_detail("'greedy' is not one of optimal|mgwfbp|wfbp|all|bytes:N");
}
END_TEST

START_TEST(plan_json_round_trip)
{
    ordo__model_t *m = toy_model();
    ordo__merge_plan_t *p = NULL, *q = NULL;
    ORDO_CK_OK(ordo__merge_plan_compute(m, ORDO_MERGE_WFBP, 0, 0.0002, 4e-10, 0, 0, NULL, &p));
    char *json = NULL;
    ORDO_CK_OK(ordo__merge_plan_to_json(p, m, &json));
    const char *head = "{\"format\": \"ordo-merge/1\", \"model\": \"toy\", \"a\": 0.0002, \"b\": "
                       "4e-10,\n \"groups\": [\n  [\"fc.w\", \"fc.b\"],\n  [\"conv1.w\", "
                       "\"conv1.b\"]\n ],\n \"predicted_iter_s\": ";
    ck_assert_msg(strncmp(json, head, strlen(head)) == 0, "got:\n%s", json);
    ORDO_CK_OK(ordo__merge_plan_load_string(json, "plan.json", m, &q));
    ck_assert_int_eq(q->n_groups, 2);
    ck_assert(q->a == p->a && q->b == p->b);
    close_to(q->predicted_iter_s, p->predicted_iter_s);
    for (int i = 0; i < 4; i++) {
        ck_assert_int_eq(q->order[i], p->order[i]);
        ck_assert_int_eq(q->group_of_param[i], p->group_of_param[i]);
    }
    ordo__merge_plan_destroy(&q);
    free(json);
    ordo__merge_plan_destroy(&p);

    /* a layer's parameters may be split between adjacent groups and listed in any order */
    const char *split = "{\"format\": \"ordo-merge/1\", \"model\": \"toy\", \"a\": 0.0002, "
                        "\"b\": 4e-10, \"groups\": [[\"fc.b\"], [\"fc.w\", \"conv1.b\", "
                        "\"conv1.w\"]], \"predicted_iter_s\": 1}";
    ORDO_CK_OK(ordo__merge_plan_load_string(split, "split.json", m, &q));
    ck_assert_int_eq(q->n_groups, 2);
    ck_assert_int_eq(q->group_of_param[ordo__model_param_index(m, "fc.b")], 0);
    ck_assert_int_eq(q->group_of_param[ordo__model_param_index(m, "fc.w")], 1);
    ck_assert_str_eq(m->params[q->order[2]].name, "conv1.b");
    /* recomputed: fc.b 70..270.08 us, the rest from 270.08 us + 200 us + 8060 * 0.4 ns */
    close_to(q->predicted_iter_s, 70e-6 + 2 * 200e-6 + 4e-10 * 6060);
    ordo__merge_plan_destroy(&q);

    /* a and b may be left out (0) */
    ORDO_CK_OK(ordo__merge_plan_load_string(
        "{\"format\": \"ordo-merge/1\", \"model\": \"toy\", \"groups\": [[\"fc.w\", "
        "\"fc.b\", \"conv1.w\", \"conv1.b\"]]}",
        "min.json", m, &q));
    ck_assert_int_eq(q->n_groups, 1);
    close_to(q->predicted_iter_s, 180e-6);
    ordo__merge_plan_destroy(&q);
    ordo__model_destroy(&m);
}
END_TEST

START_TEST(plan_json_keeps_layout_and_margin)
{
    /* a plan made for a run's key layout and with a margin writes both, and a plan read back
     * is timed with its layout: the same predicted time */
    ordo__model_t *m = toy_model();
    ordo__merge_layout_t lay = {2, 1 << 20, 0};
    ordo__merge_plan_t *p = NULL, *q = NULL;
    ORDO_CK_OK(
        ordo__merge_plan_compute(m, ORDO_MERGE_OPTIMAL, 0, 2e-4, 4e-10, 1e-10, 0.5, &lay, &p));
    ck_assert(p->margin == 0.5);
    char *json = NULL;
    ORDO_CK_OK(ordo__merge_plan_to_json(p, m, &json));
    ck_assert_msg(strstr(json, "\"c\": 1e-10, \"margin\": 0.5,\n \"servers\": 2, "
                               "\"partition_bytes\": 1048576, \"segment_bytes\": 0") != NULL,
                  "got:\n%s", json);
    ORDO_CK_OK(ordo__merge_plan_load_string(json, "plan.json", m, &q));
    ck_assert_int_eq(q->layout.servers, 2);
    ck_assert_int_eq(q->layout.partition_bytes, 1 << 20);
    ck_assert_int_eq(q->layout.segment_bytes, 0);
    ck_assert(q->margin == 0.5);
    ck_assert(q->predicted_iter_s == p->predicted_iter_s);
    ck_assert_int_eq(ordo__merge_plan_messages(q, m), ordo__merge_plan_messages(p, m));
    /* the same groups timed as one message each differ: wfbp's conv1 is two messages */
    ordo__merge_plan_destroy(&q);
    free(json);
    ordo__merge_plan_destroy(&p);
    /* the early pulls' stage, per byte and per pulled value, is written, read and timed back;
     * each pulled value adds to the prediction */
    ORDO_CK_OK(ordo__merge_plan_compute3(m, ORDO_MERGE_WFBP, 0, 2e-4, 4e-10, 1e-10, 3.2e-9, 0, 0,
                                        &lay, &p));
    double bytes_only = p->predicted_iter_s;
    ordo__merge_plan_destroy(&p);
    ORDO_CK_OK(ordo__merge_plan_compute3(m, ORDO_MERGE_WFBP, 0, 2e-4, 4e-10, 1e-10, 3.2e-9, 1e-3, 0,
                                        &lay, &p));
    ck_assert_msg(p->predicted_iter_s > bytes_only + 1e-3, "%g vs %g", p->predicted_iter_s,
                  bytes_only);
    ORDO_CK_OK(ordo__merge_plan_to_json(p, m, &json));
    ck_assert_msg(strstr(json, "\"pull\": 3.2e-09, \"pull_msg\": 0.001") != NULL, "got:\n%s", json);
    ORDO_CK_OK(ordo__merge_plan_load_string(json, "plan.json", m, &q));
    ck_assert(q->pull == p->pull && q->pull_msg == p->pull_msg);
    ck_assert(q->predicted_iter_s == p->predicted_iter_s);
    ordo__merge_plan_destroy(&q);
    free(json);
    ordo__merge_plan_destroy(&p);
    ORDO_CK_OK(ordo__merge_plan_compute(m, ORDO_MERGE_WFBP, 0, 2e-4, 4e-10, 0, 0, &lay, &p));
    ORDO_CK_OK(ordo__merge_plan_compute(m, ORDO_MERGE_WFBP, 0, 2e-4, 4e-10, 0, 0, NULL, &q));
    /* fc at 70 us (one message), then conv1, ready at 180 us but behind fc's message, as one
     * or as two messages of a = 200 us */
    close_to(q->predicted_iter_s, 70e-6 + 2 * 200e-6 + 4e-10 * 6060);
    close_to(p->predicted_iter_s, 70e-6 + 3 * 200e-6 + 4e-10 * 6060);
    ordo__merge_plan_destroy(&q);
    ordo__merge_plan_destroy(&p);
    /* a layout is all three keys or none, in the ranges a run accepts */
    static const struct {
        const char *json, *want;
    } bad[] = {
        {"{\"format\": \"ordo-merge/1\", \"model\": \"toy\", \"servers\": 2, \"groups\": "
         "[[\"fc.w\", \"fc.b\", \"conv1.w\", \"conv1.b\"]]}",
         "plan.json: $: servers, partition_bytes and segment_bytes go together"},
        {"{\"format\": \"ordo-merge/1\", \"model\": \"toy\", \"servers\": 0, "
         "\"partition_bytes\": 4096, \"segment_bytes\": 0, \"groups\": []}",
         "plan.json: $.servers: 0 is not in [1, 1024]"},
        {"{\"format\": \"ordo-merge/1\", \"model\": \"toy\", \"servers\": 1, "
         "\"partition_bytes\": \"4MiB\", \"segment_bytes\": 0, \"groups\": []}",
         "plan.json: $.partition_bytes: not an integer"},
        {"{\"format\": \"ordo-merge/1\", \"model\": \"toy\", \"servers\": 1, "
         "\"partition_bytes\": 4096, \"segment_bytes\": 7, \"groups\": []}",
         "plan.json: $: layout: segment_bytes 7 is neither 0 nor at least 1024"},
        {"{\"format\": \"ordo-merge/1\", \"model\": \"toy\", \"margin\": -1, \"groups\": []}",
         "plan.json: $.margin: -1 must be finite and >= 0"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ORDO_CK_ERR(ordo__merge_plan_load_string(bad[i].json, "plan.json", m, &q), ORDO_ERR_FORMAT);
        ck_assert_ptr_null(q);
        ck_assert_msg(strstr(ordo__error_detail(), bad[i].want) != NULL,
                      "case %zu: detail '%s' lacks '%s'", i, ordo__error_detail(), bad[i].want);
    }
    ordo__model_destroy(&m);
}
END_TEST

START_TEST(plan_load_rejects_bad_plans)
{
    static const struct {
        const char *json, *want;
    } cases[] = {
        {"{\"format\": ", "plan.json:1:"},
        {"[]", "plan.json: $: must be an object"},
        {"{\"format\": \"ordo-merge/2\", \"model\": \"toy\", \"groups\": []}",
         "plan.json: $.format: must be \"ordo-merge/1\""},
        {"{\"model\": \"toy\", \"groups\": []}", "plan.json: $.format: must be \"ordo-merge/1\""},
        {"{\"format\": \"ordo-merge/1\", \"model\": \"toy\", \"group\": []}",
         "plan.json: $.group: unknown key"},
        {"{\"format\": \"ordo-merge/1\", \"model\": \"other\", \"groups\": []}",
         "plan.json: $.model: 'other' does not match the model 'toy'"},
        {"{\"format\": \"ordo-merge/1\", \"model\": \"toy\", \"a\": -1, \"groups\": []}",
         "plan.json: $.a: -1 must be finite and >= 0"},
        {"{\"format\": \"ordo-merge/1\", \"model\": \"toy\", \"b\": \"x\", \"groups\": []}",
         "plan.json: $.b: not a number"},
        {"{\"format\": \"ordo-merge/1\", \"model\": \"toy\"}", "plan.json: $.groups: missing"},
        {"{\"format\": \"ordo-merge/1\", \"model\": \"toy\", \"groups\": [\"fc.w\"]}",
         "plan.json: $.groups[0]: not an array"},
        {"{\"format\": \"ordo-merge/1\", \"model\": \"toy\", \"groups\": [[\"fc.w\", \"fc.b\"], "
         "[]]}",
         "plan.json: $.groups[1]: empty group"},
        {"{\"format\": \"ordo-merge/1\", \"model\": \"toy\", \"groups\": [[\"fc.w\", 3]]}",
         "plan.json: $.groups[0][1]: not a string"},
        {"{\"format\": \"ordo-merge/1\", \"model\": \"toy\", \"groups\": [[\"fc.w\", \"nope\"]]}",
         "plan.json: $.groups[0][1]: unknown parameter 'nope'"},
        {"{\"format\": \"ordo-merge/1\", \"model\": \"toy\", \"groups\": [[\"fc.w\", \"fc.b\"], "
         "[\"fc.w\"]]}",
         "plan.json: $.groups[1][0]: parameter 'fc.w' is listed again (first at $.groups[0][0])"},
        {"{\"format\": \"ordo-merge/1\", \"model\": \"toy\", \"groups\": [[\"fc.w\", \"fc.b\", "
         "\"conv1.w\"]]}",
         "plan.json: $.groups: parameter 'conv1.b' is missing"},
        {"{\"format\": \"ordo-merge/1\", \"model\": \"toy\", \"groups\": [[\"conv1.w\", "
         "\"conv1.b\"], [\"fc.w\", \"fc.b\"]]}",
         "plan.json: $.groups[1][0]: 'fc.w' (op 'fc', layer 0 in backward order) comes after "
         "'conv1.b' (op 'conv1', layer 1): groups must follow backward order"},
        {"{\"format\": \"ordo-merge/1\", \"format\": \"ordo-merge/1\"}", "plan.json:1:"},
    };
    ordo__model_t *m = toy_model();
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ordo__merge_plan_t *p = NULL;
        int rc = ordo__merge_plan_load_string(cases[i].json, "plan.json", m, &p);
        ck_assert_msg(rc == ORDO_ERR_FORMAT, "case %zu: rc %d", i, rc);
        ck_assert_ptr_null(p);
        ck_assert_msg(strstr(ordo__error_detail(), cases[i].want) != NULL,
                      "case %zu: detail '%s' lacks '%s'", i, ordo__error_detail(), cases[i].want);
    }
    ordo__merge_plan_t *p = NULL;
    ORDO_CK_ERR(ordo__merge_plan_load_file("/nonexistent/plan.json", m, &p), ORDO_ERR_NOTFOUND);
    expect_detail("/nonexistent/plan.json: cannot open");
    ordo__model_destroy(&m);
}
END_TEST

START_TEST(plan_load_file_reads_what_was_written)
{
    ordo__model_t *m = toy_model();
    ordo__merge_plan_t *p = NULL, *q = NULL;
    ORDO_CK_OK(ordo__merge_plan_compute(m, ORDO_MERGE_OPTIMAL, 0, 1e-5, 1e-9, 0, 0, NULL, &p));
    char *json = NULL;
    ORDO_CK_OK(ordo__merge_plan_to_json(p, m, &json));
    char path[] = "/tmp/ordo-merge-test-XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, json, strlen(json)), (ssize_t)strlen(json));
    close(fd);
    ORDO_CK_OK(ordo__merge_plan_load_file(path, m, &q));
    ck_assert_int_eq(q->n_groups, p->n_groups);
    close_to(q->predicted_iter_s, p->predicted_iter_s);
    /* a wrong plan read from a file names the file */
    fd = open(path, O_WRONLY | O_TRUNC);
    ck_assert_int_ge(fd, 0);
    const char *bad = "{\"format\": \"ordo-merge/1\", \"model\": \"toy\", \"groups\": [[]]}";
    ck_assert_int_eq(write(fd, bad, strlen(bad)), (ssize_t)strlen(bad));
    close(fd);
    ordo__merge_plan_t *r = NULL;
    ORDO_CK_ERR(ordo__merge_plan_load_file(path, m, &r), ORDO_ERR_FORMAT);
    ck_assert_msg(strncmp(ordo__error_detail(), path, strlen(path)) == 0, "%s", ordo__error_detail());
    expect_detail(": $.groups[0]: empty group");
    unlink(path);
    free(json);
    ordo__merge_plan_destroy(&q);
    ordo__merge_plan_destroy(&p);
    ordo__model_destroy(&m);
}
END_TEST

/* Every committed profile: optimal <= mgwfbp <= min(wfbp, all) and the plans read back. */
START_TEST(profiles_keep_the_order_of_algorithms)
{
    static const char *names[] = {"resnet50",  "densenet121", "googlenet", "inception_v2",
                                  "smallmany", "vgg16",       "alexnet"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/conf/models/%s.json", ordo_ck_source_dir(), names[i]);
        ck_assert_msg(access(path, R_OK) == 0, "%s: the committed profile is missing", path);
        ordo__model_t *m = NULL;
        ORDO_CK_OK(ordo__model_load_file(path, &m));
        double t[4];
        static const ordo__merge_algo_t algos[4] = {ORDO_MERGE_WFBP, ORDO_MERGE_ALL,
                                                   ORDO_MERGE_MGWFBP, ORDO_MERGE_OPTIMAL};
        for (int k = 0; k < 4; k++) {
            ordo__merge_plan_t *p = NULL, *q = NULL;
            ORDO_CK_OK(ordo__merge_plan_compute(m, algos[k], 0, 2e-4, 4e-10, 0, 0, NULL, &p));
            t[k] = p->predicted_iter_s;
            char *json = NULL;
            ORDO_CK_OK(ordo__merge_plan_to_json(p, m, &json));
            ORDO_CK_OK(ordo__merge_plan_load_string(json, path, m, &q));
            ck_assert_int_eq(q->n_groups, p->n_groups);
            close_to(q->predicted_iter_s, p->predicted_iter_s);
            free(json);
            ordo__merge_plan_destroy(&q);
            ordo__merge_plan_destroy(&p);
        }
        ck_assert_msg(t[3] <= t[2] * (1 + 1e-12), "%s: optimal %g > mgwfbp %g", names[i], t[3],
                      t[2]);
        ck_assert_msg(t[2] <= fmin(t[0], t[1]) * (1 + 1e-12), "%s: mgwfbp %g > min(%g, %g)",
                      names[i], t[2], t[0], t[1]);
        ordo__model_destroy(&m);
    }
}
END_TEST

/* With early pulls on 2 servers (a pull stage per server) the experiment's large models at its
 * 1 Gbit/s and 10 Gbit/s calibrations: optimal's predicted time is no more than any other
 * algorithm's under the same model, also where its program passes the budget and falls back
 * (densenet121 at 10 Gbit/s: compute bounds the iteration and many groupings tie). */
START_TEST(early_pull_plans_keep_optimal_first)
{
    static const char *names[] = {"densenet121", "googlenet"};
    static const struct {
        double a, b, c, p;
    } costs[] = {{19.58e-6, 8e-9, 1.141e-9, 32e-9}, {36.68e-6, 1.01e-9, 0.6774e-9, 3.2e-9}};
    static const ordo__merge_algo_t algos[5] = {ORDO_MERGE_WFBP, ORDO_MERGE_ALL, ORDO_MERGE_MGWFBP,
                                               ORDO_MERGE_BYTES, ORDO_MERGE_OPTIMAL};
    const ordo__merge_layout_t layout = {2, 4 << 20, 0};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char path[1024];
        snprintf(path, sizeof path, "%s/conf/models/%s.json", ordo_ck_source_dir(), names[i]);
        ordo__model_t *m = NULL;
        ORDO_CK_OK(ordo__model_load_file(path, &m));
        for (size_t k = 0; k < sizeof costs / sizeof costs[0]; k++) {
            double t[5];
            for (int q = 0; q < 5; q++) {
                ordo__merge_plan_t *p = NULL;
                ORDO_CK_OK(ordo__merge_plan_compute3(m, algos[q], 25 << 20, costs[k].a, costs[k].b,
                                                    costs[k].c, costs[k].p, 0, 0.5, &layout, &p));
                t[q] = p->predicted_iter_s;
                ordo__merge_plan_destroy(&p);
            }
            for (int q = 0; q < 4; q++)
                ck_assert_msg(t[4] <= t[q] * (1 + 1e-12), "%s, costs %zu: optimal %.9g > %s %.9g",
                              names[i], k, t[4], ordo__merge_algo_name(algos[q]), t[q]);
        }
        ordo__model_destroy(&m);
    }
}
END_TEST

/* ---------------------------------------------------------------- command line */

/* run_cli runs ordo__merge_cli with stdout and stderr captured into out and err. */
static int run_cli(int argc, const char *const *argv, char *out, size_t outsz, char *err,
                   size_t errsz)
{
    char po[] = "/tmp/ordo-merge-out-XXXXXX", pe[] = "/tmp/ordo-merge-err-XXXXXX";
    int fo = mkstemp(po), fe = mkstemp(pe);
    ck_assert(fo >= 0 && fe >= 0);
    fflush(stdout);
    fflush(stderr);
    int so = dup(1), se = dup(2);
    dup2(fo, 1);
    dup2(fe, 2);
    int rc = ordo__merge_cli(argc, (char **)argv);
    fflush(stdout);
    fflush(stderr);
    dup2(so, 1);
    dup2(se, 2);
    close(so);
    close(se);
    ssize_t n = pread(fo, out, outsz - 1, 0);
    out[n > 0 ? n : 0] = '\0';
    n = pread(fe, err, errsz - 1, 0);
    err[n > 0 ? n : 0] = '\0';
    close(fo);
    close(fe);
    unlink(po);
    unlink(pe);
    return rc;
}

static const char toy_json[] =
    "{\"format\": \"ordo-model/1\", \"name\": \"toy\", \"batch\": 8, \"dtype\": \"float32\",\n"
    " \"params\": [{\"name\": \"conv1.w\", \"shape\": [1000]}, {\"name\": \"conv1.b\", "
    "\"shape\": [10]},\n"
    "  {\"name\": \"fc.w\", \"shape\": [500]}, {\"name\": \"fc.b\", \"shape\": [5]}],\n"
    " \"ops\": [{\"name\": \"input\", \"inputs\": [], \"params\": [], \"fwd_us\": 1, "
    "\"bwd_us\": 7},\n"
    "  {\"name\": \"conv1\", \"inputs\": [\"input\"], \"params\": [\"conv1.w\", \"conv1.b\"], "
    "\"fwd_us\": 1, \"bwd_us\": 100},\n"
    "  {\"name\": \"relu\", \"inputs\": [\"conv1\"], \"params\": [], \"fwd_us\": 1, \"bwd_us\": "
    "10},\n"
    "  {\"name\": \"fc\", \"inputs\": [\"relu\"], \"params\": [\"fc.w\", \"fc.b\"], \"fwd_us\": "
    "1, \"bwd_us\": 50},\n"
    "  {\"name\": \"loss\", \"inputs\": [\"fc\"], \"params\": [], \"fwd_us\": 1, \"bwd_us\": "
    "20}]}\n";

START_TEST(cli_writes_plans_and_rejects_misuse)
{
    char path[] = "/tmp/ordo-merge-model-XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, toy_json, strlen(toy_json)), (ssize_t)strlen(toy_json));
    close(fd);
    static char out[65536], err[4096];

    const char *ok[] = {"merge", "--algo", "mgwfbp", "--a", "2e-4", "--b=1e-8", path};
    ck_assert_int_eq(run_cli(7, ok, out, sizeof out, err, sizeof err), 0);
    ck_assert_str_eq(err, "");
    ordo__model_t *m = NULL;
    ORDO_CK_OK(ordo__model_load_file(path, &m));
    ordo__merge_plan_t *p = NULL;
    ORDO_CK_OK(ordo__merge_plan_load_string(out, "stdout", m, &p));
    ck_assert_int_eq(p->n_groups, 1);
    close_to(p->predicted_iter_s, 440.6e-6);
    ordo__merge_plan_destroy(&p);
    ck_assert_ptr_nonnull(strstr(out, "\"predicted_iter_s\": 0.0004406"));

    const char *cmp[] = {"merge", "--compare", "--a", "2e-4", "--b", "1e-8", path};
    ck_assert_int_eq(run_cli(7, cmp, out, sizeof out, err, sizeof err), 0);
    ck_assert_ptr_nonnull(strstr(out, "wfbp"));
    ck_assert_ptr_nonnull(strstr(out, "optimal"));

    /* the run's layout: wfbp's conv1 goes as two messages on two servers */
    const char *lay[] = {"merge",       "--compare", "--algo",    "wfbp",      "--a",
                         "2e-4",        "--b",       "1e-8",      "--servers", "2",
                         "--partition", "1MiB",      "--segment", "0",         path};
    ck_assert_int_eq(run_cli(15, lay, out, sizeof out, err, sizeof err), 0);
    ck_assert_msg(strstr(out, "algo              groups messages") != NULL, "%s", out);
    ck_assert_msg(strstr(out, "wfbp                   2        3") != NULL, "%s", out);
    const char *lay2[] = {"merge",     "--a", "2e-4",     "--b", "1e-8",
                          "--servers", "2",   "--margin", "1",   path};
    ck_assert_int_eq(run_cli(10, lay2, out, sizeof out, err, sizeof err), 0);
    ck_assert_msg(strstr(out, "\"margin\": 1,\n \"servers\": 2, \"partition_bytes\": 4194304, "
                              "\"segment_bytes\": 1048576") != NULL,
                  "%s", out);

    /* measured op times (ordo-oracle/1): a conv1 backward of 1 ms makes overlapping fc's
     * message worth its start-up: wfbp's two groups, fc's message 70 -> 290.2 us, conv1's
     * ready at 70 + 10 + 1000 and sent by 1320.4 us (one group would end at 1340.6) */
    char opath[] = "/tmp/ordo-merge-oracle-XXXXXX";
    fd = mkstemp(opath);
    ck_assert_int_ge(fd, 0);
    const char *oracle = "{\"format\": \"ordo-oracle/1\", \"model\": \"toy\", \"ops\": "
                         "[{\"name\": \"conv1\", \"bwd_us\": 1000}]}";
    ck_assert_int_eq(write(fd, oracle, strlen(oracle)), (ssize_t)strlen(oracle));
    close(fd);
    const char *orc[] = {"merge", "--a", "2e-4", "--b", "1e-8", "--oracle", opath, path};
    ck_assert_int_eq(run_cli(8, orc, out, sizeof out, err, sizeof err), 0);
    ORDO_CK_OK(ordo__merge_plan_load_string(out, "stdout", m, &p));
    ck_assert_int_eq(p->n_groups, 2);
    ordo__merge_plan_destroy(&p);
    /* the file's prediction is the oracle's (loading re-times it with the model's own) */
    ck_assert_msg(strstr(out, "\"predicted_iter_s\": 0.0013204") != NULL, "%s", out);
    const char *orc_missing[] = {"merge", "--a", "0", "--b", "0", "--oracle", "/nonexistent/o.json",
                                 path};
    ck_assert_int_eq(run_cli(8, orc_missing, out, sizeof out, err, sizeof err), 1);
    ck_assert_msg(strstr(err, "/nonexistent/o.json") != NULL, "%s", err);
    fd = open(opath, O_WRONLY | O_TRUNC);
    ck_assert_int_ge(fd, 0);
    const char *other = "{\"format\": \"ordo-oracle/1\", \"model\": \"resnet50\", \"ops\": []}";
    ck_assert_int_eq(write(fd, other, strlen(other)), (ssize_t)strlen(other));
    close(fd);
    ck_assert_int_eq(run_cli(8, orc, out, sizeof out, err, sizeof err), 1);
    ck_assert_msg(strstr(err, "$.model: 'resnet50' does not match the model 'toy'") != NULL, "%s",
                  err);
    unlink(opath);

    const char *help[] = {"merge", "--help"};
    ck_assert_int_eq(run_cli(2, help, out, sizeof out, err, sizeof err), 0);
    ck_assert_ptr_nonnull(strstr(out, "usage: ordo-plan merge"));

    static const struct {
        int argc;
        const char *argv[8];
        const char *want;
    } bad[] = {
        {1, {"merge"}, "ordo-plan merge: no MODEL.json given"},
        {3, {"merge", "x.json", "--a"}, "ordo-plan merge: --a needs a value"},
        {4, {"merge", "--a", "1e-4", "x.json"}, "--a and --b are required"},
        {6, {"merge", "--a", "-1", "--b", "0", "x.json"}, "--a '-1' is not a number >= 0"},
        {8,
         {"merge", "--algo", "fast", "--a", "0", "--b", "0", "x.json"},
         "--algo 'fast' is not one of optimal|mgwfbp|wfbp|all|bytes:N"},
        {3, {"merge", "--frobnicate", "x.json"}, "unknown option '--frobnicate'"},
        {7, {"merge", "--a", "0", "--b", "0", "x.json", "y.json"}, "one model file only"},
        {7,
         {"merge", "--a", "0", "--b", "0", "--servers", "0", "x.json"},
         "--servers '0' is not a number of servers in [1, 1024]"},
        {7,
         {"merge", "--a", "0", "--b", "0", "--partition", "4 MiB please", "x.json"},
         "--partition '4 MiB please' is not a size in bytes"},
        {7,
         {"merge", "--a", "0", "--b", "0", "--margin", "-0.5", "x.json"},
         "--margin '-0.5' is not a number >= 0"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ck_assert_int_eq(run_cli(bad[i].argc, bad[i].argv, out, sizeof out, err, sizeof err), 2);
        ck_assert_msg(strstr(err, bad[i].want) != NULL, "case %zu: '%s' lacks '%s'", i, err,
                      bad[i].want);
        ck_assert_msg(strchr(err, '\n') == err + strlen(err) - 1, "case %zu: not one line: %s", i,
                      err);
    }
    const char *missing[] = {"merge", "--a", "0", "--b", "0", "/nonexistent/m.json"};
    ck_assert_int_eq(run_cli(6, missing, out, sizeof out, err, sizeof err), 1);
    ck_assert_ptr_nonnull(strstr(err, "/nonexistent/m.json"));
    ordo__model_destroy(&m);
    unlink(path);
}
END_TEST

Suite *merge_plan_suite(void);
Suite *merge_plan_suite(void)
{
    Suite *s = suite_create("merge_plan");
    TCase *tc = tcase_create("plans");
    tcase_add_test(tc, plan_compute_on_toy);
    tcase_add_test(tc, algo_names_parse);
    tcase_add_test(tc, occasional_params_travel_alone);
    tcase_add_test(tc, plan_json_round_trip);
    tcase_add_test(tc, plan_json_keeps_layout_and_margin);
    tcase_add_test(tc, plan_load_rejects_bad_plans);
    tcase_add_test(tc, plan_load_file_reads_what_was_written);
    tcase_add_test(tc, profiles_keep_the_order_of_algorithms);
    suite_add_tcase(s, tc);
    tc = tcase_create("early_pulls");
    tcase_set_timeout(tc, 240); /* seconds of planning each (more under the sanitizers) */
    tcase_add_test(tc, early_pull_plans_keep_optimal_first);
    suite_add_tcase(s, tc);
    tc = tcase_create("cli");
    tcase_add_test(tc, cli_writes_plans_and_rejects_misuse);
    suite_add_tcase(s, tc);
    return s;
}

ORDO_CK_MAIN(merge_plan_suite)
