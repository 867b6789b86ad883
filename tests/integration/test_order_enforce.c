/* Integration test of the servers' enforcement module, read from the servers' traces
 * (trace-server-R.json: one event per released pull response). A real scheduler and real
 * servers run; the workers are forked processes using the worker library, which lets them
 * request their pulls in an order of the test's choosing: the reverse of the plan's.
 * - strict, training and forward-only: with an injected order (order.policy = file:PATH, a
 *   permutation that is not the listed order) every server hands each worker's transfers
 *   of every iteration after the first over in exactly the plan's order restricted to that
 *   server (chunks of a key together), with the counter equal to the number already handed
 *   over and the normalized priorities of docs/ordering-live.md.
 * - fifo (control): the same forward-only job without a plan releases in request order, so
 *   the checks above do see the difference.
 * - greedy: on an emulated link, (1) the link never idles while a response is held: when
 *   the link finishes a transfer (link_end of release i) and some response is held at that
 *   moment (ready before, released after), the next release comes before the link could
 *   have carried one more transfer (its serialization time: 168 ms here). The loop hands a
 *   response over 5 ms before the link frees, so what this allows for is the server being
 *   descheduled on a loaded machine (it fails only if the server gets no CPU that long); a module
 * that waited for anything else (a counter, a heartbeat timeout) idles far longer; (2) every
 * release is the smallest normalized priority among the responses held then. */
#include "cluster_util.h"
#include "common/keys.h"
#include "common/log.h"
#include "tests/unit/ordo_check.h"
#include "client/ps.h"

#include <jansson.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#define MAX_KEYS 16

typedef struct {
    const char *name;
    int servers, workers, iters;
    bool forward_only;
    const char *policy; /* "file" (the injected order), "fifo", "tao" */
    const char *enforce;
    const char *bandwidth;
    int n;
    int64_t bytes[MAX_KEYS];
    int prio[MAX_KEYS]; /* the injected order */
    int64_t partition_bytes;
    int64_t segment_bytes; /* [order] segment_bytes (0: whole chunks) */
} job_t;

typedef struct {
    long long seq, iter, counter, t_ready, t_release, link_end;
    int worker, key, chunk, norm, held;
} rel_t;

static int req_order[MAX_KEYS]; /* the workers' request order: reverse of the plan order */

static void reverse_plan_order(const job_t *j)
{
    int idx[MAX_KEYS];
    for (int i = 0; i < j->n; i++)
        idx[i] = i;
    for (int a = 0; a < j->n; a++) /* sort by priority, then listed order */
        for (int b = a + 1; b < j->n; b++)
            if (j->prio[idx[b]] < j->prio[idx[a]] ||
                (j->prio[idx[b]] == j->prio[idx[a]] && idx[b] < idx[a])) {
                int t = idx[a];
                idx[a] = idx[b];
                idx[b] = t;
            }
    for (int i = 0; i < j->n; i++)
        req_order[i] = idx[j->n - 1 - i];
}

/* one worker process: pulls in req_order, then (training) pushes everything */
static int worker_body(const job_t *j, const char *sched)
{
    ordo__conf_t conf;
    ordo__conf_defaults(&conf);
    ordo__log_set_level(ORDO_LOG_WARN);
    if (strlen(sched) >= sizeof conf.scheduler) return 2;
    memcpy(conf.scheduler, sched, strlen(sched) + 1);
    conf.servers = j->servers;
    conf.workers = j->workers;
    conf.timeout_ms = 5000;
    conf.heartbeat_ms = 200;
    if (j->bandwidth && ordo__conf_parse_rate(j->bandwidth, &conf.bandwidth_bps) != 0) return 2;
    conf.latency_us = j->bandwidth ? 50 : 0;
    ordo__ps_t *w;
    if (ordo__ps_new(&conf, &w) != 0) return 2;
    const ordo__keys_t *k = ordo__ps_keys(w);
    if (k->n_keys != j->n) return 3;
    float *val[MAX_KEYS];
    for (int i = 0; i < j->n; i++) {
        val[i] = calloc((size_t)k->numel[i], sizeof(float));
        if (ordo__ps_rank(w) == 0 && ordo__ps_init(w, i, val[i]) != 0) return 4;
    }
    ordo__ps_event_t ev;
    for (int t = 0; t < j->iters; t++) {
        int64_t it = j->forward_only ? 0 : t;
        for (int i = 0; i < j->n; i++)
            if (ordo__ps_pull(w, req_order[i], val[req_order[i]], it, 0) != 0) return 5;
        for (int i = 0; i < j->n; i++)
            if (ordo__ps_poll(w, 30000, &ev) != 0 || ev.kind != ORDO__EV_PULL_DONE) return 6;
        if (j->forward_only) continue;
        for (int i = 0; i < j->n; i++)
            if (ordo__ps_push(w, i, val[i], t, 0) != 0) return 7;
        for (int i = 0; i < j->n; i++)
            if (ordo__ps_poll(w, 30000, &ev) != 0 || ev.kind != ORDO__EV_PUSH_DONE) return 8;
    }
    if (ordo__ps_finish(w, NULL) != 0) return 9;
    ordo__ps_destroy(&w);
    for (int i = 0; i < j->n; i++)
        free(val[i]);
    return 0;
}

/* runs the job; the run folder is DIR/run */
static void run_job(const job_t *j, const char *dir)
{
    char order_path[300], a_policy[400], a_tensors[600], a_out[300], a_servers[64], a_workers[64],
        a_iters[64], a_part[64], a_seg[64], a_enf[64], a_bw[64], a_lat[64];
    snprintf(order_path, sizeof order_path, "%s/order.json", dir);
    FILE *f = fopen(order_path, "w");
    ck_assert_ptr_nonnull(f);
    fprintf(f, "{\"format\": \"ordo-order/1\", \"model\": \"sizes\", \"policy\": \"test\",\n"
               " \"priorities\": [");
    for (int i = 0; i < j->n; i++)
        fprintf(f, "%s{\"param\": \"p%d\", \"priority\": %d}", i ? ", " : "", i, j->prio[i]);
    fprintf(f, "]}\n");
    fclose(f);
    if (!strcmp(j->policy, "file"))
        snprintf(a_policy, sizeof a_policy, "--order.policy=file:%s", order_path);
    else
        snprintf(a_policy, sizeof a_policy, "--order.policy=%s", j->policy);
    int len = snprintf(a_tensors, sizeof a_tensors, "--model.tensors=");
    for (int i = 0; i < j->n; i++)
        len += snprintf(a_tensors + len, sizeof a_tensors - (size_t)len, "%s%lld", i ? "," : "",
                        (long long)j->bytes[i]);
    snprintf(a_out, sizeof a_out, "--output.dir=%s", dir);
    snprintf(a_servers, sizeof a_servers, "--cluster.servers=%d", j->servers);
    snprintf(a_workers, sizeof a_workers, "--cluster.workers=%d", j->workers);
    snprintf(a_iters, sizeof a_iters, "--model.iterations=%d", j->iters);
    snprintf(a_part, sizeof a_part, "--order.partition_bytes=%lld", (long long)j->partition_bytes);
    snprintf(a_seg, sizeof a_seg, "--order.segment_bytes=%lld", (long long)j->segment_bytes);
    snprintf(a_enf, sizeof a_enf, "--order.enforce=%s", j->enforce);
    snprintf(a_bw, sizeof a_bw, "--net.bandwidth=%s", j->bandwidth ? j->bandwidth : "0");
    snprintf(a_lat, sizeof a_lat, "--net.latency_us=%d", j->bandwidth ? 50 : 0);
    char *common[] = {"--model.trainer=synthetic",
                      a_tensors,
                      a_policy,
                      a_servers,
                      a_workers,
                      a_iters,
                      a_part,
                      a_seg,
                      a_enf,
                      a_bw,
                      a_lat,
                      a_out,
                      "--output.run=run",
                      "--output.trace=true",
                      "--output.log_level=warn",
                      "--fault.timeout_ms=5000",
                      "--fault.heartbeat_ms=200"};
    enum { NC = sizeof common / sizeof common[0] };
    char *sargv[NC + 3] = {"ordo-scheduler", "--cluster.scheduler=tcp://127.0.0.1:0"};
    memcpy(sargv + 2, common, sizeof common);
    proc_t sched, srv[4];
    ck_assert_int_eq(proc_start(&sched, bin_path("ordo-scheduler"), sargv), 0);
    char a_sched[600];
    snprintf(a_sched, sizeof a_sched, "--cluster.scheduler=%s", sched.ready);
    char *vargv[NC + 3] = {"ordo-server", a_sched};
    memcpy(vargv + 2, common, sizeof common);
    for (int i = 0; i < j->servers; i++)
        ck_assert_int_eq(proc_start(&srv[i], bin_path("ordo-server"), vargv), 0);
    reverse_plan_order(j);
    pid_t kids[8];
    for (int i = 0; i < j->workers; i++) {
        kids[i] = fork();
        if (kids[i] == 0) _exit(worker_body(j, sched.ready));
    }
    for (int i = 0; i < j->workers; i++) {
        int st;
        ck_assert_int_eq(waitpid(kids[i], &st, 0), kids[i]);
        ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s: worker %d failed (step %d)",
                      j->name, i, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    }
    ck_assert_int_eq(proc_wait(&sched, 20000), 0);
    for (int i = 0; i < j->servers; i++)
        ck_assert_int_eq(proc_wait(&srv[i], 20000), 0);
}

static long long arg_int(json_t *args, const char *k)
{
    json_t *v = json_object_get(args, k);
    ck_assert_msg(json_is_integer(v), "trace event without integer args.%s", k);
    return json_integer_value(v);
}

static int by_seq(const void *a, const void *b)
{
    const rel_t *x = a, *y = b;
    return (x->seq > y->seq) - (x->seq < y->seq);
}

/* the release events of server `rank`, in release order */
static rel_t *load_releases(const char *dir, int rank, int *count)
{
    char path[400];
    snprintf(path, sizeof path, "%s/run/trace-server-%d.json", dir, rank);
    json_error_t jerr;
    json_t *root = json_load_file(path, 0, &jerr);
    ck_assert_msg(root != NULL, "%s: %s", path, jerr.text);
    json_t *evs = json_object_get(root, "traceEvents");
    ck_assert(json_is_array(evs));
    rel_t *r = calloc(json_array_size(evs) + 1, sizeof *r);
    int n = 0;
    size_t i;
    json_t *e;
    json_array_foreach(evs, i, e)
    {
        const char *cat = json_string_value(json_object_get(e, "cat"));
        if (!cat || strcmp(cat, "release") != 0) continue;
        json_t *a = json_object_get(e, "args");
        r[n++] = (rel_t){.seq = arg_int(a, "seq"),
                         .iter = arg_int(a, "iter"),
                         .counter = arg_int(a, "counter"),
                         .t_ready = arg_int(a, "t_ready_ns"),
                         .t_release = arg_int(a, "t_release_ns"),
                         .link_end = arg_int(a, "link_end_ns"),
                         .worker = (int)arg_int(a, "worker"),
                         .key = (int)arg_int(a, "key"),
                         .chunk = (int)arg_int(a, "chunk"),
                         .norm = (int)arg_int(a, "norm"),
                         .held = (int)arg_int(a, "held")};
    }
    json_decref(root);
    qsort(r, (size_t)n, sizeof *r, by_seq);
    *count = n;
    return r;
}

static ordo__keys_t *key_map(const job_t *j)
{
    int64_t numel[MAX_KEYS];
    for (int i = 0; i < j->n; i++)
        numel[i] = (j->bytes[i] + 3) / 4;
    ordo__keys_t *k = NULL;
    ck_assert_int_eq(
        ordo__keys_partition(numel, j->n, 4, j->partition_bytes, j->segment_bytes, j->servers, &k),
        0);
    return k;
}

/* every (worker, iteration) group of every server releases its slices in `want` order:
 * want_rank[key] gives each key's place (smaller first, equal ones in any order). Returns
 * the number of groups checked. The first group of a worker is left out of the order: under
 * fifo its pulls wait for rank 0's initial values, which arrive in listed order, and strict
 * releases a worker's first round by priority without waiting (the server learns from it
 * which transfers a round has). */
static int check_order(const job_t *j, const char *dir, const int *want_rank, bool strict)
{
    ordo__keys_t *k = key_map(j);
    int groups = 0;
    for (int s = 0; s < j->servers; s++) {
        int n_mine = 0;
        for (int i = 0; i < k->n_slices; i++)
            n_mine += k->slices[i].server == s;
        int n;
        rel_t *r = load_releases(dir, s, &n);
        ck_assert_msg(n == n_mine * j->workers * j->iters, "%s: server %d released %d, want %d",
                      j->name, s, n, n_mine * j->workers * j->iters);
        /* releases of one worker come one iteration after the other */
        for (int w = 0; w < j->workers; w++) {
            int pos = 0, last_rank = INT_MIN, group = 0;
            unsigned char seen[256] = {0};
            for (int i = 0; i < n; i++) {
                if (r[i].worker != w) continue;
                int slice = ordo__keys_slice(k, (uint32_t)r[i].key, (uint32_t)r[i].chunk);
                ck_assert_int_ge(slice, 0);
                ck_assert_int_eq(k->slices[slice].server, s);
                ck_assert_msg(!seen[slice], "%s: server %d worker %d: slice %d twice in a group",
                              j->name, s, w, slice);
                seen[slice] = 1;
                ck_assert_msg(want_rank[r[i].key] >= last_rank || group == 0,
                              "%s: server %d worker %d iter %lld: release %d is key %d (place %d) "
                              "after a key of place %d",
                              j->name, s, w, r[i].iter, pos, r[i].key, want_rank[r[i].key],
                              last_rank);
                last_rank = want_rank[r[i].key];
                if (strict) {
                    /* the counter is the number of transfers already handed over in the
                     * group, and strict releases at normalized priority <= counter */
                    ck_assert_int_eq(r[i].counter, pos);
                    int norm = 0;
                    for (int t = 0; t < k->n_slices; t++)
                        norm += k->slices[t].server == s &&
                                j->prio[k->slices[t].key] < j->prio[r[i].key];
                    ck_assert_int_eq(r[i].norm, norm);
                    if (group > 0) ck_assert_int_le(r[i].norm, r[i].counter);
                }
                if (++pos == n_mine) { /* group complete */
                    groups++;
                    group++;
                    pos = 0;
                    last_rank = INT_MIN;
                    memset(seen, 0, sizeof seen);
                }
            }
            ck_assert_int_eq(pos, 0);
        }
        free(r);
    }
    ordo__keys_destroy(&k);
    return groups;
}

static char *make_dir(void)
{
    static char dir[64];
    snprintf(dir, sizeof dir, "/tmp/ordo-it-order-XXXXXX");
    ck_assert_ptr_nonnull(mkdtemp(dir));
    return dir;
}

/* removes the test's folder (ORDO_KEEP=1 keeps it, with its traces, for a look) */
static void remove_dir(const char *dir)
{
    if (getenv("ORDO_KEEP")) {
        printf("kept %s\n", dir);
        return;
    }
    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    ck_assert_int_eq(system(cmd), 0);
}

/* 8 tensors, two of them chunked (partition 64 KiB), on 2 servers; a scrambled order */
static job_t strict_job(const char *name, bool forward_only, const char *policy)
{
    job_t j = {.name = name,
               .servers = 2,
               .workers = 2,
               .iters = 5,
               .forward_only = forward_only,
               .policy = policy,
               .enforce = "strict",
               .n = 8,
               .bytes = {4000, 280000, 1200, 80000, 20, 65536, 36000, 160000},
               .prio = {3, 1, 6, 5, 2, 7, 0, 4},
               .partition_bytes = 65536};
    return j;
}

START_TEST(strict_training_follows_injected_order)
{
    char *dir = make_dir();
    job_t j = strict_job("strict/training", false, "file");
    run_job(&j, dir);
    int groups = check_order(&j, dir, j.prio, true);
    ck_assert_int_eq(groups, j.servers * j.workers * j.iters);
    remove_dir(dir);
}
END_TEST

START_TEST(strict_forward_only_follows_injected_order)
{
    char *dir = make_dir();
    job_t j = strict_job("strict/forward-only", true, "file");
    run_job(&j, dir);
    int groups = check_order(&j, dir, j.prio, true);
    ck_assert_int_eq(groups, j.servers * j.workers * j.iters);
    remove_dir(dir);
}
END_TEST

START_TEST(fifo_follows_request_order)
{
    char *dir = make_dir();
    job_t j = strict_job("fifo/forward-only", true, "fifo");
    run_job(&j, dir);
    /* the requests go in reverse plan order, and so do fifo's releases */
    int rank[MAX_KEYS];
    for (int i = 0; i < j.n; i++)
        rank[i] = -j.prio[i];
    int groups = check_order(&j, dir, rank, false);
    ck_assert_int_eq(groups, j.servers * j.workers * j.iters);
    remove_dir(dir);
}
END_TEST

START_TEST(greedy_link_never_idles_while_a_response_is_held)
{
    char *dir = make_dir();
    job_t j = {.name = "greedy",
               .servers = 1,
               .workers = 2,
               .iters = 3,
               .policy = "file",
               .enforce = "greedy",
               .bandwidth = "100mbit",
               .n = 6,
               .bytes = {2 << 20, 2 << 20, 2 << 20, 2 << 20, 2 << 20, 2 << 20},
               .prio = {0, 1, 2, 3, 4, 5},
               .partition_bytes = 4 << 20};
    run_job(&j, dir);
    int n;
    rel_t *r = load_releases(dir, 0, &n);
    ck_assert_int_eq(n, j.n * j.workers * j.iters);
    double max_gap_ms = 0, idle_ms = 0;
    int checked = 0;
    for (int i = 0; i < n; i++) {
        /* (2) nothing held when r[i] left had a smaller normalized priority */
        for (int o = i + 1; o < n; o++)
            if (r[o].t_ready <= r[i].t_release)
                ck_assert_msg(r[o].norm >= r[i].norm,
                              "release %d (norm %d) went while release %d (norm %d) was held", i,
                              r[i].norm, o, r[o].norm);
        if (i + 1 == n) break;
        /* (1) a response held when the link finished r[i] goes out right away */
        bool held = false;
        for (int o = i + 1; o < n && !held; o++)
            held = r[o].t_ready <= r[i].link_end && r[o].t_release > r[i].link_end;
        if (!held) continue;
        checked++;
        double gap = (double)(r[i + 1].t_release - r[i].link_end) / 1e6;
        double tol = (double)(j.bytes[r[i + 1].key] + 64) * 8e3 / 100e6;
        if (gap > 0) idle_ms += gap;
        if (gap > max_gap_ms) max_gap_ms = gap;
        ck_assert_msg(gap <= tol,
                      "the link idled %.3f ms after release %d while a response was held", gap, i);
    }
    printf("greedy: %d releases, %d with a response held when the link freed; longest idle "
           "%.3f ms, total idle %.3f ms (one transfer takes %.1f ms)\n",
           n, checked, max_gap_ms, idle_ms, (2 << 20) * 8e3 / 100e6);
    ck_assert_int_ge(checked, n / 4); /* the check above is not vacuous */
    free(r);
    remove_dir(dir);
}
END_TEST

static Suite *order_suite(void)
{
    Suite *s = suite_create("order_enforce");
    TCase *tc = tcase_create("enforce");
    tcase_set_timeout(tc, 240);
    tcase_add_test(tc, strict_training_follows_injected_order);
    tcase_add_test(tc, strict_forward_only_follows_injected_order);
    tcase_add_test(tc, fifo_follows_request_order);
    tcase_add_test(tc, greedy_link_never_idles_while_a_response_is_held);
    suite_add_tcase(s, tc);
    return s;
}

ORDO_CK_MAIN(order_suite)
