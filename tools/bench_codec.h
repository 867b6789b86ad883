/* bench_codec: the `ordo-bench codec` benchmark of the wire codecs (common/codec.h): per codec,
 * encode and decode throughput and bytes per value on a gradient-like tensor, beside a
 * float32 memcpy and ordo__vec_add (a float32 push's cost on the server), and the server's
 * cost per value of summing a push: decode then add, against the fused decode_add. */
#ifndef ORDO_BENCH_CODEC_H
#define ORDO_BENCH_CODEC_H

/* ordo__bench_codec runs `codec` (argv[0] is the subcommand name): options --n N (values,
 * 4194304), --reps R (7, the median is reported), --scalar (the hand-written vector paths
 * off), --json. Returns the process exit status (2 on a usage error). */
int ordo__bench_codec(int argc, char **argv);

#endif
