/* durable: temporary file, fsync, rename, fsync of the folder; the checksum trailer. */
#include "common/durable.h"
#include "common/error.h"
#include "common/le.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

struct ordo__durable {
    FILE *f;
    char path[4096];
    char tmp[4112];
};

int ordo__durable_open(const char *path, ordo__durable_t **out)
{
    *out = NULL;
    ordo__durable_t *d = calloc(1, sizeof *d);
    if (!d) return ordo__error_set(ORDO_ERR_NOMEM, "%s: out of memory", path);
    if (snprintf(d->path, sizeof d->path, "%s", path) >= (int)sizeof d->path) {
        free(d);
        return ordo__error_set(ORDO_ERR_INVAL, "%s: path too long", path);
    }
    snprintf(d->tmp, sizeof d->tmp, "%s.tmp", path);
    d->f = fopen(d->tmp, "w+b"); /* read back for the checksum */
    if (!d->f) {
        int rc = ordo__error_set(ORDO_ERR_IO, "cannot write %s: %s", d->tmp, strerror(errno));
        free(d);
        return rc;
    }
    *out = d;
    return 0;
}

FILE *ordo__durable_file(ordo__durable_t *d)
{
    return d->f;
}

void ordo__durable_abort(ordo__durable_t **dp)
{
    ordo__durable_t *d = dp ? *dp : NULL;
    if (!d) return;
    if (d->f) fclose(d->f);
    remove(d->tmp);
    free(d);
    *dp = NULL;
}

/* the CRC-32 of the stream's bytes so far, read back from its start; leaves it at the end */
static int stream_crc(FILE *f, uint32_t *crc)
{
    if (fflush(f) != 0 || fseek(f, 0, SEEK_SET) != 0) return -1;
    unsigned char buf[1 << 16];
    uLong c = crc32(0L, Z_NULL, 0);
    size_t got;
    while ((got = fread(buf, 1, sizeof buf, f)) > 0)
        c = crc32(c, buf, (uInt)got);
    if (ferror(f) || fseek(f, 0, SEEK_END) != 0) return -1;
    *crc = (uint32_t)c;
    return 0;
}

/* fsync the folder holding path, so that the rename survives a crash */
static int sync_folder(const char *path)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else if (slash == dir)
        dir[1] = '\0';
    else
        *slash = '\0';
    int fd = open(dir, O_RDONLY | O_DIRECTORY);
    if (fd < 0) return -1;
    int rc = fsync(fd);
    close(fd);
    return rc;
}

int ordo__durable_commit(ordo__durable_t **dp, bool sum, const char *keep)
{
    ordo__durable_t *d = *dp;
    *dp = NULL;
    FILE *f = d->f;
    d->f = NULL;
    int bad = ferror(f) != 0;
    int err = bad ? errno : 0;
    uint32_t crc = 0;
    if (!bad && sum && stream_crc(f, &crc) != 0) bad = 1;
    if (!bad && sum) {
        unsigned char t[ORDO_DURABLE_TRAILER];
        memcpy(t, ORDO_DURABLE_MAGIC, 8);
        ordo_put_le(t + 8, crc, 4);
        ordo_put_le(t + 12, 0, 4);
        bad = fwrite(t, 1, sizeof t, f) != sizeof t;
    }
    if (!bad) bad = fflush(f) != 0 || fsync(fileno(f)) != 0;
    if (bad && !err) err = errno;
    if (fclose(f) != 0 && !bad) {
        bad = 1;
        err = errno;
    }
    if (!bad) {
        if (keep) (void)rename(d->path, keep); /* the first file has no predecessor */
        if (rename(d->tmp, d->path) != 0) {
            bad = 1;
            err = errno;
        }
    }
    int rc = 0;
    if (bad) {
        rc = ordo__error_set(ORDO_ERR_IO, "cannot write %s: %s", d->path, strerror(err ? err : EIO));
        remove(d->tmp);
    } else if (sync_folder(d->path) != 0) {
        rc = ordo__error_set(ORDO_ERR_IO, "cannot sync the folder of %s: %s", d->path,
                            strerror(errno));
    }
    free(d);
    return rc;
}

bool ordo__durable_trailer(const unsigned char *data, size_t *len)
{
    if (*len < ORDO_DURABLE_TRAILER ||
        memcmp(data + *len - ORDO_DURABLE_TRAILER, ORDO_DURABLE_MAGIC, 8) != 0)
        return false;
    *len -= ORDO_DURABLE_TRAILER;
    return true;
}

int ordo__durable_verify(const char *path, const unsigned char *data, size_t body)
{
    uint32_t want = (uint32_t)ordo_get_le(data + body + 8, 4);
    uLong c = crc32(0L, Z_NULL, 0);
    for (size_t at = 0; at < body; at += 1u << 30) /* uInt counts: in 1 GiB pieces */
        c = crc32(c, data + at, (uInt)(body - at < (1u << 30) ? body - at : (1u << 30)));
    uint32_t got = (uint32_t)c;
    if (got != want)
        return ordo__error_set(ORDO_ERR_FORMAT,
                              "%s: offset %zu: checksum mismatch (the trailer's CRC-32 is %08x, "
                              "the %zu bytes before it give %08x): the file is corrupt",
                              path, body, want, body, got);
    return 0;
}

int ordo__durable_check(const char *path, const unsigned char *data, size_t *len, bool *had)
{
    size_t body = *len;
    *had = ordo__durable_trailer(data, &body);
    if (*had) {
        int rc = ordo__durable_verify(path, data, body);
        if (rc) return rc;
    }
    *len = body;
    return 0;
}

int ordo__durable_read_file(const char *path, unsigned char **data, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return ordo__error_set(errno == ENOENT ? ORDO_ERR_NOTFOUND : ORDO_ERR_IO,
                               "cannot read %s: %s", path, strerror(errno));
    size_t cap = 1 << 16, n = 0;
    unsigned char *buf = malloc(cap);
    while (buf) {
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap) break;
        unsigned char *p = realloc(buf, cap * 2);
        if (!p) {
            free(buf);
            buf = NULL;
            break;
        }
        buf = p;
        cap *= 2;
    }
    int err = ferror(f);
    fclose(f);
    if (!buf) return ordo__error_set(ORDO_ERR_NOMEM, "%s: out of memory", path);
    if (err) {
        free(buf);
        return ordo__error_set(ORDO_ERR_IO, "cannot read %s", path);
    }
    *data = buf;
    *len = n;
    return 0;
}

int ordo__durable_check_file(const char *path, size_t *len)
{
    unsigned char *buf = NULL;
    size_t n = 0;
    int rc = ordo__durable_read_file(path, &buf, &n);
    if (rc) return rc;
    bool had;
    rc = ordo__durable_check(path, buf, &n, &had);
    free(buf);
    if (!rc) *len = n;
    return rc;
}
