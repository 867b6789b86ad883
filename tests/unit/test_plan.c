/* Tests of core/plan (the scheduler's plan read once into typed fields): each member's
 * values as the nodes read them, the members a plan may leave out, and the error that names
 * the member and why for each malformed one. */
#include "core/plan.h"
#include "ordo_check.h"

#include <stdlib.h>
#include <string.h>

#define NK 5

static int parse(const char *text, ordo__plan_t **p)
{
    return ordo__plan_parse(text, text ? strlen(text) : 0, NK, 2, p);
}

/* the error detail of a plan that must be refused */
static const char *refused(const char *text)
{
    ordo__plan_t *p = NULL;
    ORDO_CK_ERR(parse(text, &p), ORDO_ERR_PROTO);
    ck_assert_ptr_null(p);
    return ordo__error_detail();
}

START_TEST(an_empty_plan_has_no_members)
{
    /* null is how the scheduler writes "none" */
    const char *texts[] = {NULL, "", "{}",
                           "{\"policy\": \"fifo\", \"merge\": null, \"priorities\": null}"};
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        ordo__plan_t *p = NULL;
        ORDO_CK_OK(parse(texts[i], &p));
        ck_assert_int_eq(p->n_keys, NK);
        ck_assert_ptr_null(p->priorities);
        ck_assert_ptr_null(p->params);
        ck_assert(!p->has_merge && !p->has_calibrate && !p->has_intra && !p->has_sparse);
        ck_assert_int_eq(p->credit_bytes, -1);
        ck_assert_ptr_null(p->compression);
        ck_assert_ptr_null(p->updates);
        ordo__plan_destroy(&p);
        ck_assert_ptr_null(p);
    }
    ordo__plan_destroy(&(ordo__plan_t *){NULL}); /* NULL-safe */
}
END_TEST

START_TEST(every_member_is_read)
{
    const char *text =
        "{\"policy\": \"tao\", \"priorities\": [3, 0, 1, 0, 2],"
        " \"params\": [\"a\", \"b\", \"c\", \"d\", \"e\"],"
        " \"merge\": {\"algo\": \"mgwfbp\", \"groups\": [[4, 3], [2, 1], [0]],"
        "             \"max_message_bytes\": 4096},"
        " \"intra\": {\"backend\": \"shm\", \"local_size\": 2, \"groups\": 1, \"run\": \"r-1\","
        "             \"overlap\": false},"
        " \"step\": {\"slice_bytes\": 1024, \"credit_bytes\": 65536},"
        " \"compression\": {\"policy\": \"auto\", \"keys\": [\"bf16\", \"none\", \"none\","
        "                   \"fp16\", \"none\"]},"
        " \"updates\": [null, {\"kind\": \"average\"},"
        "               {\"kind\": \"sgd\", \"lr\": 0.5, \"momentum\": 0.25,"
        "                \"weight_decay\": 0.125}, null, null]}";
    ordo__plan_t *p = NULL;
    ORDO_CK_OK(parse(text, &p));
    static const int prio[NK] = {3, 0, 1, 0, 2};
    for (int i = 0; i < NK; i++)
        ck_assert_int_eq(p->priorities[i], prio[i]);
    ck_assert_str_eq(p->params[4], "e");
    ck_assert(p->has_merge);
    ck_assert_int_eq(p->merge.n_groups, 3);
    static const int start[] = {0, 2, 4, 5}, order[] = {4, 3, 2, 1, 0};
    for (int g = 0; g <= 3; g++)
        ck_assert_int_eq(p->merge.group_start[g], start[g]);
    for (int i = 0; i < NK; i++)
        ck_assert_int_eq(p->merge.order[i], order[i]);
    ck_assert_int_eq(p->merge.max_message_bytes, 4096);
    ck_assert(p->has_intra);
    ck_assert_str_eq(p->intra.backend, "shm");
    ck_assert_int_eq(p->intra.local_size, 2);
    ck_assert_str_eq(p->intra.run, "r-1");
    ck_assert(!p->intra.overlap);
    ck_assert_int_eq(p->credit_bytes, 65536);
    ck_assert_str_eq(p->compression[0], "bf16");
    ck_assert_str_eq(p->compression[3], "fp16");
    ck_assert_int_eq(p->updates[0].kind, ORDO__PLAN_UPDATE_CONF);
    ck_assert_int_eq(p->updates[1].kind, ORDO__PLAN_UPDATE_AVERAGE);
    ck_assert_int_eq(p->updates[2].kind, ORDO__PLAN_UPDATE_SGD);
    ck_assert_float_eq(p->updates[2].lr, 0.5f);
    ck_assert_float_eq(p->updates[2].momentum, 0.25f);
    ck_assert_float_eq(p->updates[2].weight_decay, 0.125f);
    ordo__plan_destroy(&p);
}
END_TEST

START_TEST(calibration_then_its_merge_groups)
{
    ordo__plan_t *p = NULL, *msg = NULL;
    ORDO_CK_OK(parse("{\"merge_calibrate\": {\"reps\": 3, \"max_bytes\": 1048576}}", &p));
    ck_assert(p->has_calibrate && !p->has_merge);
    ck_assert_int_eq(p->calibrate_reps, 3);
    ck_assert_int_eq(p->calibrate_max_bytes, 1048576);
    /* the scheduler's PLAN after the calibration */
    ORDO_CK_OK(parse("{\"merge\": {\"groups\": [[4, 3, 2, 1, 0]]}}", &msg));
    ordo__plan_take_merge(p, msg);
    ck_assert(p->has_merge && !p->has_calibrate);
    ck_assert_int_eq(p->merge.n_groups, 1);
    ck_assert_int_eq(p->merge.max_message_bytes, 0); /* none said: no limit */
    ck_assert_int_eq(p->merge.order[0], 4);
    ck_assert(!msg->has_merge);
    ordo__plan_destroy(&msg);
    ordo__plan_destroy(&p);
}
END_TEST

START_TEST(intra_overlaps_unless_told)
{
    ordo__plan_t *p = NULL;
    ORDO_CK_OK(
        parse("{\"intra\": {\"backend\": \"auto\", \"local_size\": 1, \"run\": \"x\"}}", &p));
    ck_assert(p->intra.overlap);
    ck_assert_str_eq(p->intra.backend, "auto");
    ordo__plan_destroy(&p);
}
END_TEST

START_TEST(sparse_member_is_read_for_the_servers)
{
    ordo__plan_t *p = NULL;
    ORDO_CK_OK(parse("{\"sparse\": {\"n\": 100, \"k\": 10, \"density\": 0.1, \"nbins\": 8,"
                     " \"threshold_period\": 5, \"repartition_period\": 20,"
                     " \"bounds\": [0, 50, 100]}}",
                     &p));
    ck_assert(p->has_sparse);
    ck_assert_int_eq(p->sparse.n, 100);
    ck_assert_int_eq(p->sparse.k, 10);
    ck_assert_int_eq(p->sparse.servers, 2);
    ck_assert_int_eq(p->sparse.bounds[1], 50);
    ordo__plan_destroy(&p);
}
END_TEST

START_TEST(malformed_members_are_named)
{
    ck_assert_str_eq(refused("[1, 2]"), "plan: not a JSON object");
    ck_assert_ptr_nonnull(strstr(refused("{\"merge\": "), "plan: line 1: "));
    ck_assert_str_eq(refused("{\"priorities\": [0, 1]}"),
                     "plan: $.priorities: not an array of 5 entries");
    ck_assert_str_eq(refused("{\"priorities\": [0, 1, -2, 3, 4]}"),
                     "plan: $.priorities[2]: not an integer >= 0");
    ck_assert_str_eq(refused("{\"params\": [\"a\", \"b\", \"c\", 4, \"e\"]}"),
                     "plan: $.params[3]: not a string");
    ck_assert_str_eq(refused("{\"merge\": {\"groups\": []}}"),
                     "plan: $.merge.groups: not a non-empty array");
    ck_assert_str_eq(refused("{\"merge\":{\"groups\":[[4,3],[2,3],[0,1]]}}"),
                     "plan: $.merge.groups[1][1]: key 3 again");
    ck_assert_str_eq(refused("{\"merge\":{\"groups\":[[4,3],[2,1]]}}"),
                     "plan: $.merge.groups: 4 of 5 keys listed");
    ck_assert_str_eq(refused("{\"merge\":{\"groups\":[[4,3],[],[2,1,0]]}}"),
                     "plan: $.merge.groups[1]: not a non-empty array");
    ck_assert_str_eq(refused("{\"merge\":{\"groups\":[[4,3,\"2\",1,0]]}}"),
                     "plan: $.merge.groups[0][2]: not a key in [0, 5)");
    ck_assert_str_eq(refused("{\"merge\":{\"groups\":[[4,3,9,1,0]]}}"),
                     "plan: $.merge.groups[0][2]: not a key in [0, 5)");
    ck_assert_str_eq(refused("{\"merge\":{\"groups\":[[4,3,2,1,0]],\"max_message_bytes\":-1}}"),
                     "plan: $.merge.max_message_bytes: not an integer >= 0");
    ck_assert_str_eq(refused("{\"merge_calibrate\": {\"reps\": 0, \"max_bytes\": 10}}"),
                     "plan: $.merge_calibrate.reps: not an integer in [1, 2147483647]");
    ck_assert_str_eq(refused("{\"intra\": 2}"), "plan: $.intra: not an object");
    ck_assert_str_eq(
        refused("{\"intra\": {\"backend\": \"shm\", \"local_size\": 0, \"run\": \"x\"}}"),
        "plan: $.intra.local_size: not an integer in [1, 2147483647]");
    ck_assert_str_eq(refused("{\"intra\": {\"local_size\": 2, \"run\": \"x\"}}"),
                     "plan: $.intra.backend: not a string");
    ck_assert_str_eq(refused("{\"intra\": {\"backend\": \"shm\", \"local_size\": 2, \"run\": \"x\","
                             " \"overlap\": 1}}"),
                     "plan: $.intra.overlap: not true or false");
    ck_assert_str_eq(refused("{\"sparse\": 1}"), "plan: $.sparse: not an object");
    ck_assert_str_eq(refused("{\"sparse\": {\"n\": 100}}"),
                     "plan: sparse.k must be an integer in [1, 100]");
    ck_assert_str_eq(refused("{\"step\": {\"credit_bytes\": \"1 MiB\"}}"),
                     "plan: $.step.credit_bytes: not an integer >= 0");
    ck_assert_str_eq(refused("{\"compression\": {\"policy\": \"auto\"}}"),
                     "plan: $.compression.keys: missing");
    ck_assert_str_eq(refused("{\"compression\": {\"keys\": [\"bf16\"]}}"),
                     "plan: $.compression.keys: not an array of 5 entries");
    ck_assert_str_eq(refused("{\"updates\": [null, null, {\"kind\": \"adam\"}, null, null]}"),
                     "plan: $.updates[2].kind: not \"sgd\" or \"average\"");
}
END_TEST

static Suite *plan_suite(void)
{
    Suite *s = suite_create("plan");
    TCase *tc = tcase_create("members");
    tcase_add_test(tc, an_empty_plan_has_no_members);
    tcase_add_test(tc, every_member_is_read);
    tcase_add_test(tc, calibration_then_its_merge_groups);
    tcase_add_test(tc, intra_overlaps_unless_told);
    tcase_add_test(tc, sparse_member_is_read_for_the_servers);
    suite_add_tcase(s, tc);
    tc = tcase_create("errors");
    tcase_add_test(tc, malformed_members_are_named);
    suite_add_tcase(s, tc);
    return s;
}

ORDO_CK_MAIN(plan_suite)
