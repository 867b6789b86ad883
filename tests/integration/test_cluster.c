/* Integration test: 1 scheduler + 2 servers (real ordo processes over TCP on loopback) and
 * 3 workers (forked processes using the worker library) run 20 iterations over tensors of
 * mixed sizes, one above partition_bytes. Every pulled value is compared with the value
 * this test computes on its own, and every push and pull must complete (nothing lost). The
 * second run pushes the odd keys with ordo__ps_pushpull (the pull of the next iteration
 * rides on the push) and the even keys with separate push and pull, in the same cluster;
 * the third does the same with a dedicated I/O thread in every process. A fourth run checks
 * ordo__ps_relay (how the nccl backend's ids reach a host group): each of the 3 workers
 * roots one blocking broadcast through the scheduler and every worker gets every root's
 * bytes. */
#include "cluster_util.h"
#include "common/conf.h"
#include "common/error.h"
#include "common/log.h"
#include "client/ps.h"
#include "tests/unit/ordo_check.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define W     3
#define S     2
#define ITERS 20
#define LR    0.01

static const int64_t sizes[] = {1, 1000, 65536, 1500000, 3000}; /* floats; 6 MB > 4 MiB */
#define NK (int)(sizeof sizes / sizeof sizes[0])

/* this test's own model of the server: v0 given, worker w pushes g = (w+1)*(t+1)+key at
 * iteration t, server does v -= lr * (sum over workers)/W */
static double init_value(int key, int64_t i)
{
    return 0.25 * key + 0.001 * (double)(i % 1000);
}

static double expected(int key, int64_t i, int t)
{
    double v = init_value(key, i);
    for (int s = 0; s < t; s++) {
        double sum = 0;
        for (int w = 0; w < W; w++)
            sum += (w + 1) * (s + 1) + key;
        v -= LR * sum / W;
    }
    return v;
}

/* wrong values of all keys at iteration t (counted, the first few printed) */
static int check_values(int rank, int t, float *const *val)
{
    int wrong = 0;
    for (int key = 0; key < NK; key++)
        for (int64_t i = 0; i < sizes[key]; i++) {
            double want = expected(key, i, t);
            if (!(fabs(val[key][i] - want) <= 1e-5 * (1 + fabs(want)))) {
                if (wrong < 3)
                    fprintf(stderr, "worker %d iter %d key %d [%lld]: %.8g != %.8g\n", rank, t, key,
                            (long long)i, val[key][i], want);
                wrong++;
            }
        }
    return wrong;
}

/* the body of one worker process; returns the number of wrong values (or -1). With fused,
 * odd keys go through ordo__ps_pushpull. */
static int worker_body(const char *sched, int fused, int io_thread)
{
    ordo__conf_t conf;
    ordo__conf_defaults(&conf);
    ordo__log_set_level(ORDO_LOG_WARN);
    if (strlen(sched) >= sizeof conf.scheduler) return -1;
    memcpy(conf.scheduler, sched, strlen(sched) + 1);
    conf.servers = S;
    conf.workers = W;
    conf.timeout_ms = 5000;
    conf.heartbeat_ms = 200;
    conf.io_thread = io_thread;
    ordo__ps_t *w;
    if (ordo__ps_new(&conf, &w) != 0) return -1;
    const ordo__keys_t *k = ordo__ps_keys(w);
    int rank = ordo__ps_rank(w), wrong = 0, pulls = 0, pushes = 0;
    if (k->n_keys != NK) return -1;
    float *val[NK], *grad[NK];
    for (int key = 0; key < NK; key++) {
        val[key] = malloc(sizeof(float) * (size_t)sizes[key]);
        grad[key] = malloc(sizeof(float) * (size_t)sizes[key]);
        for (int64_t i = 0; i < sizes[key]; i++)
            val[key][i] = (float)init_value(key, i);
        if (rank == 0 && ordo__ps_init(w, key, val[key]) != 0) return -1;
    }
    for (int t = 0; t < ITERS; t++) {
        int want_pulls = 0;
        for (int key = 0; key < NK; key++) {
            if (t > 0 && fused && key % 2) continue; /* pulled with the last push */
            memset(val[key], 0xff, sizeof(float) * (size_t)sizes[key]); /* NaN until pulled */
            if (ordo__ps_pull(w, key, val[key], t, key) != 0) return -1;
            want_pulls++;
        }
        ordo__ps_event_t ev;
        for (int n = 0; n < want_pulls; n++) {
            if (ordo__ps_poll(w, 20000, &ev) != 0 || ev.kind != ORDO__EV_PULL_DONE ||
                ev.iter != t)
                return -1;
            pulls++;
        }
        wrong += check_values(rank, t, val);
        int want_events = 0;
        for (int key = 0; key < NK; key++) {
            for (int64_t i = 0; i < sizes[key]; i++)
                grad[key][i] = (float)((rank + 1) * (t + 1) + key);
            if (fused && key % 2) {
                memset(val[key], 0xff, sizeof(float) * (size_t)sizes[key]);
                if (ordo__ps_pushpull(w, key, grad[key], val[key], t, key) != 0) return -1;
                want_events += 2;
            } else {
                if (ordo__ps_push(w, key, grad[key], t, key) != 0) return -1;
                want_events++;
            }
        }
        for (int n = 0; n < want_events; n++) {
            if (ordo__ps_poll(w, 20000, &ev) != 0) return -1;
            if (ev.kind == ORDO__EV_PUSH_DONE && ev.iter == t) {
                pushes++;
            } else if (ev.kind == ORDO__EV_PULL_DONE && ev.iter == t + 1 && fused && ev.key % 2) {
                pulls++; /* the fused pull of the next iteration */
            } else {
                fprintf(stderr, "worker %d iter %d: unexpected event %d key %d iter %lld\n", rank,
                        t, ev.kind, ev.key, (long long)ev.iter);
                return -1;
            }
        }
    }
    if (fused) { /* the fused keys hold iteration ITERS: pull the others and check all */
        ordo__ps_event_t ev;
        for (int key = 0; key < NK; key += 2) {
            if (ordo__ps_pull(w, key, val[key], ITERS, key) != 0) return -1;
            if (ordo__ps_poll(w, 20000, &ev) != 0 || ev.kind != ORDO__EV_PULL_DONE) return -1;
        }
        wrong += check_values(rank, ITERS, val);
        pulls -= NK / 2; /* the fused pulls of iteration ITERS are not among the counted ones */
    }
    if (pulls != ITERS * NK || pushes != ITERS * NK) return -1;
    if (ordo__ps_finish(w, "{\"test_accuracy\":0.5}") != 0) return -1;
    ordo__ps_destroy(&w);
    for (int key = 0; key < NK; key++) {
        free(val[key]);
        free(grad[key]);
    }
    return wrong;
}

/* _i = 0: separate pushes and pulls; 1: odd keys fused; 2: as 1, every process with a
 * dedicated I/O thread (net.io_thread = true) */
START_TEST(three_workers_two_servers_exact_values)
{
    char dir[] = "/tmp/ordo-it-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char tensors[256] = "", outdir[300], tensors_arg[300];
    for (int i = 0; i < NK; i++)
        snprintf(tensors + strlen(tensors), sizeof tensors - strlen(tensors), "%s%lld",
                 i ? "," : "", (long long)sizes[i] * 4);
    snprintf(tensors_arg, sizeof tensors_arg, "--model.tensors=%s", tensors);
    snprintf(outdir, sizeof outdir, "--output.dir=%s", dir);
    char *sargv[] = {"ordo-scheduler",
                     "--cluster.scheduler=tcp://127.0.0.1:0",
                     "--cluster.servers=2",
                     "--cluster.workers=3",
                     tensors_arg,
                     outdir,
                     "--output.run=it",
                     "--model.iterations=20",
                     "--fault.timeout_ms=5000",
                     "--fault.heartbeat_ms=200",
                     "--output.log_level=warn",
                     _i == 2 ? "--net.io_thread=true" : NULL,
                     NULL};
    proc_t sched, srv[S];
    ck_assert_int_eq(proc_start(&sched, bin_path("ordo-scheduler"), sargv), 0);
    char sched_arg[600];
    snprintf(sched_arg, sizeof sched_arg, "--cluster.scheduler=%s", sched.ready);
    for (int i = 0; i < S; i++) {
        char *argv[] = {"ordo-server",
                        sched_arg,
                        "--optimizer.lr=0.01",
                        "--fault.timeout_ms=5000",
                        "--fault.heartbeat_ms=200",
                        "--output.log_level=warn",
                        _i == 2 ? "--net.io_thread=true" : NULL,
                        NULL};
        ck_assert_int_eq(proc_start(&srv[i], bin_path("ordo-server"), argv), 0);
    }
    pid_t kids[W];
    for (int i = 0; i < W; i++) {
        kids[i] = fork();
        if (kids[i] == 0) {
            int wrong = worker_body(sched.ready, _i >= 1, _i == 2);
            _exit(wrong == 0 ? 0 : wrong < 0 ? 2 : 1);
        }
    }
    for (int i = 0; i < W; i++) {
        int st;
        ck_assert_int_eq(waitpid(kids[i], &st, 0), kids[i]);
        ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "worker process %d failed (%d)", i,
                      WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    }
    ck_assert_int_eq(proc_wait(&sched, 10000), 0);
    for (int i = 0; i < S; i++)
        ck_assert_int_eq(proc_wait(&srv[i], 10000), 0);
    /* the run folder has one metrics line per worker per iteration... here the test's
     * workers report none, so the summary carries what DONE said */
    char path[400];
    snprintf(path, sizeof path, "%s/it/summary.json", dir);
    FILE *f = fopen(path, "r");
    ck_assert_msg(f != NULL, "no %s", path);
    char buf[8192];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    ck_assert_msg(strstr(buf, "\"test_accuracy\": 0.5") != NULL, "summary: %s", buf);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* the body of one worker of the relay run: W relays in rank order, worker r the root of the
 * r-th with bytes r + 1; 0 when every one arrived intact */
static int relay_body(const char *sched)
{
    ordo__conf_t conf;
    ordo__conf_defaults(&conf);
    ordo__log_set_level(ORDO_LOG_WARN);
    if (strlen(sched) >= sizeof conf.scheduler) return -1;
    memcpy(conf.scheduler, sched, strlen(sched) + 1);
    conf.servers = 1;
    conf.workers = W;
    conf.timeout_ms = 5000;
    conf.heartbeat_ms = 200;
    ordo__ps_t *w;
    if (ordo__ps_new(&conf, &w) != 0) return -1;
    int rank = ordo__ps_rank(w), wrong = 0;
    for (int r = 0; r < W; r++) {
        unsigned char buf[300];
        memset(buf, r == rank ? r + 1 : 0xee, sizeof buf);
        if (ordo__ps_relay(w, ((int64_t)1 << 40) + r, r, buf, sizeof buf, 10000) != 0)
            return -1;
        for (size_t i = 0; i < sizeof buf; i++) wrong += buf[i] != r + 1;
    }
    if (ordo__ps_finish(w, "{}") != 0) return -1;
    ordo__ps_destroy(&w);
    return wrong;
}

START_TEST(a_relay_gives_every_worker_the_roots_bytes)
{
    char dir[] = "/tmp/ordo-it-XXXXXX";
    ck_assert_ptr_nonnull(mkdtemp(dir));
    char outdir[300];
    snprintf(outdir, sizeof outdir, "--output.dir=%s", dir);
    char *sargv[] = {"ordo-scheduler", "--cluster.scheduler=tcp://127.0.0.1:0",
                     "--cluster.servers=1", "--cluster.workers=3", "--model.tensors=4000",
                     outdir, "--output.run=relay", "--model.iterations=4",
                     "--fault.timeout_ms=5000", "--fault.heartbeat_ms=200",
                     "--output.log_level=warn", NULL};
    proc_t sched, srv;
    ck_assert_int_eq(proc_start(&sched, bin_path("ordo-scheduler"), sargv), 0);
    char sched_arg[600];
    snprintf(sched_arg, sizeof sched_arg, "--cluster.scheduler=%s", sched.ready);
    char *argv[] = {"ordo-server", sched_arg, "--fault.timeout_ms=5000",
                    "--fault.heartbeat_ms=200", "--output.log_level=warn", NULL};
    ck_assert_int_eq(proc_start(&srv, bin_path("ordo-server"), argv), 0);
    pid_t kids[W];
    for (int i = 0; i < W; i++) {
        kids[i] = fork();
        if (kids[i] == 0) {
            int wrong = relay_body(sched.ready);
            _exit(wrong == 0 ? 0 : wrong < 0 ? 2 : 1);
        }
    }
    for (int i = 0; i < W; i++) {
        int st;
        ck_assert_int_eq(waitpid(kids[i], &st, 0), kids[i]);
        ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "worker process %d: %s", i,
                      WIFEXITED(st) && WEXITSTATUS(st) == 1 ? "wrong bytes" : "failed");
    }
    ck_assert_int_eq(proc_wait(&sched, 10000), 0);
    ck_assert_int_eq(proc_wait(&srv, 10000), 0);
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    ck_assert_int_eq(system(cmd), 0);
}
END_TEST

static Suite *cluster_suite(void)
{
    Suite *s = suite_create("cluster");
    TCase *tc = tcase_create("dense");
    tcase_set_timeout(tc, 240);
    tcase_add_loop_test(tc, three_workers_two_servers_exact_values, 0, 3);
    tcase_add_test(tc, a_relay_gives_every_worker_the_roots_bytes);
    suite_add_tcase(s, tc);
    return s;
}

ORDO_CK_MAIN(cluster_suite)
