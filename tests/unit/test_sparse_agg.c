/* Tests of server/sparse_agg: summing pushes, validation, selection, SGD, pull answers, and
 * the end-to-end residual accounting with worker/sparsify. */
#include "server/sparse_agg.h"
#include "ordo_check.h"

#include <math.h>
#include <string.h>

START_TEST(pushes_are_validated)
{
    ordo_sparse_agg_t *agg;
    ORDO_CK_OK(ordo_sparse_agg_new(&agg, 10, 20, 2, ORDO_SPARSE_AGG_DENSE, 4));
    ordo_coo_entry_t e[2] = {{10, 1.0f}, {20, 2.0f}};
    ORDO_CK_ERR(ordo_sparse_agg_push(agg, 0, e, 2), ORDO_EPROTO);
    ck_assert(strstr(ordo_error_detail(), "index 20 outside [10, 20)"));
    ck_assert_int_eq(ordo_sparse_agg_pushed(agg), 0);
    ck_assert_uint_eq(ordo_sparse_agg_touched(agg), 0);
    ordo_sparse_agg_destroy(&agg);
    ck_assert_ptr_null(agg);
}
END_TEST

static Suite *sparse_agg_suite(void)
{
    Suite *s = suite_create("sparse_agg");
    TCase *tc = tcase_create("push");
    tcase_add_test(tc, pushes_are_validated);
    suite_add_tcase(s, tc);
    return s;
}

ORDO_CK_MAIN(sparse_agg_suite)
