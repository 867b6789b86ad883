/* json_check: checks shared by ordo's JSON file readers (ordo-model/1, ordo-order/1,
 * ordo-oracle/1), so that they reject the same mistakes with the same words. */
#ifndef ORDO_JSON_CHECK_H
#define ORDO_JSON_CHECK_H

#include <jansson.h>

/* ordo_json_only_keys fails with ORDO_EFORMAT, "FILE: PATH.KEY: unknown key", when object
 * obj (at JSON path path of file) has a key outside the NULL-terminated list allowed. */
int ordo_json_only_keys(const json_t *obj, const char *const *allowed, const char *file,
                        const char *path);

#endif
