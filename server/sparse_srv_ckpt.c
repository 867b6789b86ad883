/* sparse_srv_ckpt: a sparse server's part of a checkpoint ([fault] checkpoint_every) and of
 * resuming from one. Worker 0's checkpoint.bin holds the values and each worker its
 * residuals (checkpoint-worker-R-T.bin); the server keeps the momentum of the region in force
 * after every N updates in RUN/checkpoint-sparse-server-R.bin (written durably with the
 * checksum trailer of common/durable.h; the one before kept as .prev.bin). Layout, integers little-endian:
 *   bytes 0-7  magic "ORDOSSV1"
 *   uint32     the server's rank; uint32 lo, hi: its region [lo, hi) of the flat index space
 *   int64      iteration: how many updates the momentum has seen
 *   then hi - lo float32 momentum values, and nothing after but the checksum trailer.
 * A resumed run starts from the plan's first regions, which need not be the ones in force at
 * the checkpoint: each server takes its range from whichever files cover it. */
#include "server/sparse_srv_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/durable.h"
#include "common/error.h"
#include "common/le.h"
#include "common/log.h"

#define MAGIC "ORDOSSV1"
#define HEAD 28

static void path_of(char *buf, size_t size, const char *dir, int rank, bool prev)
{
    snprintf(buf, size, "%s/checkpoint-sparse-server-%d%s.bin", dir, rank, prev ? ".prev" : "");
}

void ordo__ssrv_ckpt_due(ordo__sparse_srv_t *srv)
{
    int64_t it = srv->ckpt_base + srv->t;
    if (srv->ckpt_every <= 0 || srv->sgd.momentum == 0 || it % srv->ckpt_every != 0) return;
    uint32_t lo = ordo__ssrv_lo(srv), hi = ordo__ssrv_hi(srv);
    size_t n = hi - lo, size = HEAD + 4 * n;
    unsigned char *buf = malloc(size);
    char path[4200], prev[4200];
    path_of(path, sizeof path, srv->ckpt_dir, srv->rank, false);
    path_of(prev, sizeof prev, srv->ckpt_dir, srv->rank, true);
    if (!buf) {
        ORDO_ERROR("checkpoint: no memory for the momentum of [%u, %u)", lo, hi);
        return;
    }
    memcpy(buf, MAGIC, 8);
    ordo_put_le(buf + 8, (uint32_t)srv->rank, 4);
    ordo_put_le(buf + 12, lo, 4);
    ordo_put_le(buf + 16, hi, 4);
    ordo_put_le(buf + 20, (uint64_t)it, 8);
    for (size_t i = 0; i < n; i++) {
        uint32_t b;
        memcpy(&b, &srv->momentum[lo + i], 4);
        ordo_put_le(buf + HEAD + 4 * i, b, 4);
    }
    /* durably, with a checksum; the one before kept, for a death between this file and the
     * others' (common/durable.h) */
    ordo__durable_t *d;
    int rc = ordo__durable_open(path, &d);
    if (!rc) {
        (void)fwrite(buf, 1, size, ordo__durable_file(d)); /* the commit reports a failure */
        rc = ordo__durable_commit(&d, true, prev);
    }
    if (rc)
        ORDO_ERROR("checkpoint after %lld updates: %s; the previous checkpoint is kept",
                   (long long)it, ordo__error_text(rc));
    else
        ORDO_INFO("checkpoint: %s (momentum of [%u, %u)) after %lld updates", path, lo, hi,
                  (long long)it);
    free(buf);
}

/* take_file copies the part of [lo, hi) that the checkpoint file at path (after `iteration`
 * updates) holds into the momentum and adds its length to *covered; 1 when the file is not
 * there or holds another iteration, 0 when taken, or an error naming the file */
static int take_file(ordo__sparse_srv_t *srv, const char *path, int64_t iteration, uint32_t lo,
                     uint32_t hi, size_t *covered)
{
    size_t body = 0; /* the bytes before the checksum trailer */
    int ck = ordo__durable_check_file(path, &body);
    if (ck) return ck == ORDO_ERR_NOTFOUND ? 1 : ck;
    FILE *f = fopen(path, "rb");
    if (!f) return 1;
    unsigned char head[HEAD];
    int rc = 0;
    unsigned char *buf = NULL;
    if (fread(head, 1, HEAD, f) != HEAD || memcmp(head, MAGIC, 8) != 0) {
        rc = ordo__error_set(ORDO_ERR_FORMAT, "%s: not a sparse server checkpoint", path);
        goto done;
    }
    uint32_t flo = (uint32_t)ordo_get_le(head + 12, 4), fhi = (uint32_t)ordo_get_le(head + 16, 4);
    int64_t it = (int64_t)ordo_get_le(head + 20, 8);
    if (it != iteration) {
        rc = 1;
        goto done;
    }
    if (flo > fhi || fhi > srv->plan.n) {
        rc = ordo__error_set(ORDO_ERR_FORMAT, "%s: region [%u, %u) outside the model's %u entries",
                            path, flo, fhi, srv->plan.n);
        goto done;
    }
    size_t n = fhi - flo;
    buf = malloc(4 * n + 1);
    if (!buf) {
        rc = ORDO_ERR_NOMEM;
        goto done;
    }
    if (body != HEAD + 4 * n || fread(buf, 1, 4 * n, f) != 4 * n) {
        rc = ordo__error_set(ORDO_ERR_FORMAT, "%s: not %zu momentum values for [%u, %u)", path, n,
                            flo, fhi);
        goto done;
    }
    uint32_t a = flo > lo ? flo : lo, b = fhi < hi ? fhi : hi;
    if (a < b) {
        ordo_get_floats_le(srv->momentum + a, buf + 4 * (size_t)(a - flo), (int64_t)(b - a));
        *covered += b - a;
    }
done:
    free(buf);
    fclose(f);
    return rc;
}

int ordo__sparse_srv_checkpoints(ordo__sparse_srv_t *srv, int every, int64_t base, const char *dir,
                                const char *resume_dir)
{
    srv->ckpt_every = every;
    srv->ckpt_base = base;
    snprintf(srv->ckpt_dir, sizeof srv->ckpt_dir, "%s", dir);
    if (!resume_dir || srv->sgd.momentum == 0) return 0;
    uint32_t lo = ordo__ssrv_lo(srv), hi = ordo__ssrv_hi(srv);
    size_t covered = 0;
    char path[4200];
    /* the servers' regions at the checkpoint do not overlap: each entry comes from one file */
    for (int r = 0; r < srv->S; r++) {
        path_of(path, sizeof path, resume_dir, r, false);
        int rc = take_file(srv, path, base, lo, hi, &covered);
        if (rc == 1) {
            path_of(path, sizeof path, resume_dir, r, true);
            rc = take_file(srv, path, base, lo, hi, &covered);
        }
        if (rc == 1)
            return ordo__error_set(ORDO_ERR_NOTFOUND, "%s/checkpoint-sparse-server-%d.bin: no "
                                  "momentum after %lld updates", resume_dir, r, (long long)base);
        if (rc) return rc;
    }
    if (covered != hi - lo)
        return ordo__error_set(ORDO_ERR_FORMAT, "%s: the servers' checkpoints cover %zu of the %u "
                              "entries of [%u, %u)", resume_dir, covered, hi - lo, lo, hi);
    ORDO_INFO("resume: momentum of [%u, %u) after %lld updates from %s", lo, hi, (long long)base,
              resume_dir);
    return 0;
}
