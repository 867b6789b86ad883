/* fuzz_merge_plan: any text given as an ordo-merge/1 plan for a model (conf/models/alexnet.json,
 * ORDO_FUZZ_MODEL) is loaded into a plan that orders every parameter exactly once in groups
 * that cover them, or is rejected. */
#include "common/error.h"
#include "core/model.h"
#include "planner/merge.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(cond)                                                                        \
    do {                                                                                   \
        if (!(cond)) __builtin_trap();                                                     \
    } while (0)

static ordo__model_t *model(void)
{
    static ordo__model_t *m;
    if (!m && ordo__model_load_file(ORDO_FUZZ_MODEL, &m) != 0) __builtin_trap();
    return m;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const ordo__model_t *m = model();
    char *text = malloc(size + 1); /* the loader takes a C string */
    memcpy(text, data, size);
    text[size] = '\0';
    ordo__merge_plan_t *p = NULL;
    int rc = ordo__merge_plan_load_string(text, "fuzz.json", m, &p);
    if (rc == 0) {
        CHECK(p && p->n_params == m->n_params && p->n_groups >= 1);
        CHECK(p->group_start[0] == 0 && p->group_start[p->n_groups] == p->n_params);
        int *seen = calloc((size_t)m->n_params, sizeof *seen);
        for (int g = 0; g < p->n_groups; g++) {
            CHECK(p->group_start[g] < p->group_start[g + 1]);
            for (int k = p->group_start[g]; k < p->group_start[g + 1]; k++) {
                int i = p->order[k];
                CHECK(i >= 0 && i < m->n_params && !seen[i]++);
                CHECK(p->group_of_param[i] == g);
            }
        }
        free(seen);
        CHECK(isfinite(p->a) && p->a >= 0 && isfinite(p->b) && p->b >= 0);
        /* what the writer makes of it loads back into the same groups */
        char *json = NULL;
        CHECK(ordo__merge_plan_to_json(p, m, &json) == 0);
        ordo__merge_plan_t *q = NULL;
        CHECK(ordo__merge_plan_load_string(json, "again.json", m, &q) == 0);
        CHECK(q->n_groups == p->n_groups);
        CHECK(memcmp(q->order, p->order, sizeof(int) * (size_t)p->n_params) == 0);
        CHECK(memcmp(q->group_start, p->group_start, sizeof(int) * (size_t)(p->n_groups + 1)) == 0);
        ordo__merge_plan_destroy(&q);
        free(json);
        ordo__merge_plan_destroy(&p);
    } else {
        CHECK(rc < 0 && p == NULL);
    }
    free(text);
    return 0;
}
