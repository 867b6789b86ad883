/* runlog: the run's record on the scheduler. It takes each worker's per-iteration stats,
 * appends them to runs/RUN/metrics.jsonl, and at the end computes and writes summary.json
 * (throughput, step, compute and wait time mean/p50/p95, straggler effect, efficiency, bytes
 * per iteration, final loss and test accuracy when training). */
#ifndef ORDO_RUNLOG_H
#define ORDO_RUNLOG_H

#include <stdint.h>

#include <jansson.h>

#include "common/conf.h"

#include <jansson.h>

typedef struct ordo_runlog ordo_runlog_t;

/* One worker's figures for one iteration, as reported in a STATS message. Times t_start_ns
 * and t_push_done_ns are CLOCK_MONOTONIC of the worker's host. */
typedef struct ordo_iter_stats {
    int worker;
    int64_t iter;
    double step_ms, wait_ms, compute_ms;
    int64_t bytes_push, bytes_pull;
    double efficiency; /* NaN when not measured */
    double loss;       /* NaN when not training */
    int samples;
    int64_t t_start_ns, t_push_done_ns, t_end_ns;
    char extra[512]; /* further JSON members ("k":v,...) copied into metrics.jsonl */
} ordo_iter_stats_t;

/* ordo_runlog_new creates the run folder dir (and parents) and opens metrics.jsonl. */
int ordo_runlog_new(const char *dir, const ordo_conf_t *conf, int n_workers, ordo_runlog_t **out);

/* ordo_runlog_seen_fn is told each record ordo_runlog_continue takes up. */
typedef void (*ordo_runlog_seen_fn)(void *ctx, int worker, int64_t iter);

/* ordo_runlog_continue opens the metrics.jsonl of a run a dead scheduler began
 * (fault.scheduler = restart): its records count into the summary, seen is told each one,
 * and new ones are appended. */
int ordo_runlog_continue(const char *dir, const ordo_conf_t *conf, int n_workers,
                         ordo_runlog_seen_fn seen, void *ctx, ordo_runlog_t **out);

/* ordo_runlog_parse_stats validates a STATS JSON body into s. */
int ordo_runlog_parse_stats(const char *json, int n_workers, ordo_iter_stats_t *s);

/* ordo_runlog_add records one worker-iteration and appends its metrics line. */
int ordo_runlog_add(ordo_runlog_t *r, const ordo_iter_stats_t *s);

/* ordo_runlog_final records a worker's DONE body (JSON: final_loss, test_accuracy ...). */
int ordo_runlog_final(ordo_runlog_t *r, int worker, const char *json);

/* ordo_runlog_set_section makes the summary carry value (whose reference it takes) as its
 * member name, replacing an earlier one of that name. */
int ordo_runlog_set_section(ordo_runlog_t *r, const char *name, json_t *value);

/* ordo_runlog_write_summary computes the summary, writes summary.json and returns its text
 * through *text when non-NULL (caller frees). */
int ordo_runlog_write_summary(ordo_runlog_t *r, char **text);

/* ordo_runlog_destroy closes files and frees; NULL-safe. */
void ordo_runlog_destroy(ordo_runlog_t **r);

#endif
