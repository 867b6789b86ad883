/* Integration test: ordo-bench calibrate recovers the cost model of a known emulated link.
 * It runs a real scheduler and server (children of ordo-bench) and one worker, first on
 * unpaced loopback (the software's own cost a0 + b0 * bytes per round trip), then on links
 * emulated at RATE and one-way latency LAT_US. What the figures must be:
 *   - a push+pull round trip crosses two links (the push on the worker's, the pulled value
 *     on the server's), each adding the latency once and 8 / RATE seconds per byte:
 *     a = 2 * LAT + a0, b = 2 * 8 / RATE + b0 (a0 measured on the same link without
 *     latency: the paced I/O path costs more than unpaced loopback, much more under
 *     sanitizers; b0 on unpaced loopback);
 *   - pipelined pushes (several in flight) pay the latency once, not per message: each
 *     further push costs b = 8 / RATE per byte (the worker's link) and a ~ 0 (the 64-byte
 *     header's link time).
 * With a per-message cost MSG_US emulated as well (each message holds the link that long on
 * top of its bytes, net.msg_us), pipelined pushes cost a = MSG_US + a2 and b = 8 / RATE, and
 * one push alone (to its ack) a = 2 * MSG_US + a1 (the push and the ack each hold a link),
 * a2 and a1 being the same figures on the same link without MSG_US.
 * Each fitted figure must lie within 10% of its expected value. The emulated link dominates
 * every measured time (the software adds ~0.1 ms to 10 ms round trips), so this holds on a
 * loaded machine too. */
#include "common/error.h"
#include "tests/unit/ordo_check.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define RATE   100e6 /* bits per second: --bandwidth 100mbit */
#define LAT_US 5000.0
#define MSG_US 2000.0

typedef struct {
    double a_rt, b_rt, a_msg, b_msg, a_one, b_one, c_plan;
    int rows;
} fit_t;

/* run ordo-bench calibrate --json with extra options; parse the two fit lines */
static void calibrate(const char *opts, fit_t *f)
{
    const char *dir = getenv("ORDO_BIN_DIR");
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "'%s/ordo-bench' calibrate --json %s", dir ? dir : "build/bin", opts);
    FILE *p = popen(cmd, "r");
    ck_assert_ptr_nonnull(p);
    memset(f, 0, sizeof *f);
    f->a_rt = f->b_rt = f->a_msg = f->b_msg = f->a_one = f->b_one = f->c_plan = NAN;
    char line[1024];
    while (fgets(line, sizeof line, p)) {
        json_t *o = json_loads(line, 0, NULL);
        ck_assert_msg(o != NULL, "not JSON: %s", line);
        const char *fit = json_string_value(json_object_get(o, "fit"));
        double a = json_number_value(json_object_get(o, "a_s"));
        double b = json_number_value(json_object_get(o, "b_s_per_byte"));
        if (fit && !strcmp(fit, "round_trip")) {
            f->a_rt = a;
            f->b_rt = b;
        } else if (fit && !strcmp(fit, "one_push")) {
            f->a_one = a;
            f->b_one = b;
        } else if (fit && !strcmp(fit, "per_message")) {
            f->a_msg = a;
            f->b_msg = b;
            f->c_plan = json_number_value(json_object_get(o, "merge_c_ns")) * 1e-9;
        } else {
            ck_assert(json_number_value(json_object_get(o, "round_trip_us")) > 0);
            f->rows++;
        }
        json_decref(o);
    }
    ck_assert_int_eq(pclose(p), 0);
    ck_assert_msg(!isnan(f->a_rt) && !isnan(f->a_msg), "%s printed no fit", cmd);
}

static void within(const char *what, double got, double want, double tol)
{
    printf("%-28s measured %12.4g   expected %12.4g   (%+.1f%%)\n", what, got, want,
           100.0 * (got - want) / want);
    ck_assert_msg(fabs(got - want) <= tol * want, "%s = %.4g, expected %.4g within %.0f%%", what,
                  got, want, tol * 100);
}

START_TEST(recovers_a_and_b_of_an_emulated_link)
{
    fit_t base, paced, link;
    calibrate("--max 256KiB --reps 7", &base);
    char opts[256];
    /* the software's round trip on a paced link (its I/O path differs from unpaced loopback,
     * and costs more under sanitizers): the same link without latency */
    snprintf(opts, sizeof opts, "--max 256KiB --reps 7 --bandwidth %.0fbit --latency-us 0", RATE);
    calibrate(opts, &paced);
    snprintf(opts, sizeof opts, "--max 256KiB --reps 7 --bandwidth %.0fbit --latency-us %g", RATE,
             LAT_US);
    calibrate(opts, &link);
    ck_assert_int_eq(link.rows, 9); /* 1 KiB, 2 KiB, ... 256 KiB */
    printf("unpaced loopback: round trip a0 = %.1f us, b0 = %.3g ns/byte; paced, no latency: "
           "a = %.1f us\n",
           base.a_rt * 1e6, base.b_rt * 1e9, paced.a_rt * 1e6);
    within("round trip a (s)", link.a_rt, 2 * LAT_US * 1e-6 + paced.a_rt, 0.10);
    within("round trip b (s/byte)", link.b_rt, 2 * 8 / RATE + base.b_rt, 0.10);
    within("pipelined push b (s/byte)", link.b_msg, 8 / RATE, 0.10);
    /* the latency is paid once per burst, not per message */
    printf("%-28s measured %12.4g   (round trip a %.4g)\n", "pipelined push a (s)", link.a_msg,
           link.a_rt);
    ck_assert_msg(link.a_msg <= 0.05 * link.a_rt, "pipelined pushes pay %.4g s each", link.a_msg);
}
END_TEST

START_TEST(recovers_a_per_message_cost)
{
    fit_t base, link;
    char opts[256];
    /* the software's own per-message costs: the same link without msg_us */
    snprintf(opts, sizeof opts, "--max 256KiB --reps 5 --bandwidth %.0fbit --latency-us %g", RATE,
             LAT_US);
    calibrate(opts, &base);
    snprintf(opts, sizeof opts,
             "--max 256KiB --reps 5 --bandwidth %.0fbit --latency-us %g --msg-us %g", RATE, LAT_US,
             MSG_US);
    calibrate(opts, &link);
    ck_assert_int_eq(link.rows, 9);
    within("pipelined push a (s)", link.a_msg, MSG_US * 1e-6 + base.a_msg, 0.10);
    within("pipelined push b (s/byte)", link.b_msg, 8 / RATE, 0.10);
    within("one push a (s)", link.a_one, 2 * MSG_US * 1e-6 + base.a_one, 0.10);
    printf("%-28s measured %12.4g   (one push b %.4g, link %.4g)\n", "planner's c (s/byte)",
           link.c_plan, link.b_one, 8 / RATE);
    ck_assert(link.c_plan >= 0 && link.c_plan < 8 / RATE);
}
END_TEST

static Suite *calibrate_suite(void)
{
    Suite *s = suite_create("calibrate");
    TCase *tc = tcase_create("emulated");
    tcase_set_timeout(tc, 120);
    tcase_add_test(tc, recovers_a_and_b_of_an_emulated_link);
    tcase_add_test(tc, recovers_a_per_message_cost);
    suite_add_tcase(s, tc);
    return s;
}

ORDO_CK_MAIN(calibrate_suite)
