/* json_check: checks shared by ordo's JSON file readers (ordo-model/1, ordo-order/1,
 * ordo-oracle/1), so that they reject the same mistakes with the same words. */
#ifndef ORDO_JSON_CHECK_H
#define ORDO_JSON_CHECK_H

#include <jansson.h>

/* ordo_json_only_keys fails with ORDO_EFORMAT, "FILE: PATH.KEY: unknown key", when object
 * obj (at JSON path path of file) has a key outside the NULL-terminated list allowed. */
int ordo_json_only_keys(const json_t *obj, const char *const *allowed, const char *file,
                        const char *path);

/* ordo_json_check_head checks what every ordo file for a model starts with: root is an
 * object with no key outside allowed, "format" is format, and "model" names model. Fails
 * with ORDO_EFORMAT and "FILE: $.KEY: reason". */
int ordo_json_check_head(const json_t *root, const char *const *allowed, const char *format,
                         const char *model, const char *file);

#endif
