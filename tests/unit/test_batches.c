/* Tests of scheduler/batches: the shared epoch hands out every sample once per epoch, in
 * batches that fast workers take more of; a dead worker's lease comes back; the end of the
 * run, gated by iteration for ssp and backup workers; bad specs. */
#include "scheduler/batches.h"
#include "common/wire.h"
#include "ordo_check.h"

#include <stdlib.h>
#include <string.h>

static const ordo__batches_spec_t spec10 = {.n = 10, .batch = 4, .samples = 20, .seed = 3,
                                           .shuffle = true};

START_TEST(epochs_cover_every_sample_once)
{
    ordo__batches_t *b;
    ORDO_CK_OK(ordo__batches_new(&spec10, 2, false, &b));
    int seen[2][10] = {{0}}, count, rc, got = 0;
    int64_t idx[8], epoch;
    /* worker 0 asks three times as often as worker 1 */
    for (int k = 0; (rc = ordo__batches_next(b, k % 4 == 3, -1, -1, idx, 8, &count, &epoch)) == 0;
         k++) {
        ck_assert_int_ge(epoch, 0);
        ck_assert_int_le(epoch, 1);
        ck_assert_int_ge(count, 1);
        ck_assert_int_le(count, 4);
        for (int i = 0; i < count; i++) {
            ck_assert(idx[i] >= 0 && idx[i] < 10);
            seen[epoch][idx[i]]++;
        }
        got += count;
    }
    ck_assert_int_eq(rc, ORDO_BATCHES_END_RUN);
    ck_assert_int_eq(got, 20);
    for (int e = 0; e < 2; e++)
        for (int i = 0; i < 10; i++)
            ck_assert_int_eq(seen[e][i], 1);
    /* batches of 4, 4, 2 per epoch (a batch never crosses an epoch): 6, worker 0 took most */
    ck_assert_int_eq(ordo__batches_count(b, 0) + ordo__batches_count(b, 1), 6);
    ck_assert_int_gt(ordo__batches_count(b, 0), ordo__batches_count(b, 1));
    ck_assert_int_eq(ordo__batches_samples(b), 20);
    ck_assert_int_eq(ordo__batches_count(b, 2), -1);
    ordo__batches_destroy(&b);
    ck_assert_ptr_null(b);
}
END_TEST

START_TEST(shuffle_is_seeded_and_off_means_in_order)
{
    ordo__batches_t *a, *b, *c;
    ordo__batches_spec_t plain = spec10;
    plain.shuffle = false;
    ORDO_CK_OK(ordo__batches_new(&spec10, 1, false, &a));
    ORDO_CK_OK(ordo__batches_new(&spec10, 1, false, &b));
    ORDO_CK_OK(ordo__batches_new(&plain, 1, false, &c));
    int64_t x[4], y[4], z[4], e;
    int nx, ny, nz, differs = 0;
    for (int k = 0; k < 3; k++) {
        ORDO_CK_OK(ordo__batches_next(a, 0, -1, -1, x, 4, &nx, &e));
        ORDO_CK_OK(ordo__batches_next(b, 0, -1, -1, y, 4, &ny, &e));
        ORDO_CK_OK(ordo__batches_next(c, 0, -1, -1, z, 4, &nz, &e));
        ck_assert_int_eq(nx, ny);
        ck_assert(!memcmp(x, y, sizeof(int64_t) * (size_t)nx));
        for (int i = 0; i < nz; i++) {
            ck_assert_int_eq(z[i], 4 * k + i);
            differs += x[i] != z[i];
        }
    }
    ck_assert_int_gt(differs, 0);
    ORDO_CK_OK(ordo__batches_same(a, &spec10));
    ORDO_CK_ERR(ordo__batches_same(a, &plain), ORDO_ERR_INVAL);
    ordo__batches_spec_t other = spec10;
    other.batch = 5;
    ORDO_CK_ERR(ordo__batches_same(a, &other), ORDO_ERR_INVAL);
    ck_assert(strstr(ordo__error_detail(), "batch 5"));
    ordo__batches_destroy(&a);
    ordo__batches_destroy(&b);
    ordo__batches_destroy(&c);
}
END_TEST

START_TEST(end_of_epoch_for_a_reader_of_that_epoch)
{
    ordo__batches_spec_t sp = spec10;
    sp.samples = 0; /* epochs without end */
    ordo__batches_t *b;
    ORDO_CK_OK(ordo__batches_new(&sp, 2, false, &b));
    int64_t idx[4], e;
    int n;
    for (int k = 0; k < 3; k++) ORDO_CK_OK(ordo__batches_next(b, 0, 0, -1, idx, 4, &n, &e));
    ck_assert_int_eq(ordo__batches_next(b, 1, 0, -1, idx, 4, &n, &e), ORDO_BATCHES_END_EPOCH);
    ORDO_CK_OK(ordo__batches_next(b, 1, 1, -1, idx, 4, &n, &e));
    ck_assert_int_eq(e, 1);
    ck_assert_int_eq(n, 4);
    ordo__batches_destroy(&b);
}
END_TEST

/* a worker that asks ahead holds two leases: its last batch (being worked on) and the new
 * one; asking ahead again completes the older; a death returns both, the older first */
START_TEST(asking_ahead_keeps_the_last_batch_leased)
{
    ordo__batches_t *b;
    ORDO_CK_OK(ordo__batches_new(&spec10, 2, false, &b));
    int64_t x[4], y[4], z[4], idx[4], e;
    int nx, ny, nz, n;
    ORDO_CK_OK(ordo__batches_next(b, 1, -1, -1, x, 4, &nx, &e));     /* works on x */
    ORDO_CK_OK(ordo__batches_prefetch(b, 1, -1, -1, y, 4, &ny, &e)); /* y ahead: x still leased */
    ordo__batches_release(b, 1);
    ORDO_CK_OK(ordo__batches_next(b, 0, -1, -1, idx, 4, &n, &e));
    ck_assert(n == nx && !memcmp(idx, x, sizeof(int64_t) * (size_t)n)); /* x first */
    ORDO_CK_OK(ordo__batches_next(b, 0, -1, -1, idx, 4, &n, &e));
    ck_assert(n == ny && !memcmp(idx, y, sizeof(int64_t) * (size_t)n));
    /* worker 1 again (restarted): x2 then y2 ahead, then z ahead: x2 is done, y2 and z leased */
    ORDO_CK_OK(ordo__batches_next(b, 1, -1, -1, x, 4, &nx, &e));
    ORDO_CK_OK(ordo__batches_prefetch(b, 1, -1, -1, y, 4, &ny, &e));
    ORDO_CK_OK(ordo__batches_prefetch(b, 1, -1, -1, z, 4, &nz, &e));
    ordo__batches_release(b, 1);
    ORDO_CK_OK(ordo__batches_next(b, 0, -1, -1, idx, 4, &n, &e));
    ck_assert(n == ny && !memcmp(idx, y, sizeof(int64_t) * (size_t)n));
    ORDO_CK_OK(ordo__batches_next(b, 0, -1, -1, idx, 4, &n, &e));
    ck_assert(n == nz && !memcmp(idx, z, sizeof(int64_t) * (size_t)n));
    /* five batches drawn (4, 4, then 2 ending epoch 0, 4, 4); the returned ones counted once */
    ck_assert_int_eq(ordo__batches_samples(b), 18);
    ordo__batches_destroy(&b);
}
END_TEST

START_TEST(a_dead_workers_lease_comes_back)
{
    ordo__batches_t *b;
    ORDO_CK_OK(ordo__batches_new(&spec10, 2, false, &b));
    int64_t lost[4], idx[4], e;
    int nl, n;
    ORDO_CK_OK(ordo__batches_next(b, 1, -1, -1, lost, 4, &nl, &e));
    ordo__batches_release(b, 1); /* worker 1 died holding it */
    ordo__batches_release(b, 1); /* nothing more to return */
    ORDO_CK_OK(ordo__batches_next(b, 0, -1, -1, idx, 4, &n, &e));
    ck_assert_int_eq(n, nl);
    ck_assert(!memcmp(idx, lost, sizeof(int64_t) * (size_t)n));
    /* asking again means the previous batch is done: a death now returns nothing */
    ORDO_CK_OK(ordo__batches_next(b, 0, -1, -1, idx, 4, &n, &e));
    ORDO_CK_OK(ordo__batches_next(b, 0, -1, -1, idx, 4, &n, &e));
    int total = 8 + n, rc;
    while ((rc = ordo__batches_next(b, 0, -1, -1, idx, 4, &n, &e)) == 0) total += n;
    ck_assert_int_eq(rc, ORDO_BATCHES_END_RUN);
    ck_assert_int_eq(total, 20);
    ck_assert_int_eq(ordo__batches_samples(b), 20); /* the returned batch counted once */
    ordo__batches_destroy(&b);
}
END_TEST

START_TEST(gated_end_is_an_iteration)
{
    ordo__batches_spec_t sp = {.n = 100, .batch = 10, .samples = 30, .seed = 1, .shuffle = true};
    ordo__batches_t *b;
    ORDO_CK_OK(ordo__batches_new(&sp, 3, true, &b));
    int64_t idx[10], e;
    int n;
    ORDO_CK_OK(ordo__batches_next(b, 0, -1, 0, idx, 10, &n, &e));
    ORDO_CK_OK(ordo__batches_next(b, 0, -1, 1, idx, 10, &n, &e));
    ORDO_CK_OK(ordo__batches_next(b, 1, -1, 0, idx, 10, &n, &e)); /* the 30 samples */
    /* worker 0 is at iteration 2, the last one handed out is 1: it ends; the others still
     * get iteration 1 (and worker 2 its iteration 0) */
    ck_assert_int_eq(ordo__batches_next(b, 0, -1, 2, idx, 10, &n, &e), ORDO_BATCHES_END_RUN);
    ORDO_CK_OK(ordo__batches_next(b, 1, -1, 1, idx, 10, &n, &e));
    ORDO_CK_OK(ordo__batches_next(b, 2, -1, 0, idx, 10, &n, &e));
    ORDO_CK_OK(ordo__batches_next(b, 2, -1, 1, idx, 10, &n, &e));
    ck_assert_int_eq(ordo__batches_next(b, 2, -1, 2, idx, 10, &n, &e), ORDO_BATCHES_END_RUN);
    ck_assert_int_eq(ordo__batches_next(b, 1, -1, -1, idx, 10, &n, &e), ORDO_BATCHES_END_RUN);
    ck_assert_int_eq(ordo__batches_samples(b), 60);
    ordo__batches_destroy(&b);
}
END_TEST

START_TEST(bad_specs_and_requests)
{
    ordo__batches_t *b = NULL;
    ordo__batches_spec_t sp = spec10;
    sp.n = 0;
    ORDO_CK_ERR(ordo__batches_new(&sp, 2, false, &b), ORDO_ERR_INVAL);
    sp = spec10;
    sp.batch = ORDO_BATCH_MAX + 1;
    ORDO_CK_ERR(ordo__batches_new(&sp, 2, false, &b), ORDO_ERR_INVAL);
    sp = spec10;
    sp.samples = -1;
    ORDO_CK_ERR(ordo__batches_new(&sp, 2, false, &b), ORDO_ERR_INVAL);
    ORDO_CK_ERR(ordo__batches_new(&spec10, 0, false, &b), ORDO_ERR_INVAL);
    ck_assert_ptr_null(b);
    ORDO_CK_OK(ordo__batches_new(&spec10, 2, false, &b));
    int64_t idx[4], e;
    int n;
    ORDO_CK_ERR(ordo__batches_next(b, 2, -1, -1, idx, 4, &n, &e), ORDO_ERR_INVAL);
    ORDO_CK_ERR(ordo__batches_next(b, -1, -1, -1, idx, 4, &n, &e), ORDO_ERR_INVAL);
    ORDO_CK_ERR(ordo__batches_next(b, 0, -1, -1, idx, 3, &n, &e), ORDO_ERR_INVAL);
    ordo__batches_release(b, 5); /* ignored */
    ordo__batches_destroy(&b);
    ordo__batches_destroy(&b);
}
END_TEST

/* a restarted scheduler's service, rebuilt from what the workers hold (each one's leases and
 * newest batch, fault.scheduler = restart), hands out what the old one would have: the same
 * batches in the same order, none again; and the last lease answers a request sent twice */
START_TEST(a_service_rebuilt_from_the_leases_goes_on)
{
    ordo__batches_t *old, *b;
    ORDO_CK_OK(ordo__batches_new(&spec10, 2, false, &old));
    ORDO_CK_OK(ordo__batches_new(&spec10, 2, false, &b));
    int64_t idx[2][8], e[2], more[8], again[8], ee, ea;
    int n[2], nm, na;
    /* worker 0 took two batches (the second asked ahead: both leased), worker 1 one */
    ORDO_CK_OK(ordo__batches_next(old, 0, -1, -1, idx[0], 8, &n[0], &e[0]));
    ORDO_CK_OK(ordo__batches_next(old, 1, -1, -1, idx[1], 8, &n[1], &e[1]));
    int64_t ahead[8], ea2;
    int nah;
    ORDO_CK_OK(ordo__batches_prefetch(old, 0, -1, -1, ahead, 8, &nah, &ea2));
    /* the workers' state, as they report it */
    ORDO_CK_OK(ordo__batches_restore(b, 0, 0, e[0], idx[0], n[0]));
    ORDO_CK_OK(ordo__batches_restore(b, 0, 1, ea2, ahead, nah));
    ORDO_CK_OK(ordo__batches_restore(b, 1, 1, e[1], idx[1], n[1]));
    ORDO_CK_OK(ordo__batches_seen(b, ea2, ahead, nah));
    ORDO_CK_OK(ordo__batches_seen(b, e[1], idx[1], n[1]));
    ordo__batches_set_count(b, 0, 2, -1);
    ordo__batches_set_count(b, 1, 1, -1);
    ck_assert_int_eq(ordo__batches_samples(b), ordo__batches_samples(old));
    ck_assert_int_eq(ordo__batches_count(b, 0), 2);
    /* a request answered already gets worker 0's last lease again */
    ORDO_CK_OK(ordo__batches_last(b, 0, again, 8, &na, &ea));
    ck_assert_int_eq(na, nah);
    ck_assert_mem_eq(again, ahead, sizeof *ahead * (size_t)nah);
    /* from here both hand out the same batches until the run's end */
    int rc;
    while ((rc = ordo__batches_next(old, 1, -1, -1, more, 8, &nm, &ee)) == 0) {
        ORDO_CK_OK(ordo__batches_next(b, 1, -1, -1, again, 8, &na, &ea));
        ck_assert_int_eq(na, nm);
        ck_assert_int_eq(ea, ee);
        ck_assert_mem_eq(again, more, sizeof *more * (size_t)nm);
    }
    ck_assert_int_eq(rc, ORDO_BATCHES_END_RUN);
    ck_assert_int_eq(ordo__batches_next(b, 1, -1, -1, again, 8, &na, &ea), ORDO_BATCHES_END_RUN);
    /* worker 0 dies: its two leases come back, in the old service and the rebuilt one */
    ordo__batches_release(old, 0);
    ordo__batches_release(b, 0);
    ORDO_CK_OK(ordo__batches_next(old, 1, -1, -1, more, 8, &nm, &ee));
    ORDO_CK_OK(ordo__batches_next(b, 1, -1, -1, again, 8, &na, &ea));
    ck_assert_int_eq(na, nm);
    ck_assert_mem_eq(again, more, sizeof *more * (size_t)nm);
    /* a batch that is no run of its epoch's stream is refused */
    int64_t wrong[2] = {idx[1][1], idx[1][0]};
    ORDO_CK_ERR(ordo__batches_seen(b, e[1], wrong, 2), ORDO_ERR_INVAL);
    ck_assert_ptr_nonnull(strstr(ordo__error_detail(), "not a run of that epoch's stream"));
    ordo__batches_destroy(&old);
    ordo__batches_destroy(&b);
}
END_TEST

static Suite *batches_suite(void)
{
    Suite *s = suite_create("batches");
    TCase *tc = tcase_create("epochs");
    tcase_add_test(tc, epochs_cover_every_sample_once);
    tcase_add_test(tc, shuffle_is_seeded_and_off_means_in_order);
    tcase_add_test(tc, end_of_epoch_for_a_reader_of_that_epoch);
    suite_add_tcase(s, tc);
    tc = tcase_create("leases");
    tcase_add_test(tc, a_dead_workers_lease_comes_back);
    tcase_add_test(tc, asking_ahead_keeps_the_last_batch_leased);
    tcase_add_test(tc, a_service_rebuilt_from_the_leases_goes_on);
    suite_add_tcase(s, tc);
    tc = tcase_create("end");
    tcase_add_test(tc, gated_end_is_an_iteration);
    suite_add_tcase(s, tc);
    tc = tcase_create("errors");
    tcase_add_test(tc, bad_specs_and_requests);
    suite_add_tcase(s, tc);
    return s;
}

ORDO_CK_MAIN(batches_suite)
