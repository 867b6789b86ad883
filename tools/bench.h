/* bench: what the subcommands of ordo-bench that run real ordo processes share: starting
 * a scheduler and servers as child processes (each prints "READY endpoint"), joining them as
 * a worker, their options, and a timed push + pull round trip. */
#ifndef ORDO_BENCH_H
#define ORDO_BENCH_H

#include "client/ps.h"

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define ORDO_BENCH_MAX_SERVERS 8

/* a child process started by ordo__bench_spawn, and the endpoint its READY line gave */
typedef struct {
    pid_t pid;
    char ready[640];
} ordo__bench_child_t;

/* the options of pushpull and calibrate (ordo__bench_parse_opts) */
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
    int replicas;   /* [fault] replicas of the servers started (0 = 1); pushpull --replicas */
    int curve;      /* pushpull --curve: a plain and a CURVE cluster side by side */
    const char *curve_keys; /* the cluster started and joined uses CURVE with these keys */
    const char *compression; /* pushpull --compression: the codecs compared; the cluster joined
                              * pushes in this one ([push] compression) */
} ordo__bench_opts_t;

/* the best times of round trips (ordo__bench_rtt) */
typedef struct {
    double push_pull_s; /* best time of one push followed by the pull of the new value */
    double push_s, pull_s;
} ordo__bench_times_t;

/* ordo__bench_spawn starts the ordo binary name (beside this one) with args (args[0] is set
 * here) and waits for its "READY endpoint" line, kept in c->ready. */
int ordo__bench_spawn(ordo__bench_child_t *c, const char *name, char **args);

/* ordo__bench_reap waits up to 3 s for c to exit, then kills it. */
void ordo__bench_reap(ordo__bench_child_t *c);

/* ordo__bench_cpu_ns returns the CPU time all threads of process pid (0 = this one) have run,
 * in nanoseconds, or -1 when /proc cannot tell. */
int64_t ordo__bench_cpu_ns(pid_t pid);

/* ordo__bench_once times one round trip of key: push then pull of the next value (fused:
 * ordo__ps_pushpull, one message each way per chunk); *iter advances. */
int ordo__bench_once(ordo__ps_t *w, int key, float *val, float *grad, int64_t *iter, bool fused,
                    ordo__bench_times_t *t);

/* ordo__bench_keep_best keeps in best the smaller of each of its times and t's. */
void ordo__bench_keep_best(ordo__bench_times_t *best, const ordo__bench_times_t *t);

/* ordo__bench_rtt times reps push + pull round trips of key after one warm-up (fused:
 * ordo__ps_pushpull) and keeps the best of each time in out; *iter advances. */
int ordo__bench_rtt(ordo__ps_t *w, int key, float *val, float *grad, int64_t *iter, int reps,
                   bool fused, ordo__bench_times_t *out);

/* ordo__bench_parse_opts reads the common options into o (its defaults set by the caller):
 * 0 to go on, 1 after --help, -2 on a usage error (printed). */
int ordo__bench_parse_opts(int argc, char **argv, ordo__bench_opts_t *o, const char *usage);

/* ordo__bench_start_daemons starts a scheduler and o->servers servers (srv has
 * ORDO_BENCH_MAX_SERVERS entries) for a job of the given tensor sizes and o->workers
 * workers. */
int ordo__bench_start_daemons(const int64_t *sizes, int n, const ordo__bench_opts_t *o,
                             ordo__bench_child_t *sched, ordo__bench_child_t *srv);

/* ordo__bench_join joins sched's cluster as a worker (*w; destroy with
 * ordo__bench_stop_cluster). */
int ordo__bench_join(const ordo__bench_opts_t *o, const ordo__bench_child_t *sched, ordo__ps_t **w);

/* ordo__bench_start_cluster starts the daemons and joins as the only worker. */
int ordo__bench_start_cluster(const int64_t *sizes, int n, const ordo__bench_opts_t *o,
                             ordo__bench_child_t *sched, ordo__bench_child_t *srv, ordo__ps_t **w);

/* ordo__bench_stop_cluster finishes and destroys *w (if any) and reaps the daemons. */
void ordo__bench_stop_cluster(ordo__bench_child_t *sched, ordo__bench_child_t *srv, ordo__ps_t **w);

#endif
