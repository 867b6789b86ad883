/* runlog_sparse: the "sparse" section of summary.json, made from the sparse counters the
 * workers add to their per-iteration STATS ([push] mode = sparse, client/sparse_push.h):
 * entries selected locally and globally against k, payload bytes per worker and iteration
 * against the traffic bound 2 x 8 x k x 1.25 (index and value, both ways, 25% slack), and
 * the per-server load (entries pushed to each server, summed over workers) with its
 * imbalance per region epoch, before and after re-balancing. The records are taken as they
 * come: memory grows with the region epochs, not with the iterations. */
#ifndef ORDO_RUNLOG_SPARSE_H
#define ORDO_RUNLOG_SPARSE_H

#include <jansson.h>

#include "scheduler/runlog.h"

typedef struct ordo__runlog_sparse ordo__runlog_sparse_t;

/* ordo__runlog_sparse_new makes an empty accumulator for n_workers workers. */
int ordo__runlog_sparse_new(int n_workers, ordo__runlog_sparse_t **out);

/* ordo__runlog_sparse_add takes one record (records without sparse counters are ignored). */
void ordo__runlog_sparse_add(ordo__runlog_sparse_t *a, const ordo__iter_stats_t *s);

/* ordo__runlog_sparse_section computes the section from the records taken (the caller owns
 * it); NULL when none carried sparse counters (dense or merged runs). */
json_t *ordo__runlog_sparse_section(const ordo__runlog_sparse_t *a);

/* ordo__runlog_sparse_destroy frees a; NULL-safe, sets *a = NULL. */
void ordo__runlog_sparse_destroy(ordo__runlog_sparse_t **a);

/* ordo__runlog_sparse_summary computes the section from n records of n_workers workers at
 * once (new, add each, section, destroy); NULL as above. */
json_t *ordo__runlog_sparse_summary(const ordo__iter_stats_t *recs, int n, int n_workers);

#endif
