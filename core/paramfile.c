/* paramfile: writing and validated reading of params.bin. */
#include "core/paramfile.h"
#include "common/durable.h"
#include "common/error.h"
#include "common/log.h"
#include "common/le.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define HEADER_BYTES 24
#define MAX_NAME     65535

/* ---- write -------------------------------------------------------------------------- */

int ordo__paramfile_write(const char *path, const ordo__model_t *m, float *const *params,
                         int64_t iteration)
{
    return ordo__paramfile_write_kept(path, NULL, m, params, iteration);
}

int ordo__paramfile_write_kept(const char *path, const char *keep, const ordo__model_t *m,
                               float *const *params, int64_t iteration)
{
    for (int i = 0; i < m->n_params; i++) {
        size_t len = strlen(m->params[i].name);
        if (len == 0 || len > MAX_NAME)
            return ordo__error_set(ORDO_ERR_INVAL, "%s: parameter %d's name does not fit", path, i);
    }
    ordo__durable_t *d;
    int rc = ordo__durable_open(path, &d);
    if (rc) return rc;
    FILE *f = ordo__durable_file(d);
    unsigned char hdr[HEADER_BYTES];
    memcpy(hdr, ORDO_PARAMFILE_MAGIC, 8);
    ordo_put_le(hdr + 8, (uint64_t)m->n_params, 4);
    ordo_put_le(hdr + 12, 0, 4);
    ordo_put_le(hdr + 16, (uint64_t)iteration, 8);
    int bad = fwrite(hdr, 1, sizeof hdr, f) != sizeof hdr;
    for (int i = 0; i < m->n_params && !bad; i++) {
        size_t len = strlen(m->params[i].name);
        unsigned char b[8];
        ordo_put_le(b, len, 2);
        bad |= fwrite(b, 1, 2, f) != 2 || fwrite(m->params[i].name, 1, len, f) != len;
        ordo_put_le(b, (uint64_t)m->params[i].numel, 8);
        bad |= fwrite(b, 1, 8, f) != 8;
    }
    for (int i = 0; i < m->n_params && !bad; i++)
        bad |= ordo_fwrite_floats_le(f, params[i], m->params[i].numel) != 0;
    /* a failed write left the stream's error set: the commit reports it, naming path */
    return ordo__durable_commit(&d, true, keep);
}

/* ---- read --------------------------------------------------------------------------- */

int ordo__paramfile_read_iteration(const char *path, int64_t *iteration)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return ordo__error_set(errno == ENOENT ? ORDO_ERR_NOTFOUND : ORDO_ERR_IO, "cannot read %s: %s",
                              path, strerror(errno));
    unsigned char h[HEADER_BYTES];
    size_t got = fread(h, 1, sizeof h, f);
    fclose(f);
    if (got != sizeof h)
        return ordo__error_set(ORDO_ERR_FORMAT, "%s: offset 0: truncated header", path);
    if (memcmp(h, ORDO_PARAMFILE_MAGIC, 8) != 0)
        return ordo__error_set(ORDO_ERR_FORMAT, "%s: offset 0: not a parameter file (magic)", path);
    *iteration = (int64_t)ordo_get_le(h + 16, 8);
    return 0;
}

void ordo__paramfile_destroy(ordo__paramfile_t **pp)
{
    ordo__paramfile_t *p = pp ? *pp : NULL;
    if (!p) return;
    for (int i = 0; i < p->n; i++) {
        if (p->names) free(p->names[i]);
        if (p->values) free(p->values[i]);
    }
    free(p->names);
    free(p->values);
    free(p->numel);
    free(p);
    *pp = NULL;
}

int ordo__paramfile_read(const char *path, ordo__paramfile_t **out)
{
    unsigned char *d = NULL;
    size_t len = 0;
    int rc = ordo__durable_read_file(path, &d, &len);
    if (rc) return rc;
    bool sum = ordo__durable_trailer(d, &len); /* its CRC is checked after the fields */
    ordo__paramfile_t *p = calloc(1, sizeof *p);
    if (!p) {
        free(d);
        return ordo__error_set(ORDO_ERR_NOMEM, "%s: out of memory", path);
    }
    if (len < HEADER_BYTES || memcmp(d, ORDO_PARAMFILE_MAGIC, 8) != 0) {
        rc = ordo__error_set(ORDO_ERR_FORMAT, "%s: offset 0: not an ordo parameter file (magic %s)",
                            path, ORDO_PARAMFILE_MAGIC);
        goto fail;
    }
    uint64_t n = ordo_get_le(d + 8, 4);
    p->iteration = (int64_t)ordo_get_le(d + 16, 8);
    /* each entry needs at least 11 bytes, which bounds n before allocating */
    if (n > (len - HEADER_BYTES) / 11 || p->iteration < 0) {
        rc = ordo__error_set(ORDO_ERR_FORMAT,
                            "%s: offset 8: %llu parameters (iteration %lld) do not "
                            "fit a file of %zu bytes",
                            path, (unsigned long long)n, (long long)p->iteration, len);
        goto fail;
    }
    p->names = calloc(n ? n : 1, sizeof *p->names);
    p->values = calloc(n ? n : 1, sizeof *p->values);
    p->numel = calloc(n ? n : 1, sizeof *p->numel);
    if (!p->names || !p->values || !p->numel) {
        rc = ordo__error_set(ORDO_ERR_NOMEM, "%s: out of memory", path);
        goto fail;
    }
    p->n = (int)n;
    size_t off = HEADER_BYTES;
    uint64_t total = 0;
    for (int i = 0; i < p->n; i++) {
        size_t at = off;
        if (len - off < 2) goto truncated;
        size_t l = (size_t)ordo_get_le(d + off, 2);
        off += 2;
        if (l == 0) {
            rc = ordo__error_set(ORDO_ERR_FORMAT, "%s: offset %zu: parameter %d has an empty name",
                                path, at, i);
            goto fail;
        }
        if (len - off < l + 8) goto truncated;
        if (!(p->names[i] = malloc(l + 1))) {
            rc = ordo__error_set(ORDO_ERR_NOMEM, "%s: out of memory", path);
            goto fail;
        }
        memcpy(p->names[i], d + off, l);
        p->names[i][l] = '\0';
        if (strlen(p->names[i]) != l) {
            rc = ordo__error_set(ORDO_ERR_FORMAT, "%s: offset %zu: parameter %d's name holds a NUL",
                                path, at, i);
            goto fail;
        }
        off += l;
        uint64_t ne = ordo_get_le(d + off, 8);
        off += 8;
        if (ne == 0 || ne > (uint64_t)(len / 4) || total + ne > (uint64_t)(len / 4)) {
            rc = ordo__error_set(ORDO_ERR_FORMAT,
                                "%s: offset %zu: parameter %s has %llu values, more than the "
                                "file holds",
                                path, off - 8, p->names[i], (unsigned long long)ne);
            goto fail;
        }
        p->numel[i] = (int64_t)ne;
        total += ne;
    }
    if ((uint64_t)(len - off) != total * 4) {
        rc = ordo__error_set(ORDO_ERR_FORMAT,
                            "%s: offset %zu: %zu bytes of values, the header announces %llu", path,
                            off, len - off, (unsigned long long)(total * 4));
        goto fail;
    }
    for (int i = 0; i < p->n; i++) {
        if (!(p->values[i] = malloc(sizeof(float) * (size_t)p->numel[i]))) {
            rc = ordo__error_set(ORDO_ERR_NOMEM, "%s: out of memory", path);
            goto fail;
        }
        ordo_get_floats_le(p->values[i], d + off, p->numel[i]);
        off += (size_t)p->numel[i] * 4;
    }
    if (sum && (rc = ordo__durable_verify(path, d, len)) != 0) goto fail;
    free(d);
    *out = p;
    return 0;
truncated:
    rc = ordo__error_set(ORDO_ERR_FORMAT, "%s: offset %zu: truncated parameter table", path, off);
fail:
    free(d);
    ordo__paramfile_destroy(&p);
    return rc;
}

int ordo__paramfile_match(const ordo__paramfile_t *pf, const ordo__model_t *m)
{
    if (pf->n != m->n_params)
        return ordo__error_set(ORDO_ERR_FORMAT, "parameter file has %d parameters, model %s has %d",
                              pf->n, m->name, m->n_params);
    for (int i = 0; i < pf->n; i++) {
        if (strcmp(pf->names[i], m->params[i].name) != 0)
            return ordo__error_set(ORDO_ERR_FORMAT, "parameter %d is %s in the file, %s in model %s", i,
                                  pf->names[i], m->params[i].name, m->name);
        if (pf->numel[i] != m->params[i].numel)
            return ordo__error_set(ORDO_ERR_FORMAT,
                                  "parameter %s has %lld values in the file, %lld "
                                  "in model %s",
                                  pf->names[i], (long long)pf->numel[i],
                                  (long long)m->params[i].numel, m->name);
    }
    return 0;
}

int ordo__paramfile_newest(const char *dir, char *path, size_t size, int64_t *iteration)
{
    static const char *const names[] = {"checkpoint.bin", "checkpoint.prev.bin"};
    int first = 0;
    char refused[2][1024] = {"", ""};
    for (int k = 0; k < 2; k++) {
        char p[4200];
        snprintf(p, sizeof p, "%s/%s", dir, names[k]);
        ordo__paramfile_t *pf = NULL;
        int rc = ordo__paramfile_read(p, &pf);
        if (!rc) {
            int64_t it = pf->iteration;
            ordo__paramfile_destroy(&pf);
            if (k > 0)
                ORDO_WARN("resume: %s refused (%s); using the previous checkpoint %s, after "
                          "%lld updates",
                          names[0], refused[0], p, (long long)it);
            if (snprintf(path, size, "%s", p) >= (int)size)
                return ordo__error_set(ORDO_ERR_INVAL, "%s: path too long", p);
            *iteration = it;
            return 0;
        }
        if (k == 0) first = rc;
        snprintf(refused[k], sizeof refused[k], "%s", ordo__error_text(rc));
    }
    if (first == ORDO_ERR_NOTFOUND && refused[1][0] && strstr(refused[1], "No such file"))
        return ordo__error_set(ORDO_ERR_NOTFOUND, "%s", refused[0]);
    return ordo__error_set(first == ORDO_ERR_NOTFOUND ? ORDO_ERR_FORMAT : first,
                          "no whole checkpoint in %s: %s; %s", dir, refused[0], refused[1]);
}
