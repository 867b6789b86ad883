/* json_check: reading and checks shared by ordo's JSON file readers (ordo-model/1,
 * ordo-order/1, ordo-oracle/1, ordo-merge/1), so that they reject the same mistakes with the
 * same words. */
#ifndef ORDO_JSON_CHECK_H
#define ORDO_JSON_CHECK_H

#include <jansson.h>

/* ordo__json_read_string parses text (named name in errors) with jansson's flags (e.g.
 * JSON_REJECT_DUPLICATES) into *out, which the caller releases with json_decref. Fails with
 * ORDO_ERR_FORMAT and "NAME:LINE:COLUMN: reason". */
int ordo__json_read_string(const char *text, const char *name, size_t flags, json_t **out);

/* ordo__json_read_file is ordo__json_read_string over the file at path; a file that cannot be
 * opened fails with ORDO_ERR_NOTFOUND and "PATH: cannot open: reason". */
int ordo__json_read_file(const char *path, size_t flags, json_t **out);

/* ordo__json_only_keys fails with ORDO_ERR_FORMAT, "FILE: PATH.KEY: unknown key", when object
 * obj (at JSON path path of file) has a key outside the NULL-terminated list allowed. */
int ordo__json_only_keys(const json_t *obj, const char *const *allowed, const char *file,
                        const char *path);

/* ordo__json_check_head checks what every ordo file for a model starts with: root is an
 * object with no key outside allowed, "format" is format, and "model" names model. Fails
 * with ORDO_ERR_FORMAT and "FILE: $.KEY: reason". */
int ordo__json_check_head(const json_t *root, const char *const *allowed, const char *format,
                         const char *model, const char *file);

#endif
