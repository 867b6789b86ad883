/* probe: calibration pushes on the server (server/probe.h). */
#include "server/probe.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *ordo__probe_take(ordo__probe_t *p, ordo__msg_t *m, char *why, size_t size)
{
    size_t len = 0;
    const char *data = ordo__msg_data(m, 0, &len);
    if (!data || m->nframes != 1 || m->hdr.dtype != ORDO_DTYPE_F32 || len % sizeof(float) ||
        (m->hdr.flags & (ORDO_FLAG_GROUP | ORDO_FLAG_PULL)))
        return "a probe PUSH needs one float32 payload frame and no group or pull flag";
    if (len > ORDO_PROBE_MAX_BYTES) {
        snprintf(why, size, "a probe of %zu bytes is larger than the %u a server takes", len,
                 ORDO_PROBE_MAX_BYTES);
        return why;
    }
    size_t n = len / sizeof(float);
    if (n > p->cap) {
        float *sum = realloc(p->sum, n * sizeof *sum);
        if (!sum) return "out of memory for a probe";
        memset(sum + p->cap, 0, (n - p->cap) * sizeof *sum);
        p->sum = sum;
        p->cap = n;
    }
    for (size_t i = 0; i < n; i++) { /* the frame may sit unaligned in ZeroMQ's buffer */
        float g;
        memcpy(&g, data + i * sizeof g, sizeof g);
        p->sum[i] += g;
    }
    p->n++;
    return NULL;
}

void ordo__probe_free(ordo__probe_t *p)
{
    free(p->sum);
    p->sum = NULL;
    p->cap = 0;
}
