/* model: builds, validates and queries the model graph of an ordo-model/1 profile; the JSON
 * loader (model_load.c) feeds the same builder. A built model is a plain structure that
 * owns every name and index array it points to. */
#include "core/model.h"

#include "common/error.h"
#include "core/model_internal.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
    const char *name;
    size_t size;
} dtypes[] = {{"float32", 4}, {"float16", 2}, {"float64", 8}, {"bfloat16", 2}};

size_t ordo__model_dtype_size(const char *dtype)
{
    for (size_t i = 0; i < sizeof dtypes / sizeof dtypes[0]; i++)
        if (strcmp(dtypes[i].name, dtype) == 0) return dtypes[i].size;
    return 0;
}

/* Arrays grow to the next power of two, so the capacity follows from the count alone and
 * the public struct needs no capacity field. */
static int grow(void **arr, int n, size_t elem)
{
    /* capacity(n) = 0 for n = 0, else max(4, the next power of two >= n) */
    if (n != 0 && (n < 4 || (n & (n - 1)) != 0)) return 0;
    if (n >= INT_MAX / 2) return ORDO_ERR_NOMEM;
    size_t cap = n == 0 ? 4 : (size_t)n * 2;
    void *p = realloc(*arr, cap * elem);
    if (!p) return ORDO_ERR_NOMEM;
    *arr = p;
    return 0;
}

ordo__model_t *ordo__model_new(const char *name, int batch, const char *dtype)
{
    if (!dtype) dtype = "float32";
    size_t dsize = ordo__model_dtype_size(dtype);
    if (!name || batch <= 0 || dsize == 0) {
        ordo__error_set(ORDO_ERR_INVAL, "ordo__model_new: bad name, batch %d or dtype '%s'", batch,
                       dtype);
        return NULL;
    }
    ordo__model_t *m = calloc(1, sizeof *m);
    if (!m) return NULL;
    m->name = strdup(name);
    if (!m->name) {
        free(m);
        return NULL;
    }
    m->batch = batch;
    snprintf(m->dtype, sizeof m->dtype, "%s", dtype);
    m->dtype_size = dsize;
    return m;
}

int ordo__model_add_param_checked(ordo__model_t *m, const char *name, int ndim, const int64_t *shape)
{
    int64_t numel = 1;
    for (int d = 0; d < ndim; d++) {
        ORDO_ASSERT(shape[d] > 0);
        if (numel > INT64_MAX / shape[d]) return ORDO_ERR_RANGE;
        numel *= shape[d];
    }
    if (numel > INT64_MAX / (int64_t)m->dtype_size) return ORDO_ERR_RANGE;
    if (grow((void **)&m->params, m->n_params, sizeof *m->params)) return ORDO_ERR_NOMEM;
    ordo__model_param_t *p = &m->params[m->n_params];
    memset(p, 0, sizeof *p);
    p->name = strdup(name);
    if (!p->name) return ORDO_ERR_NOMEM;
    p->ndim = ndim;
    memcpy(p->shape, shape, (size_t)ndim * sizeof *shape);
    p->numel = numel;
    p->bytes = numel * (int64_t)m->dtype_size;
    p->first_op = -1;
    return m->n_params++;
}

int ordo__model_add_param(ordo__model_t *m, const char *name, int ndim, const int64_t *shape)
{
    if (!m || !name || !name[0] || !shape)
        return ordo__error_set(ORDO_ERR_INVAL, "ordo__model_add_param: missing model, name or shape");
    if (ndim < 1 || ndim > ORDO_MODEL_MAX_DIMS)
        return ordo__error_set(ORDO_ERR_INVAL, "parameter '%s': %d dims, must be 1 to %d", name, ndim,
                              ORDO_MODEL_MAX_DIMS);
    for (int d = 0; d < ndim; d++)
        if (shape[d] <= 0)
            return ordo__error_set(ORDO_ERR_INVAL, "parameter '%s': dim %d is %lld, must be > 0", name,
                                  d, (long long)shape[d]);
    if (ordo__model_param_index(m, name) >= 0)
        return ordo__error_set(ORDO_ERR_INVAL, "duplicate parameter name '%s'", name);
    int rc = ordo__model_add_param_checked(m, name, ndim, shape);
    if (rc == ORDO_ERR_RANGE) return ordo__error_set(rc, "parameter '%s': shape too large", name);
    if (rc < 0) return ordo__error_set(rc, "parameter '%s': out of memory", name);
    return rc;
}

int ordo__model_add_op_checked(ordo__model_t *m, const char *name, int n_inputs, const int *inputs,
                               int n_params, const int *params, double fwd_us, double bwd_us)
{
    if (grow((void **)&m->ops, m->n_ops, sizeof *m->ops)) return ORDO_ERR_NOMEM;
    ordo__model_op_t *op = &m->ops[m->n_ops];
    memset(op, 0, sizeof *op);
    op->name = strdup(name);
    if (n_inputs > 0) op->inputs = malloc((size_t)n_inputs * sizeof *op->inputs);
    if (n_params > 0) op->params = malloc((size_t)n_params * sizeof *op->params);
    if (!op->name || (n_inputs > 0 && !op->inputs) || (n_params > 0 && !op->params)) {
        free(op->name);
        free(op->inputs);
        free(op->params);
        return ORDO_ERR_NOMEM;
    }
    if (n_inputs > 0) memcpy(op->inputs, inputs, (size_t)n_inputs * sizeof *inputs);
    if (n_params > 0) memcpy(op->params, params, (size_t)n_params * sizeof *params);
    op->n_inputs = n_inputs;
    op->n_params = n_params;
    op->fwd_us = fwd_us;
    op->bwd_us = bwd_us;
    return m->n_ops++;
}

/* has_dup reports whether idx[0..n) names one index twice. */
static int has_dup(const int *idx, int n)
{
    for (int i = 0; i < n; i++)
        for (int j = 0; j < i; j++)
            if (idx[i] == idx[j]) return 1;
    return 0;
}

int ordo__model_add_op(ordo__model_t *m, const char *name, int n_inputs, const char *const *inputs,
                      int n_params, const char *const *params, double fwd_us, double bwd_us)
{
    if (!m || !name || !name[0] || n_inputs < 0 || n_params < 0 || (n_inputs > 0 && !inputs) ||
        (n_params > 0 && !params))
        return ordo__error_set(ORDO_ERR_INVAL, "ordo__model_add_op: missing model, name or lists");
    if (!(fwd_us >= 0) || !(bwd_us >= 0)) /* also catches NaN */
        return ordo__error_set(ORDO_ERR_INVAL, "op '%s': times must be >= 0 (fwd %g, bwd %g)", name,
                              fwd_us, bwd_us);
    if (ordo__model_op_index(m, name) >= 0)
        return ordo__error_set(ORDO_ERR_INVAL, "duplicate op name '%s'", name);
    int rc = ORDO_ERR_NOMEM;
    int *in = calloc((size_t)n_inputs + 1, sizeof *in);
    int *pa = calloc((size_t)n_params + 1, sizeof *pa);
    if (!in || !pa) goto fail;
    for (int i = 0; i < n_inputs; i++) {
        in[i] = inputs[i] ? ordo__model_op_index(m, inputs[i]) : -1;
        if (in[i] < 0) {
            rc = ordo__error_set(ORDO_ERR_NOTFOUND, "op '%s': input '%s' is not an earlier op", name,
                                inputs[i] ? inputs[i] : "(null)");
            goto fail;
        }
    }
    for (int i = 0; i < n_params; i++) {
        pa[i] = params[i] ? ordo__model_param_index(m, params[i]) : -1;
        if (pa[i] < 0) {
            rc = ordo__error_set(ORDO_ERR_NOTFOUND, "op '%s': unknown parameter '%s'", name,
                                params[i] ? params[i] : "(null)");
            goto fail;
        }
    }
    if (has_dup(in, n_inputs) || has_dup(pa, n_params)) {
        rc = ordo__error_set(ORDO_ERR_INVAL, "op '%s': an input or parameter is listed twice", name);
        goto fail;
    }
    rc = ordo__model_add_op_checked(m, name, n_inputs, in, n_params, pa, fwd_us, bwd_us);
    if (rc < 0) ordo__error_set(rc, "op '%s': out of memory", name);
fail:
    free(in);
    free(pa);
    return rc;
}

int ordo__model_first_ops(ordo__model_t *m, int *unused_param)
{
    *unused_param = -1;
    if (m->n_ops < 1) return ORDO_ERR_INVAL;
    for (int p = 0; p < m->n_params; p++)
        m->params[p].first_op = -1;
    for (int o = 0; o < m->n_ops; o++)
        for (int k = 0; k < m->ops[o].n_params; k++) {
            ordo__model_param_t *p = &m->params[m->ops[o].params[k]];
            if (p->first_op < 0) p->first_op = o;
        }
    for (int p = 0; p < m->n_params; p++)
        if (m->params[p].first_op < 0) {
            *unused_param = p;
            return ORDO_ERR_INVAL;
        }
    return 0;
}

int ordo__model_check(ordo__model_t *m)
{
    if (!m) return ordo__error_set(ORDO_ERR_INVAL, "ordo__model_check: no model");
    int unused;
    int rc = ordo__model_first_ops(m, &unused);
    if (rc == 0) return 0;
    if (unused >= 0)
        return ordo__error_set(rc, "model '%s': parameter '%s' is read by no op", m->name,
                              m->params[unused].name);
    return ordo__error_set(rc, "model '%s': has no ops", m->name);
}

int ordo__model_from_sizes(const int64_t *bytes, int n, ordo__model_t **out)
{
    if (!bytes || n < 1 || !out)
        return ordo__error_set(ORDO_ERR_INVAL, "ordo__model_from_sizes: need at least one size");
    for (int i = 0; i < n; i++)
        if (bytes[i] < 1)
            return ordo__error_set(ORDO_ERR_INVAL, "ordo__model_from_sizes: size %d is %lld bytes", i,
                                  (long long)bytes[i]);
    int rc = ORDO_ERR_NOMEM;
    ordo__model_t *m = ordo__model_new("sizes", 1, "float32");
    if (!m) goto fail;
    for (int i = 0; i < n; i++) {
        char pname[32], oname[32];
        snprintf(pname, sizeof pname, "p%d", i);
        snprintf(oname, sizeof oname, "op%d", i);
        int64_t shape[1] = {(bytes[i] + 3) / 4};
        int prev = i - 1;
        /* Names are generated unique, so the index-based builder skips the name scans. */
        if ((rc = ordo__model_add_param_checked(m, pname, 1, shape)) < 0) goto fail;
        if ((rc = ordo__model_add_op_checked(m, oname, i > 0, &prev, 1, &i, 0, 0)) < 0) goto fail;
    }
    int unused;
    ORDO_ASSERT(ordo__model_first_ops(m, &unused) == 0);
    *out = m;
    return 0;
fail:
    ordo__model_destroy(&m);
    return ordo__error_set(rc, "ordo__model_from_sizes: out of memory");
}

int ordo__model_param_index(const ordo__model_t *m, const char *name)
{
    if (!m || !name) return -1;
    for (int i = 0; i < m->n_params; i++)
        if (strcmp(m->params[i].name, name) == 0) return i;
    return -1;
}

int ordo__model_op_index(const ordo__model_t *m, const char *name)
{
    if (!m || !name) return -1;
    for (int i = 0; i < m->n_ops; i++)
        if (strcmp(m->ops[i].name, name) == 0) return i;
    return -1;
}

int64_t ordo__model_total_numel(const ordo__model_t *m)
{
    int64_t n = 0;
    for (int i = 0; m && i < m->n_params; i++)
        n += m->params[i].numel;
    return n;
}

int64_t ordo__model_total_bytes(const ordo__model_t *m)
{
    int64_t n = 0;
    for (int i = 0; m && i < m->n_params; i++)
        n += m->params[i].bytes;
    return n;
}

double ordo__model_total_us(const ordo__model_t *m, int with_bwd)
{
    double t = 0;
    for (int i = 0; m && i < m->n_ops; i++)
        t += m->ops[i].fwd_us + (with_bwd ? m->ops[i].bwd_us : 0);
    return t;
}

void ordo__model_destroy(ordo__model_t **pm)
{
    if (!pm || !*pm) return;
    ordo__model_t *m = *pm;
    for (int i = 0; i < m->n_params; i++)
        free(m->params[i].name);
    for (int i = 0; i < m->n_ops; i++) {
        free(m->ops[i].name);
        free(m->ops[i].inputs);
        free(m->ops[i].params);
    }
    free(m->params);
    free(m->ops);
    free(m->name);
    free(m);
    *pm = NULL;
}
