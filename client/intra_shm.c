/* intra_shm: the shared-memory backend of client/intra.h. One POSIX shared-memory segment per
 * group, named after the run and the group: a header (a change counter that is also the
 * futex everyone sleeps on, every member's pid and heartbeat), per slot and member
 * the iteration last put, per slot the iteration last published, then one area of the model's
 * floats per member (its contributions) and one for the published values. The first member to
 * arrive creates it and the last to attach unlinks its name, so nothing is left in /dev/shm
 * whichever process dies later (a member that leaves before everyone attached unlinks it).
 * Data is written before the iteration that announces it (release/acquire atomics), so
 * readers need no lock. A member may write its contribution in its area itself (area) and
 * the root sum into the shared values (value_area): put and publish then copy nothing, and
 * the root's sum marks the areas free (summed); a member that reads the values where they
 * are (fetch into value_area) copies nothing either. The root sums every member's area in one
 * pass, and slots of 1 MiB or more are summed and copied with stores that bypass the caches
 * (no read of the destination first; its reader is another process or comes back later).
 * Waiting is a futex on the change counter, never a lock: the kernel keeps no state a killed
 * member could leave half-changed (a process-shared pthread condition variable can stay
 * wedged when a waiter dies inside it). A member is dead when its pid is gone or its
 * heartbeat (renewed on every wait, at least every 50 ms) is older than the timeout. */
#include "client/intra.h"
#include "core/vec.h"
#include "common/clock.h"
#include "common/error.h"
#include "common/log.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define MAGIC 0x4f52444f494e5452ull /* "ORDOINTR" */
#define ALIGN 64
#define TICK_MS 50 /* longest sleep between two heartbeats */
#define STREAM_BYTES (1 << 20) /* copies and sums from this size on bypass the caches */

typedef struct {
    uint64_t magic; /* written last by the creator */
    int32_t local_size, n_slots;
    int64_t numel;
    uint32_t gen;       /* changes so far: the futex word (atomic) */
    int32_t attached;   /* members that mapped the segment (atomic) */
    int32_t bar_count;  /* members inside the current barrier (atomic) */
    int32_t bar_gen;    /* barriers completed (atomic) */
    int64_t beat_ns[ORDO_INTRA_MAX_LOCAL]; /* atomic */
    int32_t pid[ORDO_INTRA_MAX_LOCAL];
    int32_t gone[ORDO_INTRA_MAX_LOCAL]; /* left cleanly (atomic) */
} hdr_t;

typedef struct {
    ordo__intra_t base;
    char name[128];
    int lr, L, n_slots, timeout_ms, group;
    int wrank[ORDO_INTRA_MAX_LOCAL];
    int64_t *slot_off;
    size_t size;
    void *map;
    hdr_t *h;
    int64_t *put_iter; /* [n_slots][L] */
    int64_t *pub_iter; /* [n_slots] */
    int64_t *sum_iter; /* [n_slots] the iteration the root last summed (the areas are free) */
    float *area;       /* [L][numel] */
    float *vals;       /* [numel] */
    int64_t numel;
    bool named;        /* this process still has to unlink the name */
} shm_t;

static size_t up(size_t x)
{
    return (x + ALIGN - 1) / ALIGN * ALIGN;
}

static size_t layout(shm_t *s, size_t *o_put, size_t *o_pub, size_t *o_area, size_t *o_vals)
{
    size_t o = up(sizeof(hdr_t));
    *o_put = o;
    o = up(o + sizeof(int64_t) * (size_t)s->n_slots * (size_t)s->L);
    *o_pub = o;
    o = up(o + sizeof(int64_t) * (size_t)s->n_slots * 2); /* pub_iter, sum_iter */
    *o_area = o;
    o = up(o + sizeof(float) * (size_t)s->numel * (size_t)s->L);
    *o_vals = o;
    return up(o + sizeof(float) * (size_t)s->numel);
}

/* sleep while gen still reads seen, at most ms milliseconds (a shared futex: no private flag) */
static void futex_wait(uint32_t *gen, uint32_t seen, int64_t ms)
{
    if (ms <= 0) return;
    struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000};
    syscall(SYS_futex, gen, FUTEX_WAIT, seen, &ts, NULL, 0);
}

static void futex_wake_all(uint32_t *gen)
{
    syscall(SYS_futex, gen, FUTEX_WAKE, INT_MAX, NULL, NULL, 0);
}

static void beat(shm_t *s)
{
    __atomic_store_n(&s->h->beat_ns[s->lr], ordo__clock_ns(), __ATOMIC_RELEASE);
}

/* ORDO_ERR_PEERDEAD naming the first member that died or went silent, else 0 */
static int check_members(shm_t *s)
{
    int64_t now = ordo__clock_ns();
    for (int m = 0; m < s->L; m++) {
        if (m == s->lr || __atomic_load_n(&s->h->gone[m], __ATOMIC_ACQUIRE)) continue;
        int pid = __atomic_load_n(&s->h->pid[m], __ATOMIC_ACQUIRE);
        int64_t b = __atomic_load_n(&s->h->beat_ns[m], __ATOMIC_ACQUIRE);
        if (pid > 0 && kill(pid, 0) != 0 && errno == ESRCH)
            return ordo__error_set(ORDO_ERR_PEERDEAD,
                                  "intra group %d: member %d: worker %d (pid %d) died", s->group,
                                  m, s->wrank[m], pid);
        if (b > 0 && now - b > (int64_t)s->timeout_ms * 1000000)
            return ordo__error_set(ORDO_ERR_PEERDEAD,
                                  "intra group %d: member %d: worker %d (pid %d) has been silent "
                                  "for %lld ms",
                                  s->group, m, s->wrank[m], pid, (long long)((now - b) / 1000000));
    }
    return 0;
}

static void bump(shm_t *s)
{
    __atomic_add_fetch(&s->h->gen, 1, __ATOMIC_ACQ_REL);
    futex_wake_all(&s->h->gen);
}

static void shm_destroy(ordo__intra_t *it)
{
    shm_t *s = (shm_t *)it;
    if (s->map && __atomic_load_n(&s->h->attached, __ATOMIC_ACQUIRE) < s->L) s->named = true;
    if (s->named) shm_unlink(s->name);
    if (s->map) {
        __atomic_store_n(&s->h->gone[s->lr], 1, __ATOMIC_RELEASE);
        bump(s);
        munmap(s->map, s->size);
    }
    free(s->slot_off);
    free(s);
}

static int init_header(shm_t *s)
{
    hdr_t *h = s->h;
    h->local_size = s->L;
    h->n_slots = s->n_slots;
    h->numel = s->numel;
    for (int64_t i = 0; i < (int64_t)s->n_slots * s->L; i++) s->put_iter[i] = -1;
    for (int i = 0; i < s->n_slots; i++) s->pub_iter[i] = s->sum_iter[i] = -1;
    __atomic_store_n(&h->magic, MAGIC, __ATOMIC_RELEASE);
    return 0;
}

/* open the segment, creating it when this member comes first: whoever creates the name
 * initialises the header (a compare-and-swap decides), the others wait the moment that takes.
 * Nobody waits for another member to arrive, so a slow one never stalls the others' joins;
 * the last member to attach unlinks the name. */
static int open_segment(shm_t *s, int64_t deadline)
{
    size_t o_put, o_pub, o_area, o_vals;
    s->size = layout(s, &o_put, &o_pub, &o_area, &o_vals);
    int fd = shm_open(s->name, O_CREAT | O_RDWR, 0600);
    if (fd < 0) return ordo__error_set(ORDO_ERR_IO, "intra segment %s: %s", s->name, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0 || ((size_t)st.st_size != s->size && st.st_size != 0) ||
        ftruncate(fd, (off_t)s->size) != 0) {
        close(fd);
        return ordo__error_set(ORDO_ERR_IO, "intra segment %s: %lld bytes there, %zu expected",
                              s->name, (long long)st.st_size, s->size);
    }
    s->map = mmap(NULL, s->size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
    close(fd);
    if (s->map == MAP_FAILED) {
        s->map = NULL;
        return ordo__error_set(ORDO_ERR_IO, "intra segment %s: mmap %zu bytes: %s", s->name, s->size,
                              strerror(errno));
    }
    char *b = s->map;
    s->h = (hdr_t *)b;
    s->put_iter = (int64_t *)(b + o_put);
    s->pub_iter = (int64_t *)(b + o_pub);
    s->sum_iter = s->pub_iter + s->n_slots;
    s->area = (float *)(b + o_area);
    s->vals = (float *)(b + o_vals);
    uint64_t zero = 0;
    if (__atomic_compare_exchange_n(&s->h->magic, &zero, MAGIC - 1, false, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE))
        return init_header(s);
    while (__atomic_load_n(&s->h->magic, __ATOMIC_ACQUIRE) != MAGIC) {
        if (ordo__clock_ns() > deadline)
            return ordo__error_set(ORDO_ERR_TIMEDOUT, "intra segment %s never got ready", s->name);
        usleep(100);
    }
    if (s->h->local_size != s->L || s->h->n_slots != s->n_slots || s->h->numel != s->numel)
        return ordo__error_set(ORDO_ERR_PROTO, "intra segment %s holds %d members x %lld floats, "
                              "this member expects %d x %lld", s->name, s->h->local_size,
                              (long long)s->h->numel, s->L, (long long)s->numel);
    return 0;
}

static int shm_create(const ordo__intra_opts_t *o, ordo__intra_t **out)
{
    if (o->local_size < 1 || o->local_size > ORDO_INTRA_MAX_LOCAL || o->local_rank < 0 ||
        o->local_rank >= o->local_size || o->n_slots < 1 || !o->run)
        return ordo__error_set(ORDO_ERR_INVAL, "intra: member %d of %d (at most %d), %d slots",
                              o->local_rank, o->local_size, ORDO_INTRA_MAX_LOCAL, o->n_slots);
    shm_t *s = calloc(1, sizeof *s);
    if (!s) return ORDO_ERR_NOMEM;
    s->lr = o->local_rank;
    s->L = o->local_size;
    s->n_slots = o->n_slots;
    s->group = o->group;
    s->timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : 5000;
    for (int m = 0; m < s->L; m++) s->wrank[m] = o->worker_rank ? o->worker_rank[m] : m;
    s->numel = o->slot_off[o->n_slots];
    snprintf(s->name, sizeof s->name, "/ordo-%s-g%d", o->run, o->group);
    int rc = ORDO_ERR_NOMEM;
    s->slot_off = malloc(sizeof *s->slot_off * (size_t)(o->n_slots + 1));
    if (!s->slot_off) goto fail;
    memcpy(s->slot_off, o->slot_off, sizeof *s->slot_off * (size_t)(o->n_slots + 1));
    /* until attached, a failure must not leave the name behind */
    s->named = true;
    if ((rc = open_segment(s, ordo__clock_ns() + (int64_t)s->timeout_ms * 1000000)) != 0) goto fail;
    hdr_t *h = s->h;
    __atomic_store_n(&h->pid[s->lr], (int32_t)getpid(), __ATOMIC_RELEASE);
    beat(s);
    if (__atomic_add_fetch(&h->attached, 1, __ATOMIC_ACQ_REL) == s->L)
        shm_unlink(s->name); /* every member mapped it: nothing stays in /dev/shm */
    s->named = false;
    bump(s);
    s->base.ops = &ordo__intra_shm_ops;
    *out = &s->base;
    return 0;
fail:
    shm_destroy(&s->base);
    return rc;
}

/* a copy of n floats: streamed past the caches when it is bigger than a core's cache (the
 * reader is another process, or comes back to it after other slots), else memcpy */
static void copy(float *dst, const float *src, int64_t n)
{
    if (n * (int64_t)sizeof(float) >= STREAM_BYTES)
        ordo__vec_copy_stream(dst, src, n);
    else
        memcpy(dst, src, sizeof(float) * (size_t)n);
}

static int shm_put(ordo__intra_t *it, int slot, const float *src, int64_t iter)
{
    shm_t *s = (shm_t *)it;
    int64_t off = s->slot_off[slot], n = s->slot_off[slot + 1] - off;
    float *dst = s->area + (size_t)s->lr * (size_t)s->numel + off;
    if (src != dst) copy(dst, src, n); /* else written in place */
    __atomic_store_n(&s->put_iter[(size_t)slot * (size_t)s->L + (size_t)s->lr], iter,
                     __ATOMIC_RELEASE);
    bump(s);
    return 0;
}

static bool shm_reduced(ordo__intra_t *it, int slot, int64_t iter)
{
    shm_t *s = (shm_t *)it;
    for (int m = 0; m < s->L; m++)
        if (__atomic_load_n(&s->put_iter[(size_t)slot * (size_t)s->L + (size_t)m],
                            __ATOMIC_ACQUIRE) != iter)
            return false;
    return true;
}

/* members in rank order, so every run sums the same way; one pass over every member's area */
static void shm_sum(ordo__intra_t *it, int slot, float *dst)
{
    shm_t *s = (shm_t *)it;
    int64_t off = s->slot_off[slot], n = s->slot_off[slot + 1] - off;
    const float *rows[ORDO_INTRA_MAX_LOCAL];
    for (int m = 0; m < s->L; m++) rows[m] = s->area + (size_t)m * (size_t)s->numel + off;
    if (n * (int64_t)sizeof(float) >= STREAM_BYTES) {
        ordo__vec_sum_rows(dst, rows, s->L, n);
    } else if (s->L == 1) {
        memcpy(dst, rows[0], sizeof(float) * (size_t)n);
    } else {
        ordo__vec_sum(dst, rows[0], rows[1], n);
        for (int m = 2; m < s->L; m++) ordo__vec_add(dst, rows[m], n);
    }
    /* the members' areas of slot are free again: a contribution written in place may change */
    __atomic_store_n(&s->sum_iter[slot],
                     __atomic_load_n(&s->put_iter[(size_t)slot * (size_t)s->L + (size_t)s->lr],
                                     __ATOMIC_ACQUIRE),
                     __ATOMIC_RELEASE);
    bump(s);
}

static int shm_publish(ordo__intra_t *it, int slot, const float *src, int64_t iter)
{
    shm_t *s = (shm_t *)it;
    int64_t off = s->slot_off[slot], n = s->slot_off[slot + 1] - off;
    if (src != s->vals + off) copy(s->vals + off, src, n); /* else summed or pulled there */
    __atomic_store_n(&s->pub_iter[slot], iter, __ATOMIC_RELEASE);
    bump(s);
    return 0;
}

static bool shm_summed(ordo__intra_t *it, int slot, int64_t iter)
{
    shm_t *s = (shm_t *)it;
    return __atomic_load_n(&s->sum_iter[slot], __ATOMIC_ACQUIRE) >= iter;
}

static bool shm_published(ordo__intra_t *it, int slot, int64_t iter)
{
    shm_t *s = (shm_t *)it;
    return __atomic_load_n(&s->pub_iter[slot], __ATOMIC_ACQUIRE) == iter;
}

static void shm_fetch(ordo__intra_t *it, int slot, float *dst)
{
    shm_t *s = (shm_t *)it;
    int64_t off = s->slot_off[slot], n = s->slot_off[slot + 1] - off;
    if (dst != s->vals + off) copy(dst, s->vals + off, n); /* else read where it is */
}

static float *shm_area(ordo__intra_t *it, int slot)
{
    shm_t *s = (shm_t *)it;
    return s->area + (size_t)s->lr * (size_t)s->numel + s->slot_off[slot];
}

static float *shm_value_area(ordo__intra_t *it, int slot)
{
    shm_t *s = (shm_t *)it;
    return s->vals + s->slot_off[slot];
}

static uint64_t shm_generation(ordo__intra_t *it)
{
    return __atomic_load_n(&((shm_t *)it)->h->gen, __ATOMIC_ACQUIRE);
}

static int shm_wait(ordo__intra_t *it, uint64_t seen, int timeout_ms)
{
    shm_t *s = (shm_t *)it;
    int64_t until = ordo__clock_ns() + (int64_t)timeout_ms * 1000000;
    for (;;) {
        beat(s);
        int rc = check_members(s);
        if (rc) return rc;
        int64_t left = (until - ordo__clock_ns()) / 1000000;
        if (__atomic_load_n(&s->h->gen, __ATOMIC_ACQUIRE) != (uint32_t)seen || left <= 0) return 0;
        futex_wait(&s->h->gen, (uint32_t)seen, left < TICK_MS ? left : TICK_MS);
    }
}

static void shm_kick(ordo__intra_t *it)
{
    bump((shm_t *)it);
}

static int shm_barrier(ordo__intra_t *it)
{
    shm_t *s = (shm_t *)it;
    hdr_t *h = s->h;
    int64_t until = ordo__clock_ns() + (int64_t)s->timeout_ms * 1000000;
    int32_t g = __atomic_load_n(&h->bar_gen, __ATOMIC_ACQUIRE);
    if (__atomic_add_fetch(&h->bar_count, 1, __ATOMIC_ACQ_REL) == s->L) {
        __atomic_store_n(&h->bar_count, 0, __ATOMIC_RELEASE);
        __atomic_add_fetch(&h->bar_gen, 1, __ATOMIC_ACQ_REL);
        bump(s);
        return 0;
    }
    for (;;) {
        uint32_t seen = __atomic_load_n(&h->gen, __ATOMIC_ACQUIRE);
        if (__atomic_load_n(&h->bar_gen, __ATOMIC_ACQUIRE) != g) return 0;
        if (ordo__clock_ns() >= until)
            return ordo__error_set(ORDO_ERR_TIMEDOUT, "intra group %d: barrier not reached by every "
                                  "member within %d ms", s->group, s->timeout_ms);
        beat(s);
        int rc = check_members(s);
        if (rc) return rc;
        futex_wait(&h->gen, seen, TICK_MS);
    }
}

const ordo__intra_ops_t ordo__intra_shm_ops = {
    .name = "shm",
    .create = shm_create,
    .destroy = shm_destroy,
    .put = shm_put,
    .reduced = shm_reduced,
    .sum = shm_sum,
    .publish = shm_publish,
    .published = shm_published,
    .fetch = shm_fetch,
    .summed = shm_summed,
    .area = shm_area,
    .value_area = shm_value_area,
    .generation = shm_generation,
    .wait = shm_wait,
    .kick = shm_kick,
    .barrier = shm_barrier,
};
