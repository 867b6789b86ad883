/* codec_cli: runs one compression spec under its error feedback over several steps, for
 * replays against a reference (tests/python/codec_ref.py). It reads STEPS x N float32 from
 * stdin (little-endian, step after step) and writes per step one record to stdout:
 *   int64 len (the frame's bytes, or a negative ORDO_ERR_*), int64 overflow (fp16),
 *   the frame (len bytes when len > 0), then N float32 decoded values (zeros when len < 0)
 *   and the N float32 residual after the step.
 * Step s encodes with seed SEED + s (randomk). Not installed: a test tool. */
#include "common/error.h"
#include "common/codec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int usage(void)
{
    fprintf(stderr,
            "usage: codec_cli SPEC N STEPS [--seed S] [--scale F] [--scalar]\n"
            "  reads STEPS*N float32 from stdin, writes a record a step (see the source)\n");
    return 2;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        usage();
        return 0;
    }
    if (argc < 4) return usage();
    ordo__codec_spec_t c;
    if (ordo__codec_parse(argv[1], &c) < 0) {
        fprintf(stderr, "codec_cli: %s\n", ordo__error_detail());
        return 2;
    }
    char *end;
    long long n = strtoll(argv[2], &end, 10), steps = strtoll(argv[3], NULL, 10);
    if (*end || n < 0 || n > (1LL << 28) || steps < 1) return usage();
    uint64_t seed = 0;
    for (int i = 4; i < argc; i++) {
        if (!strcmp(argv[i], "--seed") && i + 1 < argc)
            seed = strtoull(argv[++i], NULL, 0);
        else if (!strcmp(argv[i], "--scale") && i + 1 < argc)
            c.scale = strtof(argv[++i], NULL);
        else if (!strcmp(argv[i], "--scalar"))
            ordo__codec_set_simd(false);
        else
            return usage();
    }
    const ordo__codec_ops_t *ops = ordo__codec_ops(c.id);
    size_t bytes = (size_t)n * sizeof(float);
    float *src = malloc(bytes + 4), *res = calloc((size_t)n + 1, sizeof(float));
    float *scratch = malloc(bytes + 4), *dec = malloc(bytes + 4);
    void *frame = malloc(ops->max_bytes(&c, n) + 1);
    int rc = 1;
    if (!src || !res || !scratch || !dec || !frame) goto done;
    for (long long s = 0; s < steps; s++) {
        if (fread(src, 1, bytes, stdin) != bytes) {
            fprintf(stderr, "codec_cli: step %lld: short input\n", s);
            goto done;
        }
        ordo__codec_io_t io = {.seed = seed + (uint64_t)s};
        int64_t len = ordo__codec_encode_ef(&c, src, n, res, scratch, frame, &io);
        memset(dec, 0, bytes);
        if (len >= 0 && ordo__codec_decode(ops->dtype, frame, (size_t)len, n, dec) < 0) {
            fprintf(stderr, "codec_cli: step %lld: %s\n", s, ordo__error_detail());
            goto done;
        }
        fwrite(&len, sizeof len, 1, stdout);
        fwrite(&io.overflow, sizeof io.overflow, 1, stdout);
        if (len > 0) fwrite(frame, 1, (size_t)len, stdout);
        fwrite(dec, 1, bytes, stdout);
        fwrite(res, 1, bytes, stdout);
    }
    rc = fflush(stdout) == 0 ? 0 : 1;
done:
    free(src), free(res), free(scratch), free(dec), free(frame);
    return rc;
}
