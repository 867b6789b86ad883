/* Tests of client/push (the push-path interface): which path the scheduler's plan selects,
 * the table each [push] mode maps to, that every table fills every op (so a path file cannot
 * leave a call site with a NULL to jump to), and that an unknown mode is rejected. No cluster:
 * the paths' behaviour is tested by integration.merged and integration.sparse against dense. */
#include "client/push.h"
#include "ordo_check.h"

#include <string.h>

static int mode_of(const char *plan)
{
    int mode = -1;
    ORDO_CK_OK(ordo__push_mode_of_plan(plan, &mode));
    return mode;
}

START_TEST(plan_selects_the_path)
{
    ck_assert_int_eq(mode_of(NULL), ORDO_PUSH_DENSE);
    ck_assert_int_eq(mode_of("{}"), ORDO_PUSH_DENSE);
    ck_assert_int_eq(mode_of("{\"order\": [0, 1]}"), ORDO_PUSH_DENSE);
    ck_assert_int_eq(mode_of("{\"merge\": {\"groups\": [[0, 1]]}}"), ORDO_PUSH_MERGED);
    ck_assert_int_eq(mode_of("{\"merge\": null}"), ORDO_PUSH_DENSE);
    ck_assert_int_eq(mode_of("{\"sparse\": {\"n\": 10, \"k\": 1}}"), ORDO_PUSH_SPARSE);
    ck_assert_int_eq(mode_of("{\"sparse\": 1}"), ORDO_PUSH_DENSE);
    /* as the paths read it: a plan that does not parse asks for nothing special */
    ck_assert_int_eq(mode_of("not json"), ORDO_PUSH_DENSE);
    ck_assert_int_eq(mode_of("[1, 2]"), ORDO_PUSH_DENSE);
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
    ck_assert_ptr_nonnull(strstr(ordo_error_detail(), "push.mode -1"));
    ORDO_CK_ERR(ordo__push_ops_for(ORDO__PUSH_HIER + 1, &ops), ORDO_ERR_INVAL);
    ordo__push_t *p = NULL;
    ORDO_CK_ERR(ordo__push_new(42, NULL, &p), ORDO_ERR_INVAL);
    ck_assert_ptr_null(p);
    ordo__push_destroy(&p); /* NULL-safe */
}
END_TEST

/* the dense and sparse paths need nothing from the worker to be made and freed */
START_TEST(new_and_destroy)
{
    for (int mode = ORDO_PUSH_DENSE; mode <= ORDO_PUSH_SPARSE; mode += 2) {
        ordo__push_t *p = NULL;
        ORDO_CK_OK(ordo__push_new(mode, NULL, &p));
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
