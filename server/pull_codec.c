/* pull_codec: one encoded copy of a slice's value per update, shared by its answers. */
#include "server/pull_codec.h"

#include "common/codec.h"
#include "common/error.h"
#include "common/log.h"

#include <stdatomic.h>
#include <stdlib.h>

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

int ordo__pull_codec_attach(ordo__pull_codec_t *pc, int slice, int64_t seq, const float *data,
                            size_t bytes, int dtype, ordo_msg_t *r)
{
    const ordo__codec_ops_t *ops = ordo__codec_of_dtype(dtype);
    if (!ops || (ops->id != ORDO__CODEC_BF16 && ops->id != ORDO__CODEC_FP16) || slice < 0 ||
        slice >= pc->n)
        return ORDO_ERR_INVAL;
    entry_t *e = &pc->e[slice];
    if (!e->b || e->value != data || e->seq != seq || e->dtype != dtype) {
        ordo__codec_spec_t c = {.id = ops->id};
        int64_t n = (int64_t)(bytes / sizeof(float));
        block_t *b = malloc(sizeof *b + ops->max_bytes(&c, n));
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
        atomic_init(&b->refs, 1);
        b->len = (size_t)len;
        unref(e->b);
        *e = (entry_t){.b = b, .value = data, .seq = seq, .dtype = dtype};
    }
    atomic_fetch_add(&e->b->refs, 1);
    if (ordo_msg_add_ref(r, e->b->data, e->b->len, unref_cb, e->b) != 0) {
        unref(e->b);
        return ORDO_ERR_NOMEM;
    }
    r->hdr.dtype = (uint8_t)dtype;
    return 0;
}
