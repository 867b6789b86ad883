/* fuzz_wire: header decoding, and a whole multipart message (first bytes = frame count and
 * sizes) through a real DEALER/ROUTER pair, must reject or accept without crashing. */
#include "common/wire.h"

#include <stdint.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ordo__wire_hdr_t h;
    if (ordo__wire_decode_hdr(data, size, &h) == 0) {
        char buf[ORDO_WIRE_MAX_HDR];
        size_t len;
        /* what decodes must encode again to the same fields */
        if (ordo__wire_encode_hdr(&h, buf, sizeof buf, &len) != 0) __builtin_trap();
        ordo__wire_hdr_t g;
        if (ordo__wire_decode_hdr(buf, len, &g) != 0 || g.type != h.type || g.key != h.key ||
            g.nframes != h.nframes)
            __builtin_trap();
    }
    return 0;
}
