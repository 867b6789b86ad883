/* order_file: reading and writing ordo-order/1 priority files (docs/ordering.md, "ordo-order/1"), part of the
 * order module. Reading validates everything: format, model name, keys, every parameter
 * exactly once, priorities integers >= 0; a rejection names the file, the JSON path and
 * the reason. */
#include "planner/order.h"
#include "common/json_check.h"

#include "common/error.h"

#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#define ORDER_FORMAT "ordo-order/1"

int ordo__order_write(FILE *out, const ordo__model_t *m, const char *policy, const int *priority)
{
    if (!out || !m || !policy || !priority)
        return ordo__error_set(ORDO_ERR_INVAL, "ordo__order_write: bad args");
    /* written by hand so that each entry sits on one line, in listed order */
    fprintf(out, "{\"format\": \"%s\", \"model\": ", ORDER_FORMAT);
    json_t *s = json_string(m->name);
    int rc = s ? json_dumpf(s, out, JSON_ENCODE_ANY) : -1;
    json_decref(s);
    s = json_string(policy);
    fprintf(out, ", \"policy\": ");
    rc |= s ? json_dumpf(s, out, JSON_ENCODE_ANY) : -1;
    json_decref(s);
    fprintf(out, ",\n \"priorities\": [\n");
    for (int p = 0; p < m->n_params && rc == 0; p++) {
        fprintf(out, "  {\"param\": ");
        s = json_string(m->params[p].name);
        rc |= s ? json_dumpf(s, out, JSON_ENCODE_ANY) : -1;
        json_decref(s);
        fprintf(out, ", \"priority\": %d}%s\n", priority[p], p + 1 < m->n_params ? "," : "");
    }
    fprintf(out, " ]}\n");
    if (rc != 0 || ferror(out)) return ordo__error_set(ORDO_ERR_IO, "ordo__order_write: write failed");
    return 0;
}

#define bad(...) ordo__error_set(ORDO_ERR_FORMAT, __VA_ARGS__)

/* parse_root validates a parsed document and fills priority; it consumes root. */
static int parse_root(json_t *root, const char *name, const ordo__model_t *m, int *priority)
{
    int rc;
    int *out = malloc(((size_t)m->n_params + 1) * sizeof *out);
    if (!out) {
        rc = ordo__error_set(ORDO_ERR_NOMEM, "%s: out of memory", name);
        goto fail;
    }
    for (int p = 0; p < m->n_params; p++)
        out[p] = -1;
    static const char *const top[] = {"format", "model", "policy", "priorities", NULL};
    if ((rc = ordo__json_check_head(root, top, ORDER_FORMAT, m->name, name))) goto fail;
    json_t *pol = json_object_get(root, "policy");
    if (pol && !json_is_string(pol)) {
        rc = bad("%s: $.policy: must be a string", name);
        goto fail;
    }
    json_t *arr = json_object_get(root, "priorities");
    if (!json_is_array(arr)) {
        rc = bad("%s: $.priorities: missing or not an array", name);
        goto fail;
    }
    static const char *const entry_keys[] = {"param", "priority", NULL};
    size_t i;
    json_t *e;
    json_array_foreach(arr, i, e)
    {
        char path[64];
        snprintf(path, sizeof path, "$.priorities[%zu]", i);
        if (!json_is_object(e)) {
            rc = bad("%s: %s: must be an object", name, path);
            goto fail;
        }
        if ((rc = ordo__json_only_keys(e, entry_keys, name, path))) goto fail;
        const char *pn = json_string_value(json_object_get(e, "param"));
        if (!pn) {
            rc = bad("%s: %s.param: missing or not a string", name, path);
            goto fail;
        }
        int p = ordo__model_param_index(m, pn);
        if (p < 0) {
            rc = bad("%s: %s.param: '%s' is not a parameter of '%s'", name, path, pn, m->name);
            goto fail;
        }
        if (out[p] >= 0) {
            rc = bad("%s: %s.param: '%s' is listed twice", name, path, pn);
            goto fail;
        }
        json_t *pr = json_object_get(e, "priority");
        if (!json_is_integer(pr) || json_integer_value(pr) < 0 ||
            json_integer_value(pr) > 1000000000) {
            rc = bad("%s: %s.priority: must be an integer in [0, 1e9]", name, path);
            goto fail;
        }
        out[p] = (int)json_integer_value(pr);
    }
    for (int p = 0; p < m->n_params; p++)
        if (out[p] < 0) {
            rc = bad("%s: $.priorities: parameter '%s' is missing", name, m->params[p].name);
            goto fail;
        }
    memcpy(priority, out, (size_t)m->n_params * sizeof *out);
    rc = 0;
fail:
    free(out);
    json_decref(root);
    return rc;
}

int ordo__order_read_string(const char *json, const char *name, const ordo__model_t *m, int *priority)
{
    if (!json || !m || !priority) return ordo__error_set(ORDO_ERR_INVAL, "ordo_order_read: bad args");
    if (!name) name = "<order>";
    json_t *root = NULL;
    int rc = ordo__json_read_string(json, name, JSON_REJECT_DUPLICATES, &root);
    return rc ? rc : parse_root(root, name, m, priority);
}

int ordo__order_read_file(const char *path, const ordo__model_t *m, int *priority)
{
    if (!path || !m || !priority)
        return ordo__error_set(ORDO_ERR_INVAL, "ordo__order_read_file: bad args");
    json_t *root = NULL;
    int rc = ordo__json_read_file(path, JSON_REJECT_DUPLICATES, &root);
    return rc ? rc : parse_root(root, path, m, priority);
}
