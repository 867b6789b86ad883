/* fuzz_conf: any INI text is parsed or rejected with a file:line reason, never a crash. */
#include "common/conf.h"
#include "common/error.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = malloc(size + 1);
    memcpy(text, data, size);
    text[size] = '\0';
    ordo__conf_t c;
    ordo__conf_defaults(&c);
    int rc = ordo__conf_load_string(&c, text, "fuzz.ini");
    if (rc != 0 && strncmp(ordo__error_detail(), "fuzz.ini:", 9) != 0) __builtin_trap();
    free(text);
    return 0;
}
