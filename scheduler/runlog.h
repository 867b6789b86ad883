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

typedef struct ordo__runlog ordo__runlog_t;

/* One worker's figures for one iteration, as reported in a STATS message. Times t_start_ns
 * and t_push_done_ns are CLOCK_MONOTONIC of the worker's host. */
typedef struct ordo__iter_stats {
    int worker;
    int64_t iter;
    double step_ms, wait_ms, compute_ms;
    int64_t bytes_push, bytes_pull;
    double efficiency; /* NaN when not measured */
    double loss;       /* NaN when not training */
    int samples;
    int64_t t_start_ns, t_push_done_ns, t_end_ns;
    char extra[512]; /* further JSON members ("k":v,...) copied into metrics.jsonl */
} ordo__iter_stats_t;

/* ordo__runlog_new creates the run folder dir (and parents) and opens metrics.jsonl. */
int ordo__runlog_new(const char *dir, const ordo__conf_t *conf, int n_workers, ordo__runlog_t **out);

/* ordo_runlog_seen_fn is told each record ordo__runlog_continue takes up. */
typedef void (*ordo_runlog_seen_fn)(void *ctx, int worker, int64_t iter);

/* ordo__runlog_continue opens the metrics.jsonl of a run a dead scheduler began
 * (fault.scheduler = restart): its records count into the summary, seen is told each one,
 * and new ones are appended. */
int ordo__runlog_continue(const char *dir, const ordo__conf_t *conf, int n_workers,
                         ordo_runlog_seen_fn seen, void *ctx, ordo__runlog_t **out);

/* ordo__runlog_parse_stats validates a STATS JSON body into s. */
int ordo__runlog_parse_stats(const char *json, int n_workers, ordo__iter_stats_t *s);

/* ordo__runlog_add records one worker-iteration and appends its metrics line; the line
 * reaches the file at the next ordo__runlog_flush (the scheduler flushes once a STATS
 * message, whose records may be several: [output] stats_every). */
int ordo__runlog_add(ordo__runlog_t *r, const ordo__iter_stats_t *s);

/* ordo__runlog_flush writes the metrics lines added so far to metrics.jsonl. */
void ordo__runlog_flush(ordo__runlog_t *r);

/* ordo__runlog_final records a worker's DONE body (JSON: final_loss, test_accuracy ...). */
int ordo__runlog_final(ordo__runlog_t *r, int worker, const char *json);

/* ordo__runlog_set_section makes the summary carry value (whose reference it takes) as its
 * member name, replacing an earlier one of that name. */
int ordo__runlog_set_section(ordo__runlog_t *r, const char *name, json_t *value);

/* ordo__runlog_write_summary computes the summary, writes summary.json and returns its text
 * through *text when non-NULL (caller frees). */
int ordo__runlog_write_summary(ordo__runlog_t *r, char **text);

/* ordo__runlog_destroy closes files and frees; NULL-safe. */
void ordo__runlog_destroy(ordo__runlog_t **r);

#endif
