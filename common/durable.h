/* durable: files a crash or a full disk cannot leave half written (checkpoints). A file is
 * written as a temporary file in the same folder (NAME.tmp), fsynced, renamed over NAME and
 * the folder fsynced; until the rename the old NAME is untouched, whatever fails. The file
 * may end in a 16-byte checksum trailer:
 *   bytes 0-7  magic "ORDOSUM1"
 *   uint32     CRC-32 (zlib's, little-endian) of every byte of the file before the trailer
 *   uint32     0 (reserved)
 * Readers of a format that may carry the trailer take it off with ordo__durable_check, which
 * refuses a file whose trailer does not match its bytes, naming the file and the check. */
#ifndef ORDO_DURABLE_H
#define ORDO_DURABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#define ORDO_DURABLE_MAGIC   "ORDOSUM1"
#define ORDO_DURABLE_TRAILER 16

typedef struct ordo__durable ordo__durable_t;

/* ordo__durable_open starts writing path: *out holds the temporary file path.tmp, into which
 * the caller writes through ordo__durable_file. Fails with ORDO_ERR_IO naming the temporary
 * file and errno's text. */
int ordo__durable_open(const char *path, ordo__durable_t **out);

/* ordo__durable_file is the stdio stream the contents go to (owned by d). */
FILE *ordo__durable_file(ordo__durable_t *d);

/* ordo__durable_commit ends the file: with `sum`, appends the checksum trailer; then flushes,
 * fsyncs, closes, renames the temporary file over the path (when `keep` is not NULL, the old
 * file is first renamed to keep: the previous checkpoint) and fsyncs the folder. Any failure
 * (a write the stream reported earlier too, a full disk) removes the temporary file, leaves
 * the old file as it was, and returns ORDO_ERR_IO naming the file and errno's text. Frees d
 * and sets *dp to NULL either way. */
int ordo__durable_commit(ordo__durable_t **dp, bool sum, const char *keep);

/* ordo__durable_abort removes the temporary file and frees *dp; NULL-safe. */
void ordo__durable_abort(ordo__durable_t **dp);

/* ordo__durable_trailer says whether data[0..*len) ends in a checksum trailer (by its magic)
 * and, when it does, shortens *len to the bytes before it, without checking the CRC: a reader
 * checks the format's fields first (their faults say more) and the CRC last. */
bool ordo__durable_trailer(const unsigned char *data, size_t *len);

/* ordo__durable_verify checks the trailer at data[body..body+16) against data[0..body):
 * ORDO_ERR_FORMAT naming path, the offset, "checksum mismatch" and both CRCs. */
int ordo__durable_verify(const char *path, const unsigned char *data, size_t body);

/* ordo__durable_check looks for the checksum trailer at the end of data[0..*len): none (the
 * documented formats without it are accepted), 0 with *len unchanged and *had = false; a
 * matching one, 0 with *len shortened by the trailer and *had = true; a trailer whose CRC-32
 * differs from the bytes before it, ORDO_ERR_FORMAT naming path, the check and both values. */
int ordo__durable_check(const char *path, const unsigned char *data, size_t *len, bool *had);

/* ordo__durable_read_file reads path whole into *data (malloc'd; the caller frees it): 0, or
 * ORDO_ERR_NOTFOUND, ORDO_ERR_IO or ORDO_ERR_NOMEM naming path. */
int ordo__durable_read_file(const char *path, unsigned char **data, size_t *len);

/* ordo__durable_check_file reads path whole and checks it as ordo__durable_check does;
 * *len gets the bytes before the trailer (the whole file without one). */
int ordo__durable_check_file(const char *path, size_t *len);

#endif
