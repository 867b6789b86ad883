/* oracle: per-op and per-transfer times for the ordering planners and the simulator, from
 * the model profile and the link, optionally replaced by measured ordo-oracle/1 times (the
 * minimum over the measured iterations). Reading validates every field and names the file,
 * the JSON path and the reason of a rejection. */
#include "planner/oracle.h"
#include "common/json_check.h"

#include "common/error.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define ORACLE_FORMAT "ordo-oracle/1"

struct ordo__oracle {
    char *model;
    int n_ops;
    int n_params;
    char **op_names;
    char **param_names;
    double *fwd_us; /* NAN = not measured */
    double *bwd_us;
    double *recv_us;
    double *send_us;
    long iterations; /* most observations of any one op */
    long *op_samples;
};

double ordo__oracle_transfer_us(long long bytes, double bandwidth_bps, double latency_us)
{
    double wire = bandwidth_bps > 0 ? (double)bytes * 8.0 / bandwidth_bps * 1e6 : 0.0;
    return latency_us + wire;
}

/* ---- times ------------------------------------------------------------------------ */

void ordo__oracle_times_destroy(ordo__oracle_times_t **pt)
{
    if (!pt || !*pt) return;
    ordo__oracle_times_t *t = *pt;
    free(t->recv_us);
    free(t->send_us);
    free(t->fwd_us);
    free(t->bwd_us);
    free(t);
    *pt = NULL;
}

/* same_model reports whether oracle o was built or loaded for a model shaped like m. */
static int same_model(const ordo__oracle_t *o, const ordo__model_t *m)
{
    if (strcmp(o->model, m->name) != 0 || o->n_ops != m->n_ops || o->n_params != m->n_params)
        return 0;
    for (int i = 0; i < m->n_ops; i++)
        if (strcmp(o->op_names[i], m->ops[i].name) != 0) return 0;
    for (int i = 0; i < m->n_params; i++)
        if (strcmp(o->param_names[i], m->params[i].name) != 0) return 0;
    return 1;
}

int ordo__oracle_times_new(const ordo__model_t *m, double bandwidth_bps, double latency_us,
                          const ordo__oracle_t *o, ordo__oracle_times_t **out)
{
    if (!m || !out || !(bandwidth_bps >= 0) || !(latency_us >= 0) || !isfinite(latency_us))
        return ordo__error_set(ORDO_ERR_INVAL, "ordo__oracle_times_new: bad model or link");
    if (o && !same_model(o, m))
        return ordo__error_set(ORDO_ERR_INVAL, "oracle measured on model '%s' does not fit model '%s'",
                              o->model, m->name);
    ordo__oracle_times_t *t = calloc(1, sizeof *t);
    if (!t) return ordo__error_set(ORDO_ERR_NOMEM, "ordo__oracle_times_new: out of memory");
    t->n_params = m->n_params;
    t->n_ops = m->n_ops;
    t->recv_us = calloc((size_t)m->n_params + 1, sizeof *t->recv_us);
    t->send_us = calloc((size_t)m->n_params + 1, sizeof *t->send_us);
    t->fwd_us = calloc((size_t)m->n_ops + 1, sizeof *t->fwd_us);
    t->bwd_us = calloc((size_t)m->n_ops + 1, sizeof *t->bwd_us);
    if (!t->recv_us || !t->send_us || !t->fwd_us || !t->bwd_us) {
        ordo__oracle_times_destroy(&t);
        return ordo__error_set(ORDO_ERR_NOMEM, "ordo__oracle_times_new: out of memory");
    }
    for (int p = 0; p < m->n_params; p++) {
        double x = ordo__oracle_transfer_us(m->params[p].bytes, bandwidth_bps, latency_us);
        t->recv_us[p] = (o && !isnan(o->recv_us[p])) ? o->recv_us[p] : x;
        t->send_us[p] = (o && !isnan(o->send_us[p])) ? o->send_us[p] : x;
    }
    for (int i = 0; i < m->n_ops; i++) {
        t->fwd_us[i] = (o && !isnan(o->fwd_us[i])) ? o->fwd_us[i] : m->ops[i].fwd_us;
        t->bwd_us[i] = (o && !isnan(o->bwd_us[i])) ? o->bwd_us[i] : m->ops[i].bwd_us;
    }
    *out = t;
    return 0;
}

/* ---- building and writing ------------------------------------------------------------- */

void ordo__oracle_destroy(ordo__oracle_t **po)
{
    if (!po || !*po) return;
    ordo__oracle_t *o = *po;
    for (int i = 0; o->op_names && i < o->n_ops; i++)
        free(o->op_names[i]);
    for (int i = 0; o->param_names && i < o->n_params; i++)
        free(o->param_names[i]);
    free(o->op_names);
    free(o->param_names);
    free(o->fwd_us);
    free(o->bwd_us);
    free(o->recv_us);
    free(o->send_us);
    free(o->op_samples);
    free(o->model);
    free(o);
    *po = NULL;
}

int ordo__oracle_new(const ordo__model_t *m, ordo__oracle_t **out)
{
    if (!m || !out) return ordo__error_set(ORDO_ERR_INVAL, "ordo__oracle_new: no model");
    ordo__oracle_t *o = calloc(1, sizeof *o);
    if (!o) goto oom;
    o->n_ops = m->n_ops;
    o->n_params = m->n_params;
    size_t no = (size_t)m->n_ops + 1, np = (size_t)m->n_params + 1;
    o->model = strdup(m->name);
    o->op_names = calloc(no, sizeof *o->op_names);
    o->param_names = calloc(np, sizeof *o->param_names);
    o->fwd_us = malloc(no * sizeof *o->fwd_us);
    o->bwd_us = malloc(no * sizeof *o->bwd_us);
    o->op_samples = calloc(no, sizeof *o->op_samples);
    o->recv_us = malloc(np * sizeof *o->recv_us);
    o->send_us = malloc(np * sizeof *o->send_us);
    if (!o->model || !o->op_names || !o->param_names || !o->fwd_us || !o->bwd_us ||
        !o->op_samples || !o->recv_us || !o->send_us)
        goto oom;
    for (int i = 0; i < m->n_ops; i++) {
        o->fwd_us[i] = o->bwd_us[i] = NAN;
        if (!(o->op_names[i] = strdup(m->ops[i].name))) goto oom;
    }
    for (int i = 0; i < m->n_params; i++) {
        o->recv_us[i] = o->send_us[i] = NAN;
        if (!(o->param_names[i] = strdup(m->params[i].name))) goto oom;
    }
    *out = o;
    return 0;
oom:
    ordo__oracle_destroy(&o);
    return ordo__error_set(ORDO_ERR_NOMEM, "ordo__oracle_new: out of memory");
}

/* keep_min folds one measurement into a running minimum (NAN = none yet). */
static void keep_min(double *slot, double v)
{
    if (!(v >= 0) || !isfinite(v)) return;
    if (isnan(*slot) || v < *slot) *slot = v;
}

void ordo__oracle_observe_op(ordo__oracle_t *o, int op, double fwd_us, double bwd_us)
{
    ORDO_ASSERT(o && op >= 0 && op < o->n_ops);
    keep_min(&o->fwd_us[op], fwd_us);
    keep_min(&o->bwd_us[op], bwd_us);
    if (++o->op_samples[op] > o->iterations) o->iterations = o->op_samples[op];
}

void ordo__oracle_observe_transfer(ordo__oracle_t *o, int param, double recv_us, double send_us)
{
    ORDO_ASSERT(o && param >= 0 && param < o->n_params);
    keep_min(&o->recv_us[param], recv_us);
    keep_min(&o->send_us[param], send_us);
}

/* set_time adds key = v to obj when v was measured. */
static int set_time(json_t *obj, const char *key, double v)
{
    if (isnan(v)) return 0;
    return json_object_set_new(obj, key, json_real(v));
}

int ordo__oracle_write(const ordo__oracle_t *o, FILE *out)
{
    if (!o || !out) return ordo__error_set(ORDO_ERR_INVAL, "ordo__oracle_write: nothing to write");
    int rc = ORDO_ERR_NOMEM;
    json_t *root = json_object(), *ops = json_array(), *params = json_array();
    if (!root || !ops || !params) goto fail;
    for (int i = 0; i < o->n_ops; i++) {
        if (isnan(o->fwd_us[i]) && isnan(o->bwd_us[i])) continue;
        json_t *e = json_object();
        if (!e || json_array_append_new(ops, e) ||
            json_object_set_new(e, "name", json_string(o->op_names[i])) ||
            set_time(e, "fwd_us", o->fwd_us[i]) || set_time(e, "bwd_us", o->bwd_us[i]))
            goto fail;
    }
    for (int i = 0; i < o->n_params; i++) {
        if (isnan(o->recv_us[i]) && isnan(o->send_us[i])) continue;
        json_t *e = json_object();
        if (!e || json_array_append_new(params, e) ||
            json_object_set_new(e, "name", json_string(o->param_names[i])) ||
            set_time(e, "recv_us", o->recv_us[i]) || set_time(e, "send_us", o->send_us[i]))
            goto fail;
    }
    if (json_object_set_new(root, "format", json_string(ORACLE_FORMAT)) ||
        json_object_set_new(root, "model", json_string(o->model)) ||
        json_object_set_new(root, "iterations", json_integer(o->iterations)) ||
        json_object_set(root, "ops", ops) || json_object_set(root, "params", params))
        goto fail;
    rc = ORDO_ERR_IO;
    if (json_dumpf(root, out, JSON_INDENT(1) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15)) ||
        fputc('\n', out) == EOF)
        goto fail;
    rc = 0;
fail:
    json_decref(ops);
    json_decref(params);
    json_decref(root);
    if (rc == ORDO_ERR_NOMEM) return ordo__error_set(rc, "ordo__oracle_write: out of memory");
    if (rc == ORDO_ERR_IO) return ordo__error_set(rc, "ordo__oracle_write: write failed");
    return 0;
}

/* ---- from traces and into models ----------------------------------------------------- */

/* op_named returns the index of o's op called name, or -1. */
static int op_named(const ordo__oracle_t *o, const char *name)
{
    for (int i = 0; i < o->n_ops; i++)
        if (strcmp(o->op_names[i], name) == 0) return i;
    return -1;
}

int ordo__oracle_observe_trace(ordo__oracle_t *o, const char *path, int *n_events)
{
    if (n_events) *n_events = 0;
    if (!o || !path) return ordo__error_set(ORDO_ERR_INVAL, "ordo__oracle_observe_trace: no trace");
    json_t *root = NULL;
    int rc = ordo__json_read_file(path, 0, &root);
    if (rc) return rc;
    int n = 0;
    json_t *events = json_is_object(root) ? json_object_get(root, "traceEvents") : NULL;
    if (!json_is_array(events)) {
        rc = ordo__error_set(ORDO_ERR_FORMAT,
                            "%s: $.traceEvents: must be an array (a Chrome "
                            "trace-event file)",
                            path);
        goto out;
    }
    size_t i;
    json_t *e;
    json_array_foreach(events, i, e)
    {
        if (!json_is_object(e)) {
            rc = ordo__error_set(ORDO_ERR_FORMAT, "%s: $.traceEvents[%zu]: must be an object", path, i);
            goto out;
        }
        const char *ph = json_string_value(json_object_get(e, "ph"));
        const char *cat = json_string_value(json_object_get(e, "cat"));
        if (!ph || strcmp(ph, "X") != 0 || !cat) continue;
        int fwd = strcmp(cat, "forward") == 0, bwd = strcmp(cat, "backward") == 0;
        if (!fwd && !bwd) continue;
        const char *name = json_string_value(json_object_get(e, "name"));
        json_t *d = json_object_get(e, "dur");
        double dur = json_is_number(d) ? json_number_value(d) : NAN;
        if (!name) {
            rc = ordo__error_set(ORDO_ERR_FORMAT, "%s: $.traceEvents[%zu].name: must be a string", path,
                                i);
            goto out;
        }
        if (!(dur >= 0) || !isfinite(dur)) {
            rc = ordo__error_set(ORDO_ERR_FORMAT, "%s: $.traceEvents[%zu].dur: must be a number >= 0",
                                path, i);
            goto out;
        }
        int op = op_named(o, name);
        if (op < 0) {
            rc = ordo__error_set(ORDO_ERR_FORMAT,
                                "%s: $.traceEvents[%zu].name: '%s' is not an op of model '%s'",
                                path, i, name, o->model);
            goto out;
        }
        if (fwd)
            ordo__oracle_observe_op(o, op, dur, -1); /* one forward event per iteration */
        else
            keep_min(&o->bwd_us[op], dur);
        n++;
    }
    if (n == 0)
        rc = ordo__error_set(ORDO_ERR_FORMAT,
                            "%s: no forward or backward events (a worker's trace, "
                            "output.trace = true, has them)",
                            path);
out:
    json_decref(root);
    if (n_events && rc == 0) *n_events = n;
    return rc;
}

int ordo__oracle_timed_model(const ordo__model_t *m, const ordo__oracle_t *o, ordo__model_t **out)
{
    if (!m || !o || !out) return ordo__error_set(ORDO_ERR_INVAL, "ordo__oracle_timed_model: nothing");
    *out = NULL;
    if (!same_model(o, m))
        return ordo__error_set(ORDO_ERR_INVAL, "oracle measured on model '%s' does not fit model '%s'",
                              o->model, m->name);
    int most = 1;
    for (int i = 0; i < m->n_ops; i++) {
        if (m->ops[i].n_inputs > most) most = m->ops[i].n_inputs;
        if (m->ops[i].n_params > most) most = m->ops[i].n_params;
    }
    ordo__model_t *c = ordo__model_new(m->name, m->batch, m->dtype);
    const char **inputs = malloc((size_t)most * sizeof *inputs);
    const char **params = malloc((size_t)most * sizeof *params);
    int rc = ORDO_ERR_NOMEM;
    if (!c || !inputs || !params) goto fail;
    for (int p = 0; p < m->n_params; p++) {
        const ordo__model_param_t *q = &m->params[p];
        if ((rc = ordo__model_add_param(c, q->name, q->ndim, q->shape)) < 0) goto fail;
    }
    for (int i = 0; i < m->n_ops; i++) {
        const ordo__model_op_t *op = &m->ops[i];
        for (int k = 0; k < op->n_inputs; k++)
            inputs[k] = m->ops[op->inputs[k]].name;
        for (int k = 0; k < op->n_params; k++)
            params[k] = m->params[op->params[k]].name;
        double fwd = isnan(o->fwd_us[i]) ? op->fwd_us : o->fwd_us[i];
        double bwd = isnan(o->bwd_us[i]) ? op->bwd_us : o->bwd_us[i];
        if ((rc = ordo__model_add_op(c, op->name, op->n_inputs, inputs, op->n_params, params, fwd,
                                    bwd)) < 0)
            goto fail;
    }
    if ((rc = ordo__model_check(c)) != 0) goto fail;
    free(inputs);
    free(params);
    *out = c;
    return 0;
fail:
    free(inputs);
    free(params);
    ordo__model_destroy(&c);
    if (rc == ORDO_ERR_NOMEM) return ordo__error_set(rc, "ordo__oracle_timed_model: out of memory");
    return rc;
}

int ordo__oracle_timed_model_file(const char *path, const ordo__model_t *m, ordo__model_t **out)
{
    ordo__oracle_t *o = NULL;
    int rc = ordo__oracle_load_file(path, m, &o);
    if (!rc) rc = ordo__oracle_timed_model(m, o, out);
    ordo__oracle_destroy(&o);
    return rc;
}

/* ---- loading ---------------------------------------------------------------------------- */

/* bad fails a load with "NAME: PATH: reason". */
#define bad(...) ordo__error_set(ORDO_ERR_FORMAT, __VA_ARGS__)

/* read_time stores obj[key] into *slot when present: a finite number >= 0. */
static int read_time(json_t *obj, const char *key, double *slot, const char *name, const char *path,
                     int *found)
{
    json_t *v = json_object_get(obj, key);
    if (!v) return 0;
    if (!json_is_number(v) || !(json_number_value(v) >= 0) || !isfinite(json_number_value(v)))
        return bad("%s: %s.%s: must be a number >= 0", name, path, key);
    *slot = json_number_value(v);
    *found = 1;
    return 0;
}

/* read_entries reads one of the "ops"/"params" arrays: objects with a "name" of the model
 * (each at most once) and at least one of the two time keys. */
static int read_entries(json_t *arr, const char *what, char **names, int n, const char *k1,
                        double *t1, const char *k2, double *t2, const char *name)
{
    if (!json_is_array(arr)) return bad("%s: $.%s: must be an array", name, what);
    const char *allowed[] = {"name", k1, k2, NULL};
    char *seen = calloc((size_t)n + 1, 1);
    if (!seen) return ordo__error_set(ORDO_ERR_NOMEM, "%s: out of memory", name);
    int rc = 0;
    size_t i;
    json_t *e;
    json_array_foreach(arr, i, e)
    {
        char path[64];
        snprintf(path, sizeof path, "$.%s[%zu]", what, i);
        if (!json_is_object(e)) {
            rc = bad("%s: %s: must be an object", name, path);
            break;
        }
        if ((rc = ordo__json_only_keys(e, allowed, name, path))) break;
        const char *nm = json_string_value(json_object_get(e, "name"));
        if (!nm) {
            rc = bad("%s: %s.name: missing or not a string", name, path);
            break;
        }
        int idx = -1;
        for (int j = 0; j < n && idx < 0; j++)
            if (strcmp(names[j], nm) == 0) idx = j;
        if (idx < 0) {
            rc = bad("%s: %s.name: '%s' is not in the model", name, path, nm);
            break;
        }
        if (seen[idx]) {
            rc = bad("%s: %s.name: '%s' is listed twice", name, path, nm);
            break;
        }
        seen[idx] = 1;
        int found = 0;
        if ((rc = read_time(e, k1, &t1[idx], name, path, &found)) ||
            (rc = read_time(e, k2, &t2[idx], name, path, &found)))
            break;
        if (!found) {
            rc = bad("%s: %s: has neither %s nor %s", name, path, k1, k2);
            break;
        }
    }
    free(seen);
    return rc;
}

/* parse_root validates a parsed ordo-oracle/1 document; it consumes root. */
static int parse_root(json_t *root, const char *name, const ordo__model_t *m, ordo__oracle_t **out)
{
    ordo__oracle_t *o = NULL;
    int rc;
    static const char *const top[] = {"format", "model", "iterations", "ops", "params", NULL};
    if ((rc = ordo__json_check_head(root, top, ORACLE_FORMAT, m->name, name))) goto fail;
    json_t *it = json_object_get(root, "iterations");
    if (it && (!json_is_integer(it) || json_integer_value(it) < 0)) {
        rc = bad("%s: $.iterations: must be an integer >= 0", name);
        goto fail;
    }
    json_t *ops = json_object_get(root, "ops");
    if (!ops) {
        rc = bad("%s: $.ops: missing", name);
        goto fail;
    }
    if ((rc = ordo__oracle_new(m, &o))) goto fail;
    o->iterations = it ? (long)json_integer_value(it) : 0;
    if ((rc = read_entries(ops, "ops", o->op_names, o->n_ops, "fwd_us", o->fwd_us, "bwd_us",
                           o->bwd_us, name)))
        goto fail;
    json_t *params = json_object_get(root, "params");
    if (params && (rc = read_entries(params, "params", o->param_names, o->n_params, "recv_us",
                                     o->recv_us, "send_us", o->send_us, name)))
        goto fail;
    json_decref(root);
    *out = o;
    return 0;
fail:
    json_decref(root);
    ordo__oracle_destroy(&o);
    return rc;
}

int ordo__oracle_load_string(const char *json, const char *name, const ordo__model_t *m,
                            ordo__oracle_t **out)
{
    if (!json || !m || !out) return ordo__error_set(ORDO_ERR_INVAL, "ordo_oracle_load: bad args");
    if (!name) name = "<oracle>";
    json_t *root = NULL;
    int rc = ordo__json_read_string(json, name, JSON_REJECT_DUPLICATES, &root);
    return rc ? rc : parse_root(root, name, m, out);
}

int ordo__oracle_load_file(const char *path, const ordo__model_t *m, ordo__oracle_t **out)
{
    if (!path || !m || !out) return ordo__error_set(ORDO_ERR_INVAL, "ordo__oracle_load_file: bad args");
    json_t *root = NULL;
    int rc = ordo__json_read_file(path, JSON_REJECT_DUPLICATES, &root);
    return rc ? rc : parse_root(root, path, m, out);
}
