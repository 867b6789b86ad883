/* bench_topk: the `ordo-bench topk` and `ordo-bench aggregate` benchmarks of sparse pushes.
 * topk times three ways to pick the top-k of a gradient-like vector (full sort, Floyd-Rivest
 * quickselect, threshold scan); aggregate times the server's two sparse accumulators. Both
 * print a readable table, or one JSON object per row with --json. */
#ifndef ORDO_BENCH_TOPK_H
#define ORDO_BENCH_TOPK_H

/* ordo__bench_topk runs `topk` (argv[0] is the subcommand name): options --n N (25000000),
 * --density D (0.01), --reps R (5, the median is reported), --dist NAME (all four by
 * default), --json. It returns the process exit status (2 on a usage error). */
int ordo__bench_topk(int argc, char **argv);

/* ordo__bench_aggregate runs `aggregate`: options --n N (region size, 25000000),
 * --density D (0.01), --workers W (8), --overlap F (0.5: the share of each worker's entries
 * common to all), --reps R (5), --json. Returns the exit status. */
int ordo__bench_aggregate(int argc, char **argv);

#endif
