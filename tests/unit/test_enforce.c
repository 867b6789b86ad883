/* Unit tests of server/enforce: normalized priorities, strict release by the counter, the
 * counter's restart after a full round and at a new iteration, the first round and tensors
 * not transferred every round (they hold nothing back), greedy's choice across
 * workers, the link gate, byte-fair turns between workers, and the release info. */
#include "common/conf.h"
#include "server/enforce.h"
#include "tests/unit/ordo_check.h"

#include <string.h>

/* a response for slice of `bytes` payload bytes */
static void add(ordo__enforce_t *e, int worker, int64_t iter, int slice, size_t bytes)
{
    static char buf[4096];
    ordo__msg_t m;
    ordo__msg_init(&m, ORDO_MSG_PULL_RESP);
    m.hdr.key = (uint32_t)slice;
    ck_assert_int_eq(ordo__msg_add_copy(&m, buf, bytes), 0);
    ORDO_CK_OK(ordo__enforce_add(e, worker, iter, slice, &m));
    ck_assert_int_eq(m.nframes, 0);
}

/* releases the next response; returns its slice (and fills info), or -1 when none may go */
static int next(ordo__enforce_t *e, bool link_free, ordo__enforce_release_t *info)
{
    ordo__msg_t m;
    ordo__enforce_release_t dummy;
    int rc = ordo__enforce_next(e, link_free, &m, info ? info : &dummy);
    if (rc == ORDO_ERR_AGAIN) return -1;
    ck_assert_int_eq(rc, 0);
    int slice = (int)m.hdr.key;
    ordo__msg_close(&m);
    return slice;
}

START_TEST(normalize_counts_smaller_priorities_on_this_server)
{
    /* slices 0-2 are one key's chunks (priority 1), slice 3 priority 0, slice 4 priority 2,
     * slice 5 priority 0 but on server 1 */
    int prio[] = {1, 1, 1, 0, 2, 0}, server[] = {0, 0, 0, 0, 0, 1}, out[6];
    ordo__enforce_normalize(prio, server, 6, 0, out);
    int want[] = {1, 1, 1, 0, 4, 0};
    for (int i = 0; i < 5; i++)
        ck_assert_int_eq(out[i], want[i]);
}
END_TEST

/* one round of worker 0 in iteration iter: slices added and released one at a time */
static void plain_round(ordo__enforce_t *e, int64_t iter, const int *slices, int n)
{
    for (int i = 0; i < n; i++) {
        add(e, 0, iter, slices[i], 10);
        ck_assert_int_eq(next(e, true, NULL), slices[i]);
    }
}

START_TEST(strict_releases_in_normalized_order)
{
    int norm[] = {2, 0, 1}, all[] = {1, 2, 0};
    ordo__enforce_t *e;
    ORDO_CK_OK(ordo__enforce_new(ORDO_ENFORCE_STRICT, 1, 3, norm, 3, &e));
    plain_round(e, 0, all, 3); /* the first round tells the server what a round has */
    add(e, 0, 1, 0, 10); /* norm 2 arrives first: must wait */
    ck_assert_int_eq(next(e, true, NULL), -1);
    add(e, 0, 1, 2, 10); /* norm 1: still waits for norm 0 */
    ck_assert_int_eq(next(e, true, NULL), -1);
    ck_assert_int_eq(ordo__enforce_pending(e), 2);
    add(e, 0, 1, 1, 10);
    ordo__enforce_release_t r;
    ck_assert_int_eq(next(e, false, NULL), -1); /* the link is busy: nothing goes */
    ck_assert_int_eq(next(e, true, &r), 1);
    ck_assert_int_eq(r.norm, 0);
    ck_assert_int_eq(r.counter, 0);
    ck_assert_int_eq(r.held, 2);
    ck_assert_int_eq(next(e, true, &r), 2);
    ck_assert_int_eq(r.counter, 1);
    ck_assert_int_eq(next(e, true, &r), 0);
    ck_assert_int_eq(r.counter, 2);
    ck_assert_int_eq(r.held, 0);
    ck_assert_int_eq(next(e, true, NULL), -1);
    ordo__enforce_destroy(&e);
    ck_assert_ptr_null(e);
}
END_TEST

START_TEST(strict_first_round_goes_by_priority_without_waiting)
{
    /* the server cannot know yet which slices the worker's rounds have */
    int norm[] = {2, 0, 1};
    ordo__enforce_t *e;
    ORDO_CK_OK(ordo__enforce_new(ORDO_ENFORCE_STRICT, 1, 3, norm, 3, &e));
    add(e, 0, 0, 0, 10);
    add(e, 0, 0, 2, 10);
    ck_assert_int_eq(next(e, true, NULL), 2); /* the smallest held, without waiting for 1 */
    ck_assert_int_eq(next(e, true, NULL), 0);
    ordo__enforce_destroy(&e);
}
END_TEST

START_TEST(strict_counter_restarts_each_round)
{
    /* forward-only runs pull version 0 every iteration: after a full round (2 slices) the
     * counter starts again, so norm 1 waits for norm 0 of the new round too */
    int norm[] = {0, 1}, all[] = {0, 1};
    ordo__enforce_t *e;
    ORDO_CK_OK(ordo__enforce_new(ORDO_ENFORCE_STRICT, 1, 2, norm, 2, &e));
    plain_round(e, 0, all, 2);
    for (int round = 0; round < 3; round++) {
        add(e, 0, 0, 1, 10);
        ck_assert_int_eq(next(e, true, NULL), -1);
        add(e, 0, 0, 0, 10);
        ck_assert_int_eq(next(e, true, NULL), 0);
        ck_assert_int_eq(next(e, true, NULL), 1);
    }
    /* a new iteration restarts the counter as well, even mid-round */
    add(e, 0, 1, 0, 10);
    ck_assert_int_eq(next(e, true, NULL), 0);
    add(e, 0, 2, 1, 10);
    ck_assert_int_eq(next(e, true, NULL), -1);
    ordo__enforce_destroy(&e);
}
END_TEST

START_TEST(strict_skips_a_tensor_not_transferred_every_round)
{
    /* slice 0 (norm 0) is not transferred in the rounds of iterations 1-4, then once with
     * its own, older version (an evaluation's counts, once an epoch): it never holds slices
     * 1 and 2 back, which still go in their order */
    int norm[] = {0, 1, 2}, two[] = {1, 2};
    ordo__enforce_t *e;
    ORDO_CK_OK(ordo__enforce_new(ORDO_ENFORCE_STRICT, 1, 3, norm, 3, &e));
    plain_round(e, 1, two, 2);
    for (int64_t it = 2; it < 5; it++) {
        add(e, 0, it, 2, 10);
        ck_assert_int_eq(next(e, true, NULL), -1); /* waits for slice 1, not for slice 0 */
        add(e, 0, it, 1, 10);
        ck_assert_int_eq(next(e, true, NULL), 1);
        ck_assert_int_eq(next(e, true, NULL), 2);
    }
    add(e, 0, 5, 1, 10);
    ck_assert_int_eq(next(e, true, NULL), 1);
    add(e, 0, 1, 0, 10); /* slice 0's first transfer (its version 1) in iteration 5 */
    ck_assert_int_eq(next(e, true, NULL), 0);
    add(e, 0, 5, 2, 10);
    ck_assert_int_eq(next(e, true, NULL), 2);
    for (int64_t it = 6; it < 8; it++) { /* and the rounds after it do not wait for it */
        add(e, 0, it, 2, 10);
        ck_assert_int_eq(next(e, true, NULL), -1);
        add(e, 0, it, 1, 10);
        ck_assert_int_eq(next(e, true, NULL), 1);
        ck_assert_int_eq(next(e, true, NULL), 2);
    }
    ordo__enforce_destroy(&e);
}
END_TEST

START_TEST(greedy_takes_the_smallest_ready_priority_over_workers)
{
    int norm[] = {0, 1, 2, 3};
    ordo__enforce_t *e;
    ORDO_CK_OK(ordo__enforce_new(ORDO_ENFORCE_GREEDY, 2, 4, norm, 4, &e));
    add(e, 0, 0, 3, 10);
    add(e, 1, 0, 2, 10);
    add(e, 0, 0, 1, 10);
    ck_assert_int_eq(next(e, false, NULL), -1);
    ordo__enforce_release_t r;
    ck_assert_int_eq(next(e, true, &r), 1); /* worker 0's norm 1: no counter to wait for */
    ck_assert_int_eq(r.worker, 0);
    ck_assert_int_eq(next(e, true, &r), 2);
    ck_assert_int_eq(r.worker, 1);
    add(e, 1, 0, 0, 10); /* a higher priority arriving later overtakes what is held */
    ck_assert_int_eq(next(e, true, &r), 0);
    ck_assert_int_eq(next(e, true, &r), 3);
    ck_assert_int_eq(ordo__enforce_pending(e), 0);
    ordo__enforce_destroy(&e);
}
END_TEST

START_TEST(workers_share_the_link_byte_fairly)
{
    /* fifo: worker 0 has four 100-byte responses, worker 1 one of 250 bytes and then two of
     * 100: the worker with fewer bytes handed over goes next */
    ordo__enforce_t *e;
    ORDO_CK_OK(ordo__enforce_new(ORDO_ENFORCE_MODE_FIFO, 2, 8, NULL, 0, &e));
    for (int s = 0; s < 4; s++)
        add(e, 0, 0, s, 100);
    add(e, 1, 0, 4, 250);
    add(e, 1, 0, 5, 100);
    add(e, 1, 0, 6, 100);
    int order[7];
    ordo__enforce_release_t r;
    for (int i = 0; i < 7; i++)
        order[i] = next(e, true, &r);
    /* bytes handed over (w0, w1) before each choice: (0,0) w0 by turn; (100,0) w1;
     * (100,250) w0; (200,250) w0; (300,250) w1; (300,350) w0; then w1's last */
    int want2[] = {0, 4, 1, 2, 5, 3, 6};
    for (int i = 0; i < 7; i++)
        ck_assert_int_eq(order[i], want2[i]);
    ordo__enforce_destroy(&e);
}
END_TEST

START_TEST(serial_share_serves_one_worker_to_the_end)
{
    /* the same responses with the serial share: the worker with the most bytes handed over
     * goes on, so worker 0 (first by the turn) gets all four before worker 1 starts */
    ordo__enforce_t *e;
    ORDO_CK_OK(ordo__enforce_new(ORDO_ENFORCE_MODE_FIFO, 2, 8, NULL, 0, &e));
    ORDO_CK_OK(ordo__enforce_set_share(e, ORDO_SHARE_SERIAL));
    for (int s = 0; s < 4; s++)
        add(e, 0, 0, s, 100);
    add(e, 1, 0, 4, 250);
    add(e, 1, 0, 5, 100);
    add(e, 1, 0, 6, 100);
    ordo__enforce_release_t r;
    int want[] = {0, 1, 2, 3, 4, 5, 6};
    for (int i = 0; i < 7; i++)
        ck_assert_int_eq(next(e, true, &r), want[i]);
    /* a worker whose response of a new iteration arrives starts again from 0 bytes: the
     * worker still in its iteration (more bytes) goes first */
    add(e, 0, 1, 0, 100); /* worker 0, iteration 1 */
    add(e, 1, 0, 7, 100); /* worker 1, still iteration 0 (350 bytes so far) */
    ck_assert_int_eq(next(e, true, &r), 7);
    ck_assert_int_eq(r.worker, 1);
    ck_assert_int_eq(next(e, true, &r), 0);
    ck_assert_int_eq(r.worker, 0);
    /* strict still gates each worker by its counter, serial or not */
    ordo__enforce_destroy(&e);
    int norm[] = {0, 1};
    ORDO_CK_OK(ordo__enforce_new(ORDO_ENFORCE_STRICT, 2, 2, norm, 2, &e));
    ORDO_CK_OK(ordo__enforce_set_share(e, ORDO_SHARE_SERIAL));
    for (int w = 0; w < 2; w++) /* the first rounds, which strict does not hold */
        for (int s = 0; s < 2; s++) {
            add(e, w, 0, s, 100);
            ck_assert_int_eq(next(e, true, &r), s);
        }
    add(e, 1, 1, 1, 400);
    ck_assert_int_eq(next(e, true, &r), -1); /* priority 1 before priority 0: held */
    add(e, 0, 1, 0, 100);
    ck_assert_int_eq(next(e, true, &r), 0);
    ck_assert_int_eq(r.worker, 0);
    add(e, 1, 1, 0, 100);
    ck_assert_int_eq(next(e, true, &r), 0);
    ck_assert_int_eq(r.worker, 1);
    ck_assert_int_eq(next(e, true, &r), 1);
    ck_assert_int_eq(r.worker, 1);
    ORDO_CK_ERR(ordo__enforce_set_share(e, 7), ORDO_ERR_INVAL);
    ordo__enforce_destroy(&e);
}
END_TEST

START_TEST(bad_arguments_are_refused)
{
    ordo__enforce_t *e = NULL;
    ORDO_CK_ERR(ordo__enforce_new(7, 1, 1, NULL, 0, &e), ORDO_ERR_INVAL);
    ORDO_CK_ERR(ordo__enforce_new(ORDO_ENFORCE_STRICT, 0, 1, NULL, 0, &e), ORDO_ERR_INVAL);
    ORDO_CK_OK(ordo__enforce_new(ORDO_ENFORCE_STRICT, 1, 2, NULL, 2, &e));
    ordo__msg_t m;
    ordo__msg_init(&m, ORDO_MSG_PULL_RESP);
    ORDO_CK_ERR(ordo__enforce_add(e, 1, 0, 0, &m), ORDO_ERR_INVAL);
    ORDO_CK_ERR(ordo__enforce_add(e, 0, 0, 2, &m), ORDO_ERR_INVAL);
    ordo__msg_close(&m);
    add(e, 0, 0, 1, 10); /* held when destroyed: the module frees it */
    ordo__enforce_destroy(&e);
    ordo__enforce_destroy(&e); /* NULL-safe */
}
END_TEST

static Suite *enforce_suite(void)
{
    Suite *s = suite_create("enforce");
    TCase *tc = tcase_create("normalize");
    tcase_add_test(tc, normalize_counts_smaller_priorities_on_this_server);
    suite_add_tcase(s, tc);
    tc = tcase_create("strict");
    tcase_add_test(tc, strict_releases_in_normalized_order);
    tcase_add_test(tc, strict_counter_restarts_each_round);
    tcase_add_test(tc, strict_first_round_goes_by_priority_without_waiting);
    tcase_add_test(tc, strict_skips_a_tensor_not_transferred_every_round);
    suite_add_tcase(s, tc);
    tc = tcase_create("greedy");
    tcase_add_test(tc, greedy_takes_the_smallest_ready_priority_over_workers);
    suite_add_tcase(s, tc);
    tc = tcase_create("sharing");
    tcase_add_test(tc, workers_share_the_link_byte_fairly);
    tcase_add_test(tc, serial_share_serves_one_worker_to_the_end);
    suite_add_tcase(s, tc);
    tc = tcase_create("errors");
    tcase_add_test(tc, bad_arguments_are_refused);
    suite_add_tcase(s, tc);
    return s;
}

ORDO_CK_MAIN(enforce_suite)
