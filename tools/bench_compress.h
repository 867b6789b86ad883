/* bench_compress: `ordo-bench pushpull --compression LIST`, the wire codecs side by side: one
 * cluster (1 server + 1 worker on loopback) per codec of LIST (float32 first, for the ratio),
 * the same fused push+pull round trips taking turns per size; values per second, the bytes on
 * the wire per value each way, and the CPU time of worker and server per value. */
#ifndef ORDO_BENCH_COMPRESS_H
#define ORDO_BENCH_COMPRESS_H

#include <stdint.h>

#include "tools/bench.h"

/* ordo__bench_compress prints the table for the n tensor sizes (o->compression: a
 * comma-free list of codec specs separated by '/' or spaces, e.g. "bf16 fp16 onebit"); 0, or
 * 1 on a failure (printed). */
int ordo__bench_compress(const int64_t *sizes, int n, const ordo__bench_opts_t *o);

#endif
