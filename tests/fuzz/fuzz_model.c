/* fuzz_model: any bytes given as a model file load into a valid model or are rejected. */
#include "common/error.h"
#include "core/model.h"

#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ordo__model_t *m = NULL;
    int rc = ordo__model_load_buffer((const char *)data, size, "fuzz.json", &m);
    if (rc == 0) {
        if (!m || m->n_ops < 1) __builtin_trap();
        ordo__model_destroy(&m);
    }
    return 0;
}
