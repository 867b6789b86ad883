/* plan: the scheduler's plan JSON read once into ordo__plan_t, every member checked. */
#include "core/plan.h"
#include "common/error.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

/* ---- members ------------------------------------------------------------------------- */

/* member name of o, or NULL when absent or null (the scheduler writes null for "none") */
static json_t *member(json_t *o, const char *name)
{
    json_t *v = json_object_get(o, name);
    return json_is_null(v) ? NULL : v;
}

/* a string member copied into buf (size bytes); NULL when absent is an error too */
static int get_str(json_t *o, const char *path, const char *name, char *buf, size_t size)
{
    const char *v = json_string_value(json_object_get(o, name));
    if (!v) return ordo__error_set(ORDO_ERR_PROTO, "plan: %s.%s: not a string", path, name);
    if (strlen(v) >= size)
        return ordo__error_set(ORDO_ERR_PROTO, "plan: %s.%s: longer than %zu bytes", path, name,
                              size - 1);
    memcpy(buf, v, strlen(v) + 1);
    return 0;
}

/* an integer member in [lo, hi] */
static int get_int(json_t *o, const char *path, const char *name, json_int_t lo, json_int_t hi,
                   json_int_t *out)
{
    json_t *v = json_object_get(o, name);
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
        return ordo__error_set(ORDO_ERR_PROTO, "plan: %s.%s: not an integer in [%lld, %lld]", path,
                              name, (long long)lo, (long long)hi);
    *out = json_integer_value(v);
    return 0;
}

/* an array member of exactly n entries, or absent (*out NULL) */
static int get_array(json_t *o, const char *path, const char *name, int n, json_t **out)
{
    json_t *v = member(o, name);
    *out = NULL;
    if (!v) return 0;
    if (!json_is_array(v) || (int)json_array_size(v) != n)
        return ordo__error_set(ORDO_ERR_PROTO, "plan: %s.%s: not an array of %d entries", path, name,
                              n);
    *out = v;
    return 0;
}

static int take_priorities(ordo__plan_t *p, json_t *root)
{
    json_t *a;
    int rc = get_array(root, "$", "priorities", p->n_keys, &a);
    if (rc || !a) return rc;
    if (!(p->priorities = malloc(sizeof *p->priorities * ((size_t)p->n_keys + 1))))
        return ORDO_ERR_NOMEM;
    for (int i = 0; i < p->n_keys; i++) {
        json_t *v = json_array_get(a, (size_t)i);
        if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > INT32_MAX)
            return ordo__error_set(ORDO_ERR_PROTO, "plan: $.priorities[%d]: not an integer >= 0", i);
        p->priorities[i] = (int)json_integer_value(v);
    }
    return 0;
}

/* n_keys strings of array a into a new *out */
static int take_strings(json_t *a, const char *path, int n, char ***out)
{
    char **s = calloc((size_t)n + 1, sizeof *s);
    if (!s) return ORDO_ERR_NOMEM;
    *out = s;
    for (int i = 0; i < n; i++) {
        const char *v = json_string_value(json_array_get(a, (size_t)i));
        if (!v) return ordo__error_set(ORDO_ERR_PROTO, "plan: %s[%d]: not a string", path, i);
        if (!(s[i] = strdup(v))) return ORDO_ERR_NOMEM;
    }
    return 0;
}

static int take_params(ordo__plan_t *p, json_t *root)
{
    json_t *a;
    int rc = get_array(root, "$", "params", p->n_keys, &a);
    if (rc || !a) return rc;
    return take_strings(a, "$.params", p->n_keys, &p->params);
}

/* "merge": {"groups": [[key, ...], ...], "max_message_bytes": N, ...}: every key once */
static int take_merge(ordo__plan_t *p, json_t *root)
{
    json_t *merge = member(root, "merge");
    if (!merge) return 0;
    json_t *groups = json_object_get(merge, "groups");
    if (!json_is_array(groups) || json_array_size(groups) == 0)
        return ordo__error_set(ORDO_ERR_PROTO, "plan: $.merge.groups: not a non-empty array");
    int ng = (int)json_array_size(groups), n = 0, n_keys = p->n_keys;
    ordo__plan_merge_t *m = &p->merge;
    p->has_merge = true;
    m->group_start = malloc(sizeof *m->group_start * ((size_t)ng + 1));
    m->order = malloc(sizeof *m->order * ((size_t)n_keys + 1));
    char *seen = calloc((size_t)n_keys + 1, 1);
    int rc = !m->group_start || !m->order || !seen ? ORDO_ERR_NOMEM : 0;
    for (int g = 0; !rc && g < ng; g++) {
        json_t *grp = json_array_get(groups, (size_t)g);
        m->group_start[g] = n;
        if (!json_is_array(grp) || json_array_size(grp) == 0) {
            rc = ordo__error_set(ORDO_ERR_PROTO, "plan: $.merge.groups[%d]: not a non-empty array",
                                g);
            break;
        }
        for (size_t i = 0; !rc && i < json_array_size(grp); i++) {
            json_t *k = json_array_get(grp, i);
            json_int_t key = json_is_integer(k) ? json_integer_value(k) : -1;
            if (key < 0 || key >= n_keys)
                rc = ordo__error_set(ORDO_ERR_PROTO,
                                    "plan: $.merge.groups[%d][%zu]: not a key in [0, %d)", g, i,
                                    n_keys);
            else if (seen[key])
                rc = ordo__error_set(ORDO_ERR_PROTO, "plan: $.merge.groups[%d][%zu]: key %d again",
                                    g, i, (int)key);
            else
                seen[key] = 1, m->order[n++] = (int)key;
        }
    }
    free(seen);
    if (rc) return rc;
    if (n != n_keys)
        return ordo__error_set(ORDO_ERR_PROTO, "plan: $.merge.groups: %d of %d keys listed", n,
                              n_keys);
    json_t *mx = json_object_get(merge, "max_message_bytes");
    if (mx && (!json_is_integer(mx) || json_integer_value(mx) < 0))
        return ordo__error_set(ORDO_ERR_PROTO,
                              "plan: $.merge.max_message_bytes: not an integer >= 0");
    m->group_start[ng] = n;
    m->n_groups = ng;
    m->max_message_bytes = mx ? (int64_t)json_integer_value(mx) : 0;
    return 0;
}

/* "merge_calibrate": {"reps": N, "max_bytes": N} */
static int take_calibrate(ordo__plan_t *p, json_t *root)
{
    json_t *c = member(root, "merge_calibrate");
    if (!c) return 0;
    json_int_t reps, max;
    int rc = get_int(c, "$.merge_calibrate", "reps", 1, INT32_MAX, &reps);
    if (!rc) rc = get_int(c, "$.merge_calibrate", "max_bytes", 1, INT64_MAX, &max);
    if (rc) return rc;
    p->has_calibrate = true;
    p->calibrate_reps = (int)reps;
    p->calibrate_max_bytes = (int64_t)max;
    return 0;
}

/* "intra": {"backend": "shm" | "nccl" | "auto", "local_size": L, "run": id, "overlap": b} */
static int take_intra(ordo__plan_t *p, json_t *root)
{
    json_t *o = member(root, "intra");
    if (!o) return 0;
    if (!json_is_object(o)) return ordo__error_set(ORDO_ERR_PROTO, "plan: $.intra: not an object");
    ordo__plan_intra_t *in = &p->intra;
    json_int_t L;
    int rc = get_int(o, "$.intra", "local_size", 1, INT32_MAX, &L);
    if (!rc) rc = get_str(o, "$.intra", "backend", in->backend, sizeof in->backend);
    if (!rc) rc = get_str(o, "$.intra", "run", in->run, sizeof in->run);
    json_t *ov = json_object_get(o, "overlap");
    if (!rc && ov && !json_is_boolean(ov))
        rc = ordo__error_set(ORDO_ERR_PROTO, "plan: $.intra.overlap: not true or false");
    if (rc) return rc;
    in->local_size = (int)L;
    in->overlap = !json_is_false(ov); /* absent (an older scheduler): overlapped */
    p->has_intra = true;
    return 0;
}

static int take_sparse(ordo__plan_t *p, json_t *root, int n_servers)
{
    json_t *sp = member(root, "sparse");
    if (!sp) return 0;
    int rc = ordo__sparse_wire_plan_of(sp, n_servers, &p->sparse);
    if (rc == ORDO_ERR_NOTFOUND) /* present, not an object */
        return ordo__error_set(ORDO_ERR_PROTO, "plan: $.sparse: not an object");
    p->has_sparse = rc == 0;
    return rc;
}

/* "step": {"credit_bytes": N, ...}: only the credit is the workers' */
static int take_step(ordo__plan_t *p, json_t *root)
{
    json_t *v = member(member(root, "step"), "credit_bytes");
    p->credit_bytes = -1;
    if (!v) return 0;
    if (!json_is_integer(v) || json_integer_value(v) < 0)
        return ordo__error_set(ORDO_ERR_PROTO, "plan: $.step.credit_bytes: not an integer >= 0");
    p->credit_bytes = (int64_t)json_integer_value(v);
    return 0;
}

/* "compression": {"keys": [spec, ...], ...} (scheduler/runplan_compress.h) */
static int take_compression(ordo__plan_t *p, json_t *root)
{
    json_t *c = member(root, "compression");
    if (!c) return 0;
    json_t *keys;
    int rc = get_array(c, "$.compression", "keys", p->n_keys, &keys);
    if (rc) return rc;
    if (!keys) return ordo__error_set(ORDO_ERR_PROTO, "plan: $.compression.keys: missing");
    return take_strings(keys, "$.compression.keys", p->n_keys, &p->compression);
}

/* "updates": per key null (the conf's [optimizer]), {"kind": "sgd", lr, momentum,
 * weight_decay} or {"kind": "average"} */
static int take_updates(ordo__plan_t *p, json_t *root)
{
    json_t *a;
    int rc = get_array(root, "$", "updates", p->n_keys, &a);
    if (rc || !a) return rc;
    if (!(p->updates = calloc((size_t)p->n_keys + 1, sizeof *p->updates))) return ORDO_ERR_NOMEM;
    for (int key = 0; key < p->n_keys; key++) {
        json_t *u = json_array_get(a, (size_t)key);
        ordo__plan_update_t *up = &p->updates[key];
        if (json_is_null(u)) continue;
        const char *kind = json_string_value(json_object_get(u, "kind"));
        if (kind && !strcmp(kind, "average")) {
            up->kind = ORDO__PLAN_UPDATE_AVERAGE;
        } else if (kind && !strcmp(kind, "sgd")) {
            up->kind = ORDO__PLAN_UPDATE_SGD;
            up->lr = (float)json_number_value(json_object_get(u, "lr"));
            up->momentum = (float)json_number_value(json_object_get(u, "momentum"));
            up->weight_decay = (float)json_number_value(json_object_get(u, "weight_decay"));
        } else {
            return ordo__error_set(ORDO_ERR_PROTO,
                                  "plan: $.updates[%d].kind: not \"sgd\" or "
                                  "\"average\"",
                                  key);
        }
    }
    return 0;
}

/* ---- the plan ------------------------------------------------------------------------ */

int ordo__plan_parse(const char *text, size_t len, int n_keys, int n_servers, ordo__plan_t **out)
{
    if (n_keys < 0) return ordo__error_set(ORDO_ERR_INVAL, "plan: %d keys", n_keys);
    ordo__plan_t *p = calloc(1, sizeof *p);
    if (!p) return ORDO_ERR_NOMEM;
    p->n_keys = n_keys;
    p->credit_bytes = -1;
    json_t *root = NULL;
    int rc = 0;
    if (text && len) {
        json_error_t err;
        root = json_loadb(text, len, 0, &err);
        if (!json_is_object(root))
            rc = root ? ordo__error_set(ORDO_ERR_PROTO, "plan: not a JSON object")
                      : ordo__error_set(ORDO_ERR_PROTO, "plan: line %d: %s", err.line, err.text);
    }
    if (!rc && root) {
        if (!rc) rc = take_priorities(p, root);
        if (!rc) rc = take_params(p, root);
        if (!rc) rc = take_merge(p, root);
        if (!rc) rc = take_calibrate(p, root);
        if (!rc) rc = take_intra(p, root);
        if (!rc) rc = take_sparse(p, root, n_servers);
        if (!rc) rc = take_step(p, root);
        if (!rc) rc = take_compression(p, root);
        if (!rc) rc = take_updates(p, root);
    }
    json_decref(root);
    if (rc) {
        ordo__plan_destroy(&p);
        return rc;
    }
    *out = p;
    return 0;
}

static void merge_free(ordo__plan_merge_t *m)
{
    free(m->group_start);
    free(m->order);
    memset(m, 0, sizeof *m);
}

void ordo__plan_take_merge(ordo__plan_t *dst, ordo__plan_t *src)
{
    merge_free(&dst->merge);
    dst->merge = src->merge;
    dst->has_merge = src->has_merge;
    dst->has_calibrate = false;
    memset(&src->merge, 0, sizeof src->merge);
    src->has_merge = false;
}

static void strings_free(char **s, int n)
{
    for (int i = 0; s && i < n; i++)
        free(s[i]);
    free(s);
}

void ordo__plan_destroy(ordo__plan_t **pp)
{
    ordo__plan_t *p = pp ? *pp : NULL;
    if (!p) return;
    free(p->priorities);
    strings_free(p->params, p->n_keys);
    merge_free(&p->merge);
    ordo__sparse_wire_plan_fini(&p->sparse);
    strings_free(p->compression, p->n_keys);
    free(p->updates);
    free(p);
    *pp = NULL;
}
