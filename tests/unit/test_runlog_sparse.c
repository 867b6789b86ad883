/* Tests of scheduler/runlog_sparse: the summary's sparse section from per-iteration records
 * (means, maxima, the traffic bound, the load per server and its imbalance per region epoch),
 * and no section for runs without sparse counters. */
#include "scheduler/runlog_sparse.h"
#include "ordo_check.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static double get(json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    ck_assert_msg(json_is_number(v), "no number %s", k);
    return json_number_value(v);
}

/* one record: worker w, iteration it, epoch e, loads l0/l1 (local = l0 + l1), global g */
static ordo__iter_stats_t rec(int w, int it, int e, int l0, int l1, int g)
{
    ordo__iter_stats_t s;
    memset(&s, 0, sizeof s);
    s.worker = w;
    s.iter = it;
    s.bytes_push = 8 * (l0 + l1);
    s.bytes_pull = 8 * g;
    snprintf(s.extra, sizeof s.extra,
             "\"forward_ms\":1.5,\"sparse_k\":100,\"sparse_local\":%d,\"sparse_global\":%d,"
             "\"sparse_consumed\":%d,\"sparse_exact\":1,\"sparse_epoch\":%d,"
             "\"sparse_load_s0\":%d,\"sparse_load_s1\":%d",
             l0 + l1, g, g / 2, e, l0, l1);
    return s;
}

START_TEST(section_from_records)
{
    /* 2 workers, 4 iterations; epoch 0 (iterations 0-1) loads 3:1, epoch 1 even-ish */
    ordo__iter_stats_t r[8];
    int n = 0;
    for (int it = 0; it < 4; it++)
        for (int w = 0; w < 2; w++) {
            int e = it < 2 ? 0 : 1;
            r[n++] = e == 0 ? rec(w, it, e, 75, 25, 100 + it) : rec(w, it, e, 55, 45, 110);
        }
    json_t *s = ordo__runlog_sparse_summary(r, n, 2);
    ck_assert_ptr_nonnull(s);
    ck_assert_int_eq((int)get(s, "k"), 100);
    ck_assert_int_eq((int)get(s, "servers"), 2);
    ck_assert_int_eq((int)get(s, "epochs"), 2);
    ck_assert_double_eq_tol(get(s, "local_mean"), 100, 1e-9);
    ck_assert_double_eq_tol(get(s, "global_mean"), (100 + 101 + 110 + 110) / 4.0, 1e-9);
    ck_assert_double_eq_tol(get(s, "global_max"), 110, 1e-9);
    ck_assert_double_eq_tol(get(s, "global_over_k"), (100 + 101 + 110 + 110) / 400.0, 1e-9);
    ck_assert_double_eq_tol(get(s, "bytes_per_worker_iter_max"), 8 * 210, 1e-9);
    ck_assert_double_eq_tol(get(s, "bytes_bound"), 2 * 8 * 100 * 1.25, 1e-9);
    ck_assert_double_eq_tol(get(s, "bytes_over_bound_max"), 8 * 210 / 2000.0, 1e-9);
    json_t *by = json_object_get(s, "imbalance_by_epoch");
    ck_assert_int_eq(json_array_size(by), 2);
    ck_assert_double_eq_tol(json_number_value(json_array_get(by, 0)), 1.5, 1e-9);
    ck_assert_double_eq_tol(json_number_value(json_array_get(by, 1)), 1.1, 1e-9);
    ck_assert_double_eq_tol(get(s, "imbalance_after_rebalance_max"), 1.1, 1e-9);
    ck_assert_double_eq_tol(get(s, "imbalance_iter_after_rebalance_max"), 1.1, 1e-9);
    json_t *load = json_object_get(s, "load_per_server_mean");
    ck_assert_double_eq_tol(json_number_value(json_array_get(load, 0)), (2 * 150 + 2 * 110) / 4.0,
                            1e-9);
    json_decref(s);
}
END_TEST

START_TEST(no_section_without_sparse_counters)
{
    ordo__iter_stats_t r[2];
    memset(r, 0, sizeof r);
    snprintf(r[0].extra, sizeof r[0].extra, "\"forward_ms\":1.5");
    r[1].iter = 1;
    ck_assert_ptr_null(ordo__runlog_sparse_summary(r, 2, 1));
    ck_assert_ptr_null(ordo__runlog_sparse_summary(r, 0, 1));
}
END_TEST

static Suite *runlog_sparse_suite(void)
{
    Suite *s = suite_create("runlog_sparse");
    TCase *t = tcase_create("summary");
    tcase_add_test(t, section_from_records);
    tcase_add_test(t, no_section_without_sparse_counters);
    suite_add_tcase(s, t);
    return s;
}

ORDO_CK_MAIN(runlog_sparse_suite)
