/* sparse_wire: the sparse plan member and the payloads of the sparse protocol. */
#include "core/sparse_wire.h"
#include "common/error.h"
#include "core/regions.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static void put_u32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get_u32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static int get_int(json_t *o, const char *name, long long lo, long long hi, long long *out)
{
    json_t *v = json_object_get(o, name);
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
        return ordo__error_set(ORDO_ERR_PROTO, "plan: sparse.%s must be an integer in [%lld, %lld]",
                              name, lo, hi);
    *out = json_integer_value(v);
    return 0;
}

int ordo__sparse_wire_plan_of(struct json_t *sp, int servers, ordo__sparse_plan_t *out)
{
    memset(out, 0, sizeof *out);
    int rc = 0;
    long long n = 0, k = 0, nbins = 0, tp = 0, rp = 0;
    if (!json_is_object(sp)) {
        rc = ORDO_ERR_NOTFOUND;
        goto done;
    }
    if ((rc = get_int(sp, "n", 1, UINT32_MAX - 1, &n)) || (rc = get_int(sp, "k", 1, n, &k)) ||
        (rc = get_int(sp, "nbins", 1, ORDO_REGIONS_MAX_BINS, &nbins)) ||
        (rc = get_int(sp, "threshold_period", 1, 1000000, &tp)) ||
        (rc = get_int(sp, "repartition_period", 1, 1000000, &rp)))
        goto done;
    json_t *d = json_object_get(sp, "density"), *b = json_object_get(sp, "bounds");
    if (!json_is_number(d) || !(json_number_value(d) > 0) || json_number_value(d) > 1) {
        rc = ordo__error_set(ORDO_ERR_PROTO, "plan: sparse.density must be a number in (0, 1]");
        goto done;
    }
    if (servers < 1 || (long long)servers > n || !json_is_array(b) ||
        json_array_size(b) != (size_t)servers + 1) {
        rc =
            ordo__error_set(ORDO_ERR_PROTO, "plan: sparse.bounds must hold %d boundaries", servers + 1);
        goto done;
    }
    out->bounds = malloc(sizeof *out->bounds * ((size_t)servers + 1));
    if (!out->bounds) {
        rc = ORDO_ERR_NOMEM;
        goto done;
    }
    for (int s = 0; s <= servers; s++) {
        json_t *v = json_array_get(b, (size_t)s);
        if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > n) {
            rc = ordo__error_set(ORDO_ERR_PROTO, "plan: sparse.bounds[%d] is not an index in [0, %lld]",
                                s, n);
            goto done;
        }
        out->bounds[s] = (uint32_t)json_integer_value(v);
    }
    if ((rc = ordo__regions_check(out->bounds, servers, (uint32_t)n)) != 0) goto done;
    out->n = (uint32_t)n;
    out->k = (uint32_t)k;
    out->density = json_number_value(d);
    out->nbins = (int)nbins;
    out->threshold_period = (int)tp;
    out->repartition_period = (int)rp;
    out->servers = servers;
done:
    if (rc) ordo__sparse_wire_plan_fini(out);
    return rc;
}

int ordo__sparse_wire_plan(const char *plan_json, int servers, ordo__sparse_plan_t *out)
{
    json_t *root = plan_json ? json_loads(plan_json, 0, NULL) : NULL;
    int rc = ordo__sparse_wire_plan_of(json_object_get(root, "sparse"), servers, out);
    json_decref(root);
    return rc;
}

int ordo__sparse_wire_plan_copy(const ordo__sparse_plan_t *src, ordo__sparse_plan_t *dst)
{
    size_t bytes = sizeof *src->bounds * ((size_t)src->servers + 1);
    uint32_t *bounds = malloc(bytes);
    if (!bounds) return ORDO_ERR_NOMEM;
    memcpy(bounds, src->bounds, bytes);
    *dst = *src;
    dst->bounds = bounds;
    return 0;
}

void ordo__sparse_wire_plan_fini(ordo__sparse_plan_t *p)
{
    if (!p) return;
    free(p->bounds);
    p->bounds = NULL;
}

void ordo__sparse_wire_put_counts(const uint64_t *counts, size_t n, uint8_t *buf)
{
    for (size_t i = 0; i < n; i++) {
        put_u32(buf + 8 * i, (uint32_t)counts[i]);
        put_u32(buf + 8 * i + 4, (uint32_t)(counts[i] >> 32));
    }
}

int ordo__sparse_wire_add_counts(const void *buf, size_t len, size_t n, uint64_t *sum,
                                const char *what)
{
    if (len != 8 * n || (n > 0 && !buf))
        return ordo__error_set(ORDO_ERR_PROTO, "%s: %zu bytes, expected %zu", what, len, 8 * n);
    const uint8_t *p = buf;
    for (size_t i = 0; i < n; i++)
        sum[i] += (uint64_t)get_u32(p + 8 * i) | (uint64_t)get_u32(p + 8 * i + 4) << 32;
    return 0;
}

void ordo__sparse_wire_put_regions(uint32_t epoch, const uint32_t *bounds, int S, uint8_t *buf)
{
    put_u32(buf, epoch);
    for (int s = 0; s <= S; s++)
        put_u32(buf + 4 + 4 * s, bounds[s]);
}

int ordo__sparse_wire_get_regions(const void *buf, size_t len, int S, uint32_t n, uint32_t *epoch,
                                 uint32_t *bounds)
{
    if (len != ordo_sparse_wire_regions_size(S) || !buf)
        return ordo__error_set(ORDO_ERR_PROTO, "REGIONS: %zu bytes, expected %zu for %d servers", len,
                              ordo_sparse_wire_regions_size(S), S);
    const uint8_t *p = buf;
    uint32_t *b = malloc(sizeof *b * ((size_t)S + 1));
    if (!b) return ORDO_ERR_NOMEM;
    for (int s = 0; s <= S; s++)
        b[s] = get_u32(p + 4 + 4 * s);
    int rc = ordo__regions_check(b, S, n);
    if (rc == 0) {
        memcpy(bounds, b, sizeof *b * ((size_t)S + 1));
        *epoch = get_u32(p);
    }
    free(b);
    return rc;
}

void ordo__sparse_wire_put_float(float v, uint8_t *buf)
{
    uint32_t u;
    memcpy(&u, &v, 4);
    put_u32(buf, u);
}

int ordo__sparse_wire_get_float(const void *buf, size_t len, float *out)
{
    if (len != 4 || !buf)
        return ordo__error_set(ORDO_ERR_PROTO, "THRESHOLD: %zu bytes, expected 4", len);
    uint32_t u = get_u32(buf);
    float v;
    memcpy(&v, &u, 4);
    if (!isfinite(v) || v < 0)
        return ordo__error_set(ORDO_ERR_PROTO, "THRESHOLD: %g is not a finite value >= 0", (double)v);
    *out = v;
    return 0;
}

void ordo__sparse_wire_get_f32s(const void *buf, size_t len, float *dst)
{
    const uint8_t *p = buf;
    for (size_t i = 0; i < len / 4; i++) {
        uint32_t u = get_u32(p + 4 * i);
        memcpy(&dst[i], &u, 4);
    }
}
