/* driver: runs a libFuzzer-style target without libFuzzer. It feeds the seed inputs given
 * on the command line, then a fixed number of deterministic mutations of them (bit flips,
 * byte overwrites, truncations, insertions; ORDO_FUZZ_ITERATIONS of them, varied by
 * ORDO_FUZZ_SEED), so every build exercises the targets as a test; with clang and
 * -DORDO_FUZZ=ON the same targets link against libFuzzer instead. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static uint8_t *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *buf = malloc((size_t)n + 1);
    *len = fread(buf, 1, (size_t)n, f);
    fclose(f);
    return buf;
}

int main(int argc, char **argv)
{
    int iterations = 20000;
    const char *env = getenv("ORDO_FUZZ_ITERATIONS");
    if (env) iterations = atoi(env);
    env = getenv("ORDO_FUZZ_SEED"); /* other mutations than the default run's */
    if (env && strtoull(env, NULL, 0)) rng ^= strtoull(env, NULL, 0) * 0x9e3779b97f4a7c15ull;
    int seeds = 0;
    for (int i = 1; i < argc; i++) {
        size_t len;
        uint8_t *seed = slurp(argv[i], &len);
        if (!seed) {
            fprintf(stderr, "driver: cannot read %s\n", argv[i]);
            return 2;
        }
        seeds++;
        LLVMFuzzerTestOneInput(seed, len);
        size_t cap = len + 64;
        uint8_t *m = malloc(cap);
        for (int it = 0; it < iterations / (argc - 1); it++) {
            size_t n = len;
            memcpy(m, seed, len);
            int edits = 1 + (int)(next() % 4);
            for (int e = 0; e < edits && n > 0; e++) {
                switch (next() % 4) {
                case 0: m[next() % n] ^= (uint8_t)(1u << (next() % 8)); break;
                case 1: m[next() % n] = (uint8_t)next(); break;
                case 2: n = next() % (n + 1); break;
                default:
                    if (n < cap) {
                        size_t at = next() % (n + 1);
                        memmove(m + at + 1, m + at, n - at);
                        m[at] = (uint8_t)next();
                        n++;
                    }
                }
            }
            LLVMFuzzerTestOneInput(m, n);
        }
        free(m);
        free(seed);
    }
    printf("fuzz driver: %d seeds, %d mutated inputs, no crash\n", seeds, iterations);
    printf("1 passed, 0 failed\n");
    return 0;
}
