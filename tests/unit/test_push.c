/* Tests of client/push (the push-path interface): which path the scheduler's plan selects,
 * what each path says it can do, the table each [push] mode maps to, that every table fills every op (so a path file cannot
 * leave a call site with a NULL to jump to), and that an unknown mode is rejected. No cluster:
 * the paths' behaviour is tested by integration.merged and integration.sparse against dense. */
#include "client/push.h"
#include "core/plan.h"
#include "ordo_check.h"

#include <string.h>

static const char *path_of(const char *text)
{
    ordo__plan_t *plan = NULL;
    const ordo__push_ops_t *ops = NULL;
    ORDO_CK_OK(ordo__plan_parse(text, text ? strlen(text) : 0, 2, 1, &plan));
    ordo__push_ops_of_plan(plan, &ops);
    ordo__plan_destroy(&plan);
    return ops->name;
}

START_TEST(plan_selects_the_path)
{
    ck_assert_str_eq(path_of(NULL), "dense");
    ck_assert_str_eq(path_of("{}"), "dense");
    ck_assert_str_eq(path_of("{\"priorities\": [0, 1]}"), "dense");
    ck_assert_str_eq(path_of("{\"merge\": {\"groups\": [[0, 1]]}}"), "merged");
    ck_assert_str_eq(path_of("{\"merge\": null}"), "dense");
    ck_assert_str_eq(path_of("{\"sparse\": {\"n\": 10, \"k\": 1, \"density\": 0.1, "
                             "\"nbins\": 4, \"threshold_period\": 1, \"repartition_period\": 1, "
                             "\"bounds\": [0, 10]}}"),
                      "sparse");
    /* host groups are the plan's intra member, whatever the mode; the path pushes the mode's
     * way inside */
    ck_assert_str_eq(path_of("{\"intra\": {\"backend\": \"shm\", \"local_size\": 2, "
                             "\"run\": \"r\"}, \"merge\": {\"groups\": [[0, 1]]}}"),
                      "hier");
}
END_TEST

/* what callers ask the table instead of which path it is */
START_TEST(paths_say_what_they_can_do)
{
    ordo__plan_t *plan = NULL;
    const ordo__push_ops_t *ops = NULL;
    const char *groups = "{\"intra\": {\"backend\": \"shm\", \"local_size\": 2, \"run\": \"r\"}}";
    ORDO_CK_OK(ordo__plan_parse(groups, strlen(groups), 2, 1, &plan));
    ordo__push_ops_of_plan(plan, &ops);
    ck_assert(ops->whole_iterations && ops->kept_on_replan && ops->value_home);
    ordo__plan_destroy(&plan);
    for (int mode = ORDO_PUSH_DENSE; mode <= ORDO_PUSH_SPARSE; mode++) {
        ORDO_CK_OK(ordo__push_ops_for(mode, &ops));
        ck_assert_msg(!ops->whole_iterations && !ops->kept_on_replan, "path %s", ops->name);
    }
}
END_TEST

START_TEST(mode_maps_to_its_table)
{
    static const struct {
        int mode;
        const char *name;
        bool key_pushes;
    } want[] = {{ORDO_PUSH_DENSE, "dense", true},
                {ORDO_PUSH_MERGED, "merged", true},
                {ORDO_PUSH_SPARSE, "sparse", false}};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const ordo__push_ops_t *ops = NULL;
        ORDO_CK_OK(ordo__push_ops_for(want[i].mode, &ops));
        ck_assert_str_eq(ops->name, want[i].name);
        ck_assert_int_eq(ops->mode, want[i].mode);
        ck_assert_int_eq(ops->key_pushes, want[i].key_pushes);
    }
}
END_TEST

START_TEST(every_op_filled)
{
    for (int mode = ORDO_PUSH_DENSE; mode <= ORDO_PUSH_SPARSE; mode++) {
        const ordo__push_ops_t *o = NULL;
        ORDO_CK_OK(ordo__push_ops_for(mode, &o));
#define FILLED(op) ck_assert_msg(o->op != NULL, "path %s: %s is NULL", o->name, #op)
        FILLED(create);
        FILLED(destroy);
        FILLED(push);
        FILLED(pushpull);
        FILLED(send_part);
        FILLED(group_ack);
        FILLED(grad_home);
        FILLED(bind);
        FILLED(unbind);
        FILLED(init);
        FILLED(pulls);
        FILLED(grad_ready);
        FILLED(grads_done);
        FILLED(on_event);
        FILLED(have);
        FILLED(stats);
#undef FILLED
    }
}
END_TEST

START_TEST(bad_mode_rejected)
{
    const ordo__push_ops_t *ops = NULL;
    ORDO_CK_ERR(ordo__push_ops_for(-1, &ops), ORDO_ERR_INVAL);
    ck_assert_ptr_null(ops);
    ck_assert_ptr_nonnull(strstr(ordo__error_detail(), "push.mode -1"));
    ORDO_CK_ERR(ordo__push_ops_for(ORDO_PUSH_SPARSE + 1, &ops), ORDO_ERR_INVAL);
    ordo__push_t *p = NULL;
    ordo__push_destroy(&p); /* NULL-safe */
}
END_TEST

/* the dense and sparse paths need nothing from the worker to be made and freed */
START_TEST(new_and_destroy)
{
    for (int mode = ORDO_PUSH_DENSE; mode <= ORDO_PUSH_SPARSE; mode += 2) {
        ordo__push_t *p = NULL;
        const ordo__push_ops_t *ops = NULL;
        ORDO_CK_OK(ordo__push_ops_for(mode, &ops));
        ORDO_CK_OK(ordo__push_new(ops, NULL, &p));
        ck_assert_int_eq(p->ops->mode, mode);
        ck_assert_ptr_null(p->ops->grad_home(p, 0));
        ordo__push_destroy(&p);
        ck_assert_ptr_null(p);
    }
}
END_TEST

static Suite *push_suite(void)
{
    Suite *s = suite_create("push");
    TCase *tc = tcase_create("plan");
    tcase_add_test(tc, plan_selects_the_path);
    tcase_add_test(tc, paths_say_what_they_can_do);
    suite_add_tcase(s, tc);
    tc = tcase_create("tables");
    tcase_add_test(tc, mode_maps_to_its_table);
    tcase_add_test(tc, every_op_filled);
    suite_add_tcase(s, tc);
    tc = tcase_create("reject");
    tcase_add_test(tc, bad_mode_rejected);
    suite_add_tcase(s, tc);
    tc = tcase_create("lifetime");
    tcase_add_test(tc, new_and_destroy);
    suite_add_tcase(s, tc);
    return s;
}

ORDO_CK_MAIN(push_suite)
