/* bench: child daemons, options and timed round trips shared by ordo-bench's subcommands. */
#include "tools/bench.h"
#include "common/clock.h"
#include "common/conf.h"
#include "common/error.h"
#include "common/log.h"

#include <dirent.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- child daemons ------------------------------------------------------------------ */

static void sibling(const char *name, char *out, size_t size)
{
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    self[n > 0 ? n : 0] = '\0';
    char *slash = strrchr(self, '/');
    if (slash) *slash = '\0';
    snprintf(out, size, "%s/%s", slash ? self : ".", name);
}

int ordo__bench_spawn(ordo__bench_child_t *c, const char *name, char **args)
{
    char path[PATH_MAX + 64];
    sibling(name, path, sizeof path);
    int fds[2];
    if (pipe(fds) != 0) return ORDO_ERR_IO;
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
    return ordo__error_set(ORDO_ERR_IO, "%s did not start", path);
}

void ordo__bench_reap(ordo__bench_child_t *c)
{
    int st;
    for (int i = 0; i < 300; i++) {
        if (waitpid(c->pid, &st, WNOHANG) == c->pid) return;
        ordo__clock_sleep_ns(10000000);
    }
    kill(c->pid, SIGKILL);
    waitpid(c->pid, &st, 0);
}

/* nanoseconds all threads of process pid have run (0 = this process), from the
 * schedstat of each of its tasks; -1 when /proc cannot tell */
int64_t ordo__bench_cpu_ns(pid_t pid)
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

/* ---- timed round trips -------------------------------------------------------------- */

/* not fused: ordo__ps_push, then ordo__ps_pull of the next iteration, requested at
 * once */
int ordo__bench_once(ordo__ps_t *w, int key, float *val, float *grad, int64_t *iter, bool fused,
                    ordo__bench_times_t *t)
{
    int rc;
    int64_t t0 = ordo__clock_ns();
    if (fused) {
        if ((rc = ordo__ps_pushpull(w, key, grad, val, *iter, 0)) != 0) return rc;
    } else {
        if ((rc = ordo__ps_push(w, key, grad, *iter, 0)) != 0) return rc;
        if ((rc = ordo__ps_pull(w, key, val, *iter + 1, 0)) != 0) return rc;
    }
    ordo__ps_event_t ev;
    int64_t t_push = 0, t_pull = 0;
    for (int k = 0; k < 2; k++) {
        if ((rc = ordo__ps_poll(w, 60000, &ev)) != 0) return rc;
        if (ev.kind == ORDO__EV_PUSH_DONE)
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
void ordo__bench_keep_best(ordo__bench_times_t *best, const ordo__bench_times_t *t)
{
    if (t->push_pull_s < best->push_pull_s) best->push_pull_s = t->push_pull_s;
    if (t->push_s < best->push_s) best->push_s = t->push_s;
    if (t->pull_s < best->pull_s) best->pull_s = t->pull_s;
}

/* best times of reps round trips after one warm-up */
int ordo__bench_rtt(ordo__ps_t *w, int key, float *val, float *grad, int64_t *iter, int reps,
                   bool fused, ordo__bench_times_t *out)
{
    int rc;
    out->push_pull_s = out->push_s = out->pull_s = 1e30;
    for (int r = -1; r < reps; r++) {
        ordo__bench_times_t t;
        if ((rc = ordo__bench_once(w, key, val, grad, iter, fused, &t)) != 0) return rc;
        if (r >= 0) ordo__bench_keep_best(out, &t);
    }
    return 0;
}

int ordo__bench_parse_opts(int argc, char **argv, ordo__bench_opts_t *o, const char *usage)
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
        if (!strcmp(a, "--curve")) {
            o->curve = 1;
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
            ok = ordo__conf_parse_bytes(v, &o->min_bytes) == 0;
        else if (!strncmp(a, "--max", 5))
            ok = ordo__conf_parse_bytes(v, &o->max_bytes) == 0;
        else if (!strncmp(a, "--partition", 11))
            ok = ordo__conf_parse_bytes(v, &o->partition) == 0;
        else if (!strncmp(a, "--segment", 9))
            ok = ordo__conf_parse_bytes(v, &o->segment) == 0 &&
                 (o->segment == 0 || o->segment >= 1024);
        else if (!strncmp(a, "--bandwidth", 11))
            ok = ordo__conf_parse_rate(v, &o->bandwidth_bps) == 0;
        else if (!strncmp(a, "--latency-us", 12))
            o->latency_us = atof(v);
        else if (!strncmp(a, "--msg-us", 8))
            ok = (o->msg_us = atof(v)) >= 0;
        else if (!strncmp(a, "--workers", 9))
            ok = (o->workers = atoi(v)) >= 1 && o->workers <= 64;
        else if (!strncmp(a, "--replicas", 10))
            ok = (o->replicas = atoi(v)) >= 1 && o->replicas <= 3;
        else if (!strncmp(a, "--compression", 13))
            o->compression = v;
        else if (!strncmp(a, "--servers", 9))
            ok = (o->servers = atoi(v)) >= 1 && o->servers <= ORDO_BENCH_MAX_SERVERS;
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

/* start a scheduler and o->servers servers (at least 1; srv[ORDO_BENCH_MAX_SERVERS]) for a job
 * whose tensors are the given sizes and o->workers workers (at least 1) */
int ordo__bench_start_daemons(const int64_t *sizes, int n, const ordo__bench_opts_t *o,
                             ordo__bench_child_t *sched, ordo__bench_child_t *srv)
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
    char iarg[64], warg[64], sarg_n[64], rarg[64];
    snprintf(rarg, sizeof rarg, "--fault.replicas=%d", o->replicas > 1 ? o->replicas : 1);
    snprintf(iarg, sizeof iarg, "--net.io_thread=%s", o->io_thread ? "true" : "false");
    snprintf(warg, sizeof warg, "--cluster.workers=%d", o->workers > 1 ? o->workers : 1);
    snprintf(sarg_n, sizeof sarg_n, "--cluster.servers=%d", o->servers > 1 ? o->servers : 1);
    char *sargs[] = {NULL, "--cluster.scheduler=tcp://127.0.0.1:0", warg, sarg_n, targ, parg,
                     segarg, "--output.dir=/tmp/ordo-bench-runs", "--output.log_level=warn",
                     "--model.iterations=1000000", "--optimizer.lr=0",
                     /* the raw ZeroMQ runs leave the worker's transport unpolled for seconds */
                     "--fault.timeout_ms=120000", rarg, NULL, NULL, NULL};
    char ckarg[1100];
    if (o->curve_keys) { /* CURVE: the keys ordo-bench pushpull --curve wrote */
        snprintf(ckarg, sizeof ckarg, "--security.keys=%s", o->curve_keys);
        int k = (int)(sizeof sargs / sizeof sargs[0]) - 3;
        sargs[k] = "--security.curve=true";
        sargs[k + 1] = ckarg;
    }
    int rc = ordo__bench_spawn(sched, "ordo-scheduler", sargs);
    if (rc) return rc;
    char sarg[700];
    snprintf(sarg, sizeof sarg, "--cluster.scheduler=%s", sched->ready);
    char *vargs[] = {NULL, sarg, "--output.log_level=warn", "--optimizer.lr=0", barg, larg, marg,
                     iarg, NULL};
    char carg[1100] = "";
    if (o->curve_keys) snprintf(carg, sizeof carg, "--security.keys=%s", o->curve_keys);
    char *cvargs[] = {NULL,
                      sarg,
                      "--output.log_level=warn",
                      "--optimizer.lr=0",
                      barg,
                      larg,
                      marg,
                      iarg,
                      "--security.curve=true",
                      carg,
                      NULL};
    for (int i = 0; i < (o->servers > 1 ? o->servers : 1); i++)
        if ((rc = ordo__bench_spawn(&srv[i], "ordo-server", o->curve_keys ? cvargs : vargs)) != 0)
            return rc;
    return 0;
}

/* join the cluster of sched as a worker */
int ordo__bench_join(const ordo__bench_opts_t *o, const ordo__bench_child_t *sched, ordo__ps_t **w)
{
    ordo__conf_t conf;
    ordo__conf_defaults(&conf);
    snprintf(conf.scheduler, sizeof conf.scheduler, "%.*s", (int)sizeof conf.scheduler - 1,
             sched->ready);
    conf.bandwidth_bps = o->bandwidth_bps;
    conf.latency_us = o->latency_us;
    conf.msg_us = o->msg_us;
    conf.io_thread = o->io_thread;
    if (o->compression)
        snprintf(conf.compression, sizeof conf.compression, "%s", o->compression);
    if (o->curve_keys) {
        conf.curve = true;
        snprintf(conf.keys_dir, sizeof conf.keys_dir, "%s", o->curve_keys);
    }
    ordo__log_set_level(ORDO_LOG_WARN);
    return ordo__ps_new(&conf, w);
}

/* start a scheduler and one server, and join as the only worker */
int ordo__bench_start_cluster(const int64_t *sizes, int n, const ordo__bench_opts_t *o,
                             ordo__bench_child_t *sched, ordo__bench_child_t *srv, ordo__ps_t **w)
{
    int rc = ordo__bench_start_daemons(sizes, n, o, sched, srv);
    return rc ? rc : ordo__bench_join(o, sched, w);
}

void ordo__bench_stop_cluster(ordo__bench_child_t *sched, ordo__bench_child_t *srv, ordo__ps_t **w)
{
    if (*w) {
        ordo__ps_finish(*w, NULL);
        ordo__ps_destroy(w);
    }
    ordo__bench_reap(sched);
    for (int i = 0; i < ORDO_BENCH_MAX_SERVERS; i++)
        if (srv[i].pid > 0) ordo__bench_reap(&srv[i]);
}
