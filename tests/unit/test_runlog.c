/* Tests of scheduler/runlog's metrics.jsonl when it cannot be written (a full disk): no record
 * is torn or lost; those that could not be written go out, in order, once there is room. The
 * full disk is a file-size limit (RLIMIT_FSIZE, SIGXFSZ ignored: writes past it fail with
 * EFBIG, or stop short at it), set in Check's forked child. */
#include "scheduler/runlog.h"
#include "ordo_check.h"

#include <jansson.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

/* add records iteration iter (no Check assertion: Check's own messages to the parent are
 * written to a file, which the limit would cut) */
static int add(ordo__runlog_t *r, int64_t iter)
{
    ordo__iter_stats_t s;
    memset(&s, 0, sizeof s);
    s.iter = iter;
    s.step_ms = 1.5;
    s.efficiency = NAN;
    s.loss = NAN;
    int rc = ordo__runlog_add(r, &s);
    ordo__runlog_flush(r); /* as the scheduler does after each STATS message */
    return rc;
}

static off_t size_of(const char *path)
{
    struct stat st;
    ck_assert_int_eq(stat(path, &st), 0);
    return st.st_size;
}

START_TEST(a_full_disk_tears_and_loses_no_record)
{
    char dir[] = "/tmp/ordo-runlog-XXXXXX", path[64];
    ck_assert_ptr_nonnull(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/metrics.jsonl", dir);
    ordo__conf_t conf;
    ordo__conf_defaults(&conf);
    ordo__runlog_t *r = NULL;
    ORDO_CK_OK(ordo__runlog_new(dir, &conf, 1, &r));
    for (int i = 0; i < 5; i++)
        ORDO_CK_OK(add(r, i));
    off_t before = size_of(path);
    /* room for part of one more line: that write stops short and is cut off again */
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit lim, old;
    ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, &old), 0);
    lim = old;
    lim.rlim_cur = (rlim_t)before + 40;
    int set = setrlimit(RLIMIT_FSIZE, &lim), rc = 0;
    for (int i = 5; i < 15; i++)
        rc |= add(r, i);
    struct stat st;
    int got = stat(path, &st);
    int reset = setrlimit(RLIMIT_FSIZE, &old);
    ck_assert_int_eq(set, 0);
    ck_assert_int_eq(reset, 0);
    ORDO_CK_OK(rc);
    ck_assert_int_eq(got, 0);
    ck_assert_int_eq(st.st_size, before); /* nothing torn */
    ORDO_CK_OK(add(r, 15)); /* room again: the ten kept back go first */
    ordo__runlog_destroy(&r);
    FILE *f = fopen(path, "r");
    ck_assert_ptr_nonnull(f);
    char line[4096];
    int64_t want = 0;
    while (fgets(line, sizeof line, f)) {
        json_t *o = json_loads(line, 0, NULL);
        ck_assert_msg(o != NULL, "line %lld is not JSON: %s", (long long)want, line);
        ck_assert_int_eq(json_integer_value(json_object_get(o, "iter")), want);
        json_decref(o);
        want++;
    }
    fclose(f);
    ck_assert_int_eq(want, 16);
    unlink(path);
    char summary[64];
    snprintf(summary, sizeof summary, "%s/summary.json", dir);
    unlink(summary);
    rmdir(dir);
}
END_TEST

static Suite *runlog_suite(void)
{
    Suite *s = suite_create("runlog");
    TCase *tc = tcase_create("disk");
    tcase_add_test(tc, a_full_disk_tears_and_loses_no_record);
    suite_add_tcase(s, tc);
    return s;
}

ORDO_CK_MAIN(runlog_suite)
