/* run_util: helpers for integration tests that run a whole cluster the way a user does,
 * with scripts/ordo-launch, and then read its run folder (metrics.jsonl, summary.json,
 * traces, params.bin). Each run gets its own temporary folder, removed by it_run_destroy. */
#ifndef ORDO_RUN_UTIL_H
#define ORDO_RUN_UTIL_H

#include <jansson.h>
#include <stdbool.h>

typedef struct it_run {
    char root[256]; /* temporary folder: the conf, the launcher's log, the run folder */
    char dir[512];  /* root/run: the run folder the scheduler wrote */
    char log[512];  /* everything ordo-launch printed */
    int status;     /* ordo-launch's exit status; 124 when it ran past the time limit */
} it_run_t;

/* it_run_launch writes conf_text to a conf file and runs ordo-launch on it with the given
 * NULL-terminated extra --section.key=VALUE overrides (output.dir and output.run are set
 * here), waiting up to timeout_s. Fills *r and returns r->status; on a non-zero status the
 * launcher's log tail is printed. */
int it_run_launch(it_run_t *r, const char *conf_text, int timeout_s, ...);

/* it_run_launch_file is it_run_launch over a conf file; a relative path is taken from the
 * repository root (ORDO_SOURCE_DIR), e.g. "conf/mlp.ini". */
int it_run_launch_file(it_run_t *r, const char *conf_file, int timeout_s, ...);

/* it_run_path returns "r->dir/name" in a static buffer (one of four in rotation). */
const char *it_run_path(const it_run_t *r, const char *name);

/* it_run_summary parses summary.json (NULL when missing or not JSON); caller decrefs. */
json_t *it_run_summary(const it_run_t *r);

/* it_run_metrics parses metrics.jsonl into an array of objects (NULL when a line is not a
 * JSON object); caller decrefs. */
json_t *it_run_metrics(const it_run_t *r);

/* it_run_log_has reports whether the launcher's log contains text. */
bool it_run_log_has(const it_run_t *r, const char *text);

/* it_run_print_log prints the last `lines` lines of the launcher's log to stderr. */
void it_run_print_log(const it_run_t *r, int lines);

/* it_run_destroy removes r's temporary folder. */
void it_run_destroy(it_run_t *r);

/* it_num reads a number member of o (NaN when missing or not a number). */
double it_num(const json_t *o, const char *key);

#endif
