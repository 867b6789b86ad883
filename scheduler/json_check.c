/* json_check: checks shared by ordo's JSON file readers. */
#include "scheduler/json_check.h"
#include "common/error.h"

#include <string.h>

int ordo_json_only_keys(const json_t *obj, const char *const *allowed, const char *file,
                        const char *path)
{
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)obj, key, v)
    {
        int ok = 0;
        for (int i = 0; allowed[i] && !ok; i++)
            ok = strcmp(key, allowed[i]) == 0;
        if (!ok) return ordo_error_set(ORDO_EFORMAT, "%s: %s.%s: unknown key", file, path, key);
    }
    return 0;
}
