/* bench_pushpull: `ordo-bench pushpull` (ordo's push + pull against a raw ZeroMQ echo of the
 * same sizes) and the echo process itself. */
#include "tools/bench_pushpull.h"
#include "common/clock.h"
#include "common/conf.h"
#include "common/curve.h"
#include "common/error.h"
#include "common/log.h"
#include "tools/bench.h"
#include "tools/bench_compress.h"
#include "tools/bench_repl.h"
#include "client/ps.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zmq.h>

/* ---- raw ZeroMQ echo ---------------------------------------------------------------- */

typedef struct {
    void *ctx;
    char endpoint[640];
    volatile int stop;
} echo_t;

/* echo one message (every frame) back to its sender; false when none came in time */
static bool echo_one(void *s)
{
    zmq_msg_t part;
    zmq_msg_init(&part);
    if (zmq_msg_recv(&part, s, 0) < 0) {
        zmq_msg_close(&part);
        return false;
    }
    for (;;) {
        int more = zmq_msg_more(&part);
        zmq_msg_send(&part, s, more ? ZMQ_SNDMORE : 0);
        if (!more) return true;
        zmq_msg_init(&part);
        zmq_msg_recv(&part, s, 0);
    }
}

/* a ROUTER on a loopback port that echoes messages; rcvtimeo_ms bounds each wait */
static void *echo_socket(void *ctx, char *endpoint, size_t size)
{
    void *s = zmq_socket(ctx, ZMQ_ROUTER);
    int to = 100;
    zmq_setsockopt(s, ZMQ_RCVTIMEO, &to, sizeof to);
    zmq_bind(s, "tcp://127.0.0.1:0");
    zmq_getsockopt(s, ZMQ_LAST_ENDPOINT, endpoint, &size);
    return s;
}

/* the in-process echo (--raw-thread) */
static void *echo_main(void *arg)
{
    echo_t *e = arg;
    void *s = echo_socket(e->ctx, e->endpoint, sizeof e->endpoint);
    __atomic_store_n(&e->stop, 2, __ATOMIC_RELEASE); /* bound */
    while (__atomic_load_n(&e->stop, __ATOMIC_ACQUIRE) != 1)
        echo_one(s);
    int zero = 0;
    zmq_setsockopt(s, ZMQ_LINGER, &zero, sizeof zero);
    zmq_close(s);
    return NULL;
}

int ordo__bench_echo(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    void *ctx = zmq_ctx_new();
    char endpoint[256] = "";
    void *s = echo_socket(ctx, endpoint, sizeof endpoint);
    printf("READY %s\n", endpoint);
    fflush(stdout);
    pid_t parent = getppid();
    while (getppid() == parent) /* until the benchmark that started it is gone */
        echo_one(s);
    int zero = 0;
    zmq_setsockopt(s, ZMQ_LINGER, &zero, sizeof zero);
    zmq_close(s);
    zmq_ctx_term(ctx);
    return 0;
}

/* seconds of one round trip of a message of n bytes (copied from buf) out and back */
static double raw_once(void *s, const char *buf, size_t n)
{
    int64_t t0 = ordo__clock_ns();
    zmq_msg_t m;
    zmq_msg_init_size(&m, n);
    memcpy(zmq_msg_data(&m), buf, n);
    zmq_msg_send(&m, s, 0);
    zmq_msg_init(&m);
    zmq_msg_recv(&m, s, 0);
    zmq_msg_close(&m);
    return (double)(ordo__clock_ns() - t0) / 1e9;
}

/* ---- --curve: the same round trips with and without CURVE --------------------------- */

/* remove_keys deletes what ordo__curve_keygen wrote under dir (server pair, clients/) */
static void remove_keys(const char *dir)
{
    char path[1200];
    snprintf(path, sizeof path, "%s/clients", dir);
    DIR *d = opendir(path);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        snprintf(path, sizeof path, "%s/clients/%s", dir, e->d_name);
        unlink(path);
    }
    if (d) closedir(d);
    snprintf(path, sizeof path, "%s/clients", dir);
    rmdir(path);
    snprintf(path, sizeof path, "%s/server.key", dir);
    unlink(path);
    snprintf(path, sizeof path, "%s/server.pub", dir);
    unlink(path);
    rmdir(dir);
}

/* pushpull_curve: two clusters, one plain and one with CURVE (keys written to a temporary
 * folder), the same fused round trips taking turns per size; prints both goodputs and the
 * ratio */
static int pushpull_curve(ordo__bench_opts_t *o, const int64_t *sizes, int n)
{
    char dir[] = "/tmp/ordo-bench-keys.XXXXXX";
    if (!mkdtemp(dir)) {
        fprintf(stderr, "ordo-bench pushpull: mkdtemp: %s\n", strerror(errno));
        return 1;
    }
    const char *names[] = {"worker"};
    int rc = ordo__curve_keygen(dir, names, 1, false);
    ordo__bench_child_t sched[2] = {{0}}, srv[2][ORDO_BENCH_MAX_SERVERS] = {{{0}}};
    ordo__ps_t *w[2] = {NULL, NULL};
    for (int c = 0; c < 2 && rc == 0; c++) {
        o->curve_keys = c ? dir : NULL;
        rc = ordo__bench_start_cluster(sizes, n, o, &sched[c], srv[c], &w[c]);
    }
    o->curve_keys = NULL;
    if (rc) goto done;
    if (!o->json) {
        printf("ordo push+pull without and with CURVE ([security] curve), two clusters of 1 "
               "server + 1 worker on loopback side by side, partition_bytes %lld, segment_bytes "
               "%lld, best of at least %d rounds and %g s per size (taking turns)\n",
               (long long)o->partition, (long long)o->segment, o->reps, o->min_time_s);
        printf("%10s %10s %10s %11s %11s %8s %7s\n", "bytes", "plain_us", "curve_us", "plain_GB/s",
               "curve_GB/s", "curve/pl", "rounds");
    }
    for (int i = 0; i < n && rc == 0; i++) {
        float *val = malloc((size_t)sizes[i]), *grad = calloc(1, (size_t)sizes[i]);
        memset(val, 1, (size_t)sizes[i]);
        int64_t iter[2] = {0, 0};
        for (int c = 0; c < 2; c++)
            ordo__ps_init(w[c], i, grad);
        ordo__bench_times_t best[2] = {{1e30, 1e30, 1e30}, {1e30, 1e30, 1e30}}, t;
        int rounds = 0;
        int64_t until = ordo__clock_ns() + (int64_t)(o->min_time_s * 1e9);
        for (int r = -1; (r < o->reps || ordo__clock_ns() < until) && rc == 0; r++) {
            for (int c = 0; c < 2 && rc == 0; c++) {
                if ((rc = ordo__bench_once(w[c], i, val, grad, &iter[c], true, &t)) != 0) break;
                if (r >= 0) ordo__bench_keep_best(&best[c], &t);
            }
            rounds = r + 1;
        }
        free(val);
        free(grad);
        if (rc) break;
        double bytes2 = 2.0 * (double)sizes[i];
        double pg = bytes2 / best[0].push_pull_s / 1e9, cg = bytes2 / best[1].push_pull_s / 1e9;
        if (o->json)
            printf("{\"bytes\":%lld,\"plain_gbps\":%.4f,\"curve_gbps\":%.4f,\"plain_us\":%.1f,"
                   "\"curve_us\":%.1f,\"ratio\":%.3f,\"rounds\":%d}\n",
                   (long long)sizes[i], pg, cg, best[0].push_pull_s * 1e6,
                   best[1].push_pull_s * 1e6, cg / pg, rounds);
        else
            printf("%10lld %10.1f %10.1f %11.3f %11.3f %8.2f %7d\n", (long long)sizes[i],
                   best[0].push_pull_s * 1e6, best[1].push_pull_s * 1e6, pg, cg, cg / pg, rounds);
        fflush(stdout);
    }
    if (!o->json && rc == 0)
        printf("goodput counts the bytes pushed plus the bytes pulled (fused push+pull); "
               "curve/pl = CURVE goodput / plain goodput\n");
done:
    if (rc) fprintf(stderr, "ordo-bench pushpull: %s\n", ordo__error_text(rc));
    for (int c = 0; c < 2; c++)
        ordo__bench_stop_cluster(&sched[c], srv[c], &w[c]);
    remove_keys(dir);
    return rc ? 1 : 0;
}

int ordo__bench_pushpull(int argc, char **argv)
{
    ordo__conf_t defaults; /* partition and segment sizes: the conf's defaults */
    ordo__conf_defaults(&defaults);
    ordo__bench_opts_t o = {.reps = 10,
                           .min_time_s = 1.0,
                           .min_bytes = 4096,
                           .max_bytes = 64 << 20,
                           .partition = defaults.partition_bytes,
                           .segment = ordo__conf_segment_bytes(&defaults)};
    int rc = ordo__bench_parse_opts(
        argc, argv, &o,
        "[--json] [--reps N] [--min-time SEC] [--min BYTES] [--max BYTES] [--partition BYTES] "
        "[--segment BYTES] [--io-thread] "
        "[--raw-thread] [--replicas 2|3] [--curve] [--compression 'bf16 fp16 onebit ...']");
    if (rc) return rc > 0 ? 0 : 2;
    int64_t sizes[32];
    int n = 0;
    for (int64_t b = o.min_bytes; b <= o.max_bytes && n < 32; b *= 4)
        sizes[n++] = b;
    if (o.replicas > 1 && o.curve)
        return ordo__error_set(ORDO_ERR_INVAL, "pushpull: --replicas and --curve are separate "
                                              "comparisons; give one");
    if (o.replicas > 1) return ordo__bench_replicas(sizes, n, &o); /* tools/bench_repl.h */
    if (o.curve) return pushpull_curve(&o, sizes, n);
    if (o.compression) return ordo__bench_compress(sizes, n, &o); /* tools/bench_compress.h */
    ordo__bench_child_t sched = {0}, srv[ORDO_BENCH_MAX_SERVERS] = {{0}};
    ordo__ps_t *w = NULL;
    if ((rc = ordo__bench_start_cluster(sizes, n, &o, &sched, srv, &w)) != 0) {
        fprintf(stderr, "ordo-bench pushpull: %s\n", ordo__error_text(rc));
        ordo__bench_stop_cluster(&sched, srv, &w);
        return 1;
    }
    /* the raw echo is a child process, as ordo's server is (--raw-thread: a thread of this
     * process, sharing the DEALER's ZeroMQ I/O thread) */
    echo_t echo = {.ctx = zmq_ctx_new()};
    pthread_t th;
    ordo__bench_child_t echo_proc = {0};
    if (o.raw_thread) {
        pthread_create(&th, NULL, echo_main, &echo);
        while (__atomic_load_n(&echo.stop, __ATOMIC_ACQUIRE) != 2)
            ordo__clock_sleep_ns(1000000);
    } else {
        char *eargs[] = {NULL, "echo", NULL};
        if ((rc = ordo__bench_spawn(&echo_proc, "ordo-bench", eargs)) != 0) {
            fprintf(stderr, "ordo-bench pushpull: %s\n", ordo__error_text(rc));
            zmq_ctx_term(echo.ctx);
            ordo__bench_stop_cluster(&sched, srv, &w);
            return 1;
        }
        snprintf(echo.endpoint, sizeof echo.endpoint, "%s", echo_proc.ready);
    }

    if (!o.json) {
        printf("ordo push+pull vs raw ZeroMQ round trip, 1 server + 1 worker on loopback, "
               "partition_bytes %lld, segment_bytes %lld, best of at least %d rounds and %g s per "
               "size (taking turns); raw echo in %s\n",
               (long long)o.partition, (long long)o.segment, o.reps, o.min_time_s,
               o.raw_thread ? "a thread" : "a child process");
        printf("%10s %10s %10s %10s %10s %10s %10s %10s %10s %8s %7s\n", "bytes", "push_us",
               "pull_us", "sep_GB/s", "fused_us", "cpu_us", "ordo_GB/s", "raw_us", "raw_GB/s",
               "ordo/raw", "rounds");
    }
    int64_t iter = 0;
    double best_raw = 0, last_og = 0;
    for (int i = 0; i < n && rc == 0; i++) {
        float *val = malloc((size_t)sizes[i]), *grad = calloc(1, (size_t)sizes[i]);
        ordo__ps_init(w, i, grad);
        iter = 0;
        /* the three round trips take turns, so that the machine's slow moments hit them
         * alike; each keeps its best */
        ordo__bench_times_t sep = {1e30, 1e30, 1e30}, fused = sep, t;
        double raw = 1e30, cpu = 0; /* cpu: seconds of CPU of both processes, fused */
        void *rs = zmq_socket(echo.ctx, ZMQ_DEALER);
        zmq_connect(rs, echo.endpoint);
        memset(val, 1, (size_t)sizes[i]);
        /* at least reps rounds, and more until min_time_s has passed: a best-of-N of a
         * 100 us round trip needs hundreds of samples to settle, a 20 ms one does not */
        int rounds = 0;
        int64_t until = ordo__clock_ns() + (int64_t)(o.min_time_s * 1e9);
        for (int r = -1; (r < o.reps || ordo__clock_ns() < until) && rc == 0; r++) {
            /* r = -1 warms up */
            if ((rc = ordo__bench_once(w, i, val, grad, &iter, false, &t)) != 0) break;
            if (r >= 0) ordo__bench_keep_best(&sep, &t);
            int64_t c0 = ordo__bench_cpu_ns(0) + ordo__bench_cpu_ns(srv[0].pid);
            if ((rc = ordo__bench_once(w, i, val, grad, &iter, true, &t)) != 0) break;
            if (r >= 0) ordo__bench_keep_best(&fused, &t);
            if (r >= 0)
                cpu += (double)(ordo__bench_cpu_ns(0) + ordo__bench_cpu_ns(srv[0].pid) - c0) / 1e9;
            double dt = raw_once(rs, (const char *)val, (size_t)sizes[i]);
            if (r >= 0 && dt < raw) raw = dt;
            rounds = r + 1;
        }
        int zero = 0;
        zmq_setsockopt(rs, ZMQ_LINGER, &zero, sizeof zero);
        zmq_close(rs);
        free(val);
        free(grad);
        if (rc) break;
        double bytes2 = 2.0 * (double)sizes[i];
        double og = bytes2 / fused.push_pull_s / 1e9, sg = bytes2 / sep.push_pull_s / 1e9,
               rg = bytes2 / raw / 1e9;
        if (rg > best_raw) best_raw = rg;
        last_og = og;
        double cpu_us = rounds > 0 ? cpu / rounds * 1e6 : 0;
        if (o.json)
            printf("{\"bytes\":%lld,\"ordo_gbps\":%.4f,\"raw_gbps\":%.4f,\"fused_us\":%.1f,"
                   "\"cpu_us\":%.1f,\"sep_gbps\":%.4f,\"push_us\":%.1f,\"pull_us\":%.1f,"
                   "\"raw_rtt_us\":%.1f,\"rounds\":%d}\n",
                   (long long)sizes[i], og, rg, fused.push_pull_s * 1e6, cpu_us, sg,
                   sep.push_s * 1e6, sep.push_pull_s * 1e6, raw * 1e6, rounds);
        else
            printf("%10lld %10.1f %10.1f %10.3f %10.1f %10.1f %10.3f %10.1f %10.3f %8.2f %7d\n",
                   (long long)sizes[i], sep.push_s * 1e6, sep.push_pull_s * 1e6, sg,
                   fused.push_pull_s * 1e6, cpu_us, og, raw * 1e6, rg, og / rg, rounds);
        fflush(stdout);
    }
    if (!o.json && rc == 0)
        printf("raw ZeroMQ best goodput %.3f GB/s; largest size's goodput / raw best = %.2f "
               "(goodput counts the bytes pushed plus the bytes pulled; ordo = fused pushpull, "
               "sep = push then pull)\n"
               "cpu_us: CPU time of the worker and server processes (all threads) per fused "
               "round trip, mean; with %ld cores online a round trip needs at least cpu_us / "
               "%ld\n",
               best_raw, last_og / best_raw, sysconf(_SC_NPROCESSORS_ONLN),
               sysconf(_SC_NPROCESSORS_ONLN));
    if (o.raw_thread) {
        __atomic_store_n(&echo.stop, 1, __ATOMIC_RELEASE);
        pthread_join(th, NULL);
    } else {
        kill(echo_proc.pid, SIGTERM);
        ordo__bench_reap(&echo_proc);
    }
    zmq_ctx_term(echo.ctx);
    if (rc) fprintf(stderr, "ordo-bench pushpull: %s\n", ordo__error_text(rc));
    ordo__bench_stop_cluster(&sched, srv, &w);
    return rc ? 1 : 0;
}
