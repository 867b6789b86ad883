/* Tests of server/fence: a worker's process is known by the heartbeat id its HELLO carries;
 * once fenced, every message on its connections is refused naming the fence, a connection it
 * opens later too, while a new process of the same rank is not affected. */
#include "server/fence.h"
#include "ordo_check.h"

#include <string.h>

/* a message of type from worker rank on the connection named by the byte c */
static ordo__msg_t msg(int type, int rank, uint8_t c, uint64_t beat)
{
    ordo__msg_t m;
    memset(&m, 0, sizeof m);
    m.hdr.type = (uint8_t)type;
    m.hdr.role = ORDO_ROLE_WORKER;
    m.hdr.rank = rank;
    m.hdr.req = beat;
    m.rid[0] = 0;
    m.rid[1] = c;
    m.rid_len = 5;
    return m;
}

START_TEST(a_fenced_process_is_refused_and_its_successor_is_not)
{
    ordo__srv_fence_t *f = NULL;
    ORDO_CK_OK(ordo__srv_fence_new(2, &f));
    ordo__msg_t hello_old = msg(ORDO_MSG_HELLO, 1, 'a', 111),
               push_old = msg(ORDO_MSG_PUSH, 1, 'a', 0);
    ordo__msg_t hello_w0 = msg(ORDO_MSG_HELLO, 0, 'z', 100), push_w0 = msg(ORDO_MSG_PUSH, 0, 'z', 0);
    ck_assert_ptr_null(ordo__srv_fence_check(f, &hello_old));
    ck_assert_ptr_null(ordo__srv_fence_check(f, &hello_w0));
    ck_assert_ptr_null(ordo__srv_fence_check(f, &push_old)); /* not fenced yet */
    ordo__srv_fence_add(f, 1, 111, 42, 3);
    const char *why = ordo__srv_fence_check(f, &push_old);
    ck_assert_ptr_nonnull(why);
    ck_assert_str_eq(why, "fenced: worker 1's process was declared dead at iteration 42 "
                          "(membership generation 3); its pushes and pulls are refused");
    ordo__msg_t pull_old = msg(ORDO_MSG_PULL, 1, 'a', 0);
    ck_assert_ptr_nonnull(ordo__srv_fence_check(f, &pull_old));
    ck_assert_ptr_null(ordo__srv_fence_check(f, &push_w0)); /* another rank */
    /* the new process of rank 1: its own connection and heartbeat id */
    ordo__msg_t hello_new = msg(ORDO_MSG_HELLO, 1, 'b', 222),
               push_new = msg(ORDO_MSG_PUSH, 1, 'b', 0);
    ck_assert_ptr_null(ordo__srv_fence_check(f, &hello_new));
    ck_assert_ptr_null(ordo__srv_fence_check(f, &push_new));
    /* the old process opening a new connection: its HELLO names it, refused from there on */
    ordo__msg_t hello_again = msg(ORDO_MSG_HELLO, 1, 'c', 111),
               push_again = msg(ORDO_MSG_PUSH, 1, 'c', 0);
    ck_assert_ptr_nonnull(ordo__srv_fence_check(f, &hello_again));
    ck_assert_ptr_nonnull(ordo__srv_fence_check(f, &push_again));
    ck_assert_uint_eq(ordo__srv_fence_refused(f), 4);
    ordo__srv_fence_destroy(&f);
    ck_assert_ptr_null(f);
    ordo__srv_fence_destroy(&f); /* NULL-safe */
}
END_TEST

START_TEST(a_fence_that_comes_before_the_hello_still_holds)
{
    ordo__srv_fence_t *f = NULL;
    ORDO_CK_OK(ordo__srv_fence_new(1, &f));
    ordo__srv_fence_add(f, 0, 9, 5, 1);
    ordo__msg_t hello = msg(ORDO_MSG_HELLO, 0, 'd', 9), push = msg(ORDO_MSG_PUSH, 0, 'd', 0);
    ck_assert_ptr_nonnull(ordo__srv_fence_check(f, &hello));
    ck_assert_ptr_nonnull(ordo__srv_fence_check(f, &push));
    ordo__msg_t other = msg(ORDO_MSG_HELLO, 0, 'e', 10), other_push = msg(ORDO_MSG_PUSH, 0, 'e', 0);
    ck_assert_ptr_null(ordo__srv_fence_check(f, &other));
    ck_assert_ptr_null(ordo__srv_fence_check(f, &other_push));
    ordo__srv_fence_destroy(&f);
}
END_TEST

static Suite *fence_suite(void)
{
    Suite *s = suite_create("fence");
    TCase *tc = tcase_create("fence");
    tcase_add_test(tc, a_fenced_process_is_refused_and_its_successor_is_not);
    tcase_add_test(tc, a_fence_that_comes_before_the_hello_still_holds);
    suite_add_tcase(s, tc);
    return s;
}

ORDO_CK_MAIN(fence_suite)
