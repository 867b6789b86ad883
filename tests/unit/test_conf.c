/* Tests of common/conf: defaults, file parsing, file:line errors, overrides. */
#include "common/conf.h"
#include "ordo_check.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

START_TEST(defaults_are_documented_values)
{
    ordo__conf_t c;
    ordo__conf_defaults(&c);
    ck_assert_int_eq(c.servers, 1);
    ck_assert_int_eq(c.partition_bytes, 4 << 20);
    ck_assert_int_eq(c.policy_kind, ORDO_POLICY_FIFO);
    ck_assert_int_eq(c.enforce, ORDO_ENFORCE_AUTO);
    ck_assert_int_eq(c.pull, ORDO_PULL_AUTO);
    ck_assert_int_eq(c.credit_bytes, ORDO_CONF_AUTO_BYTES);
    ck_assert_str_eq(c.scheduler, "tcp://127.0.0.1:9100");
    ck_assert(c.bandwidth_bps == 0);
    ORDO_CK_OK(ordo__conf_validate(&c));
}
END_TEST

/* [push] calibrate plans merge groups, so it needs merged pushes and no plan from a file */
/* [output] stats_every: 0 (the default) is 1 up to 500 workers, then workers / 500 rounded
 * up; a number set is taken as it is; out of range is refused naming the key */
START_TEST(stats_every_auto_grows_with_the_workers)
{
    ordo__conf_t c;
    ordo__conf_defaults(&c);
    ck_assert_int_eq(c.stats_every, 0);
    const int workers[] = {1, 256, 500, 501, 1000, 1001, 10000};
    const int every[] = {1, 1, 1, 2, 2, 3, 20};
    for (int i = 0; i < 7; i++) {
        c.workers = workers[i];
        ck_assert_int_eq(ordo__conf_stats_every(&c), every[i]);
    }
    ORDO_CK_OK(ordo__conf_set(&c, "output.stats_every", "7", "test"));
    ck_assert_int_eq(ordo__conf_stats_every(&c), 7);
    ORDO_CK_ERR(ordo__conf_set(&c, "output.stats_every", "-1", "test"), ORDO_ERR_INVAL);
    ck_assert_ptr_nonnull(strstr(ordo__error_detail(), "stats_every"));
}
END_TEST

/* fault.heartbeat_ms widens above 1,000 members (workers and servers), by members / 1,000
 * rounded up, never past half of fault.timeout_ms */
START_TEST(heartbeats_widen_above_a_thousand_members)
{
    ordo__conf_t c;
    ordo__conf_defaults(&c); /* 500 ms, timeout 5000 ms, 1 server */
    const int workers[] = {2, 999, 1000, 2000, 4000, 10000};
    const int beat[] = {500, 500, 1000, 1500, 2500, 2500};
    for (int i = 0; i < 6; i++) {
        c.workers = workers[i];
        ck_assert_int_eq(ordo__conf_heartbeat_ms(&c), beat[i]);
    }
    c.timeout_ms = 60000; /* a longer timeout lets them widen further */
    ck_assert_int_eq(ordo__conf_heartbeat_ms(&c), 500 * 11);
    c.workers = 999;
    c.max_workers = 3000; /* a run that may grow counts the workers it may have */
    ck_assert_int_eq(ordo__conf_heartbeat_ms(&c), 2000);
}
END_TEST

START_TEST(calibrate_needs_merged_pushes_planned_here)
{
    ordo__conf_t c;
    ordo__conf_defaults(&c);
    ck_assert(!c.calibrate);
    ck_assert_int_eq(c.calibrate_reps, 7);
    ORDO_CK_OK(ordo__conf_set(&c, "push.calibrate", "true", "test"));
    ORDO_CK_ERR(ordo__conf_validate(&c), ORDO_ERR_INVAL);
    ck_assert_ptr_nonnull(strstr(ordo__error_detail(), "push.calibrate = true needs push.mode = merged"));
    ORDO_CK_OK(ordo__conf_set(&c, "push.mode", "merged", "test"));
    ORDO_CK_OK(ordo__conf_validate(&c));
    ORDO_CK_OK(ordo__conf_set(&c, "push.merge", "file:plan.json", "test"));
    ORDO_CK_ERR(ordo__conf_validate(&c), ORDO_ERR_INVAL);
    ck_assert_ptr_nonnull(strstr(ordo__error_detail(), "push.merge = file:plan.json brings its own"));
    ck_assert_int_ne(ordo__conf_set(&c, "push.calibrate_reps", "0", "test"), 0);
}
END_TEST

/* [fault] resume goes on from a model job's checkpoint: not with other initial values, not
 * for sparse pushes or the synthetic job */
START_TEST(resume_refuses_what_checkpoints_do_not_hold)
{
    ordo__conf_t c;
    ordo__conf_defaults(&c);
    ORDO_CK_OK(ordo__conf_set(&c, "model.trainer", "mlp", "test"));
    ORDO_CK_OK(ordo__conf_set(&c, "model.compute", "cpu", "test"));
    ORDO_CK_OK(ordo__conf_set(&c, "fault.resume", "runs/r1", "test"));
    ORDO_CK_OK(ordo__conf_validate(&c));
    ORDO_CK_OK(ordo__conf_set(&c, "model.init", "params.bin", "test"));
    ORDO_CK_ERR(ordo__conf_validate(&c), ORDO_ERR_INVAL);
    ck_assert_ptr_nonnull(strstr(ordo__error_detail(), "model.init cannot give others"));
    ORDO_CK_OK(ordo__conf_set(&c, "model.init", "", "test"));
    ORDO_CK_OK(ordo__conf_set(&c, "push.mode", "sparse", "test")); /* residuals are saved */
    ORDO_CK_OK(ordo__conf_validate(&c));
    ORDO_CK_OK(ordo__conf_set(&c, "push.mode", "dense", "test"));
    ORDO_CK_OK(ordo__conf_set(&c, "model.trainer", "synthetic", "test"));
    ORDO_CK_OK(ordo__conf_set(&c, "model.compute", "emulate", "test"));
    ORDO_CK_ERR(ordo__conf_validate(&c), ORDO_ERR_INVAL);
    ck_assert_ptr_nonnull(strstr(ordo__error_detail(), "the synthetic job keeps no checkpoints"));
}
END_TEST

/* fault.worker = restart | shrink is refused with what a rejoin cannot follow, naming it */
START_TEST(fault_worker_modes_are_checked)
{
    ordo__conf_t c;
    ordo__conf_defaults(&c);
    ORDO_CK_OK(ordo__conf_set(&c, "fault.worker", "restart", "test"));
    ORDO_CK_OK(ordo__conf_validate(&c));
    ck_assert_int_eq(c.fault_worker, ORDO_FAULT_RESTART);
    ck_assert_int_eq(c.restarts, 3);
    ORDO_CK_OK(ordo__conf_set(&c, "sync.mode", "ssp", "test"));
    ORDO_CK_ERR(ordo__conf_validate(&c), ORDO_ERR_INVAL);
    ck_assert_ptr_nonnull(
        strstr(ordo__error_detail(), "fault.worker = restart needs sync.mode = bsp"));
    ORDO_CK_OK(ordo__conf_set(&c, "sync.mode", "bsp", "test"));
    ORDO_CK_OK(ordo__conf_set(&c, "fault.worker", "shrink", "test"));
    ORDO_CK_OK(ordo__conf_set(&c, "cluster.workers", "1", "test"));
    ORDO_CK_ERR(ordo__conf_validate(&c), ORDO_ERR_INVAL);
    ck_assert_ptr_nonnull(strstr(ordo__error_detail(), "cluster.workers >= 2"));
    ck_assert_int_ne(ordo__conf_set(&c, "fault.worker", "retry", "test"), 0);
}
END_TEST

/* fault.scheduler = restart is refused with what a new scheduler cannot rebuild, naming the
 * pair and why */
START_TEST(fault_scheduler_modes_are_checked)
{
    ordo__conf_t c;
    ordo__conf_defaults(&c);
    ck_assert_int_eq(c.fault_scheduler, ORDO_SCHED_STOP);
    ORDO_CK_OK(ordo__conf_set(&c, "fault.scheduler", "restart", "test"));
    ORDO_CK_OK(ordo__conf_set(&c, "cluster.workers", "2", "test"));
    ORDO_CK_OK(ordo__conf_validate(&c));
    ck_assert_int_eq(c.scheduler_wait_ms, 60000);
    /* the worker policies and growth are rebuilt from the members (scheduler/restart_members.c) */
    ORDO_CK_OK(ordo__conf_set(&c, "fault.worker", "shrink", "test"));
    ORDO_CK_OK(ordo__conf_validate(&c));
    ORDO_CK_OK(ordo__conf_set(&c, "fault.worker", "restart", "test"));
    ORDO_CK_OK(ordo__conf_validate(&c));
    ORDO_CK_OK(ordo__conf_set(&c, "fault.max_workers", "3", "test"));
    ORDO_CK_OK(ordo__conf_set(&c, "model.trainer", "declared", "test"));
    ORDO_CK_OK(ordo__conf_validate(&c));
    ORDO_CK_OK(ordo__conf_set(&c, "fault.max_workers", "0", "test"));
    ORDO_CK_OK(ordo__conf_set(&c, "model.trainer", "synthetic", "test"));
    ORDO_CK_OK(ordo__conf_set(&c, "fault.worker", "shrink", "test"));
    ORDO_CK_OK(ordo__conf_set(&c, "sync.batches", "on", "test"));
    ORDO_CK_ERR(ordo__conf_validate(&c), ORDO_ERR_INVAL);
    ck_assert_ptr_nonnull(strstr(ordo__error_detail(), "fault.worker = shrink and the batch "
                                                      "service (sync.batches): the batches a dead "
                                                      "worker leased"));
    ORDO_CK_OK(ordo__conf_set(&c, "sync.batches", "auto", "test"));
    ORDO_CK_OK(ordo__conf_set(&c, "fault.worker", "abort", "test"));
    /* rebuilt from the members: the batch service, backup workers, replicated servers */
    ORDO_CK_OK(ordo__conf_set(&c, "sync.mode", "asp", "test")); /* the batch service by default */
    ORDO_CK_OK(ordo__conf_validate(&c));
    ORDO_CK_OK(ordo__conf_set(&c, "sync.mode", "bsp", "test"));
    ORDO_CK_OK(ordo__conf_set(&c, "sync.backup", "1", "test"));
    ORDO_CK_OK(ordo__conf_validate(&c));
    ORDO_CK_OK(ordo__conf_set(&c, "sync.backup", "0", "test"));
    ORDO_CK_OK(ordo__conf_set(&c, "cluster.servers", "2", "test"));
    ORDO_CK_OK(ordo__conf_set(&c, "fault.replicas", "2", "test"));
    ORDO_CK_OK(ordo__conf_validate(&c));
    ORDO_CK_OK(ordo__conf_set(&c, "fault.replicas", "1", "test"));
    ORDO_CK_OK(ordo__conf_set(&c, "push.mode", "sparse", "test"));
    ORDO_CK_OK(ordo__conf_set(&c, "model.trainer", "mlp", "test"));
    ORDO_CK_OK(ordo__conf_set(&c, "model.compute", "cpu", "test"));
    ORDO_CK_ERR(ordo__conf_validate(&c), ORDO_ERR_INVAL);
    ck_assert_ptr_nonnull(strstr(ordo__error_detail(), "with push.mode = sparse: the sparse "
                                                      "coordinator"));
    ck_assert_int_ne(ordo__conf_set(&c, "fault.scheduler", "retry", "test"), 0);
}
END_TEST

/* the effective conf as printed (--print-conf, with its help comments) reads back as the same
 * conf: ordo-launch copies it to other hosts */
START_TEST(printed_conf_reads_back)
{
    ordo__conf_t c, d;
    ordo__conf_defaults(&c);
    ORDO_CK_OK(ordo__conf_set(&c, "push.mode", "merged", "test"));
    ORDO_CK_OK(ordo__conf_set(&c, "net.bandwidth", "10gbit", "test"));
    ORDO_CK_OK(ordo__conf_set(&c, "model.iterations", "77", "test"));
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    ck_assert_ptr_nonnull(f);
    ordo__conf_print(&c, f, true);
    fclose(f);
    for (char *line = text; *line;) { /* no line an INI reader would cut */
        char *end = strchr(line, '\n');
        ck_assert_ptr_nonnull(end);
        ck_assert_int_le(end - line, 120);
        line = end + 1;
    }
    ordo__conf_defaults(&d);
    ORDO_CK_OK(ordo__conf_load_string(&d, text, "<printed>"));
    ck_assert_int_eq(d.push_mode, ORDO_PUSH_MERGED);
    ck_assert(d.bandwidth_bps == 10e9);
    ck_assert_int_eq(d.iterations, 77);
    free(text);
}
END_TEST

START_TEST(file_values_are_parsed)
{
    ordo__conf_t c;
    ordo__conf_defaults(&c);
    const char *text = "; comment\n[cluster]\nservers = 2\nworkers = 3\n"
                       "[order]\npolicy = tao\nenforce = greedy\npartition_bytes = 1MiB\n"
                       "[net]\nbandwidth = 1gbit\nlatency_us = 50\n"
                       "[model]\nforward_only = true\n";
    ORDO_CK_OK(ordo__conf_load_string(&c, text, "t.ini"));
    ck_assert_int_eq(c.servers, 2);
    ck_assert_int_eq(c.workers, 3);
    ck_assert_int_eq(c.policy_kind, ORDO_POLICY_TAO);
    ck_assert_int_eq(c.enforce, ORDO_ENFORCE_GREEDY);
    ck_assert_int_eq(c.partition_bytes, 1 << 20);
    ck_assert_double_eq(c.bandwidth_bps, 1e9);
    ck_assert_double_eq(c.latency_us, 50);
    ck_assert(c.forward_only);
}
END_TEST

static void expect_error(const char *text, const char *want)
{
    ordo__conf_t c;
    ordo__conf_defaults(&c);
    ORDO_CK_ERR(ordo__conf_load_string(&c, text, "bad.ini"), ORDO_ERR_FORMAT);
    ck_assert_msg(strstr(ordo__error_detail(), want) != NULL, "detail '%s' lacks '%s'",
                  ordo__error_detail(), want);
}

START_TEST(errors_name_file_and_line)
{
    expect_error("[cluster]\nservers = 2\n\n[bogus]\nx = 1\n", "bad.ini:4: unknown section [bogus]");
    expect_error("[cluster]\nservers = 2\nserverz = 3\n", "bad.ini:3: unknown key 'serverz'");
    expect_error("[cluster]\nworkers = many\n", "bad.ini:2: cluster.workers: 'many' is not an integer");
    expect_error("[cluster]\nworkers = 0\n", "bad.ini:2: cluster.workers: 0 is out of range");
    expect_error("[order]\n\npolicy = best\n", "bad.ini:3: order.policy: 'best' is not one of");
    expect_error("[net]\nbandwidth = fast\n", "bad.ini:2: net.bandwidth:");
    expect_error("[order]\nenforce = maybe\n", "bad.ini:2: order.enforce: 'maybe' is not one of strict|greedy|auto");
    expect_error("[push]\nmerge = bytes:lots\n", "bad.ini:2: push.merge:");
    expect_error("[push]\nmerge = file:\n", "bad.ini:2: push.merge: 'file:' is not one of");
    expect_error("[push]\nmerge_margin = -1\n", "bad.ini:2: push.merge_margin:");
    expect_error("[cluster]\nthis line has no equals sign\n", "bad.ini:2: syntax error");
}
END_TEST

START_TEST(missing_file_is_reported)
{
    ordo__conf_t c;
    ordo__conf_defaults(&c);
    ORDO_CK_ERR(ordo__conf_load_file(&c, "/nonexistent/x.ini"), ORDO_ERR_NOTFOUND);
    ck_assert(strstr(ordo__error_detail(), "/nonexistent/x.ini") != NULL);
}
END_TEST

START_TEST(overrides_from_flags_and_env)
{
    ordo__conf_t c;
    ordo__conf_defaults(&c);
    ORDO_CK_OK(ordo__conf_set(&c, "cluster.workers", "7", "--cluster.workers"));
    ck_assert_int_eq(c.workers, 7);
    ORDO_CK_OK(ordo__conf_set(&c, "lr", "0.5", "--lr"));
    ck_assert_double_eq(c.lr, 0.5);
    ORDO_CK_ERR(ordo__conf_set(&c, "nope", "1", "--nope"), ORDO_ERR_INVAL);
    ck_assert(strstr(ordo__error_detail(), "unknown key 'nope'"));
    setenv("ORDO_CLUSTER_SERVERS", "5", 1);
    ORDO_CK_OK(ordo__conf_apply_env(&c));
    ck_assert_int_eq(c.servers, 5);
    setenv("ORDO_CLUSTER_SERVERS", "-5", 1);
    ORDO_CK_ERR(ordo__conf_apply_env(&c), ORDO_ERR_INVAL);
    ck_assert(strstr(ordo__error_detail(), "ORDO_CLUSTER_SERVERS"));
    unsetenv("ORDO_CLUSTER_SERVERS");
}
END_TEST

START_TEST(cli_order_is_defaults_file_env_flags)
{
    char path[] = "/tmp/ordo-conf-XXXXXX";
    int fd = mkstemp(path);
    ck_assert_int_ge(fd, 0);
    FILE *fp = fdopen(fd, "w");
    fputs("[cluster]\nworkers = 2\nservers = 2\n", fp);
    fclose(fp);
    setenv("ORDO_CLUSTER_SERVERS", "3", 1);
    char *argv[] = {"prog", "-c", path, "--cluster.workers=4", NULL};
    ordo__conf_t c;
    ORDO_CK_OK(ordo__conf_cli(&c, 4, argv, "prog", "-c CONF"));
    ck_assert_int_eq(c.workers, 4);
    ck_assert_int_eq(c.servers, 3);
    unsetenv("ORDO_CLUSTER_SERVERS");
    char *bad[] = {"prog", "stray", NULL};
    ck_assert_int_lt(ordo__conf_cli(&c, 2, bad, "prog", "-c CONF"), 0);
    unlink(path);
}
END_TEST

START_TEST(units_parse)
{
    int64_t b;
    double r;
    ORDO_CK_OK(ordo__conf_parse_bytes("25MiB", &b));
    ck_assert_int_eq(b, 25 << 20);
    ORDO_CK_OK(ordo__conf_parse_bytes("64k", &b));
    ck_assert_int_eq(b, 65536);
    ORDO_CK_ERR(ordo__conf_parse_bytes("1.5", &b), ORDO_ERR_INVAL);
    ORDO_CK_ERR(ordo__conf_parse_bytes("-3", &b), ORDO_ERR_INVAL);
    ORDO_CK_OK(ordo__conf_parse_rate("100mbit", &r));
    ck_assert_double_eq(r, 1e8);
    ORDO_CK_OK(ordo__conf_parse_rate("10gbit", &r));
    ck_assert_double_eq(r, 1e10);
    ORDO_CK_ERR(ordo__conf_parse_rate("100", &r), ORDO_ERR_INVAL);
}
END_TEST

START_TEST(json_dump_has_every_section)
{
    ordo__conf_t c;
    ordo__conf_defaults(&c);
    char *s = ordo__conf_to_json(&c);
    ck_assert_ptr_nonnull(s);
    ck_assert(strstr(s, "\"cluster\":{"));
    ck_assert(strstr(s, "\"policy\":\"fifo\""));
    ck_assert(strstr(s, "\"fault\":{"));
    free(s);
}
END_TEST


START_TEST(sync_and_straggle_keys_are_checked)
{
    ordo__conf_t c;
    ordo__conf_defaults(&c);
    ck_assert_int_eq(c.sync_mode, ORDO_SYNC_BSP);
    ck_assert_int_eq(c.backup, 0);
    c.workers = 4;
    /* a negative staleness is refused by the key's bounds, with the key named */
    ck_assert_int_eq(ordo__conf_set(&c, "sync.staleness", "-1", "--sync.staleness"), ORDO_ERR_INVAL);
    ck_assert(strstr(ordo__error_detail(), "staleness"));
    ORDO_CK_OK(ordo__conf_set(&c, "sync.backup", "4", "test"));
    ck_assert_int_eq(ordo__conf_validate(&c), ORDO_ERR_INVAL);
    ck_assert(strstr(ordo__error_detail(), "sync.backup"));
    ORDO_CK_OK(ordo__conf_set(&c, "sync.backup", "1", "test"));
    ORDO_CK_OK(ordo__conf_validate(&c));
    ORDO_CK_OK(ordo__conf_set(&c, "sync.mode", "asp", "test"));
    ck_assert_int_eq(ordo__conf_validate(&c), ORDO_ERR_INVAL); /* backup needs bsp */
    c.backup = 0;
    ORDO_CK_OK(ordo__conf_validate(&c));
    ORDO_CK_OK(ordo__conf_set(&c, "straggle.ranks", "1, 3", "test"));
    ORDO_CK_OK(ordo__conf_validate(&c));
    ck_assert(ordo__conf_is_straggler(&c, 1) && ordo__conf_is_straggler(&c, 3));
    ck_assert(!ordo__conf_is_straggler(&c, 0) && !ordo__conf_is_straggler(&c, 2));
    ORDO_CK_OK(ordo__conf_set(&c, "straggle.ranks", "1,4", "test"));
    ck_assert_int_eq(ordo__conf_validate(&c), ORDO_ERR_INVAL);
    ck_assert(strstr(ordo__error_detail(), "straggle.ranks"));
    ORDO_CK_OK(ordo__conf_set(&c, "straggle.ranks", "one", "test"));
    ck_assert_int_eq(ordo__conf_validate(&c), ORDO_ERR_INVAL);
    /* transient delays: about `probability` of the iterations, the same ones every time */
    c.straggle_probability = 0.25;
    c.straggle_delay_ms = 7;
    int hits = 0;
    for (int64_t t = 0; t < 4000; t++) {
        double d = ordo__conf_straggle_delay_ms(&c, 2, t);
        ck_assert(d == 0 || d == 7);
        ck_assert(d == ordo__conf_straggle_delay_ms(&c, 2, t));
        hits += d > 0;
    }
    ck_assert_msg(hits > 900 && hits < 1100, "%d of 4000 delayed", hits);
}
END_TEST

/* [fault] replicas: at most the servers; dense and merged pushes, every sync mode, backup
 * workers, shm host groups and checkpoints are replicated; sparse pushes and nccl groups are
 * refused, each with its own reason */
START_TEST(replicas_within_the_servers_and_dense_bsp)
{
    ordo__conf_t c;
    ordo__conf_defaults(&c);
    ck_assert_int_eq(c.replicas, 1);
    ck_assert_int_ne(ordo__conf_set(&c, "fault.replicas", "4", "test"), 0);
    ORDO_CK_OK(ordo__conf_set(&c, "fault.replicas", "3", "test"));
    ORDO_CK_ERR(ordo__conf_validate(&c), ORDO_ERR_INVAL);
    ck_assert_ptr_nonnull(strstr(ordo__error_detail(), "fault.replicas (3) must be at most cluster.servers (1)"));
    ORDO_CK_OK(ordo__conf_set(&c, "cluster.servers", "3", "test"));
    ORDO_CK_OK(ordo__conf_validate(&c));
    ORDO_CK_OK(ordo__conf_set(&c, "push.mode", "merged", "test"));
    ORDO_CK_OK(ordo__conf_validate(&c));
    ORDO_CK_OK(ordo__conf_set(&c, "model.trainer", "mlp", "test"));
    ORDO_CK_OK(ordo__conf_set(&c, "model.compute", "cpu", "test"));
    ORDO_CK_OK(ordo__conf_set(&c, "push.mode", "sparse", "test"));
    ORDO_CK_ERR(ordo__conf_validate(&c), ORDO_ERR_INVAL);
    ck_assert_ptr_nonnull(strstr(ordo__error_detail(), "fault.replicas = 3 with push.mode = sparse is not supported: the servers' sparse regions"));
    ORDO_CK_OK(ordo__conf_set(&c, "push.mode", "dense", "test"));
    ORDO_CK_OK(ordo__conf_set(&c, "sync.backup", "1", "test"));
    ORDO_CK_OK(ordo__conf_set(&c, "cluster.workers", "2", "test"));
    ORDO_CK_OK(ordo__conf_validate(&c));
    ORDO_CK_OK(ordo__conf_set(&c, "sync.backup", "0", "test"));
    ORDO_CK_OK(ordo__conf_set(&c, "fault.checkpoint_every", "10", "test"));
    ORDO_CK_OK(ordo__conf_validate(&c));
    ORDO_CK_OK(ordo__conf_set(&c, "fault.checkpoint_every", "0", "test"));
    ORDO_CK_OK(ordo__conf_set(&c, "sync.mode", "asp", "test"));
    ORDO_CK_OK(ordo__conf_validate(&c));
    ORDO_CK_OK(ordo__conf_set(&c, "sync.mode", "ssp", "test"));
    ORDO_CK_OK(ordo__conf_validate(&c));
    ORDO_CK_OK(ordo__conf_set(&c, "sync.mode", "bsp", "test"));
    ORDO_CK_OK(ordo__conf_set(&c, "intra.backend", "shm", "test"));
    ORDO_CK_OK(ordo__conf_set(&c, "cluster.local_size", "2", "test"));
    ORDO_CK_OK(ordo__conf_validate(&c));
    ORDO_CK_OK(ordo__conf_set(&c, "intra.backend", "nccl", "test"));
    ORDO_CK_ERR(ordo__conf_validate(&c), ORDO_ERR_INVAL);
    ck_assert_ptr_nonnull(strstr(ordo__error_detail(), "fault.replicas = 3 with intra.backend = nccl is not supported"));
}
END_TEST

/* push.compression: a codec spec, checked where it is read; the pairs it cannot serve are
 * refused naming both keys */
START_TEST(compression_specs_and_their_pairs_are_checked)
{
    ordo__conf_t c;
    ordo__conf_defaults(&c);
    ck_assert_str_eq(c.compression, "none");
    const char *good[] = {"bf16", "fp16", "onebit", "topk:0.01", "randomk:1000", "onebit,ef=none",
                          "bf16,ef=vanilla", "auto", "auto:fp16"};
    for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
        ORDO_CK_OK(ordo__conf_set(&c, "push.compression", good[i], "test"));
        ORDO_CK_OK(ordo__conf_validate(&c));
    }
    const struct {
        const char *spec, *says;
    } bad[] = {
        {"zstd", "push.compression: compression \"zstd\": unknown codec \"zstd\""},
        {"topk", "topk needs k"},
        {"topk:0", "k \"0\" is out of range"},
        {"topk:1.5", "k \"1.5\" is out of range"},
        {"randomk:-3", "k \"-3\" is out of range"},
        {"bf16:4", "bf16 takes no k"},
        {"onebit,ef=maybe", "unknown option \"ef=maybe\""},
        {"auto:onebit", "auto chooses between float32 and a 16-bit cast"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        ORDO_CK_OK(ordo__conf_set(&c, "push.compression", bad[i].spec, "test"));
        ORDO_CK_ERR(ordo__conf_validate(&c), ORDO_ERR_INVAL);
        ck_assert_msg(strstr(ordo__error_detail(), bad[i].says), "%s: %s", bad[i].spec,
                      ordo__error_detail());
    }
    ORDO_CK_OK(ordo__conf_set(&c, "push.compression", "onebit", "test"));
    /* error feedback under restart: the residuals are kept for the restarted worker */
    ORDO_CK_OK(ordo__conf_set(&c, "fault.worker", "restart", "test"));
    ORDO_CK_OK(ordo__conf_validate(&c));
    ORDO_CK_OK(ordo__conf_set(&c, "push.compression", "onebit,ef=none", "test"));
    ORDO_CK_OK(ordo__conf_validate(&c));
    ORDO_CK_OK(ordo__conf_set(&c, "fault.worker", "abort", "test"));
    ORDO_CK_OK(ordo__conf_set(&c, "push.compression", "topk:0.1", "test"));
    ORDO_CK_OK(ordo__conf_set(&c, "cluster.servers", "2", "test"));
    ORDO_CK_OK(ordo__conf_set(&c, "fault.replicas", "2", "test"));
    ORDO_CK_ERR(ordo__conf_validate(&c), ORDO_ERR_INVAL);
    ck_assert_ptr_nonnull(strstr(ordo__error_detail(), "does not go with fault.replicas = 2"));
    ORDO_CK_OK(ordo__conf_set(&c, "push.compression", "bf16", "test"));
    ORDO_CK_OK(ordo__conf_validate(&c));
    ORDO_CK_OK(ordo__conf_set(&c, "fault.replicas", "1", "test"));
    ORDO_CK_OK(ordo__conf_set(&c, "model.trainer", "mlp", "test"));
    ORDO_CK_OK(ordo__conf_set(&c, "model.compute", "cpu", "test"));
    ORDO_CK_OK(ordo__conf_set(&c, "push.mode", "sparse", "test"));
    ORDO_CK_ERR(ordo__conf_validate(&c), ORDO_ERR_INVAL);
    ck_assert_ptr_nonnull(strstr(ordo__error_detail(), "does not go with push.mode = sparse"));
}
END_TEST

/* auto: a planned policy in training pulls early and releases greedily; fifo, none and
 * forward-only runs keep start and strict; a value written out stays as written */
START_TEST(auto_order_settings_follow_the_policy)
{
    ordo__conf_t c;
    ordo__conf_defaults(&c);
    ck_assert_int_eq(ordo__conf_enforce_mode(&c), ORDO_ENFORCE_STRICT);
    ck_assert_int_eq(ordo__conf_pull_mode(&c), ORDO_PULL_START);
    ck_assert_int_eq(ordo__conf_credit_bytes(&c), 1250000); /* 1 ms of 10gbit */
    const char *planned[] = {"tio", "tao", "search", "file:o.json", "layer"};
    for (int i = 0; i < 5; i++) {
        ORDO_CK_OK(ordo__conf_set(&c, "order.policy", planned[i], "test"));
        ck_assert_int_eq(ordo__conf_enforce_mode(&c), ORDO_ENFORCE_GREEDY);
        ck_assert_int_eq(ordo__conf_pull_mode(&c), ORDO_PULL_EARLY);
    }
    ORDO_CK_OK(ordo__conf_set(&c, "model.forward_only", "true", "test"));
    ck_assert_int_eq(ordo__conf_enforce_mode(&c), ORDO_ENFORCE_STRICT);
    ck_assert_int_eq(ordo__conf_pull_mode(&c), ORDO_PULL_START);
    ORDO_CK_OK(ordo__conf_set(&c, "model.forward_only", "false", "test"));
    ORDO_CK_OK(ordo__conf_set(&c, "intra.backend", "shm", "test"));
    ORDO_CK_OK(ordo__conf_set(&c, "cluster.local_size", "2", "test"));
    ck_assert_int_eq(ordo__conf_pull_mode(&c), ORDO_PULL_START); /* host groups need start */
    ORDO_CK_OK(ordo__conf_set(&c, "intra.backend", "none", "test"));
    ORDO_CK_OK(ordo__conf_set(&c, "order.enforce", "strict", "test"));
    ORDO_CK_OK(ordo__conf_set(&c, "order.pull", "start", "test"));
    ORDO_CK_OK(ordo__conf_set(&c, "net.bandwidth", "100mbit", "test"));
    ck_assert_int_eq(ordo__conf_enforce_mode(&c), ORDO_ENFORCE_STRICT);
    ck_assert_int_eq(ordo__conf_pull_mode(&c), ORDO_PULL_START);
    ck_assert_int_eq(ordo__conf_credit_bytes(&c), 65536); /* 12500 bytes, raised to the floor */
    ORDO_CK_OK(ordo__conf_set(&c, "order.credit_bytes", "0", "test"));
    ck_assert_int_eq(ordo__conf_credit_bytes(&c), 0);
    ORDO_CK_OK(ordo__conf_set(&c, "order.credit_bytes", "auto", "test"));
    ORDO_CK_OK(ordo__conf_set(&c, "order.enforce", "auto", "test"));
    ORDO_CK_OK(ordo__conf_set(&c, "order.pull", "auto", "test"));
    ordo__conf_resolve(&c);
    ck_assert_int_eq(c.enforce, ORDO_ENFORCE_GREEDY);
    ck_assert_int_eq(c.pull, ORDO_PULL_EARLY);
    ck_assert_int_eq(c.credit_bytes, ORDO_CONF_AUTO_BYTES); /* the scheduler tunes it */
    ck_assert(ordo__conf_step_tuned(&c));
    ck_assert_int_eq(ordo__conf_segment_bytes(&c), 1 << 20);
    ordo__conf_resolve(&c); /* idempotent */
    ck_assert_int_eq(c.enforce, ORDO_ENFORCE_GREEDY);
    ORDO_CK_OK(ordo__conf_set(&c, "push.mode", "merged", "test"));
    ck_assert(!ordo__conf_step_tuned(&c));
    ORDO_CK_OK(ordo__conf_set(&c, "push.mode", "dense", "test"));
    ORDO_CK_OK(ordo__conf_set(&c, "order.segment_bytes", "0", "test"));
    ORDO_CK_OK(ordo__conf_set(&c, "order.credit_bytes", "1MiB", "test"));
    ck_assert(!ordo__conf_step_tuned(&c));
    ORDO_CK_ERR(ordo__conf_set(&c, "order.partition_bytes", "auto", "test"), ORDO_ERR_INVAL);
}
END_TEST

static Suite *conf_suite(void)
{
    Suite *s = suite_create("conf");
    TCase *tc = tcase_create("defaults");
    tcase_add_test(tc, defaults_are_documented_values);
    suite_add_tcase(s, tc);
    tc = tcase_create("file");
    tcase_add_test(tc, file_values_are_parsed);
    tcase_add_test(tc, errors_name_file_and_line);
    tcase_add_test(tc, missing_file_is_reported);
    suite_add_tcase(s, tc);
    tc = tcase_create("overrides");
    tcase_add_test(tc, overrides_from_flags_and_env);
    tcase_add_test(tc, cli_order_is_defaults_file_env_flags);
    suite_add_tcase(s, tc);
    tc = tcase_create("units");
    tcase_add_test(tc, units_parse);
    tcase_add_test(tc, json_dump_has_every_section);
    tcase_add_test(tc, calibrate_needs_merged_pushes_planned_here);
    tcase_add_test(tc, printed_conf_reads_back);
    tcase_add_test(tc, auto_order_settings_follow_the_policy);
    tcase_add_test(tc, resume_refuses_what_checkpoints_do_not_hold);
    tcase_add_test(tc, fault_worker_modes_are_checked);
    tcase_add_test(tc, fault_scheduler_modes_are_checked);
    tcase_add_test(tc, sync_and_straggle_keys_are_checked);
    tcase_add_test(tc, replicas_within_the_servers_and_dense_bsp);
    tcase_add_test(tc, compression_specs_and_their_pairs_are_checked);
    tcase_add_test(tc, stats_every_auto_grows_with_the_workers);
    tcase_add_test(tc, heartbeats_widen_above_a_thousand_members);
    suite_add_tcase(s, tc);
    return s;
}

ORDO_CK_MAIN(conf_suite)
