/* merge: the merged-gradient planner's heuristics: the paper's Algorithm 1 (mgwfbp) and the
 * names of the algorithms. The cost model they are judged by is core/merge_cost.c; the exact
 * program ("optimal") is merge_optimal.c; plans (computing them for a model, reading and
 * writing ordo-merge/1) live in merge_plan.c. */
#include "planner/merge.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/conf.h"
#include "common/error.h"
#include "core/merge_packer.h"

static int check_cost(double a, double b)
{
    if (!isfinite(a) || !isfinite(b) || a < 0 || b < 0)
        return ordo__error_set(ORDO_ERR_INVAL,
                              "cost model a=%g s, b=%g s/byte: both must be finite "
                              "and >= 0",
                              a, b);
    return 0;
}

/* ======================================================================================= */
/* algorithms                                                                              */
/* ======================================================================================= */

/* calc_comm_start is the paper's CalculateCommStart (1-based, layer L first). */
static void calc_comm_start(int L, const double *tc, const double *tb, const double *taub,
                            double *tauc)
{
    tauc[L] = taub[L] + tb[L];
    for (int l = L - 1; l >= 1; l--) {
        double x = tauc[l + 1] + tc[l + 1], y = taub[l] + tb[l];
        tauc[l] = x > y ? x : y;
    }
}

int ordo__merge_mgwfbp(int L, const double *tb_s, const int64_t *bytes, double a, double b,
                      int *layer_group)
{
    int rc = check_cost(a, b);
    if (rc) return rc;
    if (L < 0 || (L > 0 && (!tb_s || !bytes || !layer_group)))
        return ordo__error_set(ORDO_ERR_INVAL, "ordo__merge_mgwfbp: bad arguments");
    if (L == 0) return 0;
    /* The paper's arrays, 1-based: layer l of the paper is our layer L - l. */
    size_t n = (size_t)L + 1;
    double *tb = malloc(n * sizeof *tb), *tc = malloc(n * sizeof *tc);
    double *taub = malloc(n * sizeof *taub), *tauc = malloc(n * sizeof *tauc);
    int64_t *p = malloc(n * sizeof *p);
    char *merged = calloc(n, 1);
    rc = ORDO_ERR_NOMEM;
    if (!tb || !tc || !taub || !tauc || !p || !merged) goto fail;
    for (int l = 1; l <= L; l++) {
        tb[l] = tb_s[L - l];
        p[l] = bytes[L - l];
        tc[l] = a + b * (double)p[l]; /* line 5 */
    }
    taub[L] = 0; /* line 6 */
    for (int l = L - 1; l >= 1; l--)
        taub[l] = taub[l + 1] + tb[l + 1];           /* line 8 */
    calc_comm_start(L, tc, tb, taub, tauc);          /* line 9 */
    for (int l = L; l >= 2; l--) {                   /* line 10 */
        if (taub[l - 1] + tb[l - 1] - tauc[l] < a) { /* line 11, Eq. (38) */
            tc[l] = 0;                               /* Merge: lines 17-19 */
            p[l - 1] += p[l];
            tc[l - 1] = a + b * (double)p[l - 1];
            calc_comm_start(L, tc, tb, taub, tauc); /* line 13 */
            merged[l] = 1;                          /* line 14 */
        }
    }
    /* A merged layer l travels with layer l - 1; a normal one closes its group. */
    int g = 0;
    for (int l = L; l >= 1; l--) {
        layer_group[L - l] = g;
        if (!merged[l]) g++;
    }
    rc = g;
fail:
    if (rc == ORDO_ERR_NOMEM) ordo__error_set(rc, "ordo__merge_mgwfbp: out of memory");
    free(tb);
    free(tc);
    free(taub);
    free(tauc);
    free(p);
    free(merged);
    return rc;
}

/* ======================================================================================= */
/* algorithm names                                                                         */
/* ======================================================================================= */

int ordo__merge_algo_parse(const char *text, ordo__merge_algo_t *algo, int64_t *bucket_bytes)
{
    if (!text || !algo || !bucket_bytes)
        return ordo__error_set(ORDO_ERR_INVAL, "ordo__merge_algo_parse: missing argument");
    static const struct {
        const char *name;
        ordo__merge_algo_t algo;
    } names[] = {{"wfbp", ORDO_MERGE_WFBP},
                 {"none", ORDO_MERGE_WFBP},
                 {"all", ORDO_MERGE_ALL},
                 {"mgwfbp", ORDO_MERGE_MGWFBP},
                 {"optimal", ORDO_MERGE_OPTIMAL}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(text, names[i].name) == 0) {
            *algo = names[i].algo;
            *bucket_bytes = 0;
            return 0;
        }
    int64_t n;
    if (strncmp(text, "bytes:", 6) == 0 && ordo__conf_parse_bytes(text + 6, &n) == 0 && n > 0) {
        *algo = ORDO_MERGE_BYTES;
        *bucket_bytes = n;
        return 0;
    }
    return ordo__error_set(ORDO_ERR_INVAL, "'%s' is not one of optimal|mgwfbp|wfbp|all|bytes:N", text);
}

const char *ordo__merge_algo_name(ordo__merge_algo_t algo)
{
    switch (algo) {
    case ORDO_MERGE_WFBP:
        return "wfbp";
    case ORDO_MERGE_ALL:
        return "all";
    case ORDO_MERGE_MGWFBP:
        return "mgwfbp";
    case ORDO_MERGE_OPTIMAL:
        return "optimal";
    case ORDO_MERGE_BYTES:
        return "bytes";
    }
    return "?";
}
