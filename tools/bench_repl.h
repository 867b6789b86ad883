/* bench_repl: `ordo-bench pushpull --replicas R`, the cost of replicated servers ([fault]
 * replicas): two clusters of R servers each, one without copies (replicas = 1) and one with R
 * replicas, timed with the same fused push+pull round trips taking turns, side by side. */
#ifndef ORDO_BENCH_REPL_H
#define ORDO_BENCH_REPL_H

#include <stdint.h>

#include "tools/bench.h"

/* ordo__bench_replicas prints the table for the n tensor sizes (o->replicas >= 2 copies; its
 * other options as pushpull's); 0, or 1 on a failure (printed). */
int ordo__bench_replicas(const int64_t *sizes, int n, const ordo__bench_opts_t *o);

#endif
