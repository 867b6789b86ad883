/* bench_pushpull: ordo push/pull against raw ZeroMQ, side by side in one run. */
#include "worker/bench_pushpull.h"
#include "common/clock.h"
#include "common/conf.h"
#include "common/error.h"
#include "common/log.h"
#include "scheduler/merge.h"
#include "worker/ps.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <dirent.h>
#include <zmq.h>

/* ---- child daemons ------------------------------------------------------------------ */

typedef struct {
    pid_t pid;
    char ready[640];
} child_t;

#define MAX_SERVERS 8

static void sibling(const char *name, char *out, size_t size)
{
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    self[n > 0 ? n : 0] = '\0';
    char *slash = strrchr(self, '/');
    if (slash) *slash = '\0';
    snprintf(out, size, "%s/%s", slash ? self : ".", name);
}

static int spawn(child_t *c, const char *name, char **args)
{
    char path[PATH_MAX + 64];
    sibling(name, path, sizeof path);
    int fds[2];
    if (pipe(fds) != 0) return ORDO_EIO;
    c->pid = fork();
    if (c->pid == 0) {
        dup2(fds[1], 1);
        close(fds[0]);
        close(fds[1]);
        args[0] = path;
        execv(path, args);
        perror(path);
        _exit(127);
    }
    close(fds[1]);
    FILE *f = fdopen(fds[0], "r");
    char line[600];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "READY ", 6) == 0) {
            line[strcspn(line, "\n")] = '\0';
            snprintf(c->ready, sizeof c->ready, "%s", line + 6);
            /* keep reading in the background would need a thread; the daemons print little */
            return 0;
        }
    }
    return ordo_error_set(ORDO_EIO, "%s did not start", path);
}

static void reap(child_t *c)
{
    int st;
    for (int i = 0; i < 300; i++) {
        if (waitpid(c->pid, &st, WNOHANG) == c->pid) return;
        ordo_clock_sleep_ns(10000000);
    }
    kill(c->pid, SIGKILL);
    waitpid(c->pid, &st, 0);
}

/* nanoseconds all threads of process pid have run (0 = this process), from the
 * schedstat of each of its tasks; -1 when /proc cannot tell */
static int64_t cpu_ns(pid_t pid)
{
    char dir[64];
    snprintf(dir, sizeof dir, "/proc/%d/task", pid ? (int)pid : (int)getpid());
    DIR *d = opendir(dir);
    if (!d) return -1;
    int64_t sum = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        char path[600];
        snprintf(path, sizeof path, "%s/%s/schedstat", dir, e->d_name);
        FILE *f = fopen(path, "r");
        long long ns = 0;
        if (f && fscanf(f, "%lld", &ns) == 1) sum += ns;
        if (f) fclose(f);
    }
    closedir(d);
    return sum;
}

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

int ordo_bench_echo(int argc, char **argv)
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
    int64_t t0 = ordo_clock_ns();
    zmq_msg_t m;
    zmq_msg_init_size(&m, n);
    memcpy(zmq_msg_data(&m), buf, n);
    zmq_msg_send(&m, s, 0);
    zmq_msg_init(&m);
    zmq_msg_recv(&m, s, 0);
    zmq_msg_close(&m);
    return (double)(ordo_clock_ns() - t0) / 1e9;
}

/* ---- ordo push+pull ----------------------------------------------------------------- */

typedef struct {
    double push_pull_s; /* best time of one push followed by the pull of the new value */
    double push_s, pull_s;
} ordo_times_t;

/* fused: ordo_worker_pushpull (one message each way per chunk); else ordo_worker_push and
 * then ordo_worker_pull of the next iteration, requested at once */
/* one round trip; t gets its push, pull and push+pull times */
static int ordo_once(ordo_worker_t *w, int key, float *val, float *grad, int64_t *iter, bool fused,
                     ordo_times_t *t)
{
    int rc;
    int64_t t0 = ordo_clock_ns();
    if (fused) {
        if ((rc = ordo_worker_pushpull(w, key, grad, val, *iter, 0)) != 0) return rc;
    } else {
        if ((rc = ordo_worker_push(w, key, grad, *iter, 0)) != 0) return rc;
        if ((rc = ordo_worker_pull(w, key, val, *iter + 1, 0)) != 0) return rc;
    }
    ordo_worker_event_t ev;
    int64_t t_push = 0, t_pull = 0;
    for (int k = 0; k < 2; k++) {
        if ((rc = ordo_worker_poll(w, 60000, &ev)) != 0) return rc;
        if (ev.kind == ORDO_EV_PUSH_DONE)
            t_push = ev.t_ns;
        else
            t_pull = ev.t_ns;
    }
    (*iter)++;
    t->push_s = (double)(t_push - t0) / 1e9;
    t->pull_s = (double)(t_pull - t0) / 1e9;
    t->push_pull_s = (double)((t_pull > t_push ? t_pull : t_push) - t0) / 1e9;
    return 0;
}

/* keep the best of each time */
static void keep_best(ordo_times_t *best, const ordo_times_t *t)
{
    if (t->push_pull_s < best->push_pull_s) best->push_pull_s = t->push_pull_s;
    if (t->push_s < best->push_s) best->push_s = t->push_s;
    if (t->pull_s < best->pull_s) best->pull_s = t->pull_s;
}

/* best times of reps round trips after one warm-up */
static int ordo_rtt(ordo_worker_t *w, int key, float *val, float *grad, int64_t *iter, int reps,
                    bool fused, ordo_times_t *out)
{
    int rc;
    out->push_pull_s = out->push_s = out->pull_s = 1e30;
    for (int r = -1; r < reps; r++) {
        ordo_times_t t;
        if ((rc = ordo_once(w, key, val, grad, iter, fused, &t)) != 0) return rc;
        if (r >= 0) keep_best(out, &t);
    }
    return 0;
}

typedef struct {
    int json;
    int reps;
    double min_time_s; /* pushpull: each size goes on past reps rounds until this long */
    int64_t min_bytes, max_bytes;
    int64_t partition;
    int64_t segment; /* [order] segment_bytes */
    double bandwidth_bps, latency_us;
    double msg_us; /* emulated per-message link occupancy */
    int io_thread;
    int raw_thread; /* pushpull: the raw echo runs in a thread of the benchmark */
    int workers;    /* calibrate: workers measuring at once (1 here, the others forked) */
    int servers;    /* calibrate: servers (0 = 1) */
} opts_t;

static int parse_opts(int argc, char **argv, opts_t *o, const char *usage)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = strchr(a, '=');
        v = v ? v + 1 : (i + 1 < argc ? argv[i + 1] : "");
        int inl = strchr(a, '=') != NULL;
        if (!strcmp(a, "--json")) {
            o->json = 1;
            continue;
        }
        if (!strcmp(a, "--io-thread")) {
            o->io_thread = 1;
            continue;
        }
        if (!strcmp(a, "--raw-thread")) {
            o->raw_thread = 1;
            continue;
        }
        if (!strcmp(a, "--help")) {
            printf("usage: ordo-bench %s %s\n", argv[0], usage);
            return 1;
        }
        int ok = 1;
        if (!strncmp(a, "--reps", 6))
            o->reps = atoi(v);
        else if (!strncmp(a, "--min-time", 10))
            ok = (o->min_time_s = atof(v)) >= 0;
        else if (!strncmp(a, "--min", 5))
            ok = ordo_conf_parse_bytes(v, &o->min_bytes) == 0;
        else if (!strncmp(a, "--max", 5))
            ok = ordo_conf_parse_bytes(v, &o->max_bytes) == 0;
        else if (!strncmp(a, "--partition", 11))
            ok = ordo_conf_parse_bytes(v, &o->partition) == 0;
        else if (!strncmp(a, "--segment", 9))
            ok = ordo_conf_parse_bytes(v, &o->segment) == 0 &&
                 (o->segment == 0 || o->segment >= 1024);
        else if (!strncmp(a, "--bandwidth", 11))
            ok = ordo_conf_parse_rate(v, &o->bandwidth_bps) == 0;
        else if (!strncmp(a, "--latency-us", 12))
            o->latency_us = atof(v);
        else if (!strncmp(a, "--msg-us", 8))
            ok = (o->msg_us = atof(v)) >= 0;
        else if (!strncmp(a, "--workers", 9))
            ok = (o->workers = atoi(v)) >= 1 && o->workers <= 64;
        else if (!strncmp(a, "--servers", 9))
            ok = (o->servers = atoi(v)) >= 1 && o->servers <= MAX_SERVERS;
        else {
            fprintf(stderr, "ordo-bench %s: unknown option %s\n", argv[0], a);
            return -2;
        }
        if (!ok || o->reps < 1 || o->min_bytes < 4 || o->max_bytes < o->min_bytes) {
            fprintf(stderr, "ordo-bench %s: bad value in %s\n", argv[0], a);
            return -2;
        }
        if (!inl) i++;
    }
    return 0;
}

/* start a scheduler and o->servers servers (at least 1; srv[MAX_SERVERS]) for a job whose
 * tensors are the given sizes and o->workers workers (at least 1) */
static int start_daemons(const int64_t *sizes, int n, const opts_t *o, child_t *sched, child_t *srv)
{
    char tensors[4096] = "", targ[4200], parg[64], barg[64], larg[64];
    for (int i = 0; i < n; i++)
        snprintf(tensors + strlen(tensors), sizeof tensors - strlen(tensors), "%s%lld",
                 i ? "," : "", (long long)sizes[i]);
    snprintf(targ, sizeof targ, "--model.tensors=%s", tensors);
    snprintf(parg, sizeof parg, "--order.partition_bytes=%lld", (long long)o->partition);
    char segarg[64];
    snprintf(segarg, sizeof segarg, "--order.segment_bytes=%lld", (long long)o->segment);
    snprintf(barg, sizeof barg, "--net.bandwidth=%.0fbit", o->bandwidth_bps);
    snprintf(larg, sizeof larg, "--net.latency_us=%g", o->latency_us);
    char marg[64];
    snprintf(marg, sizeof marg, "--net.msg_us=%g", o->msg_us);
    char iarg[64], warg[64], sarg_n[64];
    snprintf(iarg, sizeof iarg, "--net.io_thread=%s", o->io_thread ? "true" : "false");
    snprintf(warg, sizeof warg, "--cluster.workers=%d", o->workers > 1 ? o->workers : 1);
    snprintf(sarg_n, sizeof sarg_n, "--cluster.servers=%d", o->servers > 1 ? o->servers : 1);
    char *sargs[] = {NULL, "--cluster.scheduler=tcp://127.0.0.1:0", warg, sarg_n, targ, parg,
                     segarg, "--output.dir=/tmp/ordo-bench-runs", "--output.log_level=warn",
                     "--model.iterations=1000000", "--optimizer.lr=0",
                     /* the raw ZeroMQ runs leave the worker's transport unpolled for seconds */
                     "--fault.timeout_ms=120000", NULL};
    int rc = spawn(sched, "ordo-scheduler", sargs);
    if (rc) return rc;
    char sarg[700];
    snprintf(sarg, sizeof sarg, "--cluster.scheduler=%s", sched->ready);
    char *vargs[] = {NULL, sarg, "--output.log_level=warn", "--optimizer.lr=0", barg, larg, marg,
                     iarg, NULL};
    for (int i = 0; i < (o->servers > 1 ? o->servers : 1); i++)
        if ((rc = spawn(&srv[i], "ordo-server", vargs)) != 0) return rc;
    return 0;
}

/* join the cluster of sched as a worker */
static int join(const opts_t *o, const child_t *sched, ordo_worker_t **w)
{
    ordo_conf_t conf;
    ordo_conf_defaults(&conf);
    snprintf(conf.scheduler, sizeof conf.scheduler, "%.*s", (int)sizeof conf.scheduler - 1,
             sched->ready);
    conf.bandwidth_bps = o->bandwidth_bps;
    conf.latency_us = o->latency_us;
    conf.msg_us = o->msg_us;
    conf.io_thread = o->io_thread;
    ordo_log_set_level(ORDO_LOG_WARN);
    return ordo_worker_new(&conf, w);
}

/* start a scheduler and one server, and join as the only worker */
static int start_cluster(const int64_t *sizes, int n, const opts_t *o, child_t *sched, child_t *srv,
                         ordo_worker_t **w)
{
    int rc = start_daemons(sizes, n, o, sched, srv);
    return rc ? rc : join(o, sched, w);
}

static void stop_cluster(child_t *sched, child_t *srv, ordo_worker_t **w)
{
    if (*w) {
        ordo_worker_finish(*w, NULL);
        ordo_worker_destroy(w);
    }
    reap(sched);
    for (int i = 0; i < MAX_SERVERS; i++)
        if (srv[i].pid > 0) reap(&srv[i]);
}

int ordo_bench_pushpull(int argc, char **argv)
{
    ordo_conf_t defaults; /* partition and segment sizes: the conf's defaults */
    ordo_conf_defaults(&defaults);
    opts_t o = {.reps = 10,
                .min_time_s = 1.0,
                .min_bytes = 4096,
                .max_bytes = 64 << 20,
                .partition = defaults.partition_bytes,
                .segment = defaults.segment_bytes};
    int rc = parse_opts(
        argc, argv, &o,
        "[--json] [--reps N] [--min-time SEC] [--min BYTES] [--max BYTES] [--partition BYTES] "
        "[--segment BYTES] [--io-thread] "
        "[--raw-thread]");
    if (rc) return rc > 0 ? 0 : 2;
    int64_t sizes[32];
    int n = 0;
    for (int64_t b = o.min_bytes; b <= o.max_bytes && n < 32; b *= 4)
        sizes[n++] = b;
    child_t sched = {0}, srv[MAX_SERVERS] = {{0}};
    ordo_worker_t *w = NULL;
    if ((rc = start_cluster(sizes, n, &o, &sched, srv, &w)) != 0) {
        fprintf(stderr, "ordo-bench pushpull: %s\n", ordo_error_text(rc));
        stop_cluster(&sched, srv, &w);
        return 1;
    }
    /* the raw echo is a child process, as ordo's server is (--raw-thread: a thread of this
     * process, sharing the DEALER's ZeroMQ I/O thread) */
    echo_t echo = {.ctx = zmq_ctx_new()};
    pthread_t th;
    child_t echo_proc = {0};
    if (o.raw_thread) {
        pthread_create(&th, NULL, echo_main, &echo);
        while (__atomic_load_n(&echo.stop, __ATOMIC_ACQUIRE) != 2)
            ordo_clock_sleep_ns(1000000);
    } else {
        char *eargs[] = {NULL, "echo", NULL};
        if ((rc = spawn(&echo_proc, "ordo-bench", eargs)) != 0) {
            fprintf(stderr, "ordo-bench pushpull: %s\n", ordo_error_text(rc));
            zmq_ctx_term(echo.ctx);
            stop_cluster(&sched, srv, &w);
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
        ordo_worker_init(w, i, grad);
        iter = 0;
        /* the three round trips take turns, so that the machine's slow moments hit them
         * alike; each keeps its best */
        ordo_times_t sep = {1e30, 1e30, 1e30}, fused = sep, t;
        double raw = 1e30, cpu = 0; /* cpu: seconds of CPU of both processes, fused */
        void *rs = zmq_socket(echo.ctx, ZMQ_DEALER);
        zmq_connect(rs, echo.endpoint);
        memset(val, 1, (size_t)sizes[i]);
        /* at least reps rounds, and more until min_time_s has passed: a best-of-N of a
         * 100 us round trip needs hundreds of samples to settle, a 20 ms one does not */
        int rounds = 0;
        int64_t until = ordo_clock_ns() + (int64_t)(o.min_time_s * 1e9);
        for (int r = -1; (r < o.reps || ordo_clock_ns() < until) && rc == 0; r++) {
            /* r = -1 warms up */
            if ((rc = ordo_once(w, i, val, grad, &iter, false, &t)) != 0) break;
            if (r >= 0) keep_best(&sep, &t);
            int64_t c0 = cpu_ns(0) + cpu_ns(srv[0].pid);
            if ((rc = ordo_once(w, i, val, grad, &iter, true, &t)) != 0) break;
            if (r >= 0) keep_best(&fused, &t);
            if (r >= 0) cpu += (double)(cpu_ns(0) + cpu_ns(srv[0].pid) - c0) / 1e9;
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
        reap(&echo_proc);
    }
    zmq_ctx_term(echo.ctx);
    if (rc) fprintf(stderr, "ordo-bench pushpull: %s\n", ordo_error_text(rc));
    stop_cluster(&sched, srv, &w);
    return rc ? 1 : 0;
}

/* ---- calibrate ---------------------------------------------------------------------- */

#define CAL_BURST 8 /* pushes in flight at once for the per-message (pipelined) figures */

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, by_value);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* seconds from pushing keys[0..n) (at once) to the last PUSH_DONE */
static int push_burst(ordo_worker_t *w, const int *keys, int n, float *grad, int64_t *iter,
                      double *secs)
{
    int rc;
    int64_t t0 = ordo_clock_ns(), last = t0;
    for (int i = 0; i < n; i++)
        if ((rc = ordo_worker_push(w, keys[i], grad, iter[keys[i]], 0)) != 0) return rc;
    for (int got = 0; got < n;) {
        ordo_worker_event_t ev;
        if ((rc = ordo_worker_poll(w, 60000, &ev)) != 0) return rc;
        if (ev.kind != ORDO_EV_PUSH_DONE) continue;
        iter[ev.key]++;
        last = ev.t_ns;
        got++;
    }
    *secs = (double)(last - t0) / 1e9;
    return 0;
}

/* pull keys[0..n) at their next iteration (waits for every worker's pushes) */
static int pull_keys(ordo_worker_t *w, const int *keys, int n, float *val, const int64_t *iter)
{
    int rc;
    for (int i = 0; i < n; i++)
        if ((rc = ordo_worker_pull(w, keys[i], val, iter[keys[i]], 0)) != 0) return rc;
    for (int got = 0; got < n;) {
        ordo_worker_event_t ev;
        if ((rc = ordo_worker_poll(w, 60000, &ev)) != 0) return rc;
        if (ev.kind == ORDO_EV_PULL_DONE) got++;
    }
    return 0;
}

/* wait until every worker of the calibration reached barrier *id (then the next id): a
 * worker that got its pulled values first would otherwise start its next burst while the
 * server's link still carries the other workers' values, and its pushes' acks would queue
 * behind them (with one server and 4 workers, several ms at 256 KiB on 10 Gbit/s) */
static int sync_workers(ordo_worker_t *w, int64_t *id)
{
    int rc = ordo_worker_barrier(w, ++*id);
    if (rc) return rc;
    for (;;) {
        ordo_worker_event_t ev;
        if ((rc = ordo_worker_poll(w, 60000, &ev)) != 0) return rc;
        if (ev.kind == ORDO_EV_BARRIER && ev.iter == *id) return 0;
    }
}

/* what one worker measures; every worker of a calibration runs the same sequence, so they
 * stay in step (each round trip and each burst's pulls wait for all of them) */
typedef struct {
    const opts_t *o;
    const int64_t *sizes;
    int n_keys, n_rt, n_burst;
    const int *burst_of; /* [n_burst] first key of each burst size */
    int64_t *iter;       /* per key: the next iteration */
    int64_t barrier;     /* the last barrier id */
    float *val, *grad;
    double *t, *t1;                        /* [reps] scratch */
    double rt_y[24], msg_y[12], one_y[12]; /* medians: round trip per size; per message and
                                            * one push alone per burst size */
} cal_t;

static int calibrate_run(ordo_worker_t *w, cal_t *c, bool print)
{
    const opts_t *o = c->o;
    int rc;
    for (int i = 0; i < c->n_keys; i++) /* the servers keep the first initial value they get */
        if ((rc = ordo_worker_init(w, i, c->val)) != 0) return rc;
    for (int i = 0; i < c->n_rt; i++) {
        /* one round trip: the push, and the pull of the value it makes (the server answers
         * the pull once the push is applied, so both travel in one round trip) */
        ordo_times_t rt;
        for (int r = -1; r < o->reps; r++) {
            if ((rc = ordo_rtt(w, i, c->val, c->grad, &c->iter[i], 1, false, &rt)) != 0) return rc;
            if (r >= 0) c->t[r] = rt.push_pull_s; /* a warm-up and one measured round trip */
        }
        c->rt_y[i] = median(c->t, o->reps);
        double per_msg = -1;
        if (i % 2 == 0) {
            /* a burst of CAL_BURST pushes in flight against one push: the difference is what
             * each further message costs when pushes are pipelined (latency paid once); the
             * pulls after each burst keep every worker in the same iteration */
            int k = i / 2, keys[CAL_BURST];
            for (int j = 0; j < CAL_BURST; j++)
                keys[j] = c->burst_of[k] + j;
            double one, many;
            for (int r = -1; r < o->reps; r++) {
                if ((rc = push_burst(w, keys, 1, c->grad, c->iter, &one)) != 0) return rc;
                if ((rc = pull_keys(w, keys, 1, c->val, c->iter)) != 0) return rc;
                if ((rc = sync_workers(w, &c->barrier)) != 0) return rc;
                if ((rc = push_burst(w, keys, CAL_BURST, c->grad, c->iter, &many)) != 0) return rc;
                if ((rc = pull_keys(w, keys, CAL_BURST, c->val, c->iter)) != 0) return rc;
                if ((rc = sync_workers(w, &c->barrier)) != 0) return rc;
                if (r >= 0) {
                    c->t[r] = (many - one) / (CAL_BURST - 1);
                    c->t1[r] = one;
                }
            }
            c->one_y[k] = median(c->t1, o->reps);
            /* with per-message costs below the noise the difference can come out negative */
            c->msg_y[k] = per_msg = fmax(0.0, median(c->t, o->reps));
        }
        if (!print) continue;
        char pm[32] = "null";
        if (per_msg >= 0) snprintf(pm, sizeof pm, "%.2f", per_msg * 1e6);
        if (o->json)
            printf("{\"bytes\":%lld,\"round_trip_us\":%.2f,\"per_msg_us\":%s}\n",
                   (long long)c->sizes[i], c->rt_y[i] * 1e6, pm);
        else if (per_msg >= 0)
            printf("%10lld %14.1f %14.1f\n", (long long)c->sizes[i], c->rt_y[i] * 1e6,
                   per_msg * 1e6);
        else
            printf("%10lld %14.1f %14s\n", (long long)c->sizes[i], c->rt_y[i] * 1e6, "");
        fflush(stdout);
    }
    return 0;
}

/* fit_robust fits y ~ a + b x over sizes that span three orders of magnitude: b from the
 * least-squares fit (which the largest sizes decide), a the median of y - b x (which the
 * small sizes, where b x is small, decide; a plain fit lets a few percent of noise at 4 MiB
 * swamp a per-message cost of tens of us), at least 0 */
static int fit_robust(const double *x, const double *y, int n, double *a, double *b)
{
    double fa, fb, r[24];
    int rc = ordo_merge_fit_cost(x, y, n, &fa, &fb);
    if (rc) return rc;
    for (int i = 0; i < n && i < 24; i++)
        r[i] = y[i] - fb * x[i];
    *a = fmax(0.0, median(r, n < 24 ? n : 24));
    *b = fb;
    return 0;
}

/* a worker forked by the calibration: joins, measures the same sequence, and leaves */
static int calibrate_child(cal_t *c, const child_t *sched)
{
    ordo_worker_t *w = NULL;
    int rc = join(c->o, sched, &w);
    if (!rc) rc = calibrate_run(w, c, false);
    if (!rc) rc = ordo_worker_finish(w, NULL);
    if (rc && w) ordo_worker_abort(w, "a calibration worker failed");
    ordo_worker_destroy(&w);
    return rc ? 1 : 0;
}

int ordo_bench_calibrate(int argc, char **argv)
{
    opts_t o = {
        .reps = 9, .min_bytes = 1024, .max_bytes = 4 << 20, .partition = 1 << 30, .segment = 0};
    int rc = parse_opts(argc, argv, &o,
                        "[--json] [--reps N] [--min BYTES] [--max BYTES] [--bandwidth RATE] "
                        "[--latency-us US] [--msg-us US] [--workers N] [--servers N] "
                        "[--io-thread]");
    if (rc) return rc > 0 ? 0 : 2;
    if (o.workers < 1) o.workers = 1;
    /* keys: one per round-trip size (min, 2 min, 4 min, ... max), then CAL_BURST per
     * burst size (every other round-trip size) */
    int64_t sizes[256];
    int n_rt = 0, n_burst = 0, burst_of[12];
    for (int64_t b = o.min_bytes; b <= o.max_bytes && n_rt < 24; b *= 2)
        sizes[n_rt++] = b;
    int n = n_rt;
    for (int i = 0; i < n_rt; i += 2) {
        burst_of[n_burst++] = n;
        for (int j = 0; j < CAL_BURST; j++)
            sizes[n++] = sizes[i];
    }
    child_t sched = {0}, srv[MAX_SERVERS] = {{0}};
    pid_t kids[64];
    int n_kids = 0;
    ordo_worker_t *w = NULL;
    cal_t c = {.o = &o,
               .sizes = sizes,
               .n_keys = n,
               .n_rt = n_rt,
               .n_burst = n_burst,
               .burst_of = burst_of};
    c.iter = calloc((size_t)n, sizeof *c.iter);
    c.val = calloc((size_t)o.max_bytes / 4 + 1, sizeof(float));
    c.grad = calloc((size_t)o.max_bytes / 4 + 1, sizeof(float));
    c.t = malloc(sizeof *c.t * (size_t)o.reps);
    c.t1 = malloc(sizeof *c.t1 * (size_t)o.reps);
    double rt_x[24], msg_x[12], a_rt, b_rt, a_msg, b_msg, a_one, b_one;
    if (!c.iter || !c.val || !c.grad || !c.t || !c.t1) {
        rc = ORDO_ENOMEM;
        goto done;
    }
    if ((rc = start_daemons(sizes, n, &o, &sched, srv)) != 0) goto done;
    /* the other workers: forked before this process starts any ZeroMQ thread */
    fflush(stdout);
    for (; n_kids < o.workers - 1; n_kids++) {
        kids[n_kids] = fork();
        if (kids[n_kids] < 0) {
            rc = ordo_error_set(ORDO_EIO, "cannot fork a calibration worker");
            goto done;
        }
        if (kids[n_kids] == 0) _exit(calibrate_child(&c, &sched));
    }
    if ((rc = join(&o, &sched, &w)) != 0) goto done;
    if (!o.json)
        printf("ordo push+pull calibration, %d server%s + %d worker%s on loopback, link %s%.3g "
               "gbit/s, latency %g us, %g us per message, median of %d\n%10s %14s %14s\n",
               o.servers > 1 ? o.servers : 1, o.servers > 1 ? "s" : "", o.workers,
               o.workers > 1 ? "s" : "", o.bandwidth_bps > 0 ? "" : "unpaced ",
               o.bandwidth_bps / 1e9, o.latency_us, o.msg_us, o.reps, "bytes", "round_trip_us",
               "per_msg_us");
    if ((rc = calibrate_run(w, &c, true)) != 0) goto done;
    for (int i = 0; i < n_rt; i++)
        rt_x[i] = (double)sizes[i];
    for (int k = 0; k < n_burst; k++)
        msg_x[k] = (double)sizes[2 * k];
    if ((rc = ordo_merge_fit_cost(rt_x, c.rt_y, n_rt, &a_rt, &b_rt)) != 0) goto done;
    if ((rc = fit_robust(msg_x, c.msg_y, n_burst, &a_msg, &b_msg)) != 0) goto done;
    if ((rc = fit_robust(msg_x, c.one_y, n_burst, &a_one, &b_one)) != 0) goto done;
    /* The planner's two stages: the link (a + b * bytes) and then the receivers (c * bytes,
     * once a message has arrived). Pipelined pushes pay the link stage per message, one push
     * alone pays both. b is the pipelined per-byte figure, or the emulated link's 8 / rate
     * when that is slower (with W workers pushing at once the CPU of a small machine, not
     * the link, can bound the stream: 1.1-1.3 ns/B at 10 Gbit/s on 2 cores), and c what a
     * push alone takes per byte beyond it. */
    double b_plan = o.bandwidth_bps > 0 ? fmax(8.0 / o.bandwidth_bps, b_msg) : b_msg;
    double c_plan = fmax(0.0, b_one - b_plan);
    if (o.json) {
        printf("{\"fit\":\"round_trip\",\"a_s\":%.9g,\"b_s_per_byte\":%.9g}\n", a_rt, b_rt);
        printf("{\"fit\":\"one_push\",\"a_s\":%.9g,\"b_s_per_byte\":%.9g}\n", a_one, b_one);
        printf("{\"fit\":\"per_message\",\"a_s\":%.9g,\"b_s_per_byte\":%.9g,"
               "\"merge_a_us\":%.4g,\"merge_b_ns\":%.4g,\"merge_c_ns\":%.4g}\n",
               a_msg, b_msg, a_msg * 1e6, b_plan * 1e9, c_plan * 1e9);
    } else {
        printf("round trip (push + pull):    a = %.1f us, b = %.4g ns/byte\n", a_rt * 1e6,
               b_rt * 1e9);
        printf("one push alone (to its ack): a = %.1f us, b = %.4g ns/byte\n", a_one * 1e6,
               b_one * 1e9);
        printf("per message (pipelined):     a = %.1f us, b = %.4g ns/byte\n", a_msg * 1e6,
               b_msg * 1e9);
        printf("for the merge planner: [push] merge_a_us = %.4g, merge_b_ns = %.4g, merge_c_ns = "
               "%.4g\n",
               a_msg * 1e6, b_plan * 1e9, c_plan * 1e9);
    }
done:
    if (rc) fprintf(stderr, "ordo-bench calibrate: %s\n", ordo_error_text(rc));
    if (rc && w) ordo_worker_abort(w, "the calibration failed");
    stop_cluster(&sched, srv, &w);
    for (int i = 0; i < n_kids; i++) {
        int st;
        if (kids[i] > 0 && waitpid(kids[i], &st, 0) == kids[i] &&
            !(WIFEXITED(st) && WEXITSTATUS(st) == 0) && !rc)
            rc = ordo_error_set(ORDO_EIO, "calibration worker %d failed", i + 1);
    }
    free(c.iter);
    free(c.val);
    free(c.grad);
    free(c.t);
    free(c.t1);
    return rc ? 1 : 0;
}
