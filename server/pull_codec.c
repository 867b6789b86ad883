/* pull_codec: one encoded copy of a slice's value per update, shared by its answers. */
#include "server/pull_codec.h"

#include "common/codec.h"
#include "common/error.h"
#include "common/log.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

typedef struct block {
    atomic_int refs; /* the cache's and each answer's */
    size_t len;
    char data[];
} block_t;

typedef struct {
    block_t *b; /* NULL: nothing cached */
    const float *value;
    int64_t seq;
    int dtype;
    /* lossy pulls: the copy every worker holds, as of the answers of iteration copy_iter (-1:
     * none yet), the change that made it from the copy of delta_base, and the copy in float32
     * for the answers that need it whole */
    float *copy;
    int64_t copy_iter, delta_base;
    block_t *delta, *whole;
    double k; /* index-value pushes' fraction of the values (0: none seen) */
} entry_t;

struct ordo__pull_codec {
    int n;
    entry_t *e;
    int warned; /* fp16 values out of range were reported */
};

static void unref(block_t *b)
{
    if (b && atomic_fetch_sub(&b->refs, 1) == 1) free(b);
}

static void unref_cb(void *data, void *hint)
{
    (void)data;
    unref(hint);
}

int ordo__pull_codec_new(int n_slices, ordo__pull_codec_t **out)
{
    ordo__pull_codec_t *pc = calloc(1, sizeof *pc);
    if (!pc || !(pc->e = calloc((size_t)n_slices + 1, sizeof *pc->e))) {
        free(pc);
        return ORDO_ERR_NOMEM;
    }
    pc->n = n_slices;
    for (int i = 0; i < n_slices; i++) pc->e[i].copy_iter = pc->e[i].delta_base = -1;
    *out = pc;
    return 0;
}

void ordo__pull_codec_destroy(ordo__pull_codec_t **pcp)
{
    ordo__pull_codec_t *pc = *pcp;
    if (!pc) return;
    for (int i = 0; i < pc->n; i++)
        unref(pc->e[i].b);
    free(pc->e);
    free(pc);
    *pcp = NULL;
}

static int attach(ordo__msg_t *r, block_t *b, int dtype, uint32_t flags)
{
    atomic_fetch_add(&b->refs, 1);
    if (ordo__msg_add_ref(r, b->data, b->len, unref_cb, b) != 0) {
        unref(b);
        return ORDO_ERR_NOMEM;
    }
    r->hdr.dtype = (uint8_t)dtype;
    r->hdr.flags |= flags;
    return 0;
}

static block_t *block_new(size_t len)
{
    block_t *b = malloc(sizeof *b + len);
    if (!b) return NULL;
    atomic_init(&b->refs, 1);
    b->len = len;
    return b;
}

int ordo__pull_codec_attach(ordo__pull_codec_t *pc, int slice, int64_t seq, const float *data,
                            size_t bytes, int dtype, ordo__msg_t *r)
{
    const ordo__codec_ops_t *ops = ordo__codec_of_dtype(dtype);
    if (!ops || (ops->id != ORDO__CODEC_BF16 && ops->id != ORDO__CODEC_FP16) || slice < 0 ||
        slice >= pc->n)
        return ORDO_ERR_INVAL;
    entry_t *e = &pc->e[slice];
    if (!e->b || e->value != data || e->seq != seq || e->dtype != dtype) {
        ordo__codec_spec_t c = {.id = ops->id};
        int64_t n = (int64_t)(bytes / sizeof(float));
        block_t *b = block_new(ops->max_bytes(&c, n));
        if (!b) return ORDO_ERR_NOMEM;
        ordo__codec_io_t io = {0};
        int64_t len = ops->encode(&c, data, n, b->data, &io);
        if (len < 0) {
            free(b);
            if (io.overflow && !pc->warned++)
                ORDO_WARN("slice %d: %lld values do not fit in fp16; pulls of such values go as "
                          "float32",
                          slice, (long long)io.overflow);
            return (int)len;
        }
        b->len = (size_t)len;
        unref(e->b); /* the cast's fields only: the lossy copy's are the other path's */
        e->b = b;
        e->value = data;
        e->seq = seq;
        e->dtype = dtype;
    }
    return attach(r, e->b, dtype, 0);
}

void ordo__pull_codec_note_k(ordo__pull_codec_t *pc, int slice, double fraction)
{
    if (slice >= 0 && slice < pc->n && fraction > 0 && fraction <= 1) pc->e[slice].k = fraction;
}



/* advance moves e's copy to iteration iter's value v (n floats): the first time v itself, then
 * the copy plus the decoded encoding of the change */
static int advance(entry_t *e, const ordo__codec_ops_t *ops, int64_t iter, const float *v,
                   int64_t n)
{
    if (!e->copy) {
        if (!(e->copy = malloc((size_t)n * sizeof *e->copy))) return ORDO_ERR_NOMEM;
        memcpy(e->copy, v, (size_t)n * sizeof *e->copy);
        unref(e->delta);
        e->delta = NULL;
        e->delta_base = -1;
        e->copy_iter = iter;
        return 0;
    }
    ordo__codec_spec_t c = {.id = ops->id, .k = e->k > 0 ? e->k : 0.01};
    if (ops->id == ORDO__CODEC_TOPK || ops->id == ORDO__CODEC_RANDOMK) c.id = ORDO__CODEC_TOPK;
    const ordo__codec_ops_t *enc = ordo__codec_ops(c.id);
    float *change = malloc((size_t)n * sizeof *change);
    block_t *b = block_new(enc->max_bytes(&c, n));
    if (!change || !b) {
        free(change);
        free(b);
        return ORDO_ERR_NOMEM;
    }
    for (int64_t i = 0; i < n; i++) change[i] = v[i] - e->copy[i];
    ordo__codec_io_t io = {.seed = (uint64_t)iter};
    int64_t len = enc->encode(&c, change, n, b->data, &io);
    int rc = len < 0 ? (int)len : enc->decode(b->data, (size_t)len, n, change);
    if (rc) {
        free(change);
        free(b);
        return rc;
    }
    b->len = (size_t)len;
    for (int64_t i = 0; i < n; i++) e->copy[i] += change[i];
    free(change);
    unref(e->delta);
    e->delta = b;
    e->delta_base = e->copy_iter;
    e->copy_iter = iter;
    return 0;
}

int ordo__pull_codec_attach_delta(ordo__pull_codec_t *pc, int slice, int64_t iter,
                                  const float *data, size_t bytes, int dtype, bool have_prev,
                                  ordo__msg_t *r)
{
    const ordo__codec_ops_t *ops = ordo__codec_of_dtype(dtype);
    if (!ops || !ops->lossy || slice < 0 || slice >= pc->n) return ORDO_ERR_INVAL;
    entry_t *e = &pc->e[slice];
    int64_t n = (int64_t)(bytes / sizeof(float));
    if (e->copy_iter > iter) return ORDO_ERR_INVAL; /* older than the copy: the value itself */
    if (e->copy_iter < iter) {
        int rc = advance(e, ops, iter, data, n);
        if (rc) return rc;
        unref(e->whole);
        e->whole = NULL;
    }
    if (have_prev && e->delta && e->delta_base == iter - 1)
        return attach(r, e->delta, ops->dtype, ORDO_FLAG_DELTA);
    if (!e->whole) {
        if (!(e->whole = block_new((size_t)n * sizeof(float)))) return ORDO_ERR_NOMEM;
        memcpy(e->whole->data, e->copy, (size_t)n * sizeof(float));
    }
    return attach(r, e->whole, ORDO_DTYPE_F32, 0);
}
