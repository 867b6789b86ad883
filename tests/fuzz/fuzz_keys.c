/* fuzz_keys: a key map from an untrusted WELCOME is validated or rejected. */
#include "common/keys.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    memcpy(text, data, size);
    text[size] = '\0';
    ordo__keys_t *k = NULL;
    if (ordo__keys_from_json(text, &k) == 0) {
        /* a map that validates tiles every key exactly */
        for (int i = 0; i < k->n_keys; i++)
            if (ordo__keys_slice(k, (uint32_t)i, 0) < 0) __builtin_trap();
        ordo__keys_destroy(&k);
    }
    free(text);
    return 0;
}
