/* bench_intra: the `ordo-bench intra` benchmark of the shared-memory intra-host backend
 * (client/intra_shm.c): a reduce-scatter (every member puts the model, each chunk's owner
 * sums it) plus an all-gather (the owner publishes, every member fetches) among L forked
 * processes, against a memcpy of the same bytes in the same run. */
#ifndef ORDO_BENCH_INTRA_H
#define ORDO_BENCH_INTRA_H

/* ordo__bench_intra runs `intra` (argv[0] is the subcommand name): options --bytes N (model
 * bytes, 64 MiB), --chunk N (4 MiB), --reps R (5, the median is reported), --json. Prints one
 * row per L in 2, 4. Returns the process exit status (2 on a usage error). */
int ordo__bench_intra(int argc, char **argv);

#endif
