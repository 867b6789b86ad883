/* Tests of client/credit: what may be on the egress link ahead of the next queued push. */
#include "client/credit.h"
#include "ordo_check.h"

#include <stdint.h>

/* an emulated 8 Mbit/s link carries 1000 bytes per ms */
START_TEST(emulated_link_backlog_below_the_credit)
{
    ordo__credit_t c;
    ordo__credit_init(&c, 1500, 8e6);
    int64_t now = 1000000000;
    ck_assert(ordo__credit_allows(&c, now, now - 5));        /* idle link */
    ck_assert(ordo__credit_allows(&c, now, now + 1000000));  /* 1000 bytes ahead */
    ck_assert(!ordo__credit_allows(&c, now, now + 2000000)); /* 2000 bytes ahead */
    /* it may go 1.5 ms before the link frees: 1500 bytes of link time */
    ck_assert_int_eq(ordo__credit_wake_ns(&c, now + 2000000), now + 500000);
}
END_TEST

/* what was handed over counts at once, before the transport's thread puts it on the link
 * (and its link_free_ns moves): a burst of pushes stops at the credit */
START_TEST(handed_bytes_count_before_the_link_sees_them)
{
    ordo__credit_t c;
    ordo__credit_init(&c, 1500, 8e6);
    int64_t now = 1000000000;
    ordo__credit_sent(&c, 1000, now, true); /* 1 ms of link time */
    ck_assert(ordo__credit_allows(&c, now, now)); /* 1000 bytes ahead < 1500 */
    ordo__credit_sent(&c, 1000, now, false); /* fused: link time all the same */
    ck_assert(!ordo__credit_allows(&c, now, now)); /* 2000 ahead */
    ck_assert_int_eq(ordo__credit_wake_ns(&c, now), now + 500000);
    ck_assert(ordo__credit_allows(&c, now + 600000, now)); /* 1400 ahead by then */
    /* the transport's word wins when it is later (other traffic on the link) */
    ck_assert(!ordo__credit_allows(&c, now + 600000, now + 5000000));
    ordo__credit_reset(&c);
    ck_assert(ordo__credit_allows(&c, now, now));
}
END_TEST

START_TEST(zero_credit_is_one_at_a_time)
{
    ordo__credit_t c;
    ordo__credit_init(&c, 0, 8e6);
    int64_t now = 1000000000;
    ck_assert(ordo__credit_allows(&c, now, now));
    ck_assert(!ordo__credit_allows(&c, now, now + 1000));
    ordo__credit_init(&c, 0, 0);
    ck_assert(ordo__credit_allows(&c, now, 0));
    ordo__credit_sent(&c, 10, now, true);
    ck_assert(!ordo__credit_allows(&c, now, 0));
    ordo__credit_acked(&c, 10);
    ck_assert(ordo__credit_allows(&c, now, 0));
}
END_TEST

/* without emulation the unacknowledged bytes count; a push larger than the credit still goes
 * alone, and what an acknowledgement gives back never goes below zero */
START_TEST(unemulated_link_counts_acknowledgements)
{
    ordo__credit_t c;
    ordo__credit_init(&c, 1000, 0);
    ck_assert_int_eq(ordo__credit_wake_ns(&c, 5), INT64_MAX);
    ordo__credit_sent(&c, 600, 0, true);
    ck_assert(ordo__credit_allows(&c, 0, 0));
    ordo__credit_sent(&c, 4000, 0, true);
    ordo__credit_sent(&c, 9000, 0, false); /* a fused push is not counted */
    ck_assert(!ordo__credit_allows(&c, 0, 0));
    ordo__credit_acked(&c, 4000);
    ck_assert(ordo__credit_allows(&c, 0, 0));
    ordo__credit_acked(&c, 5000);
    ck_assert_int_eq(c.unacked, 0);
    ordo__credit_sent(&c, 5000, 0, true);
    ordo__credit_reset(&c);
    ck_assert(ordo__credit_allows(&c, 0, 0));
}
END_TEST

static Suite *credit_suite(void)
{
    Suite *s = suite_create("credit");
    TCase *tc = tcase_create("emulated");
    tcase_add_test(tc, emulated_link_backlog_below_the_credit);
    tcase_add_test(tc, zero_credit_is_one_at_a_time);
    tcase_add_test(tc, handed_bytes_count_before_the_link_sees_them);
    suite_add_tcase(s, tc);
    tc = tcase_create("acknowledged");
    tcase_add_test(tc, unemulated_link_counts_acknowledgements);
    suite_add_tcase(s, tc);
    return s;
}

ORDO_CK_MAIN(credit_suite)
