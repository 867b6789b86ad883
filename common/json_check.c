/* json_check: reading and checks shared by ordo's JSON file readers. */
#include "common/json_check.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "common/error.h"

int ordo__json_read_string(const char *text, const char *name, size_t flags, json_t **out)
{
    if (!name) name = "(string)";
    if (!text || !out) return ordo__error_set(ORDO_ERR_INVAL, "%s: no JSON text", name);
    json_error_t jerr;
    json_t *root = json_loads(text, flags, &jerr);
    if (!root)
        return ordo__error_set(ORDO_ERR_FORMAT, "%s:%d:%d: %s", name, jerr.line, jerr.column,
                              jerr.text);
    *out = root;
    return 0;
}

int ordo__json_read_file(const char *path, size_t flags, json_t **out)
{
    if (!path || !out) return ordo__error_set(ORDO_ERR_INVAL, "ordo__json_read_file: no path");
    FILE *f = fopen(path, "rb");
    if (!f) return ordo__error_set(ORDO_ERR_NOTFOUND, "%s: cannot open: %s", path, strerror(errno));
    json_error_t jerr;
    json_t *root = json_loadf(f, flags, &jerr);
    fclose(f);
    if (!root)
        return ordo__error_set(ORDO_ERR_FORMAT, "%s:%d:%d: %s", path, jerr.line, jerr.column,
                              jerr.text);
    *out = root;
    return 0;
}

int ordo__json_only_keys(const json_t *obj, const char *const *allowed, const char *file,
                        const char *path)
{
    const char *key;
    json_t *v;
    json_object_foreach((json_t *)obj, key, v)
    {
        int ok = 0;
        for (int i = 0; allowed[i] && !ok; i++)
            ok = strcmp(key, allowed[i]) == 0;
        if (!ok) return ordo__error_set(ORDO_ERR_FORMAT, "%s: %s.%s: unknown key", file, path, key);
    }
    return 0;
}

int ordo__json_check_head(const json_t *root, const char *const *allowed, const char *format,
                         const char *model, const char *file)
{
    if (!json_is_object(root))
        return ordo__error_set(ORDO_ERR_FORMAT, "%s: $: must be an object", file);
    int rc = ordo__json_only_keys(root, allowed, file, "$");
    if (rc) return rc;
    const char *fmt = json_string_value(json_object_get(root, "format"));
    if (!fmt || strcmp(fmt, format) != 0)
        return ordo__error_set(ORDO_ERR_FORMAT, "%s: $.format: must be \"%s\"", file, format);
    const char *name = json_string_value(json_object_get(root, "model"));
    if (!name) return ordo__error_set(ORDO_ERR_FORMAT, "%s: $.model: missing or not a string", file);
    if (strcmp(name, model) != 0)
        return ordo__error_set(ORDO_ERR_FORMAT, "%s: $.model: '%s' does not match the model '%s'", file,
                              name, model);
    return 0;
}
