/* merged: checking and splitting merged pushes on the server. */
#include "server/merged.h"
#include "common/error.h"

#include <stdlib.h>
#include <string.h>

struct ordo__merged {
    const ordo__keys_t *keys;
    int server;
    int n_local;     /* slices on this server: the most one message may carry */
    uint32_t *stamp; /* per slice: the split that last saw it (duplicate check) */
    uint32_t epoch;
    int *slice;     /* [n_slices] entries of the last split */
    size_t *offset; /* [n_slices] */
};

int ordo__merged_new(const ordo__keys_t *keys, int server, ordo__merged_t **out)
{
    ordo__merged_t *g = calloc(1, sizeof *g);
    if (!g) return ORDO_ERR_NOMEM;
    g->keys = keys;
    g->server = server;
    for (int i = 0; i < keys->n_slices; i++)
        if (keys->slices[i].server == server) g->n_local++;
    g->stamp = calloc((size_t)keys->n_slices + 1, sizeof *g->stamp);
    /* room for every slice: with replicas a promotion gives this server more */
    g->slice = malloc(sizeof *g->slice * ((size_t)keys->n_slices + 1));
    g->offset = malloc(sizeof *g->offset * ((size_t)keys->n_slices + 1));
    if (!g->stamp || !g->slice || !g->offset) {
        ordo__merged_destroy(&g);
        return ORDO_ERR_NOMEM;
    }
    *out = g;
    return 0;
}

void ordo__merged_destroy(ordo__merged_t **gp)
{
    ordo__merged_t *g = *gp;
    if (!g) return;
    free(g->stamp);
    free(g->slice);
    free(g->offset);
    free(g);
    *gp = NULL;
}

int ordo__merged_split(ordo__merged_t *g, const void *index, size_t index_len, size_t payload_len,
                      int *n)
{
    const ordo__keys_t *k = g->keys;
    if (!index || index_len == 0 || index_len % sizeof(uint32_t) != 0)
        return ordo__error_set(ORDO_ERR_PROTO,
                              "merged push: index of %zu bytes is not a non-empty "
                              "list of uint32 slice ids",
                              index_len);
    size_t count = index_len / sizeof(uint32_t);
    if (count > (size_t)g->n_local) { /* a promotion ([fault] replicas) may have added some */
        g->n_local = 0;
        for (int i = 0; i < k->n_slices; i++)
            if (k->slices[i].server == g->server) g->n_local++;
    }
    if (count > (size_t)g->n_local)
        return ordo__error_set(ORDO_ERR_PROTO, "merged push: %zu slices, but this server holds only %d",
                              count, g->n_local);
    if (++g->epoch == 0) { /* wrapped: forget every old stamp */
        memset(g->stamp, 0, sizeof *g->stamp * (size_t)k->n_slices);
        g->epoch = 1;
    }
    size_t off = 0;
    for (size_t i = 0; i < count; i++) {
        uint32_t id;
        memcpy(&id, (const char *)index + i * sizeof id, sizeof id);
        if (id >= (uint32_t)k->n_slices)
            return ordo__error_set(ORDO_ERR_PROTO,
                                  "merged push: entry %zu: no slice %u (the map has %d)", i, id,
                                  k->n_slices);
        if (k->slices[id].server != g->server)
            return ordo__error_set(ORDO_ERR_PROTO,
                                  "merged push: entry %zu: slice %u lives on server %d", i, id,
                                  k->slices[id].server);
        if (g->stamp[id] == g->epoch)
            return ordo__error_set(ORDO_ERR_PROTO, "merged push: entry %zu: slice %u is listed twice",
                                  i, id);
        g->stamp[id] = g->epoch;
        g->slice[i] = (int)id;
        g->offset[i] = off;
        off += (size_t)k->slices[id].numel * k->elem_size;
    }
    if (off != payload_len)
        return ordo__error_set(ORDO_ERR_PROTO,
                              "merged push: payload of %zu bytes, its %zu slices need %zu",
                              payload_len, count, off);
    *n = (int)count;
    return 0;
}

int ordo__merged_slice(const ordo__merged_t *g, int i)
{
    return g->slice[i];
}

size_t ordo__merged_offset(const ordo__merged_t *g, int i)
{
    return g->offset[i];
}
