/* model_load: reads ordo-model/1 JSON (docs/models.md) into a model, validating every field
 * and naming the file, the JSON path and the reason of any rejection. */
#include "core/model.h"
#include "common/json_check.h"

#include "common/error.h"
#include "core/model_internal.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FORMAT_NAME   "ordo-model/1"
#define MAX_ENTRIES   (1 << 24)  /* params or ops in one file */
#define MAX_NAME      255        /* bytes in a parameter or op name */
#define MAX_FILE_SIZE (1L << 30) /* bytes of one model file */

/* One load: the file name for messages, the name→index maps and the model being built. */
typedef struct {
    const char *file;
    json_t *param_map; /* name → index */
    json_t *op_map;    /* name → index of ops seen so far */
    int *seen;         /* stamps for duplicate detection inside one op's lists */
    ordo__model_t *m;
} loader_t;

#define BAD(ld, ...) bad_at((ld)->file, __VA_ARGS__)

static int bad_at(const char *file, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int bad_at(const char *file, const char *fmt, ...)
{
    char why[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    return ordo__error_set(ORDO_ERR_FORMAT, "%s: %s", file, why);
}

/* get_name reads obj.key (at path) as a non-empty string of at most MAX_NAME bytes. */
static int get_name(loader_t *ld, json_t *obj, const char *path, const char *key, const char **out)
{
    json_t *v = json_object_get(obj, key);
    if (!v) return BAD(ld, "%s: missing '%s'", path, key);
    if (!json_is_string(v)) return BAD(ld, "%s.%s: must be a string", path, key);
    size_t n = json_string_length(v);
    if (n == 0) return BAD(ld, "%s.%s: must not be empty", path, key);
    if (n > MAX_NAME) return BAD(ld, "%s.%s: longer than %d bytes", path, key, MAX_NAME);
    *out = json_string_value(v);
    return 0;
}

/* get_array reads obj.key (at path) as an array of at most MAX_ENTRIES entries. */
static int get_array(loader_t *ld, json_t *obj, const char *path, const char *key, json_t **out)
{
    json_t *v = json_object_get(obj, key);
    if (!v) return BAD(ld, "%s: missing '%s'", path, key);
    if (!json_is_array(v)) return BAD(ld, "%s.%s: must be an array", path, key);
    if (json_array_size(v) > MAX_ENTRIES)
        return BAD(ld, "%s.%s: more than %d entries", path, key, MAX_ENTRIES);
    *out = v;
    return 0;
}

/* get_time reads obj.key (at path) as a number >= 0 (microseconds). */
static int get_time(loader_t *ld, json_t *obj, const char *path, const char *key, double *out)
{
    json_t *v = json_object_get(obj, key);
    if (!v) return BAD(ld, "%s: missing '%s'", path, key);
    if (!json_is_number(v)) return BAD(ld, "%s.%s: must be a number", path, key);
    double t = json_number_value(v);
    if (!(t >= 0)) return BAD(ld, "%s.%s: %g is negative", path, key, t);
    *out = t;
    return 0;
}

static int load_param(loader_t *ld, json_t *jp, int i)
{
    static const char *const keys[] = {"name", "shape", NULL};
    char path[48];
    snprintf(path, sizeof path, "$.params[%d]", i);
    if (!json_is_object(jp)) return BAD(ld, "%s: must be an object", path);
    int rc;
    const char *name;
    json_t *jshape;
    if ((rc = ordo__json_only_keys(jp, keys, ld->file, path)) ||
        (rc = get_name(ld, jp, path, "name", &name)) ||
        (rc = get_array(ld, jp, path, "shape", &jshape)))
        return rc;
    json_t *prev = json_object_get(ld->param_map, name);
    if (prev)
        return BAD(ld, "%s.name: duplicate parameter name '%s' (first at $.params[%d])", path, name,
                   (int)json_integer_value(prev));
    size_t ndim = json_array_size(jshape);
    if (ndim == 0) return BAD(ld, "%s.shape: empty shape", path);
    if (ndim > ORDO_MODEL_MAX_DIMS)
        return BAD(ld, "%s.shape: %zu dims, at most %d", path, ndim, ORDO_MODEL_MAX_DIMS);
    int64_t shape[ORDO_MODEL_MAX_DIMS], numel = 1;
    for (size_t d = 0; d < ndim; d++) {
        json_t *v = json_array_get(jshape, d);
        if (!json_is_integer(v) || json_integer_value(v) <= 0)
            return BAD(ld, "%s.shape[%zu]: must be a positive integer", path, d);
        shape[d] = json_integer_value(v);
        if (numel > INT64_MAX / 16 / shape[d]) /* 16 bounds every dtype size */
            return BAD(ld, "%s.shape: too many elements", path);
        numel *= shape[d];
    }
    rc = ordo__model_add_param_checked(ld->m, name, (int)ndim, shape);
    if (rc == ORDO_ERR_RANGE) return BAD(ld, "%s.shape: too many elements", path);
    if (rc < 0) return ordo__error_set(rc, "%s: %s: out of memory", ld->file, path);
    if (json_object_set_new(ld->param_map, name, json_integer(rc)))
        return ordo__error_set(ORDO_ERR_NOMEM, "%s: out of memory", ld->file);
    return 0;
}

/* resolve_input finds input j of op i; names not yet seen are unknown or later ops. */
static int resolve_input(loader_t *ld, json_t *ops, int i, int j, json_t *v, int *out)
{
    char path[64];
    snprintf(path, sizeof path, "$.ops[%d].inputs[%d]", i, j);
    if (!json_is_string(v)) return BAD(ld, "%s: must be a string", path);
    const char *name = json_string_value(v);
    json_t *idx = json_object_get(ld->op_map, name);
    if (idx) {
        *out = (int)json_integer_value(idx);
        return 0;
    }
    for (size_t k = (size_t)i; k < json_array_size(ops); k++) {
        json_t *later = json_object_get(json_array_get(ops, k), "name");
        if (json_is_string(later) && strcmp(json_string_value(later), name) == 0)
            return BAD(ld, "%s: '%s' is not an earlier op (it is $.ops[%zu])", path, name, k);
    }
    return BAD(ld, "%s: '%s' is not an earlier op (no op has that name)", path, name);
}

static int load_op(loader_t *ld, json_t *ops, int i)
{
    static const char *const keys[] = {"name", "inputs", "params", "fwd_us", "bwd_us", NULL};
    json_t *jo = json_array_get(ops, (size_t)i);
    char path[48];
    snprintf(path, sizeof path, "$.ops[%d]", i);
    if (!json_is_object(jo)) return BAD(ld, "%s: must be an object", path);
    int rc;
    const char *name = NULL;
    json_t *jin = NULL, *jpar = NULL;
    double fwd = 0, bwd = 0;
    if ((rc = ordo__json_only_keys(jo, keys, ld->file, path)) ||
        (rc = get_name(ld, jo, path, "name", &name)) ||
        (rc = get_array(ld, jo, path, "inputs", &jin)) ||
        (rc = get_array(ld, jo, path, "params", &jpar)) ||
        (rc = get_time(ld, jo, path, "fwd_us", &fwd)) ||
        (rc = get_time(ld, jo, path, "bwd_us", &bwd)))
        return rc;
    json_t *prev = json_object_get(ld->op_map, name);
    if (prev)
        return BAD(ld, "%s.name: duplicate op name '%s' (first at $.ops[%d])", path, name,
                   (int)json_integer_value(prev));
    int n_in = (int)json_array_size(jin), n_par = (int)json_array_size(jpar);
    int *in = calloc((size_t)n_in + 1, sizeof *in);
    int *par = calloc((size_t)n_par + 1, sizeof *par);
    rc = ordo__error_set(ORDO_ERR_NOMEM, "%s: %s: out of memory", ld->file, path);
    if (!in || !par) goto fail;
    /* Stamps: seen[x] == stamp means x was already listed by this op. Inputs use
     * 2i+1, parameters 2i+2 over the same array sized for both kinds. */
    for (int j = 0; j < n_in; j++) {
        if ((rc = resolve_input(ld, ops, i, j, json_array_get(jin, (size_t)j), &in[j]))) goto fail;
        if (ld->seen[in[j]] == 2 * i + 1) {
            rc = BAD(ld, "%s.inputs[%d]: '%s' is listed twice", path, j, ld->m->ops[in[j]].name);
            goto fail;
        }
        ld->seen[in[j]] = 2 * i + 1;
    }
    for (int j = 0; j < n_par; j++) {
        json_t *v = json_array_get(jpar, (size_t)j);
        if (!json_is_string(v)) {
            rc = BAD(ld, "%s.params[%d]: must be a string", path, j);
            goto fail;
        }
        json_t *idx = json_object_get(ld->param_map, json_string_value(v));
        if (!idx) {
            rc = BAD(ld, "%s.params[%d]: unknown parameter '%s'", path, j, json_string_value(v));
            goto fail;
        }
        par[j] = (int)json_integer_value(idx);
        if (ld->seen[par[j]] == 2 * i + 2) {
            rc = BAD(ld, "%s.params[%d]: '%s' is listed twice", path, j, json_string_value(v));
            goto fail;
        }
        ld->seen[par[j]] = 2 * i + 2;
    }
    rc = ordo__model_add_op_checked(ld->m, name, n_in, in, n_par, par, fwd, bwd);
    if (rc < 0) {
        rc = ordo__error_set(rc, "%s: %s: out of memory", ld->file, path);
        goto fail;
    }
    if (json_object_set_new(ld->op_map, name, json_integer(rc))) {
        rc = ordo__error_set(ORDO_ERR_NOMEM, "%s: out of memory", ld->file);
        goto fail;
    }
    rc = 0;
fail:
    free(in);
    free(par);
    return rc;
}

/* load_root validates the top-level object and builds ld->m from it. */
static int load_root(loader_t *ld, json_t *root)
{
    static const char *const keys[] = {"format", "name", "batch", "dtype", "params", "ops", NULL};
    if (!json_is_object(root)) return BAD(ld, "$: must be an object");
    int rc;
    json_t *fmt = json_object_get(root, "format");
    if (!fmt) return BAD(ld, "$: missing 'format'");
    if (!json_is_string(fmt) || strcmp(json_string_value(fmt), FORMAT_NAME) != 0)
        return BAD(ld, "$.format: unknown format %s%s%s (expected '" FORMAT_NAME "')",
                   json_is_string(fmt) ? "'" : "",
                   json_is_string(fmt) ? json_string_value(fmt) : "(not a string)",
                   json_is_string(fmt) ? "'" : "");
    if ((rc = ordo__json_only_keys(root, keys, ld->file, "$"))) return rc;
    const char *name, *dtype = "float32";
    json_t *jb = json_object_get(root, "batch"), *jd = json_object_get(root, "dtype");
    json_t *params = NULL, *ops = NULL;
    if ((rc = get_name(ld, root, "$", "name", &name))) return rc;
    if (!jb) return BAD(ld, "$: missing 'batch'");
    if (!json_is_integer(jb) || json_integer_value(jb) <= 0 || json_integer_value(jb) > INT_MAX)
        return BAD(ld, "$.batch: must be a positive integer");
    if (jd) {
        if (!json_is_string(jd)) return BAD(ld, "$.dtype: must be a string");
        dtype = json_string_value(jd);
        if (ordo__model_dtype_size(dtype) == 0)
            return BAD(ld, "$.dtype: unknown dtype '%s' (float32, float16, float64, bfloat16)",
                       dtype);
    }
    if ((rc = get_array(ld, root, "$", "params", &params)) ||
        (rc = get_array(ld, root, "$", "ops", &ops)))
        return rc;
    if (json_array_size(ops) == 0) return BAD(ld, "$.ops: no ops");

    ld->m = ordo__model_new(name, (int)json_integer_value(jb), dtype);
    size_t n_seen = json_array_size(params) + json_array_size(ops);
    ld->seen = calloc(n_seen, sizeof *ld->seen);
    ld->param_map = json_object();
    ld->op_map = json_object();
    if (!ld->m || !ld->seen || !ld->param_map || !ld->op_map)
        return ordo__error_set(ORDO_ERR_NOMEM, "%s: out of memory", ld->file);
    for (size_t i = 0; i < json_array_size(params); i++)
        if ((rc = load_param(ld, json_array_get(params, i), (int)i))) return rc;
    for (size_t i = 0; i < json_array_size(ops); i++)
        if ((rc = load_op(ld, ops, (int)i))) return rc;
    int unused;
    if (ordo__model_first_ops(ld->m, &unused))
        return BAD(ld, "$.params[%d]: parameter '%s' is read by no op", unused,
                   ld->m->params[unused].name);
    return 0;
}

int ordo__model_load_string(const char *json, const char *name, ordo__model_t **out)
{
    if (!name) name = "(string)";
    if (!json || !out) return ordo__error_set(ORDO_ERR_INVAL, "%s: no JSON text", name);
    return ordo__model_load_buffer(json, strlen(json), name, out);
}

int ordo__model_load_buffer(const char *data, size_t len, const char *name, ordo__model_t **out)
{
    if (!name) name = "(buffer)";
    if (!data || !out) return ordo__error_set(ORDO_ERR_INVAL, "%s: no JSON text", name);
    json_error_t jerr;
    json_t *root = json_loadb(data, len, JSON_REJECT_DUPLICATES, &jerr);
    if (!root)
        return ordo__error_set(ORDO_ERR_FORMAT, "%s:%d:%d: invalid JSON: %s", name, jerr.line,
                              jerr.column, jerr.text);
    loader_t ld = {.file = name};
    int rc = load_root(&ld, root);
    json_decref(ld.param_map);
    json_decref(ld.op_map);
    free(ld.seen);
    json_decref(root);
    if (rc) {
        ordo__model_destroy(&ld.m);
        return rc;
    }
    *out = ld.m;
    return 0;
}

int ordo__model_load_file(const char *path, ordo__model_t **out)
{
    if (!path || !out) return ordo__error_set(ORDO_ERR_INVAL, "ordo__model_load_file: no path");
    FILE *f = fopen(path, "rb");
    if (!f) {
        int e = errno;
        return ordo__error_set(e == ENOENT ? ORDO_ERR_NOTFOUND : ORDO_ERR_IO, "%s: %s", path, strerror(e));
    }
    int rc = 0;
    size_t len = 0, cap = 1 << 16;
    char *buf = malloc(cap);
    while (buf) {
        len += fread(buf + len, 1, cap - len, f);
        if (len < cap) break;
        if (cap >= (size_t)MAX_FILE_SIZE) {
            rc = ordo__error_set(ORDO_ERR_FORMAT, "%s: larger than %ld bytes", path, MAX_FILE_SIZE);
            goto done;
        }
        char *p = realloc(buf, cap * 2);
        if (!p) break;
        buf = p;
        cap *= 2;
    }
    if (!buf || len == cap) {
        rc = ordo__error_set(ORDO_ERR_NOMEM, "%s: out of memory", path);
        goto done;
    }
    if (ferror(f)) {
        rc = ordo__error_set(ORDO_ERR_IO, "%s: %s", path, strerror(errno));
        goto done;
    }
    rc = ordo__model_load_buffer(buf, len, path, out);
done:
    free(buf);
    fclose(f);
    return rc;
}
