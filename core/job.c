/* job: the run's model from the conf. */
#include "core/job.h"

#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "core/nn.h"

int ordo_job_parse_sizes(const char *list, int64_t *bytes, int max)
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
        if (n >= max) return ordo_error_set(ORDO_ERANGE, "model.tensors: more than %d sizes", max);
        if (ordo_conf_parse_bytes(tok, &bytes[n]) != 0 || bytes[n] <= 0)
            return ordo_error_set(ORDO_EINVAL, "model.tensors: '%s' is not a positive size", tok);
        n++;
    }
    if (n == 0) return ordo_error_set(ORDO_EINVAL, "model.tensors: empty list");
    return n;
}

int ordo_job_model(const ordo_conf_t *conf, ordo_model_t **out)
{
    if (!strcmp(conf->trainer, "synthetic")) {
        int64_t sizes[1024];
        int n = ordo_job_parse_sizes(conf->tensors, sizes, 1024);
        if (n < 0) return n;
        return ordo_model_from_sizes(sizes, n, out);
    }
    if (!strcmp(conf->trainer, "profile")) return ordo_model_load_file(conf->model_file, out);
    return ordo_nn_model(conf->trainer, conf->batch > 0 ? conf->batch : 64, out);
}
