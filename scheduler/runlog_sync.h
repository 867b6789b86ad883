/* runlog_sync: the consistency-model and straggler section of the run summary: the
 * staleness the pulls saw, the pushes left out as late, and the time to a target test
 * accuracy (docs/formats.md, summary.json). It is kept as the records come, in constant
 * memory. */
#ifndef ORDO_RUNLOG_SYNC_H
#define ORDO_RUNLOG_SYNC_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "common/conf.h"
#include "scheduler/runlog.h"

#define ORDO_RUNLOG_SYNC_BUCKETS 64

/* What the section needs of the records seen so far (the runlog embeds it). */
typedef struct ordo__runlog_sync {
    int64_t hist[ORDO_RUNLOG_SYNC_BUCKETS], late, pulls;
    int top;
    bool any;
    int64_t t0, hit_ns;
} ordo__runlog_sync_t;

/* ordo__runlog_sync_init empties y. */
void ordo__runlog_sync_init(ordo__runlog_sync_t *y);

/* ordo__runlog_sync_add takes record s's further members ("stale", "late_pushes", worker 0's
 * "test_accuracy") into y. */
void ordo__runlog_sync_add(ordo__runlog_sync_t *y, const ordo__iter_stats_t *s,
                          const ordo__conf_t *conf);

/* ordo__runlog_sync_write adds to root "sync" (the mode, the histogram of the pulled slices'
 * staleness, its mean and max, the late pushes) when the records carried them, and
 * "time_to_target_s" when conf's model.target_accuracy is set. */
void ordo__runlog_sync_write(json_t *root, const ordo__runlog_sync_t *y, const ordo__conf_t *conf);

#endif
