/* bench_pushpull: `ordo-bench pushpull` and `ordo-bench calibrate`, measured against real
 * ordo processes (a scheduler and one server started as children) on loopback. */
#ifndef ORDO_BENCH_PUSHPULL_H
#define ORDO_BENCH_PUSHPULL_H

/* ordo__bench_pushpull measures, per size from 4 KiB to 64 MiB, ordo's push+pull goodput and
 * latency and, in the same run, a raw ZeroMQ DEALER/ROUTER round trip of the same size;
 * prints a table (or --json rows {"bytes","ordo_gbps","raw_gbps",...}). argv[0] = name. */
int ordo__bench_pushpull(int argc, char **argv);

/* ordo__bench_echo is pushpull's raw ZeroMQ echo process: a ROUTER on a loopback port that
 * prints "READY endpoint" and sends every message back until its parent exits. */
int ordo__bench_echo(int argc, char **argv);

/* ordo__bench_calibrate times push+pull round trips over a range of sizes (optionally on
 * an emulated link), fits the cost model a + b*bytes by least squares and prints a, b. */
int ordo__bench_calibrate(int argc, char **argv);

#endif
