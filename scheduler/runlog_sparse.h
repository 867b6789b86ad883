/* runlog_sparse: the "sparse" section of summary.json, made from the sparse counters the
 * workers add to their per-iteration STATS ([push] mode = sparse, client/sparse_push.h):
 * entries selected locally and globally against k, payload bytes per worker and iteration
 * against the traffic bound 2 x 8 x k x 1.25 (index and value, both ways, 25% slack), and
 * the per-server load (entries pushed to each server, summed over workers) with its
 * imbalance per region epoch, before and after re-balancing. */
#ifndef ORDO_RUNLOG_SPARSE_H
#define ORDO_RUNLOG_SPARSE_H

#include <jansson.h>

#include "scheduler/runlog.h"

/* ordo_runlog_sparse_summary computes the section from n records of n_workers workers;
 * NULL when the records carry no sparse counters (dense or merged runs). */
json_t *ordo_runlog_sparse_summary(const ordo_iter_stats_t *recs, int n, int n_workers);

#endif
