/* compress: a worker's per-key codecs, their residuals and the encoding of pushes. */
#include "client/compress.h"

#include "common/durable.h"
#include "common/error.h"
#include "common/log.h"
#include "common/wire.h"
#include "core/plan.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* a unit's frame buffer, reused while no frame of it is on its way (busy: ZeroMQ holds it) */
typedef struct {
    atomic_int busy;
    size_t cap;
    void *data;
} frame_t;

/* a kept unit's file (ordo__compress_keep): this header, then KEPT_SLOTS residuals of n
 * floats; slot s holds the residual after the push of iteration tag[s] (-1: none, or being
 * written; KEPT_LOADED: the one a resumed run read from its checkpoint, older than any push
 * of the run, which counts its iterations from 0 again) */
#define KEPT_SLOTS 3
#define KEPT_MAGIC "ORDORES1"
#define KEPT_LOADED (-2)
typedef struct {
    char magic[8];
    int64_t n;
    int64_t tag[KEPT_SLOTS];
} kept_head_t;

typedef struct {
    float *v; /* NULL until the unit's first lossy push (kept: the newest slot) */
    int64_t n;
    frame_t *frame;   /* NULL until the unit's first encoded push */
    kept_head_t *map; /* kept: the unit's file, mapped (NULL until its first lossy push) */
    size_t map_bytes;
} residual_t;

struct ordo__compress {
    int n_keys;
    ordo__codec_spec_t *spec; /* per key */
    char **name;              /* per key: the declared tensor's name, or NULL */
    uint8_t *warned;          /* per key: an fp16 overflow was reported */
    residual_t *res;          /* per unit */
    int n_units;
    float *scratch;
    int64_t scratch_n;
    int any;
    /* lossy pulls: whether the run keeps the workers' copies in step, and per slice the copy
     * of the servers' value this worker holds and the iteration of its answer (-1: none) */
    bool lossy_pulls;
    int n_slices;
    float **copy;
    int64_t *copy_iter;
    /* ordo__compress_keep: the folder of the units' files, and whether they are a dead
     * predecessor's to take up */
    char *keep_dir;
    bool keep_rejoin;
    bool keep_lost; /* a file to take up was missing (reported once) */
    /* units 0 .. n_slices - 1 are the keys' slices: each one's key and size, which a loaded
     * file's residuals must fit; pushed: a residual was used (no load after it) */
    int *slice_key;
    int64_t *slice_n;
    bool pushed;
};

static const char *key_name(const ordo__compress_t *c, int key, char *buf, size_t size)
{
    if (c->name[key]) return c->name[key];
    snprintf(buf, size, "tensor%d", key);
    return buf;
}

int ordo__compress_new(const ordo__conf_t *conf, const ordo__keys_t *keys, const char *tensors,
                       const ordo__plan_t *plan, int n_workers, int n_units, ordo__compress_t **out)
{
    int rc = 0;
    ordo__compress_t *c = calloc(1, sizeof *c);
    json_t *decl = tensors ? json_loads(tensors, 0, NULL) : NULL;
    if (!c) return ORDO_ERR_NOMEM;
    c->n_keys = keys->n_keys;
    c->spec = calloc((size_t)c->n_keys + 1, sizeof *c->spec);
    c->name = calloc((size_t)c->n_keys + 1, sizeof *c->name);
    c->warned = calloc((size_t)c->n_keys + 1, 1);
    c->res = calloc((size_t)n_units + 1, sizeof *c->res);
    c->n_units = n_units;
    c->n_slices = keys->n_slices;
    c->copy = calloc((size_t)keys->n_slices + 1, sizeof *c->copy);
    c->copy_iter = malloc(((size_t)keys->n_slices + 1) * sizeof *c->copy_iter);
    c->slice_key = malloc(((size_t)keys->n_slices + 1) * sizeof *c->slice_key);
    c->slice_n = malloc(((size_t)keys->n_slices + 1) * sizeof *c->slice_n);
    /* the servers keep one copy per slice for every worker (server/pull_codec.h): every
     * worker must take every version's answer, in order */
    c->lossy_pulls = conf->sync_mode == ORDO_SYNC_BSP &&
                     conf->fault_worker != ORDO_FAULT_RESTART && conf->replicas <= 1;
    if (!c->spec || !c->name || !c->warned || !c->res || !c->copy || !c->copy_iter ||
        !c->slice_key || !c->slice_n) {
        rc = ORDO_ERR_NOMEM;
        goto fail;
    }
    ordo__codec_spec_t run = {.id = ORDO__CODEC_NONE};
    /* auto: the scheduler's step model chose each key's codec (scheduler/runplan_compress.h) */
    bool automatic = !strncmp(conf->compression, "auto", 4);
    char *const *chosen = NULL;
    if (automatic) {
        chosen = plan ? plan->compression : NULL;
        if (!chosen) {
            rc = ordo__error_set(ORDO_ERR_PROTO,
                                "push.compression = auto, but the plan chose no "
                                "codec for each of the %d keys",
                                c->n_keys);
            goto fail;
        }
    } else if ((rc = ordo__codec_parse(conf->compression, &run)) != 0) {
        rc = ordo__error_context(rc, "push.compression");
        goto fail;
    }
    for (int k = 0; k < c->n_keys; k++) {
        json_t *d = json_array_get(decl, (size_t)k);
        const char *nm = json_string_value(json_object_get(d, "name"));
        const char *spec = json_string_value(json_object_get(d, "compression"));
        if (!spec && chosen) spec = chosen[k];
        c->spec[k] = run;
        if (nm && !(c->name[k] = strdup(nm))) {
            rc = ORDO_ERR_NOMEM;
            goto fail;
        }
        if (spec && (rc = ordo__codec_parse(spec, &c->spec[k])) != 0) {
            char ctx[160];
            snprintf(ctx, sizeof ctx, "tensor %d \"%s\"", k, nm ? nm : "?");
            rc = ordo__error_context(rc, ctx);
            goto fail;
        }
        if (c->spec[k].id == ORDO__CODEC_FP16 && !(c->spec[k].scale > 0))
            c->spec[k].scale = 1.0f / (float)(n_workers > 0 ? n_workers : 1);
        if (c->spec[k].id != ORDO__CODEC_NONE) c->any = 1;
    }
    for (int i = 0; i < keys->n_slices; i++) {
        c->copy_iter[i] = -1;
        c->slice_key[i] = (int)keys->slices[i].key;
        c->slice_n[i] = keys->slices[i].numel;
    }
    json_decref(decl);
    *out = c;
    return 0;
fail:
    json_decref(decl);
    ordo__compress_destroy(&c);
    return rc;
}

void ordo__compress_destroy(ordo__compress_t **cp)
{
    ordo__compress_t *c = *cp;
    if (!c) return;
    for (int k = 0; c->name && k < c->n_keys; k++)
        free(c->name[k]);
    for (int u = 0; c->res && u < c->n_units; u++) {
        if (c->res[u].map)
            munmap(c->res[u].map, c->res[u].map_bytes);
        else
            free(c->res[u].v);
        frame_t *f = c->res[u].frame;
        if (f && !atomic_load(&f->busy)) { /* a frame still on its way is left to ZeroMQ */
            free(f->data);
            free(f);
        }
    }
    for (int i = 0; c->copy && i < c->n_slices; i++) free(c->copy[i]);
    free(c->copy);
    free(c->copy_iter);
    free(c->slice_key);
    free(c->slice_n);
    free(c->spec);
    free(c->name);
    free(c->warned);
    free(c->keep_dir);
    free(c->res);
    free(c->scratch);
    free(c);
    *cp = NULL;
}

int ordo__compress_units(ordo__compress_t *c, int n)
{
    residual_t *r = realloc(c->res, sizeof *r * (size_t)(c->n_units + n + 1));
    if (!r) return ORDO_ERR_NOMEM;
    memset(r + c->n_units, 0, sizeof *r * (size_t)(n + 1));
    c->res = r;
    int first = c->n_units;
    c->n_units += n;
    return first;
}

const ordo__codec_spec_t *ordo__compress_spec(const ordo__compress_t *c, int key)
{
    return &c->spec[key];
}

int ordo__compress_any(const ordo__compress_t *c)
{
    return c->any;
}

int ordo__compress_pull_dtype(const ordo__compress_t *c, int key)
{
    const ordo__codec_ops_t *ops = ordo__codec_ops(c->spec[key].id);
    if (ops->lossy && (!c->lossy_pulls || !c->spec[key].pull_delta)) return ORDO_DTYPE_F32;
    return ops->dtype;
}

static bool lossy_key(const ordo__compress_t *c, int key)
{
    return c->lossy_pulls && c->spec[key].pull_delta && ordo__codec_ops(c->spec[key].id)->lossy;
}

uint32_t ordo__compress_pull_flags(const ordo__compress_t *c, int key, int slice, int64_t iter)
{
    if (!lossy_key(c, key) || slice < 0 || slice >= c->n_slices) return 0;
    return c->copy[slice] && c->copy_iter[slice] == iter - 1 ? ORDO_FLAG_HAVE_PREV : 0;
}

int ordo__compress_take_pull(ordo__compress_t *c, int key, int slice, int64_t iter, int dtype,
                             uint32_t flags, const void *frame, size_t len, int64_t n,
                             float *dst)
{
    if (!lossy_key(c, key) || slice < 0 || slice >= c->n_slices)
        return ordo__codec_decode(dtype, frame, len, n, dst);
    if (!c->copy[slice] && !(c->copy[slice] = malloc((size_t)n * sizeof(float))))
        return ORDO_ERR_NOMEM;
    float *copy = c->copy[slice];
    if (flags & ORDO_FLAG_DELTA) {
        if (c->copy_iter[slice] != iter - 1)
            return ordo__error_set(ORDO_ERR_PROTO,
                                  "slice %d: a change from iteration %lld's answer, this worker "
                                  "holds %lld's",
                                  slice, (long long)(iter - 1), (long long)c->copy_iter[slice]);
        if (c->scratch_n < n) {
            float *sc = realloc(c->scratch, (size_t)n * sizeof *sc);
            if (!sc) return ORDO_ERR_NOMEM;
            c->scratch = sc;
            c->scratch_n = n;
        }
        int rc = ordo__codec_decode(dtype, frame, len, n, c->scratch);
        if (rc) return rc;
        for (int64_t i = 0; i < n; i++) copy[i] += c->scratch[i];
    } else {
        int rc = ordo__codec_decode(dtype, frame, len, n, copy);
        if (rc) {
            c->copy_iter[slice] = -1;
            return rc;
        }
    }
    c->copy_iter[slice] = iter;
    memcpy(dst, copy, (size_t)n * sizeof(float));
    return 0;
}

float *ordo__compress_residual(ordo__compress_t *c, int unit, int64_t *n)
{
    if (unit < 0 || unit >= c->n_units) return NULL;
    *n = c->res[unit].n;
    return c->res[unit].v;
}

int ordo__compress_keep(ordo__compress_t *c, const char *dir, int64_t rejoin)
{
    if (mkdir(dir, 0755) != 0 && errno != EEXIST)
        return ordo__error_set(ORDO_ERR_IO, "error-feedback residuals: cannot make %s: %s", dir,
                              strerror(errno));
    free(c->keep_dir);
    if (!(c->keep_dir = strdup(dir))) return ORDO_ERR_NOMEM;
    c->keep_rejoin = rejoin >= 0;
    return 0;
}

/* kept_map maps unit's file for n values: a predecessor's when the worker rejoins and the
 * file is there for n values, else a new one with no slot written */
static int kept_map(ordo__compress_t *c, int unit, int64_t n)
{
    residual_t *r = &c->res[unit];
    char path[4096];
    snprintf(path, sizeof path, "%s/unit-%d.res", c->keep_dir, unit);
    size_t bytes = sizeof(kept_head_t) + (size_t)KEPT_SLOTS * (size_t)n * sizeof(float);
    bool fresh = true;
    int fd = -1;
    if (c->keep_rejoin && (fd = open(path, O_RDWR)) >= 0) {
        struct stat st;
        kept_head_t h;
        fresh = !(fstat(fd, &st) == 0 && (size_t)st.st_size == bytes &&
                  pread(fd, &h, sizeof h, 0) == (ssize_t)sizeof h &&
                  !memcmp(h.magic, KEPT_MAGIC, 8) && h.n == n);
        if (fresh) close(fd);
    }
    if (fresh) {
        if (c->keep_rejoin && !c->keep_lost && (c->keep_lost = true))
            ORDO_WARN("error-feedback residuals: %s is missing or not of %lld values (a "
                      "worker added to the run has none; a restarted one had its predecessor's "
                      "on another node): this worker goes on with zero residuals there, and a "
                      "restarted worker's run is no longer the fault-free one",
                      path, (long long)n);
        fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
        if (fd < 0 || ftruncate(fd, (off_t)bytes) != 0) {
            int e = errno;
            if (fd >= 0) close(fd);
            return ordo__error_set(ORDO_ERR_IO, "error-feedback residuals: %s: %s", path,
                                  strerror(e));
        }
    }
    void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    int e = errno;
    close(fd);
    if (m == MAP_FAILED)
        return ordo__error_set(ORDO_ERR_IO, "error-feedback residuals: mapping %s: %s", path,
                              strerror(e));
    r->map = m;
    r->map_bytes = bytes;
    r->n = n;
    if (fresh) {
        memcpy(r->map->magic, KEPT_MAGIC, 8);
        r->map->n = n;
        for (int s = 0; s < KEPT_SLOTS; s++) r->map->tag[s] = -1;
    }
    return 0;
}

static float *kept_slot(const residual_t *r, int s)
{
    return (float *)(r->map + 1) + (size_t)s * (size_t)r->n;
}

/* kept_begin returns the slot iteration iter's push of unit is encoded with: the residual
 * after the unit's newest push before iter (zeros when there is none), copied into the
 * oldest other slot, whose tag is -1 until kept_end */
static int kept_begin(residual_t *r, int64_t iter)
{
    int src = -1, dst = -1;
    for (int s = 0; s < KEPT_SLOTS; s++)
        if (r->map->tag[s] != -1 && r->map->tag[s] < iter &&
            (src < 0 || r->map->tag[s] > r->map->tag[src]))
            src = s;
    for (int s = 0; s < KEPT_SLOTS; s++)
        if (s != src && (dst < 0 || r->map->tag[s] < r->map->tag[dst])) dst = s;
    r->map->tag[dst] = -1;
    if (src >= 0)
        memcpy(kept_slot(r, dst), kept_slot(r, src), (size_t)r->n * sizeof(float));
    else
        memset(kept_slot(r, dst), 0, (size_t)r->n * sizeof(float));
    r->v = kept_slot(r, dst);
    return dst;
}

void ordo__compress_frame_free(void *data, void *hint)
{
    frame_t *f = hint;
    if (f)
        atomic_store(&f->busy, 0);
    else
        free(data);
}

/* frame_for returns room for `need` bytes to encode unit's push into: the unit's buffer when
 * free (*hint = it, marked busy), else a new allocation (*hint = NULL) */
static void *frame_for(ordo__compress_t *c, int unit, size_t need, void **hint)
{
    *hint = NULL;
    if (unit < 0 || unit >= c->n_units) return malloc(need);
    residual_t *r = &c->res[unit];
    if (!r->frame && !(r->frame = calloc(1, sizeof *r->frame))) return malloc(need);
    frame_t *f = r->frame;
    if (atomic_load(&f->busy)) return malloc(need);
    if (f->cap < need) {
        void *d = realloc(f->data, need);
        if (!d) return malloc(need);
        f->data = d;
        f->cap = need;
    }
    atomic_store(&f->busy, 1);
    *hint = f;
    return f->data;
}

int ordo__compress_encode(ordo__compress_t *c, int key, int unit, const float *src, int64_t n,
                          uint64_t seed, void **out, size_t *len, int *dtype, void **hint)
{
    const ordo__codec_spec_t *spec = &c->spec[key];
    const ordo__codec_ops_t *ops = ordo__codec_ops(spec->id);
    if (spec->id == ORDO__CODEC_NONE) return 0;
    float *res = NULL;
    int slot = -1;
    residual_t *r = NULL;
    if (spec->ef) {
        r = &c->res[unit];
        /* kept (ordo__compress_keep): the unit's file, mapped at its first push */
        int rc = c->keep_dir && !r->map ? kept_map(c, unit, n) : 0;
        if (rc) return rc;
        if (!r->v && !r->map) {
            if (!(r->v = calloc((size_t)n, sizeof *r->v))) return ORDO_ERR_NOMEM;
            r->n = n;
        }
        if (r->n != n)
            return ordo__error_set(ORDO_ERR_INVAL,
                                  "unit %d: %lld values, its residual "
                                  "has %lld",
                                  unit, (long long)n, (long long)r->n);
        if (c->scratch_n < n) {
            float *s = realloc(c->scratch, (size_t)n * sizeof *s);
            if (!s) return ORDO_ERR_NOMEM;
            c->scratch = s;
            c->scratch_n = n;
        }
        if (r->map) slot = kept_begin(r, (int64_t)seed);
        res = r->v;
        c->pushed = true;
    }
    void *buf = frame_for(c, unit, ops->max_bytes(spec, n), hint);
    if (!buf) return ORDO_ERR_NOMEM;
    ordo__codec_io_t io = {.seed = seed};
    int64_t l = ordo__codec_encode_ef(spec, src, n, res, c->scratch, buf, &io);
    if (slot >= 0 && l >= 0) r->map->tag[slot] = (int64_t)seed;
    if (l < 0) {
        ordo__compress_frame_free(buf, *hint);
        if (io.overflow) { /* fp16: this push goes as float32, never as inf */
            char nb[32];
            if (!c->warned[key] && (c->warned[key] = 1))
                ORDO_WARN("tensor \"%s\": %lld values out of fp16's range (|x| / workers > "
                          "65504, inf or NaN); its pushes go as float32 while they are",
                          key_name(c, key, nb, sizeof nb), (long long)io.overflow);
            return 0;
        }
        return (int)l;
    }
    *out = buf;
    *len = (size_t)l;
    *dtype = ops->dtype;
    return 1;
}

void ordo__compress_key_bytes(const ordo__compress_t *c, const ordo__keys_t *keys, int key,
                              int64_t *push, int64_t *pull)
{
    const ordo__codec_spec_t *spec = &c->spec[key];
    const ordo__codec_ops_t *ops = ordo__codec_ops(spec->id),
                            *pops = ordo__codec_of_dtype(ordo__compress_pull_dtype(c, key));
    ordo__codec_spec_t plain = {.id = pops->id};
    *push = *pull = 0;
    for (int ch = 0; ch < keys->n_chunks[key]; ch++) {
        int64_t n = keys->slices[keys->first_slice[key] + ch].numel;
        *push += (int64_t)ops->max_bytes(spec, n);
        *pull += (int64_t)pops->max_bytes(&plain, n);
    }
}

/* ---- the residuals in a checkpoint ------------------------------------------------------ */

/* the file: magic "ORDOEF01", int32 units, int32 0, then per unit int64 n (0: no residual
 * yet) and n float32, all little-endian as the machine writes them; a CRC-32 trailer */
#define STATE_MAGIC "ORDOEF01"

bool ordo__compress_has_state(const ordo__compress_t *c)
{
    for (int k = 0; c && k < c->n_keys; k++)
        if (c->spec[k].ef) return true;
    return false;
}

static int state_save(const ordo__compress_t *c, const char *path)
{
    ordo__durable_t *d = NULL;
    int rc = ordo__durable_open(path, &d);
    if (rc) return rc;
    FILE *f = ordo__durable_file(d);
    int32_t head[2] = {c->n_units, 0};
    fwrite(STATE_MAGIC, 1, 8, f);
    fwrite(head, sizeof head, 1, f);
    for (int u = 0; u < c->n_units; u++) {
        const residual_t *r = &c->res[u];
        int64_t n = r->v ? r->n : 0;
        fwrite(&n, sizeof n, 1, f);
        if (n > 0) fwrite(r->v, sizeof(float), (size_t)n, f);
    }
    return ordo__durable_commit(&d, true, NULL);
}

/* state_put makes unit's residual the n floats at v: its own buffer, or in a kept unit the
 * newest slot of its file (tagged KEPT_LOADED) */
static int state_put(ordo__compress_t *c, int unit, const float *v, int64_t n)
{
    residual_t *r = &c->res[unit];
    if (c->keep_dir) {
        int rc = r->map ? 0 : kept_map(c, unit, n);
        if (rc) return rc;
        for (int s = 1; s < KEPT_SLOTS; s++) r->map->tag[s] = -1;
        r->v = kept_slot(r, 0);
        memcpy(r->v, v, (size_t)n * sizeof(float));
        r->map->tag[0] = KEPT_LOADED;
        return 0;
    }
    if (!r->v && !(r->v = malloc((size_t)n * sizeof *r->v))) return ORDO_ERR_NOMEM;
    r->n = n;
    memcpy(r->v, v, (size_t)n * sizeof(float));
    return 0;
}

/* slice_fits checks that a file's residual of n values (n > 0) for unit u, one of the keys'
 * slices, fits this worker's: its tensor keeps residuals and has that many values there */
static int slice_fits(const ordo__compress_t *c, const char *path, int u, int64_t n)
{
    int key = c->slice_key[u];
    char nb[32], cb[64];
    if (!c->spec[key].ef)
        return ordo__error_set(ORDO_ERR_FORMAT, "%s: unit %d holds %lld residuals of tensor "
                              "\"%s\", whose codec here (%s) keeps none", path, u, (long long)n,
                              key_name(c, key, nb, sizeof nb),
                              ordo__codec_format(&c->spec[key], cb, sizeof cb));
    if (n != c->slice_n[u])
        return ordo__error_set(ORDO_ERR_FORMAT, "%s: unit %d holds %lld residuals; tensor "
                              "\"%s\" has %lld values there (another model or partition)",
                              path, u, (long long)n, key_name(c, key, nb, sizeof nb),
                              (long long)c->slice_n[u]);
    return 0;
}

/* state_units walks the units of a residual file's body data[0..len) (its trailer cut
 * off): every field is checked, and each unit's residual handed to state_put when put */
static int state_units(ordo__compress_t *c, const char *path, const unsigned char *data,
                       size_t len, bool put)
{
    int32_t head[2];
    if (len < 8 + sizeof head || memcmp(data, STATE_MAGIC, 8) != 0)
        return ordo__error_set(ORDO_ERR_FORMAT, "%s: not a file of error-feedback residuals "
                              "(no \"" STATE_MAGIC "\" at offset 0)", path);
    memcpy(head, data + 8, sizeof head);
    if (head[0] != c->n_units)
        return ordo__error_set(ORDO_ERR_FORMAT, "%s: residuals of %d units; this worker has %d "
                              "(another model, plan or codec)", path, head[0], c->n_units);
    size_t at = 8 + sizeof head;
    for (int u = 0; u < c->n_units; u++) {
        int64_t n;
        if (len - at < sizeof n)
            return ordo__error_set(ORDO_ERR_FORMAT, "%s: ends at offset %zu in unit %d's size",
                                  path, at, u);
        memcpy(&n, data + at, sizeof n);
        at += sizeof n;
        if (n < 0 || (uint64_t)n > (len - at) / sizeof(float) ||
            (c->res[u].n > 0 && n > 0 && n != c->res[u].n))
            return ordo__error_set(ORDO_ERR_FORMAT, "%s: unit %d: %lld values at offset %zu do "
                                  "not fit the file or the unit", path, u, (long long)n,
                                  at - sizeof n);
        int rc = n > 0 && u < c->n_slices ? slice_fits(c, path, u, n) : 0;
        if (rc == 0 && put && n > 0) rc = state_put(c, u, (const float *)(data + at), n);
        if (rc) return rc;
        at += (size_t)n * sizeof(float);
    }
    if (at != len)
        return ordo__error_set(ORDO_ERR_FORMAT, "%s: %zu bytes after the last unit", path,
                              len - at);
    return 0;
}

/* state_load takes a residual file up only once it is whole: its fields first (their faults
 * say more), then its checksum; a refused file leaves every unit as it was */
static int state_load(ordo__compress_t *c, const char *path)
{
    if (c->pushed)
        return ordo__error_set(ORDO_ERR_INVAL, "%s: error-feedback residuals are loaded before "
                              "the first push, and this worker pushed already (load them "
                              "right after the join)", path);
    unsigned char *data = NULL;
    size_t len = 0;
    int rc = ordo__durable_read_file(path, &data, &len);
    if (rc) return rc;
    size_t body = len;
    bool had = ordo__durable_trailer(data, &body);
    if ((rc = state_units(c, path, data, body, false)) == 0)
        rc = had ? ordo__durable_verify(path, data, body)
                 : ordo__error_set(ORDO_ERR_FORMAT, "%s: no checksum trailer (a file this "
                                   "version writes always has one)", path);
    if (rc == 0) rc = state_units(c, path, data, body, true);
    free(data);
    return rc;
}

int ordo__compress_state(ordo__compress_t *c, const char *path, bool save)
{
    return save ? state_save(c, path) : state_load(c, path);
}
