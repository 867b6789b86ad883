/* declared: the model of [model] trainer = declared from the workers' declarations. */
#include "scheduler/declared.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/codec.h"
#include "common/error.h"
#include "core/job.h"

/* check_declaration checks one declared tensor {name, numel[, update]}; why names it. */
static bool check_declaration(json_t *d, int worker, int i, char *why, size_t wsz)
{
    json_t *name = json_object_get(d, "name"), *numel = json_object_get(d, "numel");
    json_t *u = json_object_get(d, "update"), *occ = json_object_get(d, "occasional");
    const char *bad = NULL;
    if (occ && !json_is_boolean(occ)) bad = "\"occasional\" that is not true or false";
    json_t *comp = json_object_get(d, "compression");
    ordo__codec_spec_t spec;
    if (comp && (!json_is_string(comp) || ordo__codec_parse(json_string_value(comp), &spec) != 0))
        bad = "a \"compression\" that is no codec spec";
    if (bad) {
    } else if (!json_is_string(name) || !json_string_length(name) ||
               json_string_length(name) > 1000)
        bad = "no name";
    else if (!json_is_integer(numel) || json_integer_value(numel) < 1)
        bad = "no element count >= 1";
    else if (u) {
        const char *kind = json_string_value(json_object_get(u, "kind"));
        if (!kind || (strcmp(kind, "sgd") && strcmp(kind, "average")))
            bad = "an update rule of unknown kind";
        const char *nums[3] = {"lr", "momentum", "weight_decay"};
        for (int k = 0; !bad && kind && !strcmp(kind, "sgd") && k < 3; k++) {
            json_t *x = json_object_get(u, nums[k]);
            if (!json_is_number(x) || !isfinite(json_number_value(x)) || json_number_value(x) < 0)
                bad = "an sgd rule without finite lr, momentum, weight_decay >= 0";
        }
    }
    if (bad) snprintf(why, wsz, "worker %d declared tensor %d with %s", worker, i, bad);
    return !bad;
}

/* check_sparse_rules: sparse servers run one SGD over every tensor (the sparse path keeps no
 * per-key rules), so declared rules must all be the same sgd; an average (a gradient or a
 * value the program wants back exact) cannot be sparsified. */
static int check_sparse_rules(json_t *up, const char **names, char *why, size_t wsz)
{
    json_t *first = NULL;
    for (size_t i = 0; i < json_array_size(up); i++) {
        json_t *u = json_array_get(up, i);
        const char *kind = json_string_value(json_object_get(u, "kind"));
        if (!kind || strcmp(kind, "sgd")) {
            snprintf(why, wsz,
                     "push.mode = sparse sparsifies every tensor and runs one SGD on the servers: "
                     "tensor %zu \"%s\" asks for %s (exact averages need push.mode = dense or "
                     "merged)",
                     i, names[i], kind ? "an average" : "the conf's [optimizer]");
            return ORDO_ERR_INVAL;
        }
        if (!first) {
            first = u;
        } else if (!json_equal(u, first)) {
            snprintf(why, wsz,
                     "push.mode = sparse runs one SGD for every tensor: tensor %zu \"%s\" "
                     "declares other hyperparameters than tensor 0",
                     i, names[i]);
            return ORDO_ERR_INVAL;
        }
    }
    return 0;
}

/* same_tensor: worker w's declaration a of tensor i matches worker 0's (b): name, size,
 * occasional, compression and update rule; false with why naming the first difference */
static bool same_tensor(json_t *a, json_t *b, int w, int i, char *why, size_t wsz)
{
    const char *an = json_string_value(json_object_get(a, "name"));
    const char *bn = json_string_value(json_object_get(b, "name"));
    long long ae = json_integer_value(json_object_get(a, "numel"));
    long long be = json_integer_value(json_object_get(b, "numel"));
    if (strcmp(an, bn) || ae != be) {
        snprintf(why, wsz,
                 "worker %d declared tensor %d \"%s\" of %lld elements, worker 0 "
                 "\"%s\" of %lld",
                 w, i, an, ae, bn, be);
        return false;
    }
    if (json_is_true(json_object_get(a, "occasional")) !=
        json_is_true(json_object_get(b, "occasional"))) {
        snprintf(why, wsz,
                 "worker %d declared tensor %d \"%s\" %s, worker 0 %s", w, i, an,
                 json_is_true(json_object_get(a, "occasional")) ? "occasional" : "every step",
                 json_is_true(json_object_get(b, "occasional")) ? "occasional" : "every step");
        return false;
    }
    const char *ac = json_string_value(json_object_get(a, "compression"));
    const char *bc = json_string_value(json_object_get(b, "compression"));
    if (strcmp(ac ? ac : "the conf's", bc ? bc : "the conf's")) {
        snprintf(why, wsz,
                 "worker %d declared tensor %d \"%s\" with compression %s, worker 0 "
                 "with %s",
                 w, i, an, ac ? ac : "the conf's", bc ? bc : "the conf's");
        return false;
    }
    json_t *au = json_object_get(a, "update"), *bu = json_object_get(b, "update");
    if (!(au == bu || (au && bu && json_equal(au, bu)))) {
        char *at = au ? json_dumps(au, JSON_COMPACT) : strdup("the conf's"),
             *bt = bu ? json_dumps(bu, JSON_COMPACT) : strdup("the conf's");
        snprintf(why, wsz,
                 "worker %d declared tensor %d \"%s\" with update rule %s, worker 0 %s", w,
                 i, an, at ? at : "?", bt ? bt : "?");
        free(at);
        free(bt);
        return false;
    }
    return true;
}

int ordo__declared_model(json_t *const *by_rank, int n_workers, bool sparse, ordo__model_t **model,
                        json_t **updates, char *why, size_t wsz)
{
    json_t *ref = by_rank[0], *up = NULL;
    int n = (int)json_array_size(ref), rc = ORDO_ERR_INVAL;
    const char **names = NULL;
    int64_t *numel = NULL;
    why[0] = '\0';
    for (int w = 0; w < n_workers; w++) {
        json_t *t = by_rank[w];
        for (int i = 0; i < (int)json_array_size(t); i++)
            if (!check_declaration(json_array_get(t, (size_t)i), w, i, why, wsz)) goto done;
        if (w == 0) continue;
        if ((int)json_array_size(t) != n) {
            snprintf(why, wsz, "worker %d declared %d tensors, worker 0 %d", w,
                     (int)json_array_size(t), n);
            goto done;
        }
        for (int i = 0; i < n; i++) {
            if (!same_tensor(json_array_get(t, (size_t)i), json_array_get(ref, (size_t)i), w, i,
                             why, wsz))
                goto done;
        }
    }
    if (n < 1) {
        snprintf(why, wsz, "the workers declared no tensors");
        goto done;
    }
    names = malloc(sizeof *names * (size_t)n);
    numel = malloc(sizeof *numel * (size_t)n);
    up = json_array();
    bool any = false;
    rc = names && numel && up ? 0 : ORDO_ERR_NOMEM;
    for (int i = 0; !rc && i < n; i++) {
        json_t *d = json_array_get(ref, (size_t)i), *u = json_object_get(d, "update");
        names[i] = json_string_value(json_object_get(d, "name"));
        numel[i] = json_integer_value(json_object_get(d, "numel"));
        json_array_append(up, u ? u : json_null());
        any |= u != NULL;
    }
    if (!rc && any && sparse) rc = check_sparse_rules(up, names, why, wsz);
    ordo__model_t *m = NULL;
    if (!rc) rc = ordo__job_model_declared(names, numel, n, &m);
    for (int i = 0; !rc && i < n; i++)
        m->params[i].occasional = json_is_true(json_object_get(json_array_get(ref, (size_t)i),
                                                               "occasional"));
    if (rc && rc != ORDO_ERR_NOMEM && !why[0])
        snprintf(why, wsz, "the declared tensors: %s", ordo__error_text(rc));
    if (!rc) {
        *model = m;
        *updates = any ? json_incref(up) : NULL;
    }
done:
    json_decref(up);
    free(names);
    free(numel);
    return rc;
}
