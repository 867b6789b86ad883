/* intra: how the workers of one host group (client/push_hier.c) exchange tensors without the
 * servers, behind one ops table with one file per mechanism: intra_shm.c (a POSIX shared-memory
 * segment per group, CPU) and intra_nccl.c (NCCL on GPUs, built when the CUDA toolkit and NCCL
 * are found; untested on a GPU; linked in or loaded as a plugin, below). The
 * model's floats are cut into slots (the hierarchical path uses one slot per key); every slot
 * has one root, the member that talks to the servers for it. Reduce: every member puts its
 * slot of iteration iter, the root sums the L contributions once all are in. Broadcast: the
 * root publishes the slot's value of iter, every other member fetches it. The test functions
 * never block, so one thread can serve every slot in whatever order they complete; wait
 * blocks (bounded) until something changed in the group. */
#ifndef ORDO_INTRA_H
#define ORDO_INTRA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct ordo__intra ordo__intra_t;

typedef struct ordo__intra_opts {
    const char *run;      /* the run id (plan "intra.run"): names the segment */
    int group;            /* the group's index */
    int local_rank;       /* this member, 0 .. local_size - 1 (0 creates the segment) */
    int local_size;       /* members, 1 .. ORDO_INTRA_MAX_LOCAL */
    int n_slots;          /* slots */
    const int64_t *slot_off; /* [n_slots + 1] first float of each slot; the last is the total */
    int timeout_ms;       /* a member silent this long is dead; joining waits this long too */
    const int *worker_rank; /* [local_size] the members' worker ranks (for messages) or NULL */
    const int *slot_root; /* [n_slots] each slot's root (nccl needs it; shm ignores it) */
    /* relay gives every member local rank 0's `bytes` bytes through the scheduler (nccl's
     * unique ids; shm ignores it): rank 0 fills buf first, on return every member's buf holds
     * them. Every worker of the run calls it once, with the same bytes. 0 or ORDO_E*. */
    int (*relay)(void *ctx, void *buf, size_t bytes);
    void *relay_ctx;
} ordo__intra_opts_t;

#define ORDO_INTRA_MAX_LOCAL 64

typedef struct ordo__intra_ops {
    const char *name;
    int (*create)(const ordo__intra_opts_t *o, ordo__intra_t **out);
    void (*destroy)(ordo__intra_t *it);
    /* reduce: put this member's floats of slot (from src) for iteration iter */
    int (*put)(ordo__intra_t *it, int slot, const float *src, int64_t iter);
    /* reduced: has every member put slot of iter? */
    bool (*reduced)(ordo__intra_t *it, int slot, int64_t iter);
    /* sum writes the sum of the members' floats of slot into dst (after reduced) */
    void (*sum)(ordo__intra_t *it, int slot, float *dst);
    /* broadcast: the root publishes slot's value of iter from src */
    int (*publish)(ordo__intra_t *it, int slot, const float *src, int64_t iter);
    /* published: is slot's value of iter there? fetch copies it into dst (nothing when dst
     * is value_area(slot): the caller reads the value where it is shared) */
    bool (*published)(ordo__intra_t *it, int slot, int64_t iter);
    void (*fetch)(ordo__intra_t *it, int slot, float *dst);
    /* summed: has the root summed slot of iter (every member's area of it is free again)?
     * NULL when put copies (the caller's buffer is free when put returns) */
    bool (*summed)(ordo__intra_t *it, int slot, int64_t iter);
    /* area: where this member's floats of slot live in the group's memory, so a caller can
     * write its contribution there and put it with src = area (nothing copied); value_area:
     * the same for slot's published value (sum into it, publish from it). NULL (or a NULL
     * op) when the backend has no memory the caller may write. */
    float *(*area)(ordo__intra_t *it, int slot);
    float *(*value_area)(ordo__intra_t *it, int slot);
    /* generation counts the changes so far; wait blocks until it differs from seen or
     * timeout_ms passed, then checks the members: ORDO_ERR_PEERDEAD naming a dead one, else 0 */
    uint64_t (*generation)(ordo__intra_t *it);
    int (*wait)(ordo__intra_t *it, uint64_t seen, int timeout_ms);
    /* kick wakes every waiter of the group (a new wait of this member's) */
    void (*kick)(ordo__intra_t *it);
    /* barrier returns once every member reached it (bounded by the timeout) */
    int (*barrier)(ordo__intra_t *it);
} ordo__intra_ops_t;

struct ordo__intra {
    const ordo__intra_ops_t *ops;
};

extern const ordo__intra_ops_t ordo__intra_shm_ops;
/* The NCCL backend (intra_nccl.c) reaches a program in one of two ways, both only where the
 * build found the CUDA toolkit and NCCL:
 *   - linked in: the object library ordo__intra_nccl, which ordo-worker and the unit tests
 *     link. The reference below is weak, so a program without it gets NULL;
 *   - the plugin libordo_nccl.so, built beside libordo.so (and installed beside it, in the
 *     wheel too), which libordo dlopens the first time a worker asks for nccl (client/
 *     intra_plugin.h). libordo itself never links libcudart or libnccl: it loads where CUDA
 *     is absent, and a PyTorch process keeps its own NCCL (the plugin's libnccl.so.2 is the
 *     one already loaded, by soname).
 * The plugin holds intra_nccl.c and intra_nccl_host.c, no copy of ordo_common: its
 * ordo__error_set, ordo__error_text and ordo__log_write forward to libordo's through the host
 * table it is handed, so an error it sets lands in the calling thread's error state of
 * libordo (ordo_strerror_detail, the Python OrdoError) and its log lines in libordo's log. */
extern const ordo__intra_ops_t ordo__intra_nccl_ops __attribute__((weak));

/* what libordo hands the plugin: its own error and log functions (common/error.h, log.h) */
typedef struct ordo__intra_host {
    int abi; /* ORDO_INTRA_PLUGIN_ABI */
    int (*error_set)(int rc, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
    const char *(*error_text)(int rc);
    void (*log_write)(int level, const char *text); /* level: ordo__log_level_t */
    const int *log_threshold;                      /* libordo's ordo__log_threshold */
} ordo__intra_host_t;

/* the version of ordo__intra_host_t and ordo__intra_ops_t: a plugin of another version is
 * refused by name (it is built from the same tree as its libordo) */
#define ORDO_INTRA_PLUGIN_ABI 1
/* the plugin's one exported symbol: ordo__intra_nccl_plugin(host) keeps host (which must
 * outlive the plugin's use) and returns the ops, or NULL when host->abi differs */
#define ORDO_INTRA_PLUGIN_ENTRY "ordo__intra_nccl_plugin"
typedef const ordo__intra_ops_t *(*ordo__intra_plugin_fn)(const ordo__intra_host_t *host);

/* ordo__intra_new makes the backend named `backend` ("shm", "nccl") for o; ORDO_ERR_INVAL
 * naming it when this build has none ("auto" is resolved before: ordo__intra_auto). nccl is
 * the linked-in backend when the program has it, else the plugin's. The caller owns *out. */
int ordo__intra_new(const char *backend, const ordo__intra_opts_t *o, ordo__intra_t **out);

/* ordo__intra_auto is what intra.backend = auto means for this worker: "nccl" when its
 * tensors are on CUDA (device, an ordo__intra_device_t; auto counts as cpu) and the NCCL
 * backend can be loaded (linked in, or the plugin loads), else "shm". A static string. */
const char *ordo__intra_auto(int device);

/* ordo__intra_destroy frees *it and sets it to NULL; NULL-safe. */
void ordo__intra_destroy(ordo__intra_t **it);

#endif
