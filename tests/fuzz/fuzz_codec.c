/* fuzz_codec: any bytes given as a tensor frame (common/codec.h) are decoded, or refused with
 * ORDO_ERR_PROTO, without a read past the frame or a write past the n floats; a decoded frame
 * is what its dtype says (onebit: +-scale, sparse: the carried entries at increasing indices,
 * zeros elsewhere), decode_add adds exactly that and touches nothing on a refusal. The same
 * bytes read as floats are encoded by every codec and decode back. Byte 0 picks the dtype
 * (any of 0..9, valid or not), bytes 1-2 n (little-endian, < 4096), byte 3 the frame's offset
 * from an aligned address (ZeroMQ frames may sit anywhere); the rest is the frame. */
#include "common/error.h"
#include "common/wire.h"
#include "common/codec.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) __builtin_trap();                                                             \
    } while (0)

static bool same(float a, float b)
{
    return a == b || (isnan(a) && isnan(b));
}

static void decode(int dtype, const uint8_t *frame, size_t len, int64_t n)
{
    float *dst = malloc((size_t)n * sizeof *dst + 1), *acc = malloc((size_t)n * sizeof *acc + 1);
    for (int64_t i = 0; i < n; i++)
        acc[i] = 1.0f;
    int rc = ordo__codec_decode(dtype, frame, len, n, dst);
    CHECK(rc == 0 || rc == ORDO_ERR_PROTO);
    int rc_add = ordo__codec_decode_add(dtype, frame, len, n, acc);
    CHECK(rc_add == rc);
    if (rc == 0) {
        float s;
        switch (dtype) {
        case ORDO_DTYPE_F32:
            CHECK(len == (size_t)n * 4);
            break;
        case ORDO_DTYPE_BF16:
            CHECK(len == (size_t)n * 2);
            break;
        case ORDO_DTYPE_F16:
            CHECK(len == 4 + (size_t)n * 2);
            memcpy(&s, frame, 4);
            CHECK(isfinite(s) && s != 0);
            break;
        case ORDO_DTYPE_ONEBIT:
            CHECK(len == 4 + (size_t)(n + 7) / 8);
            memcpy(&s, frame, 4);
            CHECK(isfinite(s) && s >= 0);
            for (int64_t i = 0; i < n; i++)
                CHECK(dst[i] == s || dst[i] == -s);
            break;
        case ORDO_DTYPE_KV: {
            CHECK(len % 8 == 0 && len / 8 <= (size_t)n);
            size_t k = len / 8;
            int64_t prev = -1, carried = 0;
            for (size_t j = 0; j < k; j++) {
                uint32_t i;
                memcpy(&i, frame + j * 4, 4);
                CHECK((int64_t)i > prev && (int64_t)i < n);
                CHECK(memcmp(&dst[i], frame + (k + j) * 4, 4) == 0);
                prev = i;
            }
            for (int64_t i = 0; i < n; i++)
                carried += dst[i] != 0 || signbit(dst[i]);
            CHECK(carried <= (int64_t)k);
            break;
        }
        default:
            CHECK(0); /* no other dtype decodes */
        }
        for (int64_t i = 0; i < n; i++)
            CHECK(same(acc[i], 1.0f + dst[i]));
    } else {
        for (int64_t i = 0; i < n; i++)
            CHECK(acc[i] == 1.0f); /* untouched */
    }
    free(dst);
    free(acc);
}

/* the frame's bytes as floats, through every codec and back */
static void round_trip(const uint8_t *buf, size_t len)
{
    int64_t n = (int64_t)(len / 4);
    float *x = malloc((size_t)n * 4 + 4), *res = calloc((size_t)n + 1, 4);
    float *scratch = malloc((size_t)n * 4 + 4), *dst = malloc((size_t)n * 4 + 4);
    memcpy(x, buf, (size_t)n * 4);
    for (int id = 0; id < ORDO__CODEC_MAX; id++) {
        const ordo__codec_ops_t *ops = ordo__codec_ops(id);
        ordo__codec_spec_t c = {.id = id, .k = n % 2 ? 0.25 : 3, .ef = n % 3 == 0};
        void *frame = malloc(ops->max_bytes(&c, n) + 1);
        ordo__codec_io_t io = {.seed = (uint64_t)len};
        memset(res, 0, (size_t)n * 4);
        int64_t flen = ordo__codec_encode_ef(&c, x, n, res, scratch, frame, &io);
        if (flen >= 0) {
            CHECK((size_t)flen <= ops->max_bytes(&c, n));
            CHECK(ordo__codec_decode(ops->dtype, frame, (size_t)flen, n, dst) == 0);
        } else {
            CHECK(flen == ORDO_ERR_RANGE); /* fp16 overflow, onebit of a non-finite value */
            CHECK(id == ORDO__CODEC_FP16 || id == ORDO__CODEC_ONEBIT);
        }
        free(frame);
    }
    free(x), free(res), free(scratch), free(dst);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 4) return 0;
    int dtype = data[0] % 10;
    int64_t n = (data[1] | data[2] << 8) % 4096;
    size_t off = data[3] % 8;
    data += 4;
    size -= 4;
    /* the frame at the end of memory of its own, so that reads past it are caught */
    uint8_t *block = malloc(off + size ? off + size : 1);
    uint8_t *frame = block + off;
    memcpy(frame, data, size);
    decode(dtype, frame, size, n);
    /* a negative n is refused before anything is written */
    CHECK(ordo__codec_decode(dtype, frame, size, -1, NULL) == ORDO_ERR_PROTO);
    CHECK(ordo__codec_decode_add(dtype, frame, size, -1, NULL) == ORDO_ERR_PROTO);
    round_trip(frame, size);
    free(block);
    return 0;
}
