/* codec: the table of wire codecs, compression specs (parse, format, k) and the error-feedback
 * decorator every codec shares. */
#include "common/codec.h"

#include "common/error.h"
#include "common/wire.h"
#include "common/vec_clones.h" /* ORDO_VECTOR_CLONES */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern const ordo__codec_ops_t ordo__codec_f32_ops, ordo__codec_bf16_ops, ordo__codec_fp16_ops,
    ordo__codec_onebit_ops, ordo__codec_topk_ops, ordo__codec_randomk_ops;

static const ordo__codec_ops_t *const table[ORDO__CODEC_MAX] = {
    [ORDO__CODEC_NONE] = &ordo__codec_f32_ops,  [ORDO__CODEC_BF16] = &ordo__codec_bf16_ops,
    [ORDO__CODEC_FP16] = &ordo__codec_fp16_ops, [ORDO__CODEC_ONEBIT] = &ordo__codec_onebit_ops,
    [ORDO__CODEC_TOPK] = &ordo__codec_topk_ops, [ORDO__CODEC_RANDOMK] = &ordo__codec_randomk_ops,
};

const ordo__codec_ops_t *ordo__codec_ops(int id)
{
    return id >= 0 && id < ORDO__CODEC_MAX ? table[id] : NULL;
}

const ordo__codec_ops_t *ordo__codec_of_dtype(int dtype)
{
    for (int i = 0; i < ORDO__CODEC_MAX; i++) /* topk and randomk share KV: the first decodes */
        if (table[i]->dtype == dtype) return table[i];
    return NULL;
}

static const char *names(void)
{
    return "none, bf16, fp16, onebit, topk:K, randomk:K";
}

int ordo__codec_parse(const char *text, ordo__codec_spec_t *out)
{
    if (!text) return ordo__error_set(ORDO_ERR_INVAL, "no compression given (one of %s)", names());
    char buf[96];
    if (strlen(text) >= sizeof buf)
        return ordo__error_set(ORDO_ERR_INVAL, "compression \"%.40s...\": too long", text);
    strcpy(buf, text);
    char *opt = strchr(buf, ',');
    if (opt) *opt++ = '\0';
    char *karg = strchr(buf, ':');
    if (karg) *karg++ = '\0';
    ordo__codec_spec_t c = {.id = -1};
    for (int i = 0; i < ORDO__CODEC_MAX; i++)
        if (strcmp(buf, table[i]->name) == 0) c.id = i;
    if (c.id < 0)
        return ordo__error_set(ORDO_ERR_INVAL,
                              "compression \"%s\": unknown codec \"%s\" (one of %s)", text, buf,
                              names());
    const ordo__codec_ops_t *ops = table[c.id];
    if (ops->needs_k && !karg)
        return ordo__error_set(ORDO_ERR_INVAL,
                              "compression \"%s\": %s needs k (%s:K, K a count >= 1 or a "
                              "fraction in (0, 1))",
                              text, ops->name, ops->name);
    if (!ops->needs_k && karg)
        return ordo__error_set(ORDO_ERR_INVAL, "compression \"%s\": %s takes no k", text, ops->name);
    if (karg) {
        char *end;
        errno = 0;
        c.k = strtod(karg, &end);
        /* the bound comes before the cast: converting inf or 1e300 to int64_t is undefined */
        if (errno || end == karg || *end || !(c.k > 0) || c.k > 2147483647.0 ||
            (c.k >= 1 && c.k != (double)(int64_t)c.k))
            return ordo__error_set(ORDO_ERR_INVAL,
                                  "compression \"%s\": k \"%s\" is out of range (a whole count "
                                  ">= 1, or a fraction in (0, 1))",
                                  text, karg);
    }
    c.ef = ops->lossy;
    for (char *next; opt; opt = next) { /* options, each once: ef=..., pull=... */
        if ((next = strchr(opt, ','))) *next++ = '\0';
        if (strcmp(opt, "ef=vanilla") == 0)
            c.ef = true;
        else if (strcmp(opt, "ef=none") == 0)
            c.ef = false;
        else if (strcmp(opt, "pull=delta") == 0 && ops->lossy)
            c.pull_delta = true;
        else if (strcmp(opt, "pull=float32") == 0)
            c.pull_delta = false;
        else
            return ordo__error_set(ORDO_ERR_INVAL,
                                  "compression \"%s\": unknown option \"%s\" (ef=vanilla, "
                                  "ef=none; for onebit, topk, randomk pull=delta or pull=float32)",
                                  text, opt);
    }
    *out = c;
    return 0;
}

const char *ordo__codec_format(const ordo__codec_spec_t *c, char *buf, size_t size)
{
    const ordo__codec_ops_t *ops = ordo__codec_ops(c->id);
    if (!ops) {
        snprintf(buf, size, "?");
        return buf;
    }
    int n = snprintf(buf, size, "%s", ops->name);
    if (ops->needs_k && n >= 0 && (size_t)n < size) {
        /* %g keeps 6 digits: a count of 1234567 or a fraction of 0.1234567 needs more to read
         * back the same k */
        char k[32];
        for (int digits = 6; digits <= 17; digits++) { /* the shortest that reads back */
            snprintf(k, sizeof k, "%.*g", digits, c->k);
            if (strtod(k, NULL) == c->k) break;
        }
        n += snprintf(buf + n, size - (size_t)n, ":%s", k);
    }
    if (c->ef != ops->lossy && n >= 0 && (size_t)n < size)
        n += snprintf(buf + n, size - (size_t)n, ",ef=%s", c->ef ? "vanilla" : "none");
    if (c->pull_delta && n >= 0 && (size_t)n < size)
        snprintf(buf + n, size - (size_t)n, ",pull=delta");
    return buf;
}

int64_t ordo__codec_k(const ordo__codec_spec_t *c, int64_t n)
{
    if (n <= 0) return 0; /* an empty tensor keeps nothing (1 <= k would read past it) */
    int64_t k = c->k >= 1 ? (int64_t)c->k : (int64_t)(c->k * (double)n + 0.5);
    return k < 1 ? 1 : k > n ? n : k;
}

double ordo__codec_bytes_per_value(const ordo__codec_spec_t *c, int64_t n)
{
    const ordo__codec_ops_t *ops = ordo__codec_ops(c->id);
    if (!ops || n <= 0) return 4.0;
    return (double)ops->max_bytes(c, n) / (double)n;
}

int ordo__codec_decode(int dtype, const void *frame, size_t len, int64_t n, float *dst)
{
    const ordo__codec_ops_t *ops = ordo__codec_of_dtype(dtype);
    if (!ops) return ordo__error_set(ORDO_ERR_PROTO, "dtype %d is no tensor payload", dtype);
    if (n < 0 || (uint64_t)n > SIZE_MAX / 8) /* n * 4 and n * 8 must not wrap in the checks */
        return ordo__error_set(ORDO_ERR_PROTO, "a frame for %lld values", (long long)n);
    return ops->decode(frame, len, n, dst);
}

int ordo__codec_decode_add(int dtype, const void *frame, size_t len, int64_t n, float *acc)
{
    const ordo__codec_ops_t *ops = ordo__codec_of_dtype(dtype);
    if (!ops) return ordo__error_set(ORDO_ERR_PROTO, "dtype %d is no tensor payload", dtype);
    if (n < 0 || (uint64_t)n > SIZE_MAX / 8)
        return ordo__error_set(ORDO_ERR_PROTO, "a frame for %lld values", (long long)n);
    return ops->decode_add(frame, len, n, acc);
}

bool ordo__codec_ranged(int dtype)
{
    const ordo__codec_ops_t *ops = ordo__codec_of_dtype(dtype);
    return ops && ops->decode_range;
}

int ordo__codec_decode_range(int dtype, const void *frame, size_t len, int64_t n, int64_t off,
                             int64_t count, float *dst)
{
    const ordo__codec_ops_t *ops = ordo__codec_of_dtype(dtype);
    if (!ops || !ops->decode_range)
        return ordo__error_set(ORDO_ERR_PROTO, "dtype %d has no values at fixed places", dtype);
    if (n < 0 || (uint64_t)n > SIZE_MAX / 8 || off < 0 || count < 0 || off > n - count)
        return ordo__error_set(ORDO_ERR_PROTO, "values %lld to %lld of a frame of %lld",
                              (long long)off, (long long)(off + count), (long long)n);
    return ops->decode_range(frame, len, n, off, count, dst);
}

/* the decorator's two passes, in the compiler's vector clones */
ORDO_VECTOR_CLONES
static void sum(float *restrict dst, const float *restrict a, const float *restrict b, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        dst[i] = a[i] + b[i];
}

/* r = sent - r: what the frame left out, where r held what it carries */
ORDO_VECTOR_CLONES
static void left_out(float *restrict r, const float *restrict sent, int64_t n)
{
    for (int64_t i = 0; i < n; i++)
        r[i] = sent[i] - r[i];
}

int64_t ordo__codec_encode_ef(const ordo__codec_spec_t *c, const float *src, int64_t n,
                              float *residual, float *scratch, void *dst, ordo__codec_io_t *io)
{
    const ordo__codec_ops_t *ops = ordo__codec_ops(c->id);
    if (!ops) return ordo__error_set(ORDO_ERR_INVAL, "no codec of id %d", c->id);
    if (!c->ef) return ops->encode(c, src, n, dst, io);
    sum(scratch, src, residual, n);
    int64_t len = ops->encode(c, scratch, n, dst, io);
    if (len < 0) return len; /* residual untouched: the caller sends src another way */
    int rc = ops->decode(dst, (size_t)len, n, residual);
    if (rc) return rc;
    left_out(residual, scratch, n);
    return len;
}
