/* intra_nccl: the NCCL backend of client/intra.h (built when the CUDA toolkit and NCCL are
 * found, linked into ordo-worker and as libordo's plugin libordo_nccl.so; UNTESTED on a GPU:
 * written and compiled on a machine without one). Every member
 * keeps device buffers of the model (its contributions, the owners' sums, the values) and
 * pinned host copies. Reduce: put copies a slot to the device and issues an ncclReduce to the
 * slot's root on the reduce communicator's stream; members put in the same backward order, as
 * NCCL requires. Broadcast: one communicator and stream per root, so waiting for one root's
 * value never blocks another's; each root broadcasts its slots in ascending slot order (a
 * value that arrives early is held until the ones before it went), and every other member
 * posts its receives in the same order the first time it asks whether a slot is there. A
 * CUDA event per slot and phase says when it completed. The unique ids (one per
 * communicator) are made by local rank 0 and relayed to the others through ordo's scheduler
 * (the opts' relay). A member that dies is not detected here: NCCL calls then hang on the
 * device, and the scheduler's heartbeat ends the run. */
#include "client/intra.h"
#include "common/error.h"
#include "common/log.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAGIC 0x4f52444f4e43434cull /* "ORDONCCL" */

/* what local rank 0 relays to the others */
typedef struct {
    uint64_t magic;
    int32_t local_size, pad;
    ncclUniqueId id[ORDO_INTRA_MAX_LOCAL + 1]; /* [0] reduce, [1 + r] root r's broadcasts */
} ids_t;

typedef struct {
    ordo__intra_t base;
    int lr, L, n_slots, dev;
    int64_t *off, numel;
    int *root;
    ncclComm_t red, bc[ORDO_INTRA_MAX_LOCAL];
    cudaStream_t s_red, s_bc[ORDO_INTRA_MAX_LOCAL];
    float *d_in, *d_sum, *d_val; /* device */
    float *h_sum, *h_val;        /* pinned host */
    cudaEvent_t *ev_red, *ev_bc;
    int64_t *red_iter, *bc_iter; /* the iteration each slot's last operation is for (atomic) */
    int64_t *ready_iter;         /* root: published but not yet broadcast */
    int *next;                   /* [L] per root: the position in its slot list to issue next */
    int **slots_of, *n_of;       /* per root: its slots, ascending */
    int64_t *round;              /* [L] per root: the iteration of its current round */
    uint64_t gen;
} nc_t;

static int cuda_err(cudaError_t e, const char *what)
{
    return ordo__error_set(ORDO_ERR_IO, "intra nccl: %s: %s", what, cudaGetErrorString(e));
}

static int nccl_err(ncclResult_t r, const char *what)
{
    return ordo__error_set(ORDO_ERR_IO, "intra nccl: %s: %s", what, ncclGetErrorString(r));
}

/* the unique ids through the scheduler: local rank 0 makes them, the relay (push_hier's
 * broadcast through the scheduler) hands them to the others; no MPI, no shared file */
static int exchange_ids(const ordo__intra_opts_t *o, ids_t *ids)
{
    if (!o->relay)
        return ordo__error_set(ORDO_ERR_INVAL, "intra nccl: no relay for the unique ids (the "
                              "hierarchical push path passes the scheduler's)");
    memset(ids, 0, sizeof *ids);
    if (o->local_rank == 0) {
        for (int i = 0; i <= o->local_size; i++) {
            ncclResult_t r = ncclGetUniqueId(&ids->id[i]);
            if (r != ncclSuccess) return nccl_err(r, "ncclGetUniqueId");
        }
        ids->magic = MAGIC;
        ids->local_size = o->local_size;
    }
    int rc = o->relay(o->relay_ctx, ids, sizeof *ids);
    if (rc) return rc;
    if (ids->magic != MAGIC || ids->local_size != o->local_size)
        return ordo__error_set(ORDO_ERR_PROTO, "intra nccl: the relayed ids are for %d members, "
                              "this group has %d", ids->local_size, o->local_size);
    return 0;
}

static void nc_destroy(ordo__intra_t *it)
{
    nc_t *n = (nc_t *)it;
    cudaSetDevice(n->dev);
    if (n->red) ncclCommDestroy(n->red);
    for (int r = 0; r < n->L; r++) {
        if (n->bc[r]) ncclCommDestroy(n->bc[r]);
        if (n->s_bc[r]) cudaStreamDestroy(n->s_bc[r]);
        free(n->slots_of ? n->slots_of[r] : NULL);
    }
    if (n->s_red) cudaStreamDestroy(n->s_red);
    for (int s = 0; n->ev_red && s < n->n_slots; s++) {
        if (n->ev_red[s]) cudaEventDestroy(n->ev_red[s]);
        if (n->ev_bc[s]) cudaEventDestroy(n->ev_bc[s]);
    }
    cudaFree(n->d_in);
    cudaFree(n->d_sum);
    cudaFree(n->d_val);
    cudaFreeHost(n->h_sum);
    cudaFreeHost(n->h_val);
    free(n->ev_red);
    free(n->ev_bc);
    free(n->red_iter);
    free(n->bc_iter);
    free(n->ready_iter);
    free(n->next);
    free(n->slots_of);
    free(n->n_of);
    free(n->round);
    free(n->off);
    free(n->root);
    free(n);
}

static int nc_create(const ordo__intra_opts_t *o, ordo__intra_t **out)
{
    if (!o->slot_root || o->local_size < 1 || o->local_size > ORDO_INTRA_MAX_LOCAL)
        return ordo__error_set(ORDO_ERR_INVAL, "intra nccl: needs each slot's root, 1..%d members",
                              ORDO_INTRA_MAX_LOCAL);
    int count = 0;
    cudaError_t ce = cudaGetDeviceCount(&count);
    if (ce != cudaSuccess || count < 1)
        return ordo__error_set(ORDO_ERR_NOTSUP, "intra.backend nccl: no CUDA device (%s)",
                              ce != cudaSuccess ? cudaGetErrorString(ce) : "none found");
    nc_t *n = calloc(1, sizeof *n);
    if (!n) return ORDO_ERR_NOMEM;
    n->lr = o->local_rank;
    n->L = o->local_size;
    n->n_slots = o->n_slots;
    n->dev = o->local_rank % count;
    size_t S = (size_t)o->n_slots;
    int rc = ORDO_ERR_NOMEM;
    n->off = malloc((S + 1) * sizeof *n->off);
    n->root = malloc(S * sizeof *n->root);
    n->ev_red = calloc(S, sizeof *n->ev_red);
    n->ev_bc = calloc(S, sizeof *n->ev_bc);
    n->red_iter = malloc(S * sizeof *n->red_iter);
    n->bc_iter = malloc(S * sizeof *n->bc_iter);
    n->ready_iter = malloc(S * sizeof *n->ready_iter);
    n->next = calloc((size_t)n->L, sizeof *n->next);
    n->slots_of = calloc((size_t)n->L, sizeof *n->slots_of);
    n->n_of = calloc((size_t)n->L, sizeof *n->n_of);
    n->round = calloc((size_t)n->L, sizeof *n->round);
    if (!n->off || !n->root || !n->ev_red || !n->ev_bc || !n->red_iter || !n->bc_iter ||
        !n->ready_iter || !n->next || !n->slots_of || !n->n_of || !n->round)
        goto fail;
    memcpy(n->off, o->slot_off, (S + 1) * sizeof *n->off);
    memcpy(n->root, o->slot_root, S * sizeof *n->root);
    n->numel = n->off[S];
    for (size_t s = 0; s < S; s++) {
        n->red_iter[s] = n->bc_iter[s] = n->ready_iter[s] = -1;
        n->n_of[n->root[s]]++;
    }
    for (int r = 0; r < n->L; r++) {
        n->slots_of[r] = malloc(sizeof(int) * (size_t)(n->n_of[r] + 1));
        if (!n->slots_of[r]) goto fail;
        n->n_of[r] = 0;
    }
    for (size_t s = 0; s < S; s++) n->slots_of[n->root[s]][n->n_of[n->root[s]]++] = (int)s;
    ids_t ids;
    if ((rc = exchange_ids(o, &ids)) != 0) goto fail;
    if ((ce = cudaSetDevice(n->dev)) != cudaSuccess) {
        rc = cuda_err(ce, "cudaSetDevice");
        goto fail;
    }
    size_t bytes = sizeof(float) * (size_t)(n->numel + 1);
    if ((ce = cudaMalloc((void **)&n->d_in, bytes)) != cudaSuccess ||
        (ce = cudaMalloc((void **)&n->d_sum, bytes)) != cudaSuccess ||
        (ce = cudaMalloc((void **)&n->d_val, bytes)) != cudaSuccess ||
        (ce = cudaHostAlloc((void **)&n->h_sum, bytes, cudaHostAllocDefault)) != cudaSuccess ||
        (ce = cudaHostAlloc((void **)&n->h_val, bytes, cudaHostAllocDefault)) != cudaSuccess ||
        (ce = cudaStreamCreateWithFlags(&n->s_red, cudaStreamNonBlocking)) != cudaSuccess) {
        rc = cuda_err(ce, "device buffers");
        goto fail;
    }
    for (size_t s = 0; s < S; s++)
        if ((ce = cudaEventCreateWithFlags(&n->ev_red[s], cudaEventDisableTiming)) != cudaSuccess ||
            (ce = cudaEventCreateWithFlags(&n->ev_bc[s], cudaEventDisableTiming)) != cudaSuccess) {
            rc = cuda_err(ce, "cudaEventCreate");
            goto fail;
        }
    ncclResult_t r = ncclCommInitRank(&n->red, n->L, ids.id[0], n->lr);
    for (int m = 0; r == ncclSuccess && m < n->L; m++) {
        if ((ce = cudaStreamCreateWithFlags(&n->s_bc[m], cudaStreamNonBlocking)) != cudaSuccess) {
            rc = cuda_err(ce, "cudaStreamCreate");
            goto fail;
        }
        r = ncclCommInitRank(&n->bc[m], n->L, ids.id[1 + m], n->lr);
    }
    if (r != ncclSuccess) {
        rc = nccl_err(r, "ncclCommInitRank");
        goto fail;
    }
    n->base.ops = &ordo__intra_nccl_ops;
    *out = &n->base;
    return 0;
fail:
    nc_destroy(&n->base);
    return rc;
}

static int nc_put(ordo__intra_t *it, int slot, const float *src, int64_t iter)
{
    nc_t *n = (nc_t *)it;
    int64_t off = n->off[slot], cnt = n->off[slot + 1] - off;
    int root = n->root[slot];
    cudaSetDevice(n->dev);
    cudaError_t ce = cudaMemcpyAsync(n->d_in + off, src, sizeof(float) * (size_t)cnt,
                                     cudaMemcpyHostToDevice, n->s_red);
    if (ce != cudaSuccess) return cuda_err(ce, "put: copy to the device");
    ncclResult_t r = ncclReduce(n->d_in + off, n->d_sum + off, (size_t)cnt, ncclFloat, ncclSum,
                                root, n->red, n->s_red);
    if (r != ncclSuccess) return nccl_err(r, "ncclReduce");
    if (root == n->lr &&
        (ce = cudaMemcpyAsync(n->h_sum + off, n->d_sum + off, sizeof(float) * (size_t)cnt,
                              cudaMemcpyDeviceToHost, n->s_red)) != cudaSuccess)
        return cuda_err(ce, "put: copy the sum to the host");
    if ((ce = cudaEventRecord(n->ev_red[slot], n->s_red)) != cudaSuccess)
        return cuda_err(ce, "cudaEventRecord");
    __atomic_store_n(&n->red_iter[slot], iter, __ATOMIC_RELEASE);
    __atomic_add_fetch(&n->gen, 1, __ATOMIC_RELAXED);
    return 0;
}

static bool event_done(nc_t *n, cudaEvent_t ev)
{
    cudaSetDevice(n->dev);
    return cudaEventQuery(ev) == cudaSuccess;
}

static bool nc_reduced(ordo__intra_t *it, int slot, int64_t iter)
{
    nc_t *n = (nc_t *)it;
    return __atomic_load_n(&n->red_iter[slot], __ATOMIC_ACQUIRE) == iter &&
           event_done(n, n->ev_red[slot]);
}

static void nc_sum(ordo__intra_t *it, int slot, float *dst)
{
    nc_t *n = (nc_t *)it;
    int64_t off = n->off[slot];
    memcpy(dst, n->h_sum + off, sizeof(float) * (size_t)(n->off[slot + 1] - off));
}

/* one broadcast of root r's slot on r's stream: the root sends its host value, the others
 * receive into theirs */
static int broadcast(nc_t *n, int r, int slot, int64_t iter)
{
    int64_t off = n->off[slot], cnt = n->off[slot + 1] - off;
    size_t b = sizeof(float) * (size_t)cnt;
    cudaError_t ce = cudaSuccess;
    cudaSetDevice(n->dev);
    if (r == n->lr)
        ce = cudaMemcpyAsync(n->d_val + off, n->h_val + off, b, cudaMemcpyHostToDevice, n->s_bc[r]);
    if (ce != cudaSuccess) return cuda_err(ce, "publish: copy to the device");
    ncclResult_t res = ncclBroadcast(n->d_val + off, n->d_val + off, (size_t)cnt, ncclFloat, r,
                                     n->bc[r], n->s_bc[r]);
    if (res != ncclSuccess) return nccl_err(res, "ncclBroadcast");
    if (r != n->lr &&
        (ce = cudaMemcpyAsync(n->h_val + off, n->d_val + off, b, cudaMemcpyDeviceToHost,
                              n->s_bc[r])) != cudaSuccess)
        return cuda_err(ce, "fetch: copy to the host");
    if ((ce = cudaEventRecord(n->ev_bc[slot], n->s_bc[r])) != cudaSuccess)
        return cuda_err(ce, "cudaEventRecord");
    __atomic_store_n(&n->bc_iter[slot], iter, __ATOMIC_RELEASE);
    return 0;
}

/* root r's slots go in ascending order, one round per iteration: issue every one whose turn
 * came and whose value is there (the root: published; the others: asked for) */
static int advance(nc_t *n, int r, int slot, int64_t iter)
{
    int rc = 0;
    if (n->next[r] == 0) n->round[r] = iter;
    while (!rc && n->next[r] < n->n_of[r]) {
        int s = n->slots_of[r][n->next[r]];
        if (n->ready_iter[s] != n->round[r]) break;
        rc = broadcast(n, r, s, n->round[r]);
        n->next[r] = (n->next[r] + 1) % n->n_of[r];
        if (n->next[r] == 0) break; /* the round is over */
    }
    (void)slot;
    return rc;
}

static int nc_publish(ordo__intra_t *it, int slot, const float *src, int64_t iter)
{
    nc_t *n = (nc_t *)it;
    int64_t off = n->off[slot];
    memcpy(n->h_val + off, src, sizeof(float) * (size_t)(n->off[slot + 1] - off));
    n->ready_iter[slot] = iter;
    __atomic_add_fetch(&n->gen, 1, __ATOMIC_RELAXED);
    return advance(n, n->lr, slot, iter);
}

static bool nc_published(ordo__intra_t *it, int slot, int64_t iter)
{
    nc_t *n = (nc_t *)it;
    int r = n->root[slot];
    if (r != n->lr && n->ready_iter[slot] != iter && n->bc_iter[slot] != iter) {
        n->ready_iter[slot] = iter; /* asked for: post its receive in r's order */
        if (advance(n, r, slot, iter)) ORDO_ERROR("%s", ordo__error_text(ORDO_ERR_IO));
    }
    return __atomic_load_n(&n->bc_iter[slot], __ATOMIC_ACQUIRE) == iter &&
           event_done(n, n->ev_bc[slot]);
}

static void nc_fetch(ordo__intra_t *it, int slot, float *dst)
{
    nc_t *n = (nc_t *)it;
    int64_t off = n->off[slot];
    memcpy(dst, n->h_val + off, sizeof(float) * (size_t)(n->off[slot + 1] - off));
}

static uint64_t nc_generation(ordo__intra_t *it)
{
    return __atomic_load_n(&((nc_t *)it)->gen, __ATOMIC_RELAXED);
}

/* device work completes without a wake-up: poll every 100 us, and report NCCL's own errors */
static int nc_wait(ordo__intra_t *it, uint64_t seen, int timeout_ms)
{
    nc_t *n = (nc_t *)it;
    (void)seen;
    usleep(timeout_ms > 0 ? 100 : 0);
    ncclResult_t async = ncclSuccess;
    if (ncclCommGetAsyncError(n->red, &async) == ncclSuccess && async != ncclSuccess)
        return nccl_err(async, "the reduce communicator");
    return 0;
}

static void nc_kick(ordo__intra_t *it)
{
    (void)it;
}

static int nc_barrier(ordo__intra_t *it)
{
    nc_t *n = (nc_t *)it;
    cudaSetDevice(n->dev);
    /* an all-reduce of one float on the reduce stream, waited for */
    ncclResult_t r = ncclAllReduce(n->d_in, n->d_in, 1, ncclFloat, ncclSum, n->red, n->s_red);
    if (r != ncclSuccess) return nccl_err(r, "barrier");
    cudaError_t ce = cudaStreamSynchronize(n->s_red);
    return ce == cudaSuccess ? 0 : cuda_err(ce, "barrier");
}

const ordo__intra_ops_t ordo__intra_nccl_ops = {
    .name = "nccl",
    .create = nc_create,
    .destroy = nc_destroy,
    .put = nc_put,
    .reduced = nc_reduced,
    .sum = nc_sum,
    .publish = nc_publish,
    .published = nc_published,
    .fetch = nc_fetch,
    .generation = nc_generation,
    .wait = nc_wait,
    .kick = nc_kick,
    .barrier = nc_barrier,
};
