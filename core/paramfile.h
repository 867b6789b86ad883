/* paramfile: a model's parameter values in one binary file (runs/RUN/params.bin, written by
 * worker 0 when [output] save_params = true), and reading it back with every field checked.
 * Layout, all integers little-endian:
 *   bytes 0-7   magic "ORDOPRM1"
 *   uint32      n, the number of parameters
 *   uint32      0 (reserved)
 *   int64       iteration: how many updates the values have seen
 *   n entries   uint16 name length L, L bytes of name (no NUL), uint64 numel
 *   then, for each parameter in model order, numel float32 values (IEEE 754, little-endian)
 * and nothing after the last value but, in files ordo writes since the checksum came in, the
 * 16-byte checksum trailer of common/durable.h (readers accept files with or without it).
 * Files are written durably (temporary file, fsync, rename, fsync of the folder). */
#ifndef ORDO_PARAMFILE_H
#define ORDO_PARAMFILE_H

#include <stddef.h>
#include <stdint.h>

#include "core/model.h"

#define ORDO_PARAMFILE_MAGIC "ORDOPRM1"

typedef struct ordo__paramfile {
    int n;
    int64_t iteration;
    char **names;   /* n NUL-terminated names */
    int64_t *numel; /* n counts */
    float **values; /* n arrays of numel[i] floats */
} ordo__paramfile_t;

/* ordo__paramfile_write writes m's parameters (params[i] holds m->params[i].numel floats,
 * borrowed) after `iteration` updates to path, replacing it. Fails with ORDO_ERR_IO naming the
 * path. */
int ordo__paramfile_write(const char *path, const ordo__model_t *m, float *const *params,
                         int64_t iteration);

/* ordo__paramfile_write_kept is ordo__paramfile_write that first renames the old path to keep
 * (checkpoint.prev.bin beside checkpoint.bin); a failed write leaves both files as they were. */
int ordo__paramfile_write_kept(const char *path, const char *keep, const ordo__model_t *m,
                               float *const *params, int64_t iteration);

/* ordo__paramfile_newest finds the checkpoint a run resumes from in folder dir: checkpoint.bin
 * when it reads back whole (every check of ordo__paramfile_read, the checksum too), else
 * checkpoint.prev.bin, logging why the newer one was refused. path gets the file, *iteration
 * its updates. Fails with ORDO_ERR_NOTFOUND when neither file exists, ORDO_ERR_FORMAT naming
 * both files and their faults when neither is whole. */
int ordo__paramfile_newest(const char *dir, char *path, size_t size, int64_t *iteration);

/* ordo__paramfile_read reads and validates path into *out (caller destroys). Fails with
 * ORDO_ERR_NOTFOUND or ORDO_ERR_FORMAT, the detail naming the file, the byte offset and the fault
 * (bad magic, truncation, an empty or oversized name, counts that do not fit the file,
 * trailing bytes). */
int ordo__paramfile_read(const char *path, ordo__paramfile_t **out);

/* ordo__paramfile_read_iteration reads only path's header: *iteration, the updates its values
 * have seen. Fails as ordo__paramfile_read does on a missing file, a bad magic or a short
 * header. */
int ordo__paramfile_read_iteration(const char *path, int64_t *iteration);

/* ordo__paramfile_match checks that pf holds exactly m's parameters (same count, names and
 * element counts, in model order); ORDO_ERR_FORMAT names the first difference. */
int ordo__paramfile_match(const ordo__paramfile_t *pf, const ordo__model_t *m);

/* ordo__paramfile_destroy frees *pf and sets it to NULL; NULL-safe. */
void ordo__paramfile_destroy(ordo__paramfile_t **pf);

#endif
