/* ckpt: the servers' momentum in checkpoints, and restoring it. */
#include "server/ckpt.h"
#include "common/durable.h"
#include "common/error.h"
#include "common/le.h"
#include "common/log.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HEADER_BYTES 24
#define ENTRY_BYTES  16

/* one checkpoint being gathered: the slices' momentum after `iter` updates */
typedef struct {
    int64_t iter; /* -1: none */
    int left;     /* slices still to copy */
    float *data;
    int64_t *copied; /* [n] per slice: the iteration last copied (a backup may be sent a state
                      * twice, [fault] replicas: counted once) */
} gen_t;

struct ordo__srv_ckpt {
    ordo__store_t *st;
    const ordo__keys_t *keys;
    int rank, every, n;
    int64_t base;
    int *slices;     /* [n] the slices held here, in key-map order */
    int *index_of;   /* per slice of the key map: its place in slices, or -1 */
    int64_t *offset; /* [n] where a slice's floats start in a gen's data */
    int64_t total;   /* floats over all slices */
    gen_t gen[2];    /* checkpoints N apart can be gathered at once (slices run apart) */
    char dir[4096];
};

/* the server's slices in key-map order (n of them, floats in *total) */
static int held_slices(ordo__store_t *st, const ordo__keys_t *keys, int **out, int *n,
                       int64_t *total)
{
    *out = malloc(sizeof **out * (size_t)(keys->n_slices + 1));
    if (!*out) return ORDO_ERR_NOMEM;
    *n = 0;
    *total = 0;
    for (int i = 0; i < keys->n_slices; i++)
        if (ordo__store_owns(st, i)) {
            (*out)[(*n)++] = i;
            *total += keys->slices[i].numel;
        }
    return 0;
}

int ordo__srv_ckpt_new(ordo__store_t *st, const ordo__keys_t *keys, int rank, int every,
                      int64_t base, const char *dir, ordo__srv_ckpt_t **out)
{
    *out = NULL;
    int first = -1;
    for (int i = 0; i < keys->n_slices && first < 0; i++)
        if (ordo__store_owns(st, i)) first = i;
    if (every <= 0 || first < 0 || !ordo__store_momentum(st, first)) return 0;
    ordo__srv_ckpt_t *c = calloc(1, sizeof *c);
    if (!c) return ORDO_ERR_NOMEM;
    *c = (ordo__srv_ckpt_t){.st = st, .keys = keys, .rank = rank, .every = every, .base = base};
    snprintf(c->dir, sizeof c->dir, "%s", dir);
    int rc = held_slices(st, keys, &c->slices, &c->n, &c->total);
    c->index_of = malloc(sizeof *c->index_of * (size_t)keys->n_slices);
    c->offset = malloc(sizeof *c->offset * (size_t)(c->n + 1));
    for (int g = 0; g < 2; g++) {
        c->gen[g].iter = -1;
        c->gen[g].data = malloc(sizeof(float) * (size_t)(c->total + 1));
        c->gen[g].copied = malloc(sizeof(int64_t) * (size_t)(c->n + 1));
        for (int j = 0; c->gen[g].copied && j < c->n; j++)
            c->gen[g].copied[j] = -1;
    }
    if (rc || !c->index_of || !c->offset || !c->gen[0].data || !c->gen[1].data ||
        !c->gen[0].copied || !c->gen[1].copied) {
        ordo__srv_ckpt_destroy(&c);
        return rc ? rc : ORDO_ERR_NOMEM;
    }
    for (int i = 0; i < keys->n_slices; i++)
        c->index_of[i] = -1;
    int64_t at = 0;
    for (int j = 0; j < c->n; j++) {
        c->index_of[c->slices[j]] = j;
        c->offset[j] = at;
        at += keys->slices[c->slices[j]].numel;
    }
    *out = c;
    return 0;
}

void ordo__srv_ckpt_destroy(ordo__srv_ckpt_t **cp)
{
    ordo__srv_ckpt_t *c = *cp;
    if (!c) return;
    free(c->slices);
    free(c->index_of);
    free(c->offset);
    free(c->gen[0].data);
    free(c->gen[1].data);
    free(c->gen[0].copied);
    free(c->gen[1].copied);
    free(c);
    *cp = NULL;
}

static void file_name(char *buf, size_t size, const char *dir, int rank, const char *suffix)
{
    snprintf(buf, size, "%s/checkpoint-server-%d%s.bin", dir, rank, suffix);
}

/* write gen g as checkpoint-server-R.bin (through a temporary file), the previous one kept
 * as .prev.bin */
static int write_gen(ordo__srv_ckpt_t *c, const gen_t *g)
{
    char path[4200], prev[4210];
    file_name(path, sizeof path, c->dir, c->rank, "");
    file_name(prev, sizeof prev, c->dir, c->rank, ".prev");
    ordo__durable_t *d;
    int rc = ordo__durable_open(path, &d);
    if (rc) return rc;
    FILE *f = ordo__durable_file(d);
    unsigned char h[HEADER_BYTES];
    memcpy(h, ORDO_CKPT_MAGIC, 8);
    ordo_put_le(h + 8, (uint64_t)c->rank, 4);
    ordo_put_le(h + 12, (uint64_t)c->n, 4);
    ordo_put_le(h + 16, (uint64_t)g->iter, 8);
    int bad = fwrite(h, 1, sizeof h, f) != sizeof h;
    for (int j = 0; j < c->n && !bad; j++) {
        const ordo__slice_t *sl = &c->keys->slices[c->slices[j]];
        unsigned char e[ENTRY_BYTES];
        ordo_put_le(e, sl->key, 4);
        ordo_put_le(e + 4, sl->chunk, 4);
        ordo_put_le(e + 8, (uint64_t)sl->numel, 8);
        bad = fwrite(e, 1, sizeof e, f) != sizeof e;
    }
    if (!bad) (void)ordo_fwrite_floats_le(f, g->data, c->total);
    /* a failed write left the stream's error set: the commit reports it, naming path */
    if ((rc = ordo__durable_commit(&d, true, prev)) != 0) return rc;
    ORDO_INFO("checkpoint: %s (momentum) after %lld updates", path, (long long)g->iter);
    return 0;
}

void ordo__srv_ckpt_updated(ordo__srv_ckpt_t *c, int slice)
{
    if (!c || slice < 0 || slice >= c->keys->n_slices || c->index_of[slice] < 0) return;
    int64_t iter = c->base + ordo__store_version(c->st, slice);
    if (iter <= c->base || iter % c->every) return;
    gen_t *g = &c->gen[(iter / c->every) % 2];
    if (g->iter != iter) { /* the first of this checkpoint's slices */
        g->iter = iter;
        g->left = c->n;
    }
    int j = c->index_of[slice];
    memcpy(g->data + c->offset[j], ordo__store_momentum(c->st, slice),
           sizeof(float) * (size_t)c->keys->slices[slice].numel);
    if (g->copied[j] == iter) return; /* the same state again: copied, counted before */
    g->copied[j] = iter;
    if (--g->left > 0) return;
    int rc = write_gen(c, g);
    if (rc)
        ORDO_ERROR("checkpoint after %lld updates: %s; the previous checkpoint is kept",
                   (long long)iter, ordo__error_text(rc));
}

/* ---- resuming ------------------------------------------------------------------------ */

/* read one file's header and entries; *iter gets its iteration. 0, or ORDO_ERR_NOTFOUND /
 * ORDO_ERR_FORMAT with the fault; on success f is left at the first float */
static int read_head(FILE *f, const char *path, int rank, const ordo__keys_t *keys,
                     const int *slices, int n, int64_t *iter)
{
    unsigned char h[HEADER_BYTES];
    if (fread(h, 1, sizeof h, f) != sizeof h)
        return ordo__error_set(ORDO_ERR_FORMAT, "%s: offset 0: truncated header", path);
    if (memcmp(h, ORDO_CKPT_MAGIC, 8) != 0)
        return ordo__error_set(ORDO_ERR_FORMAT, "%s: offset 0: not a server checkpoint (magic)", path);
    int file_rank = (int)ordo_get_le(h + 8, 4), file_n = (int)ordo_get_le(h + 12, 4);
    *iter = (int64_t)ordo_get_le(h + 16, 8);
    if (file_rank != rank)
        return ordo__error_set(ORDO_ERR_FORMAT, "%s: offset 8: server %d's checkpoint, this is server %d",
                              path, file_rank, rank);
    if (file_n != n)
        return ordo__error_set(ORDO_ERR_FORMAT,
                              "%s: offset 12: %d slices, this server holds %d (another key map)",
                              path, file_n, n);
    for (int j = 0; j < n; j++) {
        unsigned char e[ENTRY_BYTES];
        size_t off = HEADER_BYTES + (size_t)j * ENTRY_BYTES;
        if (fread(e, 1, sizeof e, f) != sizeof e)
            return ordo__error_set(ORDO_ERR_FORMAT, "%s: offset %zu: truncated slice table", path, off);
        const ordo__slice_t *sl = &keys->slices[slices[j]];
        if (ordo_get_le(e, 4) != sl->key || ordo_get_le(e + 4, 4) != sl->chunk ||
            (int64_t)ordo_get_le(e + 8, 8) != sl->numel)
            return ordo__error_set(ORDO_ERR_FORMAT,
                                  "%s: offset %zu: slice %d is key %llu chunk %llu of %llu floats, "
                                  "the key map has key %u chunk %u of %lld (another key map)",
                                  path, off, j, (unsigned long long)ordo_get_le(e, 4),
                                  (unsigned long long)ordo_get_le(e + 4, 4),
                                  (unsigned long long)ordo_get_le(e + 8, 8), sl->key, sl->chunk,
                                  (long long)sl->numel);
    }
    return 0;
}

/* with replicas every slice lives in the files of each server that held it (primary or
 * backup): take each slice this server holds from the first file, of any server, written
 * after `iteration` updates (this server's own first), so that a server that died before the
 * checkpoint the run resumes from costs nothing. 0 once every slice was found. */
static int gather(ordo__store_t *st, const ordo__keys_t *keys, int rank, const char *dir,
                  int64_t iteration, const int *slices, int n)
{
    uint8_t *done = calloc((size_t)keys->n_slices + 1, 1);
    if (!done) return ORDO_ERR_NOMEM;
    int left = n, files = 0, rc = 0;
    for (int k = 0; k < 2 * keys->n_servers && left > 0 && !rc; k++) {
        int r = (rank + k / 2) % keys->n_servers;
        char path[4200];
        file_name(path, sizeof path, dir, r, k % 2 ? ".prev" : "");
        size_t body;
        int ck = ordo__durable_check_file(path, &body); /* a corrupt file gives nothing */
        if (ck && ck != ORDO_ERR_NOTFOUND) ORDO_WARN("resume: %s refused", ordo__error_text(ck));
        if (ck) continue;
        FILE *f = fopen(path, "rb");
        if (!f) continue;
        unsigned char h[HEADER_BYTES];
        int fn = 0;
        int64_t it = -1;
        if (fread(h, 1, sizeof h, f) == sizeof h && !memcmp(h, ORDO_CKPT_MAGIC, 8)) {
            fn = (int)ordo_get_le(h + 12, 4);
            it = (int64_t)ordo_get_le(h + 16, 8);
        }
        unsigned char *table = it == iteration && fn > 0 && fn <= keys->n_slices
                                   ? malloc((size_t)fn * ENTRY_BYTES)
                                   : NULL;
        if (!table || fread(table, ENTRY_BYTES, (size_t)fn, f) != (size_t)fn) {
            free(table);
            fclose(f);
            continue;
        }
        int used = 0;
        for (int j = 0; j < fn && !rc; j++) { /* entries in the file's order, floats after */
            const unsigned char *e = table + (size_t)j * ENTRY_BYTES;
            int64_t numel = (int64_t)ordo_get_le(e + 8, 8);
            int sl = ordo__keys_slice(keys, (uint32_t)ordo_get_le(e, 4), (uint32_t)ordo_get_le(e + 4, 4));
            bool want = sl >= 0 && !done[sl] && ordo__store_owns(st, sl) &&
                        keys->slices[sl].numel == numel;
            if (!want) {
                if (fseek(f, (long)(numel * 4), SEEK_CUR) != 0) break;
                continue;
            }
            unsigned char *buf = malloc((size_t)numel * 4 + 1);
            if (!buf) {
                rc = ORDO_ERR_NOMEM;
            } else if (fread(buf, 4, (size_t)numel, f) == (size_t)numel) {
                ordo_get_floats_le(ordo__store_momentum(st, sl), buf, numel);
                done[sl] = 1;
                left--;
                used++;
            }
            free(buf);
        }
        free(table);
        fclose(f);
        if (used) {
            files++;
            ORDO_INFO("resume: momentum of %d slices after %lld updates from %s", used,
                      (long long)iteration, path);
        }
    }
    for (int j = 0; j < n && !rc && left > 0; j++)
        if (!done[slices[j]]) {
            const ordo__slice_t *sl = &keys->slices[slices[j]];
            rc = ordo__error_set(ORDO_ERR_NOTFOUND,
                                "%s: no checkpoint-server-R.bin of any server holds the momentum "
                                "of key %u chunk %u after %lld updates (the values in "
                                "checkpoint.bin): no consistent state to resume from",
                                dir, sl->key, sl->chunk, (long long)iteration);
        }
    free(done);
    (void)files;
    return rc;
}

/* load one file's momentum when it holds the state after `iteration` updates: 0 loaded, 1 a
 * whole file of another iteration (*it), or the error naming the file and the check it failed
 * (the checksum trailer, the header, the table, the momentum's size) */
static int load_file(ordo__store_t *st, const ordo__keys_t *keys, int rank, const char *name,
                     int64_t iteration, const int *slices, int n, int64_t total, int64_t *it)
{
    size_t body = 0;
    int r = ordo__durable_check_file(name, &body);
    if (r) return r;
    FILE *f = fopen(name, "rb");
    if (!f)
        return ordo__error_set(errno == ENOENT ? ORDO_ERR_NOTFOUND : ORDO_ERR_IO,
                              "cannot read %s: %s", name, strerror(errno));
    if ((r = read_head(f, name, rank, keys, slices, n, it)) != 0 || *it != iteration) {
        fclose(f);
        return r ? r : 1;
    }
    size_t want = (size_t)total * 4, head = HEADER_BYTES + (size_t)n * ENTRY_BYTES;
    size_t got = body > head ? body - head : 0;
    unsigned char *buf = malloc(want + 1);
    if (!buf)
        r = ORDO_ERR_NOMEM;
    else if (got != want || fread(buf, 1, want, f) != want)
        r = ordo__error_set(ORDO_ERR_FORMAT, "%s: %zu bytes of momentum, the table announces %zu%s",
                           name, got, want, got > want ? " (trailing bytes)" : "");
    int64_t at = 0;
    for (int j = 0; !r && j < n; j++) {
        int64_t numel = keys->slices[slices[j]].numel;
        ordo_get_floats_le(ordo__store_momentum(st, slices[j]), buf + at * 4, numel);
        at += numel;
    }
    free(buf);
    fclose(f);
    if (!r)
        ORDO_INFO("resume: momentum of %d slices after %lld updates from %s", n,
                  (long long)iteration, name);
    return r;
}

int ordo__srv_ckpt_load(ordo__store_t *st, const ordo__keys_t *keys, int rank, const char *dir,
                       int64_t iteration)
{
    int *slices = NULL, n;
    int64_t total;
    int rc = held_slices(st, keys, &slices, &n, &total);
    if (rc) return rc;
    if (n == 0 || !ordo__store_momentum(st, slices[0])) { /* nothing but values to restore */
        free(slices);
        return 0;
    }
    if (keys->replicas > 1) {
        rc = gather(st, keys, rank, dir, iteration, slices, n);
        free(slices);
        return rc;
    }
    char path[4200], other[4200];
    file_name(path, sizeof path, dir, rank, "");
    file_name(other, sizeof other, dir, rank, ".prev");
    const char *names[2] = {path, other};
    int64_t found[2] = {-1, -1};
    int refused = 0;      /* the first file's fault, when it had one */
    char why[1200] = ""; /* and its text */
    for (int k = 0; k < 2; k++) {
        int r = load_file(st, keys, rank, names[k], iteration, slices, n, total, &found[k]);
        if (r == 0) {
            free(slices);
            return 0;
        }
        if (r == 1 || (r == ORDO_ERR_NOTFOUND && k == 1)) continue;
        if (!refused) {
            refused = r;
            snprintf(why, sizeof why, "%s", ordo__error_text(r));
        }
        if (r != ORDO_ERR_NOTFOUND) ORDO_WARN("resume: %s refused", ordo__error_text(r));
    }
    free(slices);
    if (refused && found[1] < 0) return ordo__error_set(refused, "%s", why);
    if (refused) /* the newest is missing or damaged, the one before is of another checkpoint */
        return ordo__error_set(refused == ORDO_ERR_NOTFOUND ? refused : ORDO_ERR_FORMAT,
                              "%s; %s holds the momentum after %lld updates, checkpoint.bin the "
                              "values after %lld: no consistent state to resume from",
                              why, other, (long long)found[1], (long long)iteration);
    return ordo__error_set(ORDO_ERR_FORMAT,
                          "%s holds the momentum after %lld updates%s, checkpoint.bin the values "
                          "after %lld: the run stopped between the two; no consistent state to "
                          "resume from",
                          path, (long long)found[0], found[1] >= 0 ? " (and .prev.bin another)" : "",
                          (long long)iteration);
}
