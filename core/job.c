/* job: the run's model from the conf. */
#include "core/job.h"

#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "core/nn.h"

int ordo__job_parse_sizes(const char *list, int64_t *bytes, int max)
{
    char buf[ORDO_CONF_PATH];
    snprintf(buf, sizeof buf, "%s", list);
    int n = 0;
    char *save = NULL;
    for (char *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        while (*tok == ' ' || *tok == '\t')
            tok++;
        char *end = tok + strlen(tok);
        while (end > tok && (end[-1] == ' ' || end[-1] == '\t'))
            *--end = '\0';
        if (n >= max) return ordo__error_set(ORDO_ERR_RANGE, "model.tensors: more than %d sizes", max);
        if (ordo__conf_parse_bytes(tok, &bytes[n]) != 0 || bytes[n] <= 0)
            return ordo__error_set(ORDO_ERR_INVAL, "model.tensors: '%s' is not a positive size", tok);
        n++;
    }
    if (n == 0) return ordo__error_set(ORDO_ERR_INVAL, "model.tensors: empty list");
    return n;
}

int ordo__job_model_declared(const char *const *names, const int64_t *numel, int n,
                            ordo__model_t **out)
{
    if (n < 1) return ordo__error_set(ORDO_ERR_INVAL, "declared model: no tensors");
    ordo__model_t *m = ordo__model_new("declared", 1, "float32");
    if (!m) return ORDO_ERR_NOMEM;
    int rc = 0;
    char op[32], prev[32];
    for (int i = 0; i < n && rc >= 0; i++) {
        if (numel[i] < 1) {
            rc = ordo__error_set(ORDO_ERR_INVAL, "declared tensor %d \"%s\": %lld elements", i,
                                names[i], (long long)numel[i]);
            break;
        }
        if ((rc = ordo__model_add_param(m, names[i], 1, &numel[i])) < 0) break;
        snprintf(op, sizeof op, "op%d", i);
        const char *in[1] = {prev};
        rc = ordo__model_add_op(m, op, i > 0, in, 1, &names[i], 0, 0);
        snprintf(prev, sizeof prev, "%s", op);
    }
    if (rc >= 0) rc = ordo__model_check(m);
    if (rc < 0) {
        ordo__model_destroy(&m);
        return rc;
    }
    *out = m;
    return 0;
}

int ordo__job_model(const ordo__conf_t *conf, ordo__model_t **out)
{
    if (!strcmp(conf->trainer, "declared"))
        return ordo__error_set(ORDO_ERR_INVAL, "model.trainer = declared: the workers declare the "
                                           "model when they register");
    if (!strcmp(conf->trainer, "synthetic")) {
        int64_t sizes[1024];
        int n = ordo__job_parse_sizes(conf->tensors, sizes, 1024);
        if (n < 0) return n;
        return ordo__model_from_sizes(sizes, n, out);
    }
    if (!strcmp(conf->trainer, "profile")) return ordo__model_load_file(conf->model_file, out);
    return ordo__nn_model(conf->trainer, conf->batch > 0 ? conf->batch : 64, out);
}
