/* fuzz_coo: any bytes given as a sparse payload (core/coo.h) are accepted as entries inside
 * the declared range, strictly increasing and finite, or rejected without a write; the same
 * bytes given to the sparse messages' decoders (core/sparse_wire.h: counts, REGIONS,
 * THRESHOLD) are accepted only when well formed. The first two bytes pick the range the
 * server declares (lo, span), the rest is the payload. */
#include "common/error.h"
#include "core/coo.h"
#include "core/sparse_wire.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(cond)                                                                        \
    do {                                                                                   \
        if (!(cond)) __builtin_trap();                                                     \
    } while (0)

static void coo(const uint8_t *buf, size_t len, uint32_t lo, uint32_t hi)
{
    size_t count = 0;
    int rc = ordo__coo_check(buf, len, lo, hi, &count);
    CHECK(rc == 0 || rc == ORDO_ERR_PROTO);
    size_t cap = len / ORDO_COO_ENTRY_BYTES + 1;
    ordo__coo_entry_t *out = malloc(cap * sizeof *out);
    float *dst = malloc(sizeof(float) * ((size_t)hi + 1));
    for (uint32_t i = 0; i <= hi; i++) dst[i] = -1.0f;
    if (rc == 0) {
        CHECK(count * ORDO_COO_ENTRY_BYTES == len);
        size_t n = 0;
        CHECK(ordo__coo_decode(buf, len, lo, hi, out, cap, &n) == 0 && n == count);
        for (size_t i = 0; i < n; i++) {
            CHECK(out[i].index >= lo && out[i].index < hi && isfinite(out[i].value));
            CHECK(i == 0 || out[i].index > out[i - 1].index);
            ordo__coo_entry_t e = ordo__coo_get(buf, i);
            CHECK(e.index == out[i].index && memcmp(&e.value, &out[i].value, sizeof e.value) == 0);
        }
        if (n > 0) /* one entry short of room */
            CHECK(ordo__coo_decode(buf, len, lo, hi, out, n - 1, &n) == ORDO_ERR_RANGE);
        CHECK(ordo__coo_patch(buf, len, lo, hi, dst) == 0);
        for (size_t i = 0; i < count; i++) {
            float v = dst[out[i].index];
            CHECK(memcmp(&v, &out[i].value, sizeof v) == 0);
        }
        /* the encoder gives back the same bytes */
        uint8_t *again = malloc(len + 1);
        ordo__coo_encode(out, count, again);
        CHECK(len == 0 || memcmp(again, buf, len) == 0);
        free(again);
    } else {
        size_t n = 12345;
        CHECK(ordo__coo_decode(buf, len, lo, hi, out, cap, &n) == ORDO_ERR_PROTO && n == 12345);
        CHECK(ordo__coo_patch(buf, len, lo, hi, dst) == ORDO_ERR_PROTO);
        for (uint32_t i = 0; i <= hi; i++) CHECK(dst[i] == -1.0f); /* nothing written */
    }
    free(dst);
    free(out);
}

static void sparse_wire(const uint8_t *buf, size_t len, uint32_t lo, uint32_t span)
{
    /* counts: n uint64 */
    size_t n = lo % 16;
    uint64_t sum[16] = {0};
    int rc = ordo__sparse_wire_add_counts(buf, len, n, sum, "fuzz");
    CHECK(rc == 0 ? len == 8 * n : rc == ORDO_ERR_PROTO);
    /* REGIONS: S servers, n entries */
    int S = 1 + (int)(lo % 8);
    uint32_t entries = span * 97;
    uint32_t epoch = 0, bounds[10];
    rc = ordo__sparse_wire_get_regions(buf, len, S, entries, &epoch, bounds);
    if (rc == 0) {
        CHECK(len == ordo_sparse_wire_regions_size(S));
        CHECK(bounds[0] == 0 && bounds[S] == entries);
        for (int s = 0; s < S; s++) CHECK(bounds[s] < bounds[s + 1]);
    } else {
        CHECK(rc == ORDO_ERR_PROTO);
    }
    /* THRESHOLD: one finite float >= 0 */
    float t = -1;
    rc = ordo__sparse_wire_get_float(buf, len, &t);
    CHECK(rc == 0 ? len == 4 && isfinite(t) && t >= 0 : rc == ORDO_ERR_PROTO);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint32_t lo = 0, span = 64;
    if (size >= 2) {
        lo = data[0];
        span = data[1];
        data += 2;
        size -= 2;
    }
    /* the payload in memory of its own, so that reads past it are caught */
    uint8_t *buf = size ? malloc(size) : NULL;
    if (size) memcpy(buf, data, size);
    coo(buf, size, lo, lo + span);
    sparse_wire(buf, size, lo, span);
    free(buf);
    return 0;
}
