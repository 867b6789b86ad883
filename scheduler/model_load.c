/* model_load: reads ordo-model/1 JSON (DESIGN.md §4) into a model, validating every field
 * and naming the file, the JSON path and the reason of any rejection. */
#include "scheduler/model.h"

#include "common/error.h"
#include "scheduler/model_internal.h"

int ordo_model_load_string(const char *json, const char *name, ordo_model_t **out)
{
    (void)json;
    (void)name;
    (void)out;
    return ordo_error_set(ORDO_ENOTSUP, "model loader not written yet");
}

int ordo_model_load_file(const char *path, ordo_model_t **out)
{
    (void)out;
    return ordo_error_set(ORDO_ENOTSUP, "%s: model loader not written yet", path);
}
