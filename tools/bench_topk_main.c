/* ordo-bench-topk: a stand-alone runner for the sparse benchmarks until ordo-bench links
 * them: `ordo-bench-topk topk [...]` or `ordo-bench-topk aggregate [...]`. */
#include "tools/bench_topk.h"

#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    if (argc >= 2 && strcmp(argv[1], "topk") == 0) return ordo__bench_topk(argc - 1, argv + 1);
    if (argc >= 2 && strcmp(argv[1], "aggregate") == 0)
        return ordo__bench_aggregate(argc - 1, argv + 1);
    if (argc >= 2 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        printf("usage: ordo-bench-topk topk|aggregate [--n N] [--density D] [--reps R] "
               "[--json]\n");
        return 0;
    }
    fprintf(stderr, "usage: ordo-bench-topk topk|aggregate [options] (--help for more)\n");
    return 2;
}
