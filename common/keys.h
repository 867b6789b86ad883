/* keys: how tensors map onto servers. A tensor (key) larger than partition_bytes is split
 * into equal chunks; chunks and small tensors are spread over the servers by bytes, largest
 * first onto the least-loaded server (ties: lowest server index, then key and chunk order).
 * A chunk larger than segment_bytes is further cut into equal segments, which stay on its
 * server: the *slices* of the map, each one message on the wire, so that a large tensor's
 * transfer, the server's sum and update, and the answer overlap piece by piece.
 * Deterministic: every node computing it gets the same map. */
#ifndef ORDO_KEYS_H
#define ORDO_KEYS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct ordo__slice {
    uint32_t key;
    uint32_t chunk; /* the slice's number within its key (0, 1, ...): the wire's "chunk" */
    int64_t offset; /* first element of the tensor in this slice */
    int64_t numel;
    int server;
} ordo__slice_t;

typedef struct ordo__keys {
    int n_keys;
    int n_servers;
    size_t elem_size;
    int64_t *numel;   /* per key */
    int *first_slice; /* per key: index of chunk 0 in slices */
    int *n_chunks;    /* per key: its slices */
    int n_slices;
    ordo__slice_t *slices; /* key-major, chunk order */
    int64_t *server_bytes;
    /* [fault] replicas: slice i lives on `replicas` servers, home[i], home[i] + 1, ... (modulo
     * n_servers); its primary (slices[i].server) is the first of them not dead */
    int replicas;
    int *home;     /* per slice: the server the partition placed it on */
    uint8_t *dead; /* per server: failed (ordo__keys_server_failed) */
} ordo__keys_t;

#define ORDO_KEYS_MAX_REPLICAS 3

/* ordo__keys_partition builds the map for n_keys tensors of numel[k] elements; chunks of at
 * most partition_bytes are placed, segments of at most segment_bytes are the slices (0, or
 * a value at or above partition_bytes: one slice per chunk). */
int ordo__keys_partition(const int64_t *numel, int n_keys, size_t elem_size, int64_t partition_bytes,
                        int64_t segment_bytes, int n_servers, ordo__keys_t **out);

/* ordo__keys_slice returns the slice index of (key, chunk), or -1 when it does not exist. */
int ordo__keys_slice(const ordo__keys_t *k, uint32_t key, uint32_t chunk);

/* ordo__keys_to_json returns the map as compact JSON text (caller frees):
 * {"servers":S,"elem":4,"numel":[...],"slices":[[key,chunk,offset,numel,server],...]}, the
 * server being each slice's home; with replicas > 1 also "replicas":R, "dead":[ranks] and
 * "primary":[each slice's current primary]. */
char *ordo__keys_to_json(const ordo__keys_t *k);

/* ordo__keys_from_json parses and validates a map sent by the scheduler: slices must tile
 * every key exactly, in key-major chunk order, with servers in range. The map's optional
 * "replicas" and "dead" members (written when replicas > 1) restore the replica sets. */
int ordo__keys_from_json(const char *json, ordo__keys_t **out);

/* ordo__keys_set_replicas makes every slice live on `replicas` servers (1 to
 * ORDO_KEYS_MAX_REPLICAS, at most n_servers): its home, the primary, and the next ones in rank
 * order as backups. ORDO_ERR_INVAL outside that range. */
int ordo__keys_set_replicas(ordo__keys_t *k, int replicas);

/* ordo__keys_replica returns slice's j-th replica (0: home) whether alive or not, or -1 when
 * j >= replicas. */
int ordo__keys_replica(const ordo__keys_t *k, int slice, int j);

/* ordo__keys_holds tells whether server is one of slice's live replicas. */
bool ordo__keys_holds(const ordo__keys_t *k, int slice, int server);

/* ordo__keys_take_map applies a replica map ({"dead": [ranks], "primary": [each slice's
 * primary]}, as ordo__keys_to_json writes them) to k, a map with replicas set and no server
 * dead yet: a restarted scheduler takes the members' map so. ORDO_ERR_PROTO naming the
 * member that does not fit. */
int ordo__keys_take_map(ordo__keys_t *k, const json_t *map);

/* ordo__keys_server_failed marks server dead and makes the first live replica of each of its
 * slices the primary (slices[i].server); *moved (may be NULL) counts those slices. Marking
 * a dead server again changes nothing. ORDO_ERR_PEERDEAD when some slice has no live replica
 * left (the map is then left unchanged). */
int ordo__keys_server_failed(ordo__keys_t *k, int server, int *moved);

/* ordo__keys_server_joined marks server alive again (a replacement joined in its place): it
 * holds its replica slots once more, as a backup; no primary changes. */
int ordo__keys_server_joined(ordo__keys_t *k, int server);

/* ordo__keys_destroy frees *k and sets it to NULL; NULL-safe. */
void ordo__keys_destroy(ordo__keys_t **k);

#endif
