/* ordo-bench: ordo's benchmarks, one subcommand each; every one prints a readable table,
 * or with --json one JSON object per row. */
#include "common/transport.h"
#include "tools/bench_codec.h"
#include "tools/bench_intra.h"
#include "tools/bench_pushpull.h"
#include "tools/bench_topk.h"

#include <stdio.h>
#include <string.h>

typedef struct {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *help;
} cmd_t;

static const cmd_t cmds[] = {
    {"pushpull", ordo__bench_pushpull, "ordo push+pull goodput and latency vs raw ZeroMQ"},
    {"calibrate", ordo__bench_calibrate, "fit the cost model a + b*bytes from round trips"},
    {"topk", ordo__bench_topk, "full sort vs quickselect vs threshold scan on 25M floats"},
    {"aggregate", ordo__bench_aggregate, "sparse aggregation: dense accumulator vs hash"},
    {"codec", ordo__bench_codec, "wire codecs: encode/decode throughput, the server's sum per value"},
    {"intra", ordo__bench_intra, "shm reduce-scatter + all-gather among L processes vs memcpy"},
    {"echo", ordo__bench_echo, "(used by pushpull) a raw ZeroMQ echo process"},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: ordo-bench COMMAND [--json] [options]   (ordo-bench COMMAND --help)\n");
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
        fprintf(f, "  %-10s %s\n", cmds[i].name, cmds[i].help);
}

int main(int argc, char **argv)
{
    ordo__transport_keep_buffers(); /* for ordo and the raw ZeroMQ runs alike */
    if (argc < 2) {
        fprintf(stderr, "ordo-bench: missing command\n");
        usage(stderr);
        return 2;
    }
    if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        usage(stdout);
        return 0;
    }
    if (!strcmp(argv[1], "--version")) {
        printf("ordo-bench %s\n", ORDO_VERSION);
        return 0;
    }
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++)
        if (!strcmp(argv[1], cmds[i].name)) return cmds[i].run(argc - 1, argv + 1);
    fprintf(stderr, "ordo-bench: unknown command '%s'\n", argv[1]);
    usage(stderr);
    return 2;
}
