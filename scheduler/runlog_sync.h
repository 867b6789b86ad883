/* runlog_sync: the consistency-model and straggler section of the run summary: the
 * staleness the pulls saw, the pushes left out as late, and the time to a target test
 * accuracy (docs/formats.md, summary.json). */
#ifndef ORDO_RUNLOG_SYNC_H
#define ORDO_RUNLOG_SYNC_H

#include <jansson.h>

#include "common/conf.h"
#include "scheduler/runlog.h"

/* ordo_runlog_sync_summary adds to root, from the n records' further members ("stale",
 * "late_pushes", worker 0's "test_accuracy"): "sync" (the mode, the histogram of
 * the pulled slices' staleness, its mean and max, the late pushes) when the records carry
 * them, and "time_to_target_s" when conf's model.target_accuracy is set. */
void ordo_runlog_sync_summary(json_t *root, const ordo_iter_stats_t *recs, int n,
                              const ordo_conf_t *conf);

#endif
