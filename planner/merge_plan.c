/* merge_plan: merge plans of the merged-gradient planner (merge.h): computing a plan for a
 * model with one of the algorithms, its iteration time, and reading and writing the
 * ordo-merge/1 JSON format with full validation of plans read from outside. */
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "common/json_check.h"
#include "planner/merge.h"
#include "core/merge_packer.h"

/* ======================================================================================= */
/* plans in memory                                                                         */
/* ======================================================================================= */

void ordo__merge_plan_destroy(ordo__merge_plan_t **pp)
{
    if (!pp || !*pp) return;
    ordo__merge_plan_t *p = *pp;
    free(p->model);
    free(p->order);
    free(p->group_start);
    free(p->group_of_param);
    free(p);
    *pp = NULL;
}

/* plan_alloc makes an empty plan for m (NULL when out of memory). */
static ordo__merge_plan_t *plan_alloc(const ordo__model_t *m)
{
    ordo__merge_plan_t *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    size_t n = (size_t)m->n_params + 1;
    p->model = strdup(m->name ? m->name : "");
    p->order = malloc(n * sizeof *p->order);
    p->group_start = malloc((n + 1) * sizeof *p->group_start);
    p->group_of_param = malloc(n * sizeof *p->group_of_param);
    if (!p->model || !p->order || !p->group_start || !p->group_of_param)
        ordo__merge_plan_destroy(&p);
    else
        p->n_params = m->n_params;
    return p;
}

/* plan_finish fills group_start and group_of_param from p->order and item_group (the group
 * of each position of order, a valid grouping). */
static void plan_finish(ordo__merge_plan_t *p, const int *item_group)
{
    ORDO_ASSERT(ordo__merge_grouping_valid(p->n_params, item_group));
    p->n_groups = 0;
    for (int i = 0; i < p->n_params; i++) {
        if (i == 0 || item_group[i] != item_group[i - 1]) p->group_start[p->n_groups++] = i;
        p->group_of_param[p->order[i]] = item_group[i];
    }
    p->group_start[p->n_groups] = p->n_params;
}

/* check_layout says what is wrong with lay (servers 0: none), or returns 0 */
static int check_layout(const ordo__merge_layout_t *lay)
{
    if (lay->servers == 0) return 0;
    if (lay->servers < 1 || lay->servers > 1024)
        return ordo__error_set(ORDO_ERR_INVAL, "layout: %d servers is not in [1, 1024]", lay->servers);
    if (lay->partition_bytes < 1024)
        return ordo__error_set(ORDO_ERR_INVAL, "layout: partition_bytes %lld is below 1024",
                              (long long)lay->partition_bytes);
    if (lay->segment_bytes < 0 || (lay->segment_bytes > 0 && lay->segment_bytes < 1024))
        return ordo__error_set(ORDO_ERR_INVAL,
                              "layout: segment_bytes %lld is neither 0 nor at least 1024",
                              (long long)lay->segment_bytes);
    return 0;
}

/* layout_pieces describes the messages of t's items (layers when order is NULL, else
 * parameters in order) under lay: *out is NULL when lay has no servers (one message per
 * group), else the caller's. */
static int layout_pieces(const ordo__merge_layout_t *lay, const ordo__model_t *m,
                         const ordo__merge_timeline_t *t, const int *order,
                         ordo__merge_pieces_t **out)
{
    *out = NULL;
    if (lay->servers == 0) return 0;
    int64_t *numel = malloc(((size_t)m->n_params + 1) * sizeof *numel);
    if (!numel) return ORDO_ERR_NOMEM;
    for (int i = 0; i < m->n_params; i++)
        numel[i] = m->params[i].numel;
    ordo__keys_t *keys = NULL;
    int rc = ordo__keys_partition(numel, m->n_params, m->dtype_size, lay->partition_bytes,
                                 lay->segment_bytes, lay->servers, &keys);
    free(numel);
    /* messages of at most partition_bytes, as the run's scheduler tells its workers */
    if (!rc) rc = ordo__merge_pieces_new(t, keys, lay->partition_bytes, order, out);
    ordo__keys_destroy(&keys);
    return rc;
}

/* plan_time evaluates p's grouping on timeline t under the costs a, b, c, p's pull stage
 * (p->pull, p->pull_msg) and p's layout; NAN on an error (out of memory). */
static double plan_time(const ordo__merge_plan_t *p, const ordo__model_t *m,
                        const ordo__merge_timeline_t *t, double a, double b, double c)
{
    size_t n = (size_t)p->n_params + 1;
    double *ready = malloc(n * sizeof *ready);
    int64_t *bytes = malloc(n * sizeof *bytes);
    int *group = malloc(n * sizeof *group);
    ordo__merge_pieces_t *pieces = NULL;
    double iter = NAN;
    if (ready && bytes && group && layout_pieces(&p->layout, m, t, p->order, &pieces) == 0) {
        for (int i = 0; i < p->n_params; i++) {
            int q = p->order[i];
            ready[i] = t->ready_s[t->layer_of_param[q]];
            bytes[i] = m->params[q].bytes;
            group[i] = p->group_of_param[q];
        }
        iter = ordo__merge_comm_times3(p->n_params, ready, bytes, group, a, b, c, p->pull,
                                      p->pull_msg, pieces, NULL, NULL);
    }
    ordo__merge_pieces_destroy(&pieces);
    free(ready);
    free(bytes);
    free(group);
    return iter;
}

int ordo__merge_plan_isolate(ordo__merge_plan_t *p, const ordo__model_t *m)
{
    int extra = 0;
    for (int i = 0; i < p->n_params; i++)
        extra += m->params[p->order[i]].occasional ? 2 : 0;
    if (!extra) return 0;
    int *start = malloc(sizeof *start * (size_t)(p->n_groups + extra + 1));
    if (!start) return ORDO_ERR_NOMEM;
    int n = 0, split = 0;
    for (int g = 0; g < p->n_groups; g++) {
        int lo = p->group_start[g], hi = p->group_start[g + 1], cut = 0;
        start[n++] = lo;
        for (int i = lo; i < hi; i++) {
            if (!m->params[p->order[i]].occasional || hi - lo == 1) continue;
            if (i > lo && start[n - 1] != i) start[n++] = i; /* the ones before it */
            if (i + 1 < hi) start[n++] = i + 1;              /* it alone; then the rest */
            cut = 1;
        }
        split += cut;
    }
    start[n] = p->n_params;
    free(p->group_start);
    p->group_start = start;
    p->n_groups = n;
    for (int g = 0; g < n; g++)
        for (int i = start[g]; i < start[g + 1]; i++)
            p->group_of_param[p->order[i]] = g;
    return split;
}

double ordo__merge_plan_iter_s(const ordo__merge_plan_t *p, const ordo__model_t *m, double a, double b,
                              double c)
{
    ordo__merge_timeline_t *t = NULL;
    if (!p || !m || p->n_params != m->n_params || ordo__merge_timeline_new(m, &t) != 0) return NAN;
    double iter = plan_time(p, m, t, a, b, c);
    ordo__merge_timeline_destroy(&t);
    return iter;
}

int ordo__merge_plan_messages(const ordo__merge_plan_t *p, const ordo__model_t *m)
{
    if (!p || !m || p->n_params != m->n_params)
        return ordo__error_set(ORDO_ERR_INVAL, "ordo__merge_plan_messages: plan and model differ");
    if (p->layout.servers == 0) return p->n_groups;
    ordo__merge_timeline_t *t = NULL;
    ordo__merge_pieces_t *pc = NULL;
    ordo__merge_packer_t k = {0};
    int rc = ordo__merge_timeline_new(m, &t);
    if (!rc) rc = layout_pieces(&p->layout, m, t, p->order, &pc);
    const double zero = 0;
    if (!rc) rc = ordo__merge_packer_init(&k, pc, 1, &zero, &zero, &zero);
    if (!rc) {
        int total = 0;
        for (int g = 0; g < p->n_groups; g++) {
            ordo__merge_packer_reset(&k);
            for (int i = p->group_start[g]; i < p->group_start[g + 1]; i++)
                ordo__merge_packer_add(&k, i);
            total += k.count;
        }
        rc = total;
    }
    ordo__merge_packer_free(&k);
    ordo__merge_pieces_destroy(&pc);
    ordo__merge_timeline_destroy(&t);
    return rc;
}

static int check_cost(double a, double b, double c)
{
    if (!isfinite(a) || !isfinite(b) || !isfinite(c) || a < 0 || b < 0 || c < 0)
        return ordo__error_set(ORDO_ERR_INVAL,
                              "cost model a=%g s, b=%g s/byte, c=%g s/byte: all must be finite "
                              "and >= 0",
                              a, b, c);
    return 0;
}

int ordo__merge_plan_compute(const ordo__model_t *m, ordo__merge_algo_t algo, int64_t bucket_bytes,
                            double a, double b, double c, double margin,
                            const ordo__merge_layout_t *layout, ordo__merge_plan_t **out)
{
    return ordo__merge_plan_compute3(m, algo, bucket_bytes, a, b, c, 0, 0, margin, layout, out);
}

int ordo__merge_plan_compute3(const ordo__model_t *m, ordo__merge_algo_t algo, int64_t bucket_bytes,
                             double a, double b, double c, double pull, double pull_msg,
                             double margin, const ordo__merge_layout_t *layout,
                             ordo__merge_plan_t **out)
{
    if (!m || !out) return ordo__error_set(ORDO_ERR_INVAL, "ordo__merge_plan_compute: no model");
    if (!isfinite(pull) || pull < 0)
        return ordo__error_set(ORDO_ERR_INVAL, "pull stage %g s/byte: must be finite and >= 0", pull);
    if (!isfinite(pull_msg) || pull_msg < 0)
        return ordo__error_set(ORDO_ERR_INVAL, "pull stage %g s/value: must be finite and >= 0",
                              pull_msg);
    const ordo__merge_layout_t none = {0, 0, 0};
    if (!layout) layout = &none;
    int rc = check_cost(a, b, c);
    if (!rc) rc = check_layout(layout);
    if (!rc && (!isfinite(margin) || margin < 0))
        rc = ordo__error_set(ORDO_ERR_INVAL, "margin %g: must be finite and >= 0", margin);
    if (rc) return rc;
    if (algo == ORDO_MERGE_BYTES && bucket_bytes <= 0)
        return ordo__error_set(ORDO_ERR_INVAL, "bytes:N needs N > 0 (got %lld)",
                              (long long)bucket_bytes);
    ordo__merge_timeline_t *t = NULL;
    ordo__merge_plan_t *p = NULL;
    ordo__merge_pieces_t *layer_pieces = NULL;
    int *layer_group = NULL, *item_group = NULL;
    rc = ordo__merge_timeline_new(m, &t);
    if (!rc && algo == ORDO_MERGE_OPTIMAL) rc = layout_pieces(layout, m, t, NULL, &layer_pieces);
    if (rc) goto fail;
    int L = t->n_layers, P = t->n_params;
    layer_group = malloc(((size_t)L + 1) * sizeof *layer_group);
    item_group = malloc(((size_t)P + 1) * sizeof *item_group);
    p = plan_alloc(m);
    if (!layer_group || !item_group || !p) {
        rc = ordo__error_set(ORDO_ERR_NOMEM, "model '%s': out of memory", m->name);
        goto fail;
    }
    memcpy(p->order, t->order, (size_t)P * sizeof *p->order);
    switch (algo) {
    case ORDO_MERGE_WFBP:
        for (int l = 0; l < L; l++)
            layer_group[l] = l;
        break;
    case ORDO_MERGE_ALL:
        for (int l = 0; l < L; l++)
            layer_group[l] = 0;
        break;
    case ORDO_MERGE_MGWFBP:
        rc = ordo__merge_mgwfbp(L, t->tb_s, t->layer_bytes, a, b, layer_group);
        break;
    case ORDO_MERGE_OPTIMAL:
        rc = ordo__merge_optimal3(L, t->tb_s, t->layer_bytes, a, b, c, pull, pull_msg, margin,
                                 layer_pieces, layer_group);
        break;
    case ORDO_MERGE_BYTES:
        break;
    default:
        rc = ordo__error_set(ORDO_ERR_INVAL, "unknown merge algorithm %d", (int)algo);
    }
    if (rc < 0) goto fail;
    if (algo == ORDO_MERGE_BYTES) {
        /* As PyTorch DDP fills buckets: parameters in push order, a bucket closes once it
         * holds at least N bytes. */
        int g = 0;
        int64_t fill = 0;
        for (int i = 0; i < P; i++) {
            item_group[i] = g;
            fill += m->params[p->order[i]].bytes;
            if (fill >= bucket_bytes && i + 1 < P) {
                g++;
                fill = 0;
            }
        }
    } else {
        for (int i = 0; i < P; i++)
            item_group[i] = layer_group[t->layer_of_param[p->order[i]]];
    }
    plan_finish(p, item_group);
    p->a = a;
    p->b = b;
    p->c = c;
    p->pull = pull;
    p->pull_msg = pull_msg;
    p->margin = algo == ORDO_MERGE_OPTIMAL ? margin : 0;
    p->layout = *layout;
    p->predicted_iter_s = plan_time(p, m, t, a, b, c);
    if (isnan(p->predicted_iter_s)) {
        rc = ordo__error_set(ORDO_ERR_NOMEM, "model '%s': out of memory", m->name);
        goto fail;
    }
    free(layer_group);
    free(item_group);
    ordo__merge_pieces_destroy(&layer_pieces);
    ordo__merge_timeline_destroy(&t);
    *out = p;
    return 0;
fail:
    free(layer_group);
    free(item_group);
    ordo__merge_pieces_destroy(&layer_pieces);
    ordo__merge_timeline_destroy(&t);
    ordo__merge_plan_destroy(&p);
    return rc;
}

/* ======================================================================================= */
/* writing ordo-merge/1                                                                    */
/* ======================================================================================= */

/* put_string writes s as a JSON string. */
static void put_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        if (*c == '"' || *c == '\\')
            fprintf(f, "\\%c", *c);
        else if (*c < 0x20)
            fprintf(f, "\\u%04x", *c);
        else
            fputc(*c, f);
    }
    fputc('"', f);
}

/* put_number writes finite x with the fewest digits that read back exactly. */
static void put_number(FILE *f, double x)
{
    char buf[40];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, x);
        if (strtod(buf, NULL) == x) break;
    }
    fputs(buf, f);
}

int ordo__merge_plan_to_json(const ordo__merge_plan_t *p, const ordo__model_t *m, char **out)
{
    if (!p || !m || !out || p->n_params != m->n_params)
        return ordo__error_set(ORDO_ERR_INVAL, "ordo__merge_plan_to_json: plan and model differ");
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) return ordo__error_set(ORDO_ERR_NOMEM, "ordo__merge_plan_to_json: out of memory");
    fputs("{\"format\": \"ordo-merge/1\", \"model\": ", f);
    put_string(f, p->model);
    fputs(", \"a\": ", f);
    put_number(f, p->a);
    fputs(", \"b\": ", f);
    put_number(f, p->b);
    if (p->c > 0) { /* written only when there is a receiver stage */
        fputs(", \"c\": ", f);
        put_number(f, p->c);
    }
    if (p->pull > 0) { /* and when the plan counts early pulls */
        fputs(", \"pull\": ", f);
        put_number(f, p->pull);
    }
    if (p->pull_msg > 0) {
        fputs(", \"pull_msg\": ", f);
        put_number(f, p->pull_msg);
    }
    if (p->margin > 0) {
        fputs(", \"margin\": ", f);
        put_number(f, p->margin);
    }
    if (p->layout.servers > 0) /* and when groups travel as the run cuts them */
        fprintf(f, ",\n \"servers\": %d, \"partition_bytes\": %lld, \"segment_bytes\": %lld",
                p->layout.servers, (long long)p->layout.partition_bytes,
                (long long)p->layout.segment_bytes);
    fputs(",\n \"groups\": [", f);
    for (int g = 0; g < p->n_groups; g++) {
        fputs(g ? ",\n  [" : "\n  [", f);
        for (int i = p->group_start[g]; i < p->group_start[g + 1]; i++) {
            if (i > p->group_start[g]) fputs(", ", f);
            put_string(f, m->params[p->order[i]].name);
        }
        fputc(']', f);
    }
    fputs(p->n_groups ? "\n ],\n" : "],\n", f);
    fputs(" \"predicted_iter_s\": ", f);
    put_number(f, p->predicted_iter_s);
    fputs("}\n", f);
    if (fclose(f) != 0 || !buf) {
        free(buf);
        return ordo__error_set(ORDO_ERR_NOMEM, "ordo__merge_plan_to_json: out of memory");
    }
    *out = buf;
    return 0;
}

/* ======================================================================================= */
/* reading ordo-merge/1                                                                    */
/* ======================================================================================= */

/* get_cost reads the optional number at key (default 0) into *v. */
static int get_cost(json_t *root, const char *key, const char *name, double *v)
{
    json_t *x = json_object_get(root, key);
    *v = 0;
    if (!x) return 0;
    if (!json_is_number(x))
        return ordo__error_set(ORDO_ERR_FORMAT, "%s: $.%s: not a number", name, key);
    *v = json_number_value(x);
    if (!isfinite(*v) || *v < 0)
        return ordo__error_set(ORDO_ERR_FORMAT, "%s: $.%s: %g must be finite and >= 0", name, key, *v);
    return 0;
}

/* get_layout reads the optional layout (servers, partition_bytes, segment_bytes: all or
 * none) into *lay. */
static int get_layout(json_t *root, const char *name, ordo__merge_layout_t *lay)
{
    static const char *const keys[] = {"servers", "partition_bytes", "segment_bytes"};
    json_int_t v[3];
    int n = 0;
    for (int i = 0; i < 3; i++) {
        json_t *x = json_object_get(root, keys[i]);
        if (!x) continue;
        if (!json_is_integer(x))
            return ordo__error_set(ORDO_ERR_FORMAT, "%s: $.%s: not an integer", name, keys[i]);
        v[i] = json_integer_value(x);
        n++;
    }
    if (n == 0) return 0;
    if (n != 3)
        return ordo__error_set(
            ORDO_ERR_FORMAT, "%s: $: servers, partition_bytes and segment_bytes go together", name);
    if (v[0] < 1 || v[0] > 1024)
        return ordo__error_set(ORDO_ERR_FORMAT, "%s: $.servers: %lld is not in [1, 1024]", name,
                              (long long)v[0]);
    ordo__merge_layout_t l = {(int)v[0], (int64_t)v[1], (int64_t)v[2]};
    if (check_layout(&l) != 0) {
        char why[160];
        snprintf(why, sizeof why, "%s", ordo__error_detail());
        return ordo__error_set(ORDO_ERR_FORMAT, "%s: $: %s", name, why);
    }
    *lay = l;
    return 0;
}

/* parse_root validates a parsed ordo-merge/1 document against model m and builds the plan;
 * it consumes root. */
static int parse_root(json_t *root, const char *name, const ordo__model_t *m,
                      ordo__merge_plan_t **out)
{
    static const char *const top[] = {"format", "model", "a", "b", "c", "pull", "pull_msg",
                                      "margin", "servers", "partition_bytes", "segment_bytes",
                                      "groups", "predicted_iter_s", NULL};
    ordo__merge_timeline_t *t = NULL;
    ordo__merge_plan_t *p = NULL;
    int *item_group = NULL;
    char **seen_at = NULL; /* per param: where it was first listed ("[g][k]") */
    int rc = ordo__json_check_head(root, top, "ordo-merge/1", m->name ? m->name : "", name);
    if (rc) goto fail;
    double a, b, c, pull, pull_msg, margin, pred;
    if ((rc = get_cost(root, "a", name, &a)) || (rc = get_cost(root, "b", name, &b)) ||
        (rc = get_cost(root, "c", name, &c)) || (rc = get_cost(root, "pull", name, &pull)) ||
        (rc = get_cost(root, "pull_msg", name, &pull_msg)) ||
        (rc = get_cost(root, "margin", name, &margin)) ||
        (rc = get_cost(root, "predicted_iter_s", name, &pred)))
        goto fail;
    ordo__merge_layout_t lay = {0, 0, 0};
    if ((rc = get_layout(root, name, &lay)) != 0) goto fail;
    json_t *groups = json_object_get(root, "groups");
    if (!json_is_array(groups)) {
        rc = ordo__error_set(ORDO_ERR_FORMAT, "%s: $.groups: %s", name,
                            groups ? "not an array" : "missing");
        goto fail;
    }

    if ((rc = ordo__merge_timeline_new(m, &t))) goto fail;
    p = plan_alloc(m);
    item_group = malloc(((size_t)m->n_params + 1) * sizeof *item_group);
    seen_at = calloc((size_t)m->n_params + 1, sizeof *seen_at);
    if (!p || !item_group || !seen_at) {
        rc = ordo__error_set(ORDO_ERR_NOMEM, "%s: out of memory", name);
        goto fail;
    }
    int n = 0, prev = -1;
    size_t g, k;
    json_t *group, *item;
    json_array_foreach(groups, g, group)
    {
        if (!json_is_array(group)) {
            rc = ordo__error_set(ORDO_ERR_FORMAT, "%s: $.groups[%zu]: not an array", name, g);
            goto fail;
        }
        if (json_array_size(group) == 0) {
            rc = ordo__error_set(ORDO_ERR_FORMAT, "%s: $.groups[%zu]: empty group", name, g);
            goto fail;
        }
        json_array_foreach(group, k, item)
        {
            if (!json_is_string(item)) {
                rc = ordo__error_set(ORDO_ERR_FORMAT, "%s: $.groups[%zu][%zu]: not a string", name, g,
                                    k);
                goto fail;
            }
            const char *pname = json_string_value(item);
            int q = ordo__model_param_index(m, pname);
            if (q < 0) {
                rc = ordo__error_set(ORDO_ERR_FORMAT, "%s: $.groups[%zu][%zu]: unknown parameter '%s'",
                                    name, g, k, pname);
                goto fail;
            }
            if (seen_at[q]) {
                rc = ordo__error_set(ORDO_ERR_FORMAT,
                                    "%s: $.groups[%zu][%zu]: parameter '%s' is listed again "
                                    "(first at $.groups%s)",
                                    name, g, k, pname, seen_at[q]);
                goto fail;
            }
            int lq = t->layer_of_param[q];
            if (prev >= 0 && lq < t->layer_of_param[prev]) {
                int lp = t->layer_of_param[prev];
                rc = ordo__error_set(ORDO_ERR_FORMAT,
                                    "%s: $.groups[%zu][%zu]: '%s' (op '%s', layer %d in backward "
                                    "order) comes after '%s' (op '%s', layer %d): groups must "
                                    "follow backward order",
                                    name, g, k, pname, m->ops[t->layer_op[lq]].name, lq,
                                    m->params[prev].name, m->ops[t->layer_op[lp]].name, lp);
                goto fail;
            }
            char where[48];
            snprintf(where, sizeof where, "[%zu][%zu]", g, k);
            seen_at[q] = strdup(where);
            if (!seen_at[q]) {
                rc = ordo__error_set(ORDO_ERR_NOMEM, "%s: out of memory", name);
                goto fail;
            }
            p->order[n] = q;
            item_group[n] = (int)g;
            n++;
            prev = q;
        }
    }
    for (int i = 0; i < t->n_params; i++)
        if (!seen_at[t->order[i]]) {
            rc = ordo__error_set(ORDO_ERR_FORMAT, "%s: $.groups: parameter '%s' is missing", name,
                                m->params[t->order[i]].name);
            goto fail;
        }
    ORDO_ASSERT(n == m->n_params);
    plan_finish(p, item_group);
    p->a = a;
    p->b = b;
    p->c = c;
    p->pull = pull;
    p->pull_msg = pull_msg;
    p->margin = margin;
    p->layout = lay;
    p->predicted_iter_s = plan_time(p, m, t, a, b, c);
    if (isnan(p->predicted_iter_s)) {
        rc = ordo__error_set(ORDO_ERR_NOMEM, "%s: out of memory", name);
        goto fail;
    }
    *out = p;
    p = NULL;
fail:
    if (seen_at)
        for (int i = 0; i < m->n_params; i++)
            free(seen_at[i]);
    free(seen_at);
    free(item_group);
    ordo__merge_plan_destroy(&p);
    ordo__merge_timeline_destroy(&t);
    json_decref(root);
    return rc;
}

int ordo__merge_plan_load_string(const char *json, const char *name, const ordo__model_t *m,
                                ordo__merge_plan_t **out)
{
    if (!name) name = "(string)";
    if (!json || !m || !out)
        return ordo__error_set(ORDO_ERR_INVAL, "%s: ordo__merge_plan_load_string: missing argument",
                              name);
    json_t *root = NULL;
    int rc = ordo__json_read_string(json, name, JSON_REJECT_DUPLICATES, &root);
    return rc ? rc : parse_root(root, name, m, out);
}

int ordo__merge_plan_load_file(const char *path, const ordo__model_t *m, ordo__merge_plan_t **out)
{
    if (!path || !m || !out)
        return ordo__error_set(ORDO_ERR_INVAL, "ordo__merge_plan_load_file: missing argument");
    json_t *root = NULL;
    int rc = ordo__json_read_file(path, JSON_REJECT_DUPLICATES, &root);
    return rc ? rc : parse_root(root, path, m, out);
}
