/* merge_fixtures: helpers shared by the tests of scheduler/merge (test_merge.c,
 * test_merge_plan.c): error-detail and closeness checks, and a toy model. */
#ifndef ORDO_MERGE_FIXTURES_H
#define ORDO_MERGE_FIXTURES_H

#include "planner/merge.h"
#include "ordo_check.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static inline void expect_detail(const char *want)
{
    ck_assert_msg(strstr(ordo__error_detail(), want) != NULL, "detail '%s' lacks '%s'",
                  ordo__error_detail(), want);
}

static inline void close_to(double got, double want)
{
    ck_assert_msg(fabs(got - want) <= 1e-12 * (fabs(want) + 1e-9), "got %.17g, want %.17g", got,
                  want);
}

/* add_param_op appends op `name` owning params name.w (numel w) and, when bias > 0, name.b. */
static inline void add_param_op(ordo__model_t *m, const char *name, const char *input, int64_t w,
                                int64_t bias, double bwd_us)
{
    char pw[64], pb[64];
    snprintf(pw, sizeof pw, "%s.w", name);
    snprintf(pb, sizeof pb, "%s.b", name);
    ck_assert_int_ge(ordo__model_add_param(m, pw, 1, &w), 0);
    if (bias > 0) ck_assert_int_ge(ordo__model_add_param(m, pb, 1, &bias), 0);
    const char *ps[2] = {pw, pb};
    ck_assert_int_ge(
        ordo__model_add_op(m, name, input ? 1 : 0, &input, bias > 0 ? 2 : 1, ps, 1.0, bwd_us), 0);
}

static inline void add_plain_op(ordo__model_t *m, const char *name, const char *input, double bwd_us)
{
    ck_assert_int_ge(ordo__model_add_op(m, name, input ? 1 : 0, &input, 0, NULL, 1.0, bwd_us), 0);
}

/* toy: input(7) conv1{w,b}(100) relu(10) fc{w,b}(50) loss(20), bwd_us in brackets. */
static inline ordo__model_t *toy_model(void)
{
    ordo__model_t *m = ordo__model_new("toy", 8, NULL);
    ck_assert_ptr_nonnull(m);
    add_plain_op(m, "input", NULL, 7);
    add_param_op(m, "conv1", "input", 1000, 10, 100);
    add_plain_op(m, "relu", "conv1", 10);
    add_param_op(m, "fc", "relu", 500, 5, 50);
    add_plain_op(m, "loss", "fc", 20);
    ORDO_CK_OK(ordo__model_check(m));
    return m;
}

#endif
