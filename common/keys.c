/* keys: tensor chunking, chunks cut into wire segments, and byte-balanced assignment of
 * chunks to servers. */
#include "common/keys.h"
#include "common/error.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

static ordo__keys_t *alloc_keys(int n_keys, int n_slices, int n_servers)
{
    ordo__keys_t *k = calloc(1, sizeof *k);
    if (!k) return NULL;
    k->n_keys = n_keys;
    k->n_servers = n_servers;
    k->n_slices = n_slices;
    k->numel = calloc((size_t)n_keys + 1, sizeof *k->numel);
    k->first_slice = calloc((size_t)n_keys + 1, sizeof *k->first_slice);
    k->n_chunks = calloc((size_t)n_keys + 1, sizeof *k->n_chunks);
    k->slices = calloc((size_t)n_slices + 1, sizeof *k->slices);
    k->server_bytes = calloc((size_t)n_servers + 1, sizeof *k->server_bytes);
    k->home = calloc((size_t)n_slices + 1, sizeof *k->home);
    k->dead = calloc((size_t)n_servers + 1, 1);
    k->replicas = 1;
    if (!k->numel || !k->first_slice || !k->n_chunks || !k->slices || !k->server_bytes ||
        !k->home || !k->dead)
        ordo__keys_destroy(&k);
    return k;
}

void ordo__keys_destroy(ordo__keys_t **kp)
{
    ordo__keys_t *k = *kp;
    if (!k) return;
    free(k->numel);
    free(k->home);
    free(k->dead);
    free(k->first_slice);
    free(k->n_chunks);
    free(k->slices);
    free(k->server_bytes);
    free(k);
    *kp = NULL;
}

/* a placement unit: one chunk of partition_bytes and the slices (segments) it is cut into */
typedef struct {
    int64_t numel;
    int first, n; /* its slices */
} unit_t;

static const unit_t *sort_base;

static int by_size_desc(const void *a, const void *b)
{
    const unit_t *x = &sort_base[*(const int *)a], *y = &sort_base[*(const int *)b];
    if (x->numel != y->numel) return x->numel > y->numel ? -1 : 1;
    return *(const int *)a - *(const int *)b; /* key-major order: stable */
}

/* n equal parts of total (the first total % n one element larger) */
static int64_t part(int64_t total, int64_t n, int64_t i)
{
    return total / n + (i < total % n ? 1 : 0);
}

static int64_t ceil_div(int64_t a, int64_t b)
{
    return (a + b - 1) / b;
}

int ordo__keys_partition(const int64_t *numel, int n_keys, size_t elem_size, int64_t partition_bytes,
                        int64_t segment_bytes, int n_servers, ordo__keys_t **out)
{
    if (n_keys < 0 || n_servers < 1 || elem_size == 0 || partition_bytes < (int64_t)elem_size ||
        segment_bytes < 0)
        return ordo__error_set(ORDO_ERR_INVAL, "keys: bad partition arguments");
    int64_t per_chunk = partition_bytes / (int64_t)elem_size;
    int64_t per_seg = segment_bytes / (int64_t)elem_size;
    if (per_seg < 1 || per_seg > per_chunk) per_seg = per_chunk;
    int64_t total = 0, units = 0;
    for (int i = 0; i < n_keys; i++) {
        if (numel[i] <= 0) return ordo__error_set(ORDO_ERR_INVAL, "keys: tensor %d is empty", i);
        int64_t nc = ceil_div(numel[i], per_chunk);
        units += nc;
        for (int64_t c = 0; c < nc; c++)
            total += ceil_div(part(numel[i], nc, c), per_seg);
        if (total > INT32_MAX) return ordo__error_set(ORDO_ERR_RANGE, "keys: too many chunks");
    }
    ordo__keys_t *k = alloc_keys(n_keys, (int)total, n_servers);
    unit_t *unit = malloc(sizeof *unit * ((size_t)units + 1));
    int *idx = malloc(sizeof *idx * ((size_t)units + 1));
    if (!k || !unit || !idx) {
        ordo__keys_destroy(&k);
        free(unit);
        free(idx);
        return ORDO_ERR_NOMEM;
    }
    k->elem_size = elem_size;
    int s = 0, u = 0;
    for (int i = 0; i < n_keys; i++) {
        int64_t nc = ceil_div(numel[i], per_chunk), off = 0;
        k->numel[i] = numel[i];
        k->first_slice[i] = s;
        for (int64_t c = 0; c < nc; c++) {
            int64_t cn = part(numel[i], nc, c), ns = ceil_div(cn, per_seg);
            unit[u] = (unit_t){.numel = cn, .first = s, .n = (int)ns};
            idx[u] = u;
            u++;
            for (int64_t g = 0; g < ns; g++) {
                ordo__slice_t *sl = &k->slices[s];
                sl->key = (uint32_t)i;
                sl->chunk = (uint32_t)(s - k->first_slice[i]);
                sl->offset = off;
                sl->numel = part(cn, ns, g);
                off += sl->numel;
                s++;
            }
        }
        k->n_chunks[i] = s - k->first_slice[i];
    }
    sort_base = unit;
    qsort(idx, (size_t)units, sizeof *idx, by_size_desc);
    for (int64_t i = 0; i < units; i++) {
        const unit_t *un = &unit[idx[i]];
        int best = 0;
        for (int srv = 1; srv < n_servers; srv++)
            if (k->server_bytes[srv] < k->server_bytes[best]) best = srv;
        for (int j = 0; j < un->n; j++)
            k->slices[un->first + j].server = k->home[un->first + j] = best;
        k->server_bytes[best] += un->numel * (int64_t)elem_size;
    }
    free(unit);
    free(idx);
    *out = k;
    return 0;
}

int ordo__keys_slice(const ordo__keys_t *k, uint32_t key, uint32_t chunk)
{
    if (key >= (uint32_t)k->n_keys || chunk >= (uint32_t)k->n_chunks[key]) return -1;
    return k->first_slice[key] + (int)chunk;
}

char *ordo__keys_to_json(const ordo__keys_t *k)
{
    json_t *root = json_object(), *numel = json_array(), *slices = json_array();
    json_object_set_new(root, "servers", json_integer(k->n_servers));
    json_object_set_new(root, "elem", json_integer((json_int_t)k->elem_size));
    for (int i = 0; i < k->n_keys; i++)
        json_array_append_new(numel, json_integer(k->numel[i]));
    for (int i = 0; i < k->n_slices; i++) {
        const ordo__slice_t *s = &k->slices[i];
        json_array_append_new(slices, json_pack("[IIIII]", (json_int_t)s->key, (json_int_t)s->chunk,
                                                (json_int_t)s->offset, (json_int_t)s->numel,
                                                (json_int_t)k->home[i]));
    }
    if (k->replicas > 1) {
        json_t *dead = json_array();
        for (int i = 0; i < k->n_servers; i++)
            if (k->dead[i]) json_array_append_new(dead, json_integer(i));
        json_t *primary = json_array();
        for (int i = 0; i < k->n_slices; i++)
            json_array_append_new(primary, json_integer(k->slices[i].server));
        json_object_set_new(root, "replicas", json_integer(k->replicas));
        json_object_set_new(root, "dead", dead);
        json_object_set_new(root, "primary", primary);
    }
    json_object_set_new(root, "numel", numel);
    json_object_set_new(root, "slices", slices);
    char *text = json_dumps(root, JSON_COMPACT);
    json_decref(root);
    return text;
}

/* the map's "replicas" and "dead" members, when there */
static int replicas_from_json(ordo__keys_t *k, json_t *root)
{
    json_t *r = json_object_get(root, "replicas"), *dead = json_object_get(root, "dead");
    if (!r) return 0;
    if (!json_is_integer(r) || ordo__keys_set_replicas(k, (int)json_integer_value(r)) != 0)
        return ordo__error_set(ORDO_ERR_PROTO, "key map: \"replicas\" is not 1 to %d (and at most "
                              "the %d servers)", ORDO_KEYS_MAX_REPLICAS, k->n_servers);
    if (dead && !json_is_array(dead))
        return ordo__error_set(ORDO_ERR_PROTO, "key map: \"dead\" is not an array");
    for (size_t i = 0; i < json_array_size(dead); i++) {
        json_t *d = json_array_get(dead, i);
        if (!json_is_integer(d) || json_integer_value(d) < 0 ||
            json_integer_value(d) >= k->n_servers ||
            ordo__keys_server_failed(k, (int)json_integer_value(d), NULL) != 0)
            return ordo__error_set(ORDO_ERR_PROTO, "key map: dead[%zu] is not a server whose slices "
                                  "have a live replica", i);
    }
    /* the current primaries (they stay where they are when a replacement joins) */
    json_t *primary = json_object_get(root, "primary");
    if (!primary) return 0;
    if (!json_is_array(primary) || (int)json_array_size(primary) != k->n_slices)
        return ordo__error_set(ORDO_ERR_PROTO, "key map: \"primary\" is not an array of %d servers",
                              k->n_slices);
    for (int i = 0; i < k->n_slices; i++) {
        json_t *p = json_array_get(primary, (size_t)i);
        int srv = json_is_integer(p) ? (int)json_integer_value(p) : -1;
        if (srv < 0 || srv >= k->n_servers || !ordo__keys_holds(k, i, srv))
            return ordo__error_set(ORDO_ERR_PROTO, "key map: primary[%d] is not a live replica", i);
        k->server_bytes[k->slices[i].server] -= k->slices[i].numel * (int64_t)k->elem_size;
        k->server_bytes[srv] += k->slices[i].numel * (int64_t)k->elem_size;
        k->slices[i].server = srv;
    }
    return 0;
}

int ordo__keys_take_map(ordo__keys_t *k, const json_t *map)
{
    json_t *root = json_object();
    if (!root) return ORDO_ERR_NOMEM;
    json_object_set_new(root, "replicas", json_integer(k->replicas));
    if (json_object_get(map, "dead")) json_object_set(root, "dead", json_object_get(map, "dead"));
    if (json_object_get(map, "primary"))
        json_object_set(root, "primary", json_object_get(map, "primary"));
    int rc = replicas_from_json(k, root);
    json_decref(root);
    return rc;
}

int ordo__keys_from_json(const char *text, ordo__keys_t **out)
{
    json_error_t jerr;
    ordo__keys_t *k = NULL;
    int rc = ORDO_ERR_PROTO;
    json_t *root = json_loads(text, 0, &jerr);
    if (!root) return ordo__error_set(ORDO_ERR_PROTO, "key map: invalid JSON: %s", jerr.text);
    json_t *numel = json_object_get(root, "numel"), *slices = json_object_get(root, "slices");
    json_t *servers = json_object_get(root, "servers"), *elem = json_object_get(root, "elem");
    if (!json_is_array(numel) || !json_is_array(slices) || !json_is_integer(servers) ||
        !json_is_integer(elem) || json_integer_value(servers) < 1 ||
        json_integer_value(servers) > 65536 || json_integer_value(elem) < 1 ||
        json_integer_value(elem) > 16) {
        rc = ordo__error_set(ORDO_ERR_PROTO, "key map: missing or bad servers/elem/numel/slices");
        goto done;
    }
    int nk = (int)json_array_size(numel), ns = (int)json_array_size(slices);
    k = alloc_keys(nk, ns, (int)json_integer_value(servers));
    if (!k) {
        rc = ORDO_ERR_NOMEM;
        goto done;
    }
    k->elem_size = (size_t)json_integer_value(elem);
    for (int i = 0; i < nk; i++) {
        json_t *v = json_array_get(numel, (size_t)i);
        if (!json_is_integer(v) || json_integer_value(v) <= 0) {
            rc = ordo__error_set(ORDO_ERR_PROTO, "key map: numel[%d] is not a positive integer", i);
            goto done;
        }
        k->numel[i] = json_integer_value(v);
        k->first_slice[i] = -1;
    }
    int64_t next_off = 0;
    int cur = -1;
    for (int i = 0; i < ns; i++) {
        json_int_t key, chunk, off, n, srv;
        if (json_unpack(json_array_get(slices, (size_t)i), "[IIIII]", &key, &chunk, &off, &n,
                        &srv) != 0) {
            rc = ordo__error_set(ORDO_ERR_PROTO,
                                "key map: slices[%d] is not [key,chunk,offset,numel,server]", i);
            goto done;
        }
        int ok = key >= 0 && key < nk && srv >= 0 && srv < k->n_servers && n > 0;
        if (ok && key != cur) { /* a new key must start at chunk 0, offset 0, after the last */
            ok = key == cur + 1 && chunk == 0 && off == 0 && (cur < 0 || next_off == k->numel[cur]);
            if (ok) {
                cur = (int)key;
                k->first_slice[cur] = i;
                next_off = 0;
            }
        }
        ok = ok && chunk == k->n_chunks[cur] && off == next_off && off + n <= k->numel[cur];
        if (!ok) {
            rc = ordo__error_set(ORDO_ERR_PROTO, "key map: slices[%d] does not tile the tensors", i);
            goto done;
        }
        k->n_chunks[cur]++;
        next_off += n;
        ordo__slice_t *s = &k->slices[i];
        s->key = (uint32_t)key;
        s->chunk = (uint32_t)chunk;
        s->offset = off;
        s->numel = n;
        s->server = k->home[i] = (int)srv;
        k->server_bytes[srv] += n * (int64_t)k->elem_size;
    }
    if (cur != nk - 1 || (nk > 0 && next_off != k->numel[cur])) {
        rc = ordo__error_set(ORDO_ERR_PROTO, "key map: slices do not cover every tensor");
        goto done;
    }
    if ((rc = replicas_from_json(k, root)) != 0) goto done;
    *out = k;
    k = NULL;
    rc = 0;
done:
    ordo__keys_destroy(&k);
    json_decref(root);
    return rc;
}

int ordo__keys_set_replicas(ordo__keys_t *k, int replicas)
{
    if (replicas < 1 || replicas > ORDO_KEYS_MAX_REPLICAS || replicas > k->n_servers)
        return ordo__error_set(ORDO_ERR_INVAL, "%d replicas (1 to %d, at most the %d servers)",
                              replicas, ORDO_KEYS_MAX_REPLICAS, k->n_servers);
    k->replicas = replicas;
    return 0;
}

int ordo__keys_replica(const ordo__keys_t *k, int slice, int j)
{
    if (j < 0 || j >= k->replicas) return -1;
    return (k->home[slice] + j) % k->n_servers;
}

bool ordo__keys_holds(const ordo__keys_t *k, int slice, int server)
{
    for (int j = 0; j < k->replicas; j++) {
        int r = ordo__keys_replica(k, slice, j);
        if (r == server) return !k->dead[r];
    }
    return false;
}

/* the first live replica of slice with `server` also counted as dead; -1 when none */
static int first_live(const ordo__keys_t *k, int slice, int server)
{
    for (int j = 0; j < k->replicas; j++) {
        int r = ordo__keys_replica(k, slice, j);
        if (r != server && !k->dead[r]) return r;
    }
    return -1;
}

int ordo__keys_server_failed(ordo__keys_t *k, int server, int *moved)
{
    int n = 0;
    if (moved) *moved = 0;
    if (server < 0 || server >= k->n_servers)
        return ordo__error_set(ORDO_ERR_INVAL, "no server %d", server);
    if (k->dead[server]) return 0;
    for (int i = 0; i < k->n_slices; i++)
        if (first_live(k, i, server) < 0)
            return ordo__error_set(ORDO_ERR_PEERDEAD, "key %u chunk %u has no live replica without "
                                  "server %d", k->slices[i].key, k->slices[i].chunk, server);
    k->dead[server] = 1;
    for (int i = 0; i < k->n_slices; i++) {
        if (k->slices[i].server != server) continue;
        int to = first_live(k, i, -1);
        k->server_bytes[server] -= k->slices[i].numel * (int64_t)k->elem_size;
        k->server_bytes[to] += k->slices[i].numel * (int64_t)k->elem_size;
        k->slices[i].server = to;
        n++;
    }
    if (moved) *moved = n;
    return 0;
}

int ordo__keys_server_joined(ordo__keys_t *k, int server)
{
    if (server < 0 || server >= k->n_servers)
        return ordo__error_set(ORDO_ERR_INVAL, "no server %d", server);
    k->dead[server] = 0;
    return 0;
}
